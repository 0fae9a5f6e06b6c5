import { performance } from 'node:perf_hooks'
import type { Prepared } from '../../http/prepared-response.js'
import type { LocalBlobFile } from '../../storage/blob-store.js'
import { createInvalidatedCache } from '../../infra/invalidated-cache.js'
import type { Bus } from '../../infra/bus.js'
import { HOSTING_CHANNEL } from './invalidate.js'

/** What a public path resolves to; built once per (path, content) and reused by every hit. */
export type HostEntry = FileEntry | RedirectEntry | MissingEntry | PageEntry | UserSiteEntry
/** What the cache keeps under a key: an answer, or the note that the path's answers depend on its query. */
export type CachedEntry = HostEntry | VaryEntry

/**
 * A file's answer, kept small: a cache holds tens of thousands, and on the long tail each one
 * is made, kept a while and dropped, so its size is the heap's growth (issue 21's memory
 * goal). What follows from other fields (the ETags, the Last-Modified text, the blob file's
 * path, the header list of the rarer answers) is computed when asked for (serve.ts), not kept.
 */
export interface FileEntry {
  kind: 'file'
  /** 200, or the status a site rule gives this path (a custom 404 page, a 404/410 rule). */
  status: number
  digest: string
  size: number
  /** Seconds since the epoch of Last-Modified. */
  lastModifiedSec: number
  compressible: boolean
  /** Small enough to send from its open file in one read or sendfile; larger ones are streamed. */
  fromFile: boolean
  /**
   * The blob's local file as the store's async lookup (BlobStore.localFile) found it; null:
   * the store keeps none (S3 without a disk cache): streamed; undefined: not looked up (a
   * store with `localPathNow` is opened by digest without one). Bodies are never kept in
   * memory: they go out from the open-file cache (src/storage/open-files.ts), by digest.
   */
  file: LocalBlobFile | null | undefined
  /** The 200 answer with the identity body: its own header lines encoded once (the rest shared). */
  ok: Prepared
  /** The compressed answers' heads, with the variant digest they were made for. */
  okGzip: { digest: string; p: Prepared } | null
  okBr: { digest: string; p: Prepared } | null
  freshUntil: number
}

export interface RedirectEntry {
  kind: 'redirect'
  /** 301 (a directory's slash form), or the status of a site rule. */
  status: number
  /** Location without the query string (appended per request). */
  location: string
  /** Parameters of the request's query not passed on (those the rule's query matches took). */
  drop?: string[]
  /**
   * A rule's target on another site, answered on the path form: the service's origin never
   * sends a client there itself (an open redirect under its name); serve.ts `leave` does.
   */
  away?: true
  freshUntil: number
}

export interface MissingEntry {
  kind: 'missing'
  /**
   * Where the service's 404 page links (not-found.ts): the root of the project the path is in,
   * as the request's origin spells it; null: no link (no project, or the root itself).
   */
  root: string | null
  freshUntil: number
}

/**
 * A single page's clean URL (/{user}/about, /about on the user's origin: about.html, and no
 * published project `about`): the request is answered as the page's own path, the extension
 * added, with that name's holds and visitor access (serve.ts, decision 169).
 */
export interface PageEntry {
  kind: 'page'
  /** The extension the page's name adds to the path's last segment: '.html' or '.htm'. */
  ext: string
  freshUntil: number
}

/**
 * A path of a user's own origin that names nothing of theirs (the root, a first segment that
 * is no project, page or file) while they have a published user site: the request is answered
 * by that project at the host's root, as its own origin answers it (serve.ts), with its
 * holds and visitor access. Only what would be a MissingEntry becomes one.
 */
export interface UserSiteEntry {
  kind: 'userSite'
  username: string
  project: string
  freshUntil: number
}

/**
 * A path whose answer depends on query parameters too (a `_redirects` rule with query matches
 * applies to it): each answer is kept under the path's key with those parameters' values
 * (resolver.ts varyKey), never under the path alone.
 */
export interface VaryEntry {
  kind: 'vary'
  /** The parameters that choose the answer, sorted. */
  names: string[]
  freshUntil: number
}

export interface HostCacheOptions {
  /** How long an entry may serve without a write telling us about a change. */
  ttlMs?: number
  maxEntries?: number
  maxMissing?: number
  /**
   * The bus whose HOSTING_CHANNEL messages (a username, or FLUSH_ALL) drop paths; nothing is
   * cached while it cannot deliver other instances' invalidations. Absent: `invalidate` only.
   */
  bus?: Bus
}

/**
 * The public host's memory: path -> entry (files, redirects and misses, grouped per user so a
 * write drops all of a user's paths: an InvalidatedCache). Metadata only: an entry names its
 * blob by digest and carries its prepared headers; the bytes stay in the blob files and the
 * operating system's page cache, as nginx serves files. Fills carry the user's generation read before
 * the database lookup, so a lookup that raced a write never fills the cache with the old answer.
 */
export function createHostCache(o: HostCacheOptions = {}) {
  // every write through the service drops its paths at once (here and, by the bus, on every
  // instance); the life only bounds what a write from outside (the admin CLI's process with no
  // Redis) takes to show. Lives are spread over +-20%, so entries filled together (a crawl, a
  // benchmark) do not all fall to the database at once.
  const ttlMs = o.ttlMs ?? 300_000
  // 25,000: the entries of a 20,000-page site all fit; past that, each entry kept is heap the
  // long tail churns through (docs/decisions.md 53)
  const maxEntries = o.maxEntries ?? 25_000
  const maxMissing = o.maxMissing ?? 10_000
  const paths = createInvalidatedCache<string, CachedEntry>({
    bus: o.bus,
    channel: HOSTING_CHANNEL,
    messages: 'groups',
    maxEntries,
    maxMisses: maxMissing,
    // a user site's pointer stands where a miss stood: a scan of made-up paths on a user's
    // origin churns the misses, never the files other paths keep
    isMiss: (e) => e.kind === 'missing' || e.kind === 'userSite',
    isFresh: (e) => e.freshUntil > performance.now(),
  })
  return {
    /** A fresh entry for a raw request path, or undefined. */
    get: (key: string) => paths.get(key),

    /** The user's generation: read it before a database lookup, pass it to set(). */
    gen: (username: string): number => paths.ticket(username),

    /**
     * Whether an answer read at `gen` may still be kept and reused: no change of the user's
     * content since, and the bus delivering other instances' invalidations.
     */
    accepts: (username: string, gen: number): boolean => paths.accepts(gen, username),

    freshUntil: () => performance.now() + ttlMs * (0.8 + 0.4 * Math.random()),

    set(path: string, username: string, entry: CachedEntry, seenGen: number): void {
      paths.set(path, entry, seenGen, username)
    },

    /** A user's content changed: every path of theirs goes, and fills in flight are refused. */
    invalidate: (username: string): void => paths.invalidateGroup(username),

    /** Every path of every user goes (bus FLUSH_ALL: invalidations may have been lost); bytes stay (content-addressed). */
    invalidateAll: (): void => paths.invalidateAll(),

    stats: () => {
      const p = paths.stats()
      return { entries: p.entries, missing: p.misses }
    },
  }
}
export type HostCache = ReturnType<typeof createHostCache>
