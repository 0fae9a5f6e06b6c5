import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { openContext } from '../support/browser.js'
import { ERRORS } from '../../src/errors/codes.js'

// The reference is a static page over /openapi.json, the same on both engines: one is enough.
const engine = ENGINES[0]

describe(`the API reference at /docs in Chromium [${engine}]`, () => {
  let s: TestServer
  let ctx: BrowserContext
  before(async () => {
    s = await startServer({ engine })
    ctx = await openContext()
  })
  after(async () => {
    await ctx?.close()
    await s.close()
  })

  it('renders every operation from /openapi.json under its CSP, self-hosted, with no console error', async () => {
    const page = await ctx.newPage()
    const problems: string[] = []
    const origins = new Set<string>()
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`)
    })
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`))
    page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`))
    page.on('request', (r) => origins.add(new URL(r.url()).origin))
    try {
      const res = await page.goto(`${s.url}/docs`)
      assert.equal(res?.status(), 200)
      const csp = res.headers()['content-security-policy']
      assert.match(csp, /script-src 'nonce-[^']+'(;|$)/, 'scripts only with the nonce: no self, no unsafe-inline')
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/)
      await page.waitForSelector('.opblock', { timeout: 30_000 })
      await page.waitForLoadState('networkidle')

      const doc = (await s.get('/openapi.json')).json
      let operations = 0
      for (const item of Object.values(doc.paths as Record<string, Record<string, unknown>>)) operations += Object.keys(item).length
      assert.equal(await page.locator('.opblock').count(), operations)
      assert.equal(
        await page
          .locator('.info .title')
          .first()
          .evaluate((e) => e.firstChild?.textContent?.trim()),
        doc.info.title,
      )
      // an operation opens with its parameters and responses
      await page.locator('#operations-key-value_store-postSvcApiDataStore .opblock-summary').click()
      await page.waitForSelector('#operations-key-value_store-postSvcApiDataStore .responses-table')

      assert.deepEqual([...origins], [s.url], 'every request goes to the service itself')
      assert.deepEqual(problems, [])
    } finally {
      await page.close()
    }
  })

  it('is linked from the dashboard', async () => {
    const u = await s.user()
    const dash = await s.get('/dashboard', { cookie: await s.login(u.username, u.password) })
    assert.match(dash.text, /<a href="\/docs" id="api-reference">/)
  })

  it('serves the assets compressed and cacheable, and answers 404 for any other name', async () => {
    const html = (await s.get('/docs')).text
    const css = /href="(\/docs\/assets\/[^"]+\/swagger-ui\.css)"/.exec(html)![1]
    const gz = await s.get(css, { headers: { 'accept-encoding': 'gzip' } })
    assert.equal(gz.status, 200)
    assert.equal(gz.header('content-encoding'), 'gzip')
    assert.match(gz.header('cache-control')!, /immutable/)
    const plain = await s.get(css)
    assert.equal(plain.header('content-encoding'), undefined)
    assert.match(plain.text, /swagger-ui/)
    assert.equal((await s.get(css.replace('swagger-ui.css', 'package.json'))).status, 404)
    assert.equal((await s.get(css.replace('swagger-ui.css', '..%2Fpackage.json'))).status, 404)
  })

  it('gives each error code one anchor, holding every error of that code, where doc_link lands', async () => {
    const page = await ctx.newPage()
    try {
      // a real answer's doc_link: the 405 variant of 1404, not the first row of its code
      const r = await s.request('DELETE', '/svc_api/data/get?key=k')
      assert.equal(r.status, 405)
      const link = new URL(r.json.doc_link as string)
      assert.equal(link.hash, '#1404')
      assert.equal((await page.goto(`${s.url}${link.pathname}${link.hash}`))?.status(), 200)
      const target = await page.evaluate(() => document.querySelector(':target')?.textContent ?? '')
      assert.ok(target.includes(ERRORS.METHOD_NOT_ALLOWED.solutionEn), target)

      const codes = [...new Set(Object.values(ERRORS).map((d) => d.code))]
      const anchors = await page.evaluate(
        (codes) => codes.map((c) => ({ c, n: document.querySelectorAll(`[id="${c}"]`).length, text: document.getElementById(String(c))?.textContent ?? '' })),
        codes,
      )
      for (const { c, n, text } of anchors) {
        assert.equal(n, 1, `${c}: ${n} elements with that id`)
        for (const d of Object.values(ERRORS).filter((e) => e.code === c))
          assert.ok(text.includes(d.solutionEn.replace(/:size\}/g, '}')), `${c}: ${d.solutionEn} not under its anchor`)
      }
    } finally {
      await page.close()
    }
  })

  it("reads on a phone: the page is the screen's width, the table scrolls in its own box, under its CSP", async () => {
    const phone = await openContext({ viewport: { width: 375, height: 740 } })
    try {
      const page = await phone.newPage()
      const problems: string[] = []
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`)
      })
      const res = await page.goto(`${s.url}/docs/errors#1404`)
      assert.equal(res?.status(), 200)
      assert.doesNotMatch(res.headers()['content-security-policy'], /unsafe-inline|script-src/)
      // the page itself never scrolls sideways: a doc_link opened on a phone shows its row's start
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 375)
      const box = await page.evaluate(() => {
        const wrap = document.querySelector('table')!.parentElement!
        return { overflow: getComputedStyle(wrap).overflowX, width: wrap.clientWidth, table: wrap.scrollWidth }
      })
      assert.equal(box.overflow, 'auto')
      assert.ok(box.width <= 375 && box.table > box.width, JSON.stringify(box))
      // each message's Chinese line is marked as Chinese, for a screen reader's voice
      const zh = await page.locator('[id="1404"] [lang="zh-CN"]').allTextContents()
      assert.ok(zh.includes(ERRORS.METHOD_NOT_ALLOWED.zh), zh.join(' | '))
      assert.deepEqual(problems, [])
    } finally {
      await phone.close()
    }
  })
})
