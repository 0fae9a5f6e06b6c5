import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { openContext } from '../support/browser.js'
import type { BrowserContext } from 'playwright-core'

// A site made for Netlify, deployed as it is: its form posts to the site's own thank-you
// page, and the visitor lands there with the submission stored (decision 161). The HTTP
// suite (test/http/forms-site-post.test.ts) covers both engines and origins.
const engine = ENGINES[0]

const INDEX = `<!doctype html><html><head><meta charset="utf-8"><title>contact</title></head><body>
<form name="contact" method="POST" data-netlify="true" netlify-honeypot="bot-field" action="/thanks/">
  <input type="hidden" name="form-name" value="FORM">
  <p hidden><input name="bot-field"></p>
  <label>Name <input name="name"></label>
  <label>Message <textarea name="message"></textarea></label>
  <button type="submit">Send</button>
</form></body></html>`
/** The site's thank-you page, where the form's action lands. */
const THANKS: Array<{ filename: string; data: string }> = [
  { filename: 'thanks/index.html', data: '<!doctype html><title>thanks</title><p id="done">Thanks!</p>' },
]

describe(`a Netlify form on a deployed site, in Chromium [${engine}]`, () => {
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

  /**
   * A user's form and a project of `files` (INDEX with the form's slug, `edit`ed) published;
   * a visitor fills in Name and Message on its home page and sends it, landing on /thanks/.
   * The submissions the owner then reads.
   */
  async function submitThroughSite(project: string, name: string, message: string, edit = (html: string) => html, extra: typeof THANKS = []) {
    const u = await s.user()
    const slug = `${project}-${u.username}`.slice(0, 60)
    const f = await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: project, form_slug: slug } })
    assert.equal(f.status, 200, f.text)
    const files = [{ filename: 'index.html', data: edit(INDEX.replace('FORM', slug)) }, ...THANKS, ...extra]
    assert.equal((await batchUpload(s, { key: u.key }, project, files)).status, 200)
    assert.equal((await s.post(`/api/folders/${project}/publish`, { key: u.key })).status, 200)

    const origin = `http://${project}.${u.username}.localhost:${new URL(s.httpUrl).port}`
    const page = await context.newPage()
    try {
      await page.goto(`${origin}/`)
      await page.getByLabel('Name').fill(name)
      await page.getByLabel('Message').fill(message)
      await Promise.all([page.waitForURL(`${origin}/thanks/`), page.getByRole('button', { name: 'Send' }).click()])
      assert.equal(await page.locator('#done').textContent(), 'Thanks!')
    } finally {
      await page.close()
    }
    const data = await s.get(`/svc_api/forms/data/${f.json.data.id}`, { key: u.key })
    assert.equal(data.status, 200, data.text)
    return data.json.data.submissions as Array<{ data: unknown; is_spam: boolean }>
  }

  it('submits the form and lands on the thank-you path; the owner reads the submission', async () => {
    const subs = await submitThroughSite('site', 'Dana 王', 'Hello from a Netlify form')
    assert.equal(subs.length, 1)
    assert.deepEqual(subs[0].data, { name: 'Dana 王', message: 'Hello from a Netlify form' })
    assert.equal(subs[0].is_spam, false)
  })

  it("follows the site's 308 for a form action it moved: the post reaches the new path and is stored (decision 201)", async () => {
    const moved = (html: string) => html.replace('action="/thanks/"', 'action="/old-thanks"')
    const subs = await submitThroughSite('moved', 'Finn', 'Posted to the old path', moved, [{ filename: '_redirects', data: '/old-thanks /thanks/ 308\n' }])
    assert.deepEqual(
      subs.map((x) => x.data),
      [{ name: 'Finn', message: 'Posted to the old path' }],
    )
  })

  it("takes the same form on the path form (no users' origins): a relative action lands under /{username}/", async () => {
    // without a content domain, a browser stays on the path form, where pages are sandboxed
    const p = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, CONTENT_DOMAIN: 'off' } })
    try {
      const u = await p.user()
      const slug = `contact-${u.username}`.slice(0, 60)
      const f = await p.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Contact', form_slug: slug } })
      assert.equal(f.status, 200, f.text)
      // the path form's pages are sandboxed: they post as "null", with no Referer
      const listed = await p.request('PUT', `/svc_api/forms/update/${f.json.data.id}`, { key: u.key, json: { allowed_origins: ['null'] } })
      assert.equal(listed.status, 200, listed.text)
      const files = [
        { filename: 'index.html', data: INDEX.replace('FORM', slug).replace('action="/thanks/"', 'action="thanks/"') },
        { filename: 'thanks/index.html', data: '<!doctype html><title>thanks</title><p id="done">Thanks!</p>' },
      ]
      assert.equal((await batchUpload(p, { key: u.key }, 'site', files)).status, 200)
      assert.equal((await p.post('/api/folders/site/publish', { key: u.key })).status, 200)

      const base = `${p.url}/${u.username}/site/`
      const page = await context.newPage()
      try {
        await page.goto(base)
        assert.equal(page.url(), base)
        await page.getByLabel('Name').fill('Eve')
        await page.getByLabel('Message').fill('From the path form')
        await Promise.all([page.waitForURL(`${base}thanks/`), page.getByRole('button', { name: 'Send' }).click()])
        assert.equal(await page.locator('#done').textContent(), 'Thanks!')
      } finally {
        await page.close()
      }
      const data = await p.get(`/svc_api/forms/data/${f.json.data.id}`, { key: u.key })
      assert.equal(data.status, 200, data.text)
      assert.deepEqual(
        data.json.data.submissions.map((x: { data: unknown }) => x.data),
        [{ name: 'Eve', message: 'From the path form' }],
      )
    } finally {
      await p.close()
    }
  })

  it('a form whose action page is missing lands on the 404 page, one without method="post" on a page saying so; nothing stored', async () => {
    const u = await s.user()
    const slug = `lost-${u.username}`.slice(0, 60)
    const f = await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Lost', form_slug: slug } })
    assert.equal(f.status, 200, f.text)
    // the action page was never uploaded (decision 204); the second form forgot method="post"
    const page0 = `<!doctype html><html><head><meta charset="utf-8"><title>contact</title></head><body>
<form name="contact" method="POST" data-netlify="true" action="/thanks/">
  <input type="hidden" name="form-name" value="${slug}"><label>Name <input name="name"></label><button type="submit">Send</button>
</form>
<form action="${f.json.data.submit_url}"><label>Email <input name="email"></label><button type="submit">Subscribe</button></form></body></html>`
    assert.equal((await batchUpload(s, { key: u.key }, 'site', [{ filename: 'index.html', data: page0 }])).status, 200)
    assert.equal((await s.post('/api/folders/site/publish', { key: u.key })).status, 200)
    const origin = `http://site.${u.username}.localhost:${new URL(s.httpUrl).port}`
    const page = await context.newPage()
    try {
      await page.goto(`${origin}/`)
      await page.getByLabel('Name').fill('Dana')
      await Promise.all([page.waitForURL(`${origin}/thanks/`), page.getByRole('button', { name: 'Send' }).click()])
      assert.match((await page.locator('h1').textContent()) ?? '', /404/)
      assert.doesNotMatch(await page.content(), /Method Not Allowed/)
      await page.goto(`${origin}/`)
      await page.getByLabel('Email').fill('dana@example.com')
      await Promise.all([page.waitForURL(/\/api\/forms\/submit\/.*\?email=/), page.getByRole('button', { name: 'Subscribe' }).click()])
      assert.equal(await page.locator('h1').textContent(), 'Not sent')
      assert.match((await page.locator('body').textContent()) ?? '', /add method="post" to its <form> tag/)
    } finally {
      await page.close()
    }
    assert.equal((await s.get(`/svc_api/forms/data/${f.json.data.id}`, { key: u.key })).json.data.total, 0)
  })
})
