import { performance } from 'node:perf_hooks'
import type { Clock } from '../../util/clock.js'
import type { Prepared } from '../../http/prepared-response.js'

export interface Cached {
  /** The serialised answer (UTF-8 JSON), or null for "no such public entry" (1604). */
  body: Buffer | null
  /** The 200 answer's status line and headers, prepared by the fast path on first use. */
  head?: Prepared
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
  /** Whether a fill may be kept now (false while the bus cannot deliver other instances' invalidations). */
  trusted?: () => boolean
}

/**
 * The hot path of public reads: answers (and misses) per (owner, key) and per legacy key,
 * dropped by every write of that key on any instance (through the bus) and after `ttlMs`.
 * A read that raced a write never fills the cache: fills carry the invalidation epoch seen
 * before the database read and are refused when it moved.
 */
export function createPublicCache(clock: Clock, o: PublicCacheOptions = {}) {
  const ttlMs = o.ttlMs ?? 1000
  const maxBytes = o.maxBytes ?? 32 * 1024 * 1024
  const maxBodyBytes = o.maxBodyBytes ?? 16 * 1024
  const trusted = o.trusted ?? (() => true)
  const lines = new Map<string, Cached>()
  let bytes = 0
  let epoch = 0

  const cost = (k: string, c: Cached) => k.length + (c.body?.length ?? 0) + 64
  const drop = (k: string) => {
    const c = lines.get(k)
    if (c) {
      bytes -= cost(k, c)
      lines.delete(k)
    }
  }

  return {
    userLine: (username: string, key: string) => `u:${username}\n${key}`,
    legacyLine: (key: string) => `l:${key}`,

    /** A fresh line, or undefined. */
    get(line: string): Cached | undefined {
      const c = lines.get(line)
      if (!c) return undefined
      if (c.freshUntil <= performance.now() || (c.expiresAt !== null && c.expiresAt <= clock.now())) {
        drop(line)
        return undefined
      }
      return c
    },

    /**
     * Whether a line in use should be read again now, in the background, so that it is
     * replaced before it expires (the last quarter of its life): under steady reads the hot
     * path never misses, instead of every reader missing at once each `ttlMs`.
     */
    refreshDue: (c: Cached): boolean => c.freshUntil - performance.now() < ttlMs / 4,

    /** The epoch to pass to `set` (read it before the database read). */
    epoch: () => epoch,

    set(line: string, body: Buffer | null, expiresAt: number | null, seenEpoch: number): void {
      if (seenEpoch !== epoch || (body !== null && body.length > maxBodyBytes) || !trusted()) return
      drop(line)
      const c: Cached = { body, expiresAt, freshUntil: performance.now() + ttlMs }
      lines.set(line, c)
      bytes += cost(line, c)
      // oldest lines first (Map keeps insertion order)
      for (const k of lines.keys()) {
        if (bytes <= maxBytes) break
        drop(k)
      }
    },

    /** A write of (owner, key): its line and the legacy line of the key go. */
    invalidate(username: string, key: string): void {
      epoch++
      drop(`u:${username}\n${key}`)
      drop(`l:${key}`)
    },

    /** Everything goes (bus FLUSH_ALL: invalidations may have been lost). */
    invalidateAll(): void {
      epoch++
      lines.clear()
      bytes = 0
    },

    size: () => lines.size,
  }
}
export type PublicCache = ReturnType<typeof createPublicCache>
