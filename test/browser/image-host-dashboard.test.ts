import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { imageForm, makeImage, svc } from '../support/images.js'
import { loadedWidth, logInPage, openContext, watchErrors } from '../support/browser.js'

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
    assert.equal(await loadedWidth(first.locator('img')), 4)
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

  it("saves a remark with Enter in its field, as with its button, and the picture's alt follows", async () => {
    const u = await s.user()
    await svc(s, 'grant', u.username, 'image-host')
    const cookie = await s.login(u.username, u.password)
    const form = imageForm([{ name: 'cat.png', data: await makeImage('png', { width: 4, height: 4 }) }])
    const r = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
    assert.equal(r.status, 200, r.text)
    const remarkOf = async () => (await s.get('/api/image-host/images', { cookie })).json.images[0].remark as string | null
    const own = await openContext({ locale: 'en-US' })
    try {
      const p = await own.newPage()
      p.setDefaultTimeout(15_000)
      const errors = watchErrors(p)
      await logInPage(p, s.url, u)
      await p.goto(`${s.url}/dashboard/images`)
      const item = p.locator('#img-list > li', { hasText: 'cat.png' })
      const field = item.getByLabel('Remark')
      await field.fill('a grey cat')
      await field.press('Enter')
      await p.locator('#toast', { hasText: 'Saved.' }).waitFor()
      assert.equal(await remarkOf(), 'a grey cat')
      assert.equal(await item.locator('img').getAttribute('alt'), 'a grey cat')
      // the button saves too; an empty remark clears it, and the alt falls back to the file name
      await field.fill('')
      await item.getByRole('button', { name: 'Save remark' }).click()
      await p.waitForFunction(() => document.querySelector('#img-list img')?.getAttribute('alt') === 'cat.png')
      assert.ok(!(await remarkOf()), 'cleared')
      // each of the picture's controls is named after it, as a screen reader reads them out of context
      for (const control of ['Copy link cat.png', 'Delete cat.png'])
        assert.equal(await item.getByRole('button', { name: control, exact: true }).count(), 1, control)
      assert.deepEqual(errors, [])
    } finally {
      await own.close()
    }
  })

  it('shows each picture from a variant sized to its box, 2x on a high-DPI screen; SVG and small ones as they are', async () => {
    const u = await s.user()
    await svc(s, 'grant', u.username, 'image-host')
    const cookie = await s.login(u.username, u.password)
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200"><rect width="300" height="200" fill="#c33"/></svg>'
    const form = imageForm([
      { name: 'photo.jpg', data: await makeImage('jpeg', { width: 2400, height: 1800 }) },
      { name: 'wide.png', data: await makeImage('png', { width: 3000, height: 500 }) },
      { name: 'icon.png', data: await makeImage('png', { width: 32, height: 32 }) },
      { name: 'logo.svg', data: svg },
    ])
    const r = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
    assert.equal(r.status, 200, r.text)
    const byName = new Map<string, { versioned_url: string }>(r.json.images.map((i: { file_name: string; versioned_url: string }) => [i.file_name, i]))

    for (const scale of [1, 2]) {
      const hd = await openContext({ locale: 'en-US', deviceScaleFactor: scale, viewport: { width: 1000, height: 900 } })
      try {
        const p = await hd.newPage()
        p.setDefaultTimeout(15_000)
        const errors = watchErrors(p)
        const asked: string[] = []
        p.on('request', (q) => {
          if (q.url().includes('/svc-img/pub/')) asked.push(q.url())
        })
        await logInPage(p, s.url, u)
        await p.goto(`${s.url}/dashboard/images`)
        const pic = (name: string) =>
          p.locator('#img-list li', { has: p.locator('strong', { hasText: new RegExp(`^${name.replace('.', '\\.')}$`) }) }).locator('img')
        await p.waitForFunction(() => {
          const imgs = [...document.querySelectorAll<HTMLImageElement>('#img-list img')]
          return imgs.length === 4 && imgs.every((i) => i.complete && i.naturalWidth > 0)
        })
        // the large ones: a variant that fits the 10rem box at this density, never the original
        for (const [name, w, h] of [
          ['photo.jpg', 2400, 1800],
          ['wide.png', 3000, 500],
        ] as const) {
          const shown = await pic(name).evaluate((i: HTMLImageElement) => ({ src: i.currentSrc, w: i.naturalWidth, h: i.naturalHeight }))
          const url = new URL(shown.src)
          assert.equal(url.searchParams.get('w'), String(640 * scale), shown.src)
          assert.equal(url.searchParams.get('h'), String(160 * scale), shown.src)
          assert.ok(shown.src.startsWith(byName.get(name)!.versioned_url + '&'), shown.src)
          // the variant's pixels (a 2x candidate's natural size is counted in CSS pixels)
          const fit = Math.min((640 * scale) / w, (160 * scale) / h)
          assert.ok(Math.abs(shown.w * scale - w * fit) <= scale && Math.abs(shown.h * scale - h * fit) <= scale, `${name}: ${shown.w}x${shown.h}`)
          assert.ok(!asked.includes(byName.get(name)!.versioned_url), `${name}: the original was not fetched`)
        }
        // a picture smaller than the box, and an SVG: the original bytes
        assert.equal(await pic('icon.png').evaluate((i: HTMLImageElement) => i.currentSrc), byName.get('icon.png')!.versioned_url)
        const logo = await pic('logo.svg').evaluate((i: HTMLImageElement) => ({ src: i.currentSrc, w: i.naturalWidth }))
        assert.deepEqual(logo, { src: byName.get('logo.svg')!.versioned_url, w: 300 })
        assert.deepEqual(errors, [])
      } finally {
        await hd.close()
      }
    }
  })
})
