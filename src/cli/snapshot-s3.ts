import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import {
  S3Client,
  PutObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  DeleteObjectCommand,
  CopyObjectCommand,
  ListObjectsV2Command,
} from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { DIGEST_RE } from '../storage/blob-store.js'
import { parseS3Url } from '../storage/s3-url.js'
import { BackupError, LOCK, pidAlive, type SnapshotTarget } from './snapshot-target.js'
import { SNAPSHOT_RE } from '../util/snapshot-names.js'

// the lock file pins an SDK release that supports Node 20 (as storage/s3.ts says)
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'

/** Blobs up to this size are hashed in memory and written with one PutObject (storage/s3.ts's threshold). */
const SINGLE_PUT_MAX = 5 * 1024 * 1024

const statusOf = (e: unknown) => (e as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode
const isNotFound = (e: unknown): boolean => {
  const name = (e as { name?: string })?.name
  return name === 'NotFound' || name === 'NoSuchKey' || statusOf(e) === 404
}
/** An SDK error for the operator: its code and message (the SDK's messages never carry the secret key). */
const describe = (e: unknown): string => {
  const err = e as { name?: string; message?: string }
  const status = statusOf(e)
  return `${err?.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}: ${err?.message ?? String(e)}`
}

/**
 * A bucket target: s3://bucket[/prefix]?endpoint=...&region=...&forcePathStyle=true, the
 * settings and credentials of STORAGE_URL (storage/s3-url.ts; else AWS_ACCESS_KEY_ID and the
 * SDK's standard chain). Keys are the folder layout under the prefix. S3 writes one key
 * atomically, so a blob is written whole under its name only once its bytes hashed to it (in
 * memory up to 5 MiB; above, a multipart upload to blobs/tmp/ first, then a server-side copy),
 * and a snapshot's manifest.json goes up after its svc.db. The database copy is staged in the
 * operating system's temp folder (TMPDIR).
 */
export function s3Target(url: string): SnapshotTarget {
  let s: ReturnType<typeof parseS3Url>
  try {
    s = parseS3Url(url, 'backup destination')
  } catch (e) {
    throw new BackupError((e as Error).message)
  }
  const client = new S3Client(s.client)
  const Bucket = s.bucket
  const root = s.prefix
  const base = `s3://${Bucket}/${root}`
  const blobKey = (digest: string) => `${root}blobs/${digest.slice(0, 2)}/${digest.slice(2, 4)}/${digest}`
  const blobKeyRe = /^([0-9a-f]{2})\/([0-9a-f]{2})\/([0-9a-f]{64})$/
  const staged = new Map<string, string>()
  const where = (name?: string) => (name === undefined ? base.replace(/\/$/, '') : `${base}${name}`)
  const fail =
    (what: string) =>
    (e: unknown): never => {
      if (e instanceof BackupError) throw e
      throw new BackupError(`${what}: ${describe(e)}`)
    }

  const get = async (Key: string) => {
    try {
      return (await client.send(new GetObjectCommand({ Bucket, Key }))).Body as Readable
    } catch (e) {
      if (isNotFound(e)) return null
      return fail(`reading s3://${Bucket}/${Key}`)(e)
    }
  }
  const del = (Key: string) => client.send(new DeleteObjectCommand({ Bucket, Key })).then(() => undefined, fail(`deleting s3://${Bucket}/${Key}`))
  const exists = async (Key: string) => {
    try {
      await client.send(new HeadObjectCommand({ Bucket, Key }))
      return true
    } catch (e) {
      if (isNotFound(e)) return false
      return fail(`reading s3://${Bucket}/${Key}`)(e)
    }
  }
  const text = async (body: Readable) => Buffer.concat((await body.toArray()) as Buffer[]).toString('utf8')
  async function* keys(Prefix: string, Delimiter?: string): AsyncGenerator<{ key: string; size: number; dir: boolean }> {
    let token: string | undefined
    do {
      const page = await client
        .send(new ListObjectsV2Command({ Bucket, Prefix: Prefix || undefined, Delimiter, ContinuationToken: token }))
        .catch(fail(`listing ${where()}`))
      for (const p of page.CommonPrefixes ?? []) if (p.Prefix) yield { key: p.Prefix, size: 0, dir: true }
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key, size: o.Size ?? 0, dir: false }
      token = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (token)
  }

  const deleteSnapshot = async (name: string) => {
    // the manifest first: the snapshot stops counting as complete before its database goes
    await del(`${root}${name}/manifest.json`)
    for await (const k of keys(`${root}${name}/`)) await del(k.key)
  }

  return {
    where,

    /**
     * The lock is an object (.backup.lock) naming its host and pid. S3 has no exclusive create
     * everywhere: PutObject with If-None-Match (AWS, MinIO, R2) makes it one; a server that
     * ignores the condition leaves only the moment between the check and the write. A lock of
     * a dead process on this host is taken over; one of another host is left to the operator.
     */
    async locked(fn) {
      const Key = `${root}${LOCK}`
      const held = await get(Key)
      let takeOver = false
      if (held) {
        let h: { host?: string; pid?: number; started?: string } = {}
        try {
          h = JSON.parse(await text(held)) as typeof h
        } catch {}
        takeOver = h.host === os.hostname() && !pidAlive(Number(h.pid))
        if (!takeOver) {
          throw new BackupError(
            `another backup (pid ${h.pid ?? '?'} on ${h.host ?? '?'}, since ${h.started ?? '?'}) is writing to ${where()}; if none is, delete ${where()}/${LOCK}`,
          )
        }
      }
      const me = JSON.stringify({ host: os.hostname(), pid: process.pid, started: new Date().toISOString() })
      const put = (exclusive: boolean) =>
        client.send(new PutObjectCommand({ Bucket, Key, Body: me, ContentType: 'application/json', ...(exclusive ? { IfNoneMatch: '*' } : {}) }))
      try {
        await put(!takeOver).catch((e: unknown) => {
          // a server without conditional writes: the check above is all there is
          if (statusOf(e) === 501 || (e as { name?: string })?.name === 'NotImplemented') return put(false)
          throw e
        })
      } catch (e) {
        if (statusOf(e) === 412) throw new BackupError(`another backup started writing to ${where()} at the same time`)
        fail(`writing ${where()}/${LOCK}`)(e)
      }
      try {
        return await fn()
      } finally {
        await client.send(new DeleteObjectCommand({ Bucket, Key })).catch(() => {})
      }
    },

    async snapshots() {
      const names: string[] = []
      for await (const k of keys(root, '/')) {
        const name = k.key.slice(root.length).replace(/\/$/, '')
        if (k.dir && SNAPSHOT_RE.test(name)) names.push(name)
      }
      const complete: string[] = []
      for (const n of names.sort()) if (await exists(`${root}${n}/manifest.json`)) complete.push(n)
      return complete
    },

    async stage(name) {
      const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'svc-backup-'))
      staged.set(name, dir)
      return dir
    },

    async commit(name, manifest) {
      const dir = staged.get(name)
      if (!dir) throw new Error(`snapshot ${name} was not staged`)
      const up = new Upload({
        client,
        params: { Bucket, Key: `${root}${name}/svc.db`, Body: fs.createReadStream(path.join(dir, 'svc.db')) },
        queueSize: 2,
        leavePartsOnError: false,
      })
      await up.done().catch(fail(`uploading ${where(name)}/svc.db`))
      await client
        .send(
          new PutObjectCommand({
            Bucket,
            Key: `${root}${name}/manifest.json`,
            Body: `${JSON.stringify(manifest, null, 2)}\n`,
            ContentType: 'application/json',
          }),
        )
        .catch(fail(`uploading ${where(name)}/manifest.json`))
      staged.delete(name)
      await fsp.rm(dir, { recursive: true, force: true })
    },

    async discard(name) {
      const dir = staged.get(name)
      staged.delete(name)
      if (dir) await fsp.rm(dir, { recursive: true, force: true })
      await deleteSnapshot(name)
    },

    deleteSnapshot,

    async *listBlobs() {
      const prefix = `${root}blobs/`
      for await (const k of keys(prefix)) {
        const m = blobKeyRe.exec(k.key.slice(prefix.length))
        if (m && m[3].slice(0, 2) === m[1] && m[3].slice(2, 4) === m[2]) yield { digest: m[3], size: k.size }
      }
    },

    async putBlob(digest, body, what) {
      if (!DIGEST_RE.test(digest)) throw new BackupError(`"${digest}" is not a blob digest`)
      const hash = crypto.createHash('sha256')
      let size = 0
      const it = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
      const next = async (): Promise<Buffer | null> => {
        const r = await it.next()
        if (r.done) return null
        const c = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value)
        hash.update(c)
        size += c.length
        return c
      }
      const verify = () => {
        const got = hash.digest('hex')
        if (got !== digest) throw new BackupError(`${what}: content does not match (sha256 ${got})`)
      }
      const head: Buffer[] = []
      let ended = false
      while (size <= SINGLE_PUT_MAX) {
        const c = await next()
        if (c === null) {
          ended = true
          break
        }
        head.push(c)
      }
      if (ended) {
        verify()
        const data = Buffer.concat(head)
        await client
          .send(new PutObjectCommand({ Bucket, Key: blobKey(digest), Body: data, ContentLength: data.length }))
          .catch(fail(`uploading blob ${digest}`))
        return size
      }
      // larger: a multipart upload to a temp key, copied under the blob's name once it verifies
      const tmpKey = `${root}blobs/tmp/${Date.now()}-${crypto.randomBytes(8).toString('hex')}`
      async function* rest(): AsyncGenerator<Buffer> {
        yield* head.splice(0)
        for (let c = await next(); c !== null; c = await next()) yield c
      }
      try {
        await new Upload({ client, params: { Bucket, Key: tmpKey, Body: Readable.from(rest()) }, queueSize: 2, leavePartsOnError: false }).done()
        verify()
        await client.send(new CopyObjectCommand({ Bucket, Key: blobKey(digest), CopySource: encodeURI(`${Bucket}/${tmpKey}`) }))
        return size
      } catch (e) {
        return fail(`uploading blob ${digest}`)(e)
      } finally {
        await client.send(new DeleteObjectCommand({ Bucket, Key: tmpKey })).catch(() => {})
      }
    },

    deleteBlob: (digest) => del(blobKey(digest)),

    async readManifest(name) {
      const body = await get(`${root}${name}/manifest.json`)
      if (!body) throw new BackupError(`cannot read ${where(name)}/manifest.json: no such object`)
      return text(body)
    },

    async localDatabase(name) {
      const body = await get(`${root}${name}/svc.db`)
      if (!body) return null
      const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'svc-restore-'))
      const release = () => fsp.rm(dir, { recursive: true, force: true })
      const file = path.join(dir, 'svc.db')
      try {
        await pipeline(body, fs.createWriteStream(file, { mode: 0o600 }))
      } catch (e) {
        await release()
        return fail(`downloading ${where(name)}/svc.db`)(e)
      }
      return { file, release }
    },

    openBlob: (digest) => get(blobKey(digest)),

    async close() {
      client.destroy()
    },
  }
}

/** The bucket target and name of one snapshot: s3://bucket[/prefix]/<name>[?settings]. */
export function s3Snapshot(location: string): { target: SnapshotTarget; name: string } {
  const m = /^(s3:\/\/[^/?#]+(?:\/[^?#]*)?)\/([^/?#]+)\/?(\?[^#]*)?$/.exec(location)
  if (!m) throw new BackupError('name the snapshot: s3://bucket[/prefix]/<snapshot>[?endpoint=...]')
  return { target: s3Target(`${m[1]}${m[3] ?? ''}`), name: m[2] }
}
