import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import https from 'node:https'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import type { BrowserContext } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { openContext } from '../support/browser.js'
import { batchUpload } from '../support/hosting.js'

const HIGH = JSON.stringify(
  Object.fromEntries(['default', 'authenticated', 'vip'].map((t) => [t, { minute: 100000, hour: 100000, day: 100000, concurrent: 200 }])),
)
/** The sandbox hosted pages get: scripts and forms run in an opaque origin (Origin: null). */
const PAGE_CSP = 'sandbox allow-scripts allow-forms'

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')

/** A hosted-like page: a fetch() helper and two plain <form> posts (form-encoded and multipart). */
function pageHtml(action: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>contact</title></head><body>
<form id="plain" method="post" action="${esc(action)}">
  <input name="name" value="表单 Plain ✓"><input name="email" value="plain@example.com">
  <input type="hidden" name="_ts" class="ts"><input name="_gotcha" value="" style="display:none">
  <button id="send-plain" type="submit">send</button>
</form>
<form id="multi" method="post" enctype="multipart/form-data" action="${esc(action)}">
  <input name="name" value="Multipart ünï"><input name="email" value="multi@example.com">
  <input type="hidden" name="_ts" class="ts">
  <button id="send-multi" type="submit">send</button>
</form>
<script>
for (const el of document.querySelectorAll('.ts')) el.value = String(Date.now())
window.probe = () => {
  let cookie
  try { cookie = document.cookie } catch (e) { cookie = 'blocked:' + e.name }
  return { origin: self.origin, cookie }
}
window.sendFetch = async (url, body) => {
  try {
    const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
    // a readable answer means the service sent a matching Access-Control-Allow-Origin
    return { status: r.status, body: await r.json() }
  } catch (e) {
    return { error: String(e) }
  }
}
</script></body></html>`
}

/** A tiny HTTPS server on loopback standing in for the public host of user pages. */
async function startPageServer(dataDir: string, html: () => string) {
  const server = https.createServer(
    {
      cert: fs.readFileSync(path.join(dataDir, 'tls-cert.pem')),
      key: fs.readFileSync(path.join(dataDir, 'tls-key.pem')),
    },
    (req, res) => {
      if (req.url === '/page.html' || req.url === '/open.html') {
        // page.html is sandboxed like a hosted page; open.html is an ordinary page of a web origin
        const csp = req.url === '/page.html' ? { 'content-security-policy': PAGE_CSP } : {}
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'x-content-type-options': 'nosniff', ...csp })
        res.end(html())
      } else if (req.url?.startsWith('/thanks.html')) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        res.end('<!doctype html><title>thanks</title><p id="done">thanks</p>')
      } else {
        res.writeHead(404).end()
      }
    },
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { origin, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

describe('forms in a real browser (chromium)', () => {
  let context: BrowserContext
  before(async () => {
    context = await openContext()
  })
  after(async () => {
    await context?.close()
  })

  for (const engine of ENGINES) {
    describe(`[${engine}]`, () => {
      let s: TestServer
      let pages: Awaited<ReturnType<typeof startPageServer>>
      let html = ''
      before(async () => {
        s = await startServer({ engine, env: { RATE_LIMITS: HIGH } })
        pages = await startPageServer(s.dataDir, () => html)
      })
      after(async () => {
        await pages?.close()
        await s?.close()
      })

      it('a sandboxed page submits by fetch and by plain form posts with redirect; the owner sees them', async () => {
        const owner = await s.user()
        const mk = async (body: Record<string, unknown>) => {
          const r = await s.post('/svc_api/forms/create', {
            key: owner.key,
            json: {
              form_name: 'Contact 联系',
              fields_config: [
                { name: 'name', required: true },
                { name: 'email', type: 'email', required: true },
              ],
              ...body,
            },
          })
          assert.equal(r.status, 200, r.text)
          return r.json.data as { id: string; submit_url: string }
        }
        // what a hosted page needs: the literal "null" origin of sandboxed pages
        const nullForm = await mk({ allowed_origins: ['null'], redirect_url: `${pages.origin}/thanks.html?sent=1` })
        // only the page server's web origin: Chromium sends no Referer from a sandboxed page, so
        // the sandboxed page is refused here while an ordinary page of that origin is accepted
        const originForm = await mk({ allowed_origins: [pages.origin] })
        const foreign = await mk({ allowed_origins: ['https://elsewhere.example'] })
        html = pageHtml(nullForm.submit_url)

        const page = await context.newPage()
        try {
          await page.goto(`${pages.origin}/page.html`)
          const probe = await page.evaluate(() => (window as any).probe())
          assert.equal(probe.origin, 'null', 'the page runs in an opaque origin')
          assert.match(probe.cookie, /^blocked:/)
          const send = (url: string, body: unknown) => page.evaluate(([u, b]) => (window as any).sendFetch(u, b), [url, body] as const)

          const ok = await send(nullForm.submit_url, { name: 'Fetch 🌸 王', email: 'fetch@example.com', _ts: Date.now() })
          assert.equal(ok.status, 200, JSON.stringify(ok))
          assert.equal(ok.body.success, true)
          assert.match(ok.body.data.submission_id, /^[0-9a-f-]{36}$/)
          const bad = await send(nullForm.submit_url, { name: 'x', email: 'bad' })
          assert.equal(bad.status, 400, 'a 1614 error is readable by the page')
          assert.equal(bad.body.error_code, 1614)
          assert.equal(bad.body.field, 'email')
          for (const f of [originForm, foreign]) {
            const refused = await send(f.submit_url, { name: 'x', email: 'x@example.com' })
            assert.ok(refused.error, `an unlisted origin cannot submit: ${JSON.stringify(refused)}`)
          }

          await Promise.all([page.waitForURL(`${pages.origin}/thanks.html?sent=1`), page.click('#send-plain')])
          assert.equal(await page.textContent('#done'), 'thanks')
          await page.goto(`${pages.origin}/page.html`)
          await Promise.all([page.waitForURL(`${pages.origin}/thanks.html?sent=1`), page.click('#send-multi')])

          // an ordinary (unsandboxed) page of a listed web origin is accepted through its Origin
          await page.goto(`${pages.origin}/open.html`)
          const open = await send(originForm.submit_url, { name: 'Open page', email: 'open@example.com' })
          assert.equal(open.status, 200, JSON.stringify(open))
        } finally {
          await page.close()
        }

        const seen = await s.get(`/svc_api/forms/data/${nullForm.id}`, { key: owner.key })
        assert.equal(seen.status, 200)
        assert.equal(seen.json.data.total, 3)
        const [multi, plain, fetched] = seen.json.data.submissions
        assert.deepEqual(fetched.data, { name: 'Fetch 🌸 王', email: 'fetch@example.com' })
        assert.deepEqual(plain.data, { name: '表单 Plain ✓', email: 'plain@example.com' })
        assert.deepEqual(multi.data, { name: 'Multipart ünï', email: 'multi@example.com' })
        for (const x of [multi, plain, fetched]) {
          assert.equal(x.is_spam, false)
          assert.equal(x.is_read, false)
          assert.match(x.user_agent, /Chrome/)
          assert.equal(x.ip_prefix, '127.0.0.0/24')
        }
        const viaOrigin = await s.get(`/svc_api/forms/data/${originForm.id}`, { key: owner.key })
        assert.deepEqual(
          viaOrigin.json.data.submissions.map((x: any) => x.data.name),
          ['Open page'],
        )
        assert.equal((await s.get(`/svc_api/forms/data/${foreign.id}`, { key: owner.key })).json.data.total, 0)
        const list = await s.get('/svc_api/forms/list', { key: owner.key })
        assert.equal(list.json.data.quota.submissions_month.used, 4)
      })

      it('a form copied from Formspree: _replyto and a topics[] group are kept, _next brings the visitor back, the AJAX flow gets JSON', async () => {
        const owner = await s.user()
        const r = await s.post('/svc_api/forms/create', { key: owner.key, json: { form_name: 'Formspree copy' } })
        assert.equal(r.status, 200, r.text)
        const form = r.json.data as { id: string; submit_url: string }
        // Formspree's own markup and script, as its documentation gives them
        html = `<!doctype html><html><head><meta charset="utf-8"><title>contact</title></head><body>
<form id="fs" method="POST" action="${esc(form.submit_url)}">
  <input type="email" name="_replyto" value="visitor@example.com">
  <textarea name="message">Hello 👋</textarea>
  <label><input type="checkbox" name="topics[]" value="news" checked> news</label>
  <label><input type="checkbox" name="topics[]" value="offers"> offers</label>
  <input type="hidden" name="_subject" value="New message">
  <input type="hidden" name="_next" value="${esc(pages.origin)}/thanks.html?via=next">
  <input type="text" name="_gotcha" style="display:none">
  <button id="send" type="submit">Send</button>
</form>
<script>
window.ajax = async () => {
  const f = document.getElementById('fs')
  const r = await fetch(f.action, { method: f.method, body: new FormData(f), headers: { Accept: 'application/json' } })
  return { status: r.status, body: await r.json() }
}
</script></body></html>`
        const page = await context.newPage()
        try {
          await page.goto(`${pages.origin}/open.html`)
          const ajax = await page.evaluate(() => (window as any).ajax())
          assert.equal(ajax.status, 200, JSON.stringify(ajax))
          assert.equal(ajax.body.success, true)
          assert.equal(page.url(), `${pages.origin}/open.html`, 'the AJAX flow stays on the page')
          // without script: the browser posts and lands on the page _next names, on the same site
          await Promise.all([page.waitForURL(`${pages.origin}/thanks.html?via=next`), page.click('#send')])
          assert.equal(await page.textContent('#done'), 'thanks')
        } finally {
          await page.close()
        }
        const seen = await s.get(`/svc_api/forms/data/${form.id}`, { key: owner.key })
        assert.deepEqual(
          seen.json.data.submissions.map((x: any) => x.data),
          [0, 1].map(() => ({ _replyto: 'visitor@example.com', message: 'Hello 👋', topics: ['news'] })),
        )
      })

      it('a multipart form with <select multiple>, a CAPTCHA token and a file input: the file is refused on a page naming it, the rest kept (decision 253)', async () => {
        const owner = await s.user()
        const fields_config = [{ name: 'name' }, { name: 'note' }, { name: 'colors', type: 'checkbox', options: ['red', 'green', 'blue'] }]
        const r = await s.post('/svc_api/forms/create', { key: owner.key, json: { form_name: 'multi', fields_config } })
        assert.equal(r.status, 200, r.text)
        const form = r.json.data as { id: string; submit_url: string }
        html = `<!doctype html><html><head><meta charset="utf-8"><title>contact</title></head><body>
<form id="f" method="post" enctype="multipart/form-data" action="${esc(form.submit_url)}">
  <input name="name" value="Zoë 🌸"><input name="note" value="">
  <select name="colors" multiple><option selected>red</option><option>green</option><option selected>blue</option></select>
  <textarea name="g-recaptcha-response" style="display:none">03AFcWeA-token</textarea>
  <input id="cv" type="file" name="cv">
  <button id="send" type="submit">Send</button>
</form></body></html>`
        const page = await context.newPage()
        try {
          await page.goto(`${pages.origin}/open.html`, { waitUntil: 'load' })
          await page.setInputFiles('#cv', { name: 'cv.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.4') })
          const [refused] = await Promise.all([page.waitForNavigation(), page.click('#send')])
          assert.equal(refused?.status(), 400)
          assert.match((await page.textContent('body')) ?? '', /cv/)
          assert.equal((await s.get(`/svc_api/forms/data/${form.id}`, { key: owner.key })).json.data.total, 0)
          // the same form without a file chosen: stored, the token left out
          await page.goto(`${pages.origin}/open.html`, { waitUntil: 'load' })
          const [sent] = await Promise.all([page.waitForNavigation(), page.click('#send')])
          assert.equal(sent?.status(), 200)
        } finally {
          await page.close()
        }
        const seen = await s.get(`/svc_api/forms/data/${form.id}`, { key: owner.key })
        assert.deepEqual(
          seen.json.data.submissions.map((x: any) => x.data),
          [{ name: 'Zoë 🌸', colors: ['red', 'blue'] }],
        )
      })

      it('a form in an iframe (a widget on a blog) shows the thank-you page in its frame', async () => {
        const owner = await s.user()
        const r = await s.post('/svc_api/forms/create', { key: owner.key, json: { form_name: 'widget', fields_config: [{ name: 'message', required: true }] } })
        assert.equal(r.status, 200, r.text)
        const form = r.json.data as { id: string; submit_url: string }
        const widget = (message: string) =>
          `<!doctype html><meta charset="utf-8"><form method="post" action="${esc(form.submit_url)}"><input name="message" value="${message}"><button id="send">Send</button></form>`
        html = `<!doctype html><meta charset="utf-8"><title>blog</title><h1>blog</h1><iframe id="w" srcdoc="${esc(widget('from the widget'))}"></iframe>`
        const page = await context.newPage()
        try {
          await page.goto(`${pages.origin}/open.html`)
          const frame = () => page.frames().find((f) => f !== page.mainFrame())!
          await Promise.all([frame().waitForURL(form.submit_url), frame().click('#send')])
          assert.equal(await frame().textContent('h1'), 'Thank you')
          // a refused post shows its reason there too
          html = html.replace('from the widget', '')
          await page.reload()
          await Promise.all([frame().waitForURL(form.submit_url), frame().click('#send')])
          assert.equal(await frame().textContent('h1'), 'Not sent')
        } finally {
          await page.close()
        }
        assert.equal((await s.get(`/svc_api/forms/data/${form.id}`, { key: owner.key })).json.data.total, 1)
      })

      it("the thank-you page's Back returns to the form's page on a user's origin, whose Referer names only the origin (decision 157)", async () => {
        const owner = await s.user()
        const r = await s.post('/svc_api/forms/create', { key: owner.key, json: { form_name: 'contact' } })
        assert.equal(r.status, 200, r.text)
        const form = r.json.data as { submit_url: string }
        // a project page under /{project}/ of the user's origin: a cross-origin post sends
        // `Referer: http://{user}.localhost:{port}/` (strict-origin-when-cross-origin), and that
        // origin's root is not a site
        const contact = `<!doctype html><meta charset="utf-8"><title>contact</title>
<form method="post" action="${esc(form.submit_url)}"><input name="message" value="hi"><button id="send">Send</button></form>`
        const up = await batchUpload(s, { key: owner.key }, 'site', [
          { filename: 'index.html', data: '<!doctype html><title>home</title>' },
          { filename: 'contact/index.html', data: contact },
        ])
        assert.equal(up.status, 200, up.text)
        assert.equal((await s.post('/api/folders/site/publish', { key: owner.key })).status, 200)
        const start = `http://${owner.username}.localhost:${new URL(s.httpUrl).port}/site/contact/`
        const page = await context.newPage()
        try {
          await page.goto(start)
          await Promise.all([page.waitForURL(form.submit_url), page.click('#send')])
          await page.getByRole('link').click()
          await page.waitForURL(start)
          assert.equal(await page.title(), 'contact')
        } finally {
          await page.close()
        }
      })
    })
  }
})
