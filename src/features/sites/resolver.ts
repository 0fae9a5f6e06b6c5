import type { Db } from '../../db/kysely.js'
import { PAGE_CONTENT_HEADERS, PUBLIC_CORS_HEADERS } from '../../http/content-headers.js'
import { linesOf, prepareShared, sharedHead, type Prepared, type SharedHead } from '../../http/prepared-response.js'
import { httpDate, type Representation } from '../../http/representation.js'
import { canNameUser } from '../../auth/account-rules.js'
import { checkName, checkRelativePath, cleanPageExtension, decodeHostSegment, decodeSegment, INDEX_PAGES } from './paths.js'
import { hostedFile } from './files-store.js'
import { publishedFolder, publishedUserSite } from './folders-store.js'
import { createDeployIndex, type DeployIndex } from './deploy-index.js'
import type { HostCache, HostEntry, FileEntry } from './host-cache.js'
import {
  compileRules,
  headersFor,
  isCacheField,
  matchRedirect,
  onServiceOrigin,
  onUserOrigin,
  queryNamesFor,
  RULE_FILES,
  type HeaderRule,
  type RedirectRule,
  type SiteRules,
} from './site-rules.js'
import { dropOldest, oldestKey } from '../../util/oldest.js'
import { upperEscapes } from '../../util/percent-escapes.js'
import { ruleEncoding, servedType, storedEncoding } from './content-types.js'

/** Files up to this size go out from their open blob file in one read or sendfile; larger ones are streamed. */
export const FROM_FILE_MAX = 2 * 1024 * 1024
/** Compressible files up to this size get compressed forms (made whole in memory, in the background). */
export const COMPRESS_MAX = 64 * 1024 * 1024
/** Updates must show at once: browsers revalidate every time (cheap: ETag -> 304). */
export const CACHE_CONTROL = 'public, max-age=0, must-revalidate'

// public content is readable cross-origin (never with credentials): module scripts, fonts
// and fetches of a site's own files load from an opaque (sandboxed) origin too; its ETag and
// Content-Range are exposed, as on the image and hosted-data links
const CORS_HEADERS = PUBLIC_CORS_HEADERS
const RULE_FILE_SET = new Set<string>(RULE_FILES)
/** The name a slash form's path is checked with: the first index page (index.html). */
const INDEX = INDEX_PAGES[0]
const NOINDEX: Array<[string, string]> = [['X-Robots-Tag', 'noindex']]

/**
 * The _headers values an answer takes: a 404 or 410 keeps them all but the cache fields
 * (Cache-Control, CDN-Cache-Control...: isCacheField), so a rule meant for the files under a
 * path (`/assets/*` immutable for a year) never makes a browser or CDN keep the error for
 * that long; the error keeps the default revalidation. Nor a rule's Content-Encoding: the
 * error's page is not the file the rule describes.
 */
const errorHeaders = (status: number, extra: Array<[string, string]>): Array<[string, string]> =>
  status === 404 || status === 410 ? extra.filter(([name]) => !isCacheField(name) && name.toLowerCase() !== 'content-encoding') : extra
/** Path form (/{user}/...): the sandbox keeps pages out of the service's origin. */
const CONTENT_HEADERS = PAGE_CONTENT_HEADERS
/** A user's own origin: the full web platform; only nosniff and the CORS grant are added. */
const SITE_HEADERS = ['X-Content-Type-Options', 'nosniff', 'Cross-Origin-Resource-Policy', 'cross-origin', ...CORS_HEADERS]

/**
 * Cache key of a path: the path form, the user's origin and a custom domain cache different
 * headers or redirects; a project's own origin and each of its domains apart, since a rule
 * line may name one host (`https://www.example.com/*`). A host has no `/`, a path starts with one.
 */
export const siteKey = (path: string): string => `@${path}`
export const domainKey = (path: string, host: string): string => `!${host}${path}`
/**
 * The key of a path's answer for a query, when the path's answers depend on the query
 * parameters `names` (a VaryEntry under `key` says which): each one's first value, or its
 * absence, as the rules read them.
 */
export function varyKey(key: string, names: readonly string[], query: string): string {
  const params = new URLSearchParams(query)
  let out = `${key}\n`
  for (const name of names) {
    const v = params.get(name)
    out += v === null ? '&' : `&=${encodeURIComponent(v)}`
  }
  return out
}

/**
 * Where a request came: false, the path form (/{user}/...); true, the user's own origin
 * (/{name}/...); 'domain', a custom domain serving one project (/...).
 */
export type SiteMode = boolean | 'domain'
const COMPRESSIBLE =
  /^(text\/|application\/(javascript|json|xml|wasm|manifest\+json|ld\+json|x-javascript|rss\+xml|atom\+xml|xhtml\+xml|[a-z.+-]*\+(json|xml))|image\/(svg\+xml|x-icon|vnd\.microsoft\.icon|bmp)|font\/(ttf|otf))/i

/** Headers a site rule replaces rather than adds to; any other header the service sets stays as it is. */
const RULE_REPLACES = new Set(['content-type', 'cache-control', 'access-control-allow-origin', 'access-control-expose-headers', 'cross-origin-resource-policy'])

/** Adds a path's _headers values to a header list: replaced when allowed, CSP added as a further policy, else kept. */
function withRuleHeaders(list: string[], extra: Array<[string, string]>): string[] {
  for (const [name, value] of extra) {
    const lower = name.toLowerCase()
    const at = list.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === lower)
    if (at < 0 || lower === 'content-security-policy') list.push(name, value)
    else if (RULE_REPLACES.has(lower)) list[at + 1] = value
  }
  return list
}

/**
 * Whether an answer's headers keep it past a revalidation: a Cache-Control other than the
 * default, or a field a CDN obeys before it (isCacheField), as a site rule sets them. A
 * worker's fetch of such a file is answered with the default instead (serve.ts, decision 272).
 */
export function keptLonger(list: readonly string[]): boolean {
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i].toLowerCase()
    if (name === 'cache-control' ? list[i + 1] !== CACHE_CONTROL : isCacheField(name)) return true
  }
  return false
}

/** The token a file's answers add to Vary when a worker's fetch of it is answered apart (keptLonger). */
export const VARY_WORKER = 'Service-Worker'

/** Adds `token` to a header list's Vary line (one of its own when there is none; `*` already covers it). */
function withVary(list: string[], token: string): string[] {
  const at = list.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === 'vary')
  if (at < 0) list.push('Vary', token)
  else {
    const had = list[at + 1].split(',').map((t) => t.trim().toLowerCase())
    if (!had.includes('*') && !had.includes(token.toLowerCase())) list[at + 1] = list[at + 1].trim() === '' ? token : `${list[at + 1]}, ${token}`
  }
  return list
}

/** Headers that differ from file to file; the others are encoded once for all entries that share them. */
const OWN_HEADERS = new Set(['content-type', 'last-modified'])

/** The 200 answer of an entry: its common headers shared between entries, its own lines apart. */
function prepareEntry(status: number, common: readonly string[], etag: string, size: number): Prepared {
  const shared: string[] = []
  const own: string[] = []
  for (let i = 0; i < common.length; i += 2) (OWN_HEADERS.has(common[i].toLowerCase()) ? own : shared).push(common[i], common[i + 1])
  own.push('ETag', etag, 'Content-Length', String(size))
  return prepareShared(sharedHead(status, shared), own)
}

/**
 * The shared head of entries without _headers values, per (status, origin, compressible):
 * made once, so a miss on the long tail encodes only its own four lines.
 */
const plainHeads = new Map<string, SharedHead>()
function plainHead(status: number, site: boolean, compressible: boolean): SharedHead {
  const key = `${status}${site ? 's' : 'p'}${compressible ? 'c' : 'i'}`
  let head = plainHeads.get(key)
  if (head === undefined) plainHeads.set(key, (head = sharedHead(status, fileHeaders(site, compressible))))
  return head
}

/** The headers every file answer carries past its type and date (before any _headers values). */
function fileHeaders(site: boolean, compressible: boolean): string[] {
  const list = ['Cache-Control', CACHE_CONTROL, 'Accept-Ranges', 'bytes']
  if (compressible) list.push('Vary', 'Accept-Encoding')
  list.push(...(site ? SITE_HEADERS : CONTENT_HEADERS))
  return list
}

/**
 * Builds the entry of a stored file: every header of its answer computed once. `status` is
 * 200 unless a site rule says otherwise; `extra` are the path's _headers values. `r.name`:
 * the stored file's name (or path), whose extension may say its bytes are encoded (storedEncoding).
 */
export function fileEntry(
  cache: HostCache,
  r: { digest: string; size: number; content_type: string; mtime: number; name: string },
  site = false,
  status = 200,
  extra: Array<[string, string]> = [],
): FileEntry {
  const size = Number(r.size)
  const lastModifiedSec = Math.floor(Number(r.mtime) / 1000)
  // a type an older table stored is served as the current table names it (decision 145)
  const type = servedType(r.content_type)
  // bytes stored encoded (a .svgz, or a file a _headers rule gives a Content-Encoding) are one
  // representation, labelled, never compressed again: their ETag, length and ranges are the
  // stored bytes' on every answer
  const ruled = ruleEncoding(extra)
  if (extra.some(([name]) => name.toLowerCase() === 'content-encoding')) extra = extra.filter(([name]) => name.toLowerCase() !== 'content-encoding')
  const encoding = storedEncoding(r.name) ?? ruled
  const compressible = encoding === null && COMPRESSIBLE.test(type) && size >= 256 && size <= COMPRESS_MAX
  const etag = etagOf(r.digest)
  const typed = ['Content-Type', type, 'Last-Modified', httpDate(lastModifiedSec), ...(encoding === null ? [] : ['Content-Encoding', encoding])]
  let ok: Prepared
  if (extra.length === 0) {
    ok = prepareShared(plainHead(status, site, compressible), [...typed, 'ETag', etag, 'Content-Length', String(size)])
  } else {
    const common = withRuleHeaders([...typed, ...fileHeaders(site, compressible)], extra)
    // a file a rule keeps past a revalidation answers a worker's fetch of it apart (the
    // default revalidation; the retiring worker; the path form's 403): a cache in front must
    // not hand one answer for the other. Entries without such a rule (every plain page) keep
    // their shared head, unchanged
    ok = prepareEntry(status, keptLonger(common) ? withVary(common, VARY_WORKER) : common, etag, size)
  }
  return {
    kind: 'file',
    status,
    digest: r.digest,
    size,
    lastModifiedSec,
    compressible,
    fromFile: size <= FROM_FILE_MAX,
    file: undefined,
    ok,
    okGzip: null,
    okBr: null,
    freshUntil: cache.freshUntil(),
  }
}

/** A stored file's strong ETag (its digest, quoted); its compressed forms add -br and -gz. */
export const etagOf = (digest: string, suffix = ''): string => `"${digest}${suffix}"`

/** The headers every answer about an entry shares (no ETag, no length, no encoding). */
export function commonOf(e: FileEntry): string[] {
  const own = linesOf(e.ok.block.toString('latin1'))
  const list: string[] = []
  for (let i = 0; i < own.length; i += 2) if (own[i] !== 'ETag' && own[i] !== 'Content-Length') list.push(own[i], own[i + 1])
  return [...list, ...e.ok.headers]
}

/** The entry as conditional and range requests see it (representation.ts), made when one is asked. */
export function representationOf(e: FileEntry): Representation {
  const etag = etagOf(e.digest)
  return {
    status: e.status,
    size: e.size,
    etag,
    etags: [etag, etagOf(e.digest, '-br'), etagOf(e.digest, '-gz')],
    lastModified: httpDate(e.lastModifiedSec),
    lastModifiedSec: e.lastModifiedSec,
  }
}

export type Resolution = { status: 400 } | { username: string; entry: HostEntry; cacheable: boolean }

/**
 * Resolves a raw public path (/{username}/{file} or /{username}/{folder}/{path...}) with the
 * database: single file first, then a published folder project (through the files and folders
 * stores: those features own the tables). Segments are percent-decoded once, strictly;
 * anything that is not a valid stored name is simply not found. `site`: the request came to
 * the user's own origin (cached under siteKey, headers and redirects of that origin, where
 * the path has no /{username} prefix).
 */
export function createResolver(db: Db, cache: HostCache, index: DeployIndex = createDeployIndex(db)) {
  // the account and the project a path names, per user generation and with the cache's life:
  // any change of the user's content (publish, rollback, delete, disabling the account) moves
  // the generation, and these answers are asked again, as the paths' entries are. As the
  // paths' entries, they are neither kept nor reused while the bus cannot deliver other
  // instances' invalidations (a lost Redis subscription): each lookup reads the database
  const known = new Map<string, { gen: number; until: number; value: unknown }>()
  const memo = async <T>(username: string, key: string, gen: number, load: () => Promise<T>): Promise<T> => {
    const hit = known.get(key)
    if (hit !== undefined && hit.gen === gen && hit.until > performance.now() && cache.accepts(username, gen)) return hit.value as T
    const value = await load()
    known.delete(key)
    if (cache.accepts(username, gen)) {
      known.set(key, { gen, until: cache.freshUntil(), value })
      if (known.size > 20_000) dropOldest(known)
    }
    return value
  }
  // `root`: where the service's 404 page links (a project's root); null, nowhere: a user's
  // root is no site (it is a 404 itself), and neither is a path outside any project
  const missing = (root: string | null = null): HostEntry => ({ kind: 'missing', root, freshUntil: cache.freshUntil() })
  const redirect = (location: string, status = 301, drop?: string[], away = false): HostEntry => ({
    kind: 'redirect',
    status,
    location,
    ...(drop !== undefined && drop.length > 0 ? { drop } : {}),
    ...(away ? { away: true as const } : {}),
    freshUntil: cache.freshUntil(),
  })
  // compiled rules per project, recompiled when a publish changed them: at most 1,000
  // projects' and 200,000 lines in all (a `_redirects` may have 10,000)
  const compiled = new Map<string, { json: string; rules: SiteRules; lines: number }>()
  let compiledLines = 0
  const rulesOf = (folder: { id: string; site_rules: string | null }): SiteRules | null => {
    if (folder.site_rules === null) return null
    const hit = compiled.get(folder.id)
    if (hit && hit.json === folder.site_rules) return hit.rules
    const parsed = JSON.parse(folder.site_rules) as { redirects: RedirectRule[]; headers: HeaderRule[] }
    const rules = compileRules(parsed.redirects, parsed.headers)
    const lines = rules.redirects.length + rules.headers.length
    forget(folder.id)
    while (compiled.size > 0 && (compiled.size >= 1000 || compiledLines + lines > 200_000)) forget(oldestKey(compiled))
    compiled.set(folder.id, { json: folder.site_rules, rules, lines })
    compiledLines += lines
    return rules
  }
  const forget = (id: string | undefined) => {
    const old = id === undefined ? undefined : compiled.get(id)
    if (old === undefined || id === undefined) return
    compiled.delete(id)
    compiledLines -= old.lines
  }
  const inFlight = new Map<string, { gen: number; lookup: Promise<Resolution> }>()

  /**
   * Resolves `path` as asked with `query` (`?...` or ''), which only `_redirects` rules with
   * query matches read; the answer is cached under the path's key, or under its varyKey when
   * such a rule applies to the path.
   */
  return async function resolve(path: string, site: SiteMode = false, query = '', host = ''): Promise<Resolution> {
    const raw = path.split('/')
    const username = decodeSegment(raw[1] ?? '')?.toLowerCase()
    if (username === undefined) return { status: 400 }
    if (!canNameUser(username)) return { username: '', entry: missing(), cacheable: false }
    const rest: string[] = []
    // the name (a project or a single page) is decoded strictly, as holds and visitor access
    // read it (an encoded '/' there is a bad request); inside a project an encoded '/' is a '/'
    for (const [i, seg] of raw.slice(2).entries()) {
      const d = i === 0 ? decodeSegment(seg) : decodeHostSegment(seg)
      if (d === null) return { status: 400 }
      if (typeof d === 'string') rest.push(d)
      else rest.push(...d)
    }
    // an ACME HTTP-01 challenge path is never user content, on any origin: a user must not be
    // able to answer a certificate authority for their origin's or a domain's host
    const acme = site === 'domain' ? 1 : 0
    if (rest[acme] === '.well-known' && rest[acme + 1] === 'acme-challenge') return { username: '', entry: missing(), cacheable: false }
    const gen = cache.gen(username)
    // requests for a path that is being looked up share that lookup, unless the user's
    // content changed since it started (it could return what the write replaced)
    // (with the query: a rule may read it)
    // a rule line's host is matched on a project's own origin or domain only, where the
    // project is the site at the host's root
    const on = site === 'domain' ? host : ''
    const key = `${site === 'domain' ? domainKey(path, on) : site ? siteKey(path) : path}${query.length > 1 ? query : ''}`
    const running = inFlight.get(key)
    if (running && running.gen === gen) return running.lookup
    const lookup = lookUp(path, username, rest, gen, site, query, on).finally(() => {
      if (inFlight.get(key)?.lookup === lookup) inFlight.delete(key)
    })
    inFlight.set(key, { gen, lookup })
    return lookup
  }

  async function lookUp(path: string, username: string, rest: string[], gen: number, site: SiteMode, query: string, host: string): Promise<Resolution> {
    const pathKey = site === 'domain' ? domainKey(path, host) : site ? siteKey(path) : path
    // where the answer is kept: the path's key, or its varyKey once a query-matching rule applies
    let key = pathKey
    const done = (entry: HostEntry) => {
      cache.set(key, username, entry, gen)
      return { username, entry, cacheable: true }
    }
    // the path as this origin spells it: /{user}/..., /{name}/... or, on a domain, /...; only
    // Locations are made of it, with the request's escapes uppercased (upperEscapes)
    const own = (p: string) => upperEscapes(site === 'domain' ? p.slice(p.indexOf('/', p.indexOf('/', 1) + 1)) : site ? p.slice(p.indexOf('/', 1)) : p)
    // the slash form of a directory
    const slashed = () => redirect(`${own(path)}/`)
    // repeated slashes (`/docs//intro/`, an empty segment: encoded slashes never get here) go
    // to the merged path, as nginx's merge_slashes reads it, before any rule sees the path.
    // The result starts with one slash, so it never names another host (`//evil.example`)
    if (own(path).includes('//')) return done(redirect(own(path).replace(/\/{2,}/g, '/')))
    // a disabled account's pages go offline (like its other public links)
    const user = await memo(username, `u:${username}`, gen, () =>
      db.k.selectFrom('users').select('id').where('username', '=', username).where('disabled', '=', 0).executeTakeFirst(),
    )
    if (!user) return done(missing())
    // a path of the user's origin that names nothing of theirs: their user site's, when they
    // have one published; on the path form (the service's origin) and elsewhere, a 404
    const nothing = async (): Promise<Resolution> => {
      if (site !== true) return done(missing())
      const project = await memo(username, `s:${username}`, gen, () => publishedUserSite(db, user.id))
      return done(project === undefined ? missing() : { kind: 'userSite', username, project, freshUntil: cache.freshUntil() })
    }
    if (rest.length === 0 || rest[0] === '') return nothing()

    if (rest.length === 1) {
      const name = checkName(rest[0])
      if (!name.ok) return nothing()
      const f = await hostedFile(db, user.id, name.path)
      if (f) return done(fileEntry(cache, { ...f, mtime: Number(f.updated_at ?? f.created_at), name: name.path }, site !== false))
      const folder = await memo(username, `p:${username}/${name.path}`, gen, () => publishedFolder(db, user.id, name.path))
      if (folder) return done(slashed())
      // a project of the name wins; else a single page named without its extension (decision 169)
      const ext = await cleanPageExtension(name.path, (file) => hostedFile(db, user.id, file))
      return ext === null ? nothing() : done({ kind: 'page', ext, freshUntil: cache.freshUntil() })
    }

    const name = checkName(rest[0])
    if (!name.ok) return nothing()
    const folder = await memo(username, `p:${username}/${name.path}`, gen, () => publishedFolder(db, user.id, name.path))
    if (!folder) return nothing()
    const inner = rest.slice(1)
    // the path inside the project as rules see it, decoded and NFC as stored names are: /, /about, /docs/
    const inProject = `/${inner.join('/')}`.normalize('NFC')
    const isDir = inner[inner.length - 1] === ''
    // a slash form's path is checked as its first index page's
    if (isDir) inner[inner.length - 1] = INDEX
    const p = checkRelativePath(inner.join('/'))
    // a file of the deploy, with its path (its name says whether its bytes are stored encoded)
    const stored = async (rel: string) => {
      const file = RULE_FILE_SET.has(rel) ? undefined : await index.file(folder.id, rel)
      return file && { ...file, name: rel }
    }
    // the index page of the folder `dir` ('' the root, else ending in /): the first of
    // INDEX_PAGES it has; every slash form, directory and rewrite target finds it here
    const indexIn = async (dir: string) => {
      for (const page of INDEX_PAGES) {
        const file = await stored(dir + page)
        if (file) return file
      }
      return undefined
    }
    // the file at the path (a folder's index page for the slash form), else its clean-URL form (/about -> about.html)
    let f = p.ok ? await (isDir ? indexIn(p.path.slice(0, -INDEX.length)) : stored(p.path)) : undefined
    if (!f && p.ok && !isDir && !p.path.endsWith('.html')) f = await stored(`${p.path}.html`)
    // a directory named without its trailing slash counts as existing: it goes to the slash form
    const dirIndex = !f && p.ok && !isDir ? await indexIn(`${p.path}/`) : undefined
    // a slash form with no index page whose clean-URL file exists (/about/ with about.html): it
    // goes to the slashless form, as Cloudflare Pages answers
    const slashless = !f && p.ok && isDir && inner.length > 1 ? await stored(`${p.path.slice(0, -INDEX.length - 1)}.html`) : undefined
    const rules = rulesOf(folder)
    // the project's root as this origin spells it, without its slash: Locations of rules and the 404 page's link
    const base = site === 'domain' ? '' : site ? `/${encodeURIComponent(name.path)}` : `/${username}/${encodeURIComponent(name.path)}`
    // Last-Modified of a live project's file: never before its deploy went live, so it never
    // moves back at a URL (a rollback or promote serves files older than the answers before
    // it, and If-Modified-Since would call changed bytes not modified)
    const mtimeOf = (updatedAt: number) => Math.max(Number(updatedAt), folder.live_since ?? 0)
    // a preview ({project}@{deploy}) stays out of search engines: its noindex replaces a
    // rule's X-Robots-Tag (a rule's value, sent first, would keep the service's out)
    // the project's root as the request spells it (`/app@{deploy}`), which a browser compares a
    // worker's scope with: Service-Worker-Allowed on the user's origin is made of it
    const spelled = own(path).split('/', 2).join('/')
    const ruleHeaders = (p: string): Array<[string, string]> => {
      const all = rules ? headersFor(rules, p, host) : []
      const own = folder.preview ? all.filter(([name]) => name.toLowerCase() !== 'x-robots-tag') : all
      return [...(site === false ? onServiceOrigin(own) : site === true ? onUserOrigin(own, spelled, p) : own), ...(folder.preview ? NOINDEX : [])]
    }
    const extra = ruleHeaders(inProject)
    const vary = rules ? queryNamesFor(rules, inProject, host) : []
    if (vary.length > 0) {
      cache.set(pathKey, username, { kind: 'vary', names: vary, freshUntil: cache.freshUntil() }, gen)
      key = varyKey(pathKey, vary, query)
    }
    const match = rules ? matchRedirect(rules, inProject, f !== undefined || dirIndex !== undefined || slashless !== undefined, query, host) : null
    if (match) {
      // another site's URL: on the path form (the service's origin) marked away (serve.ts leave)
      if (/^https?:\/\//i.test(match.to)) return done(redirect(match.href, match.status, match.consumed, site === false))
      // a target on this site stays on it: a value with an empty first segment (/go//evil.com
      // under `/go/* /:splat`) would make `//evil.com`, which browsers read as another host
      if (match.status !== 200 && match.status !== 404 && match.status !== 410)
        return done(redirect((base + match.href).replace(/^\/{2,}/, '/'), match.status, match.consumed))
      // a rewrite (200) or a rule's own 404/410 page: the target's bytes under this path, found
      // as a request for the target would find them (its clean-URL form included), and a
      // folder named without its slash by its index page, as Netlify serves `/* /app 200`
      const target = match.to
      const toDir = target.endsWith('/')
      const t = checkRelativePath((toDir ? `${target}${INDEX}` : target).slice(1))
      let tf = t.ok ? await (toDir ? indexIn(t.path.slice(0, -INDEX.length)) : stored(t.path)) : undefined
      if (!tf && t.ok && !toDir && !t.path.endsWith('.html')) tf = await stored(`${t.path}.html`)
      if (!tf && t.ok && !toDir) tf = await indexIn(`${t.path}/`)
      if (tf)
        return done(fileEntry(cache, { ...tf, mtime: mtimeOf(tf.updated_at) }, site !== false, match.status, errorHeaders(match.status, ruleHeaders(target))))
    } else {
      if (f) return done(fileEntry(cache, { ...f, mtime: mtimeOf(f.updated_at) }, site !== false, 200, extra))
      if (dirIndex) return done(slashed())
      if (slashless) return done(redirect(own(path).slice(0, -1)))
    }
    // the project's own 404 page, when it has one; else the service's, linking to the project's
    // root (not at the root itself)
    const nf = await stored('404.html')
    if (nf) return done(fileEntry(cache, { ...nf, mtime: mtimeOf(nf.updated_at) }, site !== false, 404, errorHeaders(404, extra)))
    return done(missing(own(path) === `${base}/` ? null : `${base}/`))
  }
}
export type Resolver = ReturnType<typeof createResolver>
