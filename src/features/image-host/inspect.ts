import crypto from 'node:crypto'
import type { Metadata } from 'sharp'
import { fileTypeFromBuffer } from 'file-type'
import { AppError } from '../../errors/app-error.js'
import type { Param } from '../../errors/text.js'
import { stripGif, stripJpeg, stripPng, stripWebp } from './strip.js'

import { loadSharp } from './sharp.js'

/** Largest image (in pixels) sharp will decode; bigger ones are refused (decompression bombs). */
export const MAX_INPUT_PIXELS = 50_000_000

export type ImageType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp' | 'image/avif' | 'image/svg+xml'

/** What file-type reports for the raster types we accept (APNG is served as image/png). */
const RASTER: Record<string, ImageType> = {
  'image/png': 'image/png',
  'image/apng': 'image/png',
  'image/jpeg': 'image/jpeg',
  'image/gif': 'image/gif',
  'image/webp': 'image/webp',
  'image/avif': 'image/avif',
}
/** sharp's format name for each raster type (AVIF is read through libheif). */
const SHARP_FORMAT: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'heif',
}
export const ALLOWED_TYPES = 'PNG, JPEG, GIF, WebP, AVIF, SVG'

/**
 * SVG has no magic number: after an optional BOM, XML declaration, comments and a DOCTYPE
 * without an internal subset, the root element must be <svg>. Anything with NUL bytes or
 * that is not UTF-8 text is not SVG.
 */
export function looksLikeSvg(buf: Buffer): boolean {
  const head = buf.subarray(0, 4096)
  if (head.includes(0)) return false
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf)
  } catch {
    return false
  }
  return /^\uFEFF?\s*(<\?xml[^>]*\?>\s*)?(<!--[\s\S]*?-->\s*|<!DOCTYPE\s+svg[^>[]*>\s*)*<svg[\s>/]/i.test(text.slice(0, 8192))
}

/** A short description of unaccepted bytes for the error message: a media type, or words in both languages. */
async function describe(buf: Buffer): Promise<Param> {
  const ft = await fileTypeFromBuffer(buf).catch(() => undefined)
  // HEIC/HEIF is what iPhones take photos in, and its HEVC coding cannot be decoded here
  if (ft && /^image\/hei[cf]/.test(ft.mime)) {
    return { zh: `${ft.mime}（iPhone 照片格式：请导出为 JPEG 再上传）`, en: `${ft.mime} (the iPhone photo format: export it as JPEG and upload that)` }
  }
  if (ft) return ft.mime
  const start = buf.subarray(0, 512).toString('latin1').trimStart().toLowerCase()
  if (/^(<!doctype html|<html|<head|<body|<script|<\?xml|<)/.test(start)) return { zh: 'text/html 或 XML', en: 'text/html or XML' }
  return buf.subarray(0, 4096).includes(0) ? 'application/octet-stream' : 'text/plain'
}

export interface Prepared {
  bytes: Buffer
  contentType: ImageType
  width: number | null
  height: number | null
  /**
   * With keep_metadata, the digest (the blob store's: SHA-256 hex) of the metadata-free form,
   * what the upload would have stored without it: a takedown of that form refuses these bytes
   * too. Null when `bytes` are that form.
   */
  plainDigest: string | null
}

const digestOf = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex')

const unsupported = async (buf: Buffer) => new AppError('FILE_TYPE_UNSUPPORTED', { params: { detected: await describe(buf), allowed: ALLOWED_TYPES } })

/**
 * Checks an upload and returns what is stored: the type comes from the bytes (magic numbers),
 * never from the file name or the client's Content-Type. Unless `keepMetadata`, EXIF / GPS,
 * XMP, IPTC and comments are removed (losslessly where the container allows, else by
 * re-encoding), and the result is verified with sharp.
 */
export async function prepareImage(buf: Buffer, keepMetadata: boolean): Promise<Prepared> {
  if (buf.length === 0) throw new AppError('EMPTY_FILE')
  const ft = await fileTypeFromBuffer(buf).catch(() => undefined)
  const type = ft ? RASTER[ft.mime] : undefined
  if (!type) {
    // file-type calls an SVG with an XML declaration application/xml
    if ((!ft || ft.mime === 'application/xml') && looksLikeSvg(buf))
      return { bytes: buf, contentType: 'image/svg+xml', width: null, height: null, plainDigest: null }
    throw await unsupported(buf)
  }
  let meta: Metadata
  try {
    // the header only, without the pixel limit: an image over it is refused below naming its
    // size (with the limit, sharp throws and it would read as damaged)
    meta = await (await loadSharp())(buf, { limitInputPixels: false }).metadata()
  } catch {
    throw undecodable(type)
  }
  if (meta.format !== SHARP_FORMAT[type]) throw await unsupported(buf)
  // as displayed: a photo with an EXIF orientation of 5-8 is shown turned a quarter, and the
  // stripped or re-encoded bytes keep or apply that turn
  const width = meta.autoOrient?.width ?? meta.width ?? null
  const height = meta.autoOrient?.height ?? meta.height ?? null
  // every frame counts: an animation is decoded whole (openImage's limit) for animated variants
  const frames = hasFrames(type) ? (meta.pages ?? 1) : 1
  if (width && height && width * height * frames > MAX_INPUT_PIXELS) {
    const size = `${width}x${height}`
    const detected = {
      zh: `${type}，${size} 像素${frames > 1 ? ` x ${frames} 帧` : ''}（像素过多）`,
      en: `${type} of ${size} pixels${frames > 1 ? ` x ${frames} frames` : ''} (too many)`,
    }
    throw new AppError('FILE_TYPE_UNSUPPORTED', { params: { detected, allowed: ALLOWED_TYPES } })
  }
  if (keepMetadata) {
    if (!(await decodes(buf, type))) throw undecodable(type)
    const plain = await stripMetadata(buf, type, meta, true)
    return { bytes: buf, contentType: type, width, height, plainDigest: plain.equals(buf) ? null : digestOf(plain) }
  }
  const bytes = await stripMetadata(buf, type, meta, false)
  return { bytes, contentType: type, width, height, plainDigest: null }
}

/**
 * The digests a takedown of stored image bytes blocks: theirs and, for bytes kept with their
 * metadata, their metadata-free form's, so the image comes back neither with nor without
 * keep_metadata (an upload asks the blocklist for both: service.ts).
 */
export async function takedownDigests(bytes: Buffer): Promise<string[]> {
  const own = digestOf(bytes)
  try {
    const plain = (await prepareImage(bytes, false)).bytes
    const d = digestOf(plain)
    return d === own ? [own] : [own, d]
  } catch {
    return [own]
  }
}

/** Bytes whose header reads but whose pixels do not decode (damaged or truncated data). */
const undecodable = (type: ImageType) =>
  new AppError('FILE_TYPE_UNSUPPORTED', {
    params: { detected: { zh: `已损坏或无法读取的 ${type}`, en: `damaged or unreadable ${type}` }, allowed: ALLOWED_TYPES },
  })

/** Types decoded with all their frames (an animation stays one in variants); the others: the first. */
export const hasFrames = (type: string): boolean => type === 'image/gif' || type === 'image/webp'

/**
 * How stored images are opened for decoding, by the upload's check and by every variant: the
 * same pixel limit, and a decoder warning (truncated or corrupt data) is an error, so an image
 * whose check passed is one every variant can decode.
 */
export async function openImage(buf: Buffer, animated: boolean) {
  return (await loadSharp())(buf, { limitInputPixels: MAX_INPUT_PIXELS, animated, failOn: 'warning' })
}

/**
 * Whether every pixel of the image decodes. Decoded into a small thumbnail, so memory stays
 * bounded and a JPEG is read at reduced scale (its whole entropy-coded data is still read).
 */
async function decodes(buf: Buffer, type: ImageType): Promise<boolean> {
  try {
    await (await openImage(buf, hasFrames(type))).resize(64, 64, { fit: 'inside' }).raw().toBuffer()
    return true
  } catch {
    return false
  }
}

/** The metadata-free form; `checked`: buf's pixels were decoded already (else the result's are). */
async function stripMetadata(buf: Buffer, type: ImageType, meta: Metadata, checked: boolean): Promise<Buffer> {
  let out: Buffer | null = null
  switch (type) {
    case 'image/jpeg':
      out = stripJpeg(buf, meta.orientation)
      break
    case 'image/png':
      out = stripPng(buf)
      break
    case 'image/webp':
      out = stripWebp(buf)
      break
    case 'image/gif':
      out = stripGif(buf)
      break
    case 'image/avif':
      out = meta.exif || meta.xmp || meta.iptc ? null : buf
      break
    case 'image/svg+xml':
      throw new Error('stripMetadata: SVGs are stored as uploaded (prepareImage returns them first)')
  }
  // the pixels are decoded once: the kept bytes are checked, or re-encoding decodes them (and
  // refuses what does not decode)
  if (out && (await isClean(out, meta.orientation)) && (checked || (await decodes(out, type)))) return out
  return reencode(buf, type)
}

/** True when sharp can read the image and finds no metadata beyond an orientation-only EXIF. */
async function isClean(buf: Buffer, orientation?: number): Promise<boolean> {
  try {
    const m = await (await loadSharp())(buf, { limitInputPixels: MAX_INPUT_PIXELS }).metadata()
    if (m.xmp || m.iptc || m.comments?.length) return false
    if (m.exif && m.exif.length > 64) return false
    return (m.orientation ?? 1) === (orientation ?? 1)
  } catch {
    return false
  }
}

/** Decodes and re-encodes in the same format: sharp writes no metadata unless asked to. */
async function reencode(buf: Buffer, type: ImageType): Promise<Buffer> {
  try {
    const img = (await openImage(buf, hasFrames(type))).autoOrient().keepIccProfile()
    switch (type) {
      case 'image/jpeg':
        return await img.jpeg({ quality: 92 }).toBuffer()
      case 'image/png':
        return await img.png().toBuffer()
      case 'image/webp':
        return await img.webp({ quality: 90 }).toBuffer()
      case 'image/gif':
        return await img.gif().toBuffer()
      default:
        return await img.avif({ quality: 70, effort: 2 }).toBuffer()
    }
  } catch {
    throw undecodable(type)
  }
}
