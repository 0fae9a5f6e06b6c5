import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type Res, type TestServer } from '../support/server.js'
import { html, jsonForScript } from '../../src/web/html.js'
import { escapeHtml } from '../../src/util/html.js'
import { translator } from '../../src/features/pages/i18n.js'
import { MAX_KEY_DAYS } from '../../src/auth/account-rules.js'

/** The directives of a CSP header: name -> tokens. */
function csp(header: string | undefined): Map<string, string[]> {
  assert.ok(header, 'Content-Security-Policy present')
  const out = new Map<string, string[]>()
  for (const d of header.split(';')) {
    const [name, ...tokens] = d.trim().split(/\s+/)
    if (name) out.set(name.toLowerCase(), tokens)
  }
  return out
}

/** Asserts the page headers and that every script and style element carries the nonce. */
function assertStrictPage(r: Res, path: string): string {
  assert.equal(r.status, 200, path)
  assert.match(r.header('content-type')!, /^text\/html/)
  const policy = csp(r.header('content-security-policy'))
  const script = policy.get('script-src')!
  assert.ok(script, `${path}: script-src`)
  for (const bad of ["'self'", "'unsafe-inline'", "'unsafe-eval'", '*', 'https:', 'data:']) assert.ok(!script.includes(bad), `${path}: script-src has ${bad}`)
  const nonceTok = script.find((x) => x.startsWith("'nonce-"))
  assert.ok(nonceTok, `${path}: script-src nonce`)
  const nonce = nonceTok.slice(7, -1)
  assert.ok(nonce.length >= 16)
  const style = policy.get('style-src')!
  assert.ok(!style.includes("'unsafe-inline'") && !style.includes("'self'"), `${path}: style-src`)
  assert.deepEqual(policy.get('frame-ancestors'), ["'none'"])
  assert.deepEqual(policy.get('object-src'), ["'none'"])
  assert.deepEqual(policy.get('base-uri'), ["'none'"])
  assert.deepEqual(policy.get('default-src'), ["'none'"])
  assert.deepEqual(policy.get('form-action'), ["'self'"])
  assert.equal(r.header('x-frame-options'), 'DENY')
  assert.equal(r.header('referrer-policy'), 'same-origin')
  assert.equal(r.header('cross-origin-opener-policy'), 'same-origin')
  assert.equal(r.header('cache-control'), 'no-store')
  assert.equal(r.header('x-content-type-options'), 'nosniff')
  // every executable script and every style element carries this response's nonce
  const scripts = [...r.text.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1])
  assert.ok(scripts.length >= 2)
  for (const attrs of scripts) {
    if (/type="application\/json"/.test(attrs)) continue
    assert.ok(attrs.includes(`nonce="${nonce}"`), `${path}: script without nonce: ${attrs}`)
  }
  for (const m of r.text.matchAll(/<style\b([^>]*)>/g)) assert.ok(m[1].includes(`nonce="${nonce}"`))
  assert.ok(!/\son[a-z]+=/i.test(r.text), `${path}: inline event handler`)
  assert.ok(!/\sstyle=/i.test(r.text), `${path}: inline style attribute`)
  return nonce
}

const formField = (text: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(text)?.[1]
const cookieOf = (r: Res, name: string) => {
  const sc = r.headers['set-cookie']
  const all = Array.isArray(sc) ? sc : sc ? [sc] : []
  return all.map((c) => c.split(';')[0]).find((c) => c.startsWith(`${name}=`))
}
const BROWSER = { 'sec-fetch-site': 'same-origin', accept: 'text/html' }

describe('page templates', () => {
  it('escape interpolated values and keep nested templates', () => {
    const name = '<script>alert("x")</script>&\'`'
    assert.equal(
      html`<p title="${name}">${name}</p>`.value,
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;`">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;`</p>',
    )
    assert.equal(html`<ul>${['<a>', html`<b>${'<i>'}</b>`]}</ul>`.value, '<ul>&lt;a&gt;<b>&lt;i&gt;</b></ul>')
    assert.equal(escapeHtml('"\''), '&quot;&#39;')
    const j = jsonForScript({ v: '</script><!-- \u2028 &' }).value
    assert.ok(!j.includes('<') && !j.includes('>') && !j.includes('&'))
    assert.deepEqual(JSON.parse(j), { v: '</script><!-- \u2028 &' })
  })

  it('translate own keys only: a name of Object.prototype reads as itself', () => {
    const t = translator({ 'a.b': 'A {x}' })
    assert.equal(t('a.b', { x: 1 }), 'A 1')
    for (const k of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'missing']) assert.equal(t(k), k)
  })
})

for (const engine of ENGINES) {
  describe(`web pages [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let cookie: string
    before(async () => {
      s = await startServer({ engine })
      alice = await s.user()
      cookie = await s.login(alice.username, alice.password)
    })
    after(() => s.close())

    it('serves every page with a strict nonce-based CSP, frame-ancestors none and no-store', async () => {
      const seen = new Set<string>()
      for (const p of ['/login', '/register']) seen.add(assertStrictPage(await s.get(p), p))
      for (const p of [
        '/dashboard',
        '/api-keys',
        '/dashboard/files',
        '/dashboard/folders',
        '/dashboard/kv',
        '/dashboard/forms',
        '/dashboard/images',
        '/dashboard/data',
        '/logout',
      ]) {
        seen.add(assertStrictPage(await s.get(p, { cookie }), p))
      }
      assert.equal(seen.size, 11, 'a fresh nonce per response')
    })

    it('answers a method a page does not take with 405 and Allow, a missing page with 404 (decision 144)', async () => {
      for (const [m, p, allow] of [
        ['DELETE', '/dashboard', 'GET, HEAD'],
        ['PUT', '/login', 'GET, HEAD, POST'],
        ['POST', '/openapi.json', 'GET, HEAD'],
      ]) {
        const r = await s.request(m, p, { cookie })
        assert.equal(r.status, 405, `${m} ${p}: ${r.text}`)
        assert.equal(r.header('allow'), allow, `${m} ${p}`)
        assert.equal(r.header('content-type'), 'text/plain; charset=utf-8')
      }
      const missing = await s.request('DELETE', '/no-such-page', { cookie })
      assert.equal(missing.status, 404)
      assert.equal(missing.header('allow'), undefined)
    })

    it("shows a browser a page in its language at a missing path of the service's host, and a script plain text (decision 209)", async () => {
      const nav = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-mode': 'navigate' }
      for (const [lang, title, home] of [
        ['en-GB,en;q=0.9', '404 - page not found', 'Go to the home page'],
        ['zh-CN,zh;q=0.9', '404 - 页面不存在', '前往首页'],
        [undefined, '404 - 页面不存在', '前往首页'],
      ] as const) {
        for (const method of ['GET', 'HEAD']) {
          const r = await s.request(method, '/dashbord', { cookie, headers: { ...nav, ...(lang ? { 'accept-language': lang } : {}) } })
          assert.equal(r.status, 404, `${method} ${lang}`)
          assert.equal(r.header('content-type'), 'text/html; charset=utf-8')
          assert.equal(r.header('cache-control'), 'no-store')
          const policy = csp(r.header('content-security-policy'))
          assert.deepEqual(policy.get('default-src'), ["'none'"])
          assert.deepEqual(policy.get('frame-ancestors'), ["'none'"])
          if (method === 'HEAD') {
            assert.equal(r.text, '')
            continue
          }
          assert.ok(r.text.includes(`<title>${title}</title>`), r.text)
          assert.ok(r.text.includes(`<a href="/">${home}</a>`), r.text)
          assert.ok(r.text.includes(`lang="${lang?.startsWith('en') ? 'en' : 'zh-CN'}"`), r.text)
        }
      }
      // a script's request (no navigation, or JSON asked for) and the API keep what they had
      const scripts: Array<Record<string, string>> = [{}, { accept: 'text/html', 'sec-fetch-mode': 'cors' }, { accept: 'application/json, text/html' }]
      for (const headers of scripts) {
        const r = await s.request('GET', '/dashbord', { cookie, headers })
        assert.equal(r.status, 404)
        assert.equal(r.header('content-type'), 'text/plain; charset=utf-8')
        assert.equal(r.text, 'Not Found')
      }
      const api = await s.request('GET', '/svc_api/dashbord', { headers: nav })
      assert.equal(api.status, 404)
      assert.match(api.header('content-type') ?? '', /^application\/json/)
    })

    it('sends visitors without a session to /login, and signed-in users away from /login', async () => {
      // a dashboard or console page is named in ?next=, for the login to come back to it
      for (const [p, to] of [
        ['/dashboard', '/login?next=%2Fdashboard'],
        ['/api-keys', '/login'],
        ['/dashboard/kv', '/login?next=%2Fdashboard%2Fkv'],
        ['/', '/login'],
      ]) {
        const r = await s.get(p)
        assert.equal(r.status, 303, p)
        assert.equal(r.header('location'), to)
      }
      const r = await s.get('/login', { cookie })
      assert.equal(r.header('location'), '/dashboard')
      // an ended session is treated as none
      const bad = await s.get('/dashboard', { cookie: 'session=' + 'A'.repeat(43) })
      assert.equal(bad.header('location'), '/login?next=%2Fdashboard')
    })

    it('puts the session CSRF token in the page, and requires it on browser cookie writes', async () => {
      const page = await s.get('/api-keys', { cookie })
      // the key life the service allows, in the field and its label (MAX_KEY_DAYS)
      assert.match(page.text, new RegExp(`max="${MAX_KEY_DAYS}"[^>]*inputmode="numeric"`))
      assert.match(page.text, new RegExp(`1-${MAX_KEY_DAYS}`))
      const token = /<meta name="csrf-token" content="([^"]+)">/.exec(page.text)?.[1]
      assert.ok(token && token.length >= 32)
      assert.equal(token, await s.csrfToken(cookie))
      const keys = await s.get('/svc_api/api-keys', { cookie })
      const id = keys.json.data.keys[0].id as string
      const disable = (headers: Record<string, string>) => s.post(`/svc_api/api-keys/${id}/disable`, { cookie, headers })

      // a browser request (fetch metadata or Origin) without the token: 403, 1012, nothing changed
      const refused: Array<Record<string, string>> = [
        { 'sec-fetch-site': 'same-origin' },
        { origin: s.url },
        { 'sec-fetch-site': 'same-origin', 'x-csrf-token': 'x'.repeat(32) },
      ]
      for (const h of refused) {
        const r = await disable(h)
        assert.equal(r.status, 403, JSON.stringify(h))
        assert.equal(r.json.error_code, 1012)
      }
      assert.equal((await s.get('/svc_api/api-keys', { cookie })).json.data.keys[0].enabled, true)
      // with the token: accepted
      const ok = await disable({ 'sec-fetch-site': 'same-origin', origin: s.url, 'x-csrf-token': token })
      assert.equal(ok.status, 200)
      assert.equal((await s.get('/svc_api/api-keys', { cookie })).json.data.keys[0].enabled, false)
      // no browser headers at all (curl with a cookie, scripts): unaffected
      const cli = await s.post(`/svc_api/api-keys/${id}/enable`, { cookie })
      assert.equal(cli.status, 200)
      // the cross-site rule still comes first, token or not
      const xs = await disable({ 'sec-fetch-site': 'cross-site', 'x-csrf-token': token })
      assert.equal(xs.json.error_code, 1008)
      // a session-only JSON write from the page (redeem) is refused without the token too
      const redeem = await s.post('/api/redeem', { cookie, json: { code: 'nope' }, headers: { 'sec-fetch-site': 'same-origin' } })
      assert.equal(redeem.status, 403)
    })

    it('leaves API-key requests alone, with or without fetch metadata', async () => {
      const r = await s.get('/svc_api/me', { key: alice.key, headers: { 'sec-fetch-site': 'same-origin' } })
      assert.equal(r.status, 200)
      assert.equal(r.json.data.via, 'key')
    })

    it('protects the login form with a form token (login CSRF) and keeps script logins working', async () => {
      const page = await s.get('/login')
      const formCookie = cookieOf(page, '__Host-form_csrf')!
      const token = formField(page.text, '_csrf')!
      assert.ok(formCookie && token && formCookie === `__Host-form_csrf=${token}`)
      const creds = { username: alice.username, password: alice.password }
      // browser post without the token, or with another token: back to the form, no session
      for (const form of [creds, { ...creds, _csrf: 'B'.repeat(32) }]) {
        const r = await s.post('/login', { form, cookie: formCookie, headers: BROWSER })
        assert.equal(r.status, 303)
        assert.equal(r.header('location'), `/login?error=expired&username=${alice.username}`)
        assert.equal(cookieOf(r, 'session'), undefined)
      }
      const none = await s.post('/login', { form: { ...creds, _csrf: token }, headers: BROWSER })
      assert.equal(none.header('location'), `/login?error=expired&username=${alice.username}`)
      // with the page's token: signed in
      const ok = await s.post('/login', { form: { ...creds, _csrf: token }, cookie: formCookie, headers: BROWSER })
      assert.equal(ok.status, 303)
      assert.equal(ok.header('location'), '/dashboard')
      assert.ok(cookieOf(ok, 'session'))
      // a foreign origin is refused whatever it carries
      const evil = await s.post('/login', { form: { ...creds, _csrf: token }, cookie: formCookie, headers: { ...BROWSER, origin: 'https://evil.test' } })
      assert.equal(cookieOf(evil, 'session'), undefined)
      // wrong password from the page: the usual error
      const wrong = await s.post('/login', { form: { ...creds, password: 'wrong-password', _csrf: token }, cookie: formCookie, headers: BROWSER })
      assert.equal(wrong.header('location'), `/login?error=1&username=${alice.username}`)
      const again = await s.get(`/login?error=1&username=${alice.username}`, { headers: { 'accept-language': 'en' } })
      assert.match(again.text, /Wrong username or password/)
      assert.match(again.text, new RegExp(`id="username" name="username" value="${alice.username}"`), 'the name typed is kept')
    })

    it('ignores an unknown ?error= of /login, names of Object.prototype included', async () => {
      for (const e of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'nope']) {
        const r = await s.get(`/login?error=${e}`, { headers: { 'accept-language': 'en' } })
        assert.equal(r.status, 200, e)
        assert.ok(!r.text.includes('role="alert"'), `${e}: no error shown`)
      }
      assert.match((await s.get('/login?error=expired', { headers: { 'accept-language': 'en' } })).text, /role="alert"/)
    })

    it('comes back to the page that asked for a login, and to no other site', async () => {
      const page = await s.get('/login?next=%2Fdashboard%2Fforms')
      const formCookie = cookieOf(page, '__Host-form_csrf')!
      const _csrf = formField(page.text, '_csrf')!
      assert.equal(formField(page.text, 'next'), '/dashboard/forms')
      const creds = { username: alice.username, password: alice.password, _csrf }
      const post = (next: string, password = alice.password) => s.post('/login', { form: { ...creds, password, next }, cookie: formCookie, headers: BROWSER })
      assert.equal((await post('/dashboard/forms')).header('location'), '/dashboard/forms')
      assert.equal((await post('/admin/reports?status=open')).header('location'), '/admin/reports?status=open')
      // dot segments, which a browser resolves in a Location (`%2e` too), would leave the
      // dashboard for a hosted page of the path form, whose own redirects go anywhere
      const dots = ['/dashboard/../alice/site/out', '/dashboard/%2e%2E/alice/site/', '/admin/.%2e/x', '/dashboard/./kv', '/dashboard/..', '/admin/%2E']
      for (const evil of ['//evil.test/x', 'https://evil.test/', '/dashboard//evil.test', '/\\evil.test', 'javascript:alert(1)', '/svc_api/files', ...dots])
        assert.equal((await post(evil)).header('location'), '/dashboard', evil)
      assert.equal((await post('/dashboard/files/a..b.html')).header('location'), '/dashboard/files/a..b.html', 'dots inside a name are no segment')
      // a refusal keeps where to go back to
      assert.equal((await post('/dashboard/forms', 'wrong-password')).header('location'), `/login?error=1&username=${alice.username}&next=%2Fdashboard%2Fforms`)
    })

    it('logs out from the page only with the session token', async () => {
      const c = await s.login(alice.username, alice.password)
      const page = await s.get('/dashboard', { cookie: c })
      const token = formField(page.text, '_csrf')!
      const bad = await s.post('/logout', { cookie: c, form: { _csrf: 'nope' }, headers: BROWSER })
      assert.equal(bad.header('location'), '/logout')
      assert.equal((await s.get('/svc_api/me', { cookie: c })).status, 200)
      const ok = await s.post('/logout', { cookie: c, form: { _csrf: token }, headers: BROWSER })
      assert.equal(ok.header('location'), '/login')
      assert.equal((await s.get('/svc_api/me', { cookie: c })).status, 401)
    })

    describe('registers a new account from the form and signs it in', () => {
      let formCookie: string
      let _csrf: string
      const name = `new${Date.now().toString(36)}`
      before(async () => {
        const page = await s.get('/register')
        formCookie = cookieOf(page, '__Host-form_csrf')!
        _csrf = formField(page.text, '_csrf')!
      })
      /** A sign-up the form refuses: back to the form (303), the reason on it, no session. */
      const expectSignUpRefused = async (x: Res, reason: RegExp) => {
        assert.equal(x.status, 303, x.text.slice(0, 300))
        assert.equal(cookieOf(x, 'session'), undefined)
        const form = await s.get(x.header('location')!, { cookie: formCookie, headers: { 'accept-language': 'en' } })
        assert.match(form.text, reason)
      }

      it('signs up and is signed in', async () => {
        const r = await s.post('/register', {
          form: { _csrf, username: name, password: 'a long password', password2: 'a long password' },
          cookie: formCookie,
          headers: BROWSER,
        })
        assert.equal(r.status, 303)
        assert.equal(r.header('location'), '/dashboard')
        const session = cookieOf(r, 'session')!
        assert.match(r.header('set-cookie')!, /HttpOnly; Secure; SameSite=Lax/)
        const me = await s.get('/svc_api/me', { cookie: session })
        assert.equal(me.json.data.username, name)
        const dash = await s.get('/dashboard', { cookie: session })
        assert.ok(dash.text.includes(name))
      })

      // the same name again (after the sign-up above), reserved names, bad names, short or different passwords: refused, with the reason
      const cases: Array<[string, Record<string, string>, RegExp]> = [
        ['the same name again', { username: name, password: 'a long password', password2: 'a long password' }, /taken/],
        ['a reserved name', { username: 'dashboard', password: 'a long password', password2: 'a long password' }, /reserved/],
        ['a reserved name in other case', { username: 'API-Keys', password: 'a long password', password2: 'a long password' }, /reserved/],
        ['a one-letter name', { username: 'a', password: 'a long password', password2: 'a long password' }, /2-32 characters/],
        // free names a new account may not take, with their own reason (not "taken")
        ['a mailbox name', { username: 'postmaster', password: 'a long password', password2: 'a long password' }, /reserved/],
        ['a trailing hyphen', { username: 'bob-', password: 'a long password', password2: 'a long password' }, /may not end with/],
        ['an IDN-like label', { username: 'xn--abc', password: 'a long password', password2: 'a long password' }, /third and fourth/],
        ['a short password', { username: 'okname1', password: 'short', password2: 'short' }, /at least 8/],
        ['passwords that differ', { username: 'okname1', password: 'a long password', password2: 'another one!' }, /differ/],
      ]
      for (const [label, form, reason] of cases) {
        it(`${label}: 400 ${reason.source}`, async () => {
          const x = await s.post('/register', { form: { ...form, _csrf }, cookie: formCookie, headers: { ...BROWSER, 'accept-language': 'en' } })
          await expectSignUpRefused(x, reason)
        })
      }
      it('after them all, okname1 does not exist', async () => {
        assert.equal(await s.deps.users.byName('okname1'), undefined)
      })

      it('a browser post without the form token: refused (sign-up CSRF), no account', async () => {
        const noToken = await s.post('/register', {
          form: { username: 'okname2', password: 'a long password', password2: 'a long password' },
          headers: BROWSER,
        })
        assert.equal(noToken.status, 303)
        assert.equal(noToken.header('location'), '/register?error=expired&username=okname2')
        assert.equal(await s.deps.users.byName('okname2'), undefined)
      })
    })

    it('escapes a username with <script> echoed back by the sign-up form', async () => {
      const page = await s.get('/register')
      const payload = '"><script>alert(1)</script>'
      const r = await s.post('/register', {
        form: { _csrf: formField(page.text, '_csrf')!, username: payload, password: 'a long password', password2: 'a long password' },
        cookie: cookieOf(page, '__Host-form_csrf')!,
        headers: BROWSER,
      })
      assert.equal(r.status, 303)
      const form = await s.get(r.header('location')!, { cookie: cookieOf(page, '__Host-form_csrf')! })
      assert.ok(!form.text.includes('<script>alert(1)'))
      assert.ok(form.text.includes('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"'))
    })

    it('speaks English or Chinese by Accept-Language, with a switch kept in the lang cookie', async () => {
      const en = await s.get('/login', { headers: { 'accept-language': 'en-US,en;q=0.9' } })
      assert.match(en.text, /<html lang="en">/)
      assert.match(en.text, /<title>Log in/)
      const zh = await s.get('/login', { headers: { 'accept-language': 'zh-CN' } })
      assert.match(zh.text, /<html lang="zh-CN">/)
      assert.match(zh.text, /登录/)
      const sw = await s.get('/login?lang=zh', { headers: { 'accept-language': 'en' } })
      assert.equal(sw.status, 303)
      assert.equal(sw.header('location'), '/login')
      const lang = cookieOf(sw, 'lang')!
      assert.equal(lang, 'lang=zh')
      const after = await s.get('/login', { cookie: lang, headers: { 'accept-language': 'en' } })
      assert.match(after.text, /<html lang="zh-CN">/)
      // every page has labelled controls: each input/select/textarea id has a <label for>
      const page = await s.get('/dashboard/forms', { cookie })
      const ids = [...page.text.matchAll(/<(?:input|select|textarea)\b[^>]*\bid="([^"]+)"/g)].map((m) => m[1])
      for (const id of ids)
        assert.ok(page.text.includes(`for="${id}"`) || new RegExp(`<label class="check"><input[^>]*id="${id}"`).test(page.text), `label for ${id}`)
    })

    it('serves the page scripts from /static with a JavaScript type', async () => {
      const page = await s.get('/api-keys', { cookie })
      const src = /src="(\/static\/keys\.js\?v=[0-9a-f]+)"/.exec(page.text)![1]
      const js = await s.get(src)
      assert.equal(js.status, 200)
      assert.match(js.header('content-type')!, /^text\/javascript/)
      assert.equal(js.header('x-content-type-options'), 'nosniff')
      assert.match(js.header('cache-control')!, /immutable/)
      const again = await s.get('/static/keys.js', { headers: { 'if-none-match': js.header('etag')! } })
      assert.equal(again.status, 304)
      assert.equal((await s.get('/static/nope.js')).status, 404)
      assert.equal((await s.get('/static/..%2fapp-pages.ts')).status, 404)
      // no page script writes HTML into the DOM
      for (const name of ['common', 'keys', 'files', 'folders', 'kv', 'forms', 'images', 'data']) {
        const body = (await s.get(`/static/${name}.js`)).text
        assert.ok(!/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/.test(body), name)
      }
    })
  })

  describe(`sign-ups sent at once [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine })
    })
    after(() => s.close())

    it('holds the limit of 20 sign-ups per address for a burst', async () => {
      const page = await s.get('/register')
      const form = { _csrf: formField(page.text, '_csrf')!, password: 'a long password', password2: 'a long password' }
      const names = Array.from({ length: 30 }, (_, i) => `burst${i}x${Date.now().toString(36)}`)
      // each sign-up checked the limit before any was counted (after its password was hashed)
      const rs = await Promise.all(
        names.map((username) =>
          s.post('/register', { form: { ...form, username }, cookie: cookieOf(page, '__Host-form_csrf')!, headers: { ...BROWSER, 'accept-language': 'en' } }),
        ),
      )
      const signedUp = (r: Res) => r.header('location') === '/dashboard'
      assert.equal(rs.filter(signedUp).length, 20)
      const refused = rs.filter((r) => !signedUp(r))
      assert.equal(refused.length, 10)
      for (const r of refused) assert.match(r.header('location')!, /^\/register\?error=throttled&/)
      let created = 0
      for (const n of names) if (await s.deps.users.byName(n)) created++
      assert.equal(created, 20)
    })
  })

  describe(`registration switched off [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine, env: { REGISTRATION: '0' } })
    })
    after(() => s.close())

    it('shows a clear page and creates no account', async () => {
      const page = await s.get('/register', { headers: { 'accept-language': 'en' } })
      assert.equal(page.status, 403)
      assert.match(page.text, /Registration is closed/)
      assert.ok(!page.text.includes('name="password"'))
      const r = await s.post('/register', {
        form: { username: 'someone', password: 'a long password', password2: 'a long password' },
        headers: { 'accept-language': 'en' },
      })
      assert.equal(r.status, 303, 'to the closed page (decision 153)')
      assert.equal(r.header('location'), '/register')
      assert.equal(await s.deps.users.byName('someone'), undefined)
      const login = await s.get('/login', { headers: { 'accept-language': 'en' } })
      assert.ok(!login.text.includes('href="/register"'))
    })
  })
}
