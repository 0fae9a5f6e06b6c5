import { performance } from 'node:perf_hooks'
import type { Clock } from '../../util/clock.js'
import type { Prepared } from '../../http/prepared-response.js'
import { createInvalidatedCache } from '../../infra/invalidated-cache.js'
import type { Bus } from '../../infra/bus.js'

export interface Cached {
  /** The serialised answer (UTF-8 JSON), or null for "no such public entry" (1604). */
  body: Buffer | null
  /** The answer's ETag (the entry's version, quoted), or null: none is sent (the legacy read). */
  etag: string | null
  /** The 200 answer's status line and headers, prepared by the fast path on first use. */
  head?: Prepared
  /** The 304 answer's, likewise. */
  notModifiedHead?: Prepared
  /** The 412 answer's, likewise. */
  failedHead?: Prepared
  /** The entry's own expiry (service clock), or null. */
  expiresAt: number | null
  /** Monotonic deadline of this cache line. */
  freshUntil: number
}

export interface PublicCacheOptions {
  /** How long a line may serve without a write telling us about a change (out-of-band edits such as `svc user set --disable`). */
  ttlMs?: number
  maxBytes?: number
  maxBodyBytes?: number
  /** Tells other instances which keys changed; nothing is cached while it cannot deliver theirs. */
  bus?: Bus
}

/** The bus channel of KV writes; a message is JSON [username, key]. */
export const KV_CHANNEL = 'kv:changed'

const userLine = (username: string, key: string) => `u:${username}\n${key}`
const legacyLine = (key: string) => `l:${key}`

/**
 * The hot path of public reads: answers (and misses) per (owner, key) and per legacy key,
 * dropped by every write of that key on any instance (through the bus) and after `ttlMs`,
 * within a byte budget (an InvalidatedCache). A read that raced a write never fills the
 * cache: fills carry the invalidation epoch seen before the database read and are refused
 * when it moved.
 */
export function createKvPublicCache(clock: Clock, o: PublicCacheOptions = {}) {
  const ttlMs = o.ttlMs ?? 1000
  const maxBodyBytes = o.maxBodyBytes ?? 16 * 1024
  const lines = createInvalidatedCache<string, Cached>({
    bus: o.bus,
    channel: KV_CHANNEL,
    // a write of (owner, key): its line and the legacy line of the key go
    keysOf: (m) => {
      const [username, key] = JSON.parse(m) as [string, string]
      return [userLine(username, key), legacyLine(key)]
    },
    maxBytes: o.maxBytes ?? 32 * 1024 * 1024,
    cost: (k, c) => k.length + (c.body?.length ?? 0) + 64,
    isFresh: (c) => c.freshUntil > performance.now() && (c.expiresAt === null || c.expiresAt > clock.now()),
  })

  return {
    userLine,
    legacyLine,

    /** A fresh line, or undefined. */
    get: (key: string) => lines.get(key),

    /**
     * Whether a line in use should be read again now, in the background, so that it is
     * replaced before it expires (the last quarter of its life): under steady reads the hot
     * path never misses, instead of every reader missing at once each `ttlMs`.
     */
    refreshDue: (c: Cached): boolean => c.freshUntil - performance.now() < ttlMs / 4,

    /** The epoch to pass to `set` (read it before the database read). */
    epoch: () => lines.ticket(),

    set(line: string, body: Buffer | null, etag: string | null, expiresAt: number | null, seenEpoch: number): void {
      if (body !== null && body.length > maxBodyBytes) return
      lines.set(line, { body, etag, expiresAt, freshUntil: performance.now() + ttlMs }, seenEpoch)
    },

    /** A write of (owner, key) committed: this instance's lines at once, the others through the bus. */
    changed: (username: string, key: string): Promise<void> => lines.publish(JSON.stringify([username, key])),

    /** Everything goes (bus FLUSH_ALL: invalidations may have been lost). */
    invalidateAll: (): void => lines.invalidateAll(),

    size: () => lines.size(),
  }
}
export type PublicCache = ReturnType<typeof createKvPublicCache>
