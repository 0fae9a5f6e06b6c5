import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { deploySite } from '../support/deploys.js'

// A site's rule that redirects to another site never answers from the service's own origin
// (the path form), whatever the client sends: that would be an open redirect under the
// service's name (decision 298). The client is sent to the path on the user's
// origin (or where that origin sends a browser), which answers the rule; with no user
// origins, a page names the target. A `_headers` Refresh to another origin is left out there.

const NAV = { 'sec-fetch-dest': 'document' }
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const SITE = {
  'index.html': '<p>home</p>',
  'about.html': '<p>about</p>',
  'away.html': '<p>away</p>',
  'stay.html': '<p>stay</p>',
  'slashes.html': '<p>slashes</p>',
  _redirects: '/go https://evil.example/login 302\n/fwd https://forms.example/in 307\n/same /about 301\n/rw /about 200\n',
  _headers:
    "/away.html\n  Refresh: 0; url=https://evil.example/x\n/stay.html\n  Refresh: 5; url=about.html\n/slashes.html\n  Refresh: 0;URL= '//evil.example/y'\n",
}
// a site built for / (its index loads /assets/app.js, a file of its own): browsers are sent to its own origin
const ROOT_SITE = {
  'index.html': '<script type="module" src="/assets/app.js"></script><p>home</p>',
  'assets/app.js': 'export {}',
  _redirects: '/go https://evil.example/login 302\n',
}

/** A request on the plain-HTTP port with this Host (a user's or project's origin). */
async function plain(s: TestServer, host: string, p: string, o: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  const r = await request(`${s.httpUrl}${p}`, { method: (o.method ?? 'GET') as 'GET', headers: { host, ...o.headers }, body: o.body })
  await r.body.text()
  return { status: r.statusCode, location: r.headers.location as string | undefined, refresh: r.headers.refresh as string | undefined }
}

for (const engine of ENGINES) {
  describe(`a rule's redirect to another site on the path form [${engine}]`, () => {
    let s: TestServer
    let off: TestServer
    let user: Awaited<ReturnType<TestServer['user']>>
    let offUser: Awaited<ReturnType<TestServer['user']>>
    let userHost = ''
    before(async () => {
      ;[s, off] = await Promise.all([
        startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } }),
        startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, CONTENT_DOMAIN: 'off' } }),
      ])
      user = await s.user()
      offUser = await off.user()
      userHost = `${user.username}.localhost:${new URL(s.httpUrl).port}`
      assert.equal((await deploySite(s, user.key, 'out', SITE)).res.status, 201)
      assert.equal((await deploySite(s, user.key, 'blog', ROOT_SITE)).res.status, 201)
      assert.equal((await deploySite(off, offUser.key, 'out', SITE)).res.status, 201)
    })
    after(async () => {
      await s?.close()
      await off?.close()
    })

    it("a client without fetch metadata is sent to the user's origin, which answers the rule", async () => {
      for (const method of ['GET', 'HEAD']) {
        const r = await s.request(method, `/${user.username}/out/go?x=1`)
        assert.equal(r.status, 302, `${method} ${r.text}`)
        assert.equal(r.header('location'), `http://${userHost}/out/go?x=1`, method)
      }
      // asked twice: the cached answer is the same
      assert.equal((await s.request('GET', `/${user.username}/out/go`)).header('location'), `http://${userHost}/out/go`)
      const there = await plain(s, userHost, '/out/go?x=1')
      assert.equal(there.status, 302)
      assert.equal(there.location, 'https://evil.example/login?x=1')
    })

    it("a site built for / is sent to its project's origin, as a browser is", async () => {
      const projectHost = `blog.${userHost}`
      const r = await s.request('GET', `/${user.username}/blog/go?x=1`)
      assert.equal(r.status, 302, r.text)
      assert.equal(r.header('location'), `http://${projectHost}/go?x=1`)
      const there = await plain(s, projectHost, '/go?x=1')
      assert.equal(there.status, 302)
      assert.equal(there.location, 'https://evil.example/login?x=1')
    })

    it("a form's post goes on with 307, and the rule's 307 carries it to the other site", async () => {
      const r = await s.request('POST', `/${user.username}/out/fwd?src=site`, { headers: FORM, body: 'name=x' })
      assert.equal(r.status, 307, r.text)
      assert.equal(r.header('location'), `http://${userHost}/out/fwd?src=site`)
      const there = await plain(s, userHost, '/out/fwd?src=site', { method: 'POST', headers: FORM, body: 'name=x' })
      assert.equal(there.status, 307)
      assert.equal(there.location, 'https://forms.example/in?src=site')
    })

    it('a browser navigating is sent on as before, and same-site rules answer as before', async () => {
      const nav = await s.request('GET', `/${user.username}/out/go?x=1`, { headers: NAV })
      assert.equal(nav.status, 302, nav.text)
      assert.equal(nav.header('location'), `http://${userHost}/out/go?x=1`)
      const same = await s.request('GET', `/${user.username}/out/same?x=1`)
      assert.equal(same.status, 301, same.text)
      assert.equal(same.header('location'), `/${user.username}/out/about?x=1`)
      const rw = await s.request('GET', `/${user.username}/out/rw`)
      assert.equal(rw.status, 200, rw.text)
      assert.match(rw.text, /about/)
    })

    it("a _headers Refresh to another origin is left out on the path form, kept on the site's origin", async () => {
      for (const page of ['away', 'slashes']) {
        const r = await s.request('GET', `/${user.username}/out/${page}.html`)
        assert.equal(r.status, 200, r.text)
        assert.equal(r.header('refresh'), undefined, page)
        assert.ok((await plain(s, userHost, `/out/${page}.html`)).refresh?.includes('evil.example'), page)
      }
      assert.equal((await s.request('GET', `/${user.username}/out/stay.html`)).header('refresh'), '5; url=about.html')
    })

    it('with no user origins (CONTENT_DOMAIN=off), a page names the target as a link, and never redirects', async () => {
      const r = await off.request('GET', `/${offUser.username}/out/go?x=1&y=2`, { headers: { 'accept-language': 'en' } })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.header('location'), undefined)
      assert.match(r.header('content-type') ?? '', /^text\/html/)
      assert.match(r.header('content-security-policy') ?? '', /sandbox/)
      assert.match(r.text, /<a href="https:\/\/evil\.example\/login\?x=1&amp;y=2"/)
      assert.match(r.text, /another site/)
      const nav = await off.request('GET', `/${offUser.username}/out/go`, { headers: NAV })
      assert.equal(nav.status, 200, nav.text)
      assert.equal(nav.header('location'), undefined)
      const same = await off.request('GET', `/${offUser.username}/out/same`)
      assert.equal(same.status, 301, same.text)
      assert.equal(same.header('location'), `/${offUser.username}/out/about`)
    })
  })
}
