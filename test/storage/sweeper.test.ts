import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { startServer, type TestServer } from '../support/server.js'
import type { BlobStore } from '../../src/storage/blob-store.js'
import { sweepBlobs } from '../../src/storage/sweeper.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'

describe('blob sweeper (real SQLite and disk)', () => {
  let s: TestServer
  before(async () => {
    s = await startServer()
  })
  after(() => s.close())

  const blobFile = (digest: string) => path.join(s.dataDir, 'blobs', digest.slice(0, 2), digest)
  const age = (digest: string, ms: number) => {
    const t = new Date(Date.now() - ms)
    fs.utimesSync(blobFile(digest), t, t)
  }

  it('spares an unreferenced old blob that an upload of the same bytes touched after the listing, and deletes one nobody touched', async () => {
    const reused = Buffer.from(`orphan, then uploaded again ${crypto.randomUUID()}`)
    const orphan = Buffer.from(`orphan for good ${crypto.randomUUID()}`)
    const a = await s.deps.blobs.put(reused)
    const b = await s.deps.blobs.put(orphan)
    age(a.digest, 2 * 3600_000)
    age(b.digest, 2 * 3600_000)
    // an upload of `reused` lands after the sweeper listed the blobs (and before its row commits,
    // so the sweeper's reference query cannot see it): the store touches the existing blob
    const racing: BlobStore = {
      ...s.deps.blobs,
      async *list() {
        for await (const e of s.deps.blobs.list()) yield e
        await s.deps.blobs.put(reused)
      },
    }
    const r = await sweepBlobs(s.deps.db, racing, BLOB_COLUMNS, 3600_000)
    assert.equal(await s.deps.blobs.exists(a.digest), true, 'the touched blob is kept for the upload about to reference it')
    assert.deepEqual(await s.deps.blobs.read(a.digest), reused)
    assert.equal(await s.deps.blobs.exists(b.digest), false, 'the untouched orphan goes')
    assert.ok(r.deleted >= 1)
    assert.equal(await s.deps.blobs.modifiedMs(b.digest), null)
  })
})
