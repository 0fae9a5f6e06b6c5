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
