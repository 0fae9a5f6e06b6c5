import type { Deps } from '../../deps.js'
import type { Feature } from '../feature.js'
import type { SiteHooks } from '../../http/site-hooks.js'
import { createAccessGate } from './access.js'
import { createTxtLookup } from './dns.js'
import { createDomainHosts } from './hosts.js'
import { domainsApi } from './routes.js'
import { domainsUi } from './page.js'
import { createDomainService, type DomainService } from './service.js'
import { createDomainsStore } from './store.js'

export interface DomainsState extends SiteHooks {
  service: DomainService
}

/**
 * Custom domains (a verified host serves one folder project) and visitor access (a password
 * or an expiry on a project or single page). Its state is the public host's SiteHooks
 * (src/http/site-hooks.ts): the sites feature asks it about every Host and before every
 * hosted answer. Tables in store.ts, listed in features/tables.ts.
 */
export const domainsFeature: Feature<DomainsState> = {
  name: 'domains',
  ui: domainsUi,
  init(deps: Deps): DomainsState {
    const store = createDomainsStore(deps.db)
    const hosts = createDomainHosts(deps, store)
    const gate = createAccessGate(deps, store)
    const service = createDomainService(deps, createTxtLookup(deps.config.dnsResolver), {
      domain: (name) => hosts.invalidate(name),
      access: (username) => gate.invalidate(username),
      primary: (username, project) => hosts.invalidatePrimary(username, project),
    })
    return {
      service,
      domain: (host) => hosts.lookup(host),
      primaryDomain: (username, project) => hosts.primary(username, project),
      access: (req, res, at) => gate.access(req, res, at),
      openNow: (username, name) => gate.openNow(username, name),
    }
  },
  api: (app, deps, state) => domainsApi(app, deps, state.service),
}
