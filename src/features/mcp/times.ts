/**
 * One time format in every tool answer: ISO 8601 in UTC with milliseconds
 * (2026-12-07T13:10:15.123Z), the form `set_access` takes and JavaScript's Date prints. The
 * REST answers the tools pass on keep the spec's formats, which differ by feature: Beijing
 * time without a zone (forms, images, single files), ISO 8601 at +08:00 (KV, deploys, data),
 * UTC (domains, access), epoch milliseconds (a form's last submission), ISO 8601 without a
 * zone (a folder file's `modified`, Beijing time). An agent reading "2026-12-07 21:10:15" cannot
 * know its zone; here every one of them is the same instant in the one form.
 */

/** The service's zone-less times (beijingTime, isoLocal: a folder file's `modified`): Beijing time, UTC+8. */
const BEIJING_TEXT = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d(\.\d{1,9})?)$/
/** ISO 8601 with a zone (isoMicros' six fractional digits included). */
const ZONED = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,9})?)?(Z|[+-]\d\d:\d\d)$/

/** A time in the tools' one form: epoch milliseconds, Beijing text or zoned ISO 8601; anything else as it is. */
export function utcTime<T>(v: T): T | string {
  let t = NaN
  if (typeof v === 'number') t = v
  else if (typeof v === 'string') {
    const b = BEIJING_TEXT.exec(v)
    // fractional digits past milliseconds are zeros (isoMicros): Date reads three at most
    const ms = (text: string) => text.replace(/(\.\d{3})\d+/, '$1')
    t = b ? Date.parse(`${b[1]}T${ms(b[2])}+08:00`) : ZONED.test(v) ? Date.parse(ms(v)) : NaN
  }
  // NaN, or out of Date's range: left as it is
  return Number.isFinite(t) && Number.isFinite(new Date(t).getTime()) ? new Date(t).toISOString() : v
}

/** The fields that hold a time: created_at, expires_at, reset_time, a folder file's modified, ... */
const TIME_KEY = /(_at|_time)$|^modified$/
/** Fields whose contents are the user's own (an entry's value, a submission's fields, a file's text): never rewritten. */
const USER_DATA = new Set(['value', 'data', 'content'])

/** A tool's structured content with every time field in the one form (utcTime), the user's own data left as it is. */
export function utcTimes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(utcTimes)
  if (v === null || typeof v !== 'object') return v
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, USER_DATA.has(k) ? x : TIME_KEY.test(k) ? utcTime(x) : utcTimes(x)]))
}
