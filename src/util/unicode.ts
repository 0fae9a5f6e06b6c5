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

/** C0 and C1 control characters and DEL. */
export const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/**
 * The zero-width joiners that writing needs: ZWNJ (U+200C) and ZWJ (U+200D) between two
 * characters of a word that are neither ASCII nor format characters: Persian
 * `می‌خواهم`, Devanagari conjuncts after a virama, emoji sequences (`👩‍💻`), as IDNA's
 * CONTEXTJ admits them. At a name's edge, next to ASCII or to another invisible character
 * they only disguise a name, and count with the other format characters.
 */
const JOINER_IN_WORD =
  /(?<=[\p{L}\p{M}\p{Extended_Pictographic}\p{Emoji_Modifier}])(?<=[^\0-\x7f])[\u200c\u200d](?=[\p{L}\p{M}\p{Extended_Pictographic}])(?=[^\0-\x7f])/gu
const FORMAT = /\p{Cf}/u
/** A control character, or a format character (bidi override or isolate, zero-width) but a joiner inside a word. */
const INVISIBLE = new RegExp(`${CONTROL.source}|(?!${JOINER_IN_WORD.source})\\p{Cf}`, 'gu')

/**
 * Whether a string holds a Unicode format character (category Cf: bidi overrides and
 * isolates such as U+202E, zero-width spaces, BOM) other than a joiner inside a word: such
 * characters make a name read as another one (`gnp.exe` shown as `exe.png`).
 */
export const hasStrayFormat = (s: string): boolean => FORMAT.test(s) && FORMAT.test(s.replace(JOINER_IN_WORD, ''))

/**
 * A name without the characters names may not hold (CONTROL, and the format characters
 * hasStrayFormat finds): for names kept as they were given (display names) rather than
 * refused, as site paths are.
 */
export const stripInvisible = (s: string): string => s.replace(INVISIBLE, '')

// East Asian wide and fullwidth characters (CJK, Hangul, kana, fullwidth forms) and emoji
// shown as pictures: two columns of a terminal; combining marks, zero-width characters and
// variation selectors: none
const WIDE =
  /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe10-\ufe19\ufe30-\ufe6f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1f64f}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]/u
const ZERO = /\p{Mn}|\p{Me}|[\u200b-\u200f]|[\ufe00-\ufe0f]/u

/** The columns a string takes in a terminal, for lining up a text table (CLI output). */
export const displayWidth = (s: string): number => {
  let n = 0
  for (const c of s) n += WIDE.test(c) ? 2 : ZERO.test(c) ? 0 : 1
  return n
}
