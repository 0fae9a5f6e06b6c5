import type { Feature } from '../feature.js'
import { adminUi } from './page.js'
import { adminApi } from './routes.js'
import { createAdmin, type Admin } from './service.js'

/**
 * The admin console (accounts with the admin flag): accounts with usage, quotas and API keys, content
 * search, run-time settings and the audit log of every admin action (web and CLI).
 */
export const adminFeature: Feature<Admin> = {
  name: 'admin',
  ui: adminUi,
  init: (deps) => deps.services.get(createAdmin),
  api: (app, deps, admin) => adminApi(app, deps, admin),
}
