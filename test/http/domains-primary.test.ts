import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { expectError, expectErrorInBoth } from '../support/errors.js'
import { startDns, type TestDns } from '../support/dns.js'
import { deploySite } from '../support/deploys.js'

// A project's primary custom domain (decision 76): browsers opening the project's other URLs
// (its user's origin, its own origin, its other domains) are sent there; scripts and
// sub-resources are served where they ask.
for (const engine of ENGINES) {
  describe(`primary custom domain [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let carol: Awaited<ReturnType<TestServer['user']>>
    const NAV = { 'sec-fetch-dest': 'document' }
    /** A request to the service with this Host. */
    const at = (host: string, p: string, headers: Record<string, string> = {}) => s.get(p, { headers: { host, ...headers } })
    const primaryOf = async () =>
      Object.fromEntries(
        ((await s.get('/api/domains', { key: carol.key })).json.data.domains as Array<{ domain: string; primary: boolean }>).map((d) => [d.domain, d.primary]),
      )

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr, DOMAINS_PER_USER: '3' } })
      carol = await s.user()
      const up = await batchUpload(s, { key: carol.key }, 'site', [
        { filename: 'index.html', data: '<p>carol home</p>' },
        { filename: 'about.html', data: '<p>about carol</p>' },
      ])
      assert.equal(up.status, 200, up.text)
      assert.equal((await s.post('/api/folders/site/publish', { key: carol.key })).status, 200)
      for (const domain of ['www.primary.test', 'primary.test', 'later.primary.test']) {
        const add = await s.post('/api/domains', { key: carol.key, json: { domain, project: 'site' } })
        assert.equal(add.status, 200, add.text)
        assert.equal(add.json.data.primary, false)
        dns.txt.set(`_svc-challenge.${domain}`, [add.json.data.verification.value])
      }
      for (const domain of ['www.primary.test', 'primary.test']) assert.equal((await s.post(`/api/domains/${domain}/verify`, { key: carol.key })).status, 200)
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it('refuses an unverified, unknown or malformed domain, and changes nothing', async () => {
      await expectErrorInBoth(
        (headers) => s.request('PUT', '/api/domains/later.primary.test/primary', { key: carol.key, headers }),
        400,
        1343,
        '域名验证失败：later.primary.test 尚未验证，不能设为主域名',
        'Domain verification failed: later.primary.test is not verified yet, so it cannot be primary',
      )
      expectError(await s.request('PUT', '/api/domains/nope.primary.test/primary', { key: carol.key }), 404, 1344)
      expectError(await s.request('PUT', '/api/domains/not%20a%20domain/primary', { key: carol.key }), 400, 1340)
      const other = await s.user()
      expectError(await s.request('PUT', '/api/domains/www.primary.test/primary', { key: other.key }), 404, 1344)
      expectError(await s.request('PUT', '/api/domains/www.primary.test/primary', {}), 401, 1001)
      assert.deepEqual(await primaryOf(), { 'www.primary.test': false, 'primary.test': false, 'later.primary.test': false })
      // no primary: every URL serves the project in place
      assert.equal((await at(`${carol.username}.localhost`, '/site/', NAV)).status, 200)
    })

    it("sends browsers from the project's other URLs to its primary domain, path and query kept", async () => {
      const put = await s.request('PUT', '/api/domains/www.primary.test/primary', { key: carol.key })
      assert.equal(put.status, 200, put.text)
      assert.equal(put.json.data.primary, true)
      assert.deepEqual(await primaryOf(), { 'www.primary.test': true, 'primary.test': false, 'later.primary.test': false })
      const user = `${carol.username}.localhost`
      for (const [host, p, to] of [
        [user, '/site/about?x=1', '/about?x=1'],
        [user, '/site/', '/'],
        [`site.${user}`, '/about', '/about'],
        ['primary.test', '/', '/'],
      ]) {
        const r = await at(host, p, NAV)
        assert.equal(r.status, 302, `${host}${p}: ${r.text}`)
        assert.equal(r.header('location'), `https://www.primary.test${to}`, `${host}${p}`)
        assert.equal(r.text, '')
      }
      // on a port other than 443 the primary domain is reached on the same one: the port the
      // visitor used over HTTPS; from the plain-HTTP listener, the HTTPS listener's
      const port = new URL(s.url).port
      for (const [host, p, to, plain] of [
        [`${user}:${port}`, '/site/about?x=1', `https://www.primary.test:${port}/about?x=1`, false],
        [`primary.test:8443`, '/', 'https://www.primary.test:8443/', false],
        [`primary.test:443`, '/a', 'https://www.primary.test/a', false],
        [user, '/site/', `https://www.primary.test:${port}/`, true],
      ] as const) {
        const r = await s.get(p, { plain, headers: { host, ...NAV } })
        assert.equal(r.status, 302, `${host}${p}: ${r.text}`)
        assert.equal(r.header('location'), to, `${host}${p}${plain ? ' (plain HTTP)' : ''}`)
      }
      // the primary domain serves; scripts, sub-resources and HEAD are served where they ask
      assert.equal((await at('www.primary.test', '/', NAV)).text, '<p>carol home</p>')
      assert.equal((await at(user, '/site/')).text, '<p>carol home</p>')
      assert.equal((await at(user, '/site/about', { 'sec-fetch-dest': 'iframe' })).text, '<p>about carol</p>')
      assert.equal((await s.request('HEAD', '/site/', { headers: { host: user, ...NAV } })).status, 200)
      assert.equal((await s.get(`/${carol.username}/site/`)).text, '<p>carol home</p>')
      // a browser on the path form goes there at once (on the port it asked: 127.0.0.1:PORT)
      assert.equal((await s.get(`/${carol.username}/site/about`, { headers: NAV })).header('location'), `https://www.primary.test:${port}/about`)
      // a kept deploy is not the live site: its own origin stays
      const { res } = await deploySite(s, carol.key, 'site', { 'index.html': '<p>next</p>' }, { preview: true })
      assert.equal(res.status, 201, res.text)
      assert.equal((await at(`${res.json.deploy.id}--site.${user}`, '/', NAV)).text, '<p>next</p>')
    })

    it('moves with the next primary, and stops when none is', async () => {
      assert.equal((await s.request('PUT', '/api/domains/primary.test/primary', { key: carol.key })).status, 200)
      assert.deepEqual(await primaryOf(), { 'www.primary.test': false, 'primary.test': true, 'later.primary.test': false })
      assert.equal((await at('www.primary.test', '/about', NAV)).header('location'), 'https://primary.test/about')
      assert.equal((await at('primary.test', '/', NAV)).status, 200)
      const off = await s.request('DELETE', '/api/domains/primary.test/primary', { key: carol.key })
      assert.equal(off.status, 200, off.text)
      assert.equal(off.json.data.primary, false)
      for (const host of ['www.primary.test', `${carol.username}.localhost`]) {
        const r = await at(host, host.startsWith('www') ? '/' : '/site/', NAV)
        assert.equal(r.status, 200, host)
        assert.equal(r.text, '<p>carol home</p>')
      }
    })

    it('stops at once when the primary domain is removed', async () => {
      assert.equal((await s.request('PUT', '/api/domains/primary.test/primary', { key: carol.key })).status, 200)
      assert.equal((await at(`${carol.username}.localhost`, '/site/', NAV)).status, 302)
      assert.equal((await s.request('DELETE', '/api/domains/primary.test', { key: carol.key })).status, 200)
      assert.equal((await at(`${carol.username}.localhost`, '/site/', NAV)).text, '<p>carol home</p>')
    })
  })
}
