import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { logInPage, openContext, watchErrors } from '../support/browser.js'

// An upload stopped from the page: the progress bar's cancel button aborts the request under
// way and nothing after it is sent. The upload is throttled (Chromium's network emulation) so
// the button is pressed while the bytes are still going up.

describe('cancelling an upload in the dashboard (Chromium)', () => {
  let s: TestServer
  let ctx: BrowserContext
  let page: Page
  let tmp: string
  let errors: string[]
  let u: Awaited<ReturnType<TestServer['user']>>

  before(async () => {
    s = await startServer({ env: { RATE_LIMITS: HIGH_LIMITS } })
    u = await s.user()
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-upload-cancel-'))
    // an HTML file of a few MB (random text, so nothing compresses it away)
    const big = '<p>' + crypto.randomBytes(3 * 1024 * 1024).toString('base64') + '</p>'
    fs.writeFileSync(path.join(tmp, 'big page.html'), big)
    fs.writeFileSync(path.join(tmp, 'small.html'), '<h1>small</h1>')
    fs.mkdirSync(path.join(tmp, 'site', 'sub dir'), { recursive: true })
    fs.writeFileSync(path.join(tmp, 'site', 'index.html'), big)
    fs.writeFileSync(path.join(tmp, 'site', 'sub dir', 'ünï.html'), '<p>x</p>')
    ctx = await openContext({ locale: 'en-US', viewport: { width: 1000, height: 800 } })
    page = await ctx.newPage()
    page.setDefaultTimeout(15_000)
    page.on('dialog', (d) => void d.accept())
    // the aborted upload is a failed request by design; anything else is a problem
    errors = watchErrors(page)
    await logInPage(page, s.url, u)
    const cdp = await ctx.newCDPSession(page)
    await cdp.send('Network.enable')
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 256 * 1024 })
  })
  after(async () => {
    await ctx?.close().catch(() => {})
    await s?.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  /** Presses the progress bar's cancel button once some of the bytes went up. */
  const cancelMidway = async (bar: string) => {
    const cancel = page.locator(bar).getByRole('button', { name: 'Cancel upload' })
    await cancel.waitFor()
    await page.waitForFunction((sel) => Number(document.querySelector<HTMLProgressElement>(`${sel} progress`)!.value) >= 1, bar)
    assert.ok(Number(await page.locator(`${bar} progress`).getAttribute('value')) < 100, 'still uploading')
    await cancel.click()
    await cancel.waitFor({ state: 'hidden' })
  }

  it('single files: the file under way and the ones after it are not stored', async () => {
    await page.goto(`${s.url}/dashboard/files`)
    await page.getByLabel('HTML files to upload').setInputFiles([path.join(tmp, 'big page.html'), path.join(tmp, 'small.html')])
    await page.getByRole('button', { name: 'Upload', exact: true }).click()
    await cancelMidway('#file-progress')
    await page.locator('#files-status', { hasText: 'Upload cancelled: 0 of 2 files uploaded; the rest were not sent.' }).waitFor()
    // keyboard focus stays in the form, on its upload button
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Upload')
    await page.locator('#files-table tbody', { hasText: 'No files yet.' }).waitFor()
    const list = await s.get('/svc_api/files', { headers: { authorization: `Bearer ${u.key}` } })
    assert.deepEqual(
      list.json.data.files.map((f: { file_name: string }) => f.file_name),
      [],
    )
    // and the page uploads again afterwards, to the end
    await page.getByLabel('HTML files to upload').setInputFiles([path.join(tmp, 'small.html')])
    await page.getByRole('button', { name: 'Upload', exact: true }).click()
    await page.locator('#files-status', { hasText: 'Uploaded.' }).waitFor()
    await page.locator('#files-table tbody').getByRole('link', { name: 'small.html' }).waitFor()
  })

  it('folders: the batch under way is not stored, and the page says so', async () => {
    await page.goto(`${s.url}/dashboard/folders`)
    await page.getByLabel('Folder to upload (sub-folders are kept)').setInputFiles(path.join(tmp, 'site'))
    await page.getByRole('button', { name: 'Upload folder' }).click()
    await cancelMidway('#folder-progress')
    await page.locator('#folders-status', { hasText: 'Upload cancelled: the project keeps the 0 files uploaded before it' }).waitFor()
    const list = await s.get('/api/folders', { headers: { authorization: `Bearer ${u.key}` } })
    assert.deepEqual(list.json.folders, [], 'no project was made')
    assert.deepEqual(
      errors.filter((e) => !/requestfailed: .*(\/svc_api\/upload|\/batch_upload) net::ERR_ABORTED/.test(e)),
      [],
    )
  })
})
