import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs/promises'
import type { BrowserContext } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { type BrowserLease, openBrowser, sessionCookiesFor, watchErrors } from '../support/browser.js'

// A Netlify form with a file input (enctype multipart/form-data), deployed as it is: Chromium
// sends the chosen file with the submission, and the owner downloads it from the forms
// dashboard (decision 282). The HTTP suite (test/http/form-files.test.ts) covers
// both engines, the limits and the refusals.
const engine = ENGINES[0]

const INDEX = `<!doctype html><html><head><meta charset="utf-8"><title>jobs</title></head><body>
<form name="FORM" method="POST" data-netlify="true" netlify-honeypot="bot-field" enctype="multipart/form-data" action="/thanks/">
  <input type="hidden" name="form-name" value="FORM">
  <p hidden><input name="bot-field"></p>
  <label>Name <input name="name"></label>
  <label>Resume <input type="file" name="resume"></label>
  <button type="submit">Apply</button>
</form></body></html>`
const THANKS = '<!doctype html><title>thanks</title><p id="done">Thanks!</p>'
/** What the visitor attaches: HTML, which must never be shown inline on the service's origin. */
const RESUME = '<!doctype html><title>cv</title><script>document.title = "ran"</script><p>Dana, 10 years of HTML</p>'

describe(`a Netlify form with a file, sent from Chromium and downloaded by the owner [${engine}]`, () => {
  let s: TestServer
  let browser: BrowserLease
  let visitor: BrowserContext
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    browser = await openBrowser()
    visitor = await browser.newContext({ locale: 'en-US' })
  })
  after(async () => {
    await visitor?.close()
    await browser?.close()
    await s?.close()
  })

  it('sends the chosen file with the submission; the owner sees it as a download link and gets its bytes as an attachment', async () => {
    const u = await s.user()
    const slug = `jobs-${u.username}`.slice(0, 60)
    const f = await s.post('/svc_api/forms/create', {
      key: u.key,
      json: {
        form_name: 'Jobs',
        form_slug: slug,
        fields_config: [
          { name: 'name', type: 'text', required: true },
          { name: 'resume', type: 'file', required: true },
        ],
      },
    })
    assert.equal(f.status, 200, f.text)
    const files = [
      { filename: 'index.html', data: INDEX.replaceAll('FORM', slug) },
      { filename: 'thanks/index.html', data: THANKS },
    ]
    assert.equal((await batchUpload(s, { key: u.key }, 'jobs', files)).status, 200)
    assert.equal((await s.post('/api/folders/jobs/publish', { key: u.key })).status, 200)

    // the visitor applies on the site
    const origin = `http://jobs.${u.username}.localhost:${new URL(s.httpUrl).port}`
    const page = await visitor.newPage()
    try {
      await page.goto(`${origin}/`)
      await page.getByLabel('Name').fill('Dana')
      await page.getByLabel('Resume').setInputFiles({ name: 'dana-cv.html', mimeType: 'text/html', buffer: Buffer.from(RESUME) })
      await Promise.all([page.waitForURL(`${origin}/thanks/`), page.getByRole('button', { name: 'Apply' }).click()])
      assert.equal(await page.locator('#done').textContent(), 'Thanks!')
    } finally {
      await page.close()
    }
    const data = await s.get(`/svc_api/forms/data/${f.json.data.id}`, { key: u.key })
    const sub = data.json.data.submissions[0]
    assert.deepEqual(sub.data, { name: 'Dana' })
    assert.equal(sub.files.length, 1)
    assert.equal(sub.files[0].filename, 'dana-cv.html')
    // read from the bytes: text, never the text/html the browser named
    assert.equal(sub.files[0].content_type, 'text/plain')

    // the owner, signed in, finds it in the dashboard and downloads it
    const cookie = await s.login(u.username, u.password)
    const owner = await browser.newContext({ ignoreHTTPSErrors: true, locale: 'en-US', acceptDownloads: true })
    await owner.addCookies(sessionCookiesFor(cookie, s.url))
    const dash = await owner.newPage()
    const problems = watchErrors(dash)
    try {
      await dash.goto(`${s.url}/dashboard/forms`)
      await dash.locator('#forms-table tr', { hasText: 'Jobs' }).getByRole('button', { name: 'Submissions Jobs', exact: true }).click()
      await dash.waitForSelector('#subs:not([hidden])')
      const link = dash.locator('#subs-table tbody a.file')
      await link.waitFor()
      assert.match((await link.textContent()) ?? '', /^dana-cv\.html \(\d+ B\)$/)
      const [download] = await Promise.all([dash.waitForEvent('download'), link.click()])
      assert.equal(download.suggestedFilename(), 'dana-cv.html')
      assert.equal(await fs.readFile(await download.path(), 'utf8'), RESUME)
      // opened by its URL, it is a download too, never a page that runs
      const direct = await owner.newPage()
      try {
        const [again] = await Promise.all([direct.waitForEvent('download'), direct.goto(sub.files[0].url).catch(() => null)])
        assert.equal(again.suggestedFilename(), 'dana-cv.html')
        assert.notEqual(await direct.title(), 'ran')
      } finally {
        await direct.close()
      }
      assert.deepEqual(problems, [])
    } finally {
      await owner.close()
    }
  })
})
