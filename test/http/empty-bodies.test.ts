import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HTML, batchUpload } from '../support/hosting.js'
import { expectError } from '../support/errors.js'

// Clients that set `Content-Type: application/json` on every request (a requests.Session's or
// a fetch wrapper's default headers) send it with an empty body on the routes that take none:
// publish, unpublish, the DELETEs. An empty body is no body, whatever its Content-Type says.
const JSON_EMPTY = { body: '', headers: { 'content-type': 'application/json' } }

for (const engine of ENGINES) {
  describe(`empty bodies with a JSON Content-Type [${engine}]`, () => {
    let s: TestServer
    let key: string
    before(async () => {
      s = await startServer({ engine })
      ;({ key } = await s.user())
    })
    after(() => s?.close())

    it('publish and unpublish take no body: an empty JSON one is none', async () => {
      assert.equal((await batchUpload(s, { key }, 'site', [{ filename: 'index.html', data: HTML('site') }])).status, 200)
      const pub = await s.post('/api/folders/site/publish', { key, ...JSON_EMPTY })
      assert.equal(pub.status, 200, pub.text)
      assert.equal(pub.json.is_published, true)
      assert.equal(pub.json.already_published, false)
      const charset = await s.post('/api/folders/site/publish', { key, body: '', headers: { 'content-type': 'application/json; charset=utf-8' } })
      assert.equal(charset.status, 200, charset.text)
      assert.equal(charset.json.already_published, true)
      const un = await s.post('/api/folders/site/unpublish', { key, ...JSON_EMPTY })
      assert.equal(un.status, 200, un.text)
      assert.equal(un.json.is_published, false)
    })

    it('DELETE with an empty JSON body deletes', async () => {
      assert.equal((await s.post('/svc_api/data/store', { key, json: { key: 'gone', value: 1 } })).status, 200)
      const del = await s.request('DELETE', '/svc_api/data/delete?key=gone', { key, ...JSON_EMPTY })
      assert.equal(del.status, 200, del.text)
      expectError(await s.get('/svc_api/data/get?key=gone', { key }), 404, 1604)

      const form = await s.post('/svc_api/forms/create', { key, json: { form_name: 'f' } })
      assert.equal(form.status, 200, form.text)
      const delForm = await s.request('DELETE', `/svc_api/forms/delete/${form.json.data.id}`, { key, ...JSON_EMPTY })
      assert.equal(delForm.status, 200, delForm.text)
    })

    it('a route that needs a body still refuses an empty one, and stores nothing', async () => {
      const before = (await s.get('/svc_api/data/list', { key })).json.data.total
      const r = await s.post('/svc_api/data/store', { key, ...JSON_EMPTY })
      assert.equal(r.status, 400, r.text)
      assert.equal(r.json.success, false)
      assert.ok([1106, 1113].includes(r.json.error_code), r.text)
      const list = await s.get('/svc_api/data/list', { key })
      assert.equal(list.json.data.total, before)
      // a body that is not empty is parsed as JSON, as before
      expectError(await s.request('DELETE', '/svc_api/data/delete?key=x', { key, body: '{', headers: { 'content-type': 'application/json' } }), 400, 1113)
    })
  })
}
