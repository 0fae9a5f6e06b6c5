import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { expectError } from '../support/errors.js'
import { HIGH_LIMITS } from '../support/hosting.js'

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

    describe('answers a method an existing API path does not take with 405 and Allow (decision 144)', () => {
      const cases: Array<[string, string, string]> = [
        ['DELETE', '/svc_api/data/get?key=k', 'GET, HEAD, OPTIONS'],
        ['POST', '/svc_api/upload/info', 'GET, HEAD'],
        ['PUT', '/svc_api/data/public/someone/k', 'GET, HEAD, OPTIONS'],
        ['PATCH', '/api/folders/site/publish', 'POST'],
      ]
      for (const [method, p, allow] of cases) {
        it(`${method} ${p}: 405, Allow: ${allow}, 1404 in format A with rate-limit headers`, async () => {
          const r = await s.request(method, p, { key: alice.key })
          expectError(r, 405, 1404)
          assert.equal(r.json.error_type, 'NOT_FOUND')
          assert.equal(r.header('allow'), allow)
          assert.match(r.json.message, new RegExp(method))
          assert.ok(r.header('x-ratelimit-limit'))
        })
      }
      it('a missing path is still 404 for every method, and HEAD and preflights of real routes still answer', async () => {
        for (const m of ['GET', 'DELETE', 'POST']) {
          const r = await s.request(m, '/svc_api/data/nope', { key: alice.key })
          expectError(r, 404, 1404)
          assert.equal(r.header('allow'), undefined)
        }
        const head = await s.request('HEAD', '/svc_api/upload/info', { key: alice.key })
        assert.equal(head.status, 200)
        const pre = await s.request('OPTIONS', '/svc_api/data/get', {
          headers: { origin: 'https://page.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
        })
        assert.equal(pre.status, 204)
        assert.equal(pre.header('access-control-allow-origin'), '*')
      })
      it('/mcp, outside the catch-all: a method it has no route for is 405 with Allow: POST', async () => {
        const r = await s.request('OPTIONS', '/mcp', { key: alice.key })
        expectError(r, 405, 1404)
        assert.equal(r.header('allow'), 'POST')
        // its own refusals of GET and DELETE keep their code
        const g = await s.get('/mcp', { key: alice.key })
        expectError(g, 405, 1442)
        assert.equal(g.header('allow'), 'POST')
      })
      it('a route that also has a wrong-method sibling keeps its own answer', async () => {
        const r = await s.request('DELETE', '/svc_api/data/delete?key=missing-one', { key: alice.key })
        expectError(r, 404, 1604)
      })
    })
  })

  // its own server: the anonymous window of the one above is spent by its own requests
  describe(`credentials beside the spec's cases [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      alice = await s.user()
    })
    after(() => s.close())

    // a cookie tossed by a sibling host (a user's origin under the service's registrable domain)
    describe('session binding', () => {
      it('binds the session to a __Host- cookie a browser must send with it; a lone session cookie from a browser is no session', async () => {
        const r = await s.post('/login', { form: { username: alice.username, password: alice.password }, headers: { accept: 'application/json' } })
        const all = r.headers['set-cookie'] as string[]
        const bind = all.find((c) => c.startsWith('__Host-session_bind='))!
        assert.ok(bind, all.join(' | '))
        // a __Host- cookie: Secure, Path=/, no Domain, so no sibling host can set or replace it
        for (const attr of ['HttpOnly', 'Secure', 'SameSite=Lax', 'Path=/']) assert.ok(bind.includes(attr), attr)
        assert.ok(!/domain=/i.test(bind))
        const session = all.find((c) => c.startsWith('session='))!.split(';')[0]
        const both = `${session}; ${bind.split(';')[0]}`
        const browser = { 'sec-fetch-site': 'same-origin' }
        // a browser (fetch metadata) with both: the session
        assert.equal((await s.get('/svc_api/me', { cookie: both, headers: browser })).json.data.via, 'session')
        assert.equal((await s.get('/dashboard', { cookie: both, headers: { ...browser, accept: 'text/html' } })).status, 200)
        // a client without fetch metadata (curl, scripts) keeps sending the session cookie alone
        assert.equal((await s.get('/svc_api/me', { cookie: session })).json.data.via, 'session')
        // a browser's lone session cookie (tossed by a sibling host, which cannot set a __Host-
        // cookie) or one with another session's binding: refused
        const other = (await s.login(alice.username, alice.password)).split('; ')[1]
        for (const cookie of [session, `${session}; ${other}`, `${session}; session_bind=${bind.split(';')[0].split('=')[1]}`]) {
          const me = await s.get('/svc_api/me', { cookie, headers: browser })
          assert.equal(me.status, 401, cookie)
          assert.equal(me.json.error_code, 1002)
          const dash = await s.get('/dashboard', { cookie, headers: { ...browser, accept: 'text/html' } })
          assert.equal(dash.status, 303)
          assert.match(dash.header('location')!, /^\/login/)
          const write = await s.post('/svc_api/data/store', { cookie, json: { key: 'tossed', value: 1 }, headers: { ...browser, origin: s.url } })
          assert.equal(write.status, 401)
        }
        assert.equal((await s.get('/svc_api/data/get?key=tossed', { key: alice.key })).status, 404, 'nothing was stored')
        // logout clears both cookies
        const out = await s.post('/logout', { cookie: both, headers: { accept: 'application/json' } })
        const cleared = out.headers['set-cookie'] as string[]
        for (const name of ['session', '__Host-session_bind'])
          assert.ok(
            cleared.some((c) => c.startsWith(`${name}=;`) && c.includes('Max-Age=0')),
            name,
          )
      })
    })

    // the spec's "missing key" (1001) is a header without a key too: `Bearer ` from a script whose
    // key variable is empty (a client or proxy drops the trailing space: `Bearer`), or an empty
    // header; a session cookie beside it still counts
    describe('an Authorization header without a key', () => {
      for (const [label, authorization] of [
        ['Bearer and an empty token', 'Bearer '],
        ['Bearer alone', 'Bearer'],
        ['an empty header', ''],
      ]) {
        it(`${label}: 401 / 1001, as no header`, async () => {
          const r = await s.get('/svc_api/me', { headers: { authorization } })
          expectError(r, 401, 1001)
          assert.equal(r.json.error_type, 'AUTH_ERROR')
        })
      }
      it('Bearer with an empty token beside a session cookie: the session', async () => {
        const cookie = await s.login(alice.username, alice.password)
        const r = await s.get('/svc_api/me', { cookie, headers: { authorization: 'Bearer ' } })
        assert.equal(r.status, 200, r.text)
        assert.equal(r.json.data.via, 'session')
        // a token that is there and wrong stays 1002, cookie or not
        expectError(await s.get('/svc_api/me', { cookie, headers: { authorization: 'Bearer x' } }), 401, 1002)
        expectError(await s.get('/svc_api/me', { headers: { authorization: 'Basic YTpi' } }), 401, 1002)
      })
    })
  })
}
