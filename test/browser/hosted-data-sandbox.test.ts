import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { openContext } from '../support/browser.js'

/**
 * A hosted data file of type text/html with a script, opened in headless Chromium by a
 * logged-in visitor: the script must not run (so it can neither retitle the page nor call
 * the API with the visitor's session).
 */
describe('hosted data in a browser', () => {
  let s: TestServer
  let ctx: BrowserContext
  before(async () => {
    s = await startServer({ engine: ENGINES[0] })
    ctx = await openContext()
  })
  after(async () => {
    await ctx?.close()
    await s.close()
  })

  it("never runs an HTML data file's script with the service origin's authority", async () => {
    const u = await s.user()
    const cookie = await s.login(u.username, u.password)
    await s.deps.db.k.insertInto('entitlements').values({ user_id: u.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() }).execute()
    const html = `<!doctype html><html><head><title>orig</title></head><body><p id="p">static text</p>
<img src="x" onerror="document.title='onerror-ran'">
<script>document.title='script-ran';fetch('/svc_api/me',{credentials:'include'}).then(r=>r.text()).then(t=>{document.title='fetched:'+t})</script>
</body></html>`
    const r = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'evil.html', content: html, content_type: 'text/html' } })
    assert.equal(r.status, 200, r.text)
    const link = r.json.file.public_url as string

    // the visitor is logged in: the session cookie is in the browser
    await ctx.addCookies([{ name: 'session', value: cookie.split('=')[1], url: s.url, httpOnly: true, secure: true, sameSite: 'Lax' }])
    const page = await ctx.newPage()
    const apiCalls: string[] = []
    page.on('request', (req) => {
      if (new URL(req.url()).pathname.startsWith('/svc_api')) apiCalls.push(req.url())
    })
    const resp = await page.goto(link, { waitUntil: 'load' })
    assert.equal(resp?.status(), 200)
    assert.equal(await page.textContent('#p'), 'static text', 'the HTML itself renders')
    // a page that evaluates after load still sees the original title; scripts and handlers were blocked
    await page.waitForLoadState('networkidle')
    assert.equal(await page.title(), 'orig')
    assert.deepEqual(apiCalls, [])
    // the document is sandboxed: an opaque origin, no access to the service's cookies or storage
    const origin = await page.evaluate(() => self.origin)
    assert.equal(origin, 'null')
    await page.close()
  })
})
