import type { IncomingMessage, ServerResponse } from 'node:http'
import type { BlobStore } from '../../storage/blob-store.js'
import type { OpenBlobFile, OpenFiles } from '../../storage/open-files.js'
import { hotCount } from '../../observability/registry.js'
import { metrics } from '../../observability/metrics.js'
import { headerList, prepare, sendPreparedFile, type Prepared } from '../../http/prepared-response.js'
import { readFully } from '../../http/sendfile.js'
import { notAllowed, plainHeaders, PUBLIC_PREFLIGHT_HEADERS } from '../../http/content-headers.js'
import { decide, partialHeaders, pickEncoding, unsatisfiableHeaders, WHOLE, type Decision } from '../../http/representation.js'
import { systemClock, type Clock } from '../../util/clock.js'
import type { FileEntry, HostCache, HostEntry, RedirectEntry, UserSiteEntry } from './host-cache.js'
import type { Encoded, Encodings } from './encodings.js'
import { decodeSegment, PAGE_EXTENSIONS, PAGE_NAME, PREVIEW_SEGMENT } from './paths.js'
import { isCacheField, withQuery } from './site-rules.js'
import { builtForRoot, ROOT_CHECK_PAGES } from '../../util/html.js'
import { upperEscapes } from '../../util/percent-escapes.js'
import { canNameUser } from '../../auth/account-rules.js'
import {
  CACHE_CONTROL,
  commonOf,
  etagOf,
  FROM_FILE_MAX,
  keptLonger,
  representationOf,
  siteKey,
  domainKey,
  varyKey,
  VARY_WORKER,
  type Resolver,
  type SiteMode,
} from './resolver.js'
import { OPEN_SITES, type SiteHooks, type DomainTarget } from '../../http/site-hooks.js'
import { upgradeStatus } from '../../http/origin.js'
import { hostName, originUrl, previewOriginUrl, projectSegment, type SiteHost } from '../../http/site-origin.js'
import type { HostHolds } from '../abuse/public.js'
import { SITE_FORM_ROUTE, type Handover } from '../../http/types.js'
import { sendLeaving, sendNotFound } from './not-found.js'

type Log = { warn(obj: unknown, msg: string): void }

const FORBIDDEN = Buffer.from('Forbidden')
const BAD_REQUEST = Buffer.from('Bad Request')
const UNAVAILABLE = Buffer.from('Service Unavailable')
/** The path form's refusal of a worker's fetch, which an ordinary load of the URL never gets. */
const H403_WORKER = [...plainHeaders(FORBIDDEN.length), 'Vary', VARY_WORKER]
const H400 = plainHeaders(BAD_REQUEST.length)
const H503 = plainHeaders(UNAVAILABLE.length)
/** How an answer's headers are made (commonFor): the entry's own; private (a visitor password); a worker's script fetch. */
type Own = boolean | 'worker'
/** Hands a request to the router (a fast path's `route`). */
type RouteOn = (req: IncomingMessage, res: ServerResponse, handover?: Handover) => void
/** Body types a browser form posts; only these may be a form's post to a page. */
const isFormBody = (type: string | undefined): boolean => /^\s*(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i.test(type ?? '')
/** index.html files larger than this are not read for the built-for-/ check (decision 75). */
const ROOT_CHECK_MAX = 1 << 20
const BUILT_MEMO_MAX = 10_000
/** Clear-Site-Data's value on a removed page's 451 on a site's own origin: storage and service workers, not cookies. */
const CLEAR_STORAGE = '"storage"'
/**
 * What a service worker's fetch of a script the site does not have (unpublished, deleted,
 * moved) gets on a site's own origin, in place of the 404: a worker that takes over, unregisters
 * and reloads the pages it controls, which then get the network's answer. A 404 only fails the
 * browser's update check and leaves the installed worker serving the old site from its caches
 * (decision 273). Pages a first registration made are not controlled, so never reloaded.
 */
const RETIRING_WORKER = Buffer.from(`self.addEventListener('install', () => self.skipWaiting())
self.addEventListener('activate', (e) => {
  e.waitUntil((async () => {
    const pages = await self.clients.matchAll({ type: 'window' })
    await self.registration.unregister()
    for (const page of pages) page.navigate(page.url).catch(() => {})
  })())
})
`)
const H_RETIRING = [
  'Content-Type',
  'text/javascript; charset=utf-8',
  'Content-Length',
  String(RETIRING_WORKER.length),
  'Cache-Control',
  'no-store',
  'Vary',
  VARY_WORKER,
  'X-Content-Type-Options',
  'nosniff',
]
/** The types a browser runs a worker script of (the HTML standard's JavaScript MIME types). */
const JS_TYPE =
  /^\s*(text\/(javascript|ecmascript|jscript|livescript|x-javascript|x-ecmascript|javascript1\.[0-5])|application\/(javascript|ecmascript|x-javascript|x-ecmascript))\s*(;|$)/i
/** A CORS preflight of hosted content, on every URL form: public reads, conditional and range ones included. */
const H204 = ['Allow', 'GET, HEAD, OPTIONS', ...PUBLIC_PREFLIGHT_HEADERS]

/** How the host tells the service's own host from a user's origin (src/http/site-origin.ts). */
export interface SiteRouting {
  /** The user (and project) whose own origin the request was made to; null: the service's host (path form). */
  siteOf(req: IncomingMessage): SiteHost | null
  /** A content-domain host that names no user or project (src/http/site-origin.ts): 404, never the service. */
  contentOnly(req: IncomingMessage): boolean
  /** Where a browser navigating to a path-form page is sent (that page on its user's origin), or null. */
  documentTarget(req: IncomingMessage, path: string): string | null
  /** The https:// URL to send a plain-HTTP request on a user's origin to, or null to serve it. */
  upgrade(req: IncomingMessage): string | null
  /**
   * A user's origin (no trailing slash) as the request's client reaches it: the request's own
   * when it was made to that origin, else as the path form's redirect names it; null: none.
   */
  userOrigin(req: IncomingMessage, username: string): string | null
  /** The https:// origin of a custom domain (a host name) as the request's client reaches the service: its port kept. */
  domainOrigin(req: IncomingMessage, domain: string): string
}
const NO_SITES: SiteRouting = {
  siteOf: () => null,
  contentOnly: () => false,
  documentTarget: () => null,
  upgrade: () => null,
  userOrigin: () => null,
  domainOrigin: (_req, domain) => `https://${domain}`,
}

/**
 * The public host's request handling, on the raw Node request and response: cached answers
 * cost a Map lookup and one write of precomputed headers; misses go through the resolver.
 */
/** Where the host's bodies come from: the blob store, its open-file cache, the compressed forms. */
export interface HostBodies {
  blobs: BlobStore
  files: OpenFiles
  encodings: Encodings
  /** Send large bodies with sendfile(2) when the socket allows (config SENDFILE). */
  sendfile: boolean
}

export function createHostHandler(
  cache: HostCache,
  resolve: Resolver,
  bodies: HostBodies,
  log: Log,
  sites: SiteRouting = NO_SITES,
  clock: Clock = systemClock,
  hooks: SiteHooks = OPEN_SITES,
  holds: HostHolds | null = null,
) {
  const { blobs, files, encodings } = bodies
  // body bytes sent, for /metrics (svc_blob_bytes_served_total{source="hosting"}); HEAD sends none
  const servedBytes = hotCount(metrics.blobBytesServed, { source: 'hosting' })
  const sent = (head: boolean, n: number) => {
    if (!head) servedBytes.n += n
  }
  const tagOf = (e: FileEntry, enc: 'br' | 'gzip') => etagOf(e.digest, enc === 'br' ? '-br' : '-gz')

  /** What to answer: without conditional or range headers (most requests) the whole entry, read from nothing else. */
  const decideFor = (req: IncomingMessage, e: FileEntry): Decision => {
    const h = req.headers
    if (
      e.status !== 200 ||
      (h['if-none-match'] === undefined &&
        h['if-modified-since'] === undefined &&
        h.range === undefined &&
        h['if-match'] === undefined &&
        h['if-unmodified-since'] === undefined)
    )
      return WHOLE
    return decide(h, representationOf(e))
  }

  /** The prepared 200 of a compressed form for this entry (its headers), made once per form. */
  function preparedFor(e: FileEntry, enc: 'br' | 'gzip', v: Encoded): Prepared {
    const field = enc === 'br' ? 'okBr' : 'okGzip'
    const had = e[field]
    if (had !== null && had.digest === v.digest) return had.p
    const p = prepare(e.status, [...commonOf(e), 'ETag', tagOf(e, enc), 'Content-Encoding', enc, 'Content-Length', String(v.size)])
    e[field] = { digest: v.digest, p }
    return p
  }

  /**
   * The open file of an entry's blob (its path: as the store's lookup found it, else where the
   * disk driver keeps it); null: its file vanished (evicted, swept): look it up again.
   */
  function openOf(e: FileEntry): OpenBlobFile | null {
    return files.get(e.digest) ?? files.openSync(e.digest, e.file?.path ?? blobs.localPathNow!(e.digest), e.size)
  }

  /**
   * The compressed form to send for this request, if it is made, with its open file; asks
   * for it otherwise. Any size: a file too large to answer from its own open file (streamed)
   * is compressed too, and its form goes out from the form's file, or streamed when that is
   * large as well (`f` null).
   */
  function formFor(req: IncomingMessage, e: FileEntry): { enc: 'br' | 'gzip'; v: Encoded; f: OpenBlobFile | null } | null {
    const ae = req.headers['accept-encoding']
    if (!e.compressible || ae === undefined) return null
    const enc = pickEncoding(ae)
    if (enc === null) return null
    const v = encodings.get(e.digest, enc)
    if (v === undefined) {
      // never compressed on the request path: identity now, the form made in the background
      encodings.request(e.digest, enc)
      return null
    }
    if (v === null) return null
    if (v.size > FROM_FILE_MAX) return { enc, v, f: null }
    const f = files.get(v.digest) ?? files.openSync(v.digest, v.path, v.size)
    if (f === null) {
      encodings.forget(e.digest, enc)
      return null
    }
    return { enc, v, f }
  }

  /**
   * The headers every answer about an entry shares; `priv`: a visitor password let the
   * request through, and no shared cache may keep the answer (RFC 9111 3.5: `public` and
   * `must-revalidate` would let one store an authorized answer), whatever a rule asked for:
   * Cache-Control is private (a rule's no-store kept), and a rule's CDN fields, which a CDN
   * obeys before it (isCacheField: CDN-Cache-Control, Surrogate-Control), are left out.
   * `'worker'`: a service worker's fetch of its script (ownCache), which gets the default
   * revalidation in place of a rule's longer life (a rule's no-store kept).
   */
  const commonFor = (e: FileEntry, priv: Own): string[] => {
    const list = commonOf(e)
    if (!priv) return list
    const out: string[] = []
    for (let i = 0; i < list.length; i += 2) {
      const name = list[i].toLowerCase()
      if (name === 'cache-control') out.push(list[i], /no-store/i.test(list[i + 1]) ? list[i + 1] : priv === 'worker' ? CACHE_CONTROL : 'private, no-cache')
      else if (!isCacheField(name)) out.push(list[i], list[i + 1])
    }
    return out
  }

  /**
   * Whether an entry is no worker script a browser would take: a 404 or 410 (missing, a rule's,
   * the project's 404.html), or a file of a type that is not JavaScript (a single-page app's
   * fallback, `/* /index.html 200`, answering a worker's path that is gone with its page).
   */
  const noScript = (e: HostEntry): boolean => {
    // a path the user site answers is its to answer, by this same test on its own entry
    if (e.kind === 'redirect' || e.kind === 'userSite') return false
    if (e.kind !== 'file' || e.status === 404 || e.status === 410) return true
    const list = commonOf(e)
    for (let i = 0; i < list.length; i += 2) if (list[i].toLowerCase() === 'content-type') return !JS_TYPE.test(list[i + 1])
    return true
  }

  /**
   * Whether a request is a service worker's fetch of its script (`Service-Worker: script`) for
   * a file whose rules set a cache life: its answer is then made with commonFor's 'worker'
   * headers, so a rule such as `/*.js` immutable for a year never keeps a browser (which caps
   * a worker script's life at a day, and uses it with `updateViaCache: 'all'`) on an old worker.
   * Such a file's answers all carry `Vary: Service-Worker` (resolver.ts fileEntry), so a cache
   * in front never hands the ordinary load's long-kept answer to a worker's fetch.
   */
  const ownCache = (req: IncomingMessage, e: FileEntry): boolean => req.headers['service-worker'] !== undefined && keptLonger(commonOf(e))

  /**
   * The headers of a 412 or 416, which carry none of the representation's bytes: no
   * Content-Encoding (a .svgz's) for a client to try to decode an empty body with.
   */
  const refusalFor = (e: FileEntry, priv: Own): string[] => {
    const list = commonFor(e, priv)
    const out: string[] = []
    for (let i = 0; i < list.length; i += 2) if (list[i] !== 'Content-Encoding') out.push(list[i], list[i + 1])
    return out
  }

  /** 304, 412 and 416: no body, nothing to read. */
  function answerBodiless(req: IncomingMessage, res: ServerResponse, e: FileEntry, d: Decision, priv: Own = false): boolean {
    if (d.kind === 'precondition-failed') {
      // the private form of the headers: no shared cache keeps one request's 412 for the URL
      res.writeHead(412, [...refusalFor(e, true), 'ETag', etagOf(e.digest), 'Content-Length', '0'])
      res.end()
      return true
    }
    if (d.kind === 'not-modified') {
      const ae = req.headers['accept-encoding']
      const enc = !priv && e.compressible && ae !== undefined ? pickEncoding(ae) : null
      const tag = enc !== null && encodings.get(e.digest, enc) ? tagOf(e, enc) : etagOf(e.digest)
      res.writeHead(304, [...commonFor(e, priv), 'ETag', tag])
      res.end()
      return true
    }
    if (d.kind === 'unsatisfiable') {
      res.writeHead(416, [...refusalFor(e, priv), 'ETag', etagOf(e.digest), ...unsatisfiableHeaders(e)])
      res.end()
      return true
    }
    return false
  }

  /**
   * Answers a file at once from its open blob file (one read or sendfile, as nginx does);
   * false when that needs I/O first: the local file not looked up yet or gone, a file too
   * large to send in one piece, or a store with no local file (streamed).
   */
  function answerFile(req: IncomingMessage, res: ServerResponse, e: FileEntry, head: boolean): boolean {
    const d = decideFor(req, e)
    if (answerBodiless(req, res, e, d)) return true
    // the disk driver's file where it should be, opened below without a stat first; gone
    // (an older layout, a missing blob): serveFile asks the store
    if (!e.fromFile || e.file === null || (e.file === undefined && blobs.localPathNow === undefined)) return false
    if (d.kind === 'whole') {
      const form = formFor(req, e)
      if (form?.f != null) {
        sendPreparedFile(req, res, preparedFor(e, form.enc, form.v), form.f.fd, form.v.size, bodies.sendfile, clock)
        sent(head, form.v.size)
        return true
      }
    }
    const f = openOf(e)
    if (f === null) {
      e.file = undefined
      return false
    }
    if (d.kind === 'range') {
      const n = d.end - d.start + 1
      let body: Buffer | undefined
      if (!head) {
        body = Buffer.allocUnsafe(n)
        if (!readFully(f.fd, body, 0, n, d.start)) throw new Error('blob file shorter than its blob')
      }
      res.writeHead(206, [...commonOf(e), 'ETag', etagOf(e.digest), ...partialHeaders(e, d)])
      res.end(body)
      sent(head, n)
      return true
    }
    sendPreparedFile(req, res, e.ok, f.fd, e.size, bodies.sendfile, clock)
    sent(head, e.size)
    return true
  }

  /**
   * Streams an entry from the blob store, never buffered whole: large files, no local file, or
   * `priv` (a visitor password let the request through, or a worker's script fetch: the
   * answer's own headers, commonFor's, identity only).
   */
  async function serveFile(req: IncomingMessage, res: ServerResponse, e: FileEntry, head: boolean, priv: Own = false): Promise<void> {
    if (!priv && e.fromFile && e.file === undefined) {
      e.file = await blobs.localFile(e.digest)
      if (answerFile(req, res, e, head)) return
    }
    const d = decideFor(req, e)
    if (answerBodiless(req, res, e, d, priv)) return
    // a large file's compressed form (made in the background, as any file's): from its own
    // open file, or streamed when it is large too
    const form = !priv && d.kind === 'whole' ? formFor(req, e) : null
    if (form?.f != null) {
      sendPreparedFile(req, res, preparedFor(e, form.enc, form.v), form.f.fd, form.v.size, bodies.sendfile, clock)
      sent(head, form.v.size)
      return
    }
    if (form != null) return streamBlob(res, form.v.digest, null, headerList(preparedFor(e, form.enc, form.v)), e.status, form.v.size, head)
    const range = d.kind === 'range' ? d : null
    const h = range
      ? [...commonFor(e, priv), 'ETag', etagOf(e.digest), ...partialHeaders(e, range)]
      : priv
        ? [...commonFor(e, priv), 'ETag', etagOf(e.digest), 'Content-Length', String(e.size)]
        : headerList(e.ok)
    return streamBlob(res, e.digest, range, h, range ? 206 : e.status, range ? range.end - range.start + 1 : e.size, head)
  }

  /** Streams a blob (or one range of it) under the given headers; HEAD: the headers alone. */
  async function streamBlob(
    res: ServerResponse,
    digest: string,
    range: { start: number; end: number } | null,
    headers: string[],
    status: number,
    length: number,
    head: boolean,
  ): Promise<void> {
    if (head) {
      res.writeHead(status, headers)
      res.end()
      return
    }
    const stream = await blobs.get(digest, range ?? undefined)
    // a client gone while the blob was being opened has already closed the response: its
    // 'close' will not come again, and a stream piped into it would hold its file forever
    if (res.closed) {
      stream.destroy()
      return
    }
    res.writeHead(status, headers)
    res.once('close', () => stream.destroy())
    stream.once('error', (err) => {
      log.warn({ err, digest }, 'hosted file stream failed')
      res.destroy()
    })
    res.once('finish', () => sent(false, length))
    stream.pipe(res)
  }

  /**
   * Answers at once when nothing needs waiting for (the blob file known, 304, redirect, 404);
   * false when the answer needs I/O first.
   */
  function answerNow(req: IncomingMessage, res: ServerResponse, e: HostEntry, query: string, head: boolean): boolean {
    if (e.kind === 'file') return answerFile(req, res, e, head)
    if (e.kind === 'redirect') {
      if (e.away === true) {
        leave(req, res, e, query)
        return true
      }
      res.writeHead(e.status, ['Location', withQuery(e.location, query, e.drop), ...plainHeaders(0)])
      res.end()
      return true
    }
    // a path of the user's origin that names nothing of theirs: their user site answers it
    if (e.kind === 'userSite') {
      serveSite(req, res, e.username, userSiteTarget(e))
      return true
    }
    // a missing path (a page's clean URL is answered as its page's path before it gets here)
    sendNotFound(req, res, e.kind === 'missing' ? e.root : null, clock)
    return true
  }

  function serve(req: IncomingMessage, res: ServerResponse, e: HostEntry, query: string, head: boolean, priv = false): void | Promise<void> {
    if (req.headers['service-worker'] !== undefined && noScript(e)) {
      // only a site's own origins get here with it: the path form refuses a worker's fetch
      res.writeHead(200, H_RETIRING)
      res.end(head ? undefined : RETIRING_WORKER)
      return
    }
    if (e.kind === 'file' && (priv || ownCache(req, e))) return serveFile(req, res, e, head, priv || 'worker')
    if (answerNowSafe(req, res, e, query, head)) return
    return serveFile(req, res, e as FileEntry, head)
  }

  /** answerNow for the fast path: a failed read answers 503 there rather than reaching the router. */
  function answerNowSafe(req: IncomingMessage, res: ServerResponse, e: HostEntry, query: string, head: boolean): boolean {
    try {
      return answerNow(req, res, e, query, head)
    } catch (err) {
      fail(res, err)
      return true
    }
  }

  const fail = (res: ServerResponse, err: unknown) => {
    log.warn({ err }, 'public host lookup failed')
    if (res.headersSent) {
      res.destroy()
      return
    }
    res.writeHead(503, H503)
    res.end(UNAVAILABLE)
  }

  /**
   * The cached answer of a key for a request's query: the key's own, or, for a path whose
   * answers depend on query parameters (a VaryEntry), the one kept for those parameters' values.
   */
  const cached = (key: string, query: string): HostEntry | undefined => {
    const e = cache.get(key)
    if (e === undefined || e.kind !== 'vary') return e
    const v = cache.get(varyKey(key, e.names, query))
    return v === undefined || v.kind === 'vary' ? undefined : v
  }

  /**
   * The path-form path a request is answered as: a single page's clean URL (a PageEntry,
   * /{user}/about) as the page's own path (/{user}/about.html), so its holds, visitor access
   * and answer are the page's; any other path as it is. Only a path naming one thing after the
   * user, without a page's extension, can be one; resolved (and so cached) when not cached yet.
   */
  function pagePath(full: string, site: boolean): string | Promise<string> {
    const a = full.indexOf('/', 1)
    if (a < 0 || a === full.length - 1 || full.indexOf('/', a + 1) >= 0 || PAGE_NAME.test(full) || pathUser(full.slice(1, a)) === null) return full
    const hit = cached(site ? siteKey(full) : full, '')
    if (hit !== undefined) return hit.kind === 'page' ? full + hit.ext : nameless(hit) ? heldPage(full) : full
    return resolve(full, site).then((r) => ('status' in r ? full : r.entry.kind === 'page' ? full + r.entry.ext : nameless(r.entry) ? heldPage(full) : full))
  }

  /** A path that names nothing of the user's: a 404, or the user site's path (a held page's clean URL still answers its 451). */
  const nameless = (e: HostEntry): boolean => e.kind === 'missing' || e.kind === 'userSite'

  /** The user site of an entry, served as a project's own origin serves it (at the host's root). */
  const userSiteTarget = (e: UserSiteEntry): DomainTarget => ({ username: e.username, project: e.project, deploy: null })

  /**
   * A clean URL that names nothing, as the path of a page of its name under a hold: a page taken
   * down loses its rows, so its clean URL no longer finds it, but the hold (keyed by the page's
   * name) stays, and the URL a report named keeps answering the 451 the `.html` one does.
   */
  function heldPage(full: string): string | Promise<string> {
    if (holds === null) return full
    const pick = (states: ReadonlyArray<string | null | undefined>) => {
      const i = states.findIndex((st) => st !== null && st !== undefined)
      return i < 0 ? full : full + PAGE_EXTENSIONS[i]
    }
    const now = PAGE_EXTENSIONS.map((ext) => holds.stateOf(full + ext))
    if (now.every((st) => st !== undefined)) return pick(now)
    return Promise.all(PAGE_EXTENSIONS.map((ext) => holds.load(full + ext))).then(pick)
  }

  /** Goes on with the path pagePath found, at once when it was known. */
  function withPage(res: ServerResponse, at: string | Promise<string>, then: (at: string) => void): void {
    if (typeof at === 'string') then(at)
    else at.then(then).catch((err) => fail(res, err))
  }

  /** Splits a request URL; the path is the cache key. */
  const split = (url: string) => {
    const q = url.indexOf('?')
    return q < 0 ? { path: url, query: '' } : { path: url.slice(0, q), query: url.slice(q) }
  }

  /**
   * Answers a path from the cache, or after resolving it; held content (abuse handling) answers
   * 451 first. `priv`: a visitor password let the request through (serveFile).
   */
  function serveAt(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    site: SiteMode,
    query: string,
    head: boolean,
    loaded?: string | null,
    priv = false,
  ): void {
    // the host a rule line may name: a project's own origin's or domain's (resolver.ts)
    const host = site === 'domain' ? hostName(req.headers.host) : ''
    if (holds !== null) {
      // `loaded`: the state already read (the fast path) or just loaded, for when the index
      // cannot keep it (bus down)
      const state = loaded !== undefined ? loaded : holds.stateOf(path)
      if (state === undefined) {
        holds.load(path).then(
          (s) => serveAt(req, res, path, site, query, head, s, priv),
          (err) => fail(res, err),
        )
        return
      }
      if (state !== null) return answerHeld(req, res, holds, state, head, site)
    }
    const e = cached(site === 'domain' ? domainKey(path, host) : site ? siteKey(path) : path, query)
    if (e !== undefined) {
      const r = serve(req, res, e, query, head, priv)
      if (r) r.catch((err) => fail(res, err))
      return
    }
    resolve(path, site, query, host)
      .then((r) => {
        if ('status' in r) {
          res.writeHead(400, H400)
          res.end(head ? undefined : BAD_REQUEST)
          return
        }
        return serve(req, res, r.entry, query, head, priv)
      })
      .catch((err) => fail(res, err))
  }

  /**
   * The 451 notice of held content (abuse handling). It names the URL the visitor asked for,
   * on the host they asked (a page's clean URL, a project origin's or domain's own path), not
   * the path it was served as.
   */
  function answerHeld(req: IncomingMessage, res: ServerResponse, h: HostHolds, state: string, head: boolean, site: SiteMode): void {
    const n = h.notice(state, req, split(req.url ?? '/').path)
    // content taken down for good, on a site's own origin: the visitor's browser drops what that
    // origin stored, its service workers included, which would otherwise keep serving the removed
    // pages from their caches (never on the path form, whose origin is the service's)
    res.writeHead(451, state === 'removed' && site !== false ? [...n.headers, 'Clear-Site-Data', CLEAR_STORAGE] : n.headers)
    res.end(head ? undefined : n.body)
  }

  /**
   * Serves `path` once visitor access allows it (the hook answers otherwise); `then(true)`: a
   * visitor password let it through, for this visitor only.
   */
  function gated(req: IncomingMessage, res: ServerResponse, username: string, rawName: string, cookies: boolean, then: (priv: boolean) => void): void {
    const ok = hooks.access(req, res, { username, rawName, cookies })
    if (ok === true || ok === 'private') then(ok === 'private')
    else if (ok !== false) ok.then((a) => a !== false && then(a === 'private')).catch((err) => fail(res, err))
  }

  /** A method other than GET, HEAD (and the password form's POST, a form's post): OPTIONS is a CORS preflight, anything else 405. */
  function otherMethod(m: string | undefined, res: ServerResponse): void {
    if (m === 'OPTIONS') res.writeHead(204, H204).end()
    else notAllowed(res)
  }

  /**
   * Every request made to a user's own origin, or to a project's own origin or a custom domain
   * (`target`): GET and HEAD of that user's content at /{name} and /{project}/... (a target:
   * its project's /...),
   * POST only for the visitor password form and a form's post to a page (postToPage); nothing
   * else (no API, no pages, no cookies).
   */
  function serveSite(req: IncomingMessage, res: ServerResponse, username: string, target: DomainTarget | null = null, route?: RouteOn): void {
    const m = req.method
    const head = m === 'HEAD'
    if (m !== 'GET' && !head && m !== 'POST') return otherMethod(m, res)
    const to = sites.upgrade(req)
    if (to !== null) {
      res.writeHead(upgradeStatus(m), ['Location', upperEscapes(to), ...plainHeaders(0)])
      res.end()
      return
    }
    const url = req.url ?? '/'
    if (url[0] !== '/') {
      res.writeHead(400, H400)
      res.end(head ? undefined : BAD_REQUEST)
      return
    }
    const { path, query } = split(url)
    const slash = path.indexOf('/', 1)
    // a target's name as the path form writes it: a kept deploy is {project}@{deploy id}
    const rawName = target ? projectSegment(encodeURIComponent(target.project), target.deploy ?? null) : path.slice(1, slash < 0 ? undefined : slash)
    const full = target ? `/${username}/${rawName}${path}` : `/${username}${path}`
    // a single page's clean URL takes the page's name (its visitor access)
    const go = () =>
      withPage(res, target ? full : pagePath(full, true), (at) =>
        gated(req, res, username, rawName + at.slice(full.length), true, (priv) => {
          if (m === 'POST') postToPage(req, res, username, at, target ? 'domain' : true, path, query, '/', route)
          else serveAt(req, res, at, target ? 'domain' : true, query, head, undefined, priv)
        }),
      )
    const send = () => {
      // a browser's navigation to a project may be sent on first (sendOn)
      if (m !== 'GET' || req.headers['sec-fetch-dest'] !== 'document' || (target === null && slash <= 1)) return go()
      if (target !== null) return sendOn(req, res, username, target.deploy ? null : target.project, null, path, query, go)
      sendOn(req, res, username, liveProject(rawName), { rawName, userOrigin: sites.userOrigin(req, username) }, path.slice(slash), query, go)
    }
    if (holds === null || !path.startsWith('/.well-known/')) return send()
    // the site at the host's root owns it: its own file at a path the service yields
    // (security.txt), when it serves one, answers there (decision 77). That site is a project
    // origin's or a domain's project (`target`), or on the user's origin the user site, when
    // it answers the path (it names nothing else of the user's, decision 277)
    const answer = (siteOwns: boolean) => {
      if (siteOwns || !holds.wellKnown(req, res, path)) send()
    }
    if (!holds.yields(path)) return answer(false)
    const own = (e: HostEntry | null) => e !== null && e.kind === 'file' && e.status === 200
    const host = hostName(req.headers.host)
    if (target !== null) return entryOn(res, full, 'domain', query, host, (e) => answer(own(e)))
    entryOn(res, full, true, query, '', (e) =>
      e === null || e.kind !== 'userSite'
        ? answer(false)
        : entryOn(res, targetPath(username, userSiteTarget(e), path), 'domain', query, host, (u) => answer(own(u))),
    )
  }

  /** The path-form path a target's site answers `path` (on its host) as, as serveSite spells it: /{username}/{project}/... */
  const targetPath = (username: string, target: DomainTarget, path: string): string =>
    `/${username}/${projectSegment(encodeURIComponent(target.project), target.deploy ?? null)}${path}`

  /** A path's entry as `mode` answers it on `host`: cached, else resolved (null: a bad path); `then` gets it. */
  function entryOn(res: ServerResponse, full: string, mode: SiteMode, query: string, host: string, then: (e: HostEntry | null) => void): void {
    const hit = cached(mode === 'domain' ? domainKey(full, host) : mode ? siteKey(full) : full, query)
    if (hit !== undefined) return then(hit)
    resolve(full, mode, query, host)
      .then((r) => then('status' in r ? null : r.entry))
      .catch((err) => fail(res, err))
  }

  /**
   * A POST to a page of a user's site: a form body (form-encoded or multipart) to a path that
   * is a page (a 200 file) goes to the forms feature's site route, which takes it when it
   * names a form (Netlify's `form-name`, decisions 161 and 180) and answers 405 otherwise;
   * to a path that redirects, it gets the redirect (decision 201); to a path that is no page,
   * that path's GET answer (404; decision 204); anything else is 405 here, before its body is
   * read. A held page's form body answers 451 as its GET does, and reaches no form (decision
   * 182). `path` is the request's path on this host and `root` the site's root there (`/`, or
   * `/{username}/` on the path form).
   */
  function postToPage(
    req: IncomingMessage,
    res: ServerResponse,
    username: string,
    full: string,
    mode: SiteMode,
    path: string,
    query: string,
    root: string,
    route?: RouteOn,
  ): void {
    if (route === undefined || !isFormBody(req.headers['content-type'])) return notAllowed(res)
    // held content (abuse handling) collects nothing: the post is answered as the GET of its
    // URL is (451 with the notice), before the page is looked up or its body read (decision 182)
    const take = (state: string | null) => {
      if (state !== null && holds !== null) return answerHeld(req, res, holds, state, false, mode)
      resolve(full, mode, query, mode === 'domain' ? hostName(req.headers.host) : '')
        .then((r) => {
          // a path a rule (or a folder's slash form) redirects is redirected for a post as for
          // its GET: 307/308 carry the post on, the others send the browser on with GET
          if (!('status' in r) && r.entry.kind === 'redirect') return answerNow(req, res, r.entry, query, false)
          // a path the user site answers: the post goes to it, as its GET does (its visitor
          // password form's post included)
          if (!('status' in r) && r.entry.kind === 'userSite') return serveSite(req, res, username, userSiteTarget(r.entry), route)
          // a path that is no page (missing, unpublished, a 404 or 410 rule) answers the form
          // as its GET does, as Netlify's does: nothing is there to take it (decision 204)
          if (!('status' in r) && (r.entry.kind === 'missing' || (r.entry.kind === 'file' && r.entry.status >= 400)))
            return serve(req, res, r.entry, query, false)
          if ('status' in r || r.entry.kind !== 'file' || r.entry.status !== 200) return notAllowed(res)
          req.url = SITE_FORM_ROUTE
          // the forms route reads the hold again before storing: one placed since this check
          // (while the body arrives) refuses the post too (decision 185)
          route(req, res, { siteForm: { username, path, root, hold: holds === null ? null : holds.keyOf(full) } })
        })
        .catch((err) => fail(res, err))
    }
    if (holds === null) return take(null)
    const state = holds.stateOf(full)
    if (state !== undefined) return take(state)
    holds.load(full).then(take, (err) => fail(res, err))
  }

  /**
   * A form body posted to a path-form page (/{username}/...): after the page's visitor access
   * (HTTP Basic, as its GET), the same hand-over as on the user's origin (postToPage; a
   * single page's clean URL as the page). False (the router: OPTIONS, 405 before the body):
   * any other body, or a first segment that names no user, as no route of the service's has.
   */
  function postToPathForm(req: IncomingMessage, res: ServerResponse, route: RouteOn): boolean {
    if (!isFormBody(req.headers['content-type'])) return false
    const { path, query } = split(req.url ?? '/')
    const raw = pathFormName(path).username
    const user = pathUser(raw)
    if (user === null) return false
    withPage(res, pagePath(path, false), (at) =>
      gated(req, res, user, pathFormName(at).rawName, false, () => postToPage(req, res, user, at, false, path, query, `/${raw}/`, route)),
    )
    return true
  }

  /** A 302 (or `status`) to `to`, a URL made of the request's path and query: its path's escapes uppercased. */
  const redirect = (res: ServerResponse, to: string, status = 302) => {
    res.writeHead(status, ['Location', upperEscapes(to), ...plainHeaders(0)])
    res.end()
  }

  /**
   * Where a browser's navigation to `rest` (and `query`) of a user's project is sent, before
   * any visitor gate (the place it is sent to applies the same one): to the live `project`'s
   * primary domain (decision 76); else, when asked from under the user's origin (`under`: the
   * raw first segment and that origin), to the project's (or kept deploy's) own origin when
   * it is built for / (decision 75); else `stay()`.
   */
  function sendOn(
    req: IncomingMessage,
    res: ServerResponse,
    username: string,
    project: string | null,
    under: { rawName: string; userOrigin: string | null } | null,
    rest: string,
    query: string,
    stay: () => void,
  ): void {
    const onPrimary = (primary: string | null) => {
      if (primary !== null && primary !== hostName(req.headers.host)) return redirect(res, `${sites.domainOrigin(req, primary)}${rest}${query}`)
      const origin = under === null || under.userOrigin === null ? null : segmentOrigin(under.userOrigin, under.rawName)
      if (origin === null || under === null) return stay()
      rootBuilt(username, under.rawName).then(
        (yes) => (yes ? redirect(res, origin + rest + query) : stay()),
        (err) => {
          log.warn({ err }, 'built-for-root check failed')
          stay()
        },
      )
    }
    const primary = project === null ? null : hooks.primaryDomain(username, project)
    if (!(primary instanceof Promise)) return onPrimary(primary)
    primary.then(onPrimary, (err) => {
      log.warn({ err }, 'primary domain lookup failed')
      stay()
    })
  }

  /** The own origin (no trailing slash) of the project or kept deploy a raw first segment names, from its user's origin; null: none. */
  const segmentOrigin = (userOrigin: string, rawName: string): string | null => {
    const name = decodeSegment(rawName)
    if (name === null) return null
    const preview = PREVIEW_SEGMENT.exec(name)
    const url = preview === null ? originUrl(userOrigin, name) : previewOriginUrl(userOrigin, preview[1], preview[2])
    return url === null ? null : url.slice(0, -1)
  }

  /** The live project a raw first segment names (decoded, NFC), or null: a kept deploy's or a bad one. */
  const liveProject = (rawName: string): string | null => {
    const name = decodeSegment(rawName)
    return name === null || PREVIEW_SEGMENT.test(name) ? null : name.normalize('NFC')
  }

  /** A path's entry as the user's origin serves it: cached, else resolved; null: a bad path. */
  async function siteEntry(path: string): Promise<HostEntry | null> {
    const hit = cached(siteKey(path), '')
    if (hit !== undefined) return hit
    const r = await resolve(path, true)
    return 'status' in r ? null : r.entry
  }

  // per project path: whether the project is built for /, with the user's generation it was
  // read at (any change of the user's content, a deploy or a file at their root, asks again)
  const builtMemo = new Map<string, { gen: number; yes: boolean }>()
  /**
   * Whether the project (or kept deploy) `rawName` of a user is a site built for /: its
   * index.html or 404.html loads, by root-absolute paths, files of its own (util/html.ts builtForRoot)
   * that the user's origin does not have at its root, where the browser looks for them now.
   */
  async function rootBuilt(username: string, rawName: string): Promise<boolean> {
    const base = `/${username}/${rawName}`
    const known = builtMemo.get(base)
    if (known !== undefined && cache.accepts(username, known.gen)) return known.yes
    const gen = cache.gen(username)
    const index = await siteEntry(`${base}/`)
    if (index === null || index.kind !== 'file' || index.status !== 200) return false
    const isFile = (e: HostEntry | null): e is FileEntry => e !== null && e.kind === 'file' && e.status === 200
    const has = async (p: string): Promise<boolean> => {
      const own = await siteEntry(base + p)
      // a file of its own (not the index, as a single-page app's fallback rule answers), and
      // none at the user's root (a file shared by the user's projects, or a page's clean URL)
      const atRoot = await siteEntry(`/${username}${p}`)
      return isFile(own) && own.digest !== index.digest && !isFile(atRoot) && atRoot?.kind !== 'page'
    }
    let yes = false
    for (const name of ROOT_CHECK_PAGES) {
      const page = name === 'index.html' ? index : await siteEntry(`${base}/${name}`)
      if (!isFile(page) || page.size > ROOT_CHECK_MAX) continue
      if ((yes = await builtForRoot((await blobs.read(page.digest)).toString('utf8'), has))) break
    }
    if (builtMemo.size >= BUILT_MEMO_MAX) builtMemo.clear()
    builtMemo.set(base, { gen, yes })
    return yes
  }

  /** A project's own origin serves that project (or one kept deploy) at its root, as a custom domain does. */
  const targetOf = (site: SiteHost): DomainTarget | null =>
    site.project === null ? null : { username: site.username, project: site.project, deploy: site.deploy }

  /**
   * A browser navigating to a path-form page goes to the page on its user's origin (302: the
   * setting may change), or straight to where that origin would send it on (sendOn).
   */
  function toSite(req: IncomingMessage, res: ServerResponse, path: string, query: string): boolean {
    if (req.headers['sec-fetch-dest'] !== 'document') return false
    const to = sites.documentTarget(req, path)
    if (to === null) return false
    sendToSite(req, res, path, query, to)
    return true
  }

  /**
   * Sends a path-form request to `to` (its path on the user's origin), or, for a GET, where
   * that origin would send a browser on (sendOn); a POST with 307, which carries it there.
   */
  function sendToSite(req: IncomingMessage, res: ServerResponse, path: string, query: string, to: string): void {
    const p = pathFormName(path)
    const username = pathUser(p.username)
    const slash = path.indexOf('/', p.username.length + 2)
    if (username === null || slash < 0 || p.rawName === '' || req.method !== 'GET') return redirect(res, to + query, req.method === 'POST' ? 307 : 302)
    const under = { rawName: p.rawName, userOrigin: sites.userOrigin(req, username) }
    sendOn(req, res, username, liveProject(p.rawName), under, path.slice(slash), query, () => redirect(res, to + query))
  }

  /**
   * A rule's redirect to another site asked on the path form (an away entry), by any client:
   * the service's origin never answers it, which would be an open redirect under its name
   * (decision 298). The client is sent to the same path and query where a browser's
   * navigation goes (sendToSite), which answers the rule; with no user origin, a page naming
   * the rule's target as a link.
   */
  function leave(req: IncomingMessage, res: ServerResponse, e: RedirectEntry, query: string): void {
    const { path } = split(req.url ?? '/')
    const to = sites.documentTarget(req, path)
    if (to === null) sendLeaving(req, res, withQuery(e.location, query, e.drop), clock)
    else sendToSite(req, res, path, query, to)
  }

  /**
   * A path-form path with repeated slashes before the username (`//alice/site/`): 301 to the
   * merged path when its first segment names a user, as repeated slashes after it are
   * (resolver.ts, decision 111). The Location starts with one slash and a username, so it never
   * names another host (`//evil.example`, `/\evil.example`); any other such path is left to the
   * router (404).
   */
  function mergedLeading(res: ServerResponse, path: string, query: string): boolean {
    if (path.charCodeAt(1) !== 0x2f) return false
    const merged = path.replace(/\/{2,}/g, '/')
    if (pathUser(pathFormName(merged).username) === null) return false
    res.writeHead(301, ['Location', upperEscapes(merged) + query, ...plainHeaders(0)])
    res.end()
    return true
  }

  /**
   * Answers a path-form GET or HEAD of `path` (as pagePath found it) whose holds and visitor
   * access are known from memory; false: the router's handle() must.
   */
  function fastPathForm(req: IncomingMessage, res: ServerResponse, path: string, query: string): boolean {
    // held content (abuse handling) and holds not loaded yet go through the router
    if (holds !== null && holds.stateOf(path) !== null) return false
    // visitor access known to be open from memory; anything else goes through handle()
    const p = pathFormName(path)
    const user = pathUser(p.username)
    if (user === null || !hooks.openNow(user, p.rawName)) return false
    // cached or not: a miss is resolved here too, as handle() would after routing (the
    // holds were read above: null, not held)
    serveAt(req, res, path, false, query, req.method === 'HEAD', null)
    return true
  }

  /** The raw name after /{username}/ of a path-form path ('' when there is none). */
  const pathFormName = (path: string): { username: string; rawName: string } => {
    const a = path.indexOf('/', 1)
    if (a < 0) return { username: path.slice(1), rawName: '' }
    const b = path.indexOf('/', a + 1)
    return { username: path.slice(1, a), rawName: path.slice(a + 1, b < 0 ? undefined : b) }
  }

  /** The user of a path-form path as the resolver reads it (lowercased), or null when it cannot be one. */
  // the account a path form names, or null: never one of the service's own first segments
  // (in any case: /SVC_API/... must not make /svc_api/... a user's path)
  const pathUser = (raw: string): string | null => {
    const d = decodeSegment(raw)?.toLowerCase()
    return d === undefined || !canNameUser(d) ? null : d
  }

  return {
    /**
     * Before routing: takes every request made to a user's own origin or to a verified
     * custom domain, a path-form GET or HEAD whose visitor access and holds are known
     * from memory (cached: a Map lookup and one write; not cached: resolved, then answered),
     * and a form body posted to a path-form page (postToPathForm); false lets the router
     * handle the request.
     */
    fast(req: IncomingMessage, res: ServerResponse, route?: RouteOn): boolean {
      const site = sites.siteOf(req)
      if (site !== null) {
        serveSite(req, res, site.username, targetOf(site), route)
        return true
      }
      if (sites.contentOnly(req)) {
        sendNotFound(req, res, null, clock)
        return true
      }
      const d = hooks.domain(hostName(req.headers.host))
      if (d !== null) {
        if (!(d instanceof Promise)) serveSite(req, res, d.username, d, route)
        else if (route === undefined) return false
        else
          d.then((t) => (t === null ? route(req, res) : serveSite(req, res, t.username, t, route))).catch((err) => {
            log.warn({ err }, 'custom domain lookup failed')
            route(req, res)
          })
        return true
      }
      const m = req.method
      if (m === 'POST' && route !== undefined) return postToPathForm(req, res, route)
      if ((m !== 'GET' && m !== 'HEAD') || req.headers['service-worker'] !== undefined) return false
      const { path, query } = split(req.url ?? '/')
      if (mergedLeading(res, path, query)) return true
      if (toSite(req, res, path, query)) return true
      // a single page's clean URL answers as the page's own path, found first when not cached
      const at = pagePath(path, false)
      if (typeof at === 'string') return fastPathForm(req, res, at, query)
      if (route === undefined) {
        at.catch(() => undefined)
        return false
      }
      at.then((p) => fastPathForm(req, res, p, query) || route(req, res)).catch((err) => fail(res, err))
      return true
    },

    /** Answers a method other than GET and HEAD on path-form content as a user's origin does (serveSite). */
    otherMethod,

    /** Handles GET and HEAD of /{username}/... on the raw request and response. */
    handle(req: IncomingMessage, res: ServerResponse): void {
      const site = sites.siteOf(req)
      if (site !== null) {
        serveSite(req, res, site.username, targetOf(site))
        return
      }
      const { path, query } = split(req.url ?? '/')
      const head = req.method === 'HEAD'
      if (toSite(req, res, path, query)) return
      if (req.headers['service-worker'] !== undefined) {
        // a hosted script may never become a service worker over the user's (or anyone's) pages
        res.writeHead(403, H403_WORKER)
        res.end(head ? undefined : FORBIDDEN)
        return
      }
      const p = pathFormName(path)
      const user = pathUser(p.username)
      if (user === null) {
        serveAt(req, res, path, false, query, head)
        return
      }
      withPage(res, pagePath(path, false), (at) =>
        gated(req, res, user, pathFormName(at).rawName, false, (priv) => serveAt(req, res, at, false, query, head, undefined, priv)),
      )
    },
  }
}
