/**
 * Path rules for everything a user names inside their space: single file names, folder
 * project names, and relative paths inside a project. One validator serves uploads (multipart
 * file names), API path parameters and the public host, so a name that can be stored can be
 * served, and a name that is refused is refused everywhere.
 *
 * Policy (documented in docs/api/files-and-folders.md):
 * - names are Unicode NFC-normalised: NFC and NFD spellings of `é.html` are the same file;
 * - names are case-sensitive: `Index.html` and `index.html` are two files (publish needs
 *   exactly `index.html`);
 * - segments are never '', '.', '..'; no '/', '\', NUL, C0/C1 controls, Unicode format
 *   characters (bidi overrides, zero-width; a joiner inside a non-ASCII word excepted:
 *   hasStrayFormat in util/unicode.ts), slash look-alikes, or anything whose NFKC form
 *   hides a separator or dot segment (`．．／`); no drive (`C:`) or absolute prefix;
 * - no `%XX` sequences in a stored name: percent-decoding happens exactly once, at the URL, so
 *   a name that still looks encoded is refused instead of being decoded a second time;
 * - at most 255 UTF-8 bytes per segment, 1024 in total, 32 segments deep.
 */
import type { Text } from '../../errors/render.js'
import { CONTROL, hasStrayFormat, isWellFormed } from '../../util/unicode.js'
import { decodeOnce } from '../../util/percent-escapes.js'

export const MAX_SEGMENT_BYTES = 255
export const MAX_PATH_BYTES = 1024
export const MAX_DEPTH = 32

/** `reason`: why a path is refused, in both languages (an answer says it in its own). */
export type PathResult = { ok: true; path: string; segments: string[] } | { ok: false; reason: Text }

const SLASH_LIKE = /[\u2044\u2215\u29f8\u29f9\uff0f\uff3c\ufe68\u2216\u29f5]/
const PERCENT_SEQ = /%[0-9a-fA-F]{2}/
const DRIVE = /^[a-zA-Z]:/

const bad = (en: string, zh: string): PathResult => ({ ok: false, reason: { zh, en } })

function checkSegment(seg: string): PathResult | null {
  if (seg === '') return bad('empty path segment', '路径中有空的一段')
  if (seg === '.' || seg === '..') return bad('dot segment ("." or "..")', '路径中有 "." 或 ".." 段')
  if (Buffer.byteLength(seg, 'utf8') > MAX_SEGMENT_BYTES)
    return bad(`path segment longer than ${MAX_SEGMENT_BYTES} bytes`, `路径中的一段超过 ${MAX_SEGMENT_BYTES} 字节`)
  return null
}

/**
 * Letters, digits and `_ . - ~ /` only: NFC and NFKC leave such a path as it is and no
 * character rule can apply to it, so only the structure is left to check (most paths of a
 * deploy manifest, thousands per request).
 */
const PLAIN = /^[\w.~/-]+$/

const ABSOLUTE = bad('absolute path', '绝对路径')
const TOO_LONG = bad(`path longer than ${MAX_PATH_BYTES} bytes`, `路径超过 ${MAX_PATH_BYTES} 字节`)
const TOO_DEEP = bad(`path deeper than ${MAX_DEPTH} levels`, `路径超过 ${MAX_DEPTH} 层`)

/** The rules on length, depth and segments, for an NFC path whose characters passed. */
function checkStructure(s: string): PathResult {
  if (s.startsWith('/')) return ABSOLUTE
  if (Buffer.byteLength(s, 'utf8') > MAX_PATH_BYTES) return TOO_LONG
  const segments = s.split('/')
  if (segments.length > MAX_DEPTH) return TOO_DEEP
  for (const seg of segments) {
    const p = checkSegment(seg)
    if (p) return p
  }
  return { ok: true, path: s, segments }
}

/**
 * Validates and normalises a relative path that has already been decoded once (a multipart
 * file name, or a URL path whose segments were percent-decoded). Returns the NFC path.
 */
export function checkRelativePath(input: unknown): PathResult {
  if (typeof input !== 'string' || input.length === 0) return bad('empty path', '路径为空')
  if (PLAIN.test(input)) return checkStructure(input)
  if (input.length > MAX_PATH_BYTES * 2) return TOO_LONG
  if (!isWellFormed(input)) return bad('invalid Unicode (lone surrogate)', 'Unicode 无效（孤立的代理项）')
  const s = input.normalize('NFC')
  if (CONTROL.test(s)) return bad('control character (NUL, C0 or C1)', '含控制字符（NUL、C0 或 C1）')
  if (hasStrayFormat(s)) return bad('invisible Unicode format character', '含不可见的 Unicode 格式字符')
  if (s.includes('\\')) return bad('backslash', '含反斜杠')
  if (SLASH_LIKE.test(s)) return bad('slash look-alike character', '含形似斜杠的字符')
  if (s.startsWith('/')) return ABSOLUTE
  if (DRIVE.test(s)) return bad('drive prefix', '含盘符前缀')
  if (PERCENT_SEQ.test(s))
    return bad('a %XX sequence in a name (rename it: its URL would read as another name)', '名称含 %XX 序列（请改名：其网址会被读成另一个名称）')
  const r = checkStructure(s)
  if (!r.ok) return r
  const { segments } = r
  // a compatibility form that turns into a separator or a dot segment is a disguise
  const k = s.normalize('NFKC')
  if (k !== s) {
    if (k.includes('\\') || k.startsWith('/') || DRIVE.test(k) || CONTROL.test(k)) return bad('look-alike of a path separator', '含形似路径分隔符的字符')
    const ks = k.split('/')
    if (ks.length !== segments.length || ks.some((x) => x === '' || x === '.' || x === '..'))
      return bad('look-alike of a path separator or dot segment', '含形似路径分隔符或点段的字符')
  }
  return { ok: true, path: s, segments }
}

/**
 * checkName's rule as a sentence, for the descriptions that state it (the MCP tools' project
 * names): what it refuses, so spaces and any script's letters read as allowed.
 */
export const NAME_RULE = `one name, case-sensitive, spaces and any script's letters allowed; not "." or "..", no "/", "\\", control or invisible format characters, or %XX sequences; at most ${MAX_SEGMENT_BYTES} bytes (UTF-8)`

/** Validates a single name (file name or project name): one segment of a relative path. */
export function checkName(input: unknown): PathResult {
  const r = checkRelativePath(input)
  if (!r.ok) return r
  if (r.segments.length !== 1) return bad('a name cannot contain "/"', '名称不能含 "/"')
  return r
}

/** The extensions a single page may have (an upload's), in the order a clean URL tries them (decision 169). */
export const PAGE_EXTENSIONS = ['.html', '.htm']

/**
 * A folder's index pages, in the order its slash form tries them: index.html, else index.htm,
 * as GitHub Pages and Netlify serve a folder (decision 173).
 */
export const INDEX_PAGES = PAGE_EXTENSIONS.map((ext) => `index${ext}`)

/** A name (or path) ending in a single page's extension, in any case: never a page's clean URL. */
export const PAGE_NAME = /\.html?$/i

/**
 * The page a clean name stands for (`about`: about.html, else about.htm, tried in that order
 * with `exists`), or null: none, or a name that has its extension already (decision 169).
 */
export async function cleanPageExtension(name: string, exists: (fileName: string) => Promise<unknown>): Promise<string | null> {
  if (PAGE_NAME.test(name)) return null
  for (const ext of PAGE_EXTENSIONS) if (await exists(name + ext)) return ext
  return null
}

/** A preview's project segment: `{project}@{deploy id}` (docs/decisions.md). */
export const PREVIEW_SEGMENT = /^(.+)@([a-z0-9]{12})$/

/**
 * The project a decoded name segment serves: a preview's (`{project}@{deploy id}`) project,
 * else the name. Whatever holds a project (a visitor password, an expiry, an abuse hold) holds
 * every URL of it, its previews included.
 */
export const projectOf = (name: string): string => PREVIEW_SEGMENT.exec(name)?.[1] ?? name

/**
 * Percent-decodes one raw URL segment, once and strictly: malformed escapes fail, and an
 * encoded '/' or '\' (which would change the path's structure) fails.
 */
export function decodeSegment(raw: string): string | null {
  const s = decodeOnce(raw)
  return s === null || s.includes('/') || s.includes('\\') ? null : s
}

/**
 * Percent-decodes one raw segment of a hosted page's URL below its user, as nginx and Netlify
 * read it: an encoded '/' separates segments (`/users/a%2Fb` is `/users/a/b`, which a
 * single-page app's fallback answers). Malformed escapes and a '\\', raw or encoded (which
 * browsers read as a '/', so a Location holding one could name another host), fail (null).
 */
export function decodeHostSegment(raw: string): string[] | null {
  const s = decodeOnce(raw)
  return s === null || s.includes('\\') ? null : s.split('/')
}

/**
 * Decodes the file path at the end of an API URL (`/api/folders/{folder_path}/file/...`),
 * once and strictly, where a separator may also come encoded: clients generated from
 * /openapi.json send the `file_path` parameter whole (`css%2Fa.css`). The decoded path then
 * gets every check of a stored path (dot segments, backslashes, depth), so `..%2Fx` is refused
 * as `../x` is. Public URLs decode below the project's name with decodeHostSegment.
 */
export function decodeApiFilePath(rawTail: string): PathResult {
  const s = decodeOnce(rawTail)
  return s === null ? bad('malformed percent-encoding', '百分号编码有误') : checkRelativePath(s)
}

/** Percent-encodes each segment of a stored path for use in a URL. */
export function encodePath(p: string): string {
  return p.split('/').map(encodeURIComponent).join('/')
}

/** The folders a relative path sits in, outermost first (`a/b/c.html` → `a`, `a/b`). */
export function* foldersOf(path: string): Generator<string> {
  for (let i = path.indexOf('/'); i > 0; i = path.indexOf('/', i + 1)) yield path.slice(0, i)
}

/**
 * Tracks a project's paths so that no path is both a file and a folder (`docs` beside
 * `docs/index.html`): no file system holds both, so such a project could be neither exported
 * and unpacked nor deployed again from a copy. `add` answers why a path cannot join, or null
 * and then records it.
 */
export class PathTree {
  private readonly files = new Set<string>()
  private readonly folders = new Set<string>()

  constructor(paths: Iterable<string> = []) {
    for (const p of paths) this.record(p)
  }

  add(path: string): Text | null {
    if (this.files.has(path)) return null
    if (this.folders.has(path))
      return { en: `${path} is a folder of this project, so it cannot also be a file`, zh: `${path} 是本项目的文件夹，不能同时是文件` }
    for (const f of foldersOf(path))
      if (this.files.has(f))
        return { en: `${f} is a file of this project, so it cannot also be a folder (of ${path})`, zh: `${f} 是本项目的文件，不能同时是（${path} 的）文件夹` }
    this.record(path)
    return null
  }

  private record(path: string) {
    this.files.add(path)
    for (const f of foldersOf(path)) this.folders.add(f)
  }
}
