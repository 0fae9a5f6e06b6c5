import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { request } from 'undici'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'
import { expectError, expectErrorInBoth } from '../support/errors.js'

// Visitor access: a project or single page behind a password (a form and a cookie on the
// user's origin, HTTP Basic everywhere) or past its expiry (410). A protected name never
// answers its bytes, status, length or validators without the password, on any URL form.
const SECRET = 'TOP-SECRET-CONTENT'
const BIG = `${SECRET} ${'x'.repeat(3 * 1024 * 1024)}`
/** What visitor access says to a visitor of each language about the page words.html (decision 197). */
const WORDS = {
  en: {
    lang: 'en',
    title: 'Password required',
    intro: 'words.html is protected. Enter its password to continue.',
    label: 'Password',
    submit: 'Continue',
    empty: 'Enter the password.',
    wrong: 'Wrong password.',
    gone: 'Gone: this page has expired\n',
    tooMany: /^Too many wrong passwords; try again in (\d+) seconds\n$/,
    tooLarge: 'Payload Too Large\n',
  },
  zh: {
    lang: 'zh-CN',
    title: '需要密码',
    intro: 'words.html 受密码保护，请输入密码继续。',
    label: '密码',
    submit: '继续',
    empty: '请输入密码。',
    wrong: '密码错误。',
    gone: '此页面已过期\n',
    tooMany: /^密码错误次数过多，请 (\d+) 秒后再试\n$/,
    tooLarge: '请求体过大\n',
  },
} as const
/** A visitor's Accept-Language and the language the answer is in; none: the service's default, Chinese. */
const VISITORS: ReadonlyArray<[Record<string, string>, keyof typeof WORDS]> = [
  [{ 'accept-language': 'en-US,en;q=0.9' }, 'en'],
  [{ 'accept-language': 'zh-CN,zh;q=0.9,en;q=0.5' }, 'zh'],
  [{}, 'zh'],
]
const FORM_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

for (const engine of ENGINES) {
  describe(`visitor access [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let etag = ''
    // the live deploy of 'secret': its preview URL ({project}@{deploy}) is a URL of the name too
    let deployId = ''
    const basic = (pw: string) => `Basic ${Buffer.from(`visitor:${pw}`).toString('base64')}`

    /** A request to alice's own origin (plain HTTP on loopback). */
    const site = async (p: string, o: { method?: string; headers?: Record<string, string>; body?: string } = {}) => {
      const r = await request(`${s.httpUrl}${p}`, { method: (o.method ?? 'GET') as 'GET', headers: { host: 'alice.localhost', ...o.headers }, body: o.body })
      const text = await r.body.text()
      const h = r.headers as Record<string, string | string[] | undefined>
      return { status: r.statusCode, text, header: (n: string) => [h[n.toLowerCase()]].flat().join(', ') || undefined }
    }
    const leaks = (text: string) => text.includes(SECRET) || text.includes('xxxx')

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      alice = await s.user({ name: 'alice' })
      const up = await batchUpload(s, { key: alice.key }, 'secret', [
        { filename: 'index.html', data: `<p>${SECRET}</p>` },
        { filename: 'big.txt', data: BIG },
        { filename: '404.html', data: `<p>${SECRET} 404</p>` },
        {
          filename: '_headers',
          data: '/*\n  CDN-Cache-Control: public, max-age=600\n  Surrogate-Control: max-age=600\n/big.txt\n  Cache-Control: public, max-age=31536000, immutable\n',
        },
      ])
      assert.equal(up.status, 200, up.text)
      assert.equal((await s.post('/api/folders/secret/publish', { key: alice.key })).status, 200)
      const open = await batchUpload(s, { key: alice.key }, 'open', [{ filename: 'index.html', data: '<p>open</p>' }])
      assert.equal(open.status, 200)
      assert.equal((await s.post('/api/folders/open/publish', { key: alice.key })).status, 200)
      assert.equal((await uploadFile(s, { key: alice.key }, 'note.html', `<p>${SECRET} note</p>`)).status, 200)
      deployId = (await s.get('/api/folders/secret/deploys', { key: alice.key })).json.live_deploy_id
      assert.match(deployId, /^[0-9a-z]{12}$/)
      assert.equal((await s.get(`/alice/secret@${deployId}/`)).status, 200)
      assert.equal((await site(`/secret@${deployId}/big.txt`)).status, 200)
      // warm every cache before protecting: the check must come before cached answers too
      const warm = await s.get('/alice/secret/')
      assert.equal(warm.status, 200)
      etag = warm.header('etag') ?? ''
      assert.equal((await site('/secret/')).status, 200)
      assert.equal((await s.get('/alice/secret/big.txt')).status, 200)
    })
    after(() => s?.close())

    it('refuses bad settings with their own errors and changes nothing', async () => {
      const put = (name: string, json: unknown) => s.request('PUT', `/api/access/${encodeURIComponent(name)}`, { key: alice.key, json })
      expectError(await put('secret', { password: 'abc' }), 400, 1347)
      expectError(await put('secret', { password: 12345678 }), 400, 1347)
      expectError(await put('secret', { password: 'x'.repeat(1025) }), 400, 1347)
      expectError(await put('secret', { expires_at: 'tomorrow' }), 400, 1347)
      expectError(await put('secret', { expires_at: -5 }), 400, 1347)
      expectError(await put('secret', { passwd: 'hunter22' }), 400, 1347)
      // neither field: a setting that would protect nothing
      expectError(await put('secret', {}), 400, 1347)
      expectError(await put('nope', { password: 'hunter22' }), 404, 1346)
      expectError(await s.request('PUT', '/api/access/secret', { json: { password: 'hunter22' } }), 401, 1001)
      expectError(await s.request('DELETE', '/api/access/secret', { key: alice.key }), 404, 1348)
      const list = await s.get('/api/access', { key: alice.key })
      assert.deepEqual(list.json.data.access, [])
      assert.equal((await s.get('/alice/secret/')).status, 200)
    })

    it("says each refused setting whole in the answer's language", async () => {
      const put = (name: string, json: unknown) => (headers: Record<string, string>) =>
        s.request('PUT', `/api/access/${encodeURIComponent(name)}`, { key: alice.key, json, headers })
      const invalid: Array<[string, unknown, string, string]> = [
        [
          'secret',
          { password: 'abc' },
          'password 须为 4 个字符到 1024 字节的字符串，或为 null 以删除密码',
          'password must be a string of 4 characters to 1024 bytes, or null to remove it',
        ],
        [
          'secret',
          { expires_at: 'tomorrow' },
          'expires_at 须为带时区的 ISO 8601 时间（如 2026-12-31T23:00:00Z）、毫秒时间戳，或为 null',
          'expires_at must be an ISO 8601 time with a zone (2026-12-31T23:00:00Z), epoch milliseconds, or null',
        ],
        ['secret', { passwd: 'hunter22' }, '未知字段 "passwd"（可发送 password、expires_at）', 'unknown field "passwd" (send password, expires_at)'],
        ['a/b', { password: 'hunter22' }, 'name 须为项目或页面的名称', 'name must be a project or page name'],
        ['secret', {}, '请提供 password、expires_at 或两者（null 表示删除该项）', 'send password, expires_at or both (null removes one)'],
      ]
      for (const [name, json, zh, en] of invalid) await expectErrorInBoth(put(name, json), 400, 1347, `访问设置无效：${zh}`, `Invalid access setting: ${en}`)
      await expectErrorInBoth(put('nope', { password: 'hunter22' }), 404, 1346, '没有名为 nope 的项目或页面', 'No project or page named nope')
      assert.deepEqual((await s.get('/api/access', { key: alice.key })).json.data.access, [])
    })

    it('protects a project: 401 and never its content, on every URL form', async () => {
      const r = await s.request('PUT', '/api/access/secret', { key: alice.key, json: { password: 'hunter22' } })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual({ ...r.json.data, updated_at: undefined }, { name: 'secret', password: true, expires_at: null, expired: false, updated_at: undefined })

      const pathForms = [
        '/alice/secret/',
        '/alice/secret/index.html',
        '/alice/secret',
        '/ALICE/secret/',
        '/alice/secre%74/',
        '/%61lice/secret/big.txt',
        '/alice/secret/missing',
        '/alice/secret/big.txt',
        `/alice/secret@${deployId}/`,
        `/alice/secret%40${deployId}/big.txt`,
      ]
      for (const p of pathForms) {
        const variants: Array<Record<string, string>> = [{}, { range: 'bytes=0-20' }, { 'if-none-match': etag }, { 'accept-encoding': 'gzip, br' }]
        for (const headers of variants) {
          const a = await s.get(p, { headers })
          assert.equal(a.status, 401, `${p} ${JSON.stringify(headers)}: ${a.status}`)
          assert.ok(!leaks(a.text), p)
          assert.match(a.header('www-authenticate') ?? '', /^Basic realm="alice\/secret"/)
          assert.equal(a.header('etag'), undefined)
          assert.equal(a.header('cache-control'), 'no-store')
        }
        const h = await s.request('HEAD', p)
        assert.equal(h.status, 401, `HEAD ${p}`)
      }
      // the user's origin: the form for a browser, Basic for scripts
      const form = await site('/secret/', { headers: { accept: 'text/html', 'sec-fetch-mode': 'navigate' } })
      assert.equal(form.status, 401)
      assert.match(form.text, /<form method="post">/)
      assert.match(form.text, /type="password"/)
      assert.ok(!leaks(form.text))
      assert.doesNotMatch(form.header('www-authenticate') ?? '', /Basic/)
      const script = await site('/secret/big.txt', { headers: { range: 'bytes=0-5' } })
      assert.equal(script.status, 401)
      assert.ok(!leaks(script.text))
      const preview = await site(`/secret@${deployId}/big.txt`)
      assert.equal(preview.status, 401)
      assert.ok(!leaks(preview.text))
      assert.match(script.header('www-authenticate') ?? '', /^Basic/)
      // the project's own origin: held the same way
      for (const p of ['/', '/big.txt', '/missing']) {
        const r = await site(p, { headers: { host: 'secret.alice.localhost', range: 'bytes=0-5' } })
        assert.equal(r.status, 401, `project origin ${p}`)
        assert.ok(!leaks(r.text))
      }
      // other names stay open
      assert.equal((await s.get('/alice/open/')).status, 200)
      assert.equal((await site('/', { headers: { host: 'open.alice.localhost' } })).status, 200)
      assert.equal((await site('/note.html')).status, 200)
    })

    it('lets HTTP Basic with the right password through, and not a wrong one', async () => {
      const wrong = await s.get('/alice/secret/', { headers: { authorization: basic('nope-nope') } })
      assert.equal(wrong.status, 401)
      assert.ok(!leaks(wrong.text))
      const ok = await s.get('/alice/secret/', { headers: { authorization: basic('hunter22') } })
      assert.equal(ok.status, 200)
      assert.equal(ok.text, `<p>${SECRET}</p>`)
      const part = await s.get('/alice/secret/big.txt', { headers: { authorization: basic('hunter22'), range: 'bytes=0-17' } })
      assert.equal(part.status, 206)
      assert.equal(part.text, SECRET)
      // what a password let through is this visitor's: no shared cache may keep it (RFC 9111
      // 3.5), on every answer (big.txt's rule asks for a public year), and identity only
      const auth = { authorization: basic('hunter22') }
      const answers = [
        ok,
        part,
        await s.get('/alice/secret/index.html', { headers: { ...auth, 'accept-encoding': 'gzip, br' } }),
        await s.get('/alice/secret/', { headers: { ...auth, 'if-none-match': etag } }),
        await s.get('/alice/secret/missing', { headers: auth }),
        await site('/secret/', { headers: auth }),
        await site('/', { headers: { ...auth, host: 'secret.alice.localhost' } }),
      ]
      // a CDN's own cache field (RFC 9213 CDN-Cache-Control, Surrogate-Control) would outrank Cache-Control there
      for (const a of answers) assert.deepEqual([a.header('cdn-cache-control'), a.header('surrogate-control')], [undefined, undefined], `${a.status}`)
      assert.deepEqual(
        answers.map((a) => [a.status, a.header('cache-control'), a.header('content-encoding')]),
        [
          [200, 'private, no-cache', undefined],
          [206, 'private, no-cache', undefined],
          [200, 'private, no-cache', undefined],
          [304, 'private, no-cache', undefined],
          [404, 'private, no-cache', undefined],
          [200, 'private, no-cache', undefined],
          [200, 'private, no-cache', undefined],
        ],
      )
      // an open project keeps its shared-cache answer
      assert.equal((await s.get('/alice/open/')).header('cache-control'), 'public, max-age=0, must-revalidate')
      assert.equal((await site('/secret/', { headers: { authorization: basic('hunter22') } })).status, 200)
      assert.equal(
        (await site('/big.txt', { headers: { host: 'secret.alice.localhost', authorization: basic('hunter22'), range: 'bytes=0-17' } })).text,
        SECRET,
      )
    })

    it('the form sets an HttpOnly cookie holding no password; the cookie opens the project only', async () => {
      const post = (pw: string) =>
        site('/secret/?a=1', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', 'accept-language': 'en' },
          body: new URLSearchParams({ password: pw }).toString(),
        })
      const bad = await post('wrong-one')
      assert.equal(bad.status, 401)
      assert.match(bad.text, /Wrong password/)
      assert.equal(bad.header('set-cookie'), undefined)
      const good = await post('hunter22')
      assert.equal(good.status, 303)
      assert.equal(good.header('location'), '/secret/?a=1')
      const cookie = good.header('set-cookie') ?? ''
      // Path=/: every URL of the name on this origin; the name and HMAC bind it to this setting (decision 175)
      assert.match(cookie, /^svc_access_[0-9a-f]{32}=\d+\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/)
      assert.ok(!cookie.includes('hunter22'))
      const pair = cookie.split(';')[0]
      const page = await site('/secret/', { headers: { cookie: pair } })
      assert.equal(page.status, 200)
      assert.equal(page.text, `<p>${SECRET}</p>`)
      assert.equal(page.header('cache-control'), 'private, no-cache')
      // a forged or altered cookie is refused
      const forged = pair.replace(/=(\d+)\./, (_m, t: string) => `=${Number(t) + 1}.`)
      assert.equal((await site('/secret/', { headers: { cookie: forged } })).status, 401)
      // on the project's own origin every path is gated, `//other.host/` too: the form sends
      // the visitor back to that path on this origin, never to the host a browser reads in it
      for (const [p, to] of [
        ['//evil.test/x?y=1', '/evil.test/x?y=1'],
        ['///evil.test/', '/evil.test/'],
      ]) {
        const back = await site(p, {
          method: 'POST',
          headers: { host: 'secret.alice.localhost', 'content-type': 'application/x-www-form-urlencoded' },
          body: 'password=hunter22',
        })
        assert.equal(back.status, 303, p)
        assert.equal(back.header('location'), to, p)
      }
      // the path form has no cookies (the service's host): Basic only
      assert.equal((await s.get('/alice/secret/', { cookie: pair })).status, 401)
      // a new password ends every cookie given before
      assert.equal((await s.request('PUT', '/api/access/secret', { key: alice.key, json: { password: 'correct-horse' } })).status, 200)
      assert.equal((await site('/secret/', { headers: { cookie: pair } })).status, 401)
      assert.equal((await site('/secret/', { headers: { authorization: basic('correct-horse') } })).status, 200)
    })

    it('answers a form body over its limit at once and closes the connection, never reading the rest', async () => {
      const port = Number(new URL(s.httpUrl).port)
      /** Sends the head and `first` bytes of a body that never ends; what came back once the server closed. */
      const unending = (head: string, first: string) =>
        new Promise<string>((resolve, reject) => {
          const sock = net.connect(port, '127.0.0.1', () => sock.write(head + first))
          let got = ''
          sock.on('data', (b) => (got += b.toString('latin1')))
          sock.on('close', () => resolve(got))
          sock.on('error', () => resolve(got))
          setTimeout(() => {
            sock.destroy()
            reject(new Error(`no answer and no close within 10 s: ${JSON.stringify(got.slice(0, 200))}`))
          }, 10_000).unref()
        })
      const head = (framing: string) =>
        `POST /secret/ HTTP/1.1\r\nHost: alice.localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nAccept: text/html\r\nAccept-Language: en\r\n${framing}\r\n\r\n`
      // chunked: 9 KB come, then nothing more; announced: a length far past the limit, a few bytes sent
      const chunk = `password=${'x'.repeat(9000)}`
      for (const got of [
        await unending(head('Transfer-Encoding: chunked'), `${chunk.length.toString(16)}\r\n${chunk}\r\n`),
        await unending(head('Content-Length: 1000000000'), 'password=x'),
      ]) {
        assert.match(got, /^HTTP\/1\.1 413 /)
        assert.match(got, /\r\nconnection: close\r\n/i)
        assert.ok(got.includes(WORDS.en.tooLarge), got)
      }
    })

    it('an expired page answers 410 to everybody, password or not', async () => {
      const past = new Date(Date.now() - 60_000).toISOString()
      const r = await s.request('PUT', '/api/access/note.html', { key: alice.key, json: { expires_at: past } })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.data.expired, true)
      assert.equal(r.json.data.password, false)
      for (const get of [() => s.get('/alice/note.html'), () => site('/note.html'), () => s.request('HEAD', '/alice/note.html')]) {
        const a = await get()
        assert.equal(a.status, 410)
        assert.ok(!leaks(a.text))
      }
      // a later expiry serves it again; removing the setting too
      const future = Date.now() + 3_600_000
      const later = await s.request('PUT', '/api/access/note.html', { key: alice.key, json: { expires_at: future } })
      assert.equal(later.json.data.expires_at, new Date(future).toISOString())
      assert.equal((await s.get('/alice/note.html')).status, 200)
      assert.equal((await s.request('PUT', '/api/access/note.html', { key: alice.key, json: { expires_at: past } })).status, 200)
      assert.equal((await s.get('/alice/note.html')).status, 410)
      assert.equal((await s.request('DELETE', '/api/access/note.html', { key: alice.key })).status, 200)
      assert.equal((await s.get('/alice/note.html')).text, `<p>${SECRET} note</p>`)
      const list = await s.get('/api/access', { key: alice.key })
      assert.deepEqual(
        list.json.data.access.map((a: { name: string }) => a.name),
        ['secret'],
      )
    })

    it('limits wrong passwords: the 11th try from one client waits, even with the right password', async () => {
      assert.equal((await s.request('PUT', '/api/access/open', { key: alice.key, json: { password: 'open-sesame' } })).status, 200)
      for (let i = 0; i < 10; i++) assert.equal((await s.get('/alice/open/', { headers: { authorization: basic(`guess-${i}`) } })).status, 401)
      const blocked = await s.get('/alice/open/', { headers: { authorization: basic('open-sesame') } })
      assert.equal(blocked.status, 429)
      assert.ok(Number(blocked.header('retry-after')) > 0)
      assert.ok(!blocked.text.includes('open</p>'))
      const form = await site('/open/', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'password=open-sesame' })
      assert.equal(form.status, 429)
      // other names of the same user are counted apart
      assert.equal((await s.get('/alice/secret/', { headers: { authorization: basic('correct-horse') } })).status, 200)
    })

    it('counts wrong passwords sent at once: a burst gets no more guesses than the limit', async () => {
      // every request of a burst passed the check before the first failure was counted
      assert.equal((await s.request('PUT', '/api/access/note.html', { key: alice.key, json: { password: 'burst-sesame' } })).status, 200)
      const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => s.get('/alice/note.html', { headers: { authorization: basic(`burst-${i}`) } })))
      assert.equal(burst.filter((r) => r.status === 401).length, 10)
      const throttled = burst.filter((r) => r.status === 429)
      assert.equal(throttled.length, 20)
      for (const r of throttled) {
        assert.ok(Number(r.header('retry-after')) >= 1)
        assert.ok(!leaks(r.text))
      }
      assert.equal((await s.request('DELETE', '/api/access/note.html', { key: alice.key })).status, 200)
    })

    it("answers the form and every refusal in the visitor's language, with Vary: Accept-Language (decision 197)", async () => {
      assert.equal((await uploadFile(s, { key: alice.key }, 'words.html', `<p>${SECRET} words</p>`)).status, 200)
      assert.equal((await s.request('PUT', '/api/access/words.html', { key: alice.key, json: { password: 'words-pass' } })).status, 200)
      const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
      /** Checks a plain-text answer: its status, words and headers. */
      const assertText = (r: Awaited<ReturnType<typeof site>>, status: number, text: string | RegExp, what: string) => {
        assert.equal(r.status, status, `${what}: ${r.text}`)
        if (typeof text === 'string') assert.equal(r.text, text, what)
        else assert.match(r.text, text, what)
        assert.equal(r.header('content-type'), 'text/plain; charset=utf-8', what)
        assert.equal(r.header('cache-control'), 'no-store', what)
        assert.equal(r.header('x-content-type-options'), 'nosniff', what)
        assert.equal(r.header('vary'), 'Accept-Language', `${what}: the body depends on the language`)
        assert.ok(!leaks(r.text), what)
      }
      for (const [headers, lang] of VISITORS) {
        const w = WORDS[lang]
        const what = `${lang} ${JSON.stringify(headers)}`
        // the form a browser gets, then with each of its errors (no password, a wrong one)
        for (const [body, error] of [
          [undefined, null],
          ['password=', w.empty],
          ['password=wrong-words', w.wrong],
        ] as const) {
          const r = await site('/words.html', {
            method: body === undefined ? 'GET' : 'POST',
            headers: { accept: 'text/html', 'sec-fetch-mode': 'navigate', ...headers, ...(body === undefined ? {} : FORM) },
            body,
          })
          const at = `${what} ${body ?? 'GET'}`
          assert.equal(r.status, 401, at)
          assert.equal(r.header('content-type'), 'text/html; charset=utf-8', at)
          assert.equal(r.header('cache-control'), 'no-store', at)
          assert.equal(r.header('content-security-policy'), FORM_CSP, at)
          assert.equal(r.header('referrer-policy'), 'no-referrer', at)
          assert.equal(r.header('vary'), 'Accept-Language', `${at}: the body depends on the language`)
          assert.equal(r.header('www-authenticate'), 'Form realm="alice/words.html"', at)
          assert.equal(r.header('set-cookie'), undefined, at)
          assert.match(r.text, new RegExp(`^<!doctype html>\\s*<html lang="${w.lang}">`), at)
          for (const part of [
            `<title>${w.title}</title>`,
            `<h1>${w.title}</h1><p>${w.intro}</p>`,
            `<label for="password">${w.label}</label>`,
            `>${w.submit}</button>`,
          ])
            assert.ok(r.text.includes(part), `${at}: ${part} in ${r.text}`)
          if (error === null) assert.ok(!r.text.includes('class="err"'), at)
          else assert.ok(r.text.includes(`<p class="err" role="alert">${error}</p>`), `${at}: ${r.text}`)
          assert.ok(!leaks(r.text), at)
        }
        // a script's Basic challenge, on the path form and the user's origin: plain text
        for (const r of [await s.get('/alice/words.html', { headers }), await site('/words.html', { headers })]) {
          assertText(r, 401, `${w.title}\n`, `${what} Basic`)
          assert.match(r.header('www-authenticate') ?? '', /^Basic realm="alice\/words\.html"/)
        }
        // a form body over the limit
        const big = await site('/words.html', { method: 'POST', headers: { ...headers, ...FORM }, body: `password=${'x'.repeat(9000)}` })
        assertText(big, 413, w.tooLarge, `${what} 413`)
      }
      // the throttle: the 11th wrong password from one client waits, and says so in its language
      let tries = 3
      while ((await s.get('/alice/words.html', { headers: { authorization: basic(`guess-${tries}`) } })).status === 401)
        assert.ok(++tries <= 10, `${tries} tries`)
      assert.equal(tries, 10)
      for (const [headers, lang] of VISITORS) {
        const what = `${lang} ${JSON.stringify(headers)} 429`
        const throttled = [
          await s.get('/alice/words.html', { headers: { ...headers, authorization: basic('words-pass') } }),
          await site('/words.html', { method: 'POST', headers: { ...headers, ...FORM, accept: 'text/html' }, body: 'password=words-pass' }),
        ]
        for (const r of throttled) {
          assertText(r, 429, WORDS[lang].tooMany, what)
          assert.equal(WORDS[lang].tooMany.exec(r.text)?.[1], r.header('retry-after'), what)
        }
      }
      // past its expiry: 410, password or not, GET or HEAD
      const past = new Date(Date.now() - 60_000).toISOString()
      assert.equal((await s.request('PUT', '/api/access/words.html', { key: alice.key, json: { expires_at: past } })).status, 200)
      for (const [headers, lang] of VISITORS) {
        const what = `${lang} ${JSON.stringify(headers)} 410`
        assertText(await s.get('/alice/words.html', { headers }), 410, WORDS[lang].gone, what)
        assertText(await site('/words.html', { headers: { ...headers, accept: 'text/html' } }), 410, WORDS[lang].gone, what)
        assertText(await s.request('HEAD', '/alice/words.html', { headers }), 410, '', `HEAD ${what}`)
      }
      assert.equal((await s.request('DELETE', '/api/access/words.html', { key: alice.key })).status, 200)
    })

    it('removing the setting opens the project at once', async () => {
      assert.equal((await s.request('DELETE', '/api/access/secret', { key: alice.key })).status, 200)
      assert.equal((await s.get('/alice/secret/')).text, `<p>${SECRET}</p>`)
      assert.equal((await site('/secret/')).status, 200)
    })
  })
}
