/**
 * Types older versions stored that the types table (util/content-types.ts) now corrects, each to its new type without
 * a charset (the stored type cannot say whether the bytes were valid UTF-8).
 */
const STALE: Record<string, string> = {
  'application/node': 'text/javascript',
  'image/vnd.microsoft.icon': 'image/x-icon',
}

/** The type a stored file is served with: its stored type, or what a stale one became. */
export const servedType = (stored: string): string => (Object.hasOwn(STALE, stored) ? STALE[stored] : stored)

/** Whether a stored type was made by an older table (its charset then tells nothing). */
export const isStaleType = (stored: string): boolean => Object.hasOwn(STALE, stored)

/**
 * The Content-Encoding a stored file is sent with, from its name: a `.svgz` (any case) is gzip'd
 * SVG, sent as stored under that label, so a browser decodes and renders it (Apache's `AddEncoding
 * gzip svgz`; decision 174); null: none. Such a file is never compressed again.
 */
export const storedEncoding = (name: string): 'gzip' | null => (/\.svgz$/i.test(name) ? 'gzip' : null)

/**
 * The Content-Encoding a `_headers` rule gives a file's stored bytes (a precompressed build's
 * `.wasm.br` or `.js.gz`, as Unity's server samples set it): `gzip` or `br`, the only values a
 * publish takes; of values joined from several blocks the last wins. null: the rules name none.
 * Such a file is sent as a .svgz is (decision 232).
 */
export function ruleEncoding(extra: ReadonlyArray<readonly [string, string]>): 'gzip' | 'br' | null {
  let found: 'gzip' | 'br' | null = null
  for (const [name, value] of extra) {
    if (name.toLowerCase() !== 'content-encoding') continue
    const last = value
      .slice(value.lastIndexOf(',') + 1)
      .trim()
      .toLowerCase()
    found = last === 'gzip' || last === 'br' ? last : null
  }
  return found
}
