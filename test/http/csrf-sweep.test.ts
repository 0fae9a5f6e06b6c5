import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'

/**
 * Every state-changing route of the API, sent with a signed-in browser's cookies by another
 * site or by the service's own page without the session's CSRF token: refused (403) before
 * it acts, whatever the body's type (the simple ones a cross-site form or fetch can send
 * without a preflight). Routes that take no session at all are listed; a new one must be
 * added here knowingly.
 */
const PUBLIC = new Set([
  // a visitor's form submission (CORS, allowed_origins)
  'POST /api/forms/submit/{form_slug}',
  // an abuse report, from anyone
  'POST /svc_api/abuse/reports',
  // an address confirmed by the token a mail carried
  'POST /svc_api/notify/verify',
  // a visitor's +1 to a public counter (decision 303: no session, no credentials)
  'POST /svc_api/data/public/{username}/{key}/incr',
])

const BODIES: Array<[string, string]> = [
  ['text/plain', '{"key":"k","value":1,"name":"n","form_name":"n"}'],
  ['application/x-www-form-urlencoded', 'key=k&value=1&name=n'],
  ['multipart/form-data; boundary=b', '--b\r\nContent-Disposition: form-data; name="key"\r\n\r\nk\r\n--b--\r\n'],
  ['application/json', '{"key":"k","value":1,"name":"n","form_name":"n"}'],
]

for (const engine of ENGINES) {
  describe(`cookie writes from a browser need the site and the token [${engine}]`, () => {
    let s: TestServer
    let cookie: string
    let own: string
    const routes: Array<{ method: string; path: string }> = []
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      const u = await s.user()
      cookie = await s.login(u.username, u.password)
      own = new URL(s.url).origin
      const doc = (await s.get('/openapi.json')).json
      for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>))
        for (const m of Object.keys(ops)) if (['post', 'put', 'patch', 'delete'].includes(m)) routes.push({ method: m.toUpperCase(), path: p })
    })
    after(() => s.close())

    // every body type a cross-site form or fetch can send; the other senders, one
    for (const [label, headers, bodies] of [
      ['another site', { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }, BODIES],
      ["a user's origin under the same site", { 'sec-fetch-site': 'same-site', origin: 'https://mallory.svc-test.example.com' }, BODIES.slice(0, 1)],
      ['a sandboxed page (Origin: null)', { 'sec-fetch-site': 'cross-site', origin: 'null' }, BODIES.slice(0, 1)],
      ["the service's own origin without the CSRF token", { 'sec-fetch-site': 'same-origin', origin: '' }, BODIES.slice(3)],
    ] as const) {
      it(`refuses every state-changing route sent from ${label}`, async () => {
        assert.ok(routes.length >= 40, `only ${routes.length} state-changing routes documented`)
        const taken: string[] = []
        const open: string[] = []
        for (const r of routes) {
          const name = `${r.method} ${r.path}`
          const path = r.path.replace(/\{[^}]+\}/g, 'x1')
          for (const [type, body] of bodies) {
            const res = await s.request(r.method, path, {
              cookie,
              body,
              headers: { ...headers, origin: headers.origin || own, 'content-type': type },
            })
            if (res.status !== 403) (PUBLIC.has(name) ? open : taken).push(`${name} (${type}): ${res.status} ${res.text.slice(0, 120)}`)
          }
        }
        assert.deepEqual(taken, [], 'a route acted on (or read) a request it should have refused')
        // the public routes answer as to anyone (they read no session), never as the account
        for (const line of open) assert.doesNotMatch(line, /: 2\d\d /, line)
      })
    }
  })
}
