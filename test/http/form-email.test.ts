import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, multipart, startServer, type TestServer } from '../support/server.js'
import { decodeQp, smtpSink } from '../support/smtp.js'
import { webhookReceiver } from '../support/webhooks.js'
import { expectError } from '../support/errors.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { SkipClock } from '../support/clock.js'

async function until(check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 25))
  }
}

const engine = ENGINES[0]

describe(`form e-mail notifications [${engine}]`, () => {
  let s: TestServer
  let smtp: Awaited<ReturnType<typeof smtpSink>>
  before(async () => {
    smtp = await smtpSink()
    s = await startServer({ engine, env: { SMTP_URL: smtp.url, SMTP_FROM: 'svc <svc@localhost>', NOTIFY_POLL: '20ms' } })
  })
  after(async () => {
    await s.close()
    await smtp.close()
  })

  it('verifies the address, then mails each submission with its fields escaped; spam sends nothing', async () => {
    const u = await s.user()
    const add = await s.post('/svc_api/notify/addresses', { key: u.key, json: { address: 'Owner@Example.com' } })
    assert.equal(add.status, 200, add.text)
    assert.equal(add.json.data.verified, false)
    await until(() => smtp.mails.length === 1)
    assert.deepEqual(smtp.mails[0].to, ['owner@example.com'])
    const token = /verify\?token=([A-Za-z0-9]{40})/.exec(decodeQp(smtp.mails[0].raw))?.[1]
    assert.ok(token, smtp.mails[0].raw)

    const form = (await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Contact <us>' } })).json.data
    // an unverified address gets nothing: e-mail can be switched on, but has no recipient yet
    const on = await s.request('PUT', `/svc_api/forms/email/${form.id}`, { key: u.key, json: { enabled: true } })
    assert.equal(on.status, 200, on.text)
    assert.deepEqual(on.json.data.recipients, [])
    // opening the link changes nothing (mail scanners open every link): it says what it confirms
    for (let i = 0; i < 2; i++) {
      const look = await s.get(`/svc_api/notify/verify?token=${token}`)
      assert.equal(look.status, 200, look.text)
      assert.deepEqual(look.json.data, { address: 'owner@example.com', verified: false })
    }
    assert.deepEqual((await s.get(`/svc_api/forms/email/${form.id}`, { key: u.key })).json.data.recipients, [])
    assert.equal((await s.post('/svc_api/notify/verify', { json: { token: 'x'.repeat(40) } })).json.error_code, 1426)
    assert.equal((await s.post('/svc_api/notify/verify', { json: { token } })).json.data.verified, true)
    assert.equal((await s.post('/svc_api/notify/verify', { json: { token } })).json.error_code, 1426)
    assert.equal((await s.get(`/svc_api/notify/verify?token=${token}`)).json.error_code, 1426)
    assert.deepEqual((await s.get(`/svc_api/forms/email/${form.id}`, { key: u.key })).json.data.recipients, ['owner@example.com'])
    // the mail's link opened in a browser: the service's short page in its language, not JSON
    const navigate = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-mode': 'navigate', 'accept-language': 'en-US,en;q=0.9' }
    const used = await s.get(`/svc_api/notify/verify?token=${token}`, { headers: navigate })
    assert.equal(used.status, 400)
    assert.match(String(used.header('content-type')), /^text\/html/)
    assert.match(used.text, /<h1>Not verified<\/h1>/)
    assert.match(String(used.header('content-security-policy')), /frame-ancestors 'none'/)
    assert.doesNotMatch(used.text, /"success"|[\u4e00-\u9fff]/, 'no JSON, no Chinese for an English browser')

    await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'spam', _gotcha: 'x' } })
    const sub = await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: '<script>alert(1)</script>', note: 'a & b "q"' } })
    assert.equal(sub.status, 200)
    await until(() => smtp.mails.length === 2)
    await new Promise((r) => setTimeout(r, 300))
    assert.equal(smtp.mails.length, 2, 'the spam submission sent no mail')
    const mail = decodeQp(smtp.mails[1].raw)
    assert.deepEqual(smtp.mails[1].to, ['owner@example.com'])
    assert.match(mail, /Subject: New submission to Contact <us>/)
    assert.ok(mail.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), mail)
    assert.ok(mail.includes('a &amp; b &quot;q&quot;'), mail)
    assert.ok(!/<td><script>/.test(mail))
    const log = (await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key })).json.data
    assert.equal(log.length, 1)
    assert.equal(log[0].kind, 'email')
    assert.equal(log[0].status, 'delivered')
    assert.equal(log[0].submission_id, sub.json.data.submission_id)
  })

  it('mails an address at most once per 10 minutes, and never a link to a host it was told', async () => {
    const u = await s.user()
    const before = smtp.mails.length
    assert.equal((await s.post('/svc_api/notify/addresses', { key: u.key, json: { address: 'once@example.com' } })).status, 200)
    await until(() => smtp.mails.length === before + 1)
    const again = await s.post('/svc_api/notify/addresses', { key: u.key, json: { address: 'once@example.com' }, headers: { 'accept-language': 'en' } })
    expectError(again, 429, 1430)
    assert.ok(Number(again.header('retry-after')) > 500, again.header('retry-after'))
    // another user asking for the same stranger's address waits too
    const other = await s.user()
    expectError(await s.post('/svc_api/notify/addresses', { key: other.key, json: { address: 'once@example.com' } }), 429, 1430)
    // without PUBLIC_URL, a Host that is not loopback cannot be where the link points
    const forged = await s.post('/svc_api/notify/addresses', { key: u.key, json: { address: 'victim@example.com' }, headers: { host: 'evil.test' } })
    expectError(forged, 409, 1431)
    await new Promise((r) => setTimeout(r, 200))
    assert.equal(smtp.mails.length, before + 1, 'one mail in all')
  })

  it('a verification mail the server refuses: 502 / 1429, wholly Chinese by default, English on request', async () => {
    const u = await s.user()
    const send = async (address: string, headers: Record<string, string>) => {
      smtp.state.failNext = 1
      const r = await s.post('/svc_api/notify/addresses', { key: u.key, json: { address }, headers })
      assert.equal(smtp.state.failNext, 0, 'the refusal went to this mail')
      return r
    }
    const zh = await send('refused-zh@example.com', {})
    expectError(zh, 502, 1429)
    assert.equal(zh.json.message, '邮件发送失败：邮件服务器拒绝了邮件（响应码 451）')
    assert.doesNotMatch(zh.json.message, /[A-Za-z]{4,}/)
    const en = await send('refused-en@example.com', { 'accept-language': 'en' })
    expectError(en, 502, 1429)
    assert.equal(en.json.message, 'Sending the mail failed: Message failed: 451 try again later')
  })

  describe('refuses a bad address', () => {
    let u: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      u = await s.user()
    })
    for (const address of ['nope', 'a@b@c', 'x@-bad-.com', '']) {
      it(`${JSON.stringify(address)}: 400 / 1424`, async () => {
        expectError(await s.post('/svc_api/notify/addresses', { key: u.key, json: { address } }), 400, 1424)
      })
    }
    it('after them all, no address is stored', async () => {
      assert.deepEqual((await s.get('/svc_api/notify/addresses', { key: u.key })).json.data, [])
    })
  })
})

for (const engine of ENGINES) {
  describe(`form e-mail: digest and SMTP retry [${engine}]`, () => {
    let s: TestServer
    let smtp: Awaited<ReturnType<typeof smtpSink>>
    // the digests' periods end when a test moves this clock, not after real seconds
    const clock = new SkipClock()
    before(async () => {
      smtp = await smtpSink()
      s = await startServer({
        engine,
        clock,
        env: {
          SMTP_URL: smtp.url,
          SMTP_FROM: 'svc <svc@localhost>',
          NOTIFY_POLL: '20ms',
          NOTIFY_RETRY_BASE: '50ms',
          NOTIFY_DIGEST_EVERY: '3s',
          SMTP_TIMEOUT: '2s',
          // the anonymous verify links and submissions of every test here, within a minute
          RATE_LIMITS: HIGH_LIMITS,
        },
      })
    })
    after(async () => {
      await s.close()
      await smtp.close()
    })

    /** A user with one verified address, and a form with e-mail in `mode`. */
    async function owner(address: string, mode: 'each' | 'digest') {
      const u = await s.user()
      const seen = smtp.mails.length
      assert.equal((await s.post('/svc_api/notify/addresses', { key: u.key, json: { address } })).status, 200)
      // the verification mail to this address (an earlier test's deliveries may arrive meanwhile)
      const verification = () => smtp.mails.slice(seen).find((m) => m.to.includes(address) && decodeQp(m.raw).includes('verify?token='))
      await until(() => verification() !== undefined)
      const token = /verify\?token=([A-Za-z0-9]{40})/.exec(decodeQp(verification()!.raw))?.[1]
      assert.ok(token)
      const verified = await s.post('/svc_api/notify/verify', { json: { token } })
      assert.equal(verified.json.data?.verified, true, verified.text)
      const form = (await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: `Form ${mode}` } })).json.data
      const on = await s.request('PUT', `/svc_api/forms/email/${form.id}`, { key: u.key, json: { enabled: true, mode } })
      assert.equal(on.status, 200, on.text)
      assert.equal(on.json.data.mode, mode)
      assert.deepEqual(on.json.data.recipients, [address])
      return { u, form: form as { id: string; form_slug: string } }
    }
    const mailsTo = (a: string) => smtp.mails.filter((m) => m.to.includes(a) && !decodeQp(m.raw).includes('verify?token='))

    it('a digest sends the submissions of one period in one mail', async () => {
      const address = `digest-${engine}@example.com`
      const { u, form } = await owner(address, 'digest')
      // at the start of a period, so the three submissions fall into the same one
      clock.toNextPeriod(3000)
      const ids: string[] = []
      for (const name of ['Ann', 'Bo <b>', 'Cy']) {
        const r = await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name } })
        assert.equal(r.status, 200)
        ids.push(r.json.data.submission_id)
      }
      await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'spam', _gotcha: 'x' } })
      // nothing before the period ends
      assert.equal(mailsTo(address).length, 0)
      const pending = (await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key })).json.data as any[]
      assert.deepEqual(
        pending.map((d) => [d.kind, d.status]),
        [
          ['digest', 'pending'],
          ['digest', 'pending'],
          ['digest', 'pending'],
        ],
      )
      // the worker polls meanwhile: still nothing, the period has not ended
      await new Promise((r) => setTimeout(r, 200))
      assert.equal(mailsTo(address).length, 0)
      clock.toNextPeriod(3000)
      await until(() => mailsTo(address).length === 1, 10_000)
      await new Promise((r) => setTimeout(r, 300))
      assert.equal(mailsTo(address).length, 1, 'one mail for the period')
      const mail = decodeQp(mailsTo(address)[0].raw)
      assert.match(mail, /Subject: 3 new submissions to Form digest/)
      for (const id of ids) assert.ok(mail.includes(id), id)
      assert.ok(mail.includes('Bo &lt;b&gt;'))
      assert.ok(!mail.includes('spam'))
      await until(async () => ((await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key })).json.data as any[]).every((d) => d.status === 'delivered'))
    })

    it('a queued mail follows the settings as they are when it goes: a removed address or e-mail turned off gets none', async () => {
      // two owners with a digest each, one removes its address, the other turns e-mail off
      const removed = `removed-${engine}@example.com`
      const off = `off-${engine}@example.com`
      const a = await owner(removed, 'digest')
      const b = await owner(off, 'digest')
      clock.toNextPeriod(3000)
      for (const o of [a, b]) assert.equal((await s.post(`/api/forms/submit/${o.form.form_slug}`, { json: { name: 'Queued' } })).status, 200)
      const [address] = (await s.get('/svc_api/notify/addresses', { key: a.u.key })).json.data as Array<{ id: string }>
      assert.equal((await s.request('DELETE', `/svc_api/notify/addresses/${address.id}`, { key: a.u.key })).status, 200)
      assert.equal((await s.request('PUT', `/svc_api/forms/email/${b.form.id}`, { key: b.u.key, json: { enabled: false } })).status, 200)
      // past the period, each delivery has failed at its one try, saying why, and no mail went out
      const log = async (o: typeof a) => (await s.get(`/svc_api/forms/deliveries/${o.form.id}`, { key: o.u.key })).json.data as any[]
      clock.toNextPeriod(3000)
      await until(async () => (await log(a))[0]?.status === 'failed' && (await log(b))[0]?.status === 'failed', 10_000)
      assert.match((await log(a))[0].last_error, /no longer a verified notification address/)
      assert.match((await log(b))[0].last_error, /e-mail is off/)
      assert.equal((await log(a))[0].tries, 1)
      assert.deepEqual([...mailsTo(removed), ...mailsTo(off)], [])
    })

    it('a submission marked as spam after it was queued is left out of its digest', async () => {
      const address = `flagged-${engine}@example.com`
      const { u, form } = await owner(address, 'digest')
      clock.toNextPeriod(3000)
      const ids: string[] = []
      for (const name of ['Kept', 'Flagged later']) ids.push((await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name } })).json.data.submission_id)
      const flag = await s.request('PUT', `/svc_api/forms/mark_read/${ids[1]}`, { key: u.key, json: { is_spam: true } })
      assert.equal(flag.status, 200, flag.text)
      clock.toNextPeriod(3000)
      await until(() => mailsTo(address).length === 1, 10_000)
      const mail = decodeQp(mailsTo(address)[0].raw)
      assert.ok(mail.includes(ids[0]))
      assert.ok(!mail.includes(ids[1]) && !mail.includes('Flagged later'), 'the flagged one was mailed')
      const log = async () => (await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key })).json.data as any[]
      await until(async () => (await log()).every((d) => d.status !== 'pending'))
      const bySubmission = Object.fromEntries((await log()).map((d) => [d.submission_id, d]))
      assert.equal(bySubmission[ids[0]].status, 'delivered')
      assert.equal(bySubmission[ids[1]].status, 'failed')
      assert.match(bySubmission[ids[1]].last_error, /marked as spam/)
    })

    it('retries a mail the SMTP server refused once; the submission is not held up', async () => {
      const address = `retry-${engine}@example.com`
      const { u, form } = await owner(address, 'each')
      smtp.state.failNext = 1
      const refusedBefore = smtp.state.refused
      const sub = await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Dee' } })
      assert.equal(sub.status, 200)
      await until(() => mailsTo(address).length === 1, 10_000)
      assert.equal(smtp.state.refused, refusedBefore + 1)
      assert.match(decodeQp(mailsTo(address)[0].raw), /Subject: New submission to Form each/)
      let log: any[] = []
      await until(async () => {
        log = (await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key })).json.data
        return log[0]?.status === 'delivered'
      })
      assert.equal(log.length, 1)
      assert.equal(log[0].kind, 'email')
      assert.equal(log[0].tries, 2)
      assert.equal(log[0].submission_id, sub.json.data.submission_id)
    })

    it('a server that hangs after DATA fails the try at SMTP_TIMEOUT, holding up neither other deliveries nor a request', { timeout: 120_000 }, async () => {
      const address = `stall-${engine}@example.com`
      const { u, form } = await owner(address, 'each')
      const rx = await webhookReceiver()
      rx.status.value = 200
      try {
        const hooked = (await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Hooked' } })).json.data
        assert.equal((await s.request('PUT', `/svc_api/forms/webhook/${hooked.id}`, { key: u.key, json: { url: rx.url } })).status, 200)
        smtp.state.stallNext = 1
        const started = Date.now()
        assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Eve' } })).status, 200)
        await until(() => smtp.state.stalled === 1, 10_000)
        // the worker's next rounds wait for the mail's try: another form's webhook goes out once it ends
        assert.equal((await s.post(`/api/forms/submit/${hooked.form_slug}`, { json: { name: 'Fay' } })).status, 200)
        await until(() => rx.hits.length === 1, 40_000)
        let log: any[] = []
        await until(async () => {
          log = (await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key })).json.data
          return log[0]?.status === 'delivered'
        }, 40_000)
        // the first try was cut at its deadline, the second went through
        assert.equal(log[0].tries, 2)
        assert.ok(Date.now() - started < 60_000)
        assert.equal(mailsTo(address).length, 1)
        // the verification mail is sent in the request: a hanging server answers 502 / 1429 at the deadline
        smtp.state.stallNext = 1
        const other = await s.user()
        const r = await s.post('/svc_api/notify/addresses', {
          key: other.key,
          json: { address: `late-${engine}@example.com` },
          signal: AbortSignal.timeout(40_000),
        })
        expectError(r, 502, 1429)
        assert.equal(r.json.message, '邮件发送失败：邮件服务器未在 2 秒内接收邮件')
      } finally {
        await rx.close()
      }
    })

    it("a submission's mail answers the visitor: Reply-To is its _replyto or email address (decision 124)", async () => {
      const address = `reply-${engine}@example.com`
      const { form } = await owner(address, 'each')
      const send = async (json: Record<string, unknown>) => assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { json })).status, 200)
      await send({ _replyto: 'Visitor@Example.org', message: 'first' })
      await send({ email: 'second@example.org', message: 'second' })
      // not an address (a header smuggled in, two of them): no Reply-To at all
      await send({ email: 'x@example.org\r\nBcc: victim@example.org', message: 'third' })
      await send({ email: ['a@example.org', 'b@example.org'], message: 'fourth' })
      // Formspree's _cc: no copy to an address a post names (decision 251)
      await send({ _cc: 'cc-victim@example.org', message: 'fifth' })
      await until(() => mailsTo(address).length === 5, 10_000)
      const replyTo = (word: string) => {
        const raw = mailsTo(address)
          .map((m) => decodeQp(m.raw))
          .find((m) => m.includes(word))
        assert.ok(raw, word)
        return /^Reply-To: (.*)$/im.exec(raw.split(/\r?\n\r?\n/)[0])?.[1]?.trim() ?? null
      }
      assert.equal(replyTo('first')?.toLowerCase(), 'visitor@example.org')
      assert.equal(replyTo('second'), 'second@example.org')
      assert.equal(replyTo('third'), null)
      assert.equal(replyTo('fourth'), null)
      assert.ok(!mailsTo(address).some((m) => m.to.includes('victim@example.org')))
      assert.equal(replyTo('fifth'), null)
      assert.ok(!smtp.mails.some((m) => m.to.includes('cc-victim@example.org') || /^Cc:/im.test(m.raw.split(/\r?\n\r?\n/)[0])))
    })

    it("a submission's mail names its files (field, name, type, size), never their bytes", async () => {
      const address = `files-${engine}@example.com`
      const { u, form } = await owner(address, 'each')
      const secret = 'file body that no mail may carry'
      const mp = multipart([
        { name: 'message', data: 'see attached' },
        { name: 'resume', filename: 'cv <1>.txt', data: secret },
      ])
      const r = await s.post(`/api/forms/submit/${form.form_slug}`, { body: mp.body, headers: { 'content-type': mp.contentType } })
      assert.equal(r.status, 200, r.text)
      await until(() => mailsTo(address).length === 1, 10_000)
      const mail = decodeQp(mailsTo(address)[0].raw)
      assert.ok(mail.includes(`resume (file): cv <1>.txt (text/plain, ${secret.length} bytes)`), mail)
      assert.ok(mail.includes(`cv &lt;1&gt;.txt (text/plain, ${secret.length} bytes)`), mail)
      // the owner's download link, under the file's line and on its name, where a click fetches it
      const [file] = (await s.get(`/svc_api/forms/data/${form.id}`, { key: u.key })).json.data.submissions[0].files
      assert.equal(file.url, `${s.url}/svc_api/forms/files/${file.id}`)
      assert.ok(mail.replace(/\r\n/g, '\n').includes(`(text/plain, ${secret.length} bytes)\n  ${file.url}\n`), mail)
      assert.ok(mail.includes(`<a href="${file.url}">cv &lt;1&gt;.txt (text/plain, ${secret.length} bytes)</a>`), mail)
      const dl = await s.get(new URL(file.url).pathname, { key: u.key })
      assert.equal(dl.text, secret)
      assert.ok(!mail.includes(secret), 'no bytes of the file')
      assert.ok(!mail.includes(Buffer.from(secret).toString('base64').slice(0, 20)), 'no bytes of the file, in base64 either')
    })

    it("Formspree's _subject is the mail's subject, on one line, and a value's lines cannot pose as fields (decision 205)", async () => {
      const address = `subject-${engine}@example.com`
      const { u, form } = await owner(address, 'each')
      const send = async (o: Parameters<TestServer['post']>[1]) => {
        const r = await s.post(`/api/forms/submit/${form.form_slug}`, o)
        assert.equal(r.status, 200, r.text)
      }
      // a page's hidden field, as Formspree's documentation gives it (form-encoded)
      await send({ form: { _subject: 'Quote request 报价 ✓', message: 'first' } })
      // a header smuggled into the subject, and a value whose lines imitate other fields
      await send({ json: { _subject: 'Hello\r\nBcc: victim@example.org\r\nX-Evil: 1', message: 'second\nemail: ceo@bank.example\n\nSubmission 1' } })
      // no _subject, or a blank one: the service's own subject
      await send({ json: { message: 'third', _subject: '  ' } })
      // lines broken by Unicode's own separators (NEL, U+2028, U+2029), which mail readers show as breaks
      await send({ json: { message: 'fourth\u2028email: ceo@bank.example\u2029Submission 2\u0085x: y' } })
      await until(() => mailsTo(address).length === 4, 10_000)
      // a mail as a reader sees it: its header unfolded with encoded words decoded, its text part decoded
      const utf8 = (latin1: string) => Buffer.from(latin1, 'latin1').toString('utf8')
      const mail = (word: string) => {
        const raw = mailsTo(address).find((m) => utf8(decodeQp(m.raw)).includes(word))?.raw
        assert.ok(raw, word)
        const [head, ...body] = raw.split(/\r?\n\r?\n/)
        const unfolded = head.replace(/\r?\n[ \t]+/g, ' ')
        const subject = (/^Subject: (.*)$/im.exec(unfolded)?.[1] ?? '').replace(/=\?utf-8\?([QB])\?([^?]*)\?=\s*/gi, (_m, enc: string, text: string) =>
          enc.toUpperCase() === 'B' ? Buffer.from(text, 'base64').toString('utf8') : utf8(decodeQp(text.replace(/_/g, ' '))),
        )
        const [text, html] = utf8(decodeQp(body.join('\n\n')))
          .replace(/\r\n/g, '\n')
          .split('Content-Type: text/html')
        return { head: unfolded, subject: subject.trim(), text, html }
      }
      assert.equal(mail('first').subject, 'Quote request 报价 ✓')
      const second = mail('second')
      assert.equal(second.subject, 'Hello Bcc: victim@example.org X-Evil: 1')
      assert.doesNotMatch(second.head, /^(Bcc|X-Evil):/im)
      assert.ok(!mailsTo(address).some((m) => m.to.includes('victim@example.org')))
      // the value's later lines are indented under its name: no line starts like a field of its own
      assert.doesNotMatch(second.text, /^email: ceo@bank\.example/m)
      assert.doesNotMatch(second.text, /^Submission 1$/m)
      assert.match(second.text, /^message: second\n {2}email: ceo@bank\.example\n {2}\n {2}Submission 1$/m)
      // the HTML part keeps the value's line breaks
      assert.match(second.html, /<td style="white-space:pre-wrap">second\nemail: ceo@bank\.example/)
      assert.equal(mail('third').subject, `New submission to Form each`)
      assert.match(mail('fourth').text, /^message: fourth\n {2}email: ceo@bank\.example\n {2}Submission 2\n {2}x: y$/m)
      // _subject is not stored (decision 124): it is the mail's, not the visitor's content
      const stored = (await s.get(`/svc_api/forms/data/${form.id}`, { key: u.key })).json.data.submissions
      assert.deepEqual(
        stored.map((x: any) => Object.keys(x.data)),
        [['message'], ['message'], ['message'], ['message']],
      )
    })
  })
}

for (const engine of ENGINES) {
  describe(`form e-mail: one digest mail however the due rows are claimed [${engine}]`, () => {
    let s: TestServer
    let smtp: Awaited<ReturnType<typeof smtpSink>>
    // behind a proxy, so each submission can come from its own address (10 a minute per address and form)
    const proxied = { 'x-forwarded-proto': 'https' }
    const clock = new SkipClock()
    before(async () => {
      smtp = await smtpSink()
      s = await startServer({
        engine,
        clock,
        env: {
          SMTP_URL: smtp.url,
          SMTP_FROM: 'svc <svc@localhost>',
          NOTIFY_POLL: '20ms',
          NOTIFY_DIGEST_EVERY: '4s',
          TRUST_PROXY: '1',
          RATE_LIMITS: HIGH_LIMITS,
        },
      })
    })
    after(async () => {
      await s.close()
      await smtp.close()
    })

    it('25 submissions of one period, more than one claim takes, go out in one mail', async () => {
      const u = await s.user()
      const address = `many-${engine}@example.com`
      const now = Date.now()
      await s.deps.db.k
        .insertInto('notify_addresses')
        .values({ id: `a-${engine}-many`, user_id: u.id, address, token_hash: null, verified_at: now, created_at: now })
        .execute()
      const form = (await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Busy' }, headers: proxied })).json.data
      const on = await s.request('PUT', `/svc_api/forms/email/${form.id}`, { key: u.key, json: { enabled: true, mode: 'digest' }, headers: proxied })
      assert.deepEqual(on.json.data.recipients, [address])
      clock.toNextPeriod(4000)
      const subs = await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          s.post(`/api/forms/submit/${form.form_slug}`, { json: { n: `visitor ${i}` }, headers: { ...proxied, 'x-forwarded-for': `198.51.100.${i + 1}` } }),
        ),
      )
      for (const r of subs) assert.equal(r.status, 200, r.text)
      const log = async () => (await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key, headers: proxied })).json.data as any[]
      const pending = await log()
      assert.equal(pending.length, 25)
      assert.equal(new Set(pending.filter((d) => d.status === 'pending').map((d) => d.next_try_at)).size, 1, 'all in one period')
      clock.toNextPeriod(4000)
      await until(async () => (await log()).every((d) => d.status === 'delivered'), 15_000)
      const mails = smtp.mails.filter((m) => m.to.includes(address))
      assert.equal(mails.length, 1, 'one mail for the period')
      const mail = decodeQp(mails[0].raw)
      assert.match(mail, /Subject: 25 new submissions to Busy/)
      for (const r of subs) assert.ok(mail.includes(r.json.data.submission_id))
    })
  })
}
