import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { Readable } from 'node:stream'
import { createLocalBlobStore } from '../../src/storage/local.js'
import type { BlobStore } from '../../src/storage/blob-store.js'
import { AppError } from '../../src/errors/app-error.js'

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex')
const collect = async (r: Readable) => {
  const chunks: Buffer[] = []
  for await (const c of r) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}
const files = (dir: string): string[] =>
  fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath ?? (e as any).path, e.name))

describe('local blob store', () => {
  let root: string
  let blobs: BlobStore
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-blobs-'))
    blobs = createLocalBlobStore(root)
  })
  after(() => fs.rmSync(root, { recursive: true, force: true }))

  it('a put while a sweep holds the blob aside stores its own copy; a blob left aside by a crash is put back by cleanTemp', async () => {
    const data = Buffer.from(`taken aside ${crypto.randomUUID()}`)
    const { digest } = await blobs.put(data)
    const file = path.join(root, digest.slice(0, 2), digest)
    // as BlobStore.delete(digest, cutoff) leaves it between its rename and its decision
    const aside = path.join(root, 'tmp', `swept-${digest}-0123456789ab`)
    fs.renameSync(file, aside)
    assert.deepEqual(await blobs.put(data), { digest, size: data.length })
    assert.deepEqual(fs.readFileSync(file), data)
    // a crash there: the next cleanTemp puts the file back, whatever its age
    assert.equal(await blobs.cleanTemp(3600_000), 0)
    assert.equal(fs.existsSync(aside), false)
    assert.deepEqual(await blobs.read(digest), data)
    fs.renameSync(file, aside)
    await blobs.cleanTemp(0)
    assert.deepEqual(fs.readFileSync(file), data, 'a blob held aside is never removed as a temp file')
  })

  it('stores a stream under its SHA-256, reads it back whole and by range', async () => {
    const data = crypto.randomBytes(300_000)
    const stored = await blobs.put(Readable.from([data.subarray(0, 1000), data.subarray(1000)]))
    assert.deepEqual(stored, { digest: sha(data), size: data.length })
    // one folder level: ab/<sha256>
    assert.ok(fs.existsSync(path.join(root, stored.digest.slice(0, 2), stored.digest)))
    assert.deepEqual(await collect(await blobs.get(stored.digest)), data)
    assert.deepEqual(await collect(await blobs.get(stored.digest, { start: 10, end: 19 })), data.subarray(10, 20))
    assert.deepEqual(await blobs.read(stored.digest), data)
    assert.equal(await blobs.exists(stored.digest), true)
  })

  it('reads, lists, keeps and deletes blobs of the legacy layout (ab/cd/<sha256>); writes only the new one', async () => {
    const old = Buffer.from(`made by an older version ${crypto.randomUUID()}`)
    const d = sha(old)
    const legacy = path.join(root, d.slice(0, 2), d.slice(2, 4), d)
    fs.mkdirSync(path.dirname(legacy), { recursive: true })
    fs.writeFileSync(legacy, old)
    const past = new Date(Date.now() - 3_600_000)
    fs.utimesSync(legacy, past, past)
    assert.equal(await blobs.exists(d), true)
    assert.deepEqual(await blobs.read(d), old)
    assert.deepEqual(await collect(await blobs.get(d, { start: 0, end: 4 })), old.subarray(0, 5))
    assert.deepEqual(await blobs.localFile(d), { path: legacy, size: old.length })
    assert.ok(Math.abs((await blobs.modifiedMs(d))! - past.getTime()) < 1)
    const listed: string[] = []
    for await (const b of blobs.list()) listed.push(b.digest)
    assert.ok(listed.includes(d))
    // stored again, one by one or in a batch: the legacy file stays the only copy, its time refreshed
    assert.deepEqual(await blobs.put(old), { digest: d, size: old.length })
    assert.deepEqual(await blobs.putBatch!([old]), [{ digest: d, size: old.length }])
    assert.equal(fs.existsSync(path.join(root, d.slice(0, 2), d)), false)
    assert.ok((await blobs.modifiedMs(d))! > past.getTime())
    await blobs.delete(d)
    assert.equal(fs.existsSync(legacy), false)
    assert.equal(await blobs.exists(d), false)
    // a new blob next to legacy folders: both listed once
    const fresh = await blobs.put(Buffer.from(`new ${crypto.randomUUID()}`))
    const all: string[] = []
    for await (const b of blobs.list()) all.push(b.digest)
    assert.equal(all.filter((x) => x === fresh.digest).length, 1)
  })

  it('stores equal content once', async () => {
    const data = Buffer.from('same bytes')
    const a = await blobs.put(data)
    const b = await blobs.put(Readable.from([data]))
    assert.equal(a.digest, b.digest)
    assert.equal(files(root).filter((f) => f.endsWith(a.digest)).length, 1)
  })

  it('stores a batch: blobs it already holds are kept (same file, time refreshed), new ones written once', async () => {
    const held = Buffer.from(`held ${crypto.randomUUID()}`)
    const first = await blobs.put(held)
    const heldFile = path.join(root, first.digest.slice(0, 2), first.digest)
    const past = new Date(Date.now() - 3_600_000)
    fs.utimesSync(heldFile, past, past)
    const ino = fs.statSync(heldFile).ino
    const fresh = Buffer.from(`fresh ${crypto.randomUUID()}`)
    // the held blob, a new one, and the new one again in the same batch
    const stored = await blobs.putBatch!([held, fresh, fresh])
    assert.deepEqual(stored, [
      { digest: sha(held), size: held.length },
      { digest: sha(fresh), size: fresh.length },
      { digest: sha(fresh), size: fresh.length },
    ])
    const st = fs.statSync(heldFile)
    assert.equal(st.ino, ino, 'the held blob is the same file, not written again')
    assert.ok(st.mtimeMs > past.getTime(), 'its time is refreshed, so a sweep spares it')
    assert.deepEqual(await blobs.read(sha(fresh)), fresh)
    assert.deepEqual(fs.readdirSync(path.join(root, 'tmp')), [], 'no temp file left')
    // a batch of held blobs only: nothing to write, nothing left
    assert.deepEqual(await blobs.putBatch!([held, fresh]), [stored[0], stored[1]])
    assert.deepEqual(fs.readdirSync(path.join(root, 'tmp')), [])
  })

  it('refuses a body over maxBytes and leaves no file behind', async () => {
    const before = files(root).length
    await assert.rejects(
      blobs.put(Readable.from([Buffer.alloc(600), Buffer.alloc(600)]), { maxBytes: 1000 }),
      (e: unknown) => e instanceof AppError && e.key === 'FILE_TOO_LARGE',
    )
    await assert.rejects(
      blobs.put(Buffer.alloc(20), { maxBytes: 10, tooLarge: () => new AppError('BODY_TOO_LARGE') }),
      (e: unknown) => e instanceof AppError && e.key === 'BODY_TOO_LARGE',
    )
    assert.equal(files(root).length, before)
  })

  it('turns a failing source into 1503 and leaves no temp file', async () => {
    const before = files(root).length
    const failing = new Readable({
      read() {
        this.destroy(Object.assign(new Error('EIO'), { code: 'EIO' }))
      },
    })
    await assert.rejects(blobs.put(failing), (e: unknown) => e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE')
    assert.equal(files(root).length, before)
  })

  it('lists, deletes, and cleans stale temp files', async () => {
    const { digest } = await blobs.put(Buffer.from('to delete'))
    const listed: string[] = []
    for await (const b of blobs.list()) listed.push(b.digest)
    assert.ok(listed.includes(digest))
    await blobs.delete(digest)
    assert.equal(await blobs.exists(digest), false)
    await blobs.delete(digest) // idempotent
    fs.writeFileSync(path.join(root, 'tmp', 'leftover'), 'x')
    const old = new Date(Date.now() - 7200_000)
    fs.utimesSync(path.join(root, 'tmp', 'leftover'), old, old)
    assert.equal(await blobs.cleanTemp(3600_000), 1)
    assert.equal(fs.readdirSync(path.join(root, 'tmp')).length, 0)
  })

  it('rejects digests that are not SHA-256 hex (no path ever reaches the filesystem)', async () => {
    await assert.rejects(blobs.get('../../etc/passwd'))
    await assert.rejects(async () => blobs.exists('..%2f..'))
  })
})
