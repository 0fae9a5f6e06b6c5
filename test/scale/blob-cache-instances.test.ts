import fs from 'node:fs'
import path from 'node:path'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { REDIS_URL, needs, startServer, dropSchema, type TestServer } from '../support/server.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { uploadFile } from '../support/hosting.js'
import { sweepBlobs } from '../../src/storage/sweeper.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'
import { clearRedisPrefix } from '../support/redis.js'

const sha = (b: string) => crypto.createHash('sha256').update(b).digest('hex')
const cached = (s: TestServer, digest: string) => path.join(s.dataDir, 'blob-cache', digest.slice(0, 2), digest)

/**
 * Two instances over one PostgreSQL, Redis and S3, each with its own disk cache. A blob
 * deleted by A's sweeper may stay in B's cache folder, but B never serves it: every page
 * is looked up in the database first, and no row references a swept blob
 * (docs/decisions.md, "The disk cache of S3 blobs").
 */
describe('disk caches of two instances over one PostgreSQL, Redis and S3', needs('postgres', 'redis'), () => {
  let a: TestServer
  let b: TestServer
  let s3: TestS3
  const pgSchema = `t_${crypto.randomBytes(5).toString('hex')}`
  const redisPrefix = `svc-test-${crypto.randomBytes(5).toString('hex')}:`

  before(async () => {
    s3 = await startS3()
    const env = { REDIS_URL, REDIS_PREFIX: redisPrefix, STORAGE_URL: s3.storageUrl(), BLOB_CACHE_SIZE: '16M' }
    a = await startServer({ engine: 'postgres', pgSchema, keepData: true, env })
    b = await startServer({ engine: 'postgres', pgSchema, keepData: true, env })
  })

  after(async () => {
    await Promise.allSettled([a?.close(), b?.close()])
    for (const s of [a, b]) if (s) fs.rmSync(s.dataDir, { recursive: true, force: true })
    await dropSchema(pgSchema)
    await s3?.close()
    await clearRedisPrefix(REDIS_URL, redisPrefix)
  })

  it('replaced and deleted content is never served by the other instance from its cache', async () => {
    const u = await a.user()
    const url = `/${u.username}/page.html`
    const v1 = `<!doctype html><title>v1</title><p>${crypto.randomUUID()}</p>`
    assert.equal((await uploadFile(a, u, 'page.html', v1)).status, 200)
    assert.equal((await b.get(url)).text, v1)
    assert.equal(fs.existsSync(cached(b, sha(v1))), true, 'B keeps a copy')

    const v2 = `<!doctype html><title>v2</title><p>${crypto.randomUUID()}</p>`
    assert.equal((await uploadFile(a, u, 'page.html', v2)).status, 200)
    for (let i = 0; i < 3; i++) for (const s of [b, a]) assert.equal((await s.get(url)).text, v2)

    assert.equal((await a.request('DELETE', '/svc_api/files/page.html', { key: u.key })).status, 200)
    for (const s of [b, a]) assert.equal((await s.get(url)).status, 404)

    // A's sweeper deletes both blobs from the bucket and its own copies; B's copy of v1 stays
    // on its disk (B is not told) and is unreachable: no row references it
    await new Promise((r) => setTimeout(r, 1100)) // S3 keeps whole seconds
    await sweepBlobs(a.deps.db, a.deps.blobs, BLOB_COLUMNS, 0)
    assert.equal(await a.deps.blobs.exists(sha(v1)), false)
    assert.equal(fs.existsSync(cached(a, sha(v2))), false)
    assert.equal(fs.existsSync(cached(b, sha(v1))), true)
    for (const s of [b, a]) assert.equal((await s.get(url)).status, 404)

    // the same bytes published again reference the same digest: B's copy is exactly them
    assert.equal((await uploadFile(a, u, 'again.html', v1)).status, 200)
    assert.equal((await b.get(`/${u.username}/again.html`)).text, v1)
    assert.equal((await b.get(url)).status, 404)
  })
})
