import crypto from 'node:crypto'
import { Readable } from 'node:stream'
import {
  HeadBucketCommand,
  S3Client,
  PutObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  DeleteObjectCommand,
  CopyObjectCommand,
  ListObjectsV2Command,
  ListMultipartUploadsCommand,
  AbortMultipartUploadCommand,
} from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { AppError } from '../errors/app-error.js'
import { DIGEST_RE, type BlobStore, type PutOptions, type StoredBlob } from './blob-store.js'
import { parseS3Url } from './s3-url.js'

// The lock file pins an SDK release that supports Node 20; its notice about later releases
// would otherwise be printed on every start.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'

/** Bodies up to this size are hashed in memory and written with one PutObject. */
export const SINGLE_PUT_MAX = 5 * 1024 * 1024
/** Part size of multipart uploads (S3's minimum is 5 MiB). */
const PART_SIZE = 5 * 1024 * 1024

const isNotFound = (e: unknown): boolean => {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } }
  return err?.name === 'NotFound' || err?.name === 'NoSuchKey' || err?.$metadata?.httpStatusCode === 404
}

const storageError = (e: unknown): never => {
  if (e instanceof AppError) throw e
  // the SDK's message never carries the secret key, but keep the answer generic anyway; the
  // SDK's error stays as the cause, which an operator command names (svc move)
  throw Object.assign(new AppError('STORAGE_UNAVAILABLE', { extra: {} }), { cause: e })
}

/**
 * S3 driver: blobs at [prefix/]ab/cd/<sha256> in one bucket, the disk driver's layout.
 *
 * put(): the key is the digest, known only at the end of the body, and a half-written
 * upload must never be visible under a content key. A body up to 5 MiB (every HTML page,
 * most files) is read into memory, hashed, and written with ONE PutObject to its content
 * key (atomic per key in S3). A larger body streams through a multipart upload (5 MiB
 * parts, two in flight) to `tmp/<time>-<random>`, hashed and counted on the way; once
 * complete it is copied server-side (CopyObject) to its content key and the temp object is
 * deleted. Memory per upload stays at a few parts whatever the size; the instance needs no
 * local disk; a failure or `maxBytes` aborts the multipart upload and leaves nothing under
 * a content key. Equal content is rewritten with equal bytes, which also refreshes its
 * LastModified so a concurrent sweep spares it (the disk driver touches the file).
 */
export function createS3BlobStore(url: string): BlobStore {
  const s = parseS3Url(url)
  const client = new S3Client(s.client)
  const Bucket = s.bucket
  const key = (digest: string): string => {
    if (!DIGEST_RE.test(digest)) throw new Error('invalid digest')
    return `${s.prefix}${digest.slice(0, 2)}/${digest.slice(2, 4)}/${digest}`
  }
  const tmpPrefix = `${s.prefix}tmp/`
  const keyRe = /^([0-9a-f]{2})\/([0-9a-f]{2})\/([0-9a-f]{64})$/
  const modifiedMs = async (digest: string): Promise<number | null> => {
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket, Key: key(digest) }))
      return head.LastModified?.getTime() ?? 0
    } catch (e) {
      if (isNotFound(e)) return null
      return storageError(e)
    }
  }

  return {
    kind: 's3',

    async put(body: Readable | Buffer, opts: PutOptions = {}): Promise<StoredBlob> {
      const max = opts.maxBytes ?? Infinity
      const hash = crypto.createHash('sha256')
      let size = 0
      // (set in callbacks: the casts keep TypeScript from narrowing these to null for good)
      let tooLarge = null as Error | null
      const account = (chunk: Buffer): void => {
        size += chunk.length
        if (size > max) {
          tooLarge = opts.tooLarge ? opts.tooLarge(max) : new AppError('FILE_TOO_LARGE', { params: { limit: max } })
          throw tooLarge
        }
        hash.update(chunk)
      }
      const source = (Buffer.isBuffer(body) ? Readable.from([body]) : body)[Symbol.asyncIterator]() as AsyncIterator<Buffer>
      // an error of the body itself (client gone, multipart limit) is passed on unchanged
      let sourceError = null as unknown
      const next = async (): Promise<Buffer | null> => {
        let r: IteratorResult<Buffer>
        try {
          r = await source.next()
        } catch (e) {
          sourceError = e
          throw e
        }
        if (r.done) return null
        return Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value)
      }
      const giveUp = async () => {
        await source.return?.().catch(() => {})
        if (!Buffer.isBuffer(body)) body.resume?.()
      }

      // phase 1: read up to SINGLE_PUT_MAX into memory
      const head: Buffer[] = []
      let headBytes = 0
      let ended = false
      try {
        for (;;) {
          const chunk = await next()
          if (chunk === null) {
            ended = true
            break
          }
          account(chunk)
          head.push(chunk)
          headBytes += chunk.length
          if (headBytes > SINGLE_PUT_MAX) break
        }
      } catch (e) {
        await giveUp()
        throw tooLarge ?? e
      }

      if (ended) {
        const data = Buffer.concat(head, headBytes)
        const digest = hash.digest('hex')
        try {
          await client.send(new PutObjectCommand({ Bucket, Key: key(digest), Body: data, ContentLength: data.length }))
        } catch (e) {
          return storageError(e)
        }
        return { digest, size }
      }

      // phase 2: multipart upload to a temp key, hashing the rest on the way
      const tmpKey = `${tmpPrefix}${Date.now()}-${crypto.randomBytes(12).toString('hex')}`
      async function* rest(): AsyncGenerator<Buffer> {
        for (const c of head) yield c
        head.length = 0
        for (;;) {
          const chunk = await next()
          if (chunk === null) return
          account(chunk)
          yield chunk
        }
      }
      const upload = new Upload({
        client,
        params: { Bucket, Key: tmpKey, Body: Readable.from(rest(), { objectMode: false }) },
        partSize: PART_SIZE,
        queueSize: 2,
        leavePartsOnError: false,
      })
      try {
        await upload.done()
      } catch (e) {
        await upload.abort().catch(() => {})
        await giveUp()
        await client.send(new DeleteObjectCommand({ Bucket, Key: tmpKey })).catch(() => {})
        if (tooLarge) throw tooLarge
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- the source stream's own error, passed on as it came
        if (sourceError !== null) throw sourceError
        return storageError(e)
      }
      const digest = hash.digest('hex')
      try {
        await client.send(new CopyObjectCommand({ Bucket, Key: key(digest), CopySource: encodeURI(`${Bucket}/${tmpKey}`) }))
      } catch (e) {
        await client.send(new DeleteObjectCommand({ Bucket, Key: tmpKey })).catch(() => {})
        return storageError(e)
      }
      // a leftover temp object is harmless: cleanTemp removes it later
      await client.send(new DeleteObjectCommand({ Bucket, Key: tmpKey })).catch(() => {})
      return { digest, size }
    },

    async get(digest, range) {
      try {
        const r = await client.send(
          new GetObjectCommand({
            Bucket,
            Key: key(digest),
            ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
          }),
        )
        return r.Body as Readable
      } catch (e) {
        return storageError(e)
      }
    },

    // no local copy: createBlobCache (disk-cache.ts) wraps this driver to keep one
    async localFile(digest) {
      key(digest)
      return null
    },

    async read(digest) {
      try {
        const r = await client.send(new GetObjectCommand({ Bucket, Key: key(digest) }))
        return Buffer.from(await r.Body!.transformToByteArray())
      } catch (e) {
        return storageError(e)
      }
    },

    async exists(digest) {
      try {
        await client.send(new HeadObjectCommand({ Bucket, Key: key(digest) }))
        return true
      } catch (e) {
        if (isNotFound(e)) return false
        return storageError(e)
      }
    },

    modifiedMs,

    async delete(digest, ifNotModifiedAfter) {
      // S3 deletes by key only (no rename, no condition on LastModified): a put of the same
      // bytes between this HEAD and the DELETE is lost (docs/decisions.md 102)
      if (ifNotModifiedAfter !== undefined) {
        const m = await modifiedMs(digest)
        if (m === null || m > ifNotModifiedAfter) return false
      }
      try {
        await client.send(new DeleteObjectCommand({ Bucket, Key: key(digest) }))
      } catch (e) {
        if (!isNotFound(e)) storageError(e)
      }
      return true
    },

    async *list() {
      let token: string | undefined
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: s.prefix || undefined, ContinuationToken: token })).catch(storageError)
        for (const o of page.Contents ?? []) {
          const m = keyRe.exec((o.Key ?? '').slice(s.prefix.length))
          if (!m || m[3].slice(0, 2) !== m[1] || m[3].slice(2, 4) !== m[2]) continue
          yield { digest: m[3], modifiedMs: o.LastModified?.getTime() ?? 0 }
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined
      } while (token)
    },

    async cleanTemp(olderThanMs) {
      const cutoff = Date.now() - olderThanMs
      let n = 0
      let token: string | undefined
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: tmpPrefix, ContinuationToken: token })).catch(storageError)
        for (const o of page.Contents ?? []) {
          if (o.Key && (o.LastModified?.getTime() ?? 0) <= cutoff) {
            await client.send(new DeleteObjectCommand({ Bucket, Key: o.Key })).catch(() => {})
            n++
          }
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined
      } while (token)
      // multipart uploads whose process died before completing or aborting them (not every
      // S3-compatible server lists them; a bucket lifecycle rule is the other safety net)
      try {
        let keyMarker: string | undefined
        let uploadIdMarker: string | undefined
        do {
          const page = await client.send(new ListMultipartUploadsCommand({ Bucket, Prefix: tmpPrefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }))
          for (const u of page.Uploads ?? []) {
            if (u.Key && u.UploadId && (u.Initiated?.getTime() ?? 0) <= cutoff) {
              await client.send(new AbortMultipartUploadCommand({ Bucket, Key: u.Key, UploadId: u.UploadId })).catch(() => {})
              n++
            }
          }
          keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined
          uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined
        } while (keyMarker)
      } catch {
        // NotImplemented on some servers (s3rver): nothing more to do here
      }
      return n
    },

    async ping() {
      await client.send(new HeadBucketCommand({ Bucket }))
    },
    async close() {
      client.destroy()
    },
  }
}
