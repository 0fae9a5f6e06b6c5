// an unpaired UTF-16 surrogate (String.prototype.isWellFormed is ES2024, past the compile target)
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * True when a string has no lone UTF-16 surrogate, so it encodes as UTF-8. Text that fails is
 * refused before it is stored: SQLite would keep invalid UTF-8, PostgreSQL U+FFFD.
 */
export const isWellFormed = (s: string): boolean => !LONE_SURROGATE.test(s)

/**
 * The first `max` UTF-16 units of a string, one fewer when the cut would fall inside a
 * surrogate pair: a shortened subject or log field stays well-formed (never a lone half).
 */
export const truncate = (s: string, max: number): string => {
  if (s.length <= max) return s
  const c = s.charCodeAt(max - 1)
  return s.slice(0, c >= 0xd800 && c <= 0xdbff ? max - 1 : max)
}
