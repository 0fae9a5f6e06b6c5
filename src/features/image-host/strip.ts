/**
 * Lossless metadata removal at the container level: the pixels are never decoded or
 * re-encoded, so a JPEG keeps its quality and an animated GIF, WebP or PNG keeps its frames.
 * Each function returns the cleaned bytes, or null when the container cannot be walked
 * (the caller then re-encodes with sharp, which drops all metadata).
 *
 * Kept: what decoding needs (colour profile, JFIF/Adobe markers, animation control).
 * Dropped: EXIF (camera, GPS, time), XMP, IPTC, comments, text chunks, timestamps.
 */

const JPEG_ICC = Buffer.from('ICC_PROFILE\0', 'latin1')
const JPEG_EXIF = Buffer.from('Exif\0\0', 'latin1')

/** A minimal EXIF APP1 segment carrying only the orientation tag (so photos stay upright). */
export function orientationApp1(orientation: number): Buffer {
  const b = Buffer.alloc(2 + 2 + 6 + 8 + 2 + 12 + 4)
  let o = 0
  o = b.writeUInt16BE(0xffe1, o)
  o = b.writeUInt16BE(b.length - 2, o)
  o += JPEG_EXIF.copy(b, o)
  o += b.write('MM', o, 'latin1')
  o = b.writeUInt16BE(42, o)
  o = b.writeUInt32BE(8, o)
  o = b.writeUInt16BE(1, o) // one IFD0 entry
  o = b.writeUInt16BE(0x0112, o) // Orientation
  o = b.writeUInt16BE(3, o) // SHORT
  o = b.writeUInt32BE(1, o)
  o = b.writeUInt16BE(orientation, o)
  o = b.writeUInt16BE(0, o)
  b.writeUInt32BE(0, o) // no next IFD
  return b
}

/**
 * The end of a scan's entropy-coded data that starts at `i`: the offset of the next marker
 * (0xFF then a byte that is neither a stuffed 0x00, a restart marker nor another 0xFF fill
 * byte), or the end of the buffer when the data is truncated.
 */
function scanEnd(buf: Buffer, i: number): number {
  for (let j = buf.indexOf(0xff, i); j >= 0 && j + 1 < buf.length; j = buf.indexOf(0xff, j + 1)) {
    const next = buf[j + 1]
    if (next === 0x00 || next === 0xff || (next >= 0xd0 && next <= 0xd7)) continue
    return j
  }
  return buf.length
}

/**
 * JPEG: walks the marker segments to the end of the image, through every scan (a progressive
 * JPEG may carry segments between its scans). Keeps APP0 (JFIF), APP2 ICC profile chunks,
 * APP14 (Adobe colour transform) and every non-APP segment; drops APP1 (EXIF, XMP), APP13
 * (IPTC), the other APPn and COM wherever they are, and every byte after the end-of-image
 * marker (phones append a second picture with its own EXIF and GPS, or a video, there; no
 * decoder reads it, and sharp's metadata does not see it). When the photo had an orientation
 * other than 1, a minimal EXIF segment holding only that tag is written back.
 */
export function stripJpeg(buf: Buffer, orientation?: number): Buffer | null {
  if (buf.length < 4 || buf[0] !== 0xff || buf[1] !== 0xd8) return null
  const out: Buffer[] = [buf.subarray(0, 2)]
  let i = 2
  let insertAt = 1 // index in out after which the orientation segment goes
  let scanned = false
  while (i < buf.length) {
    if (buf[i] !== 0xff) return null
    const marker = buf[i + 1]
    if (marker === undefined) return null
    if (marker === 0xff) {
      i++
      continue
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      out.push(buf.subarray(i, i + 2))
      i += 2
      continue
    }
    if (marker === 0xd9) {
      // end of image: whatever follows is not part of this picture and is dropped
      out.push(buf.subarray(i, i + 2))
      break
    }
    if (i + 4 > buf.length) return null
    const end = i + 2 + buf.readUInt16BE(i + 2)
    if (end > buf.length || end < i + 4) return null
    const seg = buf.subarray(i, end)
    const body = seg.subarray(4)
    if (marker === 0xda) {
      // start of scan: its header, then the entropy-coded data up to the next marker
      const dataEnd = scanEnd(buf, end)
      out.push(buf.subarray(i, dataEnd))
      scanned = true
      i = dataEnd
      continue
    }
    let keep = true
    if (marker === 0xfe) keep = false
    else if (marker >= 0xe0 && marker <= 0xef) {
      keep = marker === 0xe0 || marker === 0xee || (marker === 0xe2 && body.subarray(0, JPEG_ICC.length).equals(JPEG_ICC))
    }
    if (keep) {
      out.push(seg)
      if (marker === 0xe0 && out.length === 2) insertAt = 2
    }
    i = end
  }
  if (!scanned) return null // no image data
  if (orientation && orientation >= 2 && orientation <= 8) out.splice(insertAt, 0, orientationApp1(orientation))
  return Buffer.concat(out)
}

const PNG_SIG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
const PNG_DROP = new Set(['eXIf', 'tEXt', 'zTXt', 'iTXt', 'tIME'])

/** PNG (and APNG): drops eXIf, tEXt, zTXt, iTXt and tIME chunks, and anything after IEND. */
export function stripPng(buf: Buffer): Buffer | null {
  if (buf.length < 8 || !buf.subarray(0, 8).equals(PNG_SIG)) return null
  const out: Buffer[] = [PNG_SIG]
  let i = 8
  while (i + 12 <= buf.length) {
    const len = buf.readUInt32BE(i)
    const type = buf.toString('latin1', i + 4, i + 8)
    const end = i + 12 + len
    if (end > buf.length) return null
    if (!PNG_DROP.has(type)) out.push(buf.subarray(i, end))
    i = end
    if (type === 'IEND') return Buffer.concat(out)
  }
  return null
}

/** WebP: drops the EXIF and XMP chunks, clears their VP8X flags, fixes the RIFF size. */
export function stripWebp(buf: Buffer): Buffer | null {
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WEBP') return null
  const limit = Math.min(buf.length, 8 + buf.readUInt32LE(4))
  const chunks: Buffer[] = []
  let i = 12
  while (i + 8 <= limit) {
    const fourcc = buf.toString('latin1', i, i + 4)
    const size = buf.readUInt32LE(i + 4)
    const end = i + 8 + size + (size & 1)
    if (i + 8 + size > limit) return null
    if (fourcc !== 'EXIF' && fourcc !== 'XMP ') {
      let chunk = buf.subarray(i, Math.min(end, limit))
      if (fourcc === 'VP8X' && size >= 1) {
        chunk = Buffer.from(chunk)
        chunk[8] &= ~(0x08 | 0x04)
      }
      chunks.push(chunk)
      if (chunk.length & 1) chunks.push(Buffer.alloc(1))
    }
    i = end
  }
  if (chunks.length === 0) return null
  const body = Buffer.concat(chunks)
  const head = Buffer.alloc(12)
  head.write('RIFF', 0, 'latin1')
  head.writeUInt32LE(4 + body.length, 4)
  head.write('WEBP', 8, 'latin1')
  return Buffer.concat([head, body])
}

const GIF_KEEP_APPS = new Set(['NETSCAPE2.0', 'ANIMEXTS1.0'])

/** GIF: drops comment extensions and application extensions other than the looping ones (XMP). */
export function stripGif(buf: Buffer): Buffer | null {
  const sig = buf.toString('latin1', 0, 6)
  if (buf.length < 14 || (sig !== 'GIF87a' && sig !== 'GIF89a')) return null
  const skipBlocks = (j: number): number => {
    while (j < buf.length && buf[j] !== 0) j += buf[j] + 1
    return j < buf.length ? j + 1 : -1
  }
  const packed = buf[10]
  let i = 13 + (packed & 0x80 ? 3 * (1 << ((packed & 7) + 1)) : 0)
  const out: Buffer[] = [buf.subarray(0, i)]
  while (i < buf.length) {
    const b = buf[i]
    if (b === 0x3b) {
      out.push(buf.subarray(i, i + 1))
      return Buffer.concat(out)
    }
    if (b === 0x2c) {
      if (i + 10 > buf.length) return null
      const p = buf[i + 9]
      const start = i + 10 + (p & 0x80 ? 3 * (1 << ((p & 7) + 1)) : 0) + 1
      const end = skipBlocks(start)
      if (end < 0) return null
      out.push(buf.subarray(i, end))
      i = end
    } else if (b === 0x21) {
      const label = buf[i + 1]
      const end = skipBlocks(i + 2)
      if (end < 0) return null
      let keep = label !== 0xfe
      if (label === 0xff) keep = buf[i + 2] === 11 && GIF_KEEP_APPS.has(buf.toString('latin1', i + 3, i + 14))
      if (keep) out.push(buf.subarray(i, end))
      i = end
    } else {
      return null
    }
  }
  return null
}
