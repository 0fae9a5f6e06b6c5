import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page, Request } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { openBrowser, sessionCookiesFor, sessionIdOf, waitFor, type BrowserLease } from '../support/browser.js'

// Isolation is the browser's same-origin policy applied to the service's headers and hosts:
// the same on both engines.
const engine = ENGINES[0]

type User = Awaited<ReturnType<TestServer['user']>>

/**
 * A content domain under a real registry (.com), resolved to loopback by Chromium only: the
 * service at its apex, users' origins below it. No request leaves the machine.
 */
const TOSS_DOMAIN = 'svc-test.example.com'
const RESOLVER_RULES = `--host-resolver-rules=MAP ${TOSS_DOMAIN} 127.0.0.1, MAP *.${TOSS_DOMAIN} 127.0.0.1`
type Out = Record<string, unknown>

/** Bob's page: keeps something in each of its origin's storages. */
const BOB_PAGE = `<!doctype html><html><head><title>loading</title><link rel="icon" href="data:,"></head><body><script>
localStorage.setItem('secret', 'bob-local')
sessionStorage.setItem('secret', 'bob-session')
const open = indexedDB.open('bob-db', 1)
open.onupgradeneeded = () => open.result.createObjectStore('kv')
open.onsuccess = () => { open.result.close(); document.title = 'ready' }
</script></body></html>`

/** Alice's page: tries to reach Bob's storage, the service's cookies, the API and the dashboard. */
const evilPage = (service: string, bobOrigin: string) => `<!doctype html><html><head><title>loading</title><link rel="icon" href="data:,"></head><body><script>
(async () => {
  const SERVICE = ${JSON.stringify(service)}
  const BOB = ${JSON.stringify(bobOrigin)}
  const out = {}
  const attempt = async (name, fn) => { try { out[name] = await fn() } catch (e) { out[name] = 'threw:' + (e && e.name) } }
  const frame = (src) => new Promise((resolve) => {
    const f = document.createElement('iframe')
    f.src = src
    f.onload = () => resolve(f)
    document.body.append(f)
  })
  await attempt('localStorage', () => localStorage.getItem('secret'))
  await attempt('sessionStorage', () => sessionStorage.getItem('secret'))
  await attempt('databases', async () => (await indexedDB.databases()).map((d) => d.name))
  await attempt('bobDb', () => new Promise((resolve) => {
    const open = indexedDB.open('bob-db')
    open.onupgradeneeded = () => { open.transaction.abort(); resolve('absent') }
    open.onsuccess = () => { const names = [...open.result.objectStoreNames]; open.result.close(); resolve(names) }
    open.onerror = () => resolve('absent')
  }))
  await attempt('bobFrameStorage', async () => (await frame(BOB + '/bob.html')).contentWindow.localStorage.getItem('secret'))
  await attempt('cookie', () => document.cookie)
  await attempt('apiRead', async () => { const r = await fetch(SERVICE + '/svc_api/me', { credentials: 'include' }); return { status: r.status, body: await r.text() } })
  await attempt('apiWrite', async () => { const r = await fetch(SERVICE + '/svc_api/data/store', { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ key: 'pwned', value: 1 }) }); return r.type })
  await attempt('dashboardFrame', async () => { const f = await frame(SERVICE + '/dashboard'); try { return f.contentDocument ? f.contentDocument.body.innerText : 'no document' } catch (e) { return 'threw:' + e.name } })
  window.__out = out
  document.title = 'done'
})()
</script></body></html>`

const done = async (page: Page, title = 'done'): Promise<Out> => {
  await page.waitForFunction((t) => document.title === t, title, { timeout: 15_000 })
  return page.evaluate(() => (window as unknown as { __out?: Out }).__out ?? {})
}

describe(`a user's page is walled off from other users and from the service (Chromium) [${engine}]`, () => {
  let s: TestServer
  let browser: BrowserLease
  let ctx: BrowserContext
  let alice: User
  let bob: User
  let visitor: User
  let service: string
  let siteOf: (u: User) => string
  let visitorCookie: string
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    ;[alice, bob, visitor] = await Promise.all([s.user(), s.user(), s.user()])
    // "localhost", not 127.0.0.1: the service's host is then the parent of every user's
    // origin, where a cookie set with Domain=localhost would also be sent
    service = `https://localhost:${new URL(s.url).port}`
    siteOf = (u) => `http://${u.username}.localhost:${new URL(s.httpUrl).port}`
    assert.equal((await uploadFile(s, { key: bob.key }, 'bob.html', BOB_PAGE)).status, 200)
    assert.equal((await uploadFile(s, { key: alice.key }, 'evil.html', evilPage(service, siteOf(bob)))).status, 200)
    browser = await openBrowser([RESOLVER_RULES])
    ctx = await browser.newContext({ ignoreHTTPSErrors: true })
    // the visitor is signed in to the service in this browser
    visitorCookie = await s.login(visitor.username, visitor.password)
    await ctx.addCookies(sessionCookiesFor(visitorCookie, service))
  })
  after(async () => {
    await ctx?.close()
    await browser?.close()
    await s?.close()
  })

  it("cannot read another user's storage, the service's cookies, the API with the visitor's session, or frame the dashboard", async () => {
    const page = await ctx.newPage()
    try {
      await page.goto(`${siteOf(bob)}/bob.html`)
      await page.waitForFunction(() => document.title === 'ready')
      const me = await page.goto(`${service}/svc_api/me`)
      assert.equal(me?.status(), 200, "the visitor's session works on the service")

      const seen: Array<string | undefined> = []
      const resolve = s.deps.resolvePrincipal
      s.deps.resolvePrincipal = (authorization, cookieHeader, fetchMetadata) => {
        seen.push(cookieHeader)
        return resolve(authorization, cookieHeader, fetchMetadata)
      }
      const fromService: Array<{ url: string; status: number; headers: Record<string, string> }> = []
      page.on('response', (r) => {
        if (r.url().startsWith(service)) fromService.push({ url: r.url(), status: r.status(), headers: r.headers() })
      })
      try {
        await page.goto(`${siteOf(alice)}/evil.html`)
        const out = await done(page)
        assert.equal(out.localStorage, null, "Bob's localStorage is not Alice's")
        assert.equal(out.sessionStorage, null)
        assert.deepEqual(out.databases, [], "Bob's IndexedDB is not listed")
        assert.equal(out.bobDb, 'absent')
        assert.equal(out.bobFrameStorage, 'threw:SecurityError', "Bob's page in a frame is another origin")
        assert.equal(out.cookie, '', 'no cookie of the service is visible')
        assert.equal(out.apiRead, 'threw:TypeError', "the API's answer cannot be read")
        assert.equal(out.dashboardFrame, 'no document')
        // the frame never shows a page of the service: Chromium replaced it with its error page
        assert.deepEqual(
          page
            .frames()
            .map((f) => f.url())
            .filter((u) => u.startsWith(service)),
          [],
        )
        // Chromium swaps in its error page a moment after the refused load event
        const refused = await waitFor(() => page.frames().some((f) => f.url().startsWith('chrome-error:')), 5000)
        assert.ok(refused, 'the framed page was refused')
        const framed = fromService.filter((r) => r.status === 200 && r.headers['content-type']?.startsWith('text/html'))
        assert.ok(framed.length > 0, 'the frame did ask the service')
        for (const r of framed) assert.match(r.headers['content-security-policy'] ?? '', /frame-ancestors 'none'/, r.url)
      } finally {
        s.deps.resolvePrincipal = resolve
      }
      const sid = sessionIdOf(visitorCookie)
      for (const c of seen) assert.ok(!(c ?? '').includes(sid), `no request from Alice's page carried the visitor's session: ${c}`)
      const keys = await s.get('/svc_api/data/list', { key: visitor.key })
      if (keys.status === 200) assert.equal(keys.json.data.items.length, 0, 'nothing was stored for the visitor')
      // the dashboard itself, which the visitor sees at the top level, forbids every framer
      const dash = await page.goto(`${service}/dashboard`)
      assert.equal(dash?.status(), 200)
      assert.equal(new URL(page.url()).pathname, '/dashboard')
      assert.match(dash?.headers()['content-security-policy'] ?? '', /frame-ancestors 'none'/)
      assert.equal(dash?.headers()['x-frame-options'], 'DENY')
    } finally {
      await page.close()
    }
  })

  /** Records the Cookie header of every API and page request the guard resolves. */
  const recordCookies = (server: TestServer) => {
    const seen: Array<string | undefined> = []
    const resolve = server.deps.resolvePrincipal
    server.deps.resolvePrincipal = (authorization, cookieHeader, fetchMetadata) => {
      seen.push(cookieHeader)
      return resolve(authorization, cookieHeader, fetchMetadata)
    }
    return {
      seen,
      stop: () => {
        server.deps.resolvePrincipal = resolve
      },
    }
  }

  for (const where of ['http', 'https'] as const) {
    it(`a session cookie tossed from a user's origin (${where}) never reaches the service on localhost`, async () => {
      // Alice signs in herself, then her page plants her own session for the parent domain:
      // were it taken, the visitor would act as Alice (login CSRF, then whatever they upload)
      const attackerSid = sessionIdOf(await s.login(alice.username, alice.password))
      const sid = sessionIdOf(visitorCookie)
      const aliceOrigin = where === 'http' ? siteOf(alice) : `https://${alice.username}.localhost:${new URL(s.url).port}`
      const page = await ctx.newPage()
      const rec = recordCookies(s)
      try {
        await page.goto(`${aliceOrigin}/evil.html`)
        await done(page)
        const planted = await page.evaluate((v) => {
          document.cookie = `session=${v}; Domain=localhost; Path=/${location.protocol === 'https:' ? '; Secure' : ''}`
          return document.cookie
        }, attackerSid)
        // Chromium takes "localhost" for a registry of its own (like a TLD): no cookie may name it
        assert.equal(planted, '', 'the cookie for Domain=localhost was refused by the browser')
        assert.deepEqual(
          (await ctx.cookies(service)).filter((c) => c.name === 'session').map((c) => `${c.name}=${c.value}`),
          [`session=${sid}`],
        )
        const me = await page.goto(`${service}/svc_api/me`)
        assert.equal(me?.status(), 200)
        assert.equal((await me.json()).data.username, visitor.username, 'the visitor is still themselves, never Alice')
        for (const c of rec.seen) assert.ok(!(c ?? '').includes(attackerSid), "Alice's session never reached the service")
      } finally {
        rec.stop()
        await page.close()
      }
    })
  }

  it("a user's page filling its cookie jar never pushes the service's session out (decision 112)", async () => {
    const page = await ctx.newPage()
    try {
      // Chromium keeps at most 180 cookies per registrable domain; alice.localhost is one of
      // its own, as a user's origin under a content domain on the Public Suffix List is
      await page.goto(`https://${alice.username}.localhost:${new URL(s.url).port}/evil.html`)
      await done(page)
      const held = await page.evaluate(() => {
        for (let i = 0; i < 400; i++) document.cookie = `c${i}=x; Path=/; Secure; Max-Age=60`
        return document.cookie.split(';').length
      })
      assert.ok(held >= 140 && held < 400, `the page's own jar overflowed (${held} kept)`)
      const me = await page.goto(`${service}/svc_api/me`)
      assert.equal(me?.status(), 200)
      assert.equal((await me.json()).data.username, visitor.username, "the visitor's session is still there")
    } finally {
      await page.close()
      await ctx.clearCookies({ domain: `${alice.username}.localhost` })
    }
  })

  // Under a real domain (the service at CONTENT_DOMAIN's apex, users below it) a user's page
  // can set a cookie for the parent domain: the guard must refuse the request that carries
  // both sessions, so the visitor never acts as the attacker.
  describe('under a real content domain, where Chromium takes the tossed cookie', () => {
    let t: TestServer
    let tService: string
    let mallory: User
    let victim: User
    let victimSid: string
    let victimCookie: string
    before(async () => {
      t = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, CONTENT_DOMAIN: TOSS_DOMAIN } })
      ;[mallory, victim] = await Promise.all([t.user(), t.user()])
      tService = `https://${TOSS_DOMAIN}:${new URL(t.url).port}`
      assert.equal((await uploadFile(t, { key: mallory.key }, 'evil.html', evilPage(tService, tService))).status, 200)
      victimCookie = await t.login(victim.username, victim.password)
      victimSid = sessionIdOf(victimCookie)
    })
    after(async () => {
      await t?.close()
    })

    it("refuses the request with both session cookies (AUTH_AMBIGUOUS), and the dashboard shows no one's", async () => {
      const tctx = await browser.newContext({ ignoreHTTPSErrors: true })
      await tctx.addCookies(sessionCookiesFor(victimCookie, tService))
      const attackerSid = sessionIdOf(await t.login(mallory.username, mallory.password))
      const page = await tctx.newPage()
      const rec = recordCookies(t)
      try {
        const before = await page.goto(`${tService}/svc_api/me`)
        assert.equal((await before!.json()).data.username, victim.username, 'the victim is signed in')
        const site = `https://${mallory.username}.${TOSS_DOMAIN}:${new URL(t.url).port}`
        const res = await page.goto(`${site}/evil.html`)
        assert.equal(res?.status(), 200, "the page is served on Mallory's own origin")
        await done(page)
        const planted = await page.evaluate((v) => {
          document.cookie = `session=${v}; Domain=${location.hostname.split('.').slice(1).join('.')}; Path=/; Secure; SameSite=Lax`
          return document.cookie
        }, attackerSid)
        assert.equal(planted, `session=${attackerSid}`, 'the browser took the cookie for the parent domain')
        assert.deepEqual(
          (await tctx.cookies(tService))
            .filter((c) => c.name === 'session')
            .map((c) => c.value)
            .sort(),
          [victimSid, attackerSid].sort(),
          'both would be sent',
        )

        rec.seen.length = 0
        const me = await page.goto(`${tService}/svc_api/me`)
        const body = await me?.json()
        assert.equal(me?.status(), 400, JSON.stringify(body))
        assert.equal(body.success, false)
        assert.equal(body.error_code, 1003, 'AUTH_AMBIGUOUS: more than one session cookie')
        assert.ok(
          rec.seen.some((c) => (c ?? '').includes(attackerSid) && (c ?? '').includes(victimSid)),
          'the request did carry both',
        )

        // that answer expired the tossed copy (see below); tossed again, as the page may
        const retoss = () => tctx.addCookies([{ name: 'session', value: attackerSid, domain: `.${TOSS_DOMAIN}`, path: '/', secure: true, sameSite: 'Lax' }])
        await retoss()
        // an unsafe API call from the service's own page is refused too, before any write
        const write = await page.evaluate(async () => {
          const r = await fetch('/svc_api/data/store', {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ key: 'k', value: 1 }),
          })
          return { status: r.status, code: (await r.json()).error_code }
        })
        assert.deepEqual(write, { status: 400, code: 1003 })

        // the dashboard takes neither session: it sends to sign in, and that answer expires the
        // tossed copy, so the sign-in page finds the visitor's own session and sends them back
        await retoss()
        const dash = await page.goto(`${tService}/dashboard`)
        assert.equal(dash?.status(), 200)
        const chain: string[] = []
        for (let r: Request | null = dash?.request() ?? null; r !== null; r = r.redirectedFrom()) chain.unshift(new URL(r.url()).pathname)
        assert.deepEqual(chain, ['/dashboard', '/login', '/dashboard'])
        const text = await page.locator('body').innerText()
        assert.ok(!text.includes(mallory.username), "Mallory's account is never shown")
        assert.ok(text.includes(victim.username), "the visitor's own is")
      } finally {
        rec.stop()
        await tctx.close()
      }
    })

    it("a session cookie tossed alone (the visitor signed out) never signs the visitor in as the page's owner", async () => {
      const tctx = await browser.newContext({ ignoreHTTPSErrors: true })
      const attackerSid = sessionIdOf(await t.login(mallory.username, mallory.password))
      const page = await tctx.newPage()
      const rec = recordCookies(t)
      try {
        // the visitor is signed out; Mallory's page plants her own session for the parent
        // domain, with neither a session of the visitor's beside it nor any binding cookie
        const res = await page.goto(`https://${mallory.username}.${TOSS_DOMAIN}:${new URL(t.url).port}/evil.html`)
        assert.equal(res?.status(), 200)
        await done(page)
        await page.evaluate((v) => {
          const parent = location.hostname.split('.').slice(1).join('.')
          document.cookie = `session=${v}; Domain=${parent}; Path=/; Secure; SameSite=Lax; Max-Age=31536000`
          // a binding cookie under the non-prefixed name reaches the service too: it counts for nothing
          document.cookie = `session_bind=x; Domain=${parent}; Path=/; Secure; SameSite=Lax`
        }, attackerSid)
        assert.deepEqual(
          (await tctx.cookies(tService))
            .map((c) => c.name)
            .filter((n) => n.includes('session'))
            .sort(),
          ['session', 'session_bind'],
          'the browser sends the tossed session to the service, alone',
        )

        rec.seen.length = 0
        const me = await page.goto(`${tService}/svc_api/me`)
        const body = await me?.json()
        assert.equal(me?.status(), 401, JSON.stringify(body))
        assert.equal(body.error_code, 1002, 'the tossed session is no session')
        assert.ok(
          rec.seen.some((c) => (c ?? '').includes(attackerSid)),
          'the request did carry it',
        )
        assert.deepEqual(
          (await tctx.cookies(tService)).filter((c) => c.name === 'session'),
          [],
          'that answer expired the tossed copy',
        )

        // tossed again: a write from the service's own page is refused before anything is stored
        await tctx.addCookies([{ name: 'session', value: attackerSid, domain: `.${TOSS_DOMAIN}`, path: '/', secure: true, sameSite: 'Lax' }])
        const write = await page.evaluate(async () => {
          const r = await fetch('/svc_api/data/store', {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ key: 'tossed', value: 1 }),
          })
          return r.status
        })
        assert.equal(write, 401)
        const stored = await t.get('/svc_api/data/get?key=tossed', { key: mallory.key })
        assert.equal(stored.status, 404, "nothing was stored in Mallory's account")

        // the dashboard sends to sign in and never shows Mallory's account
        await tctx.addCookies([{ name: 'session', value: attackerSid, domain: `.${TOSS_DOMAIN}`, path: '/', secure: true, sameSite: 'Lax' }])
        await page.goto(`${tService}/dashboard`)
        assert.equal(new URL(page.url()).pathname, '/login')
        assert.ok(!(await page.locator('body').innerText()).includes(mallory.username), "Mallory's account is never shown")

        // tossed once more, the visitor signs in as themselves and is never locked out
        await tctx.addCookies([{ name: 'session', value: attackerSid, domain: `.${TOSS_DOMAIN}`, path: '/', secure: true, sameSite: 'Lax' }])
        await page.fill('#username', victim.username)
        await page.fill('#password', victim.password)
        await Promise.all([page.waitForURL('**/dashboard'), page.click('button[type=submit]')])
        const me2 = await page.goto(`${tService}/svc_api/me`)
        assert.equal((await me2!.json()).data.username, victim.username, 'the visitor is themselves')
        assert.deepEqual(
          (await tctx.cookies(tService)).filter((c) => c.name === 'session').map((c) => c.domain),
          [TOSS_DOMAIN],
          "only the service's own host-only session is left",
        )
      } finally {
        rec.stop()
        await page.close()
        await tctx.close()
      }
    })

    it("a sign-in form token tossed from a user's origin is neither used nor accepted by the service", async () => {
      const T = 'A'.repeat(16) + 'b'.repeat(16) // the form token's alphabet and length
      assert.equal((await uploadFile(t, { key: mallory.key }, 'plain.html', '<!doctype html><title>plain</title><p>plain</p>')).status, 200)
      const tctx = await browser.newContext({ ignoreHTTPSErrors: true })
      const page = await tctx.newPage()
      try {
        const site = `https://${mallory.username}.${TOSS_DOMAIN}:${new URL(t.url).port}`
        assert.equal((await page.goto(`${site}/plain.html`))?.status(), 200)
        // the page tosses the form token under both names for the parent domain (the service's)
        await page.evaluate((v) => {
          const parent = location.hostname.split('.').slice(1).join('.')
          for (const name of ['form_csrf', '__Host-form_csrf']) document.cookie = `${name}=${v}; Domain=${parent}; Path=/; Secure; SameSite=Lax`
        }, T)
        const tossed = (await tctx.cookies(tService)).map((c) => `${c.name}=${c.value}`)
        assert.ok(!tossed.includes(`__Host-form_csrf=${T}`), 'the browser refuses a __Host- cookie with a Domain')

        // the visitor opens the sign-in page: its form carries a token of the service's own
        assert.equal((await page.goto(`${tService}/login`))?.status(), 200)
        const token = await page.locator('input[name=_csrf]').getAttribute('value')
        assert.notEqual(token, T, 'the sign-in form does not take the tossed token')
        const own = (await tctx.cookies(tService)).find((c) => c.name === '__Host-form_csrf')
        assert.ok(own && own.value === token && own.secure && own.path === '/' && !own.domain.startsWith('.'), JSON.stringify(own))

        // a sign-in posted with the tossed value (as a forged form would) is refused
        await page.locator('input[name=_csrf]').evaluate((el, v) => ((el as HTMLInputElement).value = v), T)
        await page.fill('#username', mallory.username)
        await page.fill('#password', mallory.password)
        await Promise.all([page.waitForURL(/\/login\?error=expired|\/dashboard/), page.click('button[type=submit]')])
        assert.match(page.url(), /\/login\?error=expired/, 'refused as an expired form')
      } finally {
        await tctx.close()
      }
    })

    it('expires the tossed copies with that answer: the next request is the visitor again, never locked out', async () => {
      const tctx = await browser.newContext({ ignoreHTTPSErrors: true })
      const cookie = await t.login(victim.username, victim.password)
      const sid = sessionIdOf(cookie)
      await tctx.addCookies(sessionCookiesFor(cookie, tService))
      const attackerSid = sessionIdOf(await t.login(mallory.username, mallory.password))
      const page = await tctx.newPage()
      try {
        await page.goto(`https://${mallory.username}.${TOSS_DOMAIN}:${new URL(t.url).port}/evil.html`)
        await done(page)
        // a long-lived copy for every path, and one more for the API's paths only (the more
        // specific path is sent first): each would refuse the visitor's requests for a year
        await page.evaluate((v) => {
          const parent = location.hostname.split('.').slice(1).join('.')
          document.cookie = `session=${v}; Domain=${parent}; Path=/; Secure; Max-Age=31536000`
          document.cookie = `session=junk; Domain=${parent}; Path=/svc_api; Secure; Max-Age=31536000`
          // partitioned by the top-level site, which the service's own pages share
          document.cookie = `session=part; Domain=${parent}; Path=/; Secure; SameSite=None; Partitioned; Max-Age=31536000`
        }, attackerSid)
        const sessions = async () =>
          (await tctx.cookies())
            .filter((c) => c.name === 'session')
            .map((c) => `${c.domain}${c.path}=${c.value}`)
            .sort()
        assert.equal((await sessions()).length, 4, 'the browser holds the tossed copies beside its own')

        const refused = await page.goto(`${tService}/svc_api/me`)
        assert.equal(refused?.status(), 400)
        assert.equal((await refused.json()).error_code, 1003, 'the request with four session cookies is refused')
        assert.deepEqual(await sessions(), [`${TOSS_DOMAIN}/=${sid}`], "that answer expired the tossed copies; the service's own cookie stays")

        const me = await page.goto(`${tService}/svc_api/me`)
        assert.equal(me?.status(), 200)
        assert.equal((await me.json()).data.username, victim.username, 'the visitor is themselves again')
        const dash = await page.goto(`${tService}/dashboard`)
        assert.equal(dash?.status(), 200)
        assert.equal(new URL(page.url()).pathname, '/dashboard', 'and the dashboard opens')
      } finally {
        await page.close()
        await tctx.close()
      }
    })
  })
})
