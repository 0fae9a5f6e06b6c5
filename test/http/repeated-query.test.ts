import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HTML, uploadFile } from '../support/hosting.js'
import { expectError } from '../support/errors.js'

// A list URL built by appending `&page=N` to one that already names a page (a pager loop's
// usual bug) repeats the parameter. The last value counts, as on the public links; a bad
// last value is refused with the parameter's own code (1107 page, 1108 per_page).
for (const engine of ENGINES) {
  describe(`repeated query parameters of the list routes [${engine}]`, () => {
    let s: TestServer
    let key: string
    let formId: string
    before(async () => {
      s = await startServer({ engine })
      ;({ key } = await s.user())
      for (const n of ['a', 'b', 'c']) assert.equal((await uploadFile(s, { key }, `${n}.html`, HTML(n))).status, 200)
      for (const n of ['k1', 'k2', 'k3']) assert.equal((await s.post('/svc_api/data/store', { key, json: { key: n, value: 1 } })).status, 200)
      const f = await s.post('/svc_api/forms/create', { key, json: { form_name: 'f', fields_config: [{ name: 'm' }] } })
      formId = f.json.data.id
      for (const m of ['1', '2', '3']) assert.equal((await s.post(`/api/forms/submit/${f.json.data.form_slug}`, { json: { m } })).status, 200)
    })
    after(() => s?.close())

    for (const [name, path, items] of [
      ['file list', '/svc_api/files', 'files'],
      ['store list', '/svc_api/data/list', 'items'],
      ['form submissions', '/svc_api/forms/data/{form}', 'submissions'],
    ] as const) {
      it(`${name}: the last page and per_page count; a bad last one is 1107 / 1108`, async () => {
        const p = path.replace('{form}', () => formId)
        const r = await s.get(`${p}?per_page=5&per_page=1&page=1&page=2`, { key })
        assert.equal(r.status, 200, r.text)
        assert.equal(r.json.data.page, 2)
        assert.equal(r.json.data.per_page, 1)
        assert.equal(r.json.data.total_pages, 3)
        assert.equal(r.json.data[items].length, 1)
        expectError(await s.get(`${p}?page=2&page=0`, { key }), 400, 1107)
        expectError(await s.get(`${p}?per_page=5&per_page=101`, { key }), 400, 1108)
      })
    }

    it('file list: the last search and is_featured count', async () => {
      const r = await s.get('/svc_api/files?search=a.html&search=b.html&is_featured=true&is_featured=false', { key })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(
        r.json.data.files.map((f: { file_name: string }) => f.file_name),
        ['b.html'],
      )
    })
  })
}
