import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { request } from 'undici'
import { expectError } from '../support/errors.js'
import { ENGINES, insecureAgent, startServer, multipart, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'
import { startDns, verifiedDomain, type TestDns } from '../support/dns.js'
import { registry } from '../../src/observability/registry.js'
import { SITE_FORM_ROUTE } from '../../src/http/types.js'
import { sample } from '../support/metrics.js'
import { until } from '../support/webhooks.js'

// A Netlify-style form (`data-netlify`, a hidden `form-name`) posting to a page of the site
// itself, on the user's origin, a project's own origin and a custom domain (decision 161), and
// on the path form (decision 180).
type User = Awaited<ReturnType<TestServer['user']>>
const DOMAIN = 'www.netlify-site.test'
const FORM = (action: string) => `<!doctype html><form name="contact" method="POST" data-netlify="true" action="${action}">
<input type="hidden" name="form-name" value="contact"><input name="name"><button>send</button></form>`

for (const engine of ENGINES) {
  describe(`Netlify forms posting to the site [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let alice: User
    let bob: User
    let port = ''
    let formId = ''
    let slug = ''
    let bobSlug = ''
    const HTML_ACCEPT = 'text/html,application/xhtml+xml,*/*;q=0.8'
    /** A request on a host of the loopback content domain (plain HTTP). */
    const on = async (method: string, host: string, p: string, headers: Record<string, string> = {}, body?: string | Buffer) => {
      const r = await request(`${s.httpUrl}${p}`, { method: method as 'POST', headers: { host, ...headers }, body })
      const text = await r.body.text()
      const h = r.headers as Record<string, string | undefined>
      let json: any
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      return { status: r.statusCode, text, json, header: (n: string) => h[n.toLowerCase()] }
    }
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
    const URLENC = { 'content-type': 'application/x-www-form-urlencoded' }
    const project = () => `site.${alice.username}.localhost:${port}`
    const userHost = () => `${alice.username}.localhost:${port}`
    const stored = async (u: User, id: string) => {
      const r = await s.get(`/svc_api/forms/data/${id}`, { key: u.key })
      assert.equal(r.status, 200, r.text)
      return r.json.data.submissions as Array<{ data: Record<string, unknown> }>
    }

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr } })
      port = new URL(s.httpUrl).port
      alice = await s.user()
      bob = await s.user()
      slug = `contact-${alice.username}`.slice(0, 60)
      bobSlug = `contact-${bob.username}`.slice(0, 60)
      const files = [
        { filename: 'index.html', data: FORM('/thanks/') },
        { filename: 'plain.html', data: FORM('') },
        { filename: 'thanks/index.html', data: '<p>thanks</p>' },
      ]
      assert.equal((await batchUpload(s, { key: alice.key }, 'site', files)).status, 200)
      assert.equal((await s.post('/api/folders/site/publish', { key: alice.key })).status, 200)
      const f = await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Contact', form_slug: slug } })
      assert.equal(f.status, 200, f.text)
      formId = f.json.data.id
      const b = await s.post('/svc_api/forms/create', { key: bob.key, json: { form_name: 'Contact', form_slug: bobSlug } })
      assert.equal(b.status, 200, b.text)
      await verifiedDomain(s, dns, alice.key, DOMAIN, 'site')
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it('a form-encoded post to the action page of a project origin is stored and lands there (303)', async () => {
      const body = form({ 'form-name': slug, name: 'Ann' })
      const r = await on(
        'POST',
        project(),
        '/thanks/',
        { ...URLENC, accept: HTML_ACCEPT, origin: `http://${project()}`, referer: `http://${project()}/` },
        body,
      )
      assert.equal(r.status, 303, r.text)
      assert.equal(r.header('location'), '/thanks/')
      const subs = await stored(alice, formId)
      assert.deepEqual(subs[0].data, { name: 'Ann' })
    })

    it('a multipart post to the user origin without an action page gets the thank-you page', async () => {
      const mp = multipart([
        { name: 'form-name', data: slug },
        { name: 'name', data: 'Bea' },
      ])
      const page = `http://${userHost()}/site/plain.html`
      const r = await on(
        'POST',
        userHost(),
        '/site/plain.html',
        { 'content-type': mp.contentType, accept: HTML_ACCEPT, origin: `http://${userHost()}`, referer: page },
        mp.body,
      )
      assert.equal(r.status, 200, r.text)
      assert.match(r.header('content-type') ?? '', /text\/html/)
      assert.match(r.text, /Your submission was received|你的提交已收到/)
      assert.deepEqual((await stored(alice, formId))[0].data, { name: 'Bea' })
    })

    it('a script posting to "/" gets the JSON answer (Netlify AJAX forms)', async () => {
      const r = await on('POST', project(), '/', { ...URLENC, accept: 'application/json' }, form({ 'form-name': slug, name: 'Cy' }))
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      assert.ok(r.json.data.submission_id)
      assert.deepEqual((await stored(alice, formId))[0].data, { name: 'Cy' })
    })

    it('other posts to pages still answer 405 with Allow, and store nothing', async () => {
      const before = (await stored(alice, formId)).length
      const cases: Array<[string, Record<string, string>, string]> = [
        ['no form-name', URLENC, form({ name: 'x' })],
        ['JSON', { 'content-type': 'application/json' }, JSON.stringify({ 'form-name': slug, name: 'x' })],
        ['text/plain', { 'content-type': 'text/plain' }, `form-name=${slug}`],
      ]
      for (const [label, headers, body] of cases) {
        const r = await on('POST', project(), '/thanks/', headers, body)
        assert.equal(r.status, 405, label)
        assert.match(r.header('allow') ?? '', /GET, HEAD/, label)
      }
      // the public host's 405 (before the body) and the forms route's (after reading it) are one answer
      const json = await on('POST', project(), '/thanks/', { 'content-type': 'application/json' }, '{}')
      const unnamed = await on('POST', project(), '/thanks/', URLENC, form({ name: 'x' }))
      assert.equal(unnamed.text, json.text)
      for (const h of ['allow', 'content-type', 'content-length', 'cache-control', 'content-security-policy', 'access-control-allow-origin'])
        assert.equal(unnamed.header(h), json.header(h), h)
      assert.equal((await stored(alice, formId)).length, before)
    })

    it("a form posted to a path that is no page answers as its GET: 404 in the visitor's language, nothing stored (decision 204)", async () => {
      const before = (await stored(alice, formId)).length
      const post = { 'form-name': slug, name: 'x' }
      const browser = { ...URLENC, accept: HTML_ACCEPT, 'accept-language': 'en' }
      // an action page the site lacks, on the project origin and the user origin
      for (const [host, p] of [
        [project(), '/nope/'],
        [userHost(), '/site/nope/'],
      ]) {
        const get = await on('GET', host, p, { accept: HTML_ACCEPT, 'accept-language': 'en' })
        assert.equal(get.status, 404, `${host}${p}`)
        const r = await on('POST', host, p, browser, form(post))
        assert.equal(r.status, 404, `${host}${p}: ${r.status} ${r.text.slice(0, 200)}`)
        assert.equal(r.text, get.text, 'the same page as the GET')
        assert.equal(r.header('content-type'), get.header('content-type'))
        assert.equal(r.header('allow'), undefined)
      }
      // a project unpublished since its page was loaded: its form posts to a page no longer there
      const files = [
        { filename: 'index.html', data: FORM('/thanks/') },
        { filename: 'thanks/index.html', data: '<p>thanks</p>' },
      ]
      assert.equal((await batchUpload(s, { key: alice.key }, 'gone', files)).status, 200)
      assert.equal((await s.post('/api/folders/gone/publish', { key: alice.key })).status, 200)
      const gone = `gone.${alice.username}.localhost:${port}`
      assert.equal((await on('POST', gone, '/thanks/', browser, form(post))).status, 303)
      assert.equal((await s.post('/api/folders/gone/unpublish', { key: alice.key })).status, 200)
      const r = await on('POST', gone, '/thanks/', { ...browser, 'accept-language': 'zh-CN' }, form(post))
      assert.equal(r.status, 404, r.text.slice(0, 200))
      assert.match(r.header('content-type') ?? '', /^text\/html/)
      assert.match(r.text, /lang="zh-CN"/)
      assert.equal((await stored(alice, formId)).length, before + 1, 'only the post to the published page was stored')
    })

    it("names only the site owner's forms: another user's slug is 1611 and stores nothing", async () => {
      const r = await on('POST', project(), '/thanks/', { ...URLENC, accept: 'application/json' }, form({ 'form-name': bobSlug, name: 'x' }))
      expectError(r as never, 404, 1611)
      // its doc_link names the service's error page, on the user's origin too: the site's host serves none
      const docs = `https://localhost:${new URL(s.url).port}/docs/errors#1611`
      assert.equal(r.json.doc_link, docs)
      const onUser = await on('POST', userHost(), '/site/thanks/', { ...URLENC, accept: 'application/json' }, form({ 'form-name': bobSlug, name: 'x' }))
      expectError(onUser as never, 404, 1611)
      assert.equal(onUser.json.doc_link, docs)
      const bobForm = (await s.get('/svc_api/forms/list', { key: bob.key })).json.data.forms[0]
      assert.equal(bobForm.submission_count, 0)
    })

    it("takes the site's own origin under allowed_origins, and refuses another listed nowhere (1620)", async () => {
      const u = await s.request('PUT', `/svc_api/forms/update/${formId}`, { key: alice.key, json: { allowed_origins: ['https://example.com'] } })
      assert.equal(u.status, 200, u.text)
      try {
        const own = await on(
          'POST',
          project(),
          '/',
          { ...URLENC, accept: 'application/json', origin: `http://${project()}` },
          form({ 'form-name': slug, name: 'own' }),
        )
        assert.equal(own.status, 200, own.text)
        const other = await on(
          'POST',
          project(),
          '/',
          { ...URLENC, accept: 'application/json', origin: 'https://evil.example' },
          form({ 'form-name': slug, name: 'evil' }),
        )
        expectError(other as never, 403, 1620)
        assert.notEqual((await stored(alice, formId))[0].data.name, 'evil')
        // a custom domain of the site (HTTPS) is the owner's own origin too
        const domain = await s.request('POST', '/thanks/', {
          headers: { host: DOMAIN, ...URLENC, accept: HTML_ACCEPT, origin: `https://${DOMAIN}`, referer: `https://${DOMAIN}/` },
          body: form({ 'form-name': slug, name: 'domain' }),
        })
        assert.equal(domain.status, 303, domain.text)
        assert.equal(domain.header('location'), '/thanks/')
        assert.equal((await stored(alice, formId))[0].data.name, 'domain')
      } finally {
        await s.request('PUT', `/svc_api/forms/update/${formId}`, { key: alice.key, json: { allowed_origins: [] } })
      }
    })

    it("resolves a relative _next against the page posted to, and prefers it to the action's page", async () => {
      const page = `http://${userHost()}/site/plain.html`
      // a form of its own: the per-address limit (10 a minute per form) stays the other cases'
      const own = await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Next', form_slug: `next-${alice.username}`.slice(0, 60) } })
      assert.equal(own.status, 200, own.text)
      const nextSlug = own.json.data.form_slug as string
      // a page whose Referrer-Policy sends only its origin, or no Referer at all
      for (const referer of [`http://${userHost()}/`, undefined]) {
        const headers: Record<string, string> = { ...URLENC, accept: HTML_ACCEPT, origin: `http://${userHost()}` }
        if (referer !== undefined) headers.referer = referer
        const r = await on('POST', userHost(), '/site/plain.html', headers, form({ 'form-name': nextSlug, name: 'Rel', _next: 'thanks/' }))
        assert.equal(r.status, 303, r.text)
        assert.equal(r.header('location'), `http://${userHost()}/site/thanks/`, String(referer))
      }
      // a full Referer names the form's page: the base, also when the form posts to its action page
      const full = await on(
        'POST',
        project(),
        '/thanks/',
        { ...URLENC, accept: HTML_ACCEPT, origin: `http://${project()}`, referer: `http://${project()}/plain.html` },
        form({ 'form-name': nextSlug, name: 'Act', _next: 'done.html?x=1' }),
      )
      assert.equal(full.status, 303, full.text)
      assert.equal(full.header('location'), `http://${project()}/done.html?x=1`)
      // elsewhere: ignored, the action's page as before
      const evil = await on(
        'POST',
        project(),
        '/thanks/',
        { ...URLENC, accept: HTML_ACCEPT, origin: `http://${project()}`, referer: page },
        form({ 'form-name': nextSlug, name: 'Evil', _next: 'https://evil.example/x' }),
      )
      assert.equal(evil.header('location'), '/thanks/')
      assert.equal((await stored(alice, own.json.data.id))[0].data.name, 'Evil')
    })

    it('answers the same through app.inject as over HTTP: a browser post, a script post and a 405', async () => {
      /** svc_http_requests_total by route and status. */
      const counted = async () => {
        const out = new Map<string, number>()
        for (const m of (await registry.getSingleMetric('svc_http_requests_total')?.get())?.values ?? [])
          out.set(`${m.labels.route} ${m.labels.status}`, m.value)
        return out
      }
      const viaInject = async (host: string, p: string, headers: Record<string, string>, body: string) => {
        const before = await counted()
        const r = await s.app.inject({ method: 'POST', url: p, headers: { host, ...headers }, payload: body })
        // routed again under the forms route, and counted once, under the route that answered
        const after = await counted()
        if (r.statusCode !== 405)
          assert.deepEqual(
            [...after.entries()].filter(([k, n]) => before.get(k) !== n).map(([k]) => k),
            [`/api/forms/site-submit ${r.statusCode}`],
          )
        return { status: r.statusCode, location: r.headers.location, allow: r.headers.allow, json: r.statusCode === 200 ? r.json() : undefined }
      }
      const viaHttp = async (host: string, p: string, headers: Record<string, string>, body: string) => {
        const r = await on('POST', host, p, headers, body)
        return { status: r.status, location: r.header('location'), allow: r.header('allow'), json: r.status === 200 ? r.json : undefined }
      }
      const cases: Array<[string, string, Record<string, string>, Record<string, string>]> = [
        ['browser', '/thanks/', { ...URLENC, accept: HTML_ACCEPT, origin: `http://${project()}`, referer: `http://${project()}/` }, { 'form-name': slug }],
        ['script', '/', { ...URLENC, accept: 'application/json' }, { 'form-name': slug }],
        ['no form-name', '/thanks/', URLENC, {}],
      ]
      for (const [label, p, headers, fields] of cases) {
        const answers = []
        for (const [way, send] of [
          ['http', viaHttp],
          ['inject', viaInject],
        ] as const) {
          const name = `${label} ${way}`
          const a = await send(project(), p, headers, form({ ...fields, name }))
          if (a.json) {
            assert.equal(a.json.success, true, name)
            assert.ok(a.json.data.submission_id, name)
            a.json.data.submission_id = '(id)'
          }
          const last = (await stored(alice, formId))[0]
          if (a.status !== 405) assert.deepEqual(last.data, { name }, name)
          else assert.notEqual(last.data.name, name, name)
          answers.push(a)
        }
        assert.deepEqual(answers[1], answers[0], label)
      }
    })

    /**
     * A post to `p` of alice's site on the user's origin, or on the path form (/{username}/...),
     * with the Origin and Referer a browser sends from a page of that form: its origin and the
     * page on the user's origin; `null` and none on the path form, whose pages are sandboxed
     * with `Referrer-Policy: no-referrer` (as Chromium sends them: test/browser/netlify-form).
     */
    const ways = () => [
      {
        name: "user's origin",
        origin: `http://${userHost()}`,
        base: '',
        browser: (page: string): Record<string, string> => ({ origin: `http://${userHost()}`, referer: `http://${userHost()}${page}` }),
        post: (p: string, headers: Record<string, string>, body: string | Buffer) => on('POST', userHost(), p, headers, body),
      },
      {
        name: 'path form',
        origin: new URL(s.url).origin,
        base: `/${alice.username}`,
        browser: (): Record<string, string> => ({ origin: 'null' }),
        post: (p: string, headers: Record<string, string>, body: string | Buffer) => s.request('POST', `/${alice.username}${p}`, { headers, body }),
      },
    ]
    const newForm = async (prefix: string) => {
      const f = await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: prefix, form_slug: `${prefix}-${alice.username}`.slice(0, 60) } })
      assert.equal(f.status, 200, f.text)
      return { id: f.json.data.id as string, slug: f.json.data.form_slug as string }
    }

    it('takes the same posts on the path form as on the user origin, landing under /{username}/', async () => {
      for (const [i, w] of ways().entries()) {
        // a form of its own for each URL form: the per-address limit (10 a minute per form)
        const f = await newForm(`both-${i}`)
        const browser = { ...URLENC, accept: HTML_ACCEPT }
        // a browser's post to the form's action page lands there, under the path form's prefix
        const act = await w.post('/site/thanks/', { ...browser, ...w.browser('/site/') }, form({ 'form-name': f.slug, name: 'Act' }))
        assert.equal(act.status, 303, `${w.name}: ${act.text}`)
        assert.equal(act.header('location'), `${w.base}/site/thanks/`, w.name)
        // a multipart post to the form's own page (no action): the thank-you page when the
        // Referer names that page; without one (the path form's pages send none) it is taken
        // for the action's page
        const mp = multipart([
          { name: 'form-name', data: f.slug },
          { name: 'name', data: 'Own' },
        ])
        const own = await w.post('/site/plain.html', { 'content-type': mp.contentType, accept: HTML_ACCEPT, ...w.browser('/site/plain.html') }, mp.body)
        if (w.base === '') {
          assert.equal(own.status, 200, `${w.name}: ${own.text}`)
          assert.match(own.text, /Your submission was received|你的提交已收到/, w.name)
        } else {
          assert.equal(own.status, 303, `${w.name}: ${own.text}`)
          assert.equal(own.header('location'), `${w.base}/site/plain.html`, w.name)
        }
        // a script gets the JSON answer
        const js = await w.post('/site/plain.html', { ...URLENC, accept: 'application/json' }, form({ 'form-name': f.slug, name: 'Js' }))
        assert.equal(js.status, 200, `${w.name}: ${js.text}`)
        assert.equal(js.json.success, true, w.name)
        // a relative _next, resolved against the page posted to (no Referer names another)
        const next = await w.post('/site/plain.html', { ...browser, ...w.browser('/') }, form({ 'form-name': f.slug, name: 'Next', _next: 'thanks/' }))
        assert.equal(next.status, 303, `${w.name}: ${next.text}`)
        assert.equal(next.header('location'), `${w.origin}${w.base}/site/thanks/`, w.name)
        const subs = await stored(alice, f.id)
        assert.deepEqual(subs.map((x) => x.data.name).reverse(), ['Act', 'Own', 'Js', 'Next'], w.name)

        // another user's slug: 1611; no form-name or another body type: 405 with Allow; no page: 404, as its GET (decision 204)
        expectError((await w.post('/site/thanks/', { ...URLENC, accept: 'application/json' }, form({ 'form-name': bobSlug, name: 'x' }))) as never, 404, 1611)
        const refused: Array<[string, Record<string, string>, string]> = [
          ['/site/thanks/', URLENC, form({ name: 'x' })],
          ['/site/thanks/', { 'content-type': 'application/json' }, JSON.stringify({ 'form-name': f.slug, name: 'x' })],
        ]
        for (const [p, headers, body] of refused) {
          const r = await w.post(p, headers, body)
          assert.equal(r.status, 405, `${w.name} ${p} ${headers['content-type']}`)
          assert.match(r.header('allow') ?? '', /GET, HEAD/, w.name)
        }
        const nope = await w.post('/site/nope/', URLENC, form({ 'form-name': f.slug, name: 'x' }))
        assert.equal(nope.status, 404, `${w.name} /site/nope/`)
        assert.equal(nope.header('allow'), undefined, w.name)
        assert.equal((await stored(alice, f.id)).length, 4, w.name)
      }
      const bobForm = (await s.get('/svc_api/forms/list', { key: bob.key })).json.data.forms[0]
      assert.equal(bobForm.submission_count, 0)
    })

    it('a form post to a path a _redirects line redirects gets that redirect, as its GET does, and stores nothing', async () => {
      const f = await newForm('moved')
      const files = [
        { filename: 'index.html', data: '<p>moved</p>' },
        { filename: 'contact/index.html', data: FORM('') },
        { filename: '_redirects', data: '/old-contact /contact/ 301\n/subscribe https://newsletter.example/subscribe 307\n/keep /contact/ 308\n' },
      ]
      assert.equal((await batchUpload(s, { key: alice.key }, 'moved', files)).status, 200)
      assert.equal((await s.post('/api/folders/moved/publish', { key: alice.key })).status, 200)
      for (const w of ways()) {
        const body = form({ 'form-name': f.slug, name: 'x' })
        const cases: Array<[string, number, string]> = [
          ['/moved/old-contact', 301, `${w.base}/moved/contact/`],
          // on the path form the service's origin never sends it to another site: the user's
          // origin does, 307 keeping the post (decision 298)
          ['/moved/subscribe?src=site', 307, w.base === '' ? 'https://newsletter.example/subscribe?src=site' : `http://${userHost()}/moved/subscribe?src=site`],
          ['/moved/keep', 308, `${w.base}/moved/contact/`],
        ]
        for (const [p, status, location] of cases) {
          const r = await w.post(p, { ...URLENC, accept: HTML_ACCEPT, ...w.browser('/moved/contact/') }, body)
          assert.equal(r.status, status, `${w.name} ${p}: ${r.text}`)
          assert.equal(r.header('location'), location, `${w.name} ${p}`)
        }
      }
      // on the project's own origin too
      const own = await on('POST', `moved.${alice.username}.localhost:${port}`, '/subscribe', URLENC, form({ 'form-name': f.slug }))
      assert.equal(own.status, 307, own.text)
      assert.equal(own.header('location'), 'https://newsletter.example/subscribe')
      assert.equal((await stored(alice, f.id)).length, 0)
    })

    it("the path form's origin is the service's, not the owner's: under allowed_origins its pages need \"null\"", async () => {
      const f = await newForm('origin')
      const u = await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { allowed_origins: ['https://example.com'] } })
      assert.equal(u.status, 200, u.text)
      const [site, path] = ways()
      const json = { ...URLENC, accept: 'application/json' }
      const fields = form({ 'form-name': f.slug, name: 'x' })
      assert.equal((await site.post('/site/plain.html', { ...json, ...site.browser('/site/plain.html') }, fields)).status, 200)
      // a path-form page's post, and one from the service's origin, which every user's
      // path-form pages and the service itself share: neither names the owner
      expectError((await path.post('/site/plain.html', { ...json, ...path.browser('/site/plain.html') }, fields)) as never, 403, 1620)
      expectError((await path.post('/site/plain.html', { ...json, origin: path.origin }, fields)) as never, 403, 1620)
      const listed = await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { allowed_origins: ['null'] } })
      assert.equal(listed.status, 200, listed.text)
      assert.equal((await path.post('/site/plain.html', { ...json, ...path.browser('/site/plain.html') }, fields)).status, 200)
      assert.equal((await stored(alice, f.id)).length, 2)
    })

    it("a path-form post meets the page's visitor access first (HTTP Basic), as its GET does", async () => {
      const f = await newForm('gated')
      const put = await s.request('PUT', '/api/access/site', { key: alice.key, json: { password: 'hunter22' } })
      assert.equal(put.status, 200, put.text)
      try {
        const fields = form({ 'form-name': f.slug, name: 'gated' })
        const p = `/${alice.username}/site/plain.html`
        const shut = await s.request('POST', p, { headers: { ...URLENC, accept: 'application/json' }, body: fields })
        assert.equal(shut.status, 401, shut.text)
        assert.match(shut.header('www-authenticate') ?? '', /^Basic /)
        assert.equal((await stored(alice, f.id)).length, 0)
        const authorization = `Basic ${Buffer.from(`visitor:hunter22`).toString('base64')}`
        const open = await s.request('POST', p, { headers: { ...URLENC, accept: 'application/json', authorization }, body: fields })
        assert.equal(open.status, 200, open.text)
        assert.equal((await stored(alice, f.id)).length, 1)
      } finally {
        await s.request('PUT', '/api/access/site', { key: alice.key, json: { password: null } })
      }
    })

    it('a path-form post through app.inject is routed to the forms route and counted once', async () => {
      const f = await newForm('inject')
      const before = (await registry.getSingleMetric('svc_http_requests_total')?.get())?.values.find(
        (m) => m.labels.route === '/api/forms/site-submit' && String(m.labels.status) === '303',
      )?.value
      const r = await s.app.inject({
        method: 'POST',
        url: `/${alice.username}/site/thanks/`,
        headers: { host: new URL(s.url).host, ...URLENC, accept: HTML_ACCEPT },
        payload: form({ 'form-name': f.slug, name: 'inj' }),
      })
      assert.equal(r.statusCode, 303, r.body)
      assert.equal(r.headers.location, `/${alice.username}/site/thanks/`)
      const after = (await registry.getSingleMetric('svc_http_requests_total')?.get())?.values.find(
        (m) => m.labels.route === '/api/forms/site-submit' && String(m.labels.status) === '303',
      )?.value
      assert.equal((after ?? 0) - (before ?? 0), 1)
      assert.deepEqual((await stored(alice, f.id))[0].data, { name: 'inj' })
    })

    it('a page or project held for review takes no post: 451 as its GET on every URL form, nothing stored or sent', async () => {
      const a = await s.user({ admin: true })
      const cookie = await s.login(a.username, a.password)
      const adminCall = (p: string, json?: unknown) => s.request('POST', p, { cookie, ...(json === undefined ? {} : { json }) })
      const f = await newForm('held')
      // a webhook: a taken post would queue a delivery, listed below
      const hook = await s.request('PUT', `/svc_api/forms/webhook/${f.id}`, { key: alice.key, json: { url: 'http://127.0.0.1:9/hook' } })
      assert.equal(hook.status, 200, hook.text)
      // a single page and a project of its own, with a custom domain and a kept deploy's origin
      assert.equal((await uploadFile(s, { key: alice.key }, 'held.html', FORM(''))).status, 200)
      const files = [
        { filename: 'index.html', data: FORM('/thanks/') },
        { filename: 'thanks/index.html', data: '<p>thanks</p>' },
      ]
      assert.equal((await batchUpload(s, { key: alice.key }, 'heldsite', files)).status, 200)
      assert.equal((await s.post('/api/folders/heldsite/publish', { key: alice.key })).status, 200)
      const deploy = (await s.get('/api/folders/heldsite/deploys', { key: alice.key })).json.live_deploy_id as string
      const heldDomain = 'www.held-site.test'
      await verifiedDomain(s, dns, alice.key, heldDomain, 'heldsite')
      const u = alice.username
      const project = `heldsite.${u}.localhost:${port}`
      const kept = `${deploy}--heldsite.${u}.localhost:${port}`
      type Way = {
        name: string
        ask: (
          method: string,
          headers: Record<string, string>,
          body?: string | Buffer,
        ) => Promise<{ status: number; text: string; header: (n: string) => string | undefined }>
      }
      const pathForm = (p: string): Way => ({ name: `path form ${p}`, ask: (method, headers, body) => s.request(method, p, { headers, body }) })
      const onHost = (host: string, p: string): Way => ({ name: `${host} ${p}`, ask: (method, headers, body) => on(method, host, p, headers, body) })
      const onDomain = (p: string): Way => ({
        name: `${heldDomain} ${p}`,
        ask: (method, headers, body) => s.request(method, p, { headers: { host: heldDomain, ...headers }, body }),
      })
      const ways: Way[] = [
        // the page: at its own name and its clean URL
        pathForm(`/${u}/held.html`),
        pathForm(`/${u}/held`),
        onHost(userHost(), '/held.html'),
        onHost(userHost(), '/held'),
        // the project: its pages, a kept deploy of it, its own origins and its domain
        pathForm(`/${u}/heldsite/`),
        pathForm(`/${u}/heldsite/thanks/`),
        pathForm(`/${u}/heldsite@${deploy}/`),
        onHost(userHost(), '/heldsite/thanks/'),
        onHost(project, '/'),
        onHost(project, '/thanks/'),
        onHost(kept, '/thanks/'),
        onDomain('/thanks/'),
      ]
      // taken before the hold, on both URL forms of both
      for (const w of [ways[0], ways[3], ways[5], ways[9]]) {
        const r = await w.ask('POST', { ...URLENC, accept: 'application/json' }, form({ 'form-name': f.slug, name: 'before' }))
        assert.equal(r.status, 200, `${w.name}: ${r.text}`)
      }
      const taken = (await stored(alice, f.id)).length
      const sent = (await s.get(`/svc_api/forms/deliveries/${f.id}`, { key: alice.key })).json.data.length as number
      assert.equal(taken, 4)
      assert.equal(sent, 4)

      const reports: string[] = []
      for (const url of [`${s.url}/${u}/held.html`, `http://${project}/`]) {
        const rep = await adminCall('/svc_api/admin/reports', { url, category: 'phishing' })
        assert.equal(rep.status, 201, rep.text)
        assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`)).status, 200)
        reports.push(rep.json.data.id)
      }
      try {
        const mp = multipart([
          { name: 'form-name', data: f.slug },
          { name: 'name', data: 'held' },
        ])
        const fields = form({ 'form-name': f.slug, name: 'held' })
        const posts: Array<[string, Record<string, string>, string | Buffer]> = [
          ['browser', { ...URLENC, accept: HTML_ACCEPT }, fields],
          ['script', { ...URLENC, accept: 'application/json' }, fields],
          ['multipart', { 'content-type': mp.contentType, accept: HTML_ACCEPT }, mp.body],
        ]
        // posts first: the first one after the holds changed finds them not loaded yet
        for (const w of ways) {
          const answers = []
          for (const [, headers, body] of posts) answers.push(await w.ask('POST', headers, body))
          const get = await w.ask('GET', { accept: HTML_ACCEPT })
          assert.equal(get.status, 451, `${w.name} GET`)
          for (const [i, r] of answers.entries()) {
            const name = `${w.name} ${posts[i][0]}`
            assert.equal(r.status, 451, `${name}: ${r.text}`)
            // the GET's notice, byte for byte and with its headers (its report link names this URL)
            assert.equal(r.text, get.text, name)
            for (const h of ['content-type', 'content-length', 'cache-control', 'vary', 'content-security-policy', 'link', 'location'])
              assert.equal(r.header(h), get.header(h), `${name} ${h}`)
          }
        }
        // in the visitor's language, as the GET's (decision 197)
        for (const [lang, words] of [
          ['en', 'This content is held for review after an abuse report.'],
          ['zh-CN', '该内容因滥用举报正在接受审核。'],
        ]) {
          const post = await ways[2].ask('POST', { ...URLENC, accept: HTML_ACCEPT, 'accept-language': lang }, fields)
          const get = await ways[2].ask('GET', { accept: HTML_ACCEPT, 'accept-language': lang })
          assert.equal(post.status, 451, lang)
          assert.ok(post.text.includes(`<p>${words}</p>`), `${lang}: ${post.text}`)
          assert.equal(post.text, get.text, lang)
          assert.equal(post.header('vary'), 'Accept-Language', lang)
        }
        // nothing stored, no webhook queued
        assert.equal((await stored(alice, f.id)).length, taken)
        assert.equal((await s.get(`/svc_api/forms/deliveries/${f.id}`, { key: alice.key })).json.data.length, sent)
        // a body no form sends stays 405, as on any page
        const other = await ways[0].ask('POST', { 'content-type': 'application/json' }, JSON.stringify({ 'form-name': f.slug }))
        assert.equal(other.status, 405)
      } finally {
        for (const id of reports) assert.equal((await adminCall(`/svc_api/admin/reports/${id}/restore`)).status, 200)
      }
    })

    it('a taken-down page takes no post: 451 as its GET on the user origin and the path form, nothing stored or sent', async () => {
      const a = await s.user({ admin: true })
      const cookie = await s.login(a.username, a.password)
      const adminCall = (p: string, json?: unknown) => s.request('POST', p, { cookie, ...(json === undefined ? {} : { json }) })
      const f = await newForm('gone')
      const hook = await s.request('PUT', `/svc_api/forms/webhook/${f.id}`, { key: alice.key, json: { url: 'http://127.0.0.1:9/hook' } })
      assert.equal(hook.status, 200, hook.text)
      // bytes of its own: a takedown blocks them at upload until lifted
      assert.equal((await uploadFile(s, { key: alice.key }, 'gone.html', `${FORM('')}<!-- gone -->`)).status, 200)
      const u = alice.username
      const rep = await adminCall('/svc_api/admin/reports', { url: `${s.url}/${u}/gone.html`, category: 'phishing' })
      assert.equal(rep.status, 201, rep.text)
      assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, {})).status, 200)
      try {
        const mp = multipart([
          { name: 'form-name', data: f.slug },
          { name: 'name', data: 'gone' },
        ])
        const fields = form({ 'form-name': f.slug, name: 'gone' })
        const posts: Array<[string, Record<string, string>, string | Buffer]> = [
          ['browser', { ...URLENC, accept: HTML_ACCEPT }, fields],
          ['script', { ...URLENC, accept: 'application/json' }, fields],
          ['multipart', { 'content-type': mp.contentType, accept: HTML_ACCEPT }, mp.body],
        ]
        // (its clean URL, /gone, names nothing once the page is gone: 404, as any missing page)
        const ways: Array<
          [
            string,
            (
              method: string,
              headers: Record<string, string>,
              body?: string | Buffer,
            ) => Promise<{ status: number; text: string; header: (n: string) => string | undefined }>,
          ]
        > = [
          ['path form', (method, headers, body) => s.request(method, `/${u}/gone.html`, { headers, body })],
          ['user origin', (method, headers, body) => on(method, userHost(), '/gone.html', headers, body)],
        ]
        for (const [way, ask] of ways) {
          const get = await ask('GET', { accept: HTML_ACCEPT })
          assert.equal(get.status, 451, `${way} GET`)
          // no Accept-Language: the service's default language
          assert.match(get.text, /该内容已因滥用举报被移除/, way)
          for (const [label, headers, body] of posts) {
            const r = await ask('POST', headers, body)
            assert.equal(r.status, 451, `${way} ${label}: ${r.text}`)
            assert.equal(r.text, get.text, `${way} ${label}`)
            for (const h of ['content-type', 'content-length', 'cache-control', 'vary', 'content-security-policy', 'link'])
              assert.equal(r.header(h), get.header(h), `${way} ${label} ${h}`)
          }
        }
        assert.equal((await stored(alice, f.id)).length, 0)
        assert.equal((await s.get(`/svc_api/forms/deliveries/${f.id}`, { key: alice.key })).json.data.length, 0)
      } finally {
        assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/lift`)).status, 200)
      }
    })

    it('a hold placed while the body of a post is still arriving refuses it: 451, nothing stored or sent', async () => {
      const a = await s.user({ admin: true })
      const cookie = await s.login(a.username, a.password)
      const adminCall = (p: string, json?: unknown) => s.request('POST', p, { cookie, ...(json === undefined ? {} : { json }) })
      const f = await newForm('race')
      const hook = await s.request('PUT', `/svc_api/forms/webhook/${f.id}`, { key: alice.key, json: { url: 'http://127.0.0.1:9/hook' } })
      assert.equal(hook.status, 200, hook.text)
      assert.equal((await uploadFile(s, { key: alice.key }, 'race.html', `${FORM('')}<!-- race -->`)).status, 200)
      const u = alice.username
      assert.equal(sample((await s.get('/metrics')).text, 'svc_http_requests_in_flight', { route: SITE_FORM_ROUTE }), 0)
      // the holds loaded and the page not held: the public host's own check lets both through
      for (const r of [await s.get(`/${u}/race.html`), await on('GET', userHost(), '/race.html')]) assert.equal(r.status, 200)
      // each body is sent in two parts; the second waits for the hold
      let release = () => {}
      const held = new Promise<void>((resolve) => (release = resolve))
      async function* parts(b: Buffer) {
        yield b.subarray(0, 8)
        await held
        yield b.subarray(8)
      }
      const send = async (url: string, headers: Record<string, string>, body: Buffer) => {
        const r = await request(url, {
          method: 'POST',
          headers: { ...headers, 'content-length': String(body.length), accept: 'application/json' },
          body: Readable.from(parts(body)),
          dispatcher: insecureAgent,
        })
        const text = await r.body.text()
        const h = r.headers as Record<string, string | undefined>
        return { status: r.statusCode, text, header: (n: string) => h[n] }
      }
      const mp = multipart([
        { name: 'form-name', data: f.slug },
        { name: 'name', data: 'late' },
      ])
      const urlenc = Buffer.from(form({ 'form-name': f.slug, name: 'late' }))
      const answers = Promise.all([
        send(`${s.httpUrl}/race.html`, { ...URLENC, host: userHost() }, urlenc),
        send(`${s.url}/${u}/race.html`, { 'content-type': mp.contentType }, mp.body),
      ])
      // both requests are past the public host's check: the forms route has taken them, and
      // waits for the rest of their bodies
      await until(
        async () => sample((await s.get('/metrics')).text, 'svc_http_requests_in_flight', { route: SITE_FORM_ROUTE }) === 2,
        10_000,
        'both posts in flight in the forms route',
      )
      const rep = await adminCall('/svc_api/admin/reports', { url: `${s.url}/${u}/race.html`, category: 'phishing' })
      assert.equal(rep.status, 201, rep.text)
      try {
        assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`)).status, 200)
        release()
        // each the notice its URL's GET answers, headers included
        const gets = [await on('GET', userHost(), '/race.html'), await s.get(`/${u}/race.html`)]
        for (const [i, r] of (await answers).entries()) {
          assert.equal(r.status, 451, `${i}: ${r.text}`)
          assert.equal(gets[i].status, 451)
          // no Accept-Language: the service's default language
          assert.match(r.text, /该内容因滥用举报正在接受审核/)
          assert.equal(r.text, gets[i].text, String(i))
          for (const h of ['content-type', 'content-length', 'cache-control', 'vary', 'content-security-policy', 'link'])
            assert.equal(r.header(h), gets[i].header(h), `${i} ${h}`)
        }
        assert.equal((await stored(alice, f.id)).length, 0)
        assert.equal((await s.get(`/svc_api/forms/deliveries/${f.id}`, { key: alice.key })).json.data.length, 0)
      } finally {
        release()
        assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/restore`)).status, 200)
      }
    })

    it('the submit route behind the site post is not reachable directly', async () => {
      const r = await s.post('/api/forms/site-submit', { form: { 'form-name': slug, name: 'x' } })
      expectError(r, 404, 1404)
    })
  })
}
