import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HTML, batchUpload } from '../support/hosting.js'

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+08:00$/

/** GET /api/folders: the caller's folder projects (beyond the spec; the folder page lists them). */
for (const engine of ENGINES) {
  describe(`folder project list [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine })
    })
    after(() => s.close())

    it("lists the caller's projects with state, file count and site URL; never another user's", async () => {
      const u = await s.user()
      const other = await s.user()
      const empty = await s.get('/api/folders', { key: u.key })
      assert.equal(empty.status, 200)
      assert.deepEqual(empty.json, { success: true, folders: [] })
      assert.equal(
        (
          await batchUpload(s, { key: u.key }, 'alpha', [
            { filename: 'index.html', data: HTML('a') },
            { filename: 'css/a.css', data: 'a{}' },
          ])
        ).status,
        200,
      )
      assert.equal((await batchUpload(s, { key: u.key }, 'beta', [{ filename: 'x.txt', data: 'x' }])).status, 200)
      assert.equal((await batchUpload(s, { key: other.key }, 'secret', [{ filename: 'index.html', data: HTML('s') }])).status, 200)
      assert.equal((await s.post('/api/folders/alpha/publish', { key: u.key })).status, 200)

      const r = await s.get('/api/folders', { key: u.key })
      assert.equal(r.status, 200)
      assert.ok(r.header('x-ratelimit-limit'))
      const byName = Object.fromEntries(r.json.folders.map((f: any) => [f.name, f]))
      assert.deepEqual(Object.keys(byName).sort(), ['alpha', 'beta'])
      assert.deepEqual(Object.keys(byName.alpha).sort(), [
        'file_count',
        'is_published',
        'name',
        'origin_url',
        'site_url',
        'updated_at',
        'user_site',
        'website_url',
      ])
      assert.equal(byName.alpha.is_published, true)
      assert.equal(byName.alpha.file_count, 2)
      assert.equal(byName.alpha.website_url, `${s.url}/${u.username}/alpha/`)
      assert.equal(byName.beta.is_published, false)
      assert.equal(byName.beta.file_count, 1)
      assert.match(byName.beta.updated_at, ISO)
      // the session works too; no credentials: 1001
      const cookie = await s.login(u.username, u.password)
      assert.equal((await s.get('/api/folders', { cookie })).json.folders.length, 2)
      assert.equal((await s.get('/api/folders')).json.error_code, 1001)
      // unpublishing shows in the list
      assert.equal((await s.post('/api/folders/alpha/unpublish', { key: u.key })).status, 200)
      const after = await s.get('/api/folders', { key: u.key })
      assert.equal(after.json.folders.find((f: any) => f.name === 'alpha').is_published, false)
    })

    it('a file delete of a project not live counts as a change, as an upload does', async () => {
      const u = await s.user()
      for (const name of ['older', 'newer']) {
        assert.equal(
          (
            await batchUpload(s, { key: u.key }, name, [
              { filename: 'index.html', data: HTML(name) },
              { filename: 'a.txt', data: 'a' },
            ])
          ).status,
          200,
        )
        await new Promise((r) => setTimeout(r, 5))
      }
      const names = async () => (await s.get('/api/folders', { key: u.key })).json.folders.map((f: any) => f.name)
      assert.deepEqual(await names(), ['newer', 'older'])
      const before = (await s.get('/api/folders', { key: u.key })).json.folders[1].updated_at
      assert.equal((await s.request('DELETE', '/api/folders/older/file/a.txt', { key: u.key })).status, 200)
      assert.deepEqual(await names(), ['older', 'newer'])
      const older = (await s.get('/api/folders', { key: u.key })).json.folders[0]
      assert.ok(older.updated_at > before, `${older.updated_at} after ${before}`)
      assert.equal(older.file_count, 1)
    })
  })
}
