import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { logInPage, openContext, sessionCookiesFor } from '../support/browser.js'
import { uploadFile } from '../support/hosting.js'

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
    await ctx.addCookies(sessionCookiesFor(cookie, s.url))
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

  it('the dashboard sends a chosen file as it is: its bytes kept (BOM too), invalid UTF-8 refused', async (t) => {
    const u = await s.user()
    await s.deps.db.k.insertInto('entitlements').values({ user_id: u.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() }).execute()
    const cookie = await s.login(u.username, u.password)
    // a context of its own: English pages, and no session cookie from the test above
    const en = await openContext({ locale: 'en-US' })
    t.after(() => en.close())
    const page = await en.newPage()
    page.setDefaultTimeout(15_000)
    await logInPage(page, s.url, u)
    await page.goto(`${s.url}/dashboard/data`)
    await page.locator('#data-form').waitFor()
    // Create stands on a line of its own below the file field, as every form's button does
    const [picker, create] = await Promise.all([page.locator('#data-file').boundingBox(), page.getByRole('button', { name: 'Create' }).boundingBox()])
    assert.ok(picker && create && create.y >= picker.y + picker.height, `${JSON.stringify(picker)} ${JSON.stringify(create)}`)

    // a CSV saved by Excel ("CSV UTF-8"): the byte-order mark is what lets Excel read it back as UTF-8
    const csv = Buffer.from('\uFEFFname,city\nZoë,Köln\n', 'utf8')
    await page.locator('#data-name').fill('excel.csv')
    await page.locator('#data-type').selectOption('text/csv')
    await page.locator('#data-file').setInputFiles({ name: 'excel.csv', mimeType: 'text/csv', buffer: csv })
    await page.getByRole('button', { name: 'Create' }).click()
    await page.locator('#data-detail-title', { hasText: 'excel.csv' }).waitFor()
    const files = (await s.get('/api/hosted-data/files', { cookie })).json.files as Array<{ display_name: string; public_url: string }>
    assert.deepEqual(
      files.map((f) => f.display_name),
      ['excel.csv'],
    )
    const served = await s.get(new URL(files[0].public_url).pathname)
    assert.deepEqual(Buffer.from(served.body), csv, 'stored byte for byte')

    // a Latin-1 file: refused with the server's message, nothing created (not stored as U+FFFD)
    await page.locator('#data-name').fill('latin1.csv')
    await page.locator('#data-type').selectOption('text/csv')
    await page.locator('#data-file').setInputFiles({ name: 'latin1.csv', mimeType: 'text/csv', buffer: Buffer.from('name\nZo\xeb\n', 'latin1') })
    await page.getByRole('button', { name: 'Create' }).click()
    await page.locator('#data-status', { hasText: 'not valid UTF-8' }).waitFor()
    assert.equal((await s.get('/api/hosted-data/files', { cookie })).json.files.length, 1)

    // a new version from a file keeps its bytes as well
    const v2 = Buffer.from('\uFEFFname,city\nAndré,Liège\n', 'utf8')
    await page.locator('#version-file').setInputFiles({ name: 'excel.csv', mimeType: 'text/csv', buffer: v2 })
    await page.getByRole('button', { name: 'Add version' }).click()
    await page.locator('#versions-table tbody tr:nth-child(2)').waitFor()
    assert.deepEqual(Buffer.from((await s.get(new URL(files[0].public_url).pathname)).body), v2)
    await page.close()
  })

  it("a page on another origin reads a data link's bytes and its version header", async () => {
    const u = await s.user()
    const cookie = await s.login(u.username, u.password)
    await s.deps.db.k.insertInto('entitlements').values({ user_id: u.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() }).execute()
    const rows = Array.from({ length: 5000 }, (_, i) => ({ i, city: i % 2 ? 'Zürich' : '北京' }))
    const body = JSON.stringify(rows)
    const r = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'rows.json', content: body } })
    assert.equal(r.status, 200, r.text)
    const v2 = await s.post(`/api/hosted-data/files/${r.json.file.id}/versions`, { cookie, json: { content: body + ' ', set_default: true } })
    assert.equal(v2.status, 200, v2.text)
    // a notebook-like page on the user's own origin (another origin than the service's)
    assert.equal((await uploadFile(s, { key: u.key }, 'reader.html', '<!doctype html><title>reader</title>')).status, 200)
    const page = await ctx.newPage()
    try {
      await page.goto(`https://${u.username}.localhost:${new URL(s.url).port}/reader.html`)
      const link = `https://localhost:${new URL(s.url).port}${new URL(r.json.file.public_url as string).pathname}`
      const got = await page.evaluate(async (url) => {
        const res = await fetch(url)
        return { status: res.status, text: await res.text(), version: res.headers.get('x-data-version'), type: res.headers.get('content-type') }
      }, link)
      assert.equal(got.status, 200)
      assert.equal(got.text, body + ' ', 'the default version, byte for byte')
      assert.equal(got.type, 'application/json; charset=utf-8')
      // the page can tell which version it read (to pin it with ?v=N)
      assert.equal(got.version, '2')
      // once its compressed form is made (in the background), Chromium gets it and decodes it
      const encodings: string[] = []
      page.on('response', (res) => {
        if (res.url() === link) encodings.push(res.headers()['content-encoding'] ?? 'identity')
      })
      for (let i = 0; i < 100 && !['br', 'gzip'].includes(encodings.at(-1) ?? ''); i++) {
        const again = await page.evaluate(async (url) => (await fetch(url, { cache: 'no-store' })).text(), link)
        assert.equal(again, body + ' ')
        await page.waitForTimeout(50)
      }
      assert.match(encodings.at(-1) ?? '', /^(br|gzip)$/, encodings.join(','))
    } finally {
      await page.close()
    }
  })
})
