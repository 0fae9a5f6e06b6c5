/**
 * CSV for people's spreadsheets (RFC 4180: quotes doubled, a cell quoted when it holds a quote,
 * comma or line break, or starts or ends with white space). Text that a spreadsheet would run
 * as a formula gets a leading apostrophe (OWASP "CSV injection"): it starts with = + - @, a
 * tab, CR or LF, or the full-width = + - @ that some spreadsheets take for them. A plain number
 * (-3, +1.5) is left as it is. The cells come from anyone: form submissions, audit details.
 */
const FORMULA_START = /^[=+\-@\t\r\n\uFF1D\uFF0B\uFF0D\uFF20]/
const PLAIN_NUMBER = /^[+-]?\d+(\.\d+)?$/

/** One cell: an array joined with "; ", null and undefined empty, other scalars as text. */
export function csvCell(v: unknown): string {
  const s = csvText(v)
  const t = FORMULA_START.test(s) && !PLAIN_NUMBER.test(s) ? `'${s}` : s
  return /[",\r\n]/.test(t) || t !== t.trim() ? `"${t.replace(/"/g, '""')}"` : t
}

/** A value as a cell's text, before quoting: empty for none, an array's items joined by "; ". */
export function csvText(v: unknown): string {
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- cells are JSON scalars (numbers, booleans) or arrays of them
  return v === undefined || v === null ? '' : Array.isArray(v) ? v.map((x) => String(x)).join('; ') : String(v)
}

/** Whole rows, CRLF line ends, a final CRLF when there is a row. */
export function toCsv(rows: unknown[][]): string {
  return rows.map((r) => r.map(csvCell).join(',')).join('\r\n') + (rows.length ? '\r\n' : '')
}

/**
 * The headers of a table's field columns, every header of the table once: a field's name, or
 * for a name that is one of the table's fixed columns, the name behind `data.` (again while
 * that is another field's name), as a submission's JSON holds it under `data`. Field names are
 * distinct (an object's keys). Used for form submissions (decision 137).
 */
export function fieldHeaders(fixed: readonly string[], names: string[]): string[] {
  const reserved = new Set(fixed)
  const taken = new Set([...fixed, ...names])
  return names.map((name) => {
    if (!reserved.has(name)) return name
    let h = `data.${name}`
    while (taken.has(h)) h = `data.${h}`
    taken.add(h)
    return h
  })
}
