import { Transform, type TransformCallback } from 'node:stream'
import { collectKeyTokens, KEY_LENGTH } from '../../auth/key-leaks.js'

const HEAD_BYTES = 64 * 1024

/**
 * A pass-through stream that watches the bytes of an upload on their way to the blob store:
 * keeps the first 64 KiB (for magic-byte and HTML detection), notes NUL bytes, checks
 * whether the whole body is valid UTF-8 (so text is served with `charset=utf-8` only when true),
 * and collects the tokens shaped like an API key (`keyTokens`, also across chunk edges).
 */
export class ContentWatcher extends Transform {
  /** @param headBytes how many leading bytes to keep for head() (0 for none) */
  constructor(private readonly headBytes = HEAD_BYTES) {
    super()
  }
  private headChunks: Buffer[] = []
  private headLen = 0
  private decoder: TextDecoder | null = new TextDecoder('utf-8', { fatal: true })
  hasNul = false
  validUtf8 = true
  size = 0
  readonly keyTokens = new Set<string>()
  /** The last bytes of the previous chunk: a key cut by a chunk edge is found in tail + head. */
  private keyTail: Buffer = Buffer.alloc(0)

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length
    if (this.headLen < this.headBytes) {
      const take = chunk.subarray(0, this.headBytes - this.headLen)
      this.headChunks.push(take)
      this.headLen += take.length
    }
    if (!this.hasNul && chunk.includes(0)) this.hasNul = true
    if (this.keyTail.length > 0) collectKeyTokens(Buffer.concat([this.keyTail, chunk.subarray(0, KEY_LENGTH - 1)]), this.keyTokens)
    collectKeyTokens(chunk, this.keyTokens)
    // a chunk shorter than a key adds to the tail, so a key over three chunks is found too
    const last = chunk.length >= KEY_LENGTH - 1 ? chunk : Buffer.concat([this.keyTail, chunk])
    this.keyTail = Buffer.from(last.subarray(Math.max(0, last.length - (KEY_LENGTH - 1))))
    if (this.decoder) {
      try {
        this.decoder.decode(chunk, { stream: true })
      } catch {
        this.validUtf8 = false
        this.decoder = null
      }
    }
    cb(null, chunk)
  }

  override _flush(cb: TransformCallback): void {
    if (this.decoder) {
      try {
        this.decoder.decode()
      } catch {
        this.validUtf8 = false
      }
      this.decoder = null
    }
    cb()
  }

  head(): Buffer {
    return Buffer.concat(this.headChunks)
  }
}

/** C0 control bytes text does not hold (tab, line breaks, form feed, SUB and ESC are text). */
const BINARY_CONTROL = /[\x00-\x08\x0e-\x19\x1c-\x1f]/

/** Whether a text looks like HTML: a tag, comment or doctype appears near its start. */
export function looksLikeHtml(head: Buffer): boolean {
  // decode leniently (pages in GBK and other encodings are HTML too: their tags are ASCII)
  const text = head.toString('latin1')
  return /<(!doctype|!--|\/?[a-zA-Z][a-zA-Z0-9-]*[\s>/])/i.test(text)
}

/**
 * The detected MIME type of an upload that claims to be HTML, or null when it is HTML:
 * magic bytes of a binary format, NUL bytes (binary), or text without any markup.
 */
export async function detectNonHtml(head: Buffer, hasNul: boolean): Promise<string | null> {
  // a UTF-16 page (Windows PowerShell's `>` and Notepad's "Unicode" write it) starts with its
  // byte order mark and holds a NUL beside every ASCII byte: its markup is looked for in the
  // text the mark names (browsers decode by the mark too), never read as bytes, where FF FE
  // reads as an MPEG audio frame and the NULs as binary
  const utf16 = head[0] === 0xff && head[1] === 0xfe ? 'utf-16le' : head[0] === 0xfe && head[1] === 0xff ? 'utf-16be' : null
  if (utf16) return looksLikeHtml(Buffer.from(new TextDecoder(utf16).decode(head.subarray(2)), 'utf8')) ? null : 'text/plain'
  const { fileTypeFromBuffer } = await import('file-type')
  const ft = await fileTypeFromBuffer(head).catch(() => undefined)
  // a signature decides for binary bytes; text with markup is a page even when its first
  // letters spell one (`BMW cars`, `MZ`, `ID3 tag`, `BEGIN:VCARD`): file-type's short and
  // printable signatures match ordinary words, while real BMP, EXE and MP3 headers hold
  // NUL or control bytes, and text without markup still gets the signature's type
  if (ft && ft.mime !== 'text/html' && ft.mime !== 'application/xml' && (hasNul || BINARY_CONTROL.test(head.toString('latin1')) || !looksLikeHtml(head)))
    return ft.mime
  if (hasNul) return 'application/octet-stream'
  if (looksLikeHtml(head)) return null
  const t = head
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart()
  if (/^[[{]/.test(t)) {
    try {
      JSON.parse(head.toString('utf8').replace(/^\uFEFF/, ''))
      return 'application/json'
    } catch {}
  }
  return 'text/plain'
}
