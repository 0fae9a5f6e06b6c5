import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { expectError } from '../support/errors.js'
import { ENGINES, startServer, multipart, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { startDns, verifiedDomain, type TestDns } from '../support/dns.js'
import { registry } from '../../src/observability/registry.js'

// A Netlify-style form (`data-netlify`, a hidden `form-name`) posting to a page of the site
// itself, on the user's origin and on a project's own origin and a custom domain (decision 161).
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
      // a path that is no page of the site
      const missing = await on('POST', project(), '/nope/', URLENC, form({ 'form-name': slug, name: 'x' }))
      assert.equal(missing.status, 405)
      // the public host's 405 (before the body) and the forms route's (after reading it) are one answer
      const unnamed = await on('POST', project(), '/thanks/', URLENC, form({ name: 'x' }))
      assert.equal(unnamed.text, missing.text)
      for (const h of ['allow', 'content-type', 'content-length', 'cache-control', 'content-security-policy', 'access-control-allow-origin'])
        assert.equal(unnamed.header(h), missing.header(h), h)
      assert.equal((await stored(alice, formId)).length, before)
    })

    it("names only the site owner's forms: another user's slug is 1611 and stores nothing", async () => {
      const r = await on('POST', project(), '/thanks/', { ...URLENC, accept: 'application/json' }, form({ 'form-name': bobSlug, name: 'x' }))
      expectError(r as never, 404, 1611)
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

    it('the submit route behind the site post is not reachable directly', async () => {
      const r = await s.post('/api/forms/site-submit', { form: { 'form-name': slug, name: 'x' } })
      expectError(r, 404, 1404)
    })
  })
}
