import net from 'node:net'
import { performance } from 'node:perf_hooks'
import type { Deps } from '../../deps.js'
import { createInvalidatedCache } from '../../infra/invalidated-cache.js'
import { hostName } from '../../http/site-origin.js'
import type { DomainTarget } from '../../http/site-hooks.js'
import type { DomainsStore } from './store.js'

/** Bus channel of domain changes: the message is the domain name (FLUSH_ALL: all). */
export const DOMAINS_CHANNEL = 'domains'
/** Bus channel of primary-domain changes: the message is `{username}\n{project}` (FLUSH_ALL: all). */
export const PRIMARY_CHANNEL = 'domains-primary'

interface Entry {
  target: DomainTarget | null
  freshUntil: number
}

/**
 * Host name -> the project a verified custom domain serves, for every request the public host
 * sees that is not the service's own host or a user's origin. Kept in an InvalidatedCache
 * (negative answers too, bounded apart), so a hit costs a Map lookup; a verify or a removal
 * anywhere drops the name on every instance before the API call returns.
 */
export function createDomainHosts(deps: Deps, store: DomainsStore) {
  const { config, bus } = deps
  const own = new Set<string>()
  if (config.publicUrl) own.add(hostName(new URL(config.publicUrl).host))
  const cd = config.contentDomain
  const cache = createInvalidatedCache<string, Entry>({
    bus,
    channel: DOMAINS_CHANNEL,
    maxEntries: 20_000,
    maxMisses: 5_000,
    isMiss: (e) => e.target === null,
    isFresh: (e) => e.freshUntil > performance.now(),
  })
  // lookups under way, joined only while no invalidation happened since they started
  const inFlight = new Map<string, { ticket: number; p: Promise<DomainTarget | null> }>()

  /** Names that can never be a custom domain: answered without a lookup. */
  const never = (host: string): boolean =>
    host === '' ||
    own.has(host) ||
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host.indexOf('.') < 0 ||
    host[0] === '[' ||
    net.isIPv4(host) ||
    (cd !== null && (host === cd || host.endsWith(`.${cd}`)))

  async function load(host: string, ticket: number): Promise<DomainTarget | null> {
    const r = await store.target(host)
    const target = r ? { username: r.username, project: r.project } : null
    cache.set(host, { target, freshUntil: performance.now() + 60_000 }, ticket)
    return target
  }

  // `{username}\n{project}` -> its primary domain (null: none), for browsers' navigations only
  const primaries = createInvalidatedCache<string, { name: string | null; freshUntil: number }>({
    bus,
    channel: PRIMARY_CHANNEL,
    maxEntries: 20_000,
    maxMisses: 20_000,
    isMiss: (e) => e.name === null,
    isFresh: (e) => e.freshUntil > performance.now(),
  })

  return {
    /** The verified primary domain of a user's project: at once from memory when it can, else a promise. */
    primary(username: string, project: string): string | null | Promise<string | null> {
      const key = `${username}\n${project}`
      const hit = primaries.get(key)
      if (hit !== undefined) return hit.name
      const ticket = primaries.ticket()
      return store.primaryOf(username, project).then((name) => {
        primaries.set(key, { name, freshUntil: performance.now() + 60_000 }, ticket)
        return name
      })
    },
    /** Drops a project's primary domain here and on every instance. */
    invalidatePrimary: (username: string, project: string) => primaries.publish(`${username}\n${project}`),
    lookup(host: string): DomainTarget | null | Promise<DomainTarget | null> {
      if (never(host)) return null
      const hit = cache.get(host)
      if (hit !== undefined) return hit.target
      const running = inFlight.get(host)
      if (running && cache.accepts(running.ticket)) return running.p
      const ticket = cache.ticket()
      const p = load(host, ticket).finally(() => {
        if (inFlight.get(host)?.p === p) inFlight.delete(host)
      })
      inFlight.set(host, { ticket, p })
      return p
    },
    /** Drops a name here and on every instance. */
    invalidate: (name: string) => cache.publish(name),
  }
}
export type DomainHosts = ReturnType<typeof createDomainHosts>
