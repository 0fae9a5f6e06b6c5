import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { imageForm, svc, SVG_WITH_SCRIPT } from '../support/images.js'
import { openContext, sessionCookiesFor } from '../support/browser.js'

/**
 * A logged-in visitor opens the public link of an uploaded SVG whose script would set the
 * title and call the API with the visitor's session: nothing runs. The same bytes served
 * without the service's headers (control) do run, so the check can fail.
 */
describe('image host SVG in a real browser [sqlite]', () => {
  let s: TestServer
  let ctx: BrowserContext
  let link: string
  before(async () => {
    s = await startServer({ engine: 'sqlite' })
    const u = await s.user()
    await svc(s, 'grant', u.username, 'image-host')
    const cookie = await s.login(u.username, u.password)
    const form = imageForm([{ name: 'logo.svg', data: SVG_WITH_SCRIPT }])
    const up = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
    assert.equal(up.status, 200, up.text)
    link = up.json.images[0].public_url
    ctx = await openContext()
    await ctx.addCookies(sessionCookiesFor(cookie, s.url))
  })
  after(async () => {
    await ctx?.close()
    await s?.close()
  })

  it("the SVG's script and onload never run with the service origin (no title change, no API call)", async () => {
    const page = await ctx.newPage()
    const apiCalls: string[] = []
    page.on('request', (r) => {
      if (/\/(svc_api|api)\//.test(r.url())) apiCalls.push(r.url())
    })
    const res = await page.goto(link, { waitUntil: 'load' })
    assert.equal(res?.status(), 200)
    assert.equal(res?.headers()['content-type'], 'image/svg+xml')
    assert.equal(await page.title(), '')
    assert.deepEqual(apiCalls, [])
    // the logged-in session is real: the same browser reaches the API from a service page
    const me = await page.request.get(`${s.url}/svc_api/me`)
    assert.equal(me.status(), 200)
    await page.close()
  })

  it("control: the same bytes without the service's headers do run and reach the API", async () => {
    const page = await ctx.newPage()
    await page.route('**/control.svg', (route) => route.fulfill({ status: 200, contentType: 'image/svg+xml', body: SVG_WITH_SCRIPT }))
    await page.goto(`${s.url}/control.svg`, { waitUntil: 'load' })
    await page.waitForFunction(() => document.title.startsWith('PWNED:'))
    assert.match(await page.title(), /^PWNED:\{"success":true/)
    await page.close()
  })
})
