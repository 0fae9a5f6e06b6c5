import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { deploySite } from '../support/deploys.js'

// Every Location the service builds from the request's own path writes that path's %xx escapes
// in uppercase (RFC 3986 2.1, the form browsers send), as the sites' slash redirects do
// (decision 176, test/http/site-rules.test.ts); the query is passed on as sent. A client may
// send `/alice/caf%c3%a9`: the redirect names `/alice/caf%C3%A9`.

const NAV = { 'sec-fetch-dest': 'document' }

/** A request on the plain-HTTP port with this Host (a user's origin, or the service's). */
async function plain(s: TestServer, host: string, p: string, o: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  const r = await request(`${s.httpUrl}${p}`, { method: (o.method ?? 'GET') as 'GET', headers: { host, ...o.headers }, body: o.body })
  await r.body.text()
  return { status: r.statusCode, location: r.headers.location as string | undefined }
}

describe('redirects write the escapes of the request path in uppercase', () => {
  describe('the default mode (HTTPS, with the plain-HTTP port)', () => {
    let s: TestServer
    let user: Awaited<ReturnType<TestServer['user']>>
    let port = ''
    let httpPort = ''
    before(async () => {
      s = await startServer({ engine: ENGINES[0], env: { RATE_LIMITS: HIGH_LIMITS } })
      port = new URL(s.url).port
      httpPort = new URL(s.httpUrl).port
      user = await s.user()
      // a site built for / (its index loads /assets/app.js, a file of its own)
      const blog = { 'index.html': '<script type="module" src="/assets/app.js"></script><p>home</p>', 'assets/app.js': 'export {}' }
      assert.equal((await deploySite(s, user.key, 'blog', blog)).res.status, 201)
    })
    after(() => s?.close())

    it('the plain-HTTP port sends a page to HTTPS', async () => {
      const r = await plain(s, 'svc.test:8080', '/alice/caf%c3%a9?q=%c3%a9')
      assert.equal(r.status, 301)
      assert.equal(r.location, `https://svc.test:${port}/alice/caf%C3%A9?q=%c3%a9`)
    })

    it("a browser opening a path-form page goes to the user's own origin", async () => {
      const r = await s.request('GET', `/${user.username}/caf%c3%a9?q=%c3%a9`, { headers: NAV })
      assert.equal(r.status, 302, r.text)
      assert.equal(r.header('location'), `http://${user.username}.localhost:${httpPort}/caf%C3%A9?q=%c3%a9`)
    })

    it("a browser opening a site built for / goes to the project's own origin", async () => {
      const origin = `http://blog.${user.username}.localhost:${httpPort}`
      const under = await plain(s, `${user.username}.localhost:${httpPort}`, '/blog/caf%c3%a9/?q=%c3%a9', { headers: NAV })
      assert.equal(under.status, 302)
      assert.equal(under.location, `${origin}/caf%C3%A9/?q=%c3%a9`)
      // from the path form, straight there
      const pathForm = await s.request('GET', `/${user.username}/blog/caf%c3%a9/`, { headers: NAV })
      assert.equal(pathForm.status, 302, pathForm.text)
      assert.equal(pathForm.header('location'), `${origin}/caf%C3%A9/`)
    })

    it('repeated slashes before the username are merged', async () => {
      const r = await s.request('GET', `//${user.username}/blog/caf%c3%a9?q=%c3%a9`)
      assert.equal(r.status, 301, r.text)
      assert.equal(r.header('location'), `/${user.username}/blog/caf%C3%A9?q=%c3%a9`)
    })

    it('the language switch reloads the page it was asked on, without ?lang', async () => {
      // the router finds /login at /%6cogin (%6c is `l`): the reload names the page as asked
      const r = await s.get('/%6cogin?lang=en&x=%c3%a9')
      assert.equal(r.status, 303, r.text)
      assert.equal(r.header('location'), '/%6Cogin?x=%C3%A9')
    })

    it("a visitor password's form sends the browser back to the page it unlocked", async () => {
      assert.equal((await s.request('PUT', '/api/access/blog', { key: user.key, json: { password: 'hunter22' } })).status, 200)
      const r = await plain(s, `${user.username}.localhost`, '/blog/caf%c3%a9/?q=%c3%a9', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
        body: 'password=hunter22',
      })
      assert.equal(r.status, 303)
      assert.equal(r.location, '/blog/caf%C3%A9/?q=%c3%a9')
    })
  })

  describe('behind a proxy (TRUST_PROXY=1): plain HTTP goes to HTTPS', () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine: ENGINES[0], env: { RATE_LIMITS: HIGH_LIMITS, TRUST_PROXY: '1', CONTENT_DOMAIN: 'pages.test' } })
    })
    after(() => s?.close())
    const overHttp = (host: string) => ({ 'x-forwarded-proto': 'http', host })

    it("on the service's host", async () => {
      const r = await s.get('/alice/caf%c3%a9?q=%c3%a9', { headers: overHttp('svc.test') })
      assert.equal(r.status, 301)
      assert.equal(r.header('location'), 'https://svc.test/alice/caf%C3%A9?q=%c3%a9')
    })

    it("on a user's own origin", async () => {
      const r = await s.get('/caf%c3%a9?q=%c3%a9', { headers: overHttp('alice.pages.test') })
      assert.equal(r.status, 301)
      assert.equal(r.header('location'), 'https://alice.pages.test/caf%C3%A9?q=%c3%a9')
    })
  })
})
