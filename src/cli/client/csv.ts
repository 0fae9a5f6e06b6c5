/**
 * RFC 4180 CSV (CRLF line ends, quotes doubled). A text cell that a spreadsheet would run as a
 * formula (=, +, -, @, tab, CR first; a plain number is left alone) gets a leading apostrophe
 * (OWASP "CSV injection"): form submissions come from anyone.
 */
export function toCsv(rows: string[][]): string {
  const cell = (s: string) => {
    let v = s
    if (/^[=+\-@\t\r]/.test(v) && !/^[+-]?\d+(\.\d+)?$/.test(v)) v = `'${v}`
    return /[",\r\n]/.test(v) || v !== v.trim() ? `"${v.replace(/"/g, '""')}"` : v
  }
  return rows.map((r) => r.map(cell).join(',')).join('\r\n') + (rows.length ? '\r\n' : '')
}
