import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { deploySite } from '../support/deploys.js'

// A project's own origin, {project}.{username}.{content domain}: the project at the root of
// an origin, as a custom domain serves it, so a site built for / (Vite's default base) works.
// Its user's origin and the path form keep serving it under /{project}/.
const INDEX = '<!doctype html><script type="module" src="/assets/app.js"></script><link rel="stylesheet" href="/assets/app.css"><p>home</p>'

for (const engine of ENGINES) {
  describe(`a project's own origin [${engine}]`, () => {
    let s: TestServer
    let user: Awaited<ReturnType<TestServer['user']>>
    let port = ''
    /** GET on a host of the loopback content domain (plain HTTP). */
    const on = async (host: string, p: string, headers: Record<string, string> = {}) => {
      const r = await request(`${s.httpUrl}${p}`, { headers: { host, ...headers } })
      const text = await r.body.text()
      const h = r.headers as Record<string, string | undefined>
      return { status: r.statusCode, text, header: (n: string) => h[n.toLowerCase()] }
    }
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      port = new URL(s.httpUrl).port
      user = await s.user()
      const files = [
        { filename: 'index.html', data: INDEX },
        { filename: 'assets/app.js', data: 'document.title = "app"' },
        { filename: 'assets/app.css', data: 'p { color: red }' },
        { filename: 'docs/index.html', data: '<p>docs</p>' },
        { filename: 'about.html', data: '<p>about</p>' },
        { filename: '_redirects', data: '/app/* /index.html 200\n' },
      ]
      for (const name of ['blog', 'Upper', 'draft']) assert.equal((await batchUpload(s, { key: user.key }, name, files)).status, 200)
      for (const name of ['blog', 'Upper']) assert.equal((await s.post(`/api/folders/${name}/publish`, { key: user.key })).status, 200)
    })
    after(() => s?.close())

    const host = (project: string) => `${project}.${user.username}.localhost`

    const cases: Array<[string, number, RegExp | null, string | null]> = [
      ['/', 200, /<p>home<\/p>/, null],
      ['/index.html', 200, /home/, null],
      ['/assets/app.js', 200, /document\.title/, null],
      ['/assets/app.css', 200, /color: red/, null],
      ['/about', 200, /about/, null],
      ['/docs', 301, null, '/docs/'],
      ['/docs/', 200, /docs/, null],
      ['/app/settings', 200, /home/, null],
      ['/missing.js', 404, null, null],
      ['/_redirects', 404, null, null],
    ]
    for (const [p, status, body, location] of cases) {
      it(`serves the project at the root: ${p} -> ${status}`, async () => {
        const r = await on(host('blog'), p)
        assert.equal(r.status, status, r.text)
        if (body) assert.match(r.text, body)
        if (location !== null) assert.equal(r.header('location'), location)
        // the full web platform: no sandbox, as on the user's origin
        if (status === 200) assert.doesNotMatch(r.header('content-security-policy') ?? '', /sandbox/)
      })
    }

    it('answers the same bytes as the project under its user origin and the path form', async () => {
      const root = await on(host('blog'), '/assets/app.js')
      const under = await on(`${user.username}.localhost`, '/blog/assets/app.js')
      const path = await s.get(`/${user.username}/blog/assets/app.js`)
      assert.equal(root.text, under.text)
      assert.equal(root.text, path.text)
      assert.equal(root.header('etag'), path.header('etag'))
    })

    it('serves nothing for a project that is not published, does not exist, or is not named as a host label', async () => {
      for (const project of ['draft', 'nope', 'upper']) {
        const r = await on(host(project), '/')
        assert.equal(r.status, 404, project)
        assert.doesNotMatch(r.text, /home/, project)
      }
      // a project whose name is no host label is still served under /{project}/
      assert.equal((await on(`${user.username}.localhost`, '/Upper/')).status, 200)
    })

    it('serves nothing, and never the service, on content hosts that name no user or project', async () => {
      for (const h of [`a.blog.${user.username}.localhost`, `_x.${user.username}.localhost`, `my_blog.${user.username}.localhost`]) {
        for (const p of ['/login', '/dashboard', '/', '/svc_api/me']) {
          const r = await on(h, p)
          assert.equal(r.status, 404, `${h}${p}`)
          assert.equal(r.header('set-cookie'), undefined, `${h}${p}`)
          assert.doesNotMatch(r.text, /<form|password/i, `${h}${p}`)
        }
      }
      // bare localhost stays the service's own host
      assert.equal((await on('localhost', '/login')).status, 301)
    })

    it('is never the service: no API, no dashboard, no login on a project origin', async () => {
      const api = await on(host('blog'), '/api/folders', { authorization: `Bearer ${user.key}` })
      assert.equal(api.status, 404)
      assert.doesNotMatch(api.text, /"folders"/)
      assert.equal((await on(host('blog'), '/dashboard')).status, 404)
      const post = await request(`${s.httpUrl}/api/folders/blog/publish`, {
        method: 'POST',
        headers: { host: host('blog'), authorization: `Bearer ${user.key}` },
      })
      await post.body.text()
      assert.equal(post.statusCode, 405)
    })

    it('gives each project its origin_url in the API: lists, publish and archive deploys', async () => {
      const want = `http://blog.${user.username}.localhost:${port}/`
      const list = (await s.get('/api/folders', { key: user.key })).json.folders as Array<{ name: string; origin_url: string | null; site_url: string | null }>
      const byName = Object.fromEntries(list.map((f) => [f.name, f]))
      assert.equal(byName.blog.origin_url, want)
      assert.equal(byName.blog.site_url, `http://${user.username}.localhost:${port}/blog/`)
      assert.equal(byName.Upper.origin_url, null, 'not a host label')
      const pub = await s.post('/api/folders/blog/publish', { key: user.key })
      assert.equal(pub.json.origin_url, want)
      assert.equal((await on(new URL(want).host, '/')).status, 200)
    })

    it('sends a browser opening a site built for / under its user origin to the project origin', async () => {
      const nav = { 'sec-fetch-dest': 'document' }
      // as a browser names it, with the port: the redirect keeps the request's own host
      const userHost = `${user.username}.localhost:${port}`
      // blog's index.html loads /assets/app.js and /assets/app.css, files blog has
      for (const [p, to] of [
        ['/blog/', '/'],
        ['/blog/app/settings?tab=2', '/app/settings?tab=2'],
        ['/blog/docs/', '/docs/'],
      ]) {
        const r = await on(userHost, p, nav)
        assert.equal(r.status, 302, `${p}: ${r.text}`)
        assert.equal(r.header('location'), `http://${host('blog')}:${port}${to}`)
        assert.equal(r.text, '')
      }
      // what is not a navigation is served where it is asked for: scripts, subresources, HEAD
      assert.match((await on(userHost, '/blog/')).text, /<p>home<\/p>/)
      assert.equal((await on(userHost, '/blog/assets/app.js', { 'sec-fetch-dest': 'script' })).status, 200)
      // the path form sends a browser there at once; a site not built for / to the user origin
      const pathForm = await s.request('GET', `/${user.username}/blog/docs/?x=1`, { headers: nav })
      assert.equal(pathForm.status, 302)
      assert.equal(pathForm.headers.location, `http://${host('blog')}:${port}/docs/?x=1`)
      const upper = await s.request('GET', `/${user.username}/Upper/`, { headers: nav })
      assert.equal(upper.headers.location, `http://${user.username}.localhost:${port}/Upper/`)
      // a name that can be no host label keeps its user origin
      assert.equal((await on(userHost, '/Upper/', nav)).status, 200)
      // not built for /: links to /, the user's shared files at /, a fallback answering every path
      const sites: Record<string, Record<string, string>> = {
        links: { 'index.html': '<a href="/">home</a><link rel="canonical" href="/links/"><p>links</p>' },
        shared: { 'index.html': '<link rel="stylesheet" href="/theme.css"><p>shared</p>' },
        spa: { 'index.html': '<script src="/assets/gone.js"></script><p>spa</p>', _redirects: '/* /index.html 200\n' },
      }
      for (const [name, files] of Object.entries(sites)) {
        assert.equal((await deploySite(s, user.key, name, files)).res.status, 201)
        const r = await on(userHost, `/${name}/`, nav)
        assert.equal(r.status, 200, `${name}: ${r.header('location')}`)
        assert.match(r.text, new RegExp(`<p>${name}</p>`))
      }
      // its own copy of a file its user's origin also has (another project's, shared by the
      // user's sites): it loads fine where it is; once that copy is gone, browsers are sent on
      const both = { 'index.html': '<link rel="stylesheet" href="/common/theme.css"><p>both</p>', 'common/theme.css': 'p { color: red }' }
      assert.equal((await deploySite(s, user.key, 'both', both)).res.status, 201)
      assert.equal((await deploySite(s, user.key, 'common', { 'index.html': '<p>common</p>', 'theme.css': 'p { color: blue }' })).res.status, 201)
      assert.equal((await on(userHost, '/both/', nav)).status, 200)
      assert.equal((await s.post('/api/folders/common/unpublish', { key: user.key })).status, 200)
      assert.equal((await on(userHost, '/both/', nav)).header('location'), `http://${host('both')}:${port}/`)
      // a new deploy is checked anew: links becomes a site built for /
      const built = { 'index.html': '<script type="module" src="/main.js"></script><p>links</p>', 'main.js': 'export {}' }
      assert.equal((await deploySite(s, user.key, 'links', built)).res.status, 201)
      assert.equal((await on(userHost, '/links/', nav)).header('location'), `http://${host('links')}:${port}/`)
      // a kept deploy goes to its own origin
      const { res } = await deploySite(s, user.key, 'links', { ...built, 'index.html': built['index.html'].replace('links', 'next') }, { preview: true })
      const id = res.json.deploy.id as string
      const kept = await on(userHost, `/links@${id}/`, nav)
      assert.equal(kept.status, 302)
      assert.equal(kept.header('location'), `http://${id}--links.${user.username}.localhost:${port}/`)
    })

    it('sends browsers on before the visitor password, which the project origin asks for', async () => {
      assert.equal((await deploySite(s, user.key, 'vault', { 'index.html': INDEX.replace('home', 'vault'), 'assets/app.js': '' })).res.status, 201)
      assert.equal((await s.request('PUT', '/api/access/vault', { key: user.key, json: { password: 'hunter22' } })).status, 200)
      const r = await on(`${user.username}.localhost:${port}`, '/vault/', { 'sec-fetch-dest': 'document', accept: 'text/html' })
      assert.equal(r.status, 302)
      assert.equal(r.header('location'), `http://${host('vault')}:${port}/`)
      assert.doesNotMatch(r.text, /vault/)
      const there = await on(host('vault'), '/', { 'sec-fetch-dest': 'document', accept: 'text/html' })
      assert.equal(there.status, 401)
      assert.doesNotMatch(there.text, /<p>vault<\/p>/)
    })

    it('serves each kept deploy at the root of its own origin, {deploy id}--{project}', async () => {
      const live = { 'index.html': INDEX.replace('home', 'live'), 'assets/app.js': 'document.title = "live"' }
      const next = { 'index.html': INDEX.replace('home', 'next'), 'assets/app.js': 'document.title = "next"' }
      const first = (await deploySite(s, user.key, 'pv', live)).res
      assert.equal(first.status, 201, first.text)
      const { res } = await deploySite(s, user.key, 'pv', next, { preview: true })
      assert.equal(res.status, 201, res.text)
      const id = res.json.deploy.id as string
      const previewHost = `${id}--pv.${user.username}.localhost`
      assert.equal(res.json.preview_origin_url, `http://${previewHost}:${port}/`)
      // the preview at the root: a site built for / loads its files
      const page = await on(previewHost, '/')
      assert.equal(page.status, 200, page.text)
      assert.match(page.text, /<p>next<\/p>/)
      assert.equal(page.header('x-robots-tag'), 'noindex')
      assert.equal((await on(previewHost, '/assets/app.js')).text, next['assets/app.js'])
      // the project's own origin still serves the live deploy; the live deploy has its own too
      assert.match((await on(host('pv'), '/')).text, /<p>live<\/p>/)
      assert.match((await on(`${first.json.deploy.id}--pv.${user.username}.localhost`, '/')).text, /<p>live<\/p>/)
      // the deploy list names each one's origin
      const list = await s.get('/api/folders/pv/deploys', { key: user.key })
      assert.deepEqual(
        list.json.deploys.map((d: { id: string; preview_origin_url: string }) => d.preview_origin_url),
        list.json.deploys.map((d: { id: string }) => `http://${d.id}--pv.${user.username}.localhost:${port}/`),
      )
      // after a promote, the same preview origin serves the same bytes
      assert.equal((await s.post(`/api/folders/pv/deploys/${id}/promote`, { key: user.key })).status, 200)
      assert.match((await on(host('pv'), '/')).text, /<p>next<\/p>/)
      assert.match((await on(previewHost, '/')).text, /<p>next<\/p>/)
    })

    it("serves a preview of a project that is not live yet, and nothing for another project's or an unknown deploy", async () => {
      const { res } = await deploySite(s, user.key, 'fresh', { 'index.html': '<p>first look</p>' }, { preview: true })
      assert.equal(res.status, 201, res.text)
      const id = res.json.deploy.id as string
      assert.match((await on(`${id}--fresh.${user.username}.localhost`, '/')).text, /first look/)
      assert.equal((await on(host('fresh'), '/')).status, 404, 'not published: no project origin')
      const other = await s.user()
      const theirs = (await deploySite(s, other.key, 'fresh', { 'index.html': '<p>theirs</p>' })).res.json.deploy.id as string
      for (const h of [
        `${theirs}--fresh.${user.username}.localhost`, // another user's deploy
        `${id}--blog.${user.username}.localhost`, // another project's
        `zzzzzzzzzzzz--fresh.${user.username}.localhost`, // no such deploy
        `${id.slice(1)}--fresh.${user.username}.localhost`, // not a deploy id
        `${id}--fresh--x.${user.username}.localhost`, // not a project label
      ]) {
        const r = await on(h, '/')
        assert.equal(r.status, 404, h)
        assert.doesNotMatch(r.text, /first look|theirs|home/, h)
        assert.equal((await on(h, '/login')).status, 404, `${h}/login: never the service`)
      }
    })

    it('gives no origin to a project whose name has "--" (that form names previews)', async () => {
      assert.equal((await batchUpload(s, { key: user.key }, 'my--site', [{ filename: 'index.html', data: '<p>dashes</p>' }])).status, 200)
      const pub = await s.post('/api/folders/my--site/publish', { key: user.key })
      assert.equal(pub.status, 200, pub.text)
      assert.equal(pub.json.origin_url, null)
      assert.equal((await on(host('my--site'), '/')).status, 404)
      assert.match((await on(`${user.username}.localhost`, '/my--site/')).text, /dashes/)
    })

    it("keeps a preview origin behind its project's visitor password", async () => {
      const { res } = await deploySite(s, user.key, 'locked', { 'index.html': '<p>secret preview</p>' }, { preview: true })
      const id = res.json.deploy.id as string
      const r = await s.request('PUT', '/api/access/locked', { key: user.key, json: { password: 'hunter22' } })
      assert.equal(r.status, 200, r.text)
      const page = await on(`${id}--locked.${user.username}.localhost`, '/', { accept: 'text/html' })
      assert.equal(page.status, 401)
      assert.doesNotMatch(page.text, /secret preview/)
      const basic = await on(`${id}--locked.${user.username}.localhost`, '/', { authorization: `Basic ${Buffer.from('x:hunter22').toString('base64')}` })
      assert.match(basic.text, /secret preview/)
    })

    it("goes offline with its user's account", async () => {
      const u = await s.user()
      assert.equal((await batchUpload(s, { key: u.key }, 'site', [{ filename: 'index.html', data: '<p>x</p>' }])).status, 200)
      assert.equal((await s.post('/api/folders/site/publish', { key: u.key })).status, 200)
      assert.equal((await on(`site.${u.username}.localhost`, '/')).status, 200)
      const admin = await s.user({ admin: true })
      const r = await s.request('POST', `/svc_api/admin/users/${u.username}`, {
        cookie: await s.login(admin.username, admin.password),
        json: { disabled: true },
      })
      assert.equal(r.status, 200, r.text)
      assert.equal((await on(`site.${u.username}.localhost`, '/')).status, 404)
    })
  })
}
