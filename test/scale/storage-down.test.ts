import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, multipart, type TestServer } from '../support/server.js'
import { closedPort } from '../support/ports.js'

for (const engine of ENGINES) {
  describe(`S3 storage unreachable [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      const port = await closedPort()
      s = await startServer({ engine, env: { STORAGE_URL: `s3://svc?endpoint=http://127.0.0.1:${port}&forcePathStyle=true&accessKeyId=a&secretAccessKey=b` } })
    })
    after(() => s.close())

    it('an upload answers 503 / 1503 fast and leaves no record', async () => {
      const u = await s.user()
      const mp = multipart([{ name: 'file', filename: 'page.html', type: 'text/html', data: '<!doctype html><p>x</p>' }])
      const t0 = Date.now()
      const r = await s.post('/svc_api/upload', { key: u.key, body: mp.body, headers: { 'content-type': mp.contentType } })
      assert.equal(r.status, 503, r.text)
      assert.equal(r.json.success, false)
      assert.equal(r.json.error_code, 1503)
      assert.ok(Date.now() - t0 < 5000)
      const list = await s.get('/svc_api/files', { key: u.key })
      assert.equal(list.status, 200)
      assert.equal(list.json.data.total, 0)
      assert.equal((await s.get(`/${u.username}/page.html`)).status, 404)
    })
  })
}
