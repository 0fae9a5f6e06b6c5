import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, uploadFile } from '../support/hosting.js'
import { countXhrAnswers, logInPage, openContext, watchErrors } from '../support/browser.js'

// The single files page as a person uses it in Chromium, with a server that takes files of at
// most 2 MiB: a file over the limit is refused before its bytes are sent, in the page's
// language and in binary units; a refusal never reads as "Uploaded". Its search shows the
// answer to what is typed now and says when nothing matches.

const MAX = 2 * 1024 * 1024

describe('single files page: refused uploads (Chromium)', () => {
  let s: TestServer
  let tmp: string
  let u: Awaited<ReturnType<TestServer['user']>>
  const contexts: BrowserContext[] = []

  before(async () => {
    s = await startServer({ env: { RATE_LIMITS: HIGH_LIMITS, MAX_UPLOAD_BYTES: String(MAX) } })
    u = await s.user()
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-files-page-'))
    fs.writeFileSync(path.join(tmp, 'big.html'), '<p>' + 'x'.repeat(MAX) + '</p>')
    fs.writeFileSync(path.join(tmp, 'small.html'), '<h1>small</h1>')
    fs.writeFileSync(path.join(tmp, 'notes.txt'), 'not a page')
  })
  after(async () => {
    for (const c of contexts) await c.close().catch(() => {})
    await s?.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  /** A signed-in files page in `locale`; `uploads` collects the sizes of the upload requests sent. */
  async function filesPage(locale: string, expected: Array<{ url: string; status: number }> = []) {
    const ctx = await openContext({ locale })
    contexts.push(ctx)
    const page = await ctx.newPage()
    page.setDefaultTimeout(15_000)
    const errors = watchErrors(page, expected)
    const uploads: number[] = []
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/svc_api/upload') uploads.push(r.postDataBuffer()?.length ?? 0)
    })
    await logInPage(page, s.url, u)
    return { page, errors, uploads }
  }
  const status = (page: Page) => page.locator('#files-status')
  const label = (page: Page) => page.locator('#file-progress span')
  const upload = async (page: Page, names: string[], button: string) => {
    await page.locator('#file-input').setInputFiles(names.map((n) => path.join(tmp, n)))
    await page.getByRole('button', { name: button, exact: true }).click()
  }

  it('refuses a file over the limit before sending it, saying the limit in MiB; the others go up', async () => {
    const { page, errors, uploads } = await filesPage('en-US')
    await page.goto(`${s.url}/dashboard/files`)
    await page.locator('#files-quota', { hasText: 'at most 2 MiB each' }).waitFor()
    await upload(page, ['big.html', 'small.html'], 'Upload')
    await status(page).filter({ hasText: 'big.html: larger than 2 MiB, the most a file may be; not uploaded.' }).waitFor()
    assert.equal(await label(page).textContent(), '1 of 2 files uploaded.')
    await page.locator('#files-table tbody').getByRole('link', { name: 'small.html' }).waitFor()
    assert.equal(uploads.length, 1, 'only small.html was sent')
    assert.ok(uploads[0] < 10_000, `the request carried small.html only (${uploads[0]} bytes)`)

    // the big one alone: nothing is sent, and no bar says anything was uploaded
    await upload(page, ['big.html'], 'Upload')
    await status(page).filter({ hasText: 'big.html: larger than 2 MiB' }).waitFor()
    assert.equal(await page.locator('#file-progress').isHidden(), true)
    assert.equal(uploads.length, 1)
    assert.deepEqual(errors, [])
  })

  it('says it in Chinese on a Chinese page', async () => {
    const { page, errors, uploads } = await filesPage('en-US')
    await page.goto(`${s.url}/dashboard/files?lang=zh`)
    await page.locator('#files-quota', { hasText: '单个最大 2 MiB' }).waitFor()
    await upload(page, ['big.html'], '上传')
    await status(page).filter({ hasText: 'big.html：超过单个文件的上限 2 MiB，未上传。' }).waitFor()
    assert.equal(uploads.length, 0)
    assert.deepEqual(errors, [])
  })

  it("reads the server's refusal the same way when its limit is lower than the page knew", async () => {
    const { page, errors, uploads } = await filesPage('en-US', [{ url: '/svc_api/upload', status: 400 }])
    // the page was loaded while the limit was higher: its first look at upload/info says 64 MiB
    let first = true
    await page.route('**/svc_api/upload/info', async (route) => {
      if (!first) return route.continue()
      first = false
      const r = await route.fetch()
      const body = await r.json()
      body.data.max_file_size = 64 * 1024 * 1024
      await route.fulfill({ response: r, json: body })
    })
    await page.goto(`${s.url}/dashboard/files`)
    await page.locator('#files-quota', { hasText: 'at most 64 MiB each' }).waitFor()
    await upload(page, ['big.html'], 'Upload')
    await status(page).filter({ hasText: 'big.html: larger than 2 MiB, the most a file may be; not uploaded.' }).waitFor()
    assert.equal(uploads.length, 1, 'sent, and refused by the server')
    assert.doesNotMatch((await status(page).textContent()) ?? '', /2097152/)
    assert.equal(await page.locator('#file-progress').isHidden(), true)
    await page.locator('#files-quota', { hasText: 'at most 2 MiB each' }).waitFor()
    assert.deepEqual(errors, [])
  })

  it("shows every tab of the page's bar, whole, at a phone's, a tablet's and a laptop's width", async () => {
    const { page, errors } = await filesPage('en')
    for (const width of [390, 800, 1100, 1400]) {
      await page.setViewportSize({ width, height: 800 })
      const tabs = await page.locator('nav.nav a').all()
      assert.ok(tabs.length >= 8, `${tabs.length} tabs`)
      for (const tab of tabs) {
        const box = (await tab.boundingBox())!
        assert.ok(box.x >= 0 && box.x + box.width <= width, `${await tab.textContent()} at ${box.x}-${box.x + box.width} of ${width}px`)
      }
    }
    assert.deepEqual(errors, [])
  })

  it('the search shows the answer to what is typed now, and says when nothing matches', async () => {
    for (const n of ['srch-alpha.html', 'srch-alpha2.html', 'srch-beta.html']) assert.equal((await uploadFile(s, { key: u.key }, n, HTML(n))).status, 200)
    const { page, errors } = await filesPage('en-US')
    const answers = await countXhrAnswers(page)
    await page.goto(`${s.url}/dashboard/files`)
    const names = () => page.locator('#files-table tbody tr td:first-child a').allTextContents()
    await page.getByRole('link', { name: 'srch-beta.html' }).waitFor()
    // the broader search is held until the narrower one, typed after it, has been shown
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    const isBroad = (x: URL) => x.pathname === '/svc_api/files' && x.searchParams.get('search') === 'srch-alpha'
    await page.route(isBroad, async (route) => {
      await held
      await route.continue()
    })
    const broad = page.waitForRequest((r) => isBroad(new URL(r.url())))
    const search = page.getByLabel('Search by name')
    await search.fill('srch-alpha')
    await broad
    await search.fill('srch-alpha2')
    await page.getByRole('link', { name: 'srch-beta.html' }).waitFor({ state: 'detached' })
    await page.getByRole('link', { name: 'srch-alpha2.html' }).waitFor()
    const done = await answers.handled()
    release()
    await answers.moreThan(done)
    assert.deepEqual(await names(), ['srch-alpha2.html'])
    // a search that finds nothing says so, not that there are no files at all
    await search.fill('zzz-nothing')
    const empty = page.locator('#files-table tbody td.hint')
    await empty.filter({ hasText: 'zzz-nothing' }).waitFor()
    assert.equal(await empty.textContent(), 'No file or project name contains "zzz-nothing".')
    assert.deepEqual(errors, [])
  })

  it("lists the server's warnings of the pages that went up, a line each, also beside a refusal", async () => {
    const form = (id: string) => `<!doctype html><form id="${id}" method="post" action="https://formspree.io/f/x"><input type="file" name="cv"></form>`
    const warning = (p: string, id: string) =>
      `${p}: the form id="${id}" has a file input (name="cv") but no enctype="multipart/form-data": a browser sends only the file's name, not the file. Add enctype="multipart/form-data" to the <form>`
    fs.writeFileSync(path.join(tmp, 'apply.html'), form('apply'))
    fs.writeFileSync(path.join(tmp, 'jobs.html'), form('jobs'))
    const { page, errors } = await filesPage('en-US')
    await page.goto(`${s.url}/dashboard/files`)
    await page.locator('#files-quota').filter({ hasText: 'MiB' }).waitFor()
    await upload(page, ['apply.html'], 'Upload')
    const done = status(page).filter({ hasText: 'Uploaded.' })
    await done.locator('.warning').first().waitFor()
    assert.deepEqual(await done.locator('.warning').allTextContents(), ['Uploaded all the same, but 1 problem(s) to fix:', warning('apply.html', 'apply')])
    const tops = await done.locator('.warning').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top))
    assert.ok(tops[0] < tops[1], String(tops))
    assert.equal((await s.get(`/${u.username}/apply.html`)).status, 200, 'the page went up all the same')

    // a refused file and a warned one: the refusal, then the warning of the page that went up
    await upload(page, ['big.html', 'jobs.html', 'small.html'], 'Upload')
    const mixed = status(page).filter({ hasText: 'big.html: larger than 2 MiB' })
    await mixed.locator('.warning').first().waitFor()
    assert.deepEqual(await mixed.locator('.warning').allTextContents(), ['Uploaded all the same, but 1 problem(s) to fix:', warning('jobs.html', 'jobs')])
    // a clean upload after it shows none
    await upload(page, ['small.html'], 'Upload')
    await status(page)
      .filter({ hasText: /^Uploaded\.$/ })
      .waitFor()
    assert.equal(await status(page).locator('.warning').count(), 0)
    assert.deepEqual(errors, [])
  })

  it('a failed upload never reads "Uploaded"', async () => {
    const { page, errors } = await filesPage('en-US', [{ url: '/svc_api/upload', status: 400 }])
    await page.goto(`${s.url}/dashboard/files`)
    await page.locator('#files-quota').filter({ hasText: 'MiB' }).waitFor()
    await upload(page, ['notes.txt'], 'Upload')
    await status(page).filter({ hasText: 'notes.txt:' }).waitFor()
    const bar = page.locator('#file-progress')
    assert.ok((await bar.isHidden()) || !/Uploaded/.test((await label(page).textContent()) ?? ''), `the bar reads: ${await label(page).textContent()}`)
    assert.doesNotMatch((await status(page).textContent()) ?? '', /Uploaded/)
    // one good and one refused: the bar counts what went up
    await upload(page, ['small.html', 'notes.txt'], 'Upload')
    await status(page).filter({ hasText: 'notes.txt:' }).waitFor()
    await label(page).filter({ hasText: '1 of 2 files uploaded.' }).waitFor()
    assert.deepEqual(errors, [])
  })
})
