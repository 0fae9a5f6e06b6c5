import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import os from 'node:os'
import { AppError } from '../../src/errors/app-error.js'
import { createLocalBlobStore, SMALL_BATCH } from '../../src/storage/local.js'
import { startServer, type TestServer } from '../support/server.js'

// The local driver's batch write (temp files, one filesystem sync, renames, one sync) must reach
// the features through every wrapper the app puts around the store (metrics, blocklist): a
// wrapper that drops it sends an archive deploy back to one put and its fsyncs per file.
describe('the app blob store keeps the driver batch write', () => {
  let s: TestServer
  before(async () => {
    s = await startServer({ engine: 'sqlite' })
  })
  after(() => s.close())

  it('has putBatch, which stores every body whole under its digest', async () => {
    assert.equal(typeof s.deps.blobs.putBatch, 'function', 'putBatch lost in a wrapper')
    const bodies = Array.from({ length: 50 }, (_, i) => Buffer.from(`<p>batch ${i} ${crypto.randomUUID()}</p>`))
    const stored = await s.deps.blobs.putBatch!(bodies)
    assert.equal(stored.length, bodies.length)
    for (const [i, b] of bodies.entries()) {
      assert.equal(stored[i].digest, crypto.createHash('sha256').update(b).digest('hex'))
      assert.equal(stored[i].size, b.length)
      assert.deepEqual(await s.deps.blobs.read(stored[i].digest), b)
    }
    assert.deepEqual(fs.readdirSync(path.join(s.dataDir, 'blobs', 'tmp')), [], 'no temp file left')
  })

  it('counts the batch in the stored-bytes metric', async () => {
    const before = await s.get('/metrics')
    const total = (t: string) => Number(/^svc_blob_bytes_stored_total\{driver="local"\} (\d+)/m.exec(t)?.[1] ?? 0)
    const body = Buffer.from(`<p>${crypto.randomUUID()}</p>`)
    await s.deps.blobs.putBatch!([body])
    const after = await s.get('/metrics')
    assert.equal(total(after.text) - total(before.text), body.length)
  })
})

// How a batch is made durable: a small one by an fdatasync per new file and an fsync per
// folder, with no process spawned; a large one by syncfs(2) (`sync -f`), twice. The driver
// takes both as options, so the test sees which ran and can make one fail.
describe('the local driver makes a small batch durable without spawning', () => {
  let root: string
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-put-batch-'))
  })
  after(() => fs.rmSync(root, { recursive: true, force: true }))

  const bodies = (n: number) => Array.from({ length: n }, (_, i) => Buffer.from(`<p>${i} ${crypto.randomUUID()}</p>`))
  /** A store in its own folder whose syncfs and descriptor syncs are counted (and may fail). */
  const observed = (o: { failFd?: (what: 'file' | 'dir', n: number) => boolean; syncFs?: (n: number) => boolean } = {}) => {
    const seen = { syncFs: 0, file: 0, dir: 0 }
    const dir = fs.mkdtempSync(path.join(root, 's-'))
    const blobs = createLocalBlobStore(dir, {
      syncFs: async () => {
        const n = ++seen.syncFs
        return o.syncFs ? o.syncFs(n) : true
      },
      syncFd: async (fd, what) => {
        const n = ++seen[what]
        if (o.failFd?.(what, n)) throw Object.assign(new Error('EIO: i/o error, fdatasync (injected)'), { code: 'EIO' })
        await new Promise<void>((resolve, reject) => (what === 'file' ? fs.fdatasync : fs.fsync)(fd, (e) => (e ? reject(e) : resolve())))
      },
    })
    return { blobs, seen, dir }
  }
  const refusal = async (p: Promise<unknown>) => {
    const e = await p.then(
      () => assert.fail('the batch was acknowledged'),
      (err: unknown) => err,
    )
    assert.ok(e instanceof AppError, String(e))
    return { key: e.key, status: e.status }
  }
  const tmpLeft = (dir: string) => fs.readdirSync(path.join(dir, 'tmp'))

  it(`a batch of up to ${SMALL_BATCH} blobs: an fdatasync per new file and an fsync per folder, no sync -f`, async () => {
    const { blobs, seen, dir } = observed()
    const small = bodies(SMALL_BATCH)
    const stored = await blobs.putBatch!(small)
    assert.equal(seen.syncFs, 0, 'no process spawned')
    assert.equal(seen.file, SMALL_BATCH)
    const folders = new Set(stored.map((b) => b.digest.slice(0, 2)))
    // each blob's folder, and the root once for the folders it made
    assert.equal(seen.dir, folders.size + 1)
    for (const [i, b] of small.entries()) assert.deepEqual(await blobs.read(stored[i].digest), b)
    assert.deepEqual(tmpLeft(dir), [])
    // the same bytes again: nothing new to write, nothing to sync
    await blobs.putBatch!(small.slice(0, 3))
    assert.deepEqual([seen.syncFs, seen.file], [0, SMALL_BATCH])
  })

  it('a larger batch takes one syncfs before the renames and one after', async () => {
    const { blobs, seen } = observed()
    const big = bodies(SMALL_BATCH + 1)
    const stored = await blobs.putBatch!(big)
    assert.deepEqual(seen, { syncFs: 2, file: 0, dir: 0 })
    assert.deepEqual(await blobs.read(stored[SMALL_BATCH].digest), big[SMALL_BATCH])
  })

  it('the choice counts the new blobs: a large request that writes few syncs file by file', async () => {
    const { blobs, seen, dir } = observed()
    const old = bodies(5 * SMALL_BATCH)
    await blobs.putBatch!(old)
    assert.deepEqual(seen, { syncFs: 2, file: 0, dir: 0 })
    // a redeploy of every file with three changed: three new blobs, synced each
    const fresh = bodies(3)
    const redeploy = [...old.slice(3), ...fresh]
    const stored = await blobs.putBatch!(redeploy)
    assert.equal(seen.syncFs, 2, 'no sync -f for three new blobs')
    assert.equal(seen.file, 3)
    for (const [i, b] of redeploy.entries()) assert.deepEqual(await blobs.read(stored[i].digest), b)
    // every blob already stored: nothing to write, nothing to sync
    const dirs = seen.dir
    await blobs.putBatch!(old.slice(0, SMALL_BATCH + 36))
    assert.deepEqual(seen, { syncFs: 2, file: 3, dir: dirs })
    // exactly SMALL_BATCH new among stored ones: still file by file
    const edge = bodies(SMALL_BATCH)
    await blobs.putBatch!([...old.slice(0, 10), ...edge])
    assert.deepEqual([seen.syncFs, seen.file], [2, 3 + SMALL_BATCH])
    // more new ones than that, among stored ones: syncfs, twice
    const many = bodies(SMALL_BATCH + 1)
    const last = await blobs.putBatch!([...old.slice(0, 10), ...many])
    assert.deepEqual([seen.syncFs, seen.file], [4, 3 + SMALL_BATCH])
    for (const [i, b] of many.entries()) assert.deepEqual(await blobs.read(last[10 + i].digest), b)
    assert.deepEqual(tmpLeft(dir), [])
  })

  it('a failed fdatasync or folder fsync fails a small batch with the error a failed sync -f gives', async () => {
    // the large batch's error: its second syncfs (the names) fails
    const large = observed({ syncFs: (n) => n < 2 })
    const expected = await refusal(large.blobs.putBatch!(bodies(SMALL_BATCH + 1)))
    assert.deepEqual(expected, { key: 'STORAGE_UNAVAILABLE', status: 503 })
    for (const what of ['file', 'dir'] as const) {
      const { blobs, dir } = observed({ failFd: (w, n) => w === what && n === 2 })
      const batch = bodies(5)
      assert.deepEqual(await refusal(blobs.putBatch!(batch)), expected, what)
      assert.deepEqual(tmpLeft(dir), [], `${what}: no temp file left`)
      // a file's sync failed before any rename: none of the batch is visible
      if (what === 'file') for (const b of batch) assert.equal(await blobs.exists(crypto.createHash('sha256').update(b).digest('hex')), false)
    }
  })

  it('without sync -f, a large batch is stored one put at a time', async () => {
    const { blobs, seen } = observed({ syncFs: () => false })
    const big = bodies(SMALL_BATCH + 1)
    const stored = await blobs.putBatch!(big)
    assert.equal(seen.syncFs, 1)
    for (const [i, b] of big.entries()) assert.deepEqual(await blobs.read(stored[i].digest), b)
  })
})
