import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { HTML, uploadFile } from '../support/hosting.js'
import { logInPage, openContext, watchErrors } from '../support/browser.js'

/** An account deleted from the browser: by its owner on /account, and by an admin's Delete in the console. */
describe('deleting an account in the web interface (Chromium)', () => {
  let s: TestServer
  let ctx: BrowserContext
  before(async () => {
    s = await startServer()
    ctx = await openContext({ locale: 'en-US' })
  })
  after(async () => {
    await ctx?.close().catch(() => {})
    await s?.close()
  })

  it('on /account: the name typed again, the password, a last confirm; then signed out and gone', async () => {
    const u = await s.user()
    assert.equal((await uploadFile(s, { key: u.key }, 'mine.html', HTML('mine'))).status, 200)
    const page: Page = await ctx.newPage()
    page.setDefaultTimeout(15_000)
    const errors = watchErrors(page, [{ url: '/svc_api/account/delete', status: 400 }])
    const posts: string[] = []
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/svc_api/account/delete')) posts.push(r.url())
    })
    const confirms: string[] = []
    let accept = false
    page.on('dialog', (d) => {
      confirms.push(d.message())
      void (accept ? d.accept() : d.dismiss())
    })
    await logInPage(page, s.url, u)
    await page.goto(`${s.url}/account`)
    const name = page.getByLabel(`Type your username (${u.username}) to confirm`)
    const password = page.getByLabel('Your password')
    const submit = page.getByRole('button', { name: 'Delete this account' })

    // another name: said at the field, nothing sent
    await name.fill(`${u.username}x`)
    await password.fill(u.password)
    await submit.click()
    await page.locator('#del-username-error', { hasText: 'This is not the name of the account.' }).waitFor()
    assert.deepEqual(posts, [])

    // the last confirm dismissed: nothing sent
    await name.fill(u.username)
    await submit.click()
    await page.waitForFunction(() => !document.querySelector('#del-submit[aria-busy="true"]'))
    assert.equal(confirms.length, 1)
    assert.match(confirms[0], new RegExp(`Delete the account ${u.username} and everything it holds now\\?`))
    assert.deepEqual(posts, [])

    // a wrong password: the server's refusal at that field, the account still there
    accept = true
    await password.fill('not-the-password')
    await submit.click()
    await page.locator('#del-password-error', { hasText: 'This is not the current password of the account.' }).waitFor()
    assert.equal(posts.length, 1)
    assert.ok(await s.deps.users.byName(u.username))

    await password.fill(u.password)
    await submit.click()
    await page.waitForURL('**/login**')
    assert.equal(await s.deps.users.byName(u.username), undefined)
    assert.equal((await s.get(`/${u.username}/mine.html`)).status, 404)
    await page.goto(`${s.url}/dashboard`)
    assert.match(page.url(), /\/login/, 'the session ended')
    assert.deepEqual(errors, [])
  })

  it("in the admin console: Delete asks for the account's name typed again", async () => {
    const admin = await s.user({ admin: true })
    const u = await s.user()
    const page: Page = await ctx.newPage()
    page.setDefaultTimeout(15_000)
    const errors = watchErrors(page)
    const deletes: string[] = []
    page.on('request', (r) => {
      if (r.method() === 'DELETE') deletes.push(r.url())
    })
    let typed: string | null = null
    const asked: string[] = []
    page.on('dialog', (d) => {
      asked.push(d.message())
      void (typed === null ? d.dismiss() : d.accept(typed))
    })
    await logInPage(page, s.url, admin)
    await page.goto(`${s.url}/admin`)
    await page.locator('#users-q').fill(u.username)
    const row = page.locator(`#users-table tbody tr[data-user="${u.username}"]`)
    await page.waitForFunction(() => document.querySelectorAll('#users-table tbody tr').length === 1)

    // cancelled, then a name that is not the account's: nothing deleted
    await row.getByRole('button', { name: 'Delete' }).click()
    typed = 'someone-else'
    await row.getByRole('button', { name: 'Delete' }).click()
    await page.locator('#users-status', { hasText: `Not deleted: the name typed is not ${u.username}.` }).waitFor()
    assert.equal(asked.length, 2)
    assert.match(asked[0], new RegExp(`^Delete ${u.username} and everything it holds`))
    assert.deepEqual(deletes, [])

    typed = u.username
    await row.getByRole('button', { name: 'Delete' }).click()
    await page.locator('#users-status.ok', { hasText: `Deleted ${u.username} and everything it held.` }).waitFor()
    await row.waitFor({ state: 'detached' })
    assert.equal(deletes.length, 1)
    assert.equal(await s.deps.users.byName(u.username), undefined)
    assert.equal((await s.get('/svc_api/me', { key: u.key })).status, 401)
    assert.deepEqual(errors, [])
  })
})
