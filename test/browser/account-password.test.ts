import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { logInPage, openContext, watchErrors } from '../support/browser.js'

/** The account page changes the password: this browser stays signed in, the others are signed out. */
describe('changing the password on /account (Chromium)', () => {
  let s: TestServer
  let here: BrowserContext
  let there: BrowserContext
  before(async () => {
    s = await startServer()
    here = await openContext({ locale: 'en-US' })
    there = await openContext({ locale: 'en-US' })
  })
  after(async () => {
    await here?.close().catch(() => {})
    await there?.close().catch(() => {})
    await s?.close()
  })

  it('checks the two new passwords, says a wrong current one, then changes it and signs the other browser out', async () => {
    const u = await s.user()
    const page: Page = await here.newPage()
    const other: Page = await there.newPage()
    page.setDefaultTimeout(15_000)
    other.setDefaultTimeout(15_000)
    const errors = watchErrors(page, [{ url: '/svc_api/account/password', status: 400 }])
    await logInPage(page, s.url, u)
    await logInPage(other, s.url, u)
    const posts: string[] = []
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/svc_api/account/password')) posts.push(r.url())
    })

    await page.getByRole('link', { name: 'Account' }).first().click()
    await page.waitForURL('**/account')
    const current = page.getByLabel('Current password')
    const fresh = page.getByLabel('New password', { exact: true })
    const again = page.getByLabel('New password again')
    const submit = page.getByRole('button', { name: 'Change password' })

    // the two new ones differ: said at the second field, nothing sent
    await current.fill(u.password)
    await fresh.fill('a-new-password')
    await again.fill('a-new-passwort')
    await submit.click()
    await page.locator('#pw-again-error', { hasText: 'The two new passwords differ.' }).waitFor()
    assert.equal(await again.getAttribute('aria-invalid'), 'true')
    assert.deepEqual(posts, [])

    // a wrong current password: the server's reason at that field, the password unchanged
    await current.fill('not-the-password')
    await again.fill('a-new-password')
    await submit.click()
    await page.locator('#pw-current-error', { hasText: 'This is not the current password of the account.' }).waitFor()
    assert.equal(await current.getAttribute('aria-invalid'), 'true')
    assert.equal(posts.length, 1)

    await current.fill(u.password)
    await submit.click()
    await page.locator('#pw-status', { hasText: 'Password changed. Other browsers have been signed out.' }).waitFor()
    assert.equal(await current.inputValue(), '', 'the form is emptied')
    assert.equal(await fresh.inputValue(), '')

    // this browser stays signed in; the other one is sent to the login page
    await page.goto(`${s.url}/api-keys`)
    assert.match(page.url(), /\/api-keys$/)
    await other.goto(`${s.url}/dashboard`)
    assert.match(other.url(), /\/login/)
    await logInPage(other, s.url, { username: u.username, password: 'a-new-password' })
    assert.deepEqual(errors, [])
  })
})
