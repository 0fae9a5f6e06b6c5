import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { ENGINES, REDIS_URL, needs, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, batchUpload, uploadFile } from '../support/hosting.js'
import { expectError } from '../support/errors.js'

// A user site, as GitHub Pages' {user}.github.io: one project a user chooses answers the root
// of their own origin and every path there that names none of their projects or pages; the
// project paths (/{project}/...) keep serving their projects.
const INDEX = '<!doctype html><script type="module" src="/assets/app.js"></script><p>home</p>'
const SITE = [
  { filename: 'index.html', data: INDEX },
  { filename: 'assets/app.js', data: 'document.title = "app"' },
  { filename: 'about.html', data: '<p>about me</p>' },
  { filename: 'docs/index.html', data: '<p>docs</p>' },
  { filename: '404.html', data: '<p>my own 404</p>' },
  { filename: '_redirects', data: '/old /about 301\n' },
  { filename: '_headers', data: '/assets/*\n  X-Site: root\n' },
]
const OTHER = [
  { filename: 'index.html', data: '<p>blog home</p>' },
  { filename: 'assets/app.js', data: 'document.title = "blog"' },
]

type User = Awaited<ReturnType<TestServer['user']>>

for (const engine of ENGINES) {
  describe(`a user site at the user's origin root [${engine}]`, () => {
    let s: TestServer
    let alice: User
    let bob: User
    let port = ''
    /** GET on a host of the loopback content domain (plain HTTP). */
    const on = async (host: string, p: string, headers: Record<string, string> = {}) => {
      const r = await request(`${s.httpUrl}${p}`, { headers: { host, ...headers } })
      const text = await r.body.text()
      const h = r.headers as Record<string, string | undefined>
      return { status: r.statusCode, text, header: (n: string) => h[n.toLowerCase()] }
    }
    const origin = (u: User) => `${u.username}.localhost`
    const setSite = (u: User, project: string, on = true) => s.request(on ? 'PUT' : 'DELETE', `/api/folders/${project}/user_site`, { key: u.key })
    const publish = (u: User, project: string) => s.post(`/api/folders/${project}/publish`, { key: u.key })

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      port = new URL(s.httpUrl).port
      alice = await s.user()
      bob = await s.user()
      assert.equal((await batchUpload(s, { key: alice.key }, 'home', SITE)).status, 200)
      assert.equal((await batchUpload(s, { key: alice.key }, 'blog', OTHER)).status, 200)
      assert.equal((await batchUpload(s, { key: bob.key }, 'bobsite', OTHER)).status, 200)
      for (const p of ['home', 'blog']) assert.equal((await publish(alice, p)).status, 200)
      assert.equal((await publish(bob, 'bobsite')).status, 200)
      assert.equal((await uploadFile(s, { key: alice.key }, 'page.html', HTML('a page'))).status, 200)
    })
    after(() => s?.close())

    it('answers the root with a 404 until a project is chosen', async () => {
      assert.equal((await on(origin(alice), '/')).status, 404)
      assert.equal((await on(origin(alice), '/assets/app.js')).status, 404)
    })

    it('sets the user site, lists it and names its address', async () => {
      const r = await setSite(alice, 'home')
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      assert.equal(r.json.user_site, true)
      assert.equal(r.json.user_site_url, `http://${alice.username}.localhost:${port}/`)
      // idempotent
      assert.equal((await setSite(alice, 'home')).json.user_site, true)
      const list = (await s.get('/api/folders', { key: alice.key })).json.folders as Array<{ name: string; user_site: boolean }>
      assert.deepEqual(Object.fromEntries(list.map((f) => [f.name, f.user_site])), { home: true, blog: false })
    })

    it('serves the chosen project at the root, as its own origin does', async () => {
      const root = await on(origin(alice), '/')
      assert.equal(root.status, 200, root.text)
      assert.match(root.text, /<p>home<\/p>/)
      const js = await on(origin(alice), '/assets/app.js')
      assert.equal(js.status, 200)
      assert.equal(js.text, 'document.title = "app"')
      assert.equal(js.header('x-site'), 'root', 'its _headers apply at the root')
      const own = await on(`home.${alice.username}.localhost`, '/assets/app.js')
      assert.equal(js.header('etag'), own.header('etag'))
      // conditional requests, as on any origin
      const again = await on(origin(alice), '/assets/app.js', { 'if-none-match': js.header('etag')! })
      assert.equal(again.status, 304)
      assert.match((await on(origin(alice), '/about')).text, /about me/)
      assert.equal((await on(origin(alice), '/docs')).header('location'), '/docs/')
      assert.match((await on(origin(alice), '/docs/')).text, /docs/)
      const old = await on(origin(alice), '/old')
      assert.equal(old.status, 301)
      assert.equal(old.header('location'), '/about')
    })

    it("keeps the user's projects and pages first", async () => {
      const blog = await on(origin(alice), '/blog/assets/app.js')
      assert.equal(blog.text, 'document.title = "blog"')
      assert.match((await on(origin(alice), '/blog/')).text, /blog home/)
      assert.equal((await on(origin(alice), '/blog')).header('location'), '/blog/')
      // a path inside a project that it lacks is that project's 404, not the user site's
      const inBlog = await on(origin(alice), '/blog/nope.js')
      assert.equal(inBlog.status, 404)
      assert.doesNotMatch(inBlog.text, /my own 404/)
      // the user site's project stays at its own path too
      assert.match((await on(origin(alice), '/home/')).text, /<p>home<\/p>/)
      // a single page at the user's root
      assert.match((await on(origin(alice), '/page.html')).text, /a page/)
      assert.match((await on(origin(alice), '/page')).text, /a page/)
    })

    it("answers what it lacks with the user site's own 404.html", async () => {
      for (const p of ['/nope', '/nope/deeper.js', '/assets/none.js']) {
        const r = await on(origin(alice), p)
        assert.equal(r.status, 404, p)
        assert.match(r.text, /my own 404/, p)
      }
    })

    it("never answers on the service's origin, another user's origin or a project's origin", async () => {
      const path = await s.get(`/${alice.username}/`)
      assert.equal(path.status, 404)
      assert.doesNotMatch(path.text, /<p>home<\/p>/)
      assert.equal((await s.get(`/${alice.username}/assets/app.js`)).status, 404)
      const bobs = await on(origin(bob), '/')
      assert.equal(bobs.status, 404)
      assert.doesNotMatch(bobs.text, /home/)
      assert.match((await on(`blog.${alice.username}.localhost`, '/')).text, /blog home/)
      assert.equal((await on('localhost', '/login')).status, 301)
    })

    it("refuses another user's project and one that does not exist, changing nothing", async () => {
      expectError(await setSite(bob, 'home'), 403, 1312)
      expectError(await setSite(alice, 'bobsite'), 403, 1312)
      expectError(await setSite(bob, `${alice.username}%2Fhome`), 403, 1312)
      expectError(await setSite(alice, 'nope', false), 403, 1312)
      expectError(await s.request('PUT', '/api/folders/home/user_site'), 401, 1001)
      assert.equal((await on(origin(bob), '/')).status, 404)
      assert.match((await on(origin(alice), '/')).text, /<p>home<\/p>/)
    })

    it('takes one project at a time: choosing another replaces it', async () => {
      assert.equal((await setSite(alice, 'blog')).status, 200)
      assert.match((await on(origin(alice), '/')).text, /blog home/)
      assert.equal((await on(origin(alice), '/assets/app.js')).text, 'document.title = "blog"')
      const list = (await s.get('/api/folders', { key: alice.key })).json.folders as Array<{ name: string; user_site: boolean }>
      assert.deepEqual(Object.fromEntries(list.map((f) => [f.name, f.user_site])), { home: false, blog: true })
      // clearing a project that is not the user site changes nothing
      assert.equal((await setSite(alice, 'home', false)).json.user_site, false)
      assert.match((await on(origin(alice), '/')).text, /blog home/)
      assert.equal((await setSite(alice, 'home')).status, 200)
      assert.match((await on(origin(alice), '/')).text, /<p>home<\/p>/)
    })

    it('goes back to a 404 while unpublished, and serves again once published', async () => {
      assert.equal((await s.post('/api/folders/home/unpublish', { key: alice.key })).status, 200)
      const r = await on(origin(alice), '/')
      assert.equal(r.status, 404)
      assert.doesNotMatch(r.text, /home|my own 404/)
      assert.equal((await on(origin(alice), '/assets/app.js')).status, 404)
      assert.equal((await publish(alice, 'home')).status, 200)
      assert.match((await on(origin(alice), '/')).text, /<p>home<\/p>/)
    })

    it("keeps the project's visitor password at the root", async () => {
      const put = await s.request('PUT', '/api/access/home', { key: alice.key, json: { password: 'hunter22' } })
      assert.equal(put.status, 200, put.text)
      try {
        assert.equal((await on(origin(alice), '/')).status, 401)
        assert.equal((await on(origin(alice), '/assets/app.js')).status, 401)
        const basic = `Basic ${Buffer.from(`x:hunter22`).toString('base64')}`
        const ok = await on(origin(alice), '/assets/app.js', { authorization: basic })
        assert.equal(ok.status, 200)
        assert.match(ok.header('cache-control') ?? '', /private/)
        // the password form's post at the root goes to the user site's gate
        const form = await request(`${s.httpUrl}/?x=1`, {
          method: 'POST',
          headers: { host: origin(alice), 'content-type': 'application/x-www-form-urlencoded' },
          body: 'password=hunter22',
        })
        await form.body.text()
        assert.equal(form.statusCode, 303)
        assert.equal(form.headers.location, '/?x=1')
        const cookie = String(form.headers['set-cookie']).split(';')[0]
        assert.match((await on(origin(alice), '/', { cookie })).text, /<p>home<\/p>/)
        // another project is not behind it
        assert.equal((await on(origin(alice), '/blog/')).status, 200)
      } finally {
        assert.equal((await s.request('DELETE', '/api/access/home', { key: alice.key })).status, 200)
      }
      assert.equal((await on(origin(alice), '/')).status, 200)
    })

    it('clears the user site: the root is a 404 again', async () => {
      const r = await setSite(alice, 'home', false)
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.user_site, false)
      assert.equal((await on(origin(alice), '/')).status, 404)
      assert.equal((await on(origin(alice), '/assets/app.js')).status, 404)
      assert.match((await on(origin(alice), '/blog/')).text, /blog home/)
    })

    it('goes with its project when the project is deleted', async () => {
      assert.equal((await batchUpload(s, { key: alice.key }, 'gone', OTHER)).status, 200)
      assert.equal((await publish(alice, 'gone')).status, 200)
      assert.equal((await setSite(alice, 'gone')).status, 200)
      assert.match((await on(origin(alice), '/')).text, /blog home/)
      assert.equal((await s.request('DELETE', '/api/folders/gone', { key: alice.key })).status, 200)
      assert.equal((await on(origin(alice), '/')).status, 404)
      // the same name made again is not the user site
      assert.equal((await batchUpload(s, { key: alice.key }, 'gone', OTHER)).status, 200)
      assert.equal((await publish(alice, 'gone')).status, 200)
      assert.equal((await on(origin(alice), '/')).status, 404)
    })
  })

  describe(`a user site under abuse holds [${engine}]`, () => {
    let s: TestServer
    after(() => s?.close())

    it('answers 451 while its project is held, and a 404 once it is taken down', async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      const a = await s.user({ admin: true })
      const admin = await s.login(a.username, a.password)
      const adminCall = (p: string, json?: unknown) => s.post(p, { cookie: admin, ...(json === undefined ? {} : { json }) })
      const u = await s.user()
      assert.equal((await batchUpload(s, { key: u.key }, 'home', SITE)).status, 200)
      assert.equal((await batchUpload(s, { key: u.key }, 'blog', OTHER)).status, 200)
      for (const p of ['home', 'blog']) assert.equal((await s.post(`/api/folders/${p}/publish`, { key: u.key })).status, 200)
      assert.equal((await s.request('PUT', '/api/folders/home/user_site', { key: u.key })).status, 200)
      const at = async (p: string) => {
        const r = await request(`${s.httpUrl}${p}`, { headers: { host: `${u.username}.localhost` } })
        await r.body.text()
        return r.statusCode
      }
      assert.equal(await at('/'), 200)
      const rep = await adminCall('/svc_api/admin/reports', { url: `http://${u.username}.localhost:8080/home/`, category: 'malware' })
      assert.equal(rep.status, 201, rep.text)
      assert.equal(rep.json.data.target, `site:${u.username}/home`)
      assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`)).status, 200)
      for (const p of ['/', '/assets/app.js', '/nope', '/home/']) assert.equal(await at(p), 451, p)
      assert.equal(await at('/blog/'), 200)
      assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, {})).status, 200)
      // taken down: the project is gone, and with it the user site; its own paths keep their 451
      assert.equal(await at('/'), 404)
      assert.equal(await at('/assets/app.js'), 404)
      assert.equal(await at('/home/'), 451)
      assert.equal(await at('/blog/'), 200)
    })
  })

  describe(`a user site across instances [${engine}]`, () => {
    it('shows a change made on one instance on the other at once (Redis bus)', needs('redis'), async () => {
      const a = await startServer({ engine, keepData: true, env: { REDIS_URL, RATE_LIMITS: HIGH_LIMITS } })
      const b = await startServer({ engine, dataDir: a.dataDir, pgSchema: a.env.DATABASE_URL?.split('schema=')[1], env: { REDIS_URL } })
      try {
        const u = await a.user()
        assert.equal((await batchUpload(a, { key: u.key }, 'home', SITE)).status, 200)
        assert.equal((await a.post('/api/folders/home/publish', { key: u.key })).status, 200)
        const onB = async (p: string) => {
          const r = await request(`${b.httpUrl}${p}`, { headers: { host: `${u.username}.localhost` } })
          return { status: r.statusCode, text: await r.body.text() }
        }
        // cached on B as a 404 first
        for (let i = 0; i < 2; i++) assert.equal((await onB('/')).status, 404)
        const eventually = async (want: number) => {
          for (let i = 0; i < 100; i++) {
            if ((await onB('/')).status === want) return
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
          assert.fail(`instance B kept its stale answer (wanted ${want})`)
        }
        assert.equal((await a.request('PUT', '/api/folders/home/user_site', { key: u.key })).status, 200)
        await eventually(200)
        assert.match((await onB('/')).text, /<p>home<\/p>/)
        assert.equal((await a.request('DELETE', '/api/folders/home/user_site', { key: u.key })).status, 200)
        await eventually(404)
      } finally {
        await b.close()
        await a.close()
      }
    })
  })
}
