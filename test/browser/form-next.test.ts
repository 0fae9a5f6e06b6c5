import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { openContext } from '../support/browser.js'
import type { BrowserContext } from 'playwright-core'

// A Formspree-style form on a page below / of a user's origin, posting to the form endpoint
// (another origin) with a relative _next: the browser cuts the post's Referer to the site's
// origin, so the endpoint cannot resolve it against the page; the deploy says so and names
// the _next that lands next to the page (decision 321).
const engine = ENGINES[0]

const page = (action: string, next: string) => `<!doctype html><html><head><meta charset="utf-8"><title>contact</title></head><body>
<form id="contact" method="post" action="${action}">
  <input type="hidden" name="_next" value="${next}">
  <label>Name <input name="name"></label>
  <button type="submit">Send</button>
</form></body></html>`
const THANKS = { filename: 'thanks.html', data: '<!doctype html><title>thanks</title><p id="done">Thanks!</p>' }

describe(`a relative _next on a form posting to the form endpoint, in Chromium [${engine}]`, () => {
  let s: TestServer
  let context: BrowserContext
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    context = await openContext({ locale: 'en-US' })
  })
  after(async () => {
    await context?.close()
    await s?.close()
  })

  it('the deploy warns of it, naming where it lands and the _next from the root; with that _next the visitor lands next to the page', async () => {
    const u = await s.user()
    const f = await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Contact', form_slug: `next-${u.username}`.slice(0, 60) } })
    assert.equal(f.status, 200, f.text)
    const submitUrl: string = f.json.data.submit_url
    const up = await batchUpload(s, { key: u.key }, 'site', [{ filename: 'index.html', data: page(submitUrl, 'thanks.html') }, THANKS], undefined, {
      'accept-language': 'en',
    })
    assert.equal(up.status, 200, up.text)
    const warnings = up.json.warnings as Array<{ path: string; message: string }>
    const w = warnings.find((x) => x.path === 'index.html' && x.message.includes('_next'))
    assert.ok(w, JSON.stringify(warnings))
    assert.ok(w.message.includes('lands on "/thanks.html"'), w.message)
    const fix = /Write _next from the root \("([^"]+)"/.exec(w.message)?.[1]
    assert.equal(fix, '/site/thanks.html', w.message)
    // in Chinese too (the caller's language)
    const zh = await batchUpload(s, { key: u.key }, 'site', [{ filename: 'index.html', data: page(submitUrl, 'thanks.html?zh=1') }], true, {
      'accept-language': 'zh-CN',
    })
    assert.equal(zh.status, 200, zh.text)
    assert.ok(
      (zh.json.warnings as Array<{ message: string }>).some((x) => x.message.includes('"/site/thanks.html?zh=1"') && x.message.includes('从根开始的路径')),
      zh.text,
    )
    assert.equal((await s.post('/api/folders/site/publish', { key: u.key })).status, 200)
    const origin = `http://${u.username}.localhost:${new URL(s.httpUrl).port}`

    const send = async (name: string) => {
      const tab = await context.newPage()
      try {
        await tab.goto(`${origin}/site/`)
        await tab.getByLabel('Name').fill(name)
        const [answer] = await Promise.all([tab.waitForNavigation(), tab.getByRole('button', { name: 'Send' }).click()])
        return { url: tab.url(), status: answer?.status(), done: await tab.locator('#done').count() }
      } finally {
        await tab.close()
      }
    }
    // as written, the browser lands at the root: the warning was right
    const asWritten = await send('Ann')
    assert.equal(asWritten.url, `${origin}/thanks.html?zh=1`)
    assert.equal(asWritten.status, 404)

    // the page with the warning's _next lands on the thank-you page next to it, and warns no more
    const fixed = await batchUpload(s, { key: u.key }, 'site', [{ filename: 'index.html', data: page(submitUrl, fix) }], true)
    assert.equal(fixed.status, 200, fixed.text)
    assert.deepEqual(fixed.json.warnings, [])
    assert.equal((await s.post('/api/folders/site/publish', { key: u.key })).status, 200)
    const landed = await send('Bea')
    assert.equal(landed.url, `${origin}/site/thanks.html`)
    assert.equal(landed.done, 1)

    const data = await s.get(`/svc_api/forms/data/${f.json.data.id}`, { key: u.key })
    assert.deepEqual(
      data.json.data.submissions.map((x: { data: unknown }) => x.data),
      [{ name: 'Bea' }, { name: 'Ann' }],
    )
  })
})
