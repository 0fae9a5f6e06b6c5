import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { logInPage, openBrowser, watchErrors, type BrowserLease } from '../support/browser.js'

// A user site (a project chosen to answer the root of its user's origin, as a GitHub Pages
// {user}.github.io repository): a page built for / loads its script and style by
// root-absolute paths there, in Chromium.
const engine = ENGINES[0]
const INDEX =
  '<!doctype html><html><head><title>loading</title><link rel="stylesheet" href="/assets/site.css">' +
  '<script type="module" src="/assets/site.js"></script></head><body><p id="out">no script</p></body></html>'
const JS = `const p = document.getElementById('out')
p.textContent = 'script ran: ' + getComputedStyle(p).color
document.title = 'user site'`
const CSS = '#out { color: rgb(0, 128, 0) }'

describe(`a user site in Chromium [${engine}]`, () => {
  let s: TestServer
  let browser: BrowserLease
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    browser = await openBrowser()
  })
  after(async () => {
    await browser?.close()
    await s?.close()
  })

  it("opens the user's origin root and loads the page's root-absolute script and style", async () => {
    const user = await s.user()
    const files = [
      { filename: 'index.html', data: INDEX },
      { filename: 'assets/site.js', data: JS },
      { filename: 'assets/site.css', data: CSS },
    ]
    assert.equal((await batchUpload(s, { key: user.key }, 'homepage', files)).status, 200)
    assert.equal((await s.post('/api/folders/homepage/publish', { key: user.key })).status, 200)
    const set = await s.request('PUT', '/api/folders/homepage/user_site', { key: user.key })
    assert.equal(set.status, 200, set.text)
    const open = set.json.user_site_url as string
    assert.equal(open, `http://${user.username}.localhost:${new URL(s.httpUrl).port}/`)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      // no favicon: the user site's 404 (a browser asks for one at the root)
      const errors = watchErrors(page, [{ url: '/favicon.ico', status: 404 }])
      const res = await page.goto(open)
      assert.equal(res?.status(), 200)
      await page.waitForFunction(() => document.title === 'user site', undefined, { timeout: 15_000 })
      assert.equal(await page.locator('#out').innerText(), 'script ran: rgb(0, 128, 0)')
      assert.deepEqual(errors, [])
    } finally {
      await ctx.close()
    }
  })

  it("is chosen and stopped from the project panel, which shows the site's address", async () => {
    const user = await s.user()
    assert.equal((await batchUpload(s, { key: user.key }, 'home', [{ filename: 'index.html', data: '<p>panel home</p>' }])).status, 200)
    assert.equal((await s.post('/api/folders/home/publish', { key: user.key })).status, 200)
    const root = async () => (await s.get('/', { headers: { host: `${user.username}.localhost` } })).status
    const address = `http://${user.username}.localhost:${new URL(s.httpUrl).port}/`
    const ctx = await browser.newContext({ locale: 'en-US' })
    try {
      const page = await ctx.newPage()
      page.setDefaultTimeout(15_000)
      const errors = watchErrors(page)
      await logInPage(page, s.url, user)
      await page.goto(`${s.url}/dashboard/folders`)
      await page.locator('#projects-table').getByRole('button', { name: 'home' }).click()
      const toggle = page.locator('#project-user-site')
      await page.locator('#project-user-site', { hasText: 'Make it my user site' }).waitFor()
      assert.equal(await page.locator('#project-user-site-link').isHidden(), true)
      await toggle.click()
      await page.locator('#folders-status', { hasText: 'Project is now the user site' }).waitFor()
      const link = page.locator('#project-user-site-link')
      assert.equal(await link.getAttribute('href'), address)
      assert.equal(await link.textContent(), address)
      assert.equal(await root(), 200)
      await page.locator('#projects-table').getByText('user site').waitFor()
      // shown again from the list, as the panel opens
      await page.reload()
      await page.locator('#projects-table').getByRole('button', { name: 'home' }).click()
      await page.locator('#project-user-site', { hasText: 'Stop being my user site' }).waitFor()
      assert.equal(await page.locator('#project-user-site-link').getAttribute('href'), address)
      await toggle.click()
      await page.locator('#folders-status', { hasText: 'Project is not the user site' }).waitFor()
      assert.equal(await page.locator('#project-user-site-link').isHidden(), true)
      assert.equal(await root(), 404)
      assert.deepEqual(errors, [])
    } finally {
      await ctx.close()
    }
  })
})
