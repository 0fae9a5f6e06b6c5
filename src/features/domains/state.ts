import type { Deps } from '../../deps.js'
import type { SiteHooks } from '../../http/site-hooks.js'
import { createAccessGate } from './access.js'
import { createTxtLookup } from './dns.js'
import { createDomainHosts } from './hosts.js'
import { createDomainService, type DomainService } from './service.js'
import { createDomainsStore } from './store.js'

export interface DomainsState extends SiteHooks {
  service: DomainService
}

/**
 * The domains feature's state, one per Deps: `deps.services.get(createDomains)`. The service
 * drops the host and access caches built here when it changes a domain or a visitor setting,
 * so every caller (the REST routes, the MCP tools) must use this one instance.
 */
export function createDomains(deps: Deps): DomainsState {
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
}
