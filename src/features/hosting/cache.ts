import { performance } from 'node:perf_hooks'
import type { Prepared } from '../../http/prepared-response.js'
import { bodyFd, closeBodyFd, sendfileAvailable, SENDFILE_MIN_BODY } from '../../http/sendfile.js'

const EMPTY = Buffer.alloc(0)

/** What a public path resolves to; built once per (path, content) and reused by every hit. */
export type HostEntry = FileEntry | RedirectEntry | MissingEntry

export interface FileEntry {
  kind: 'file'
  digest: string
  size: number
  contentType: string
  etag: string
  lastModified: string
  /** Seconds since the epoch of Last-Modified (for If-Modified-Since). */
  lastModifiedSec: number
  compressible: boolean
  /** Whether the bytes are small enough to keep in memory. */
  inMemory: boolean
  /** The 200 answer with the identity body, status line and headers encoded once. */
  ok: Prepared
  /** Headers shared by every answer about this entry (no length, no encoding). */
  common: string[]
  /** The bytes, once loaded (shared through the body cache). */
  body: BodyEntry | null
  /** The compressed answers' heads, once their lengths are known. */
  okGzip: Prepared | null
  okBr: Prepared | null
  freshUntil: number
}

export interface RedirectEntry {
  kind: 'redirect'
  /** Location without the query string (appended per request). */
  location: string
  freshUntil: number
}

export interface MissingEntry {
  kind: 'missing'
  freshUntil: number
}

/** The bytes of one blob and its compressed forms (null: not worth it; undefined: not made yet). */
export interface BodyEntry {
  digest: string
  raw: Buffer
  gzip?: Buffer | null
  br?: Buffer | null
  /**
   * A sealed memfd with the raw bytes, for sending with sendfile (src/http/sendfile.ts); -1:
   * none (too small, no addon, SENDFILE=0); undefined: not asked for yet (made on the first
   * cached hit, so a body read once never gets one). Its bytes count in `bytes`.
   */
  fd?: number
  bytes: number
  /** Second-chance bit for eviction (set on every hit, cheap). */
  hot: boolean
  evicted: boolean
}

export interface HostCacheOptions {
  /** How long an entry may serve without a write telling us about a change. */
  ttlMs?: number
  maxEntries?: number
  maxMissing?: number
  maxBodyBytes?: number
  /** Keep hot bodies in memfds too, for sendfile (config SENDFILE). */
  sendfile?: boolean
  /**
   * Whether a fill may be kept now: false while the bus cannot deliver other instances'
   * invalidations (Redis subscription down), so nothing is cached that could go stale.
   */
  trusted?: () => boolean
}

/**
 * The public host's memory: path -> entry (files, redirects and misses, per user so a write
 * drops all of a user's paths), and digest -> bytes bounded by total size with a second-chance
 * (CLOCK) eviction. Fills carry the user's generation read before the database lookup, so a
 * lookup that raced a write never fills the cache with the old answer.
 */
export function createHostCache(o: HostCacheOptions = {}) {
  const ttlMs = o.ttlMs ?? 30_000
  const maxEntries = o.maxEntries ?? 50_000
  const maxMissing = o.maxMissing ?? 10_000
  const maxBodyBytes = o.maxBodyBytes ?? 64 * 1024 * 1024
  const trusted = o.trusted ?? (() => true)
  const sendfile = o.sendfile ?? false
  // bumped by invalidateAll: counts in every user's generation
  let allGen = 0

  const entries = new Map<string, HostEntry>()
  const missing = new Map<string, HostEntry>()
  const pathsOf = new Map<string, Set<string>>()
  const userOf = new Map<string, string>()
  const gens = new Map<string, number>()
  const bodies = new Map<string, BodyEntry>()
  let bodyBytes = 0

  const forget = (path: string) => {
    entries.delete(path)
    missing.delete(path)
    const u = userOf.get(path)
    if (u !== undefined) {
      userOf.delete(path)
      pathsOf.get(u)?.delete(path)
    }
  }

  /** Closes a body's memfd, if it has one; it never gets another. */
  const dropFd = (b: BodyEntry) => {
    if (b.fd !== undefined && b.fd >= 0) closeBodyFd(b.fd)
    b.fd = -1
  }

  const evictOne = (map: Map<string, HostEntry>) => {
    const first = map.keys().next()
    if (!first.done) forget(first.value)
  }

  return {
    /** A fresh entry for a raw request path, or undefined. */
    get(path: string): HostEntry | undefined {
      const e = entries.get(path) ?? missing.get(path)
      if (e === undefined) return undefined
      if (e.freshUntil <= performance.now()) {
        forget(path)
        return undefined
      }
      return e
    },

    /** The user's generation: read it before a database lookup, pass it to set(). */
    gen: (username: string): number => (gens.get(username) ?? 0) + allGen,

    freshUntil: () => performance.now() + ttlMs,

    set(path: string, username: string, entry: HostEntry, seenGen: number): void {
      if ((gens.get(username) ?? 0) + allGen !== seenGen || !trusted()) return
      forget(path)
      const map = entry.kind === 'missing' ? missing : entries
      map.set(path, entry)
      userOf.set(path, username)
      let set = pathsOf.get(username)
      if (!set) pathsOf.set(username, (set = new Set()))
      set.add(path)
      if (entries.size > maxEntries) evictOne(entries)
      if (missing.size > maxMissing) evictOne(missing)
    },

    /** A user's content changed: every path of theirs goes, and fills in flight are refused. */
    invalidate(username: string): void {
      gens.set(username, (gens.get(username) ?? 0) + 1)
      const set = pathsOf.get(username)
      if (!set) return
      pathsOf.delete(username)
      for (const p of set) {
        entries.delete(p)
        missing.delete(p)
        userOf.delete(p)
      }
    },

    /** Every path of every user goes (bus FLUSH_ALL: invalidations may have been lost); bytes stay (content-addressed). */
    invalidateAll(): void {
      allGen++
      entries.clear()
      missing.clear()
      pathsOf.clear()
      userOf.clear()
    },

    /** Cached bytes of a blob, or undefined. */
    body(digest: string): BodyEntry | undefined {
      const b = bodies.get(digest)
      if (b) b.hot = true
      return b
    },

    /** Keeps bytes in memory, evicting cold ones past the byte budget. */
    putBody(digest: string, raw: Buffer): BodyEntry {
      const existing = bodies.get(digest)
      if (existing) return existing
      const b: BodyEntry = { digest, raw, bytes: raw.length, hot: false, evicted: false }
      bodies.set(digest, b)
      bodyBytes += b.bytes
      this.trim()
      return b
    },

    /**
     * The memfd of a body for sendfile, made on first use and counted in the byte budget; -1
     * when there is none: for good (small body, no addon, SENDFILE=0, evicted) or for now
     * (SENDFILE_MAX_FDS memfds open, or the kernel refused one: asked again on the next hit).
     */
    fdFor(b: BodyEntry): number {
      if (b.fd !== undefined) return b.fd
      if (b.evicted || !sendfile || !sendfileAvailable() || b.raw.length < SENDFILE_MIN_BODY) return (b.fd = -1)
      // -1 here is for now: all memfds in use, or the kernel refused one
      const fd = bodyFd(b.raw)
      if (fd < 0) return -1
      b.fd = fd
      this.grow(b, b.raw.length)
      // the trim may have evicted this very body (and closed its memfd)
      return b.evicted ? -1 : fd
    },

    /** Accounts for a compressed form added to a body. */
    grow(b: BodyEntry, n: number): void {
      if (b.evicted) return
      b.bytes += n
      bodyBytes += n
      this.trim()
    },

    trim(): void {
      let guard = bodies.size * 2
      while (bodyBytes > maxBodyBytes && guard-- > 0) {
        const first = bodies.entries().next()
        if (first.done) break
        const [d, b] = first.value
        bodies.delete(d)
        if (b.hot) {
          // second chance: move to the back
          b.hot = false
          bodies.set(d, b)
          continue
        }
        // entries may still point here: drop the bytes so only the small shell stays
        b.evicted = true
        bodyBytes -= b.bytes
        b.raw = EMPTY
        b.gzip = undefined
        b.br = undefined
        dropFd(b)
      }
    },

    /** Closes every memfd (the app is closing); the bytes stay until the cache is dropped. */
    close(): void {
      for (const b of bodies.values()) dropFd(b)
    },

    stats: () => ({ entries: entries.size, missing: missing.size, bodies: bodies.size, bodyBytes }),
  }
}
export type HostCache = ReturnType<typeof createHostCache>
