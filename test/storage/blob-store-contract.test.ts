import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { PassThrough, Readable } from 'node:stream'
import { S3Client, PutObjectCommand } from '@aws-sdk/client-s3'
import type { BlobStore } from '../../src/storage/blob-store.js'
import { createLocalBlobStore } from '../../src/storage/local.js'
import { createS3BlobStore, SINGLE_PUT_MAX } from '../../src/storage/s3.js'
import { createBlobCache } from '../../src/storage/disk-cache.js'
import { parseS3Url } from '../../src/storage/s3-url.js'
import { AppError } from '../../src/errors/app-error.js'
import { loadConfig } from '../../src/config.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { closedPort } from '../support/ports.js'

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex')
const bytes = (n: number, seed = 1) => {
  const b = Buffer.alloc(n)
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff
  return b
}
/** A body arriving in `parts` chunks, as an upload does. */
const chunked = (b: Buffer, size = 64 * 1024) => {
  const chunks: Buffer[] = []
  for (let i = 0; i < b.length; i += size) chunks.push(b.subarray(i, i + size))
  return Readable.from(chunks, { objectMode: false })
}
const drain = async (r: Readable) => {
  const out: Buffer[] = []
  for await (const c of r) out.push(c as Buffer)
  return Buffer.concat(out)
}
const listAll = async (s: BlobStore) => {
  const out: string[] = []
  for await (const b of s.list()) out.push(b.digest)
  return out.sort()
}
const tooLarge = (limit: number) => Object.assign(new Error(`too large: ${limit}`), { marker: 'tooLarge' })

interface Driver {
  name: string
  open(): Promise<BlobStore>
  /** Leaves a crash leftover in the store's temp area. */
  plantTemp(): Promise<void>
  close(): Promise<void>
}

let s3: TestS3
const dirs: string[] = []

const drivers: Driver[] = [
  {
    name: 'local',
    async open() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-blobs-'))
      dirs.push(dir)
      this.plantTemp = async () => fs.writeFileSync(path.join(dir, 'tmp', 'leftover'), 'x')
      return createLocalBlobStore(dir)
    },
    async plantTemp() {},
    async close() {},
  },
  {
    name: 's3',
    async open() {
      const url = s3.storageUrl()
      const settings = parseS3Url(url)
      this.plantTemp = async () => {
        const c = new S3Client(settings.client)
        await c.send(new PutObjectCommand({ Bucket: settings.bucket, Key: `${settings.prefix}tmp/leftover`, Body: 'x' }))
        c.destroy()
      }
      return createS3BlobStore(url)
    },
    async plantTemp() {},
    async close() {},
  },
  {
    // the S3 driver behind the disk cache, as `svc serve` opens it: the same contract holds
    name: 's3+disk-cache',
    async open() {
      const url = s3.storageUrl()
      const settings = parseS3Url(url)
      this.plantTemp = async () => {
        const c = new S3Client(settings.client)
        await c.send(new PutObjectCommand({ Bucket: settings.bucket, Key: `${settings.prefix}tmp/leftover`, Body: 'x' }))
        c.destroy()
      }
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-blob-cache-'))
      dirs.push(dir)
      return createBlobCache(createS3BlobStore(url), { dir, maxBytes: 64 * 1024 * 1024 })
    },
    async plantTemp() {},
    async close() {},
  },
]

before(async () => {
  s3 = await startS3()
})
after(async () => {
  await s3.close()
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
})

for (const driver of drivers) {
  describe(`blob store contract [${driver.name}]`, () => {
    let store: BlobStore
    before(async () => {
      store = await driver.open()
    })
    after(() => store.close())

    it('stores a buffer under its SHA-256 and reads it back whole, streamed and by range', async () => {
      const body = Buffer.from('<!doctype html><p>hello</p>')
      const r = await store.put(body)
      assert.deepEqual(r, { digest: sha(body), size: body.length })
      assert.ok(await store.exists(r.digest))
      assert.deepEqual(await store.read(r.digest), body)
      assert.deepEqual(await drain(await store.get(r.digest)), body)
      assert.deepEqual(await drain(await store.get(r.digest, { start: 2, end: 8 })), body.subarray(2, 9))
      assert.deepEqual(await drain(await store.get(r.digest, { start: body.length - 1, end: body.length - 1 })), body.subarray(body.length - 1))
    })

    it('streams a large body (multipart on S3) and serves ranges across part boundaries', async () => {
      const body = bytes(SINGLE_PUT_MAX + 3 * 1024 * 1024 + 17, 2)
      const r = await store.put(chunked(body))
      assert.deepEqual(r, { digest: sha(body), size: body.length })
      assert.deepEqual(await drain(await store.get(r.digest)), body)
      const start = 5 * 1024 * 1024 - 10
      assert.deepEqual(await drain(await store.get(r.digest, { start, end: start + 99 })), body.subarray(start, start + 100))
    })

    it('stores equal content once (dedup) and lists each blob once with a time', async () => {
      const before = await listAll(store)
      const small = Buffer.from(`same ${driver.name}`)
      const large = bytes(SINGLE_PUT_MAX + 1024, 3)
      const [a, b] = await Promise.all([store.put(small), store.put(chunked(small, 3))])
      assert.equal(a.digest, b.digest)
      const [c, d] = await Promise.all([store.put(chunked(large)), store.put(large)])
      assert.equal(c.digest, d.digest)
      const now = Date.now()
      const after = await listAll(store)
      assert.deepEqual(after, [...new Set([...before, a.digest, c.digest])].sort())
      for await (const e of store.list()) {
        if (e.digest === a.digest) assert.ok(Math.abs(e.modifiedMs - now) < 120_000)
      }
    })

    it("reports a blob's last write time, which a put of the same bytes refreshes; null for no blob", async () => {
      const body = Buffer.from(`timed ${driver.name} ${Date.now()}`)
      const r = await store.put(body)
      const first = await store.modifiedMs(r.digest)
      assert.ok(first !== null && Math.abs(first - Date.now()) < 120_000)
      // S3 keeps whole seconds
      await new Promise((res) => setTimeout(res, 1100))
      await store.put(body)
      const second = await store.modifiedMs(r.digest)
      assert.ok(second !== null && second > first, `refreshed: ${first} -> ${second}`)
      assert.equal(await store.modifiedMs('0'.repeat(64)), null)
    })

    it("refuses a body past maxBytes with the caller's error and leaves nothing (small and multipart)", async () => {
      const before = await listAll(store)
      for (const [size, max] of [
        [1000, 999],
        [SINGLE_PUT_MAX + 2 * 1024 * 1024, SINGLE_PUT_MAX + 1024 * 1024],
      ]) {
        const body = bytes(size, size)
        await assert.rejects(store.put(chunked(body), { maxBytes: max, tooLarge }), (e: Error & { marker?: string }) => e.marker === 'tooLarge')
        assert.equal(await store.exists(sha(body)), false)
      }
      // default error when no tooLarge is given
      await assert.rejects(store.put(Buffer.alloc(11), { maxBytes: 10 }), (e: unknown) => e instanceof AppError && e.key === 'FILE_TOO_LARGE')
      // exactly maxBytes is accepted
      const ok = await store.put(Buffer.alloc(10, 1), { maxBytes: 10 })
      assert.equal(ok.size, 10)
      assert.deepEqual(await listAll(store), [...new Set([...before, ok.digest])].sort())
      assert.equal(await store.cleanTemp(0), 0, 'no temp leftovers')
    })

    it('stores nothing when the body breaks off mid-way', async () => {
      const before = await listAll(store)
      for (const size of [100_000, SINGLE_PUT_MAX + 1024 * 1024]) {
        const body = bytes(size, 9)
        const broken = Readable.from(
          (async function* () {
            yield body.subarray(0, size - 10)
            throw new Error('client went away')
          })(),
          { objectMode: false },
        )
        await assert.rejects(store.put(broken))
      }
      assert.deepEqual(await listAll(store), before)
      assert.equal(await store.cleanTemp(0), 0)
    })

    // what an archive deploy relies on: a body destroyed while put waits for more bytes (the tar
    // reader failed, the client left) ends the put, with or without an error, and leaves nothing
    it('stores nothing when the body is destroyed while put waits for more', async () => {
      const before = await listAll(store)
      for (const size of [100_000, SINGLE_PUT_MAX + 1024 * 1024]) {
        for (const err of [new Error('the archive ended inside this entry'), undefined]) {
          const body = new PassThrough()
          const put = store.put(body)
          body.write(bytes(size, 11))
          await new Promise((r) => setTimeout(r, 50))
          body.destroy(err)
          await assert.rejects(put)
        }
      }
      assert.deepEqual(await listAll(store), before)
      assert.equal(await store.cleanTemp(0), 0)
    })

    it('deletes on a condition: a blob written after ifNotModifiedAfter stays, an older one goes', async () => {
      const r = await store.put(Buffer.from(`conditional delete ${driver.name} ${Date.now()}`))
      const m = (await store.modifiedMs(r.digest))!
      assert.equal(await store.delete(r.digest, m - 1), false)
      assert.equal(await store.exists(r.digest), true)
      assert.equal(await store.delete(r.digest, m), true)
      assert.equal(await store.exists(r.digest), false)
      assert.equal(await store.delete(r.digest, m), false, 'nothing left to delete')
    })

    it('deletes idempotently; a deleted blob no longer exists and reading it fails with 1503', async () => {
      const r = await store.put(Buffer.from(`to delete ${driver.name}`))
      await store.delete(r.digest)
      await store.delete(r.digest)
      assert.equal(await store.exists(r.digest), false)
      assert.ok(!(await listAll(store)).includes(r.digest))
      await assert.rejects(
        async () => drain(await store.get(r.digest)),
        (e: unknown) => e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE',
      )
    })

    it('cleanTemp removes only leftovers older than asked', async () => {
      await driver.plantTemp()
      assert.equal(await store.cleanTemp(3600_000), 0)
      assert.equal(await store.cleanTemp(0), 1)
      assert.equal(await store.cleanTemp(0), 0)
    })

    it('rejects a malformed digest', async () => {
      await assert.rejects(store.get('../../etc/passwd'))
      await assert.rejects(store.read('ABC'))
      await assert.rejects(store.localFile('../x'))
    })

    it('gives a local file with exactly the blob (disk, disk cache) or none (S3 alone); a missing blob fails with 1503', async () => {
      const body = bytes(70_000, 11)
      const r = await store.put(body)
      const f = await store.localFile(r.digest)
      if (driver.name === 's3') assert.equal(f, null)
      else {
        assert.ok(f)
        assert.equal(f.size, body.length)
        assert.deepEqual(fs.readFileSync(f.path), body)
      }
      // (S3 alone answers null without asking the bucket: get() then fails as for any missing blob)
      if (driver.name === 's3') assert.equal(await store.localFile('e'.repeat(64)), null)
      else await assert.rejects(store.localFile('e'.repeat(64)), (e: unknown) => e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE')
    })
  })
}

describe('S3 driver: failures and configuration', () => {
  it('answers 1503 fast when the S3 server is unreachable', async () => {
    const port = await closedPort()
    const store = createS3BlobStore(`s3://bucket?endpoint=http://127.0.0.1:${port}&forcePathStyle=true&accessKeyId=a&secretAccessKey=b&connectTimeoutMs=500`)
    try {
      const started = Date.now()
      const is1503 = (e: unknown) => e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE'
      await assert.rejects(store.put(Buffer.from('x')), is1503)
      await assert.rejects(store.get('a'.repeat(64)), is1503)
      await assert.rejects(store.exists('a'.repeat(64)), is1503)
      await assert.rejects(store.cleanTemp(0), is1503)
      assert.ok(Date.now() - started < 10_000)
    } finally {
      await store.close()
    }
  })

  it('validates STORAGE_URL at start-up and never prints the secret', () => {
    const bad = 's3://bucket?endpoint=ftp://x&accessKeyId=AKIDEXAMPLE&secretAccessKey=very-secret-value'
    assert.throws(
      () => loadConfig({ STORAGE_URL: bad }),
      (e: Error) => /STORAGE_URL/.test(e.message) && !e.message.includes('very-secret-value') && !e.message.includes('AKIDEXAMPLE'),
    )
    assert.throws(() => loadConfig({ STORAGE_URL: 's3://bucket?accessKeyId=only' }), /accessKeyId and secretAccessKey/)
    const ok = parseS3Url('s3://bkt/some/prefix/?endpoint=http://127.0.0.1:9000&region=eu-west-1&forcePathStyle=true')
    assert.equal(ok.bucket, 'bkt')
    assert.equal(ok.prefix, 'some/prefix/')
    assert.equal(ok.client.region, 'eu-west-1')
    assert.equal(ok.client.forcePathStyle, true)
    assert.equal(ok.client.credentials, undefined, 'credentials come from the AWS_* environment when not in the URL')
  })
})
