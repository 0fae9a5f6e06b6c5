import type { Bus } from '../../infra/bus.js'
import { createInvalidatedCache } from '../../infra/invalidated-cache.js'
import type { Clock } from '../../util/clock.js'
import type { PublicEntry, VersionPick } from './store.js'

export const BUS_CHANNEL = 'hosted-data'

/** A resolved public link: the version to serve and its validator. */
export interface ServedEntry extends PublicEntry {
  etag: string
  /**
   * Last-Modified (seconds since the epoch): a pinned version's creation; the default link's
   * is the later of that and the file's last change, so a switch back to an older version
   * moves it forward, never back (decision 142).
   */
  lastModifiedSec: number
  /** Its bytes were taken down (blocklist): the link answers 451 instead of serving them. */
  blocked: boolean
}

interface Slot {
  at: number
  /** '' = the default version, 'latest', else the pinned version number. */
  byVersion: Map<string, ServedEntry>
}

const versionKey = (version: VersionPick) => (version === null ? '' : String(version))

/**
 * token -> version to serve, in memory (an InvalidatedCache). Every change to a file (new
 * version, default switch, meta, delete) publishes its token on the bus; every instance drops
 * that token on receipt. A fill that raced with an invalidation is discarded (generation
 * check), and entries expire after `ttlMs` (service clock; a clock that went backwards expires
 * them too): the backstop for a lost bus message and for changes made outside the service
 * (`svc user set --disable`).
 */
export function createHostedDataCache(bus: Bus, clock: Clock, opts: { maxTokens?: number; ttlMs?: number } = {}) {
  const ttlMs = opts.ttlMs ?? 5_000
  const slots = createInvalidatedCache<string, Slot>({
    bus,
    channel: BUS_CHANNEL,
    maxEntries: opts.maxTokens ?? 10_000,
    isFresh: (s) => {
      const age = clock.now() - s.at
      return age <= ttlMs && age >= 0
    },
  })

  return {
    get(token: string, version: VersionPick): ServedEntry | undefined {
      return slots.get(token)?.byVersion.get(versionKey(version))
    },
    /** The generation to pass to `set` (taken before reading the database). */
    generation: () => slots.ticket(),
    set(gen: number, token: string, version: VersionPick, entry: ServedEntry): void {
      let slot = slots.get(token)
      if (slot === undefined) {
        slot = { at: clock.now(), byVersion: new Map() }
        if (!slots.set(token, slot, gen)) return
      } else if (!slots.accepts(gen)) return
      slot.byVersion.set(versionKey(version), entry)
    },
    /** Drops a token everywhere (this instance at once, the others through the bus). */
    invalidate: (token: string): Promise<void> => slots.publish(token),
    /** Drops a token on this instance only. */
    drop: (token: string): void => slots.invalidate(token),
    size: () => slots.size(),
  }
}

export type PublicCache = ReturnType<typeof createHostedDataCache>
