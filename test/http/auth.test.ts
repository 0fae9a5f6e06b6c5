import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { expectError } from '../support/errors.js'

for (const engine of ENGINES) {
  describe(`authentication [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      s = await startServer({ engine })
      alice = await s.user()
    })
    after(() => s.close())

    it('accepts a valid API key and shows the rate-limit headers of an authenticated account', async () => {
      const r = await s.get('/svc_api/me', { key: alice.key })
      assert.equal(r.status, 200)
      assert.equal(r.json.data.username, alice.username)
      assert.equal(r.header('x-ratelimit-window'), 'minute')
      assert.equal(r.header('x-ratelimit-limit'), '60')
      assert.equal(r.header('x-ratelimit-remaining'), '59')
    })

    describe('answers 1001 without credentials and 1002 for a malformed, unknown or query-string key', () => {
      it('no credentials: 401 / 1001', async () => {
        const none = await s.get('/svc_api/me')
        expectError(none, 401, 1001)
        assert.equal(none.json.error_type, 'AUTH_ERROR')
      })
      for (const [label, k] of [
        ['a malformed key', 'short'],
        ['an unknown key', 'svc_' + 'x'.repeat(60)],
      ]) {
        it(`${label}: 401 / 1002`, async () => expectError(await s.get('/svc_api/me', { key: k }), 401, 1002))
      }
      it('a key in the query string is not read: 1001', async () => {
        const q = await s.get(`/svc_api/me?key=${alice.key}&api_key=${alice.key}`)
        assert.equal(q.json.error_code, 1001)
      })
    })

    it('answers 1116 on plain HTTP API paths before any auth error, and redirects pages', async () => {
      const r = await s.get('/svc_api/me', { plain: true })
      assert.equal(r.status, 400)
      assert.equal(r.json.error_code, 1116)
      assert.ok(r.header('x-ratelimit-limit'))
      const p = await s.get('/someone/page.html', { plain: true })
      assert.equal(p.status, 301)
      assert.match(p.header('location')!, /^https:\/\//)
    })

    it('logs in with a form post and sets a Secure HttpOnly SameSite session cookie', async () => {
      const r = await s.post('/login', { form: { username: alice.username, password: alice.password }, headers: { accept: 'application/json' } })
      assert.equal(r.status, 200)
      const sc = r.header('set-cookie')!
      assert.match(sc, /^session=[A-Za-z0-9_-]{43};/)
      for (const attr of ['HttpOnly', 'Secure', 'SameSite=Lax', 'Path=/']) assert.ok(sc.includes(attr), attr)
      assert.ok(!/domain=/i.test(sc))
      const cookie = sc.split(';')[0]
      const me = await s.get('/svc_api/me', { cookie })
      assert.equal(me.json.data.via, 'session')
      const out = await s.post('/logout', { cookie, headers: { accept: 'application/json' } })
      assert.equal(out.status, 200)
      const after = await s.get('/svc_api/me', { cookie })
      assert.equal(after.status, 401)
    })

    it('gives the same answer to an unknown user and a wrong password', async () => {
      const a = await s.post('/login', { form: { username: 'nobody-here', password: 'whatever1' }, headers: { accept: 'application/json' } })
      const b = await s.post('/login', { form: { username: alice.username, password: 'wrong-password' }, headers: { accept: 'application/json' } })
      assert.equal(a.status, 401)
      assert.deepEqual(a.json, b.json)
    })

    it('answers unknown API routes with 404 in format A', async () => {
      for (const p of ['/svc_api/nope', '/api/nope/deeper', '/api']) {
        const r = await s.get(p)
        assert.equal(r.status, 404)
        assert.equal(r.json.error_type, 'NOT_FOUND')
        assert.equal(r.json.success, false)
      }
    })
  })
}
