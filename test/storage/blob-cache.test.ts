import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import type { Readable } from 'node:stream'
import { S3Client, PutObjectCommand } from '@aws-sdk/client-s3'
import { openLocalBlob, type BlobStore } from '../../src/storage/blob-store.js'
import { createS3BlobStore } from '../../src/storage/s3.js'
import { parseS3Url } from '../../src/storage/s3-url.js'
import { createBlobCache, type CachedBlobStore } from '../../src/storage/disk-cache.js'
import { openBlobStore } from '../../src/storage/open.js'
import { AppError } from '../../src/errors/app-error.js'
import { loadConfig, byteSize } from '../../src/config.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { startS3Relay } from '../support/s3-relay.js'
import { closedPort } from '../support/ports.js'

const drain = async (r: Readable) => {
  const out: Buffer[] = []
  for await (const c of r) out.push(c as Buffer)
  return Buffer.concat(out)
}
const is1503 = (e: unknown) => e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE'

/** Every regular file below `dir` (temp files included) and their total size. */
function folder(dir: string): { files: Map<string, number>; total: number } {
  const files = new Map<string, number>()
  let total = 0
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.isFile()) {
        const size = fs.statSync(p).size
        files.set(path.relative(dir, p), size)
        total += size
      }
    }
  }
  walk(dir)
  return { files, total }
}
const cachedFile = (dir: string, digest: string) => path.join(dir, digest.slice(0, 2), digest)

let s3: TestS3
const dirs: string[] = []
const tmpDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-blob-cache-'))
  dirs.push(d)
  return d
}

before(async () => {
  s3 = await startS3()
})
after(async () => {
  await s3.close()
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
})

/** The S3 driver, with the object GETs it makes counted (a real driver; the count is the test's). */
function counted(store: BlobStore): BlobStore & { gets: number } {
  const c = Object.assign({ ...store }, { gets: 0 })
  c.get = (digest, range) => {
    c.gets++
    return store.get(digest, range)
  }
  return c
}

describe('disk cache of S3 blobs (real s3rver, real disk)', () => {
  it('serves hits from disk after a restart, even with S3 unreachable, in the order of last use', async () => {
    const url = s3.storageUrl()
    const dir = tmpDir()
    const s3store = counted(createS3BlobStore(url))
    const cache = await createBlobCache(s3store, { dir, maxBytes: 1 << 20, touchEveryMs: 0 })
    const bodies = [0, 1, 2].map((i) => Buffer.from(`<p>page ${i} ${crypto.randomUUID()}</p>`.repeat(50)))
    const digests: string[] = []
    for (const b of bodies) digests.push((await cache.put(b)).digest)
    for (const d of digests) assert.equal((await cache.read(d)).length > 0, true)
    assert.equal(s3store.gets, 3)
    // used again: 0 is the most recent now, 1 the least
    await new Promise((r) => setTimeout(r, 20))
    await cache.read(digests[2])
    await new Promise((r) => setTimeout(r, 20))
    await cache.read(digests[0])
    assert.equal(s3store.gets, 3, 'hits do not go to S3')
    await cache.close()

    // restart with the bucket out of reach: every read is a hit from the folder
    const port = await closedPort()
    const down = createS3BlobStore(`s3://x?endpoint=http://127.0.0.1:${port}&forcePathStyle=true&accessKeyId=a&secretAccessKey=b&connectTimeoutMs=300`)
    const again = await createBlobCache(down, { dir, maxBytes: 1 << 20 })
    assert.equal(again.cache.stats().files, 3)
    for (const [i, d] of digests.entries()) {
      assert.deepEqual(await again.read(d), bodies[i])
      assert.deepEqual(await drain(await again.get(d, { start: 3, end: 9 })), bodies[i].subarray(3, 10))
      const f = await again.localFile(d)
      assert.ok(f)
      assert.equal(f.size, bodies[i].length)
      assert.deepEqual(fs.readFileSync(f.path), bodies[i])
    }
    await again.close()

    // the LRU order survived: a cache with room for two keeps the two most recently used
    const two = bodies[0].length + bodies[2].length
    const small = await createBlobCache(createS3BlobStore(url), { dir, maxBytes: two + 10, lowWater: 1 })
    assert.deepEqual([...folder(dir).files.keys()].map((p) => path.basename(p)).sort(), [digests[0], digests[2]].sort())
    await small.close()
  })

  it('fetches once for concurrent misses of one blob', async () => {
    const relay = await startS3Relay(s3.endpoint)
    try {
      const url = s3.storageUrl(undefined, relay.endpoint)
      const cache = await createBlobCache(createS3BlobStore(url), { dir: tmpDir(), maxBytes: 1 << 20 })
      const body = crypto.randomBytes(200_000)
      const { digest } = await cache.put(body)
      relay.mode = 'hold'
      const readers = [
        ...Array.from({ length: 10 }, () => cache.read(digest)),
        ...Array.from({ length: 10 }, async () => drain(await cache.get(digest))),
        ...Array.from({ length: 10 }, async () => fs.readFileSync((await cache.localFile(digest))!.path)),
        ...Array.from({ length: 10 }, async () => {
          const o = await openLocalBlob(cache, digest)
          try {
            return await o!.handle.readFile()
          } finally {
            await o!.handle.close()
          }
        }),
      ]
      await relay.holding(1)
      await new Promise((r) => setTimeout(r, 50))
      relay.mode = 'pass'
      relay.release()
      for (const got of await Promise.all(readers)) assert.deepEqual(got, body)
      assert.equal(relay.gets, 1, 'one GET for 40 concurrent readers')
      await cache.close()
    } finally {
      await relay.close()
    }
  })

  it('never serves a corrupt or truncated download, and leaves nothing behind', async () => {
    const relay = await startS3Relay(s3.endpoint)
    try {
      const url = s3.storageUrl(undefined, relay.endpoint)
      const dir = tmpDir()
      const cache = await createBlobCache(createS3BlobStore(url), { dir, maxBytes: 4 << 20 })
      const body = crypto.randomBytes(300_000)
      const { digest } = await cache.put(body)

      // the connection drops halfway through the body
      relay.mode = 'truncate'
      await assert.rejects(cache.read(digest), is1503)
      await assert.rejects(async () => drain(await cache.get(digest)), is1503)
      await assert.rejects(cache.localFile(digest), is1503)
      assert.equal(folder(dir).total, 0, 'no partial file, not even in tmp/')
      assert.deepEqual(cache.cache.stats(), { bytes: 0, files: 0, reserved: 0, unlinking: 0 })

      // the bucket holds other bytes under the digest (a damaged or tampered object)
      relay.mode = 'pass'
      const s = parseS3Url(url)
      const c = new S3Client(s.client)
      const key = `${s.prefix}${digest.slice(0, 2)}/${digest.slice(2, 4)}/${digest}`
      const bad = Buffer.from(body)
      bad[1000] ^= 0xff
      await c.send(new PutObjectCommand({ Bucket: s.bucket, Key: key, Body: bad }))
      await assert.rejects(cache.read(digest), is1503)
      await assert.rejects(cache.localFile(digest), is1503)
      // a shorter object
      await c.send(new PutObjectCommand({ Bucket: s.bucket, Key: key, Body: body.subarray(0, 1000) }))
      await assert.rejects(cache.read(digest), is1503)
      assert.equal(folder(dir).total, 0)

      // once the object is right again, it is fetched and kept
      await c.send(new PutObjectCommand({ Bucket: s.bucket, Key: key, Body: body }))
      c.destroy()
      assert.deepEqual(await cache.read(digest), body)
      assert.deepEqual(fs.readFileSync(cachedFile(dir, digest)), body)
      await cache.close()
    } finally {
      await relay.close()
    }
  })

  it('re-checks files found at start: a torn or altered file is removed and fetched again, never served', async () => {
    const url = s3.storageUrl()
    const dir = tmpDir()
    const first = await createBlobCache(createS3BlobStore(url), { dir, maxBytes: 1 << 20 })
    const a = crypto.randomBytes(50_000)
    const b = crypto.randomBytes(50_000)
    const da = (await first.put(a)).digest
    const db = (await first.put(b)).digest
    await first.read(da)
    await first.read(db)
    await first.close()
    // while stopped: one file loses its tail (a crash before the data reached the disk), one is altered
    fs.truncateSync(cachedFile(dir, da), 1000)
    const altered = fs.readFileSync(cachedFile(dir, db))
    altered[10] ^= 1
    fs.writeFileSync(cachedFile(dir, db), altered)
    fs.writeFileSync(path.join(dir, 'tmp', 'leftover'), 'half a download')

    // with S3 out of reach, neither is served
    const port = await closedPort()
    const down = await createBlobCache(
      createS3BlobStore(`s3://x?endpoint=http://127.0.0.1:${port}&forcePathStyle=true&accessKeyId=a&secretAccessKey=b&connectTimeoutMs=300`),
      { dir, maxBytes: 1 << 20 },
    )
    assert.equal(fs.existsSync(path.join(dir, 'tmp', 'leftover')), false, 'temp leftovers are removed at start')
    await assert.rejects(down.read(da), is1503)
    await assert.rejects(down.localFile(db), is1503)
    await down.close()
    assert.equal(folder(dir).total, 0)

    // with S3 back, the right bytes are fetched
    const up = await createBlobCache(createS3BlobStore(url), { dir, maxBytes: 1 << 20 })
    assert.deepEqual(await up.read(da), a)
    assert.deepEqual(fs.readFileSync((await up.localFile(db))!.path), b)
    await up.close()
  })

  it('deleted or replaced blobs are never served: delete removes the copy, and a fill in flight never lands', async () => {
    const relay = await startS3Relay(s3.endpoint)
    try {
      const url = s3.storageUrl(undefined, relay.endpoint)
      const dir = tmpDir()
      const cache = await createBlobCache(createS3BlobStore(url), { dir, maxBytes: 1 << 20 })
      const v1 = Buffer.from(`<p>v1 ${crypto.randomUUID()}</p>`)
      const v2 = Buffer.from(`<p>v2 ${crypto.randomUUID()}</p>`)
      const d1 = (await cache.put(v1)).digest
      const f1 = await cache.localFile(d1)
      assert.ok(f1 && fs.existsSync(f1.path))
      // "replaced": the new content has its own digest; the old one is deleted (the sweeper's job)
      const d2 = (await cache.put(v2)).digest
      assert.notEqual(d1, d2)
      await cache.delete(d1)
      assert.equal(fs.existsSync(f1.path), false, 'the cached copy goes with the blob')
      await assert.rejects(cache.read(d1), is1503)
      await assert.rejects(cache.localFile(d1), is1503)
      assert.deepEqual(await cache.read(d2), v2)

      // a miss whose download is under way when the blob is deleted
      const v3 = crypto.randomBytes(100_000)
      const d3 = (await cache.put(v3)).digest
      relay.mode = 'hold'
      const reading = cache.read(d3).then(
        (b) => b,
        (e: unknown) => e,
      )
      // S3 has answered with the bytes; the cache has not seen them yet
      await relay.holding(1)
      const deleting = cache.delete(d3)
      await new Promise((r) => setTimeout(r, 50))
      relay.mode = 'pass'
      relay.release()
      await deleting
      const got = await reading
      // the reader that asked before the delete may get the bytes it asked for, but nothing stays
      if (!Buffer.isBuffer(got)) assert.ok(is1503(got))
      assert.equal(fs.existsSync(cachedFile(dir, d3)), false)
      await assert.rejects(cache.read(d3), is1503)
      await assert.rejects(cache.localFile(d3), is1503)
      assert.equal(cache.cache.stats().files, 1, 'only v2 is cached')
      await cache.close()
    } finally {
      await relay.close()
    }
  })

  it('a file removed behind the cache (by an operator, svc sweep) is fetched again, not reported as served', async () => {
    const dir = tmpDir()
    const cache = await createBlobCache(createS3BlobStore(s3.storageUrl()), { dir, maxBytes: 1 << 20 })
    const body = crypto.randomBytes(10_000)
    const { digest } = await cache.put(body)
    const f = await cache.localFile(digest)
    fs.rmSync(f!.path)
    assert.deepEqual(await cache.read(digest), body)
    fs.rmSync(f!.path)
    assert.deepEqual(fs.readFileSync((await cache.localFile(digest))!.path), body)
    fs.rmSync(f!.path)
    const o = await openLocalBlob(cache, digest)
    assert.deepEqual(await o!.handle.readFile(), body)
    await o!.handle.close()
    await cache.close()
  })

  it('holds its size limit under a random workload larger than the limit', { timeout: 180_000 }, async () => {
    const dir = tmpDir()
    const LIMIT = 256 * 1024
    const s3store = counted(createS3BlobStore(s3.storageUrl()))
    // blobs up to 48 KiB, 120 of them (about 3 MiB: 12 times the limit)
    const blobs: { digest: string; body: Buffer }[] = []
    let seed = 42
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    for (let i = 0; i < 120; i++) {
      const body = crypto.randomBytes(1 + rand(48 * 1024))
      blobs.push({ digest: (await s3store.put(body)).digest, body })
    }
    const biggest = Math.max(...blobs.map((b) => b.body.length))
    let cache: CachedBlobStore = await createBlobCache(s3store, { dir, maxBytes: LIMIT, maxEntryBytes: 64 * 1024 })
    let hits = 0
    for (let step = 0; step < 300; step++) {
      // skewed: a third of the reads go to the first 10 blobs (hot), the rest anywhere
      const pick = () => blobs[rand(3) === 0 ? rand(10) : rand(blobs.length)]
      const batch = Array.from({ length: 1 + rand(6) }, pick)
      const before = s3store.gets
      await Promise.all(
        batch.map(async (b) => {
          const how = rand(3)
          const got =
            how === 0
              ? await cache.read(b.digest)
              : how === 1
                ? await drain(await cache.get(b.digest))
                : fs.readFileSync((await cache.localFile(b.digest))!.path)
          assert.deepEqual(got, b.body)
        }),
      )
      if (s3store.gets - before < batch.length) hits++
      const { total } = folder(dir)
      assert.ok(total <= LIMIT + biggest, `step ${step}: ${total} bytes on disk, limit ${LIMIT} + one blob`)
      assert.ok(total <= LIMIT, `step ${step}: ${total} bytes on disk, limit ${LIMIT}`)
      const st = cache.cache.stats()
      assert.equal(st.reserved, 0)
      assert.equal(st.bytes, total, 'the index accounts for every byte in the folder')
      if (step === 150) {
        // a restart in the middle keeps the limit, and a lower limit applies at once
        await cache.close()
        cache = await createBlobCache(s3store, { dir, maxBytes: LIMIT / 2, maxEntryBytes: 64 * 1024 })
        assert.ok(folder(dir).total <= LIMIT / 2)
        await cache.close()
        cache = await createBlobCache(s3store, { dir, maxBytes: LIMIT, maxEntryBytes: 64 * 1024 })
      }
    }
    assert.ok(hits > 30, `the cache answered some reads (${hits} batches with hits)`)
    await cache.close()
  })

  it('answers from S3 when its own disk fails (the cache is an optimisation, never an outage)', async () => {
    const dir = tmpDir()
    const cache = await createBlobCache(createS3BlobStore(s3.storageUrl()), { dir, maxBytes: 1 << 20 })
    const body = crypto.randomBytes(20_000)
    const { digest } = await cache.put(body)
    // temp files can no longer be created (ENOTDIR, whoever runs the test)
    fs.rmSync(path.join(dir, 'tmp'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'tmp'), 'not a folder')
    assert.deepEqual(await cache.read(digest), body)
    assert.deepEqual(await drain(await cache.get(digest, { start: 5, end: 9 })), body.subarray(5, 10))
    assert.equal(await cache.localFile(digest), null)
    assert.equal(cache.cache.stats().reserved, 0)
    await cache.close()
  })

  it('streams blobs larger than its largest entry straight from S3, keeping none', async () => {
    const dir = tmpDir()
    const s3store = counted(createS3BlobStore(s3.storageUrl()))
    const cache = await createBlobCache(s3store, { dir, maxBytes: 100_000 })
    const big = crypto.randomBytes(60_000)
    const { digest } = await cache.put(big)
    assert.equal(await cache.localFile(digest), null)
    assert.deepEqual(await cache.read(digest), big)
    assert.deepEqual(await drain(await cache.get(digest, { start: 100, end: 50_099 })), big.subarray(100, 50_100))
    assert.equal(folder(dir).total, 0)
    await cache.close()
  })
})

describe('disk cache settings', () => {
  it('BLOB_CACHE_SIZE takes bytes or K/M/G/T, 0 or off disables, anything else is refused by name', () => {
    assert.equal(byteSize('1073741824'), 1073741824)
    assert.equal(byteSize('512M'), 512 * 1024 ** 2)
    assert.equal(byteSize('4GiB'), 4 * 1024 ** 3)
    assert.equal(byteSize('off'), 0)
    assert.equal(byteSize('0'), 0)
    assert.equal(byteSize('lots'), null)
    const d = loadConfig({ DATA_DIR: '/srv/svc' })
    assert.equal(d.blobCacheBytes, 1024 ** 3)
    assert.equal(d.blobCacheDir, '/srv/svc/blob-cache')
    assert.equal(loadConfig({ BLOB_CACHE_SIZE: 'off' }).blobCacheBytes, 0)
    assert.equal(loadConfig({ BLOB_CACHE_DIR: '/var/cache/svc' }).blobCacheDir, '/var/cache/svc')
    assert.throws(() => loadConfig({ BLOB_CACHE_SIZE: '-5' }), /BLOB_CACHE_SIZE: a size in bytes/)
  })

  it('the server opens the cache with S3 only; operator commands leave it to the server but still remove deleted copies', async () => {
    const dataDir = tmpDir()
    const url = s3.storageUrl()
    const served = await openBlobStore(loadConfig({ DATA_DIR: dataDir, STORAGE_URL: url }), { mode: 'serve' })
    assert.ok('cache' in served)
    const { digest } = await served.put(Buffer.from('cached by the server'))
    const f = await served.localFile(digest)
    assert.ok(f?.path.startsWith(path.join(dataDir, 'blob-cache')))
    const tool = await openBlobStore(loadConfig({ DATA_DIR: dataDir, STORAGE_URL: url }))
    assert.equal('cache' in tool, false)
    assert.equal(await tool.localFile(digest), null)
    await tool.delete(digest)
    assert.equal(fs.existsSync(f!.path), false, 'svc sweep removes the server copy of a blob it deletes')
    await Promise.all([served.close(), tool.close()])
    const off = await openBlobStore(loadConfig({ DATA_DIR: dataDir, STORAGE_URL: url, BLOB_CACHE_SIZE: '0' }), { mode: 'serve' })
    assert.equal('cache' in off, false)
    await off.close()
    const local = await openBlobStore(loadConfig({ DATA_DIR: dataDir }), { mode: 'serve' })
    assert.equal('cache' in local, false)
    const l = await local.put(Buffer.from('on disk'))
    assert.equal((await local.localFile(l.digest))?.path, path.join(dataDir, 'blobs', l.digest.slice(0, 2), l.digest))
    await local.close()
  })
})
