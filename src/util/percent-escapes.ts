/**
 * A URL or request target (`/path?query`) with the path's percent-escapes in uppercase
 * (`%c3%a9` -> `%C3%A9`), as RFC 3986 2.1 normalises them and browsers send them: the same
 * path, so every Location built from what a client sent names it in one spelling. Nothing
 * else changes; from the first `?` on, the query is kept as sent (as Locations pass it on).
 */
export function upperEscapes(target: string): string {
  const q = target.indexOf('?')
  const path = q < 0 ? target : target.slice(0, q)
  if (!path.includes('%')) return target
  const upper = path.replace(/%[0-9a-f]{2}/gi, (e) => e.toUpperCase())
  return q < 0 ? upper : upper + target.slice(q)
}

/** A URL part percent-decoded once (itself when it holds no escape); null when an escape is malformed. */
export function decodeOnce(raw: string): string | null {
  if (raw.indexOf('%') < 0) return raw
  try {
    return decodeURIComponent(raw)
  } catch {
    return null
  }
}
