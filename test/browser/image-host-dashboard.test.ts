import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { imageForm, makeImage, svc } from '../support/images.js'
import { logInPage, openContext, watchErrors } from '../support/browser.js'

/** The images page of the dashboard, in Chromium, for an account with more images than one page of the list. */
describe('image host dashboard (Chromium) [sqlite]', () => {
  let s: TestServer
  let ctx: BrowserContext
  let page: Page
  before(async () => {
    s = await startServer({ engine: 'sqlite' })
    ctx = await openContext({ locale: 'en-US' })
    page = ctx.pages()[0] ?? (await ctx.newPage())
    page.setDefaultTimeout(15_000)
  })
  after(async () => {
    await ctx?.close().catch(() => {})
    await s?.close()
  })

  it('pages through every image: the oldest of 55 is reachable, shown and deletable', async () => {
    const u = await s.user()
    await svc(s, 'grant', u.username, 'image-host')
    const cookie = await s.login(u.username, u.password)
    const names: string[] = []
    for (let batch = 0; batch < 3; batch++) {
      const files = []
      for (let i = 0; i < (batch < 2 ? 20 : 15); i++) {
        const n = batch * 20 + i
        names.push(`pic-${n}.png`)
        files.push({ name: `pic-${n}.png`, data: await makeImage('png', { width: 4, height: 4, color: `#0000${(n + 16).toString(16).padStart(2, '0')}` }) })
      }
      const form = imageForm(files)
      const r = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      assert.equal(r.status, 200, r.text)
    }
    const oldest = names[0]
    const errors = watchErrors(page)
    await logInPage(page, s.url, u)
    await page.goto(`${s.url}/dashboard/images`)
    const items = page.locator('#img-list > li')
    await page.locator('#img-list strong', { hasText: names[names.length - 1] }).waitFor()
    assert.equal(await items.count(), 50, 'one page of the newest')
    assert.equal(await page.locator('#img-list strong', { hasText: new RegExp(`^${oldest}$`) }).count(), 0)
    // the next page holds the five oldest
    await page.locator('#img-pager').getByRole('button', { name: 'Next' }).click()
    const first = page.locator('#img-list li', { has: page.locator('strong', { hasText: new RegExp(`^${oldest}$`) }) })
    await first.waitFor()
    assert.equal(await items.count(), 5)
    assert.ok(await first.locator('img').evaluate((i: HTMLImageElement) => i.complete && i.naturalWidth === 4))
    page.once('dialog', (d) => void d.accept())
    await first.getByRole('button', { name: 'Delete' }).click()
    await page.locator('#img-list strong', { hasText: new RegExp(`^${oldest}$`) }).waitFor({ state: 'detached' })
    // still on the second page, now with the four left there
    await page.waitForFunction(() => document.querySelectorAll('#img-list > li').length === 4)
    const list = await s.get('/api/image-host/images?per_page=100', { cookie })
    assert.equal(list.json.total, 54)
    assert.ok(!list.json.images.some((i: { file_name: string }) => i.file_name === oldest))
    assert.deepEqual(errors, [])
  })
})
