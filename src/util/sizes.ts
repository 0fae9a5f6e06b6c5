/**
 * Sizes as people read them, for every message that names a size limit (decision
 * 322): binary units (KiB, MiB, GiB, TiB), as the documentation writes limits.
 * Depends on nothing.
 */

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'] as const

/**
 * `bytes` in the largest binary unit it reaches, with at most one decimal, rounded down so a
 * maximum is never stated above itself: 8388608 -> "8 MiB", 65536 -> "64 KiB",
 * 10000000 -> "9.5 MiB"; below 1 KiB the count itself ("512 bytes", "1 byte").
 */
export function humanSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 1024) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`
  let v = bytes / 1024
  let i = 0
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024
    i++
  }
  const shown = Math.floor(v * 10) / 10
  return `${Number.isInteger(shown) ? shown : shown.toFixed(1)} ${UNITS[i]}`
}

/**
 * A size limit in a message, in both languages: the size as people read it, then the exact
 * count in parentheses for a program that reads it ("8 MiB (8388608 bytes)"); below 1 KiB the
 * count alone. Chinese counts in 字节 with full-width parentheses.
 */
export function sizeText(bytes: number): { zh: string; en: string } {
  if (!Number.isFinite(bytes) || bytes < 1024) return { zh: `${bytes} 字节`, en: humanSize(bytes) }
  const h = humanSize(bytes)
  return { zh: `${h}（${bytes} 字节）`, en: `${h} (${bytes} bytes)` }
}
