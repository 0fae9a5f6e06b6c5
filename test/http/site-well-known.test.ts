import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { startDns, verifiedDomain, type TestDns } from '../support/dns.js'
import { deploySite, type Site } from '../support/deploys.js'

// /.well-known/ on a project's own origin and on its custom domain (decision 77), and on the
// user's origin through the user's user site (decision 277): the site's own security.txt
// answers there when it serves one; otherwise the service's security.txt answers, and its
// report link always (redirects to PUBLIC_URL's host).
const SITE_TXT = 'Contact: mailto:security@carol.example\nExpires: 2030-01-01T00:00:00Z\n'

for (const engine of ENGINES) {
  describe(`security.txt on a project's origin and domain [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let carol: Awaited<ReturnType<TestServer['user']>>
    const at = (host: string, p: string) => s.get(p, { headers: { host } })
    const deploy = async (project: string, files: Site) => {
      const { res } = await deploySite(s, carol.key, project, files)
      assert.equal(res.status, 201, res.text)
    }
    /** Asserts that the service's own answer for `p` (a redirect to its host) came back. */
    const services = async (host: string, p: string, to: RegExp) => {
      const r = await at(host, p)
      assert.equal(r.status, 302, `${host}${p}: ${r.text}`)
      assert.match(r.header('location') ?? '', to, `${host}${p}`)
    }
    const SERVICE_TXT = /^https:\/\/svc\.test\/\.well-known\/security\.txt$/
    const REPORT = /^https:\/\/svc\.test\/report\?url=/

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr, PUBLIC_URL: 'https://svc.test' } })
      carol = await s.user()
      await deploy('site', { 'index.html': '<p>carol home</p>' })
      await deploy('app', { 'index.html': '<p>the app</p>', _redirects: '/* /index.html 200\n' })
      await verifiedDomain(s, dns, carol.key, 'www.carol.test', 'site')
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it("answers the service's security.txt where the site has none, and the report link everywhere", async () => {
      const user = `${carol.username}.localhost`
      for (const host of [user, `site.${user}`, 'www.carol.test']) {
        await services(host, '/.well-known/security.txt', SERVICE_TXT)
        await services(host, '/.well-known/svc-report', REPORT)
      }
    })

    it("serves the site's own security.txt on its origin and domain once deployed; the user's origin and the report link stay the service's", async () => {
      const user = `${carol.username}.localhost`
      await deploy('site', {
        'index.html': '<p>carol home</p>',
        '.well-known/security.txt': SITE_TXT,
        '.well-known/svc-report': 'not the report page',
      })
      for (const host of [`site.${user}`, 'www.carol.test']) {
        const r = await at(host, '/.well-known/security.txt')
        assert.equal(r.status, 200, `${host}: ${r.text}`)
        assert.equal(r.text, SITE_TXT)
        assert.match(r.header('content-type') ?? '', /^text\/plain/)
        assert.equal((await s.request('HEAD', '/.well-known/security.txt', { headers: { host } })).status, 200)
        // the report link is the service's, whatever the site deploys at its path
        await services(host, '/.well-known/svc-report', REPORT)
      }
      // the user's origin: /.well-known is not a project name there, the service answers
      await services(user, '/.well-known/security.txt', SERVICE_TXT)
      // the same file under the project's path on the user's origin, as before
      assert.equal((await at(user, '/site/.well-known/security.txt')).text, SITE_TXT)
      // a redeploy without the file gives the path back to the service
      await deploy('site', { 'index.html': '<p>carol home</p>' })
      for (const host of [`site.${user}`, 'www.carol.test']) await services(host, '/.well-known/security.txt', SERVICE_TXT)
    })

    it("serves the user site's own security.txt at the user's origin, as GitHub Pages serves {user}.github.io's; the report link stays the service's", async () => {
      const user = `${carol.username}.localhost`
      const userSite = (project: string, on = true) => s.request(on ? 'PUT' : 'DELETE', `/api/folders/${project}/user_site`, { key: carol.key })
      await deploy('home', { 'index.html': '<p>carol at the root</p>', '.well-known/security.txt': SITE_TXT, '.well-known/svc-report': 'not the report page' })
      // no user site yet: the service's
      await services(user, '/.well-known/security.txt', SERVICE_TXT)
      assert.equal((await userSite('home')).status, 200)
      assert.equal((await at(user, '/')).text, '<p>carol at the root</p>')
      const r = await at(user, '/.well-known/security.txt')
      assert.equal(r.status, 200, r.text)
      assert.equal(r.text, SITE_TXT)
      assert.match(r.header('content-type') ?? '', /^text\/plain/)
      assert.equal((await s.request('HEAD', '/.well-known/security.txt', { headers: { host: user } })).status, 200)
      await services(user, '/.well-known/svc-report', REPORT)
      // the user site's rules answer as on its own origin: a single-page app's rewrite
      assert.equal((await userSite('app')).status, 200)
      assert.equal((await at(user, '/.well-known/security.txt')).text, '<p>the app</p>')
      // a user site without one: the service's; and none chosen: the service's again
      await deploy('plain', { 'index.html': '<p>plain</p>', '404.html': '<p>lost</p>' })
      assert.equal((await userSite('plain')).status, 200)
      await services(user, '/.well-known/security.txt', SERVICE_TXT)
      assert.equal((await userSite('home')).status, 200)
      assert.equal((await at(user, '/.well-known/security.txt')).text, SITE_TXT)
      assert.equal((await userSite('home', false)).status, 200)
      await services(user, '/.well-known/security.txt', SERVICE_TXT)
    })

    it("follows the site's own rules there, as its host would: a single-page app's rewrite answers", async () => {
      const r = await at(`app.${carol.username}.localhost`, '/.well-known/security.txt')
      assert.equal(r.status, 200, r.text)
      assert.equal(r.text, '<p>the app</p>')
      await services(`app.${carol.username}.localhost`, '/.well-known/svc-report', REPORT)
    })
  })
}
