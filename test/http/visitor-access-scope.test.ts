import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'

// What one visitor password unlocks (decision 175): the form's cookie opens every URL that
// serves the name it protects on that origin (a page's clean URL and its own path, a project
// with or without its final slash, spelled with escapes, its previews), and nothing else: not
// another protected name of the same user, not another user's. The jar below sends a cookie as
// a browser does (RFC 6265: host-only, Path matched), so the Set-Cookie attributes are what is
// tested, not only what the server accepts when handed the cookie.

interface Cookie {
  host: string
  name: string
  value: string
  path: string
}

/** RFC 6265 5.1.4: does a cookie's Path cover a request path? */
function pathMatches(cookiePath: string, requestPath: string): boolean {
  if (requestPath === cookiePath) return true
  if (!requestPath.startsWith(cookiePath)) return false
  return cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/'
}

/** A browser's cookie jar, as far as these answers need one: host-only cookies with a Path. */
class Jar {
  cookies: Cookie[] = []
  take(host: string, setCookie: string, requestPath: string): void {
    const [pair, ...attrs] = setCookie.split(';').map((p) => p.trim())
    const eq = pair.indexOf('=')
    const attr = (n: string) => attrs.find((a) => a.toLowerCase().startsWith(`${n.toLowerCase()}=`))?.slice(n.length + 1)
    assert.equal(attr('Domain'), undefined, 'host-only')
    // RFC 6265 5.1.4's default-path when a cookie names none
    const path = attr('Path') ?? (requestPath.lastIndexOf('/') > 0 ? requestPath.slice(0, requestPath.lastIndexOf('/')) : '/')
    const c = { host, name: pair.slice(0, eq), value: pair.slice(eq + 1), path }
    this.cookies = this.cookies.filter((o) => !(o.host === host && o.name === c.name && o.path === c.path))
    this.cookies.push(c)
  }
  header(host: string, requestPath: string): string | undefined {
    const sent = this.cookies.filter((c) => c.host === host && pathMatches(c.path, requestPath))
    return sent.length === 0 ? undefined : sent.map((c) => `${c.name}=${c.value}`).join('; ')
  }
}

for (const engine of ENGINES) {
  describe(`visitor password scope [${engine}]`, () => {
    let s: TestServer
    let deployId = ''

    /** A request to a user's own origin (plain HTTP on loopback), as a navigating browser with `jar`. */
    const visit = async (host: string, p: string, o: { jar?: Jar; method?: string; headers?: Record<string, string>; body?: string; cookie?: string } = {}) => {
      const path = p.split('?')[0]
      const cookie = o.cookie ?? o.jar?.header(host, path)
      const headers: Record<string, string> = { host, accept: 'text/html', 'sec-fetch-mode': 'navigate', ...o.headers }
      if (cookie !== undefined) headers.cookie = cookie
      const r = await request(`${s.httpUrl}${p}`, { method: (o.method ?? 'GET') as 'GET', headers, body: o.body })
      const text = await r.body.text()
      const h = r.headers as Record<string, string | string[] | undefined>
      const header = (n: string) => [h[n.toLowerCase()]].flat().join(', ') || undefined
      const setCookie = header('set-cookie')
      if (setCookie !== undefined && o.jar) o.jar.take(host, setCookie, path)
      return { status: r.statusCode, text, header }
    }
    /** The password form's post at `p`: 303 back to it with the cookie, kept in `jar`. */
    const unlock = async (jar: Jar, host: string, p: string, password: string, headers: Record<string, string> = {}) => {
      const r = await visit(host, p, {
        jar,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ password }).toString(),
      })
      assert.equal(r.status, 303, `${host}${p}: ${r.status} ${r.text}`)
      return r
    }
    const A = 'alice.localhost'
    const B = 'bob.localhost'
    const basic = (pw: string) => `Basic ${Buffer.from(`visitor:${pw}`).toString('base64')}`

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, TRUST_PROXY: '1' } })
      const alice = await s.user({ name: 'alice' })
      const bob = await s.user({ name: 'bob' })
      // the API behind the proxy (TRUST_PROXY, for the HTTPS answer below) takes HTTPS only
      const headers = { 'x-forwarded-proto': 'https' }
      const put = async (key: string, name: string, password: string) =>
        assert.equal((await s.request('PUT', `/api/access/${name}`, { key, json: { password }, headers })).status, 200)
      for (const [u, who] of [
        [alice, 'alice'],
        [bob, 'bob'],
      ] as const) {
        const up = await batchUpload(
          s,
          { key: u.key },
          'secret',
          [
            { filename: 'index.html', data: `<p>${who} secret home</p>` },
            { filename: 'dir/index.html', data: `<p>${who} secret dir</p>` },
          ],
          undefined,
          headers,
        )
        assert.equal(up.status, 200, up.text)
        assert.equal((await s.post('/api/folders/secret/publish', { key: u.key, headers })).status, 200)
        assert.equal((await uploadFile(s, { key: u.key }, 'about.html', `<p>${who} about page</p>`, {}, headers)).status, 200)
        // the same passwords for both users: only the cookie's binding to one setting keeps them apart
        await put(u.key, 'secret', 'hunter22')
        await put(u.key, 'about.html', 'page-pass')
      }
      const other = await batchUpload(s, { key: alice.key }, 'other', [{ filename: 'index.html', data: '<p>alice other</p>' }], undefined, headers)
      assert.equal(other.status, 200, other.text)
      assert.equal((await s.post('/api/folders/other/publish', { key: alice.key, headers })).status, 200)
      await put(alice.key, 'other', 'hunter22')
      deployId = (await s.get('/api/folders/secret/deploys', { key: alice.key, headers })).json.live_deploy_id
      assert.match(deployId, /^[0-9a-z]{12}$/)
    })
    after(() => s?.close())

    it('a page unlocked at its own path opens at its clean URL, and the other way round', async () => {
      for (const [at, then] of [
        ['/about.html', '/about'],
        ['/about', '/about.html'],
      ]) {
        const jar = new Jar()
        assert.equal((await visit(A, at, { jar })).status, 401, at)
        await unlock(jar, A, at, 'page-pass')
        for (const p of [at, then, `${then}?x=1`]) {
          const r = await visit(A, p, { jar })
          assert.equal(r.status, 200, `unlocked at ${at}, then ${p}: ${r.status}`)
          assert.equal(r.text, '<p>alice about page</p>')
          assert.equal(r.header('cache-control'), 'private, no-cache')
        }
      }
    })

    it('a project unlocked once opens at every spelling of its URLs, its previews too', async () => {
      const jar = new Jar()
      await unlock(jar, A, '/secret/dir/index.html', 'hunter22')
      const home = '<p>alice secret home</p>'
      const dir = '<p>alice secret dir</p>'
      for (const [p, body] of [
        ['/secret/', home],
        ['/secret/index.html', home],
        ['/secret/dir/', dir],
        ['/secret/dir/index.html', dir],
        ['/secre%74/dir/', dir],
        [`/secret@${deployId}/`, home],
        [`/secret%40${deployId}/dir/`, dir],
      ]) {
        const r = await visit(A, p, { jar })
        assert.equal(r.status, 200, `${p}: ${r.status}`)
        assert.equal(r.text, body, p)
      }
      // the URL without its final slash: past the gate, to the project's own redirect
      const bare = await visit(A, '/secret', { jar })
      assert.notEqual(bare.status, 401)
      assert.ok(!bare.text.includes('Password required') && !bare.text.includes('需要密码'))
      // and unlocked there, the project opens below it
      const jar2 = new Jar()
      await unlock(jar2, A, '/secret', 'hunter22')
      assert.equal((await visit(A, '/secret/dir/', { jar: jar2 })).text, dir)
    })

    it("never opens the user's other protected names, nor another user's", async () => {
      const jar = new Jar()
      await unlock(jar, A, '/secret/', 'hunter22')
      await unlock(jar, A, '/about', 'page-pass')
      assert.equal((await visit(A, '/secret/', { jar })).status, 200)
      assert.equal((await visit(A, '/about.html', { jar })).status, 200)
      // alice's other project, under the same password, still asks for it
      const other = await visit(A, '/other/', { jar })
      assert.equal(other.status, 401)
      assert.ok(!other.text.includes('alice other'))
      // each cookie opens its own name only
      const pageOnly = new Jar()
      await unlock(pageOnly, A, '/about.html', 'page-pass')
      assert.equal((await visit(A, '/secret/', { jar: pageOnly })).status, 401)
      const projectOnly = new Jar()
      await unlock(projectOnly, A, '/secret/', 'hunter22')
      assert.equal((await visit(A, '/about', { jar: projectOnly })).status, 401)
      // bob's origin gets none of alice's cookies (host-only), and handed them they open nothing
      for (const p of ['/secret/', '/secret/dir/', '/about', '/about.html']) {
        assert.equal(jar.header(B, p), undefined)
        const r = await visit(B, p, { jar })
        assert.equal(r.status, 401, `bob ${p}`)
        assert.ok(!r.text.includes('bob'), p)
        const handed = await visit(B, p, { cookie: jar.header(A, p) })
        assert.equal(handed.status, 401, `bob ${p} with alice's cookie`)
        assert.ok(!handed.text.includes('bob'), p)
      }
      // alice's project's own origin is another origin: its own cookie, asked for there
      assert.equal(jar.header('secret.alice.localhost', '/'), undefined)
      assert.equal((await visit('secret.alice.localhost', '/', { jar })).status, 401)
    })

    it('the cookie is HttpOnly, SameSite=Lax, Path=/, host-only, and Secure over HTTPS', async () => {
      const shape = /^svc_access_[0-9a-f]{32}=\d+\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/
      for (const p of ['/about', '/about.html', '/secret/dir/', '/secret']) {
        const plain = await unlock(new Jar(), A, p, p.startsWith('/about') ? 'page-pass' : 'hunter22')
        assert.match(plain.header('set-cookie') ?? '', shape, p)
        // behind the proxy over HTTPS (X-Forwarded-Proto, TRUST_PROXY)
        const tls = await unlock(new Jar(), A, p, p.startsWith('/about') ? 'page-pass' : 'hunter22', { 'x-forwarded-proto': 'https' })
        assert.match(
          tls.header('set-cookie') ?? '',
          /^svc_access_[0-9a-f]{32}=\d+\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax; Secure$/,
          p,
        )
        assert.equal(tls.header('location'), p)
      }
    })

    it('on the path form, HTTP Basic opens every URL of the name and no other', async () => {
      // the service's host behind the proxy answers HTTPS only
      const tls = { 'x-forwarded-proto': 'https' }
      const page = basic('page-pass')
      for (const p of ['/alice/about', '/alice/about.html', '/alice/about?x=1']) {
        const r = await s.get(p, { headers: { ...tls, authorization: page } })
        assert.equal(r.status, 200, p)
        assert.equal(r.text, '<p>alice about page</p>')
      }
      for (const p of ['/alice/secret/', '/alice/secret/dir/', '/alice/secre%74/dir/index.html', `/alice/secret@${deployId}/dir/`]) {
        assert.equal((await s.get(p, { headers: { ...tls, authorization: basic('hunter22') } })).status, 200, p)
        assert.equal((await s.get(p, { headers: { ...tls, authorization: page } })).status, 401, `${p} with the page's password`)
      }
      // the realm a browser keys its Basic credentials by is the name's, on every URL of it
      const realms = await Promise.all(['/alice/about', '/alice/about.html'].map(async (p) => (await s.get(p, { headers: tls })).header('www-authenticate')))
      assert.deepEqual(realms, ['Basic realm="alice/about.html", charset="UTF-8"', 'Basic realm="alice/about.html", charset="UTF-8"'])
      // a form's cookie is never read on the service's host
      const jar = new Jar()
      await unlock(jar, A, '/about', 'page-pass')
      assert.equal((await s.get('/alice/about', { headers: tls, cookie: jar.header(A, '/about') })).status, 401)
    })
  })
}
