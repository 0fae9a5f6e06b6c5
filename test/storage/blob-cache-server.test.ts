import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { ENGINES, startServer, dropSchema, type TestServer } from '../support/server.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js'
import { uploadFile } from '../support/hosting.js'
import { sweepBlobs } from '../../src/storage/sweeper.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'

const sha = (b: string | Buffer) => crypto.createHash('sha256').update(b).digest('hex')
const cached = (s: TestServer, digest: string) => path.join(s.dataDir, 'blob-cache', digest.slice(0, 2), digest)

/**
 * The disk cache inside a real server over HTTP, with S3 storage reached through a relay the
 * test can cut: pages keep being served from the cache after a restart with the bucket
 * down, and replaced or deleted content is never served from it.
 */
for (const engine of ENGINES) {
  describe(`disk cache of S3 blobs in the server [${engine}]`, () => {
    let s3: TestS3
    let relay: TcpProxy
    let s: TestServer
    let dataDir: string
    let env: Record<string, string>
    const pgSchema = `t_${crypto.randomBytes(5).toString('hex')}`

    before(async () => {
      s3 = await startS3()
      relay = await startTcpProxy(Number(new URL(s3.endpoint).port))
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-'))
      env = { STORAGE_URL: `${s3.storageUrl(undefined, `http://127.0.0.1:${relay.port}`)}&connectTimeoutMs=300`, BLOB_CACHE_SIZE: '16M' }
      s = await startServer({ engine, dataDir, pgSchema, keepData: true, env })
    })
    after(async () => {
      await s?.close()
      await relay?.close()
      await s3?.close()
      if (engine === 'postgres') await dropSchema(pgSchema)
      fs.rmSync(dataDir, { recursive: true, force: true })
    })

    it('serves pages from the cache after a restart with the bucket unreachable; replaced and deleted content never', async () => {
      const u = await s.user()
      const v1 = `<!doctype html><title>v1</title><p>${crypto.randomUUID()}</p>`
      // above the host's in-memory size: streamed from the store
      const big = Buffer.from(`<!doctype html><title>big</title><p>${crypto.randomBytes(1536 * 1024).toString('hex')}</p>`)
      assert.equal((await uploadFile(s, u, 'page.html', v1)).status, 200)
      assert.equal((await uploadFile(s, u, 'big.html', big)).status, 200)
      assert.equal((await s.get(`/${u.username}/page.html`)).text, v1)
      assert.equal((await s.get(`/${u.username}/big.html`)).body.length, big.length)
      assert.equal(fs.readFileSync(cached(s, sha(v1)), 'utf8'), v1)
      assert.deepEqual(fs.readFileSync(cached(s, sha(big))), big)

      // restart; the bucket is out of reach: both are served from the local copies
      await s.close()
      await relay.cut()
      s = await startServer({ engine, dataDir, pgSchema, keepData: true, env })
      const page = await s.get(`/${u.username}/page.html`)
      assert.equal(page.status, 200)
      assert.equal(page.text, v1)
      const part = await s.get(`/${u.username}/big.html`, { headers: { range: 'bytes=1000-1999' } })
      assert.equal(part.status, 206)
      assert.deepEqual(part.body, big.subarray(1000, 2000))
      const metrics = await s.get('/metrics')
      assert.match(metrics.text, /svc_blob_cache_lookups_total\{result="hit"\} [1-9]/)
      assert.match(metrics.text, /svc_blob_cache_bytes [1-9]/)
      await relay.restore()

      // replaced: the new content is served at once, never the cached old copy
      const v2 = `<!doctype html><title>v2</title><p>${crypto.randomUUID()}</p>`
      assert.equal((await uploadFile(s, u, 'page.html', v2)).status, 200)
      for (let i = 0; i < 3; i++) assert.equal((await s.get(`/${u.username}/page.html`)).text, v2)
      assert.equal(fs.existsSync(cached(s, sha(v2))), true)

      // deleted: 404 while the copy is still on disk, and the sweep removes the copies
      assert.equal((await s.request('DELETE', '/svc_api/files/page.html', { key: u.key })).status, 200)
      assert.equal((await s.get(`/${u.username}/page.html`)).status, 404)
      await new Promise((r) => setTimeout(r, 1100)) // S3 keeps whole seconds
      const r = await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0)
      assert.ok(r.deleted >= 2)
      for (const d of [sha(v1), sha(v2)]) assert.equal(fs.existsSync(cached(s, d)), false, 'the sweep removed the cached copy')
      assert.equal(fs.existsSync(cached(s, sha(big))), true, 'a referenced blob stays cached')
      assert.equal((await s.get(`/${u.username}/page.html`)).status, 404)
    })
  })
}
