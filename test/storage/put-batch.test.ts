import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
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
