import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, type TestServer } from '../support/server.js'

// A service behind a proxy whose PUBLIC_URL is not the address browsers use (here its port is
// missing, as with nginx's `Host $host` on a port other than 443): a browser's sign-in says
// Sec-Fetch-Site: same-origin with an Origin the service does not take for its own, and is
// refused as a possible forgery. The refusal stays; the operator is told why in the log, at
// most once a minute (decision 320).
describe('a browser write refused for an Origin that is not PUBLIC_URL', () => {
  let s: TestServer
  before(async () => {
    s = await startServer({ captureLogs: true, env: { TRUST_PROXY: '1', PUBLIC_URL: 'https://svc.example.test' } })
  })
  after(async () => {
    await s.close()
  })

  const proxied = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '192.0.2.7', host: 'svc.example.test', accept: 'text/html' }
  const warnings = () => s.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith("refused a browser's same-origin write"))

  it('logs a cross-site attempt never: that is what the check is for', async () => {
    const u = await s.user()
    const r = await s.post('/login', {
      form: { username: u.username, password: u.password },
      headers: { ...proxied, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
    })
    assert.equal(r.status, 303)
    assert.match(r.header('location')!, /error=expired/)
    // an Origin with no fetch metadata (an old browser or a script) is not logged either
    const bare = await s.post('/login', {
      form: { username: u.username, password: u.password },
      headers: { ...proxied, origin: 'https://svc.example.test:8443' },
    })
    assert.match(bare.header('location')!, /error=expired/)
    assert.deepEqual(warnings(), [])
  })

  it("names the browser's Origin, PUBLIC_URL and the Host, and what to set, once a minute", async () => {
    const u = await s.user()
    const origin = 'https://svc.example.test:8443'
    for (let i = 0; i < 3; i++) {
      const r = await s.post('/login', {
        form: { username: u.username, password: u.password },
        headers: { ...proxied, 'sec-fetch-site': 'same-origin', origin },
      })
      assert.equal(r.status, 303)
      assert.match(r.header('location')!, /error=expired/, 'still refused')
    }
    const w = warnings()
    assert.equal(w.length, 1, JSON.stringify(w))
    assert.equal(w[0].level, 40)
    assert.equal(w[0].origin, origin)
    assert.equal(w[0].serviceOrigin, 'https://svc.example.test')
    assert.equal(w[0].hostOrigin, 'https://svc.example.test')
    assert.match(String(w[0].msg), /set PUBLIC_URL to the address browsers use/)
  })
})
