import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { signedWith, until, webhookReceiver } from '../support/webhooks.js'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { smtpSink } from '../support/smtp.js'
import { runCli } from './run.js'

// svc forms ls|notify|rotate-secret|deliveries|redeliver as child processes against a real
// server, with a webhook receiver and an SMTP server on loopback.

for (const engine of ENGINES) {
  describe(`svc forms notifications [${engine}]`, () => {
    let s: TestServer
    let rx: Awaited<ReturnType<typeof webhookReceiver>>
    let smtp: Awaited<ReturnType<typeof smtpSink>>
    let alice: Awaited<ReturnType<TestServer['user']>>
    let env: Record<string, string>
    let form: { id: string; form_slug: string }

    before(async () => {
      rx = await webhookReceiver()
      smtp = await smtpSink()
      s = await startServer({
        engine,
        env: {
          RATE_LIMITS: HIGH_LIMITS,
          SMTP_URL: smtp.url,
          SMTP_FROM: 'svc <svc@localhost>',
          NOTIFY_RETRY_BASE: '50ms',
          NOTIFY_POLL: '20ms',
          NOTIFY_MAX_AGE: '1s',
        },
      })
      alice = await s.user({ name: 'alice' })
      env = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1' }
      form = (await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Contact' } })).json.data
    })
    after(async () => {
      await s?.close()
      await rx?.close()
      await smtp?.close()
    })

    it('lists forms and shows, sets and removes a webhook; the secret is printed once', async () => {
      const ls = await runCli(['forms', 'ls'], { env })
      assert.equal(ls.code, 0, ls.stderr)
      assert.match(ls.stdout, new RegExp(`${form.id}\\s+${form.form_slug}\\s+Contact\\s+yes\\s+0`))
      const none = await runCli(['forms', 'notify', form.id], { env })
      assert.equal(none.code, 0, none.stderr)
      assert.match(none.stdout, /^webhook: none$/m)
      assert.match(none.stdout, /^email: off$/m)

      const set = await runCli(['forms', 'notify', form.id, '--webhook', rx.url, '--json'], { env })
      assert.equal(set.code, 0, set.stderr)
      assert.equal(set.json.data.webhook.url, rx.url)
      assert.match(set.json.data.webhook.secret, /^whsec_/)
      const again = await runCli(['forms', 'notify', form.id, '--webhook', rx.url], { env })
      assert.equal(again.code, 0, again.stderr)
      assert.match(again.stdout, new RegExp(`^webhook: ${rx.url}, signing secret whsec_`, 'm'))
      assert.doesNotMatch(again.stdout, /shown once/, 'an update does not show the secret')

      const paused = await runCli(['forms', 'notify', form.id, '--webhook', rx.url, '--paused'], { env })
      assert.match(paused.stdout, /\(paused\)/)
      assert.equal((await s.get(`/svc_api/forms/webhook/${form.id}`, { key: alice.key })).json.data.enabled, false)

      const bad = await runCli(['forms', 'notify', form.id, '--webhook', 'ftp://example.com/x'], { env })
      assert.equal(bad.code, 1)
      assert.match(bad.stderr, /^error 14\d\d /m)
      assert.equal((await s.get(`/svc_api/forms/webhook/${form.id}`, { key: alice.key })).json.data.url, rx.url, 'a refused URL changes nothing')

      const rm = await runCli(['forms', 'notify', form.id, '--no-webhook'], { env })
      assert.equal(rm.code, 0, rm.stderr)
      assert.match(rm.stdout, /^webhook removed$/m)
      assert.equal((await s.get(`/svc_api/forms/webhook/${form.id}`, { key: alice.key })).json.error_code, 1422)
      const rot = await runCli(['forms', 'rotate-secret', form.id], { env })
      assert.equal(rot.code, 1)
      assert.match(rot.stderr, /^error 1422 /m)

      for (const args of [
        ['forms', 'notify', form.id, '--webhook', rx.url, '--no-webhook'],
        ['forms', 'notify', form.id, '--email', 'sometimes'],
        ['forms', 'notify'],
        ['forms', 'redeliver'],
        ['forms', 'frobnicate'],
      ]) {
        const r = await runCli(args, { env })
        assert.equal(r.code, 2, args.join(' '))
      }
    })

    it('logs a failed delivery, redelivers it, and signs with a rotated secret', async () => {
      const set = await runCli(['forms', 'notify', form.id, '--webhook', rx.url], { env })
      assert.equal(set.code, 0, set.stderr)
      const secret = /signing secret \(shown once, store it now\): (whsec_\S+)/.exec(set.stdout)?.[1]
      assert.ok(secret, set.stdout)
      rx.status.value = 500
      assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Ann' } })).status, 200)
      let failed: any
      await until(
        async () => {
          const r = await runCli(['forms', 'deliveries', form.id, '--json'], { env })
          failed = r.json?.data?.[0]
          return failed?.status === 'failed'
        },
        20_000,
        'a failed delivery',
      )
      assert.ok(rx.hits.length >= 2 && rx.hits.every((h) => signedWith(h, secret)))
      const table = await runCli(['forms', 'deliveries', form.id], { env: { ...env, TZ: 'UTC' } })
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, /^ID\s+CREATED\s+KIND\s+TARGET\s+STATUS\s+TRIES\s+LAST ANSWER$/m)
      // CREATED: the API's timestamp in the machine's time zone (UTC here)
      const created = new Date(failed.created_at).toISOString().slice(0, 19).replace('T', ' ')
      assert.match(table.stdout, new RegExp(`^${failed.id}\\s+${created}\\s+webhook\\s+${rx.url}\\s+failed\\s+${failed.tries}\\s+answered HTTP 500$`, 'm'))

      rx.status.value = 200
      const re = await runCli(['forms', 'redeliver', failed.id], { env })
      assert.equal(re.code, 0, re.stderr)
      assert.match(re.stdout, new RegExp(`^delivery ${failed.id} queued again \\(webhook to `))
      await until(
        async () => ((await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: alice.key })).json.data[0].status as string) === 'delivered',
        20_000,
        'the redelivery',
      )
      const twice = await runCli(['forms', 'redeliver', failed.id, '--json'], { env })
      assert.equal(twice.code, 1)
      assert.equal(twice.json.success, false)
      assert.equal(twice.json.error.error_code, 1427)

      const rot = await runCli(['forms', 'rotate-secret', form.id, '--json'], { env })
      assert.equal(rot.code, 0, rot.stderr)
      const rotated = rot.json.data.secret as string
      assert.match(rotated, /^whsec_/)
      assert.notEqual(rotated, secret)
      const seen = rx.hits.length
      await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Bo' } })
      await until(() => rx.hits.length > seen, 20_000, 'the next delivery')
      assert.ok(signedWith(rx.hits[rx.hits.length - 1], rotated))
      assert.ok(!signedWith(rx.hits[rx.hits.length - 1], secret))
    })

    it('switches e-mail between each, digest and off', async () => {
      const digest = await runCli(['forms', 'notify', form.id, '--email', 'digest'], { env })
      assert.equal(digest.code, 0, digest.stderr)
      assert.match(digest.stdout, /^email: digest \(no verified address yet/m)
      const mode = async () => (await s.get(`/svc_api/forms/email/${form.id}`, { key: alice.key })).json.data
      assert.deepEqual([(await mode()).enabled, (await mode()).mode], [true, 'digest'])
      const off = await runCli(['forms', 'notify', form.id, '--email', 'off', '--json'], { env })
      assert.equal(off.code, 0, off.stderr)
      assert.equal(off.json.data.email.enabled, false)
      assert.equal(off.json.data.email.mode, 'digest', 'off keeps the mode')
      const on = await runCli(['forms', 'notify', form.id, '--email', 'on'], { env })
      assert.match(on.stdout, /^email: each submission/m)
      assert.deepEqual([(await mode()).enabled, (await mode()).mode], [true, 'each'])
    })

    it('lines up its table columns under Chinese names and values, two columns a character', async () => {
      const wide = (await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: '联系我们' } })).json.data as { id: string; form_slug: string }
      for (const name of ['王小明', 'Bob']) assert.equal((await s.post(`/api/forms/submit/${wide.form_slug}`, { json: { name, city: '北京' } })).status, 200)
      // the terminal column where `word` starts on a line: a CJK character takes two
      const column = (line: string, word: string) => [...line.slice(0, line.indexOf(word))].reduce((n, c) => n + (/[\u4e00-\u9fff]/.test(c) ? 2 : 1), 0)
      const ls = await runCli(['forms', 'ls'], { env })
      assert.equal(ls.code, 0, ls.stderr)
      const rows = ls.stdout.split('\n').filter((l) => l.includes(wide.id) || l.includes(form.id) || l.startsWith('ID'))
      assert.equal(rows.length, 3, ls.stdout)
      assert.deepEqual(
        rows.map((l) => column(l, l.startsWith('ID') ? 'ACTIVE' : 'yes')),
        [0, 1, 2].map(() => column(rows[0], 'ACTIVE')),
        ls.stdout,
      )
      const exp = await runCli(['forms', 'export', wide.id], { env })
      assert.equal(exp.code, 0, exp.stderr)
      const lines = exp.stdout.split('\n').filter((l) => l.includes('北京'))
      assert.equal(lines.length, 2, exp.stdout)
      assert.equal(column(lines[0], '北京'), column(lines[1], '北京'), exp.stdout)
    })

    it('cuts a long value for its table between characters, never inside an emoji', async () => {
      const emoji = (await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Emoji' } })).json.data as { id: string; form_slug: string }
      // 40 emoji are 80 UTF-16 units: the table's 40-unit preview used to cut the 20th in half
      assert.equal((await s.post(`/api/forms/submit/${emoji.form_slug}`, { json: { message: '😀'.repeat(40) } })).status, 200)
      const exp = await runCli(['forms', 'export', emoji.id], { env })
      assert.equal(exp.code, 0, exp.stderr)
      assert.ok(!exp.stdout.includes('\ufffd'), exp.stdout)
      assert.match(exp.stdout, /(😀){19}…/)
    })
  })

  describe(`svc forms notify without SMTP [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    })
    after(() => s?.close())

    it('refuses to switch e-mail on, and a read-only key cannot change notifications', async () => {
      const alice = await s.user()
      const env = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1' }
      const form = (await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'F' } })).json.data
      const r = await runCli(['forms', 'notify', form.id, '--email', 'each'], { env })
      assert.equal(r.code, 1)
      assert.match(r.stderr, /^error 1425 /m)
      const show = await runCli(['forms', 'notify', form.id], { env })
      assert.match(show.stdout, /^email: off \(the server has no SMTP configured\)$/m)

      const ro = (await s.post('/svc_api/api-keys', { cookie: await s.login(alice.username, alice.password), json: { name: 'ro', read_only: true } })).json.data
        .key as string
      const roEnv = { ...env, SVC_API_KEY: ro }
      const w = await runCli(['forms', 'notify', form.id, '--webhook', 'https://example.com/hook'], { env: roEnv })
      assert.equal(w.code, 1)
      assert.match(w.stderr, /^error 1440 /m)
      const read = await runCli(['forms', 'deliveries', form.id], { env: roEnv })
      assert.equal(read.code, 0, read.stderr)
      assert.match(read.stdout, /^no deliveries$/m)
    })
  })
}
