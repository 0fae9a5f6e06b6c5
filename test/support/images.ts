import zlib from 'node:zlib'
import sharp from 'sharp'
import { loadConfig } from '../../src/config.js'
import { adminCommand } from '../../src/cli/admin.js'
import { multipart, type TestServer } from './server.js'
import { randomString, sha256hex } from '../../src/auth/tokens.js'

/** Small test images made with sharp. */
export async function makeImage(
  format: 'png' | 'jpeg' | 'gif' | 'webp' | 'avif',
  opts: { width?: number; height?: number; color?: string } = {},
): Promise<Buffer> {
  const img = sharp({ create: { width: opts.width ?? 16, height: opts.height ?? 12, channels: 3, background: opts.color ?? '#3366cc' } })
  switch (format) {
    case 'png':
      return img.png().toBuffer()
    case 'jpeg':
      return img.jpeg().toBuffer()
    case 'gif':
      return img.gif().toBuffer()
    case 'webp':
      return img.webp().toBuffer()
    case 'avif':
      return img.avif({ effort: 0 }).toBuffer()
  }
}

/**
 * A TIFF/EXIF block (big-endian) with IFD0 {Make, Orientation, GPSInfo} and a GPS IFD
 * {GPSLatitudeRef, GPSLatitude}: the kind of metadata a phone writes.
 */
export function exifTiff(make: string, orientation: number): Buffer {
  const makeBytes = Buffer.from(`${make}\0`, 'latin1')
  const ifd0 = 8
  const makeAt = ifd0 + 2 + 3 * 12 + 4
  const gpsAt = makeAt + makeBytes.length
  const ratAt = gpsAt + 2 + 2 * 12 + 4
  const b = Buffer.alloc(ratAt + 24)
  b.write('MM', 0, 'latin1')
  b.writeUInt16BE(42, 2)
  b.writeUInt32BE(ifd0, 4)
  let o = ifd0
  const entry = (tag: number, type: number, count: number, value: (at: number) => void) => {
    b.writeUInt16BE(tag, o)
    b.writeUInt16BE(type, o + 2)
    b.writeUInt32BE(count, o + 4)
    value(o + 8)
    o += 12
  }
  b.writeUInt16BE(3, o)
  o += 2
  entry(0x010f, 2, makeBytes.length, (at) => b.writeUInt32BE(makeAt, at))
  entry(0x0112, 3, 1, (at) => b.writeUInt16BE(orientation, at))
  entry(0x8825, 4, 1, (at) => b.writeUInt32BE(gpsAt, at))
  b.writeUInt32BE(0, o)
  makeBytes.copy(b, makeAt)
  o = gpsAt
  b.writeUInt16BE(2, o)
  o += 2
  entry(0x0001, 2, 2, (at) => b.write('N\0', at, 'latin1'))
  entry(0x0002, 5, 3, (at) => b.writeUInt32BE(ratAt, at))
  b.writeUInt32BE(0, o)
  const rationals = [48, 1, 51, 1, 2400, 100]
  rationals.forEach((v, i) => b.writeUInt32BE(v, ratAt + i * 4))
  return b
}

/** A JPEG marker segment: marker, length, body. */
export const jpegSegment = (marker: number, body: Buffer) => {
  const head = Buffer.alloc(4)
  head.writeUInt16BE(marker, 0)
  head.writeUInt16BE(body.length + 2, 2)
  return Buffer.concat([head, body])
}

/** A JPEG carrying EXIF (camera make, orientation 6, GPS), XMP and a comment, all with secrets. */
export async function jpegWithMetadata(): Promise<Buffer> {
  const base = await makeImage('jpeg', { width: 24, height: 16 })
  const app1 = jpegSegment(0xffe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), exifTiff('SECRETCAM', 6)]))
  const xmp = jpegSegment(0xffe1, Buffer.from('http://ns.adobe.com/xap/1.0/\0<x:xmpmeta xmlns:x="adobe:ns:meta/">SECRETXMP</x:xmpmeta>', 'latin1'))
  const com = jpegSegment(0xfffe, Buffer.from('SECRETCOMMENT', 'latin1'))
  // after SOI and sharp's APP0 (JFIF)
  const app0End = 2 + 2 + base.readUInt16BE(4)
  return Buffer.concat([base.subarray(0, app0End), app1, xmp, com, base.subarray(app0End)])
}

/** A PNG with an EXIF chunk, XMP and a tEXt chunk. */
export async function pngWithMetadata(): Promise<Buffer> {
  const base = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#0a0' } })
    .png()
    .withExif({ IFD0: { Copyright: 'SECRETPNGEXIF' } })
    .withXmp('<x:xmpmeta xmlns:x="adobe:ns:meta/">SECRETPNGXMP</x:xmpmeta>')
    .toBuffer()
  const data = Buffer.from('Comment\0SECRETPNGTEXT', 'latin1')
  const chunk = Buffer.alloc(12 + data.length)
  chunk.writeUInt32BE(data.length, 0)
  chunk.write('tEXt', 4, 'latin1')
  data.copy(chunk, 8)
  chunk.writeUInt32BE(zlib.crc32(chunk.subarray(4, 8 + data.length)), 8 + data.length)
  // right after IHDR (8-byte signature + 25-byte IHDR chunk)
  return Buffer.concat([base.subarray(0, 33), chunk, base.subarray(33)])
}

/** A WebP with EXIF and XMP chunks. */
export async function webpWithMetadata(): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: '#a00' } })
    .webp()
    .withExif({ IFD0: { Copyright: 'SECRETWEBPEXIF' } })
    .withXmp('<x:xmpmeta xmlns:x="adobe:ns:meta/">SECRETWEBPXMP</x:xmpmeta>')
    .toBuffer()
}

export const SVG_WITH_SCRIPT = `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" onload="document.title='PWNED-ONLOAD'">
  <rect width="40" height="40" fill="#c00"/>
  <script>document.title = 'PWNED'; fetch('/svc_api/me', { credentials: 'include' }).then(r => r.text()).then(t => { document.title = 'PWNED:' + t.slice(0, 40) })</script>
</svg>`

/** A multipart body of image files in the field `file` (plus optional text fields first). */
export function imageForm(files: Array<{ name: string; data: Buffer | string; type?: string }>, fields: Record<string, string> = {}) {
  return multipart([
    ...Object.entries(fields).map(([name, data]) => ({ name, data })),
    ...files.map((f) => ({ name: 'file', filename: f.name, type: f.type ?? 'application/octet-stream', data: f.data })),
  ])
}

/** Runs an operator command (bin/svc) against a test server's database (its output goes to stdout). */
export async function svc(s: TestServer, cmd: string, ...args: string[]): Promise<void> {
  const code = await adminCommand(cmd, args, () => loadConfig(s.env))
  if (code !== 0) throw new Error(`svc ${cmd} ${args.join(' ')} exited ${code}`)
}

/** A one-time redeem code for a feature, stored the way `svc redeem-code create` stores it. */
export async function redeemCode(s: TestServer, feature: string): Promise<string> {
  const code = `IMG-${randomString(20)}`
  await s.deps.db.k
    .insertInto('redeem_codes')
    .values({ code_hash: sha256hex(code), feature, created_at: Date.now(), redeemed_by: null, redeemed_at: null })
    .execute()
  return code
}

/** Digests in the blob store (to prove a refused upload stored nothing). */
export async function blobDigests(s: TestServer): Promise<Set<string>> {
  const set = new Set<string>()
  for await (const b of s.deps.blobs.list()) set.add(b.digest)
  return set
}

/** Chunk types of a PNG, in order. */
export function pngChunks(b: Buffer): string[] {
  const types: string[] = []
  for (let i = 8; i + 8 <= b.length; i += 12 + b.readUInt32BE(i)) types.push(b.toString('latin1', i + 4, i + 8))
  return types
}
