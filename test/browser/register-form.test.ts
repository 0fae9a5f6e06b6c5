import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { openContext, watchErrors } from '../support/browser.js'

// The sign-up form refused, as a person meets it in Chromium: the reason next to the field it
// is about (which is marked invalid, described by it and focused), the name typed kept, and
// the page one that reload and the back button show again without sending the form again.

describe('a refused sign-up in Chromium', () => {
  let s: TestServer
  let ctx: BrowserContext
  let page: Page
  let errors: string[]

  before(async () => {
    s = await startServer({ env: { RATE_LIMITS: HIGH_LIMITS } })
    await s.user({ name: 'takenname' })
    ctx = await openContext({ locale: 'en-US' })
    page = await ctx.newPage()
    page.setDefaultTimeout(15_000)
    errors = watchErrors(page)
  })
  after(async () => {
    await ctx?.close().catch(() => {})
    await s?.close()
  })

  /** The accessible description of a control: the texts of its aria-describedby ids. */
  const description = (label: string) =>
    page.getByLabel(label, { exact: true }).evaluate((e) =>
      (e.getAttribute('aria-describedby') ?? '')
        .split(' ')
        .map((id) => document.getElementById(id)?.textContent ?? '')
        .join(' '),
    )

  it('shows each reason at its field, and reload and back show the page again', async () => {
    await page.goto(`${s.url}/register`)
    await page.getByLabel('Username').fill('takenname')
    await page.getByLabel('Password', { exact: true }).fill('a long password')
    await page.getByLabel('Repeat the password').fill('another password')
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.waitForURL(/\/register\?/)

    const repeat = page.getByLabel('Repeat the password')
    assert.equal(await repeat.getAttribute('aria-invalid'), 'true')
    assert.match(await description('Repeat the password'), /The two passwords differ\./)
    assert.equal(await page.getByLabel('Username').getAttribute('aria-invalid'), null, 'the name was not checked against the others yet')
    assert.equal(await page.getByLabel('Username').inputValue(), 'takenname')
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'password2')

    // now the name is the problem: its reason is next to it, with the field's hint
    await page.getByLabel('Password', { exact: true }).fill('a long password')
    await repeat.fill('a long password')
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.waitForURL(/error=taken/)
    assert.equal(await page.getByLabel('Username').getAttribute('aria-invalid'), 'true')
    assert.match(await description('Username'), /This username is taken\..*2-32/)
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'username')

    // reload: the same page, without sending the form again
    const again = await page.reload()
    assert.equal(again?.status(), 200)
    assert.match(await description('Username'), /This username is taken\./)
    // away and back: the page again, not "Confirm Form Resubmission" (ERR_CACHE_MISS)
    await page.getByRole('link', { name: 'Log in' }).click()
    await page.waitForURL('**/login')
    const back = await page.goBack()
    assert.equal(back?.status(), 200)
    assert.equal(await page.getByLabel('Username').inputValue(), 'takenname')
    assert.deepEqual(errors, [])
  })

  it('shows a mistyped address of the service as a page with a way home (decision 209)', async () => {
    const p = await ctx.newPage()
    const seen = watchErrors(p, [{ url: '/registr', status: 404 }])
    try {
      const r = await p.goto(`${s.url}/registr`)
      assert.equal(r?.status(), 404)
      assert.equal(await p.title(), '404 - page not found')
      assert.equal(await p.getByRole('heading', { level: 1 }).textContent(), '404 - page not found')
      await p.getByRole('link', { name: 'Go to the home page' }).click()
      // the service's home sends a visitor without a session to the login page
      await p.waitForURL('**/login')
      assert.deepEqual(seen, [])
    } finally {
      await p.close()
    }
  })
})

// A sign-up the settings stop (closed after the form was shown) or hold (pending approval)
// ends on a page reached by a redirect: reload and back show it again without a new post.
describe('a closed or held sign-up in Chromium (decision 153)', () => {
  let s: TestServer
  let ctx: BrowserContext
  let page: Page
  let errors: string[]
  let adminCookie: string

  before(async () => {
    s = await startServer({ env: { RATE_LIMITS: HIGH_LIMITS } })
    const a = await s.user({ admin: true })
    adminCookie = await s.login(a.username, a.password)
    ctx = await openContext({ locale: 'en-US' })
    page = await ctx.newPage()
    page.setDefaultTimeout(15_000)
    errors = watchErrors(page)
  })
  after(async () => {
    await ctx?.close().catch(() => {})
    await s?.close()
  })

  const mode = async (m: string) => assert.equal((await s.post('/svc_api/admin/settings', { cookie: adminCookie, json: { registration: m } })).status, 200)
  /** Fills the form and sends it; the main frame's last answer (after any redirect). */
  const signUp = async (username: string) => {
    await page.getByLabel('Username').fill(username)
    await page.getByLabel('Password', { exact: true }).fill('a long password')
    await page.getByLabel('Repeat the password').fill('a long password')
    const answer = page.waitForResponse((r) => r.request().isNavigationRequest() && r.status() !== 303)
    await page.getByRole('button', { name: 'Create account' }).click()
    return answer
  }
  const posts: string[] = []
  const countPosts = () => page.on('request', (r) => (r.method() === 'POST' && r.isNavigationRequest() ? posts.push(r.url()) : undefined))

  it('pending: the "awaiting review" page is a page of its own; reload and back send nothing again', async () => {
    countPosts()
    await mode('pending')
    await page.goto(`${s.url}/register`)
    const answer = await signUp('waitinguser')
    assert.equal(answer.request().method(), 'GET', 'the post was answered with a redirect')
    assert.equal(answer.status(), 200)
    await page.getByText('Account awaiting review').first().waitFor()
    assert.equal(Boolean((await s.deps.users.byName('waitinguser'))?.disabled), true, 'created, held')
    const sent = posts.length
    const again = await page.reload()
    assert.equal(again?.request().method(), 'GET')
    assert.match(await page.content(), /Account awaiting review/)
    await page.getByRole('link', { name: 'Log in' }).last().click()
    await page.waitForURL('**/login')
    const back = await page.goBack()
    assert.equal(back?.request().method(), 'GET')
    assert.match(await page.content(), /Account awaiting review/)
    assert.equal(posts.length, sent, 'no post sent again')
    assert.deepEqual(errors, [])
  })

  it('pending: logging in before approval says the account awaits review, not that it was disabled', async () => {
    await mode('pending')
    assert.equal((await s.post('/svc_api/admin/settings', { cookie: adminCookie, json: { abuse_contact: 'abuse@example.com' } })).status, 200)
    await page.goto(`${s.url}/register`)
    await signUp('heldlogin')
    await page.getByText('Account awaiting review').first().waitFor()
    const login = async () => {
      await page.goto(`${s.url}/login`)
      await page.getByLabel('Username').fill('heldlogin')
      await page.getByLabel('Password').fill('a long password')
      await page.getByRole('button', { name: 'Log in' }).click()
    }
    await login()
    await page.waitForURL('**/login?error=pending*')
    const text = await page.locator('main').innerText()
    assert.match(text, /This account is awaiting review: you can log in once an administrator approves it\./)
    assert.doesNotMatch(text, /disabled|appeal|abuse@example\.com/)
    // a wrong password learns nothing of the account's state
    await page.goto(`${s.url}/login`)
    await page.getByLabel('Username').fill('heldlogin')
    await page.getByLabel('Password').fill('a wrong password')
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.waitForURL('**/login?error=1*')
    // approved by an admin: the same login goes through
    assert.equal((await s.post('/svc_api/admin/users/heldlogin', { cookie: adminCookie, json: { disabled: false } })).status, 200)
    await login()
    await page.waitForURL('**/dashboard')
    await ctx.clearCookies()
    assert.deepEqual(errors, [])
  })

  it('closed after the form was shown: the closed page, by a redirect, and no account', async () => {
    await mode('open')
    await page.goto(`${s.url}/register`)
    await mode('closed')
    const answer = await signUp('lateuser')
    assert.equal(answer.request().method(), 'GET', 'the post was answered with a redirect')
    assert.equal(answer.status(), 403)
    assert.match(await page.content(), /Registration is closed/)
    assert.equal(await s.deps.users.byName('lateuser'), undefined)
    const again = await page.reload()
    assert.equal(again?.request().method(), 'GET')
    assert.equal(again?.status(), 403)
    assert.deepEqual(
      errors.filter((e) => !/403/.test(e)),
      [],
    )
  })
})
