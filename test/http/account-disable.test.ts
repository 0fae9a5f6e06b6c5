import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { ENGINES, REDIS_URL, needs, startServer, type TestServer, startSecond } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { imageForm, makeImage, svc } from '../support/images.js'
import { startDns, verifiedDomain, type TestDns } from '../support/dns.js'
import { deploySite } from '../support/deploys.js'

const ASK = '/.well-known/svc/tls-allowed?domain='

/** Everything an account serves that a public cache answers for: an image, a data link, a public KV entry, a custom domain. */
async function publishAll(s: TestServer, dns: TestDns | null, domain: string) {
  const u = await s.user()
  const cookie = await s.login(u.username, u.password)
  await svc(s, 'grant', u.username, 'image-host')
  await svc(s, 'grant', u.username, 'hosted-data')
  const form = imageForm([{ name: 'a.png', data: await makeImage('png', { width: 8, height: 8, color: '#123456' }) }])
  const img = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
  assert.equal(img.status, 200, img.text)
  const data = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'd.txt', content: 'data', content_type: 'text/plain' } })
  assert.equal(data.status, 200, data.text)
  const kv = await s.post('/svc_api/data/store', { key: u.key, json: { key: 'k', value: 'v', is_public: true } })
  assert.equal(kv.status, 200, kv.text)
  const links = [`/svc-img/pub/${img.json.images[0].public_token}`, `/svc-data/pub/${data.json.file.public_token}`, `/svc_api/data/public/${u.username}/k`]
  if (dns) {
    const { res } = await deploySite(s, u.key, 'site', { 'index.html': '<p>site</p>' })
    assert.equal(res.status, 201, res.text)
    await verifiedDomain(s, dns, u.key, domain, 'site')
  }
  return { ...u, cookie, links }
}

/** Every link answers `status` (asked twice: the second answer comes from the caches when they hold it). */
async function expectAll(s: TestServer, links: string[], status: number, why: string) {
  for (let i = 0; i < 2; i++) for (const p of links) assert.equal((await s.get(p)).status, status, `${p}: ${why}`)
}

// Disabling an account takes everything it serves offline at once, and enabling it brings it
// back at once: the image, hosted-data, KV and custom-domain caches are dropped with the
// public host's, on this instance and (through the bus) on every other.
for (const engine of ENGINES) {
  describe(`a disabled account's public caches [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let adminCookie: string
    const adminCall = (p: string, json: unknown) => s.post(p, { cookie: adminCookie, json })

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr } })
      const a = await s.user({ admin: true })
      adminCookie = await s.login(a.username, a.password)
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it('the admin console: image, data, KV links and the TLS ask of its domain go at once, and come back at once', async () => {
      const u = await publishAll(s, dns, 'www.disable-me.test')
      await expectAll(s, [...u.links, ASK + 'www.disable-me.test'], 200, 'served (and cached) before')
      const site = async () => {
        const r = await s.get('/', { headers: { host: 'www.disable-me.test', accept: 'text/html' } })
        return [r.status, r.text.includes('<p>site</p>'), /<form[^>]+password/i.test(r.text)]
      }
      assert.deepEqual(await site(), [200, true, false])
      const off = await adminCall(`/svc_api/admin/users/${u.username}`, { disabled: true })
      assert.equal(off.status, 200, off.text)
      await expectAll(s, u.links, 404, 'a disabled account serves nothing')
      await expectAll(s, [ASK + 'www.disable-me.test'], 404, "no certificate for a disabled account's domain")
      // its domain answers as its own origin does, a 404: never the service's pages (a login form on the user's domain)
      for (let i = 0; i < 2; i++) assert.deepEqual(await site(), [404, false, false])
      const on = await adminCall(`/svc_api/admin/users/${u.username}`, { disabled: false })
      assert.equal(on.status, 200, on.text)
      await expectAll(s, [...u.links, ASK + 'www.disable-me.test'], 200, 'back once enabled')
      assert.deepEqual(await site(), [200, true, false])
    })

    it('a takedown that disables the account drops its other links at once', async () => {
      const u = await publishAll(s, null, '')
      await expectAll(s, u.links, 200, 'served (and cached) before')
      const rep = await adminCall('/svc_api/admin/reports', { url: `${s.url}${u.links[0]}`, category: 'malware' })
      assert.equal(rep.status, 201, rep.text)
      const td = await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, { disable_account: true })
      assert.equal(td.status, 200, td.text)
      await expectAll(s, [u.links[0]], 451, 'taken down')
      await expectAll(s, u.links.slice(1), 404, "the disabled account's other links")
    })
  })

  describe(`a disabled account's public caches across instances (Redis bus) [${engine}]`, needs('redis'), () => {
    it('the admin console on one instance and `svc user set` both drop them on the other at once', async () => {
      const a = await startServer({
        engine,
        keepData: true,
        env: { RATE_LIMITS: HIGH_LIMITS, REDIS_URL, REDIS_PREFIX: `t${crypto.randomBytes(4).toString('hex')}:` },
      })
      const b = await startSecond(a)
      try {
        const adm = await a.user({ admin: true })
        const cookie = await a.login(adm.username, adm.password)
        const u = await publishAll(a, null, '')
        await expectAll(b, u.links, 200, 'served (and cached) on b before')
        const off = await a.post(`/svc_api/admin/users/${u.username}`, { cookie, json: { disabled: true } })
        assert.equal(off.status, 200, off.text)
        await expectAll(b, u.links, 404, 'b drops them when a disables the account')
        await svc(a, 'user', 'set', u.username, '--enable')
        await expectAll(b, u.links, 200, 'the CLI enables it: back on b at once')
        await svc(a, 'user', 'set', u.username, '--disable')
        await expectAll(b, u.links, 404, 'the CLI disables it: gone on b at once')
      } finally {
        await b.close()
        await a.close()
      }
    })
  })
}
