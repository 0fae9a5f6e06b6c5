import type { Feature } from '../feature.js'
import { domainsApi } from './routes.js'
import { domainsUi } from './page.js'
import { createDomains, type DomainsState } from './state.js'

export type { DomainsState } from './state.js'

/**
 * Custom domains (a verified host serves one folder project) and visitor access (a password
 * or an expiry on a project or single page). Its state is the public host's SiteHooks
 * (src/http/site-hooks.ts): the sites feature asks it about every Host and before every
 * hosted answer. Tables in store.ts, listed in features/tables.ts.
 */
export const domainsFeature: Feature<DomainsState> = {
  name: 'domains',
  ui: domainsUi,
  init: (deps) => deps.services.get(createDomains),
  api: (app, _deps, state) => domainsApi(app, state.service),
}
