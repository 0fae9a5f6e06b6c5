import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { logInPage, openContext } from '../support/browser.js'
import { sha256hex } from '../../src/auth/tokens.js'

/** A redeem code of another feature, entered on a feature's page, says which feature it activated. */
describe('redeem codes in the dashboard (Chromium)', () => {
  let s: TestServer
  let ctx: BrowserContext
  let page: Page
  before(async () => {
    s = await startServer()
    ctx = await openContext({ locale: 'en-US' })
    page = ctx.pages()[0] ?? (await ctx.newPage())
    page.setDefaultTimeout(15_000)
  })
  after(async () => {
    await ctx?.close().catch(() => {})
    await s?.close()
  })

  it("a hosted-data code on the images page: activated, and the page says it was another feature's", async () => {
    const u = await s.user()
    const code = `data-${Date.now()}`
    await s.deps.db.k
      .insertInto('redeem_codes')
      .values({ code_hash: sha256hex(code), feature: 'hosted-data', created_at: Date.now(), redeemed_by: null, redeemed_at: null })
      .execute()
    await logInPage(page, s.url, u)
    await page.goto(`${s.url}/dashboard/images`)
    await page.getByLabel('Code').fill(code)
    await page.getByRole('button', { name: 'Redeem' }).click()
    await page.locator('#img-status', { hasText: 'This code activated hosted data' }).waitFor()
    assert.equal(await page.locator('#img-form').isVisible(), false, 'images stay inactive')
    const ent = await s.deps.db.k.selectFrom('entitlements').select('feature').where('user_id', '=', u.id).execute()
    assert.deepEqual(
      ent.map((e) => e.feature),
      ['hosted-data'],
    )
  })
})
