import { Transform, pipeline } from 'node:stream'
import { AppError } from '../errors/app-error.js'
import type { BlobStore } from '../storage/blob-store.js'
import type { BlobCacheEvents } from '../storage/disk-cache.js'
import { metrics } from './metrics.js'

const isAbort = (e: unknown): boolean => {
  const code = (e as { code?: string })?.code
  return code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ABORT_ERR' || code === 'ECONNRESET'
}

/**
 * Wraps a blob store so its failures (by operation) and the bytes it reads and writes are
 * counted. Errors that are the caller's (FILE_TOO_LARGE, a body that broke off) are not
 * storage errors.
 */
export function instrumentBlobStore(store: BlobStore): BlobStore {
  const driver = store.kind
  const failed =
    (op: string) =>
    (e: unknown): never => {
      const unavailable = e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE'
      // put passes on the body's own errors and the size limit unchanged: not the store's fault
      if (unavailable || (op !== 'put' && !(e instanceof AppError))) metrics.storageErrors.inc({ driver, op })
      throw e
    }
  return {
    kind: store.kind,
    async put(body, opts) {
      const r = await store.put(body, opts).catch(failed('put'))
      metrics.blobBytesStored.inc({ driver }, r.size)
      return r
    },
    // a driver's batch write must survive the wrapper: without it a deploy falls back to a
    // put (and its fsyncs) per file
    ...(store.putBatch
      ? {
          async putBatch(bodies: Buffer[]) {
            const rs = await store.putBatch!(bodies).catch(failed('put'))
            for (const r of rs) metrics.blobBytesStored.inc({ driver }, r.size)
            return rs
          },
        }
      : {}),
    async get(digest, range) {
      const src = await store.get(digest, range).catch(failed('get'))
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          metrics.blobBytesRead.inc({ driver }, chunk.length)
          cb(null, chunk)
        },
      })
      return pipeline(src, counter, (err) => {
        if (err && !isAbort(err)) metrics.storageErrors.inc({ driver, op: 'stream' })
      })
    },
    localFile: (digest) => store.localFile(digest).catch(failed('localFile')),
    ...(store.localPathNow ? { localPathNow: store.localPathNow.bind(store) } : {}),
    async read(digest) {
      const b = await store.read(digest).catch(failed('read'))
      metrics.blobBytesRead.inc({ driver }, b.length)
      return b
    },
    exists: (digest) => store.exists(digest).catch(failed('exists')),
    modifiedMs: (digest) => store.modifiedMs(digest).catch(failed('stat')),
    delete: (digest, ifNotModifiedAfter) => store.delete(digest, ifNotModifiedAfter).catch(failed('delete')),
    async *list() {
      try {
        yield* store.list()
      } catch (e) {
        failed('list')(e)
      }
    },
    cleanTemp: (ms) => store.cleanTemp(ms).catch(failed('cleanTemp')),
    ping: () => store.ping(),
    close: () => store.close(),
  }
}

/** The disk cache's reports (storage/disk-cache.ts) as metrics. */
export const blobCacheMetrics: BlobCacheEvents = {
  lookup: (result) => metrics.blobCacheLookups.inc({ result }),
  evicted: (_files, bytes) => metrics.blobCacheEvictions.inc(bytes),
  failed: (reason) => metrics.blobCacheFailures.inc({ reason }),
  size: (bytes) => metrics.blobCacheBytes.set(bytes),
}
