import type { Feature } from '../feature.js'
import { accountsUi } from './page.js'
import { accountApi, accountPages } from './routes.js'

/** Accounts: login, logout, health, API key management, redeem codes. */
export const accountsFeature: Feature = {
  name: 'accounts',
  ui: accountsUi,
  api: accountApi,
  pages: accountPages,
}
