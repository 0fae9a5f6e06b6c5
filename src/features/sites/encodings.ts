import zlib from 'node:zlib'
import { promisify } from 'node:util'
import type { BlobStore } from '../../storage/blob-store.js'
import { dropOldest } from '../../util/oldest.js'

const gzip = promisify(zlib.gzip)
const brotli = promisify(zlib.brotliCompress)

/** A compressed form of a blob, stored as a blob of its own, with its local file. */
export interface Encoded {
  digest: string
  size: number
  path: string
}
type Log = { warn(obj: unknown, msg: string): void }

export interface EncodingsOptions {
  /** Compressed forms remembered at most (source digest and encoding; oldest forgotten first). */
  maxEntries?: number
  /** Compressions waiting at most; asks past it are dropped (asked again on a later request). */
  maxQueue?: number
}

/**
 * The compressed forms (br, gzip) of hosted files, made off the request path (docs/decisions.md,
 * entry 40): a request that could take one that does not exist yet is answered with identity
 * and asks for it; one compression runs at a time, in the background, and its result is stored
 * in the blob store (content-addressed, so equal output is stored once) and served from its
 * local file like any body. A form that saves less than 5% is remembered as not worth it (null).
 * The index is memory only: after a restart forms are asked for again, and a form whose blob
 * the sweeper removed (nothing in the database references it) is forgotten when its file is
 * found gone (`forget`) and made again. Keyed by the source digest, so a form never outlives
 * or mixes up its content.
 */
export function createEncodings(blobs: BlobStore, log: Log, o: EncodingsOptions = {}) {
  const maxEntries = o.maxEntries ?? 100_000
  const maxQueue = o.maxQueue ?? 1_000
  const made = new Map<string, Encoded | null>()
  const queue: Array<{ digest: string; enc: 'br' | 'gzip' }> = []
  const queued = new Set<string>()
  let running: Promise<void> | null = null
  let closed = false

  const key = (digest: string, enc: 'br' | 'gzip') => `${digest}:${enc}`

  async function make(digest: string, enc: 'br' | 'gzip'): Promise<void> {
    const raw = await blobs.read(digest)
    const out =
      enc === 'br'
        ? await brotli(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 6, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } })
        : await gzip(raw, { level: 6 })
    let form: Encoded | null = null
    if (out.length <= raw.length * 0.95) {
      const stored = await blobs.put(out)
      const file = await blobs.localFile(stored.digest)
      form = file === null ? null : { digest: stored.digest, size: stored.size, path: file.path }
    }
    made.set(key(digest, enc), form)
    if (made.size > maxEntries) dropOldest(made)
  }

  async function drain(): Promise<void> {
    for (let job = queue.shift(); job !== undefined && !closed; job = queue.shift()) {
      await make(job.digest, job.enc).catch((err) => log.warn({ err, digest: job.digest }, 'compressing a hosted file failed'))
      queued.delete(key(job.digest, job.enc))
    }
    running = null
  }

  return {
    /** The compressed form: made (Encoded), not worth it (null), or not made yet (undefined). */
    get: (digest: string, enc: 'br' | 'gzip'): Encoded | null | undefined => made.get(key(digest, enc)),

    /** Asks for a form to be made in the background (once; nothing when it is known or queued). */
    request(digest: string, enc: 'br' | 'gzip'): void {
      const k = key(digest, enc)
      if (closed || made.has(k) || queued.has(k) || queue.length >= maxQueue) return
      queued.add(k)
      queue.push({ digest, enc })
      if (running === null) running = new Promise<void>((resolve) => setImmediate(resolve)).then(drain)
    },

    /** A form's file was found gone (swept): forget it, so it is made again. */
    forget: (digest: string, enc: 'br' | 'gzip'): void => void made.delete(key(digest, enc)),

    /** Resolves when nothing is queued or running (tests, close). */
    async idle(): Promise<void> {
      while (running !== null) await running
    },

    async close(): Promise<void> {
      closed = true
      queue.length = 0
      while (running !== null) await running
    },
  }
}
export type Encodings = ReturnType<typeof createEncodings>
