import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import https from 'node:https'
import { request } from 'undici'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'

// Site rules (_redirects, _headers, 404.html, clean URLs) as a visitor meets them, on the path
// form, on the user's own origin and on the project's own origin, and how a publish takes or
// refuses them.
const REDIRECTS = [
  '# rules of the test site',
  '/old /about 301',
  '/blog/:slug /posts/:slug.html 200',
  '/ext/* https://example.com/:splat 302',
  '/item/:id https://example.com/items/:id?from=:id 302',
  '/gone /404.html 410',
  '/forced /about 302!',
  '/q /about?from=q 301',
  '/frag /about#top 301',
  '/news/* /blog/:splat 301',
  '/clean-target /about 200',
  '/app/* /index.html 200',
  '/go/* /:splat 301',
  // special characters written percent-encoded, as Netlify's documentation asks
  '/authors/c%C3%A9line /about 301',
  '/menu /caf%C3%A9.html 200',
  '/space /my%20page 200',
  // a rewrite to a folder named without its slash serves its index.html, as on Netlify
  '/panel/* /spa 200',
  // and its index.htm when it has no index.html (decision 173), named with or without its slash
  '/legacy/* /old-spa/ 200',
  '/legacy-app/* /old-spa 200',
  // dot segments of a target are resolved inside the project
  '/up /../../other/about 301',
  '/up-rewrite /docs/../../about 200',
  '/peek/* /docs/:splat 200',
  // Netlify's query matches (decision 110)
  '/store id=:id /posts/:id 301',
  '/articles id=:id tag=:tag /posts/:tag/:id 301',
  '/articles id=:id /posts/:id 301',
  '/read id=:id /posts/:id 200',
  '/to dest=:d /:d 301',
  // paths match with their case, as on Netlify and Cloudflare Pages (decision 176): a line that
  // sends old mixed-case URLs to lowercase ones never catches its own target
  '/Docs/Old /about 301',
  '/Guides/* /guides/:splat 301',
].join('\n')
const HEADERS =
  "/*\n  X-Site: yes\n  Accept-CH: DPR\n/about\n  Cache-Control: public, max-age=60\n  Content-Security-Policy: frame-ancestors 'none'\n/assets/*\n  Cache-Control: public, max-age=31536000, immutable\n  CDN-Cache-Control: max-age=31536000\n  Surrogate-Control: max-age=31536000\n/caf%C3%A9.html\n  X-Menu: yes\n/posts/:slug\n  X-Slug: :slug\n"

for (const engine of ENGINES) {
  describe(`site rules [${engine}]`, () => {
    let s: TestServer
    let user: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      user = await s.user()
      const r = await batchUpload(s, { key: user.key }, 'site', [
        { filename: 'index.html', data: '<p>home</p>' },
        { filename: 'about.html', data: '<p>about</p>' },
        { filename: 'posts/hello.html', data: '<p>hello post</p>' },
        { filename: 'forced.html', data: '<p>shadowed</p>' },
        { filename: 'docs/index.html', data: '<p>docs</p>' },
        { filename: 'guide.html', data: '<p>guide</p>' },
        { filename: 'assets/app-1234.js', data: 'console.log(1)' },
        { filename: '404.html', data: '<p>custom 404</p>' },
        { filename: 'café.html', data: '<p>menu</p>' },
        { filename: 'my page.html', data: '<p>my page</p>' },
        { filename: 'spa/index.html', data: '<p>spa shell</p>' },
        { filename: 'menü/index.html', data: '<p>menu folder</p>' },
        { filename: 'old-spa/index.htm', data: '<p>old spa shell</p>' },
        { filename: '_redirects', data: REDIRECTS },
        { filename: '_headers', data: HEADERS },
      ])
      assert.equal(r.status, 200, r.text)
      const p = await s.post('/api/folders/site/publish', { key: user.key })
      assert.equal(p.status, 200, p.text)
    })
    after(() => s.close())

    /** GET on the path form (over HTTPS), the user's origin or the project's origin (plain HTTP on loopback). */
    const get = async (where: 'path' | 'site' | 'project', p: string) => {
      if (where === 'path') return s.get(`/${user.username}/site${p}`)
      const r =
        where === 'site'
          ? await request(`${s.httpUrl}/site${p}`, { headers: { host: `${user.username}.localhost` } })
          : await request(`${s.httpUrl}${p}`, { headers: { host: `site.${user.username}.localhost` } })
      const text = await r.body.text()
      const h = r.headers as Record<string, string | undefined>
      return { status: r.statusCode, text, header: (n: string) => h[n.toLowerCase()] }
    }

    for (const where of ['path', 'site', 'project'] as const) {
      const prefix = () => (where === 'path' ? `/${user.username}/site` : where === 'site' ? '/site' : '')
      // a redirect to another site: on the path form, the same path on the user's origin, which
      // answers it (decision 298, test/http/path-form-redirect.test.ts)
      const away = (p: string, to: string) => () => (where === 'path' ? `http://${user.username}.localhost:${new URL(s.httpUrl).port}/site${p}` : to)
      const cases: Array<[string, number, RegExp | null, (() => string) | null]> = [
        ['/', 200, /home/, null],
        ['/about', 200, /about/, null],
        ['/about.html', 200, /about/, null],
        ['/old', 301, null, () => `${prefix()}/about`],
        ['/blog/hello', 200, /hello post/, null],
        ['/ext/a/b', 302, null, away('/ext/a/b', 'https://example.com/a/b')],
        // a placeholder in the path of another site's URL fills it; the host stays the rule's
        ['/item/evil.example', 302, null, away('/item/evil.example', 'https://example.com/items/evil.example?from=evil.example')],
        ['/item/@evil.example', 302, null, away('/item/@evil.example', 'https://example.com/items/%40evil.example?from=%40evil.example')],
        ['/gone', 410, /custom 404/, null],
        ['/forced', 302, null, () => `${prefix()}/about`],
        ['/app/settings/profile', 200, /home/, null],
        // an encoded slash is a slash, as nginx and Netlify read it: a single-page app's route
        // holding one (`/files/docs%2Freadme.md`) gets the fallback, a file is found through one
        ['/app/docs%2Freadme.md', 200, /home/, null],
        ['/app/a%2F..%2F..%2Fb', 200, /home/, null],
        ['/posts%2Fhello.html', 200, /hello post/, null],
        ['/nothing%2Fhere', 404, /custom 404/, null],
        // malformed escapes and backslashes stay a bad request
        ['/app/100%zz', 400, null, null],
        ['/app/a%5Cb', 400, null, null],
        ['/docs', 301, null, () => `${prefix()}/docs/`],
        ['/docs/', 200, /docs/, null],
        ['/missing', 404, /custom 404/, null],
        // the request's query is passed on: joined to the target's, before its fragment
        ['/q?x=2', 301, null, () => `${prefix()}/about?from=q&x=2`],
        ['/frag?x=1', 301, null, () => `${prefix()}/about?x=1#top`],
        // a splat's ? and # stay in the path
        ['/news/a%3Fb', 301, null, () => `${prefix()}/blog/a%3Fb`],
        ['/news/a%20b%23c', 301, null, () => `${prefix()}/blog/a%20b%23c`],
        ['/ext/a%3Fb?x=1', 302, null, away('/ext/a%3Fb?x=1', 'https://example.com/a%3Fb?x=1')],
        // repeated slashes go to the merged path before any rule reads it (decision 111), so a
        // value with an empty first segment never makes a Location of another host (//evil.com)
        ['/go//evil.com', 301, null, () => `${prefix()}/go/evil.com`],
        ['/go///evil.com?x=1', 301, null, () => `${prefix()}/go/evil.com?x=1`],
        ['//docs/', 301, null, () => `${prefix()}/docs/`],
        ['/docs//?x=1', 301, null, () => `${prefix()}/docs/?x=1`],
        ['/about//', 301, null, () => `${prefix()}/about/`],
        ['//', 301, null, () => `${prefix()}/`],
        ['//evil.example', 301, null, () => `${prefix()}/evil.example`],
        ['///evil.example/x//', 301, null, () => `${prefix()}/evil.example/x/`],
        ['/go/a', 301, null, () => `${prefix()}/a`],
        // a rewrite's target is found by its clean URL too
        ['/clean-target', 200, /about/, null],
        // a slash form whose clean-URL file exists goes to the slashless form
        ['/guide/', 301, null, () => `${prefix()}/guide`],
        ['/guide/?x=1', 301, null, () => `${prefix()}/guide?x=1`],
        ['/guide', 200, /guide/, null],
        ['/assets/app-1234.js', 200, /console/, null],
        ['/assets/missing-5678.js', 404, /custom 404/, null],
        ['/_redirects', 404, /custom 404/, null],
        ['/_headers', 404, /custom 404/, null],
        // a rule's percent-encoded paths name what a request's encoded path names
        ['/authors/c%C3%A9line', 301, null, () => `${prefix()}/about`],
        ['/authors/c%C3%A9line/', 301, null, () => `${prefix()}/about`],
        ['/menu', 200, /menu/, null],
        ['/space', 200, /my page/, null],
        ['/panel/users/7', 200, /spa shell/, null],
        ['/panel', 200, /spa shell/, null],
        ['/legacy/users/7', 200, /old spa shell/, null],
        ['/legacy-app/users/7', 200, /old spa shell/, null],
        ['/old-spa', 301, null, () => `${prefix()}/old-spa/`],
        ['/old-spa/', 200, /old spa shell/, null],
        ['/up', 301, null, () => `${prefix()}/other/about`],
        ['/up-rewrite', 200, /about/, null],
        // a rule with query matches applies only when they are there; the parameters it took
        // are not passed on, the others are
        ['/store?id=hello', 301, null, () => `${prefix()}/posts/hello`],
        ['/store?utm=x&id=hello', 301, null, () => `${prefix()}/posts/hello?utm=x`],
        ['/store', 404, /custom 404/, null],
        ['/articles?id=5&tag=news', 301, null, () => `${prefix()}/posts/news/5`],
        ['/articles?id=5', 301, null, () => `${prefix()}/posts/5`],
        // one path, answers chosen by the query, each cached apart
        ['/read?id=hello', 200, /hello post/, null],
        ['/read?id=nope', 404, /custom 404/, null],
        ['/read', 404, /custom 404/, null],
        ['/read?id=hello&x=1', 200, /hello post/, null],
        ['/read?id=nope', 404, /custom 404/, null],
        // a value never makes a Location of another host
        ['/to?dest=%2F%2Fevil.example', 301, null, () => (where === 'project' ? '/evil.example' : `${prefix()}///evil.example`)],
        // case-sensitive paths, plain lines and splat lines alike (decision 176)
        ['/Docs/Old', 301, null, () => `${prefix()}/about`],
        ['/Docs/Old/', 301, null, () => `${prefix()}/about`],
        ['/docs/old', 404, /custom 404/, null],
        ['/DOCS/OLD', 404, /custom 404/, null],
        ['/Guides/Intro', 301, null, () => `${prefix()}/guides/Intro`],
        ['/guides/missing', 404, /custom 404/, null],
      ]
      for (const [p, status, body, location] of cases) {
        it(`${where} form: ${p} -> ${status}`, async () => {
          const r = await get(where, p)
          assert.equal(r.status, status, r.text)
          if (body) assert.match(r.text, body)
          if (location) assert.equal(r.header('location'), location())
          if (status === 200 || status === 404 || status === 410) assert.equal(r.header('x-site'), 'yes')
        })
      }
      it(`${where} form: a percent-encoded _headers pattern applies to its file and to a rewrite to it`, async () => {
        assert.equal((await get(where, '/caf%C3%A9.html')).header('x-menu'), 'yes')
        assert.equal((await get(where, '/menu')).header('x-menu'), 'yes')
      })
      it(`${where} form: a _headers value takes what its pattern's placeholder matched, encoded`, async () => {
        assert.equal((await get(where, '/posts/hello')).header('x-slug'), 'hello')
        // a pattern matches with its case, as a _redirects line does (decision 176)
        assert.equal((await get(where, '/Posts/hello')).header('x-slug'), undefined)
        const r = await get(where, '/posts/a%0D%0AX-Injected:%201')
        assert.equal(r.status, 404)
        assert.equal(r.header('x-slug'), 'a%0D%0AX-Injected%3A%201')
        assert.equal(r.header('x-injected'), undefined)
      })
      it(`${where} form: a 404 takes the path's _headers but never its Cache-Control`, async () => {
        assert.equal((await get(where, '/assets/app-1234.js')).header('cache-control'), 'public, max-age=31536000, immutable')
        const r = await get(where, '/assets/missing-5678.js')
        assert.equal(r.status, 404)
        assert.equal(r.header('x-site'), 'yes')
        assert.doesNotMatch(String(r.header('cache-control')), /immutable|31536000/)
        // nor a CDN's own cache field, which a CDN obeys before Cache-Control
        assert.equal((await get(where, '/assets/app-1234.js')).header('cdn-cache-control'), 'max-age=31536000')
        assert.equal(r.header('cdn-cache-control'), undefined)
        assert.equal(r.header('surrogate-control'), undefined)
      })
      it(`${where} form: _headers replaces Cache-Control, adds a CSP, keeps the service's own headers`, async () => {
        const r = await get(where, '/about')
        assert.equal(r.header('cache-control'), 'public, max-age=60')
        assert.equal(r.header('x-content-type-options'), 'nosniff')
        const csp = String(r.header('content-security-policy'))
        assert.match(csp, /frame-ancestors 'none'/)
        // the path form keeps its sandbox whatever the rules say; the user's and project's origins have none
        if (where === 'path') assert.match(csp, /sandbox/)
        else assert.doesNotMatch(csp, /sandbox/)
        // a header that would set the service origin's state is a site's own origins' only
        assert.equal(r.header('accept-ch'), where === 'path' ? undefined : 'DPR')
      })
    }

    /** A GET sent as written (a browser or fetch() would resolve dots and backslashes before sending). */
    const raw = (where: 'path' | 'site' | 'project', p: string, pathPrefix?: string) =>
      new Promise<{ status: number; location: string | undefined; text: string }>((resolve, reject) => {
        const url = new URL(where === 'path' ? s.url : s.httpUrl)
        const opts = {
          host: '127.0.0.1',
          port: url.port,
          method: 'GET',
          path: (pathPrefix ?? (where === 'path' ? `/${user.username}/site` : where === 'site' ? '/site' : '')) + p,
          headers: where === 'path' ? {} : { host: where === 'site' ? `${user.username}.localhost` : `site.${user.username}.localhost` },
          rejectUnauthorized: false,
        }
        const req = (where === 'path' ? https : http).request(opts, (res) => {
          let text = ''
          res.on('data', (d: Buffer) => (text += d.toString()))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, text }))
        })
        req.on('error', reject)
        req.end()
      })

    it('repeated slashes before the project go to the merged path too, and never to another host', async () => {
      const merged: Array<['path' | 'site', string, string]> = [
        ['path', `/${user.username}//site/about`, `/${user.username}/site/about`],
        ['path', `/${user.username}/site//docs//`, `/${user.username}/site/docs/`],
        ['site', '//site/about', '/site/about'],
        ['site', '///site//', '/site/'],
        // before the username too, on the service's host
        ['path', `//${user.username}/site/about`, `/${user.username}/site/about`],
        ['path', `///${user.username}//site//?x=1`, `/${user.username}/site/?x=1`],
        ['path', `//${user.username.toUpperCase()}/site/`, `/${user.username.toUpperCase()}/site/`],
      ]
      for (const [where, p, location] of merged) {
        const r = await raw(where, p, '')
        assert.equal(r.status, 301, `${where} ${p}: ${r.text}`)
        assert.equal(r.location, location, `${where} ${p}`)
      }
      // a backslash (which browsers read as a slash) is refused, never merged into a Location
      for (const where of ['path', 'site', 'project'] as const) {
        for (const p of ['/\\evil.example', '//\\evil.example', '/%5C%5Cevil.example']) {
          const r = await raw(where, p)
          assert.ok(r.location === undefined || /^\/[^/\\]/.test(r.location), `${where} ${p}: ${r.location}`)
          assert.notEqual(r.status, 301, `${where} ${p}`)
        }
      }
      // nor does an encoded slash, which is a slash (a rule's splat may hold a run of them)
      for (const where of ['path', 'site', 'project'] as const) {
        for (const p of ['/%2F%2Fevil.example', '/go/%2F%2Fevil.example', '/go/%2F/%2Fevil.example/x', '//%2F/evil.example', '/%2F%5Cevil.example']) {
          const r = await raw(where, p)
          assert.ok(r.location === undefined || /^\/[^/\\]/.test(r.location), `${where} ${p}: ${r.location}`)
        }
      }
      // the project's (or a page's) own name is read strictly, as holds and visitor passwords
      // read it: an encoded slash there is a bad request, never another name's content
      for (const p of [`/${user.username}/site%2Fabout`, `/${user.username}/site%2F`, `/${user.username}/about.html%2F`])
        assert.equal((await raw('path', p, '')).status, 400, p)
      assert.equal((await raw('site', '/site%2Fabout', '')).status, 400)
      // on the service's host, where the first segment is the username: a merged path whose
      // first segment names no user is not redirected, and no Location ever names another host
      for (const p of ['//evil.example/x', '///x', '/\\evil.example', '/%2F%2Fevil.example', '//%2F/evil.example', '//\\evil.example/x', '//login']) {
        const r = await raw('path', p, '')
        assert.equal(r.location, undefined, `${p}: ${r.status} ${r.location}`)
        assert.ok([400, 404].includes(r.status), `${p}: ${r.status}`)
      }
    })

    it('writes the escapes of a slash, merged-slash or slashless Location in uppercase (RFC 3986 2.1)', async () => {
      // a client may send lowercase escapes; the Location names the same path in the form browsers send
      for (const where of ['path', 'site', 'project'] as const) {
        const prefix = where === 'path' ? `/${user.username}/site` : where === 'site' ? '/site' : ''
        const cases: Array<[string, string]> = [
          ['/men%c3%bc', '/men%C3%BC/'],
          ['/men%c3%bc?x=%c3%a9', '/men%C3%BC/?x=%c3%a9'],
          ['/caf%c3%a9/', '/caf%C3%A9'],
          ['//men%c3%bc//', '/men%C3%BC/'],
          ['/me%6e%c3%bc', '/me%6E%C3%BC/'],
        ]
        for (const [p, location] of cases) {
          const r = await raw(where, p)
          assert.equal(r.status, 301, `${where} ${p}: ${r.text}`)
          assert.equal(r.location, prefix + location, `${where} ${p}`)
        }
      }
      // a project named with escapes, on the path form and the user's origin
      const u = await s.user()
      assert.equal((await batchUpload(s, { key: u.key }, 'café', [{ filename: 'index.html', data: '<p>c</p>' }])).status, 200)
      assert.equal((await s.post(`/api/folders/${encodeURIComponent('café')}/publish`, { key: u.key })).status, 200)
      const path = await raw('path', `/${u.username}/caf%c3%a9`, '')
      assert.equal(path.status, 301, path.text)
      assert.equal(path.location, `/${u.username}/caf%C3%A9/`)
    })

    it("a value's dot segments never take a redirect or a rewrite out of the project", async () => {
      for (const where of ['path', 'site', 'project'] as const) {
        const prefix = where === 'path' ? `/${user.username}/site` : where === 'site' ? '/site' : ''
        for (const dots of ['../..', '%2E%2E/%2e%2E', '.%2e/./..']) {
          const r = await raw(where, `/go/${dots}/other/x`)
          assert.equal(r.status, 301, `${where} ${dots}: ${r.text}`)
          assert.equal(r.location, `${prefix}/other/x`, `${where} ${dots}`)
        }
        const w = await raw(where, '/peek/%2E%2E/%2E%2E/about')
        assert.equal(w.status, 200, w.text)
        assert.match(w.text, /about/)
      }
    })

    it("never serves a user's file at an ACME challenge path, on any URL form", async () => {
      const u = await s.user()
      const up = await batchUpload(s, { key: u.key }, '.well-known', [
        { filename: 'index.html', data: '<p>wk</p>' },
        { filename: 'acme-challenge/tok', data: 'tok.thumbprint' },
        { filename: 'other.txt', data: 'other' },
      ])
      assert.equal(up.status, 200, up.text)
      assert.equal((await s.post('/api/folders/.well-known/publish', { key: u.key })).status, 200)
      const onOrigin = (p: string) => request(`${s.httpUrl}${p}`, { headers: { host: `${u.username}.localhost` } })
      const challenge = await onOrigin('/.well-known/acme-challenge/tok')
      assert.equal(challenge.statusCode, 404)
      assert.doesNotMatch(await challenge.body.text(), /thumbprint/)
      const pathForm = await s.get(`/${u.username}/.well-known/acme-challenge/tok`)
      assert.equal(pathForm.status, 404)
      // the rest of that project is the user's as any other
      assert.equal(await (await onOrigin('/.well-known/other.txt')).body.text(), 'other')
    })

    it('refuses a bad rule at publish with the file and line, and changes nothing', async () => {
      const u = await s.user()
      await batchUpload(s, { key: u.key }, 'bad', [
        { filename: 'index.html', data: '<p>x</p>' },
        { filename: '_redirects', data: '/a /b\n/c /d 418\n' },
      ])
      const p = await s.post('/api/folders/bad/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 400, p.text)
      assert.equal(p.json.error_code, 1314)
      assert.match(p.json.message, /_redirects, line 2: status "418"/)
      assert.equal((await s.get(`/${u.username}/bad/`)).status, 404, 'not published')
    })

    it('refuses at publish a placeholder or splat in the host of another site, naming the line (decision 149)', async () => {
      const u = await s.user()
      const ok = '/ok/:id https://example.com/items/:id 302'
      const cases: Array<[string, string | null, RegExp]> = [
        [`${ok}\n/go/:host https://:host.example.com/ 302`, null, /_redirects, line 2: :host is in the host of/],
        [`${ok}\n/x/* https://:splat/ 302`, null, /_redirects, line 2: :splat is in the host of/],
        // a Refresh header sends the browser on as a redirect does
        [ok, '/x/*\n  Refresh: 0; url=https://:splat\n', /_headers, line 2: the value of Refresh puts :splat in the host of a URL/],
      ]
      for (const [redirects, headers, message] of cases) {
        const files = [
          { filename: 'index.html', data: '<p>x</p>' },
          { filename: '_redirects', data: redirects },
          { filename: '_headers', data: headers ?? '/*\n  X-A: 1\n' },
        ]
        const up = await batchUpload(s, { key: u.key }, 'hosts', files, true)
        assert.equal(up.status, 200, up.text)
        const p = await s.post('/api/folders/hosts/publish', { key: u.key, headers: { 'accept-language': 'en' } })
        assert.equal(p.status, 400, p.text)
        assert.equal(p.json.error_code, 1314)
        assert.match(p.json.message, message)
        assert.equal((await s.get(`/${u.username}/hosts/go/evil.example`)).status, 404, 'not published')
        assert.equal((await s.get(`/${u.username}/hosts/x/evil.example`)).status, 404, 'not published')
      }
    })

    it('publishes a target whose colon is inside a word (Help:Contents, a text fragment) and sends it as written', async () => {
      const u = await s.user()
      const redirects = ['/help https://en.wikipedia.org/wiki/Help:Contents 301', '/quote /about#:~:text=first%20line 302', '/typo/:id /b/:idd 301'].join('\n')
      await batchUpload(s, { key: u.key }, 'colons', [
        { filename: 'index.html', data: '<p>x</p>' },
        { filename: 'about.html', data: '<p>about</p>' },
        { filename: '_redirects', data: redirects },
      ])
      // a name where a value goes (a segment) that the line does not capture is still a typo to fix
      const refused = await s.post('/api/folders/colons/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(refused.status, 400, refused.text)
      assert.match(refused.json.message, /_redirects, line 3: target uses :idd/)
      await batchUpload(s, { key: u.key }, 'colons', [{ filename: '_redirects', data: redirects.split('\n').slice(0, 2).join('\n') }], true)
      const p = await s.post('/api/folders/colons/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 200, p.text)
      const help = await request(`${s.httpUrl}/colons/help`, { headers: { host: `${u.username}.localhost` } }).then(wrap)
      assert.equal(help.status, 301)
      assert.equal(help.location, 'https://en.wikipedia.org/wiki/Help:Contents')
      const quote = await request(`${s.httpUrl}/quote`, { headers: { host: `colons.${u.username}.localhost` } }).then(wrap)
      assert.equal(quote.status, 302)
      assert.equal(quote.location, '/about#:~:text=first%20line')
    })

    it("takes Netlify's forward rule (/static/* 200): the files under it as they are, a 404 rather than the SPA fallback", async () => {
      const u = await s.user()
      await batchUpload(s, { key: u.key }, 'forward', [
        { filename: 'index.html', data: '<p>spa shell</p>' },
        { filename: 'static/app.js', data: 'console.log(1)' },
        { filename: '404.html', data: '<p>custom 404</p>' },
        { filename: '_redirects', data: '/static/* 200\n/* /index.html 200\n' },
      ])
      const p = await s.post('/api/folders/forward/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 200, p.text)
      const onOrigin = (path: string) =>
        request(`${s.httpUrl}${path}`, { headers: { host: `forward.${u.username}.localhost` } }).then(async (r) => ({
          status: r.statusCode,
          text: await r.body.text(),
        }))
      assert.deepEqual(await onOrigin('/static/app.js'), { status: 200, text: 'console.log(1)' })
      assert.deepEqual(await onOrigin('/static/missing.js'), { status: 404, text: '<p>custom 404</p>' })
      assert.deepEqual(await onOrigin('/settings/profile'), { status: 200, text: '<p>spa shell</p>' })
      const path = await s.get(`/${u.username}/forward/static/missing.js`)
      assert.equal(path.status, 404)
      assert.equal(path.text, '<p>custom 404</p>')
    })

    it('reads rule files saved as UTF-16 with a byte-order mark, as Windows PowerShell writes them', async () => {
      const u = await s.user()
      const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('/old /about 301\r\n', 'utf16le')])
      const be = Buffer.from(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('/*\r\n  X-Encoded: be\r\n', 'utf16le')]).swap16())
      await batchUpload(s, { key: u.key }, 'utf16', [
        { filename: 'index.html', data: '<p>x</p>' },
        { filename: 'about.html', data: '<p>about</p>' },
        { filename: '_redirects', data: le },
        { filename: '_headers', data: be },
      ])
      const p = await s.post('/api/folders/utf16/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 200, p.text)
      const old = await s.get(`/${u.username}/utf16/old`)
      assert.equal(old.status, 301)
      assert.equal(old.header('location'), `/${u.username}/utf16/about`)
      assert.equal((await s.get(`/${u.username}/utf16/about`)).header('x-encoded'), 'be')
    })

    it('refuses a line of conditions only at publish, naming the condition and the line', async () => {
      const u = await s.user()
      await batchUpload(s, { key: u.key }, 'cond', [
        { filename: 'index.html', data: '<p>x</p>' },
        { filename: '_redirects', data: '/a /b\n  Role=admin\n' },
      ])
      const p = await s.post('/api/folders/cond/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 400, p.text)
      assert.equal(p.json.error_code, 1314)
      assert.match(p.json.message, /_redirects, line 2: "Role=admin" is a condition .*conditions are not supported/)
      assert.equal((await s.get(`/${u.username}/cond/`)).status, 404, 'not published')
    })

    it('a live project keeps its rules when a new rule file is refused, and takes a good one at the next publish', async () => {
      const bad = await batchUpload(s, { key: user.key }, 'site', [{ filename: '_headers', data: '/*\n  Set-Cookie: a=b\n' }], true)
      assert.equal(bad.status, 200, bad.text)
      const p = await s.post('/api/folders/site/publish', { key: user.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 400)
      assert.match(p.json.message, /_headers, line 2: Set-Cookie is set by the service/)
      assert.equal((await get('site', '/about')).header('x-site'), 'yes', 'the published rules still apply')
      await batchUpload(s, { key: user.key }, 'site', [{ filename: '_headers', data: '/*\n  X-Site: two\n' }], true)
      assert.equal((await get('site', '/about')).header('x-site'), 'yes', 'rules change only at publish')
      assert.equal((await s.post('/api/folders/site/publish', { key: user.key })).status, 200)
      assert.equal((await get('site', '/about')).header('x-site'), 'two')
    })

    it("takes the security headers Netlify's and Cloudflare's examples set, nosniff once, HSTS on own origins only (decision 156)", async () => {
      const u = await s.user()
      // the block sites copy from their host's documentation and from header checkers
      const secure = [
        '/*',
        '  X-Frame-Options: DENY',
        '  X-Content-Type-Options: nosniff',
        '  Referrer-Policy: strict-origin-when-cross-origin',
        '  Strict-Transport-Security: max-age=31536000; includeSubDomains; preload',
        '/only-nosniff',
        '  x-content-type-options: NoSniff',
      ].join('\n')
      await batchUpload(s, { key: u.key }, 'secure', [
        { filename: 'index.html', data: '<p>secure</p>' },
        { filename: '_headers', data: secure },
      ])
      const p = await s.post('/api/folders/secure/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 200, p.text)
      const hsts = 'max-age=31536000; includeSubDomains; preload'
      const forms: Array<[string, () => Promise<{ status: number; header: (n: string) => string | undefined }>, string | undefined]> = [
        ['path', () => s.get(`/${u.username}/secure/`), undefined],
        ['site', () => request(`${s.httpUrl}/secure/`, { headers: { host: `${u.username}.localhost` } }).then(wrap), hsts],
        ['project', () => request(`${s.httpUrl}/`, { headers: { host: `secure.${u.username}.localhost` } }).then(wrap), hsts],
      ]
      for (const [where, fetchIt, wantHsts] of forms) {
        const r = await fetchIt()
        assert.equal(r.status, 200, where)
        assert.equal(r.header('x-content-type-options'), 'nosniff', `${where}: the service's nosniff, once`)
        assert.equal(r.header('x-frame-options'), 'DENY', where)
        assert.equal(r.header('strict-transport-security'), wantHsts, where)
      }
      // another value of X-Content-Type-Options is still refused
      await batchUpload(s, { key: u.key }, 'secure', [{ filename: '_headers', data: '/*\n  X-Content-Type-Options: sniff\n' }], true)
      const bad = await s.post('/api/folders/secure/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(bad.status, 400, bad.text)
      assert.match(bad.json.message, /_headers, line 2: X-Content-Type-Options/)
    })

    it('takes a _headers written without indentation, as Netlify and Cloudflare Pages do, and applies it', async () => {
      const u = await s.user()
      await batchUpload(s, { key: u.key }, 'flush', [
        { filename: 'index.html', data: '<p>flush</p>' },
        { filename: 'assets/app.js', data: 'console.log(1)' },
        {
          filename: '_headers',
          data: '/*\nX-Frame-Options: DENY\nReferrer-Policy: no-referrer\n\n/assets/*\nCache-Control: public, max-age=31536000, immutable\n',
        },
      ])
      const p = await s.post('/api/folders/flush/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 200, p.text)
      const home = await request(`${s.httpUrl}/`, { headers: { host: `flush.${u.username}.localhost` } }).then(wrap)
      assert.equal(home.header('x-frame-options'), 'DENY')
      assert.equal(home.header('referrer-policy'), 'no-referrer')
      const js = await s.get(`/${u.username}/flush/assets/app.js`)
      assert.equal(js.header('cache-control'), 'public, max-age=31536000, immutable')
      assert.equal(js.header('x-frame-options'), 'DENY')
    })

    it("takes Cloudflare Pages' `! Name`: an asset drops the site-wide Cache-Control for its own, the service's headers stay", async () => {
      const u = await s.user()
      const headers = [
        '/*',
        '  Cache-Control: no-cache',
        '/assets/*',
        '  ! Cache-Control',
        '  ! X-Content-Type-Options',
        '  Cache-Control: public, max-age=31536000, immutable',
      ].join('\n')
      await batchUpload(s, { key: u.key }, 'detach', [
        { filename: 'index.html', data: '<p>detach</p>' },
        { filename: 'assets/app-1.js', data: 'console.log(1)' },
        { filename: '_headers', data: headers },
      ])
      const p = await s.post('/api/folders/detach/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 200, p.text)
      const onOrigin = (path: string) => request(`${s.httpUrl}${path}`, { headers: { host: `detach.${u.username}.localhost` } }).then(wrap)
      assert.equal((await onOrigin('/')).header('cache-control'), 'no-cache')
      const js = await onOrigin('/assets/app-1.js')
      assert.equal(js.header('cache-control'), 'public, max-age=31536000, immutable')
      assert.equal(js.header('x-content-type-options'), 'nosniff', "the service's own header is no rule's to detach")
      const path = await s.get(`/${u.username}/detach/assets/app-1.js`)
      assert.equal(path.header('cache-control'), 'public, max-age=31536000, immutable')
      assert.match(String(path.header('content-security-policy')), /sandbox/)
    })

    it('takes a _headers pattern with * inside, as Netlify deploys and Cloudflare Pages do: /*.js', async () => {
      const u = await s.user()
      await batchUpload(s, { key: u.key }, 'stars', [
        { filename: 'index.html', data: '<p>stars</p>' },
        { filename: 'assets/app-1.js', data: 'console.log(1)' },
        { filename: 'posts/one/payload.json', data: '{}' },
        { filename: '_headers', data: '/*.js\n  Cache-Control: public, max-age=31536000, immutable\n/*/payload.json\n  X-Payload: :splat\n' },
      ])
      const p = await s.post('/api/folders/stars/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 200, p.text)
      const js = await request(`${s.httpUrl}/assets/app-1.js`, { headers: { host: `stars.${u.username}.localhost` } }).then(wrap)
      assert.equal(js.header('cache-control'), 'public, max-age=31536000, immutable')
      const html = await request(`${s.httpUrl}/`, { headers: { host: `stars.${u.username}.localhost` } }).then(wrap)
      assert.equal(html.header('cache-control'), 'public, max-age=0, must-revalidate')
      const payload = await s.get(`/${u.username}/stars/posts/one/payload.json`)
      assert.equal(payload.header('x-payload'), 'posts/one')
    })

    it("takes Netlify's and Cloudflare's lines for a host, applied on that host only (decision 171)", async () => {
      const u = await s.user()
      const own = `hosted.${u.username}.localhost`
      // Netlify's domain-level redirect of its own subdomain, Cloudflare's noindex for pages.dev,
      // and lines for the project's own origin, which this service serves
      const redirects = ['https://hosted.netlify.app/* https://example.com/:splat 301!', `http://${own}/old /about 301`, '/old /index.html 200'].join('\n')
      const headers = ['https://:project.pages.dev/*', '  X-Robots-Tag: noindex', `https://${own}/*`, '  X-Host: own', '/*', '  X-All: yes'].join('\n')
      await batchUpload(s, { key: u.key }, 'hosted', [
        { filename: 'index.html', data: '<p>home</p>' },
        { filename: 'about.html', data: '<p>about</p>' },
        { filename: '_redirects', data: redirects },
        { filename: '_headers', data: headers },
      ])
      const p = await s.post('/api/folders/hosted/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 200, p.text)
      const onHost = (host: string, path: string) => request(`${s.httpUrl}${path}`, { headers: { host } }).then(wrap)
      // the project's own origin: its lines apply, another host's never
      const home = await onHost(own, '/')
      assert.equal(home.status, 200)
      assert.equal(home.header('x-host'), 'own')
      assert.equal(home.header('x-all'), 'yes')
      assert.equal(home.header('x-robots-tag'), undefined)
      const old = await onHost(`${own}:8080`, '/old')
      assert.equal(old.status, 301, 'the port is not part of the host a line names')
      assert.equal(old.location, '/about')
      // the path form and the user's origin serve the project under a path: no host line applies
      const path = await s.get(`/${u.username}/hosted/old`)
      assert.equal(path.status, 200)
      assert.equal(path.text, '<p>home</p>')
      assert.equal(path.header('x-host'), undefined)
      assert.equal(path.header('x-all'), 'yes')
      const site = await onHost(`${u.username}.localhost`, '/hosted/old')
      assert.equal(site.status, 200)
      assert.equal(site.header('x-host'), undefined)
      // a bad host is still refused with its line
      await batchUpload(s, { key: u.key }, 'hosted', [{ filename: '_redirects', data: '/a /b\nhttps://example.com:8443/a /b\n' }], true)
      const bad = await s.post('/api/folders/hosted/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(bad.status, 400, bad.text)
      assert.equal(bad.json.error_code, 1314)
      assert.match(bad.json.message, /_redirects, line 2: /)
    })

    it('takes a _redirects of thousands of lines, as sites moved from another host carry (decision 172)', async () => {
      const u = await s.user()
      // old URLs of a migrated blog, one line each, then a placeholder line and the SPA fallback
      const old = Array.from({ length: 5000 }, (_, i) => `/archive/${i}/post.html /posts/${i} 301`)
      const lines = ['/posts/4999 /index.html 200', ...old, '/tags/:tag /index.html?tag=:tag 302', '/* /index.html 200']
      await batchUpload(s, { key: u.key }, 'moved', [
        { filename: 'index.html', data: '<p>moved</p>' },
        { filename: '_redirects', data: lines.join('\n') },
      ])
      const p = await s.post('/api/folders/moved/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 200, p.text)
      const last = await s.get(`/${u.username}/moved/archive/4999/post.html/`)
      assert.equal(last.status, 301)
      assert.equal(last.header('location'), `/${u.username}/moved/posts/4999`)
      assert.equal((await s.get(`/${u.username}/moved/archive/17/post.html`)).header('location'), `/${u.username}/moved/posts/17`)
      // the first matching line wins, whichever kind it is
      const first = await s.get(`/${u.username}/moved/posts/4999`)
      assert.equal(first.status, 200)
      assert.equal(first.text, '<p>moved</p>')
      assert.equal((await s.get(`/${u.username}/moved/tags/a`)).header('location'), `/${u.username}/moved/index.html?tag=a`)
      assert.equal((await s.get(`/${u.username}/moved/anything/else`)).status, 200)
      // the ceiling stays, named with its line
      const over = Array.from({ length: 10001 }, (_, i) => `/o/${i} /`).join('\n')
      await batchUpload(s, { key: u.key }, 'moved', [{ filename: '_redirects', data: over }], true)
      const refused = await s.post('/api/folders/moved/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(refused.status, 400, refused.text)
      assert.equal(refused.json.error_code, 1314)
      assert.match(refused.json.message, /_redirects, line 10001: more than 10000 rules/)
    })

    it("refuses Netlify's Basic-Auth line at publish, naming the visitor password, rather than sending the password to every visitor", async () => {
      const u = await s.user()
      await batchUpload(s, { key: u.key }, 'locked', [
        { filename: 'index.html', data: '<p>secret</p>' },
        { filename: '_headers', data: '/*\n  X-Frame-Options: DENY\n  Basic-Auth: someuser:somepassword\n' },
      ])
      const p = await s.post('/api/folders/locked/publish', { key: u.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 400, p.text)
      assert.equal(p.json.error_code, 1314)
      assert.match(p.json.message, /_headers, line 3: Basic-Auth .*visitor password/)
      assert.equal((await s.get(`/${u.username}/locked/`)).status, 404, 'not published')
    })
  })
}

/** An undici answer read whole, with a header getter. */
async function wrap(r: Awaited<ReturnType<typeof request>>): Promise<{ status: number; header: (n: string) => string | undefined; location?: string }> {
  await r.body.text()
  const h = r.headers as Record<string, string | undefined>
  return { status: r.statusCode, header: (n: string) => h[n.toLowerCase()], location: h.location }
}
