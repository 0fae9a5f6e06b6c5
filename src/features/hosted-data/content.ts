import { AppError } from '../../errors/app-error.js'
import type { Text } from '../../errors/render.js'
import { CONTROL as ANY_CONTROL, hasStrayFormat, isWellFormed, stripInvisible } from '../../util/unicode.js'

/**
 * Content types a hosted data file may declare. Everything is text served as UTF-8; the
 * HTML-like ones (html, xhtml, svg, xml) are served inert like every data link (CSP
 * `default-src 'none'; sandbox`, nosniff), so they render but never run scripts.
 */
export const ALLOWED_CONTENT_TYPES = [
  'text/plain',
  'text/csv',
  'text/tab-separated-values',
  'text/markdown',
  'text/css',
  'text/html',
  'application/xhtml+xml',
  'image/svg+xml',
  'application/xml',
  'text/xml',
  'application/json',
  'application/geo+json',
  'application/ld+json',
  'application/x-ndjson',
  'application/javascript',
  'text/javascript',
  'application/yaml',
  'text/yaml',
  'application/rss+xml',
  'application/atom+xml',
  'text/calendar',
  'application/toml',
] as const

const ALLOWED = new Set<string>(ALLOWED_CONTENT_TYPES)

/** File extensions that imply a type when none is declared (multipart uploads, display names). */
const BY_EXTENSION: Record<string, string> = {
  txt: 'text/plain',
  log: 'text/plain',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  md: 'text/markdown',
  markdown: 'text/markdown',
  css: 'text/css',
  html: 'text/html',
  htm: 'text/html',
  xhtml: 'application/xhtml+xml',
  svg: 'image/svg+xml',
  xml: 'application/xml',
  json: 'application/json',
  geojson: 'application/geo+json',
  jsonld: 'application/ld+json',
  ndjson: 'application/x-ndjson',
  js: 'application/javascript',
  mjs: 'application/javascript',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  rss: 'application/rss+xml',
  atom: 'application/atom+xml',
  ics: 'text/calendar',
  toml: 'application/toml',
}

/** Whether content of this type must parse as JSON. */
export const isJsonType = (t: string): boolean => t === 'application/json' || t.endsWith('+json')

/** 400 / 1106 naming what is wrong, in both languages (the answer picks one). */
export const bad = (detail: Text) => new AppError('INVALID_PARAMETER', { params: { detail } })

/**
 * Normalises a declared content type: lower case, the only parameter allowed is
 * `charset=utf-8`; CR, LF or any control character, other parameters or a type off the
 * allow-list are refused with 400. Returns the bare type (`application/json`).
 */
export function normalizeContentType(raw: string): string {
  if (/[\u0000-\u001f\u007f]/.test(raw))
    throw bad({ zh: 'content_type 不能包含控制字符（CR、LF 等）', en: 'content_type must not contain control characters (CR, LF, ...)' })
  const [type, ...params] = raw.split(';').map((s) => s.trim().toLowerCase())
  for (const p of params) {
    if (p === '') continue
    const m = /^charset\s*=\s*"?([a-z0-9_-]+)"?$/.exec(p)
    if (!m)
      throw bad({
        zh: `content_type 不接受参数 "${p.slice(0, 40)}"（只接受 charset=utf-8）`,
        en: `content_type parameter "${p.slice(0, 40)}" is not allowed (only charset=utf-8)`,
      })
    if (m[1] !== 'utf-8' && m[1] !== 'utf8') throw bad({ zh: '内容一律为 UTF-8：charset 须为 utf-8', en: 'content is always UTF-8: charset must be utf-8' })
  }
  if (!ALLOWED.has(type))
    throw bad({
      zh: `不支持 content_type "${type.slice(0, 60)}"，可用：${ALLOWED_CONTENT_TYPES.join('、')}`,
      en: `content_type "${type.slice(0, 60)}" is not allowed; use one of ${ALLOWED_CONTENT_TYPES.join(', ')}`,
    })
  return type
}

/** The type implied by a file name's extension, if it is on the allow-list. */
export function typeFromName(name: string | undefined): string | undefined {
  const m = /\.([a-z0-9]{1,10})$/i.exec(name ?? '')
  return m ? BY_EXTENSION[m[1].toLowerCase()] : undefined
}

/** The header value a type is served with. */
export const servedContentType = (t: string): string => `${t}; charset=utf-8`

/**
 * Checks one version's bytes: not empty, strict UTF-8 (a byte-order mark is kept), no NUL,
 * and for JSON types a document that parses. Throws a 400 naming the problem.
 */
export function checkContent(bytes: Buffer, contentType: string): void {
  if (bytes.length === 0) throw bad({ zh: '内容为空', en: 'content is empty' })
  let text: string
  try {
    // fatal: any invalid sequence (overlong, surrogate, truncated) throws instead of becoming U+FFFD
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw bad({ zh: '内容不是有效的 UTF-8', en: 'content is not valid UTF-8' })
  }
  if (text.includes('\u0000')) throw bad({ zh: '内容包含 NUL 字符（只接受文本）', en: 'content contains a NUL character (text only)' })
  if (isJsonType(contentType)) {
    try {
      JSON.parse(text)
    } catch (e) {
      const why = (e as Error).message.slice(0, 120)
      throw bad({ zh: `内容声明为 ${contentType}，但不是有效的 JSON（${why}）`, en: `content is declared as ${contentType} but is not valid JSON (${why})` })
    }
  }
}

/** Encodes content sent as a JSON string; a lone surrogate cannot be UTF-8 and is refused. */
export function encodeText(s: string): Buffer {
  if (!isWellFormed(s)) throw bad({ zh: '内容不是有效的 UTF-8（孤立代理项）', en: 'content is not valid UTF-8 (lone surrogate)' })
  return Buffer.from(s, 'utf8')
}

const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/

/** The longest display name, in characters (code points) after trimming; the page's field says the same. */
export const MAX_DISPLAY_NAME = 255

/**
 * A display name: 1-255 characters after trimming, and none of the characters site paths
 * refuse (C0/C1 controls; bidi overrides and isolates, zero-width characters but a joiner
 * inside a word: util/unicode.ts), so a listed name reads as what it is.
 */
export function checkDisplayName(v: unknown): string {
  if (typeof v !== 'string') throw bad({ zh: '缺少 display_name（字符串）', en: 'display_name is required (a string)' })
  const s = v.trim().normalize('NFC')
  if (s.length === 0 || [...s].length > MAX_DISPLAY_NAME)
    throw bad({ zh: `display_name 须为 1-${MAX_DISPLAY_NAME} 个字符`, en: `display_name must be 1-${MAX_DISPLAY_NAME} characters` })
  if (ANY_CONTROL.test(s) || !isWellFormed(s)) throw bad({ zh: 'display_name 不能包含控制字符', en: 'display_name must not contain control characters' })
  if (hasStrayFormat(s))
    throw bad({
      zh: 'display_name 不能包含不可见的格式字符（双向覆盖或隔离符、零宽字符）',
      en: 'display_name must not contain invisible format characters (bidi overrides or isolates, zero-width characters)',
    })
  return s
}

/** The display name an uploaded file's name gives: cleaned of those characters, as an image's name is. */
export const fileDisplayName = (filename: string | undefined): string | undefined => (filename === undefined ? undefined : stripInvisible(filename))

/** A description: at most 2000 characters; line breaks and tabs allowed, other controls not. */
export function checkDescription(v: unknown): string {
  if (v === undefined || v === null) return ''
  if (typeof v !== 'string') throw bad({ zh: 'description 须为字符串', en: 'description must be a string' })
  if ([...v].length > 2000) throw bad({ zh: 'description 最多 2000 个字符', en: 'description must be at most 2000 characters' })
  if (CONTROL.test(v) || !isWellFormed(v)) throw bad({ zh: 'description 不能包含控制字符', en: 'description must not contain control characters' })
  return v.normalize('NFC')
}

const HEX: Record<number, number> = {}
for (let i = 0; i < 16; i++) HEX['0123456789abcdef'.charCodeAt(i)] = HEX['0123456789ABCDEF'.charCodeAt(i)] = i

/**
 * The size of a JSON text as its content is stored, counted chunk by chunk while it arrives:
 * a string escape counts as the UTF-8 bytes it stands for (`\u00e9` 2, each half of a
 * surrogate pair 2, `\n` 1), whitespace between tokens not at all, every other byte as
 * itself. So escaping non-ASCII text (Python's `json.dumps` does by default) or
 * pretty-printing never makes content within the limit look larger than it is, and the raw
 * text is at most 6 bytes per counted byte (`\u0001`) plus its whitespace.
 */
export class JsonSize {
  size = 0
  private inString = false
  /** -1: no escape; 0: after a backslash; 1-4: hex digits of `\u` read so far */
  private escape = -1
  private unit = 0

  add(chunk: Buffer): number {
    const n = chunk.length
    for (let i = 0; i < n; i++) {
      const b = chunk[i]
      if (this.escape >= 0) {
        if (this.escape === 0) {
          if (b === 0x75) {
            this.escape = 1
            this.unit = 0
          } else {
            this.escape = -1
            this.size++
          }
          continue
        }
        // a bad hex digit is JSON.parse's to refuse; it counts as 0 here
        this.unit = this.unit * 16 + (HEX[b] ?? 0)
        if (++this.escape === 5) {
          this.escape = -1
          const u = this.unit
          this.size += u < 0x80 ? 1 : u < 0x800 || (u >= 0xd800 && u <= 0xdfff) ? 2 : 3
        }
      } else if (this.inString) {
        // plain string bytes up to the next quote or backslash count as themselves
        let j = i
        while (j < n && chunk[j] !== 0x22 && chunk[j] !== 0x5c) j++
        this.size += j - i
        if (j === n) break
        if (chunk[j] === 0x5c) this.escape = 0
        else {
          this.inString = false
          this.size++
        }
        i = j
      } else if (b === 0x22) {
        this.inString = true
        this.size++
      } else if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) this.size++
    }
    return this.size
  }
}
