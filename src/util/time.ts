/** Time formats used by the spec. */

const BEIJING_OFFSET_MS = 8 * 3600 * 1000
const pad = (n: number, w = 2) => String(n).padStart(w, '0')

/** Beijing time (UTC+8) as `YYYY-MM-DD HH:MM:SS`. */
export function beijingTime(ms: number): string {
  const d = new Date(ms + BEIJING_OFFSET_MS)
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
}

// the last instants formatted, by their low three bits: an answer's entries repeat the same
// few (a hot key's created_at, the updated_at of one round of writes)
const memoMs = new Float64Array(8).fill(NaN)
const memoText: string[] = new Array<string>(8).fill('')

/** ISO 8601 in Beijing time with microseconds and offset: `2026-01-02T03:04:05.123000+08:00`. */
export function isoMicros(ms: number): string {
  const slot = ms & 7
  if (memoMs[slot] === ms) return memoText[slot]
  const d = new Date(ms + BEIJING_OFFSET_MS)
  const text = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}000+08:00`
  memoMs[slot] = ms
  memoText[slot] = text
  return text
}

/** ISO 8601 local (Beijing) timestamp without offset: `2026-01-02T03:04:05.123000`. */
export function isoLocal(ms: number): string {
  return isoMicros(ms).slice(0, -6)
}

/** Start of the next Beijing calendar day (00:00 UTC+8) after `ms`, in epoch ms. */
export function nextBeijingMidnight(ms: number): number {
  const day = Math.floor((ms + BEIJING_OFFSET_MS) / 86400000)
  return (day + 1) * 86400000 - BEIJING_OFFSET_MS
}

/** Beijing calendar day number (days since epoch in UTC+8). */
export function beijingDay(ms: number): number {
  return Math.floor((ms + BEIJING_OFFSET_MS) / 86400000)
}
