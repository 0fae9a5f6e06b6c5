import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'
import { openBrowser, type BrowserLease } from '../support/browser.js'

// The visitor password form in a real Chromium, on the user's origin (http://alice.localhost:PORT):
// the form shows instead of the page (no browser dialog), a wrong password says so, the right
// one opens the project and its other pages, and the cookie is kept from scripts (HttpOnly).
// A page unlocked at one URL is open at its others (its clean URL), and nothing else is. The
// form speaks the browser's language (English or Chinese).
const engine = ENGINES[0]

describe(`visitor password form in Chromium [${engine}]`, () => {
  let s: TestServer
  let browser: BrowserLease
  let origin = ''

  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    const alice = await s.user({ name: 'alice' })
    const up = await batchUpload(s, { key: alice.key }, 'secret', [
      { filename: 'index.html', data: '<!doctype html><title>inside</title><h1 id="t">the secret page</h1><a href="more.html">more</a>' },
      { filename: 'more.html', data: '<!doctype html><title>more</title><h1 id="t">more secrets</h1>' },
    ])
    assert.equal(up.status, 200, up.text)
    assert.equal((await s.post('/api/folders/secret/publish', { key: alice.key })).status, 200)
    assert.equal((await uploadFile(s, { key: alice.key }, 'about.html', '<!doctype html><title>about</title><h1 id="t">about alice</h1>')).status, 200)
    for (const name of ['secret', 'about.html']) {
      const put = await s.request('PUT', `/api/access/${name}`, { key: alice.key, json: { password: 'open sesame' } })
      assert.equal(put.status, 200, put.text)
    }
    origin = `http://alice.localhost:${new URL(s.httpUrl).port}`
    browser = await openBrowser()
  })
  after(async () => {
    await browser?.close()
    await s?.close()
  })

  it('asks for the password, refuses a wrong one, and the right one opens the project', async () => {
    const ctx = await browser.newContext()
    const page = await ctx.newPage()
    let dialogs = 0
    page.on('dialog', () => dialogs++)
    const first = await page.goto(`${origin}/secret/`)
    assert.equal(first?.status(), 401)
    assert.equal(await page.title(), 'Password required')
    assert.ok(!(await page.content()).includes('the secret page'))

    await page.fill('input[type=password]', 'wrong guess')
    await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit]')])
    assert.match((await page.textContent('.err')) ?? '', /Wrong password/)
    assert.ok(!(await page.content()).includes('the secret page'))

    await page.fill('input[type=password]', 'open sesame')
    const [answer] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
    assert.equal(answer?.status(), 200)
    assert.equal(page.url(), `${origin}/secret/`)
    assert.equal(await page.textContent('#t'), 'the secret page')
    // the other pages of the project, and a reload, need nothing more
    await page.click('a')
    await page.waitForURL(`${origin}/secret/more.html`)
    assert.equal(await page.textContent('#t'), 'more secrets')
    await page.reload()
    assert.equal(await page.textContent('#t'), 'more secrets')
    // one cookie, for the whole origin (decision 175), hidden from the project's scripts
    const cookies = await ctx.cookies(`${origin}/secret/`)
    assert.equal(cookies.length, 1)
    assert.equal(cookies[0].path, '/')
    assert.equal(cookies[0].domain, 'alice.localhost')
    assert.equal(cookies[0].httpOnly, true)
    assert.equal(cookies[0].sameSite, 'Lax')
    assert.equal(await page.evaluate(() => document.cookie), '')
    assert.equal(dialogs, 0)
    // a fresh visitor still gets the form
    const other = await browser.newContext()
    const p2 = await other.newPage()
    assert.equal((await p2.goto(`${origin}/secret/more.html`))?.status(), 401)
    assert.ok(!(await p2.content()).includes('more secrets'))
    await other.close()
    await ctx.close()
  })

  it("speaks the visitor's language: a Chinese browser gets the form and its error in Chinese (decision 197)", async () => {
    const ctx = await browser.newContext({ locale: 'zh-CN' })
    const page = await ctx.newPage()
    const first = await page.goto(`${origin}/secret/`)
    assert.equal(first?.status(), 401)
    assert.equal(await first?.headerValue('vary'), 'Accept-Language')
    assert.equal(await page.getAttribute('html', 'lang'), 'zh-CN')
    assert.equal(await page.title(), '需要密码')
    assert.equal(await page.textContent('h1'), '需要密码')
    assert.equal(await page.textContent('p'), 'secret 受密码保护，请输入密码继续。')
    assert.equal(await page.getByRole('button').textContent(), '继续')

    await page.getByLabel('密码').fill('wrong guess')
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: '继续' }).click()])
    assert.equal(await page.getByRole('alert').textContent(), '密码错误。')
    assert.ok(!(await page.content()).includes('the secret page'))

    await page.getByLabel('密码').fill('open sesame')
    const [answer] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: '继续' }).click()])
    assert.equal(answer?.status(), 200)
    assert.equal(page.url(), `${origin}/secret/`)
    assert.equal(await page.textContent('#t'), 'the secret page')
    await ctx.close()
  })

  it('a page unlocked at its own URL opens at its clean URL; the project beside it still asks', async () => {
    const ctx = await browser.newContext()
    const page = await ctx.newPage()
    assert.equal((await page.goto(`${origin}/about.html`))?.status(), 401)
    assert.equal(await page.title(), 'Password required')
    await page.fill('input[type=password]', 'open sesame')
    const [answer] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')])
    assert.equal(answer?.status(), 200)
    assert.equal(await page.textContent('#t'), 'about alice')
    // the clean URL serves the same page: no second form
    const clean = await page.goto(`${origin}/about`)
    assert.equal(clean?.status(), 200)
    assert.equal(await page.textContent('#t'), 'about alice')
    assert.equal(await page.evaluate(() => document.cookie), '')
    // the same password on alice's project is another setting: asked for again
    const project = await page.goto(`${origin}/secret/`)
    assert.equal(project?.status(), 401)
    assert.equal(await page.title(), 'Password required')
    assert.ok(!(await page.content()).includes('the secret page'))
    await ctx.close()
  })
})
