import type { Db } from '../../db/kysely.js'
import { userContentHeaderList } from '../../http/content-headers.js'
import { prepare } from '../../http/prepared-response.js'
import { USERNAME_RE, RESERVED_USERNAMES } from '../../auth/users.js'
import { checkName, checkRelativePath, decodeSegment } from '../folders/paths.js'
import type { HostCache, HostEntry, FileEntry } from './cache.js'

/** Bytes up to this size are kept in memory; larger files are streamed from the blob store. */
export const IN_MEMORY_MAX = 2 * 1024 * 1024
/** Updates must show at once: browsers revalidate every time (cheap: ETag -> 304). */
export const CACHE_CONTROL = 'public, max-age=0, must-revalidate'

const CONTENT_HEADERS = userContentHeaderList('page').flat()
const COMPRESSIBLE = /^(text\/|application\/(javascript|json|xml|wasm|manifest\+json|ld\+json|x-javascript|rss\+xml|atom\+xml|xhtml\+xml|[a-z.+-]*\+(json|xml))|image\/(svg\+xml|x-icon|vnd\.microsoft\.icon|bmp)|font\/(ttf|otf))/i

/** Plain-text answers of the host (404 and friends), with the sandbox headers too. */
export function plainHeaders(length: number): string[] {
  return ['Content-Type', 'text/plain; charset=utf-8', 'Content-Length', String(length), 'Cache-Control', 'no-cache', ...CONTENT_HEADERS]
}

/** Builds the entry of a stored file: every header of its 200 answer computed once. */
export function fileEntry(cache: HostCache, r: { digest: string; size: number; content_type: string; mtime: number }): FileEntry {
  const size = Number(r.size)
  const lastModifiedSec = Math.floor(Number(r.mtime) / 1000)
  const lastModified = new Date(lastModifiedSec * 1000).toUTCString()
  const compressible = COMPRESSIBLE.test(r.content_type) && size >= 256
  const etag = `"${r.digest}"`
  const common = ['Content-Type', r.content_type, 'Last-Modified', lastModified, 'Cache-Control', CACHE_CONTROL, 'Accept-Ranges', 'bytes']
  if (compressible) common.push('Vary', 'Accept-Encoding')
  common.push(...CONTENT_HEADERS)
  return {
    kind: 'file', digest: r.digest, size, contentType: r.content_type, etag, lastModified, lastModifiedSec, compressible,
    inMemory: size <= IN_MEMORY_MAX,
    common,
    ok: prepare(200, [...common, 'ETag', etag, 'Content-Length', String(size)]),
    body: null, okGzip: null, okBr: null,
    freshUntil: cache.freshUntil(),
  }
}

export type Resolution = { status: 400 } | { username: string; entry: HostEntry; cacheable: boolean }

/**
 * Resolves a raw public path (/{username}/{file} or /{username}/{folder}/{path...}) with the
 * database: single file first, then a published folder project. Segments are percent-decoded
 * once, strictly; anything that is not a valid stored name is simply not found.
 */
export function createResolver(db: Db, cache: HostCache) {
  const k = db.k
  const missing = (): HostEntry => ({ kind: 'missing', freshUntil: cache.freshUntil() })
  const redirect = (location: string): HostEntry => ({ kind: 'redirect', location, freshUntil: cache.freshUntil() })
  const inFlight = new Map<string, { gen: number; lookup: Promise<Resolution> }>()

  return async function resolve(path: string): Promise<Resolution> {
    const raw = path.split('/')
    const username = decodeSegment(raw[1] ?? '')?.toLowerCase()
    if (username === undefined) return { status: 400 }
    if (!USERNAME_RE.test(username) || RESERVED_USERNAMES.has(username)) return { username: '', entry: missing(), cacheable: false }
    const rest: string[] = []
    for (const seg of raw.slice(2)) {
      const d = decodeSegment(seg)
      if (d === null) return { status: 400 }
      rest.push(d)
    }
    const gen = cache.gen(username)
    // requests for a path that is being looked up share that lookup, unless the user's
    // content changed since it started (it could return what the write replaced)
    const running = inFlight.get(path)
    if (running && running.gen === gen) return running.lookup
    const lookup = lookUp(path, username, rest, gen).finally(() => {
      if (inFlight.get(path)?.lookup === lookup) inFlight.delete(path)
    })
    inFlight.set(path, { gen, lookup })
    return lookup
  }

  async function lookUp(path: string, username: string, rest: string[], gen: number): Promise<Resolution> {
    const done = (entry: HostEntry) => {
      cache.set(path, username, entry, gen)
      return { username, entry, cacheable: true }
    }
    // a disabled account's pages go offline (like its other public links)
    const user = await k.selectFrom('users').select('id').where('username', '=', username).where('disabled', '=', 0).executeTakeFirst()
    if (!user || rest.length === 0 || rest[0] === '') return done(missing())

    if (rest.length === 1) {
      const name = checkName(rest[0])
      if (!name.ok) return done(missing())
      const f = await k.selectFrom('files').select(['digest', 'size', 'content_type', 'created_at', 'updated_at'])
        .where('user_id', '=', user.id).where('file_name', '=', name.path).executeTakeFirst()
      if (f) return done(fileEntry(cache, { ...f, mtime: Number(f.updated_at ?? f.created_at) }))
      const folder = await publishedFolder(user.id, name.path)
      return done(folder ? redirect(`${path}/`) : missing())
    }

    const name = checkName(rest[0])
    if (!name.ok) return done(missing())
    const inner = rest.slice(1)
    const isDir = inner[inner.length - 1] === ''
    if (isDir) inner[inner.length - 1] = 'index.html'
    const p = checkRelativePath(inner.join('/'))
    if (!p.ok) return done(missing())
    const folder = await publishedFolder(user.id, name.path)
    if (!folder) return done(missing())
    const f = await folderFile(folder.id, p.path)
    if (f) return done(fileEntry(cache, { ...f, mtime: Number(f.updated_at) }))
    // a directory named without its trailing slash: send the browser to the slash form
    if (!isDir && (await folderFile(folder.id, `${p.path}/index.html`))) return done(redirect(`${path}/`))
    return done(missing())
  }

  function publishedFolder(userId: string, name: string) {
    return k.selectFrom('folders').select('id').where('user_id', '=', userId).where('name', '=', name).where('is_published', '=', 1).executeTakeFirst()
  }

  function folderFile(folderId: string, p: string) {
    return k.selectFrom('folder_files').select(['digest', 'size', 'content_type', 'updated_at'])
      .where('folder_id', '=', folderId).where('path', '=', p).executeTakeFirst()
  }
}
export type Resolver = ReturnType<typeof createResolver>
