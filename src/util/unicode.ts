// an unpaired UTF-16 surrogate (String.prototype.isWellFormed is ES2024, past the compile target)
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * True when a string has no lone UTF-16 surrogate, so it encodes as UTF-8. Text that fails is
 * refused before it is stored: SQLite would keep invalid UTF-8, PostgreSQL U+FFFD.
 */
export const isWellFormed = (s: string): boolean => !LONE_SURROGATE.test(s)
