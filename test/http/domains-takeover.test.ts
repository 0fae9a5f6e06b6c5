import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { expectError } from '../support/errors.js'
import { startDns, verifiedDomain, type TestDns } from '../support/dns.js'

// A verified domain moves to the account that proves control of it now (decision 90): its
// own TXT token at _svc-challenge.{domain}, never the holder's. Visitors, the TLS ask
// endpoint and the old holder's primary-domain redirects follow at once; the old holder's
// row stays, unverified, with lost_at.
for (const engine of ENGINES) {
  describe(`custom domain takeover [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let alice: Awaited<ReturnType<TestServer['user']>>
    let bob: Awaited<ReturnType<TestServer['user']>>
    const D = 'www.takeover.test'
    const CH = `_svc-challenge.${D}`
    const ASK = `/.well-known/svc/tls-allowed?domain=${D}`
    const NAV = { 'sec-fetch-dest': 'document' }
    const at = (host: string, p: string, headers: Record<string, string> = {}) => s.get(p, { headers: { host, ...headers } })
    const mine = async (key: string) => {
      const list = await s.get('/api/domains', { key })
      assert.equal(list.status, 200, list.text)
      return (list.json.data.domains as Array<Record<string, unknown>>).find((d) => d.domain === D)
    }
    let aliceToken = ''
    let bobToken = ''

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr } })
      alice = await s.user()
      bob = await s.user()
      for (const [u, project, text] of [
        [alice, 'site', '<p>alice site</p>'],
        [bob, 'blog', '<p>bob blog</p>'],
      ] as const) {
        const up = await batchUpload(s, { key: u.key }, project, [{ filename: 'index.html', data: text }])
        assert.equal(up.status, 200, up.text)
        assert.equal((await s.post(`/api/folders/${project}/publish`, { key: u.key })).status, 200)
      }
      await verifiedDomain(s, dns, alice.key, D, 'site')
      aliceToken = dns.txt.get(CH)?.[0] ?? ''
      assert.equal((await s.request('PUT', `/api/domains/${D}/primary`, { key: alice.key })).status, 200)
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it("cannot be taken without the taker's own TXT token: the holder's does not count", async () => {
      // every cache that maps the host to alice is warm
      assert.equal((await at(D, '/')).text, '<p>alice site</p>')
      assert.equal((await s.get(ASK)).status, 200)
      assert.equal((await at(`${alice.username}.localhost`, '/site/', NAV)).header('location'), `https://${D}/`)

      const add = await s.post('/api/domains', { key: bob.key, json: { domain: D, project: 'blog' }, headers: { 'accept-language': 'en' } })
      assert.equal(add.status, 200, add.text)
      assert.equal(add.json.data.verified, false)
      assert.match(add.json.message, /Another account holds it verified/)
      bobToken = add.json.data.verification.value
      assert.notEqual(bobToken, aliceToken)

      // alice's record is what DNS holds: bob proves nothing with it
      const withAlices = await s.post(`/api/domains/${D}/verify`, { key: bob.key })
      expectError(withAlices, 400, 1343)
      assert.equal(withAlices.json.message, `域名验证失败：${CH} 处有 TXT 记录，但不是 ${bobToken}`)
      dns.txt.delete(CH)
      expectError(await s.post(`/api/domains/${D}/verify`, { key: bob.key }), 400, 1343)

      assert.equal((await at(D, '/')).text, '<p>alice site</p>')
      assert.equal((await s.get(ASK)).status, 200)
      assert.equal((await at(`${alice.username}.localhost`, '/site/', NAV)).status, 302)
      const a = await mine(alice.key)
      assert.equal(a?.verified, true)
      assert.equal(a?.primary, true)
      assert.equal(a?.lost_at, null)
      assert.equal((await mine(bob.key))?.verified, false)
    })

    it('moves to the account whose token DNS holds now: visitors get its site at once, the old holder stops', async () => {
      // the name changed hands: the new owner's zone holds bob's record only
      dns.txt.set(CH, ['v=spf1 -all', bobToken])
      const ok = await s.post(`/api/domains/${D}/verify`, { key: bob.key })
      assert.equal(ok.status, 200, ok.text)
      assert.equal(ok.json.data.verified, true)
      assert.equal(ok.json.data.lost_at, null)

      for (let i = 0; i < 2; i++) assert.equal((await at(D, '/')).text, '<p>bob blog</p>')
      assert.equal((await s.get(ASK)).status, 200)
      // alice's project no longer sends browsers to a domain it lost
      const nav = await at(`${alice.username}.localhost`, '/site/', NAV)
      assert.equal(nav.status, 200)
      assert.equal(nav.text, '<p>alice site</p>')

      const a = await mine(alice.key)
      assert.equal(a?.verified, false)
      assert.equal(a?.primary, false)
      assert.equal(a?.site_url, null)
      assert.match(String(a?.lost_at), /^\d{4}-\d{2}-\d{2}T/)
      expectError(await s.request('PUT', `/api/domains/${D}/primary`, { key: alice.key }), 400, 1343)
      // alice's own token is gone from DNS: her verify proves nothing now
      expectError(await s.post(`/api/domains/${D}/verify`, { key: alice.key }), 400, 1343)
      assert.equal((await at(D, '/')).text, '<p>bob blog</p>')
      // verifying again is a no-op for the holder
      assert.equal((await s.post(`/api/domains/${D}/verify`, { key: bob.key })).status, 200)
    })

    it('moves back when the old holder proves control again; a lost row removed changes nothing', async () => {
      dns.txt.set(CH, [aliceToken])
      assert.equal((await s.post(`/api/domains/${D}/verify`, { key: alice.key })).status, 200)
      assert.equal((await at(D, '/')).text, '<p>alice site</p>')
      const b = await mine(bob.key)
      assert.equal(b?.verified, false)
      assert.match(String(b?.lost_at), /^\d{4}-/)
      assert.equal((await mine(alice.key))?.lost_at, null)
      assert.equal((await s.request('DELETE', `/api/domains/${D}`, { key: bob.key })).status, 200)
      assert.equal((await at(D, '/')).text, '<p>alice site</p>')
      assert.equal((await s.get(ASK)).status, 200)
    })

    it('two accounts verifying at once leave exactly one holder, and no server error', async () => {
      const carol = await s.user()
      const up = await batchUpload(s, { key: carol.key }, 'home', [{ filename: 'index.html', data: '<p>carol home</p>' }])
      assert.equal(up.status, 200, up.text)
      assert.equal((await s.post('/api/folders/home/publish', { key: carol.key })).status, 200)
      const tokens: string[] = []
      for (const [u, project] of [
        [bob, 'blog'],
        [carol, 'home'],
      ] as const) {
        const add = await s.post('/api/domains', { key: u.key, json: { domain: D, project } })
        assert.equal(add.status, 200, add.text)
        tokens.push(add.json.data.verification.value)
      }
      dns.txt.set(CH, tokens)
      const rs = await Promise.all([bob, carol].map((u) => s.post(`/api/domains/${D}/verify`, { key: u.key })))
      for (const r of rs) if (r.status !== 200) expectError(r, 409, 1342)
      assert.ok(rs.some((r) => r.status === 200))
      const holders = []
      for (const [u, text] of [
        [alice, '<p>alice site</p>'],
        [bob, '<p>bob blog</p>'],
        [carol, '<p>carol home</p>'],
      ] as const) {
        if ((await mine(u.key))?.verified === true) holders.push(text)
      }
      assert.equal(holders.length, 1)
      assert.notEqual(holders[0], '<p>alice site</p>')
      assert.equal((await at(D, '/')).text, holders[0])
    })
  })
}
