import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { logInPage, openContext, watchErrors } from '../support/browser.js'

// The KV page's editor refusing a value, as a person meets it in Chromium: the reason at the
// Value field, which is marked invalid, described by it (its other description kept) and
// focused, as the sign-up form does; nothing is stored, and typing takes the mark away.

describe('KV page: a refused value at its field (Chromium)', () => {
  let s: TestServer
  let ctx: BrowserContext
  let page: Page
  let errors: string[]
  let u: Awaited<ReturnType<TestServer['user']>>

  before(async () => {
    s = await startServer({ env: { RATE_LIMITS: HIGH_LIMITS } })
    u = await s.user()
    ctx = await openContext({ locale: 'en-US' })
    page = await ctx.newPage()
    page.setDefaultTimeout(15_000)
    errors = watchErrors(page, [{ url: '/svc_api/data/store', status: 400 }])
    await logInPage(page, s.url, u)
  })
  after(async () => {
    await ctx?.close().catch(() => {})
    await s?.close()
  })

  /** The accessible description of a control: the texts of its aria-describedby ids. */
  const description = (id: string) =>
    page.locator(`#${id}`).evaluate((e) =>
      (e.getAttribute('aria-describedby') ?? '')
        .split(' ')
        .filter(Boolean)
        .map((x) => document.getElementById(x)?.textContent ?? '')
        .join(' '),
    )
  const stored = async () =>
    (await s.get('/svc_api/data/list', { headers: { authorization: `Bearer ${u.key}` } })).json.data.items.map((i: { key: string }) => i.key)
  const save = () => page.getByRole('button', { name: 'Save', exact: true }).click()

  it("holds the Key field to the store's rule before anything is sent, and its hint states it", async () => {
    await page.goto(`${s.url}/dashboard/kv`)
    const key = page.getByLabel('Key', { exact: true })
    const mismatch = async (v: string) => {
      await key.fill(v)
      return key.evaluate((e) => (e as HTMLInputElement).validity.patternMismatch)
    }
    // the attribute compiles (an invalid pattern is ignored: nothing would mismatch)
    assert.equal(await mismatch('1abc'), true)
    assert.equal(await mismatch('a b'), true)
    assert.equal(await mismatch('a.b'), true)
    assert.equal(await mismatch('abc_1-x'), false)
    assert.equal(await key.evaluate((e) => (e as HTMLInputElement).maxLength), 100)
    assert.equal(await description('kv-key'), 'Starts with a letter; a-z, A-Z, 0-9, _ and -; at most 100 characters.')
    await key.fill('')
  })

  it('marks the Value field for invalid JSON, a bad number and a value over the size limit', async () => {
    await page.goto(`${s.url}/dashboard/kv`)
    await page.locator('#kv-table tbody', { hasText: 'No entries yet.' }).waitFor()
    const value = page.getByLabel('Value', { exact: true })
    await page.getByLabel('Key', { exact: true }).fill('cfg')
    await value.fill('{"a": 1,')
    await save()
    await page.locator('#kv-value[aria-invalid="true"]').waitFor()
    assert.equal(await description('kv-value'), 'The value is not valid JSON.')
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'kv-value')
    assert.equal(await page.locator('#kv-status').textContent(), '')
    assert.deepEqual(await stored(), [])

    // typing takes the mark away; a valid value is stored
    await value.fill('{"a": 1}')
    assert.equal(await value.getAttribute('aria-invalid'), null)
    assert.equal(await page.locator('#kv-value-error').count(), 0)
    await save()
    await page.locator('#kv-status', { hasText: 'Saved' }).waitFor()
    assert.deepEqual(await stored(), ['cfg'])

    // a number that is not one: the same place
    await page.getByLabel('Key', { exact: true }).fill('count')
    await page.getByLabel('Type').selectOption('number')
    await value.fill('twelve')
    await save()
    await page.locator('#kv-value[aria-invalid="true"]').waitFor()
    assert.equal(await description('kv-value'), 'The value is not a number.')
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'kv-value')

    // the server's refusal of the value (over the entry size limit) goes to the field too
    await page.getByLabel('Type').selectOption('text')
    await value.fill('x'.repeat(70 * 1024))
    await save()
    await page.locator('#kv-value[aria-invalid="true"]').waitFor()
    assert.match(await description('kv-value'), /size limit/)
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'kv-value')
    assert.deepEqual(await stored(), ['cfg'])

    // the key keeps its hint as its description; "New" clears the mark
    assert.match(await description('kv-key'), /letter/i)
    await page.getByRole('button', { name: 'New entry' }).click()
    assert.equal(await value.getAttribute('aria-invalid'), null)
    assert.equal(await page.locator('.field-error').count(), 0)
    assert.deepEqual(errors, [])
  })

  it("names each row's buttons after its key, as its Delete and Public controls are", async () => {
    for (const key of ['alpha', 'beta']) {
      const r = await s.post('/svc_api/data/store', { key: u.key, json: { key, value: 1, is_public: true } })
      assert.equal(r.status, 200, r.text)
    }
    await page.goto(`${s.url}/dashboard/kv`)
    const row = page.locator('#kv-table tbody tr', { hasText: 'alpha' })
    await row.waitFor()
    const names = await row.locator('button, input').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? e.textContent))
    assert.deepEqual(names, ['Public alpha', 'Edit alpha', 'Copy public link alpha', 'Delete alpha'])
    // and a screen reader's list of buttons has no two alike
    const all = await page.locator('#kv-table tbody button').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? e.textContent))
    assert.equal(new Set(all).size, all.length, all.join(' | '))
    // the named Edit still opens its entry
    await page.getByRole('button', { name: 'Edit beta', exact: true }).click()
    assert.equal(await page.getByLabel('Key', { exact: true }).inputValue(), 'beta')
    assert.deepEqual(errors, [])
  })

  it('makes a number entry a public counter with its own box, and names its counter link in the row', async () => {
    await page.goto(`${s.url}/dashboard/kv`)
    await page.locator('#kv-table tbody tr').first().waitFor()
    const box = page.getByRole('checkbox', { name: 'Public counter: anyone can add 1 or take 1 away, without a key' })
    assert.match(await description('kv-public-incr'), /number entries/)
    await page.getByLabel('Key', { exact: true }).fill('likes')
    await page.getByLabel('Value', { exact: true }).fill('0')
    await box.check()
    // a counter of another type is refused at the Type field, before anything is sent
    await save()
    await page.locator('#kv-type[aria-invalid="true"]').waitFor()
    assert.match(await description('kv-type'), /number/)
    assert.equal((await stored()).includes('likes'), false)
    await page.getByLabel('Type').selectOption('number')
    await save()
    await page.locator('#kv-status', { hasText: '/likes/incr' }).waitFor()
    const got = await s.get('/svc_api/data/get?key=likes', { key: u.key })
    assert.equal(got.json.data.public_incr, true)
    const row = page.locator('#kv-table tbody tr', { hasText: 'likes' })
    await row.getByRole('button', { name: 'Copy counter link likes', exact: true }).waitFor()
    // Edit shows the box as stored; unchecked and saved, the entry is no counter any more
    await page.getByRole('button', { name: 'Edit likes', exact: true }).click()
    assert.equal(await box.isChecked(), true)
    await box.uncheck()
    await save()
    await row.getByRole('button', { name: 'Copy counter link likes', exact: true }).waitFor({ state: 'detached' })
    assert.equal('public_incr' in (await s.get('/svc_api/data/get?key=likes', { key: u.key })).json.data, false)
    assert.deepEqual(errors, [])
  })
})
