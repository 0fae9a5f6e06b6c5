import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { IncomingMessage } from 'node:http'
import type { BrowserContext } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'
import { logInPage, networkQuiet, openContext, sessionCookiesFor, sessionIdOf } from '../support/browser.js'

// Browser isolation is a property of the response headers, the same on both engines.
const engine = ENGINES[0]

/** A hosted page that tries everything a hostile page would do with a visitor's session. */
const EVIL_PAGE = `<!doctype html><html><head><title>loading</title></head><body><h1>hi</h1><script>
(async () => {
  const out = { origin: self.origin }
  const attempt = async (name, fn) => { try { out[name] = await fn() } catch (e) { out[name] = 'threw:' + (e && e.name) } }
  await attempt('files', async () => { const r = await fetch('/svc_api/files', { credentials: 'include' }); return { status: r.status, body: await r.text() } })
  await attempt('storeJson', async () => { const r = await fetch('/svc_api/data/store', { method: 'POST', credentials: 'include', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ key: 'pwned', value: 1 }) }); return { status: r.status } })
  await attempt('storeSimple', async () => { const r = await fetch('/svc_api/data/store', { method: 'POST', credentials: 'include', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ key: 'pwned2', value: 1 }) }); return { status: r.status } })
  await attempt('cookie', async () => document.cookie)
  await attempt('localStorage', async () => { localStorage.setItem('a', 'b'); return 'ok' })
  await attempt('serviceWorker', async () => { await navigator.serviceWorker.register('sw.js'); return 'registered' })
  window.__out = out
  document.title = 'done'
})()
</script></body></html>`

describe(`hosted pages cannot act with a visitor's session (headless Chromium) [${engine}]`, () => {
  let s: TestServer
  let ctx: BrowserContext
  before(async () => {
    // no users' origins: a browser is not sent away from the path form, whose sandbox is tested here
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, CONTENT_DOMAIN: 'off' } })
    ctx = await openContext()
  })
  after(async () => {
    await ctx?.close()
    await s.close()
  })

  for (const where of ['single file', 'folder project'] as const) {
    it(`runs a hosted ${where} in an opaque origin: no session on API calls, no storage, no service worker`, async () => {
      const mallory = await s.user()
      const visitor = await s.user()
      let pageUrl: string
      if (where === 'single file') {
        assert.equal((await uploadFile(s, { key: mallory.key }, 'evil.html', EVIL_PAGE)).status, 200)
        pageUrl = `${s.url}/${mallory.username}/evil.html`
      } else {
        await batchUpload(s, { key: mallory.key }, 'site', [
          { filename: 'index.html', data: EVIL_PAGE },
          { filename: 'sw.js', data: 'self.onfetch = () => {}' },
        ])
        assert.equal((await s.post('/api/folders/site/publish', { key: mallory.key })).status, 200)
        pageUrl = `${s.url}/${mallory.username}/site/`
      }
      // the visitor is logged in: their session cookie is in the browser and works on the API
      const cookie = await s.login(visitor.username, visitor.password)
      await ctx.addCookies(sessionCookiesFor(cookie, s.url))
      const page = await ctx.newPage()
      try {
        const me = await page.goto(`${s.url}/svc_api/me`)
        assert.equal(me?.status(), 200, "the visitor's session works on a top-level visit")

        // what reached the server: every API request's credentials, as the guard saw them
        const received: Array<{ authorization?: string; cookie?: string }> = []
        const resolve = s.deps.resolvePrincipal
        s.deps.resolvePrincipal = (authorization, cookieHeader, fetchMetadata) => {
          received.push({ authorization, cookie: cookieHeader })
          return resolve(authorization, cookieHeader, fetchMetadata)
        }
        const answers: Array<{ url: string; method: string; status: number }> = []
        page.on('response', (r) => {
          if (r.url().includes('/svc_api/')) answers.push({ url: r.url(), method: r.request().method(), status: r.status() })
        })
        await page.goto(pageUrl)
        await page.waitForFunction(() => document.title === 'done', null, { timeout: 15_000 })
        const out = await page.evaluate(() => (window as unknown as { __out: Record<string, unknown> }).__out)

        assert.equal(out.origin, 'null', 'the page runs in an opaque origin')
        assert.ok(typeof out.files === 'string' && out.files.startsWith('threw'), `reading /svc_api/files is blocked: ${JSON.stringify(out.files)}`)
        assert.ok(String(out.storeJson).startsWith('threw'), `store (preflighted) is blocked: ${JSON.stringify(out.storeJson)}`)
        assert.ok(String(out.storeSimple).startsWith('threw'), `store (simple) is blocked: ${JSON.stringify(out.storeSimple)}`)
        assert.equal(out.cookie, 'threw:SecurityError')
        assert.equal(out.localStorage, 'threw:SecurityError')
        assert.ok(out.serviceWorker !== 'registered', `service worker: ${String(out.serviceWorker)}`)

        s.deps.resolvePrincipal = resolve
        // and on the server's side: the requests that did arrive came without the session
        assert.ok(received.length >= 2, `the simple GET and POST reached the server (${received.length} requests)`)
        for (const r of received) {
          assert.ok(!(r.cookie ?? '').includes(sessionIdOf(cookie)), "no request from the hosted page carried the visitor's session")
          assert.equal(r.authorization, undefined)
        }
        for (const a of answers) assert.ok([401, 403, 404].includes(a.status), `the server refused ${a.method} ${a.url}: ${a.status}`)
        const keys = await s.get('/svc_api/data/list', { key: visitor.key })
        if (keys.status === 200) assert.equal(keys.json.data.items.length, 0, 'nothing was stored for the visitor')
        const own = await s.get('/svc_api/files', { key: visitor.key })
        assert.equal(own.json.data.total, 0)
      } finally {
        await page.close()
        await ctx.clearCookies()
      }
    })
  }

  it("shows the service's 404 page where a project has none: its words, its link, and nothing else loaded (decision 193)", async () => {
    const u = await s.user()
    await batchUpload(s, { key: u.key }, 'site', [{ filename: 'index.html', data: '<!doctype html><title>home</title><h1 id="home">home</h1>' }])
    assert.equal((await s.post('/api/folders/site/publish', { key: u.key })).status, 200)
    for (const [locale, title, link] of [
      ['en-US', '404 - page not found', "Go to the site's home page"],
      ['zh-CN', '404 - 页面不存在', '前往网站首页'],
    ]) {
      const context = await openContext({ locale })
      try {
        const page = await context.newPage()
        // what the server received: Chromium asks for a favicon without telling Playwright
        const received: string[] = []
        const count = (req: IncomingMessage) => received.push(`${req.method} ${req.url}`)
        s.app.server.on('request', count)
        const quiet = networkQuiet(page)
        const missing = `/${u.username}/site/nope/page`
        const answer = await page.goto(s.url + missing)
        assert.equal(answer?.status(), 404)
        await quiet(300)
        s.app.server.off('request', count)
        assert.equal(await page.title(), title, locale)
        assert.equal(await page.locator('h1').innerText(), title, locale)
        // the page alone: no style sheet, script, image or favicon fetched
        assert.deepEqual(received, [`GET ${missing}`], locale)
        const home = page.getByRole('link', { name: link })
        assert.equal(await home.getAttribute('href'), `/${u.username}/site/`, locale)
        await Promise.all([page.waitForURL(`${s.url}/${u.username}/site/`), home.click()])
        assert.equal(await page.locator('#home').innerText(), 'home', locale)
      } finally {
        await context.close()
      }
    }
  })

  it("shows a held page's 451 notice in the visitor's language, and its report link opens the report form (decision 197)", async () => {
    const u = await s.user()
    assert.equal((await uploadFile(s, { key: u.key }, 'held.html', '<!doctype html><title>held</title><h1>held</h1>')).status, 200)
    const admin = await s.user({ admin: true })
    const cookie = await s.login(admin.username, admin.password)
    const pageUrl = `${s.url}/${u.username}/held.html`
    const rep = await s.post('/svc_api/admin/reports', { cookie, json: { url: pageUrl, category: 'phishing' } })
    assert.equal(rep.status, 201, rep.text)
    assert.equal((await s.post(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`, { cookie })).status, 200)
    for (const [locale, lang, title, text, report] of [
      ['zh-CN', 'zh-CN', '451 因法律原因不可用', '该内容因滥用举报正在接受审核。', '举报内容'],
      ['en-US', 'en', '451 Unavailable For Legal Reasons', 'This content is held for review after an abuse report.', 'Report content'],
    ]) {
      const context = await openContext({ locale })
      try {
        const page = await context.newPage()
        const answer = await page.goto(pageUrl)
        assert.equal(answer?.status(), 451, locale)
        assert.equal(await answer?.headerValue('vary'), 'Accept-Language', locale)
        assert.equal(await page.getAttribute('html', 'lang'), lang, locale)
        assert.equal(await page.title(), title, locale)
        assert.equal(await page.locator('p').first().innerText(), text, locale)
        // the report link names the held page, and lands on the service's form with it filled in, in the same language
        await Promise.all([page.waitForURL(`${s.url}/report?url=*`), page.getByRole('link', { name: report }).click()])
        assert.equal(await page.locator('#report-url').inputValue(), pageUrl, locale)
        assert.equal(await page.locator('h1').innerText(), report, locale)
      } finally {
        await context.close()
      }
    }
  })

  it('the dashboard says, next to a sandboxed link, what the sandbox takes away', async () => {
    const u = await s.user()
    await batchUpload(s, { key: u.key }, 'site', [{ filename: 'index.html', data: '<p>x</p>' }])
    assert.equal((await s.post('/api/folders/site/publish', { key: u.key })).status, 200)
    const page = await ctx.newPage()
    try {
      await logInPage(page, s.url, u)
      await page.goto(`${s.url}/dashboard/folders`)
      const row = page.locator('#projects-table tbody tr', { hasText: 'site' })
      await row.getByText(/sandboxed: no storage, cookies or service workers/).waitFor()
      assert.equal(await row.getByRole('link', { name: 'Open at its own origin' }).count(), 0, 'no own origin without a content domain')
      await row.getByRole('button', { name: 'Show' }).click()
      await page.locator('#project-site').waitFor({ state: 'visible' })
      assert.equal(await page.locator('#project-site').getAttribute('href'), `${s.url}/${u.username}/site/`)
      assert.match(await page.locator('#project-sandboxed').innerText(), /sandboxed: no storage, cookies or service workers/)
      assert.equal(await page.locator('#project-root').isHidden(), true)
    } finally {
      await page.close()
      await ctx.clearCookies()
    }
  })
})
