import { Transform, type Readable, type TransformCallback } from 'node:stream'
import { AppError } from '../../errors/app-error.js'
import type { BlobStore } from '../../storage/blob-store.js'
import { guardUpload } from '../../http/multipart.js'
import type { Config } from '../../config.js'

/**
 * Files sent with a submission (multipart parts with a file name), as Netlify Forms takes
 * them: each at most `formFileMaxBytes`, together at most `formSubmissionFileBytes`, at most
 * `formSubmissionFiles` of them (settings: 8 MiB, 8 MiB and 5 by default); the bytes the
 * owner keeps count against the form_file_bytes quota.
 */
export type FormFileLimits = Pick<Config, 'formFileMaxBytes' | 'formSubmissionFileBytes' | 'formSubmissionFiles'>

/** A file stored as a blob while the body was read; its row is written with the submission. */
export interface SentFile {
  field: string
  filename: string
  content_type: string
  size: number
  digest: string
}

/** A refusal of files over a size limit: 413 in the service's error format. */
export const filesTooLarge = (limit: number) => new AppError('BODY_TOO_LARGE', { params: { limit } })

/**
 * The name a browser sent, fit for display: its last path segment (some browsers send the
 * client's path), without control, bidi or zero-width characters, trimmed, at most 200
 * characters; "file" when nothing is left.
 */
export function cleanFileName(sent: string): string {
  const base = sent.split(/[\\/]/).pop() ?? ''
  const clean = base
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g, '')
    .trim()
    .slice(0, 200)
    .trim()
  return clean === '' || clean === '.' || clean === '..' ? 'file' : clean
}

const HEAD_BYTES = 4100

/** The type of a file read from its first bytes: a known signature's, else text/plain for UTF-8 text, else application/octet-stream. */
export async function sniffFileType(head: Buffer): Promise<string> {
  const { fileTypeFromBuffer } = await import('file-type')
  const ft = await fileTypeFromBuffer(head).catch(() => undefined)
  if (ft) return ft.mime
  if (head.length === 0) return 'application/octet-stream'
  if (head.includes(0)) return 'application/octet-stream'
  try {
    // the head may end inside a character: the last 3 bytes are not held against it
    new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, Math.max(0, head.length - 3)))
    return 'text/plain'
  } catch {
    return 'application/octet-stream'
  }
}

/** Passes bytes through, keeping the first HEAD_BYTES of them. */
class HeadTap extends Transform {
  head: Buffer[] = []
  kept = 0
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
    if (this.kept < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.kept)
      this.head.push(part)
      this.kept += part.length
    }
    done(null, chunk)
  }
}

/**
 * Streams one file part into the blob store, at most `maxBytes` (the part's limit or what is
 * left of the submission's): past it the store discards what it wrote and `tooLarge` is
 * thrown, reading no further. Resolves the blob and the sniffed type.
 */
export async function storeFilePart(
  blobs: BlobStore,
  source: Readable,
  maxBytes: number,
  tooLarge: (limit: number) => Error,
): Promise<{ digest: string; size: number; content_type: string }> {
  const tap = new HeadTap()
  try {
    const stored = await blobs.put(guardUpload(source, tap), { maxBytes, tooLarge })
    return { ...stored, content_type: await sniffFileType(Buffer.concat(tap.head)) }
  } catch (e) {
    source.resume()
    if ((e as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(maxBytes)
    throw e
  }
}
