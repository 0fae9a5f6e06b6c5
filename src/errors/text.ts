/** A text in both languages, for a placeholder whose value is itself words (a reason, a detail). */
export interface Text {
  zh: string
  en: string
}
/** A placeholder's value: a name or number (the same in both languages) or words in both. */
export type Param = string | number | Text

/** A Text with both of its languages passed through `f` (a name put before a reason, ...). */
export const mapText = (t: Text, f: (words: string) => string): Text => ({ zh: f(t.zh), en: f(t.en) })

/** True for a Text: an object of exactly two strings, `zh` and `en`. */
export const isText = (v: unknown): v is Text =>
  typeof v === 'object' && v !== null && typeof (v as Text).zh === 'string' && typeof (v as Text).en === 'string' && Object.keys(v).length === 2
