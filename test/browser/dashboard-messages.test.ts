import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { makeImage, svc } from '../support/images.js'
import { logInPage, notCancelled, openContext, watchErrors } from '../support/browser.js'
import { MAX_DISPLAY_NAME } from '../../src/features/hosted-data/content.js'

// What the dashboard's pages say after an action, in Chromium: a message said once, a message
// about a form gone with the form, and a name field that takes what the API takes.
const engine = ENGINES[0]

/** How many times `text` is on the page as a visitor sees it (hidden elements left out). */
const shown = (page: Page, text: string) => page.evaluate((t) => document.body.innerText.split(t).length - 1, text)

describe(`dashboard messages in Chromium [${engine}]`, () => {
  let s: TestServer
  let ctx: BrowserContext
  let page: Page
  let errors: string[]
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    const u = await s.user()
    await svc(s, 'grant', u.username, 'image-host')
    await svc(s, 'grant', u.username, 'hosted-data')
    ctx = await openContext({ locale: 'en-US' })
    page = await ctx.newPage()
    page.setDefaultTimeout(15_000)
    errors = watchErrors(page)
    await logInPage(page, s.url, u)
  })
  after(async () => {
    await ctx?.close().catch(() => {})
    await s?.close()
  })

  it('an image upload says "Uploaded." once', async () => {
    await page.goto(`${s.url}/dashboard/images`)
    await page.locator('#img-input').setInputFiles({ name: 'dot.png', mimeType: 'image/png', buffer: await makeImage('png', { width: 4, height: 4 }) })
    await page.locator('#img-form').getByRole('button', { name: 'Upload', exact: true }).click()
    await page.locator('#img-list strong', { hasText: 'dot.png' }).waitFor()
    await page.getByText('Uploaded.').first().waitFor()
    assert.equal(await shown(page, 'Uploaded.'), 1)
    assert.deepEqual(notCancelled(errors), [])
  })

  it('a hosted data upload says "Uploaded." once; its name field takes as many characters as the API', async () => {
    await page.goto(`${s.url}/dashboard/data`)
    const name = page.locator('#data-name')
    await name.waitFor()
    assert.equal(await name.getAttribute('maxlength'), String(MAX_DISPLAY_NAME))
    // typed, as a visitor does: the field keeps the API's longest name whole
    const long = 'n'.repeat(MAX_DISPLAY_NAME - 5) + '.json'
    await name.click()
    await page.keyboard.insertText(long + 'xyz')
    assert.equal(await name.inputValue(), long)
    await page.locator('#data-content').fill('{"a":1}')
    await page.locator('#data-form').getByRole('button', { name: 'Create' }).click()
    await page.locator('#data-table td', { hasText: long }).waitFor()
    await page.getByText('Uploaded.').first().waitFor()
    assert.equal(await shown(page, 'Uploaded.'), 1)
    assert.deepEqual(notCancelled(errors), [])
  })

  it('"Form created" goes from the status line once that form is deleted', async () => {
    await page.goto(`${s.url}/dashboard/forms`)
    await page.locator('#form-name').fill('contact')
    await page.locator('#form-create').getByRole('button', { name: 'Create form' }).click()
    const status = page.locator('#forms-status')
    await status.filter({ hasText: 'Form created' }).waitFor()
    page.once('dialog', (d) => void d.accept())
    await page.locator('#forms-table tr', { hasText: 'contact' }).getByRole('button', { name: 'Delete contact', exact: true }).click()
    await page.locator('#forms-table tr', { hasText: 'contact' }).waitFor({ state: 'detached' })
    assert.equal(await status.textContent(), '')
    assert.deepEqual(notCancelled(errors), [])
  })
})
