/**
 * Conditional requests (RFC 9110 section 13). Reads (GET/HEAD of every public body): the one
 * If-Match / If-Unmodified-Since / If-None-Match / If-Modified-Since matcher of the service,
 * lenient as the RFC asks of a read (a malformed member matches nothing) and parsing without
 * allocating: the public host calls it per request. Writes (the key-value store):
 * parseEntityTags, strict, so a condition the service cannot read is refused, never ignored.
 */

const SP = 32
const TAB = 9
const COMMA = 44
const DQUOTE = 34
const STAR = 42
const W = 87
const SLASH = 47

const isOws = (c: number) => c === SP || c === TAB

/** Whether field[start, end) equals `etag`'s opaque tag (its `W/` prefix, if any, ignored). */
function sameOpaqueTag(field: string, start: number, end: number, etag: string): boolean {
  const off = etag.charCodeAt(0) === W && etag.charCodeAt(1) === SLASH ? 2 : 0
  if (end - start !== etag.length - off) return false
  if (off === 0) return field.startsWith(etag, start)
  for (let k = start; k < end; k++) if (field.charCodeAt(k) !== etag.charCodeAt(k - start + off)) return false
  return true
}

function matchesOne(field: string, start: number, end: number, etags: string | readonly string[]): boolean {
  if (typeof etags === 'string') return sameOpaqueTag(field, start, end, etags)
  for (let i = 0; i < etags.length; i++) if (sameOpaqueTag(field, start, end, etags[i])) return true
  return false
}

/**
 * Whether an If-None-Match field value matches (so a GET/HEAD answers 304): the value is `*`,
 * or its comma-separated list holds an entity tag that weakly matches (RFC 9110 8.8.3.2:
 * `W/` ignored on both sides) one of `etags` (the current representation's tag, or the tags
 * of all its encodings). A comma inside a quoted tag belongs to the tag; a malformed member
 * (unquoted, unterminated, `*` inside a list) matches nothing and the parse goes on at the
 * next comma.
 */
export function ifNoneMatchHits(field: string, etags: string | readonly string[]): boolean {
  return listHits(field, etags, false)
}

/**
 * Whether an If-Match field value matches (RFC 9110 13.1.1): the value is `*` (the resource
 * has a current representation), or its list holds an entity tag that strongly matches one of
 * `etags`: a `W/` tag in the field never matches. Parsed as If-None-Match is.
 */
export function ifMatchHits(field: string, etags: string | readonly string[]): boolean {
  return listHits(field, etags, true)
}

/** `*` or a member of the list matching one of `etags`; `strong`: a weak member matches nothing. */
function listHits(field: string, etags: string | readonly string[], strong: boolean): boolean {
  const n = field.length
  let i = 0
  while (i < n && isOws(field.charCodeAt(i))) i++
  if (i < n && field.charCodeAt(i) === STAR) {
    i++
    while (i < n && isOws(field.charCodeAt(i))) i++
    return i === n
  }
  while (i < n) {
    let c = field.charCodeAt(i)
    if (c === COMMA || isOws(c)) {
      i++
      continue
    }
    let weak = false
    if (c === W && field.charCodeAt(i + 1) === SLASH) {
      i += 2
      c = field.charCodeAt(i)
      weak = true
    }
    if (c === DQUOTE) {
      const close = field.indexOf('"', i + 1)
      if (close < 0) return false
      if (!(strong && weak) && matchesOne(field, i, close + 1, etags)) return true
      i = close + 1
      // past the tag only OWS may come before the next comma; anything else: skip to it
      while (i < n && isOws(field.charCodeAt(i))) i++
      if (i < n && field.charCodeAt(i) !== COMMA) {
        const next = field.indexOf(',', i)
        if (next < 0) return false
        i = next
      }
      continue
    }
    const next = field.indexOf(',', i)
    if (next < 0) return false
    i = next
  }
  return false
}

/**
 * Whether a GET/HEAD may answer 304 Not Modified (RFC 9110 13.2.2): If-None-Match, when
 * present, decides alone; otherwise If-Modified-Since, a valid HTTP-date not earlier than the
 * last modification (`lastModifiedSec`: whole seconds since the epoch, the precision of
 * Last-Modified; undefined: the resource has none). An invalid date is ignored.
 */
export function notModified(
  ifNoneMatch: string | undefined,
  ifModifiedSince: string | undefined,
  etags: string | readonly string[],
  lastModifiedSec?: number,
): boolean {
  if (ifNoneMatch !== undefined) return ifNoneMatchHits(ifNoneMatch, etags)
  if (ifModifiedSince === undefined || lastModifiedSec === undefined) return false
  const t = Date.parse(ifModifiedSince)
  return Number.isFinite(t) && lastModifiedSec * 1000 <= t
}

/** A parsed If-Match / If-None-Match of a write: `*`, or the listed tags (opaque part, quoted, and whether weak). */
export type EntityTagList = '*' | Array<{ tag: string; weak: boolean }>

const ETAG_LIST_ITEM = /[ \t]*(?:(W\/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*)?(?:,|$)/y

/**
 * Parses an If-Match or If-None-Match field (RFC 9110 13.1.1-2): `*` alone, or a
 * comma-separated list of entity tags (empty members allowed). Null when the field is
 * malformed (an unquoted tag, `*` inside a list), so a write can refuse a condition it cannot
 * read instead of ignoring it.
 */
export function parseEntityTags(field: string): EntityTagList | null {
  if (field.trim() === '*') return '*'
  const out: Array<{ tag: string; weak: boolean }> = []
  let i = 0
  while (i < field.length) {
    ETAG_LIST_ITEM.lastIndex = i
    const m = ETAG_LIST_ITEM.exec(field)
    if (!m || m[0] === '') return null
    if (m[2] !== undefined) out.push({ tag: m[2], weak: m[1] !== undefined })
    i = ETAG_LIST_ITEM.lastIndex
  }
  return out.length > 0 ? out : null
}

/**
 * Whether a GET/HEAD's preconditions fail, so it answers 412 (RFC 9110 13.2.2, steps 1 and 2,
 * evaluated before If-None-Match): If-Match, when present, decides alone (no strong match:
 * fail); otherwise If-Unmodified-Since, a valid HTTP-date earlier than the last modification
 * (`lastModifiedSec` as for notModified; undefined: the field is ignored). An invalid date is
 * ignored.
 */
export function preconditionFails(
  ifMatch: string | undefined,
  ifUnmodifiedSince: string | undefined,
  etags: string | readonly string[],
  lastModifiedSec?: number,
): boolean {
  if (ifMatch !== undefined) return !ifMatchHits(ifMatch, etags)
  if (ifUnmodifiedSince === undefined || lastModifiedSec === undefined) return false
  const t = Date.parse(ifUnmodifiedSince)
  return Number.isFinite(t) && lastModifiedSec * 1000 > t
}
