import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import { type BrowserContext } from 'playwright-core'
import { until, webhookReceiver } from '../support/webhooks.js'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import type { Engine } from '../../src/db/kysely.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { type BrowserLease, openBrowser, sessionCookiesFor, watchErrors } from '../support/browser.js'
import { decodeQp, smtpSink } from '../support/smtp.js'

// The forms page's notifications and the API keys page in Chromium: set a webhook (the secret
// is shown once), submit, watch the delivery fail and redeliver it; export submissions as CSV;
// create a read-only key and see it refused a write; add and verify an e-mail address and
// switch the e-mail mode. The receiver is an HTTP server on loopback (WEBHOOK_BLOCK_PRIVATE is
// off in tests).

// The three flows (webhooks and keys on each engine, e-mail on one) have a server, a receiver
// and browser contexts of their own, and mostly wait on the page and on deliveries: they run
// side by side, the steps of each in order
describe('dashboard: notifications in Chromium', { concurrency: true }, () => {
  for (const engine of ENGINES) webhookFlow(engine)
  emailFlow()
})

function webhookFlow(engine: Engine): void {
  describe(`dashboard: form notifications and read-only keys in Chromium [${engine}]`, { concurrency: false }, () => {
    let s: TestServer
    let browser: BrowserLease
    let rx: Awaited<ReturnType<typeof webhookReceiver>>
    let alice: Awaited<ReturnType<TestServer['user']>>

    const session = async (): Promise<BrowserContext> => {
      const cookie = await s.login(alice.username, alice.password)
      const ctx = await browser.newContext({ ignoreHTTPSErrors: true, locale: 'en-US' })
      await ctx.addCookies(sessionCookiesFor(cookie, s.url))
      return ctx
    }

    before(async () => {
      rx = await webhookReceiver()
      // deliveries give up fast, so a failed one can be redelivered within the test
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, NOTIFY_RETRY_BASE: '50ms', NOTIFY_POLL: '20ms', NOTIFY_MAX_AGE: '1s' } })
      alice = await s.user({ name: 'alice' })
      browser = await openBrowser()
    })
    after(async () => {
      await browser?.close()
      await s?.close()
      await rx?.close()
    })

    it('sets a webhook, shows the secret once, logs a failed delivery and redelivers it', async () => {
      const form = (await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Contact' } })).json.data as { id: string; form_slug: string }
      const ctx = await session()
      // the page's clock runs at its own pace until the test moves it on (below)
      await ctx.clock.install()
      const page = await ctx.newPage()
      // a form without a webhook answers 1422 (404): the page shows "No webhook yet."
      const problems = watchErrors(page, [{ url: '/svc_api/forms/webhook/', status: 404 }])
      page.on('dialog', (d) => void d.accept())
      await page.goto(`${s.url}/dashboard/forms`)
      await page.click('button[aria-label="Notifications Contact"]')
      await page.waitForFunction(() => document.getElementById('hook-info')?.textContent === 'No webhook yet.')
      await page.waitForFunction(() => document.querySelector('#deliv-table tbody')?.textContent?.includes('No deliveries yet.'))
      assert.equal(await page.isVisible('#hook-rotate'), false)

      await page.fill('#hook-url', rx.url)
      await page.click('#hook-save')
      await page.waitForSelector('#hook-secret', { state: 'visible' })
      const secret = await page.inputValue('#hook-secret-value')
      assert.match(secret, /^whsec_[A-Za-z0-9]{40}$/)
      assert.match((await page.textContent('#hook-info')) ?? '', /^Signing secret whsec_…/)
      const stored = (await s.get(`/svc_api/forms/webhook/${form.id}`, { key: alice.key })).json.data
      assert.equal(stored.url, rx.url)
      assert.equal(stored.secret, undefined, 'the secret is not answered again')

      // the receiver fails every try, so the delivery ends failed after NOTIFY_MAX_AGE
      assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Ann' } })).status, 200)
      const deliveries = async () => (await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: alice.key })).json.data as any[]
      await until(async () => (await deliveries())[0]?.status === 'failed', 20_000, 'a failed delivery')
      const failed = (await deliveries())[0]
      assert.ok(failed.tries >= 2, JSON.stringify(failed))
      assert.ok(rx.hits.length >= 2)
      const h = rx.hits[0]
      const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(h.headers['x-svc-signature']))
      assert.ok(m)
      assert.equal(crypto.createHmac('sha256', secret).update(`${m[1]}.${h.body}`).digest('hex'), m[2], 'signed with the secret the page showed')

      await page.click('#deliv-refresh')
      const row = page.locator(`#deliv-table tbody tr[data-id="${failed.id}"]`)
      await row.waitFor()
      assert.match((await row.textContent()) ?? '', /webhook.*failed.*answered HTTP 500/)
      rx.status.value = 200
      await row.getByRole('button', { name: 'Redeliver' }).click()
      // pending rows are looked at again by the page every 2 s until they settle: once the
      // server has delivered, the page's clock jumps to its next look instead of waiting for it
      await until(async () => (await deliveries())[0].status === 'delivered', 20_000, 'the redelivery')
      await page.clock.fastForward(2000)
      await page.waitForSelector(`#deliv-table tbody tr[data-id="${failed.id}"][data-status="delivered"]`, { timeout: 20_000 })
      assert.equal(await row.getByRole('button', { name: 'Redeliver' }).count(), 0)
      assert.equal((await deliveries())[0].status, 'delivered')
      // the delivered row's last answer is the receiver's 200, under a heading that says so (as the CLI's LAST ANSWER)
      const heads = await page.$$eval('#deliv-table thead th', (ths) => ths.map((th) => (th.textContent ?? '').trim()))
      assert.equal((await row.locator('td').allTextContents())[heads.indexOf('Last answer')], 'HTTP 200', JSON.stringify(heads))

      // rotating shows a new secret, once; removing clears the form
      const before = rx.hits.length
      await page.click('#hook-rotate')
      await page.waitForFunction((old) => (document.getElementById('hook-secret-value') as HTMLInputElement).value !== old, secret)
      const rotated = await page.inputValue('#hook-secret-value')
      assert.match(rotated, /^whsec_/)
      assert.notEqual(rotated, secret)
      await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Bo' } })
      await until(() => rx.hits.length > before, 20_000, 'a delivery signed with the new secret')
      const h2 = rx.hits[rx.hits.length - 1]
      const m2 = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(h2.headers['x-svc-signature']))!
      assert.equal(crypto.createHmac('sha256', rotated).update(`${m2[1]}.${h2.body}`).digest('hex'), m2[2])
      await page.click('#hook-remove')
      await page.waitForFunction(() => document.getElementById('hook-info')?.textContent === 'No webhook yet.')
      assert.equal((await s.get(`/svc_api/forms/webhook/${form.id}`, { key: alice.key })).json.error_code, 1422)

      // without SMTP_URL the e-mail setting says so and cannot be switched on
      assert.match((await page.textContent('#email-info')) ?? '', /not configured an SMTP server/)
      assert.equal(await page.isDisabled('#email-mode'), true)
      assert.deepEqual(problems, [])
      await ctx.close()
    })

    it('refuses a webhook to a non-http URL with the error on the page and stores nothing', async () => {
      const form = (await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Other' } })).json.data as { id: string }
      const ctx = await session()
      const page = await ctx.newPage()
      const problems = watchErrors(page, [
        { url: '/svc_api/forms/webhook/', status: 404 },
        { url: '/svc_api/forms/webhook/', status: 400 },
      ])
      await page.goto(`${s.url}/dashboard/forms`)
      await page.click('button[aria-label="Notifications Other"]')
      await page.waitForFunction(() => document.getElementById('hook-info')?.textContent === 'No webhook yet.')
      // type=url accepts ftp:, so the server's check is what refuses it
      await page.fill('#hook-url', 'ftp://example.com/x')
      await page.click('#hook-save')
      await page.waitForFunction(() => document.getElementById('notify-status')?.classList.contains('error'))
      assert.notEqual(((await page.textContent('#notify-status')) ?? '').trim(), '')
      assert.equal((await s.get(`/svc_api/forms/webhook/${form.id}`, { key: alice.key })).json.error_code, 1422)
      assert.equal(await page.isVisible('#hook-secret'), false)
      assert.deepEqual(problems, [])
      await ctx.close()
    })

    it('exports CSV from the submissions view with a field named constructor that a submission lacks, or named like a fixed column', async () => {
      const fields_config = [{ name: 'name' }, { name: 'constructor' }, { name: 'toString' }, { name: 'is_read' }]
      const form = (await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Proto', fields_config } })).json.data as { form_slug: string }
      assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Ann', is_read: 'yes' } })).status, 200)
      const ctx = await session()
      const page = await ctx.newPage()
      const problems = watchErrors(page)
      await page.goto(`${s.url}/dashboard/forms`)
      await page.locator('#forms-table tbody tr', { hasText: 'Proto' }).getByRole('button', { name: 'Submissions' }).click()
      await page.locator('#subs-table tbody tr', { hasText: 'Ann' }).waitFor()
      const download = page.waitForEvent('download', { timeout: 10_000 })
      await page.click('#subs-export-csv')
      const file = await (await download).path()
      const text = fs.readFileSync(file, 'utf8')
      assert.ok(text.startsWith('\uFEFF'), 'the byte-order mark spreadsheets read UTF-8 by')
      const lines = text.slice(1).split('\r\n')
      // the API's CSV export, its headers each once (decision 137)
      assert.equal(lines[0], 'submission_id,created_at,is_read,is_spam,spam_reason,name,constructor,toString,data.is_read,user_agent,ip_prefix')
      assert.match(lines[1], /^[0-9a-f-]{36},[^,]+,false,false,,Ann,,,yes,/)
      assert.deepEqual(problems, [])
      await ctx.close()
    })

    it('creates a read-only key on the keys page; the list marks it and a write is refused with 1440', async () => {
      const ctx = await session()
      const page = await ctx.newPage()
      const problems = watchErrors(page)
      await page.goto(`${s.url}/api-keys`)
      await page.fill('#key-name', 'reader')
      await page.check('#key-readonly')
      await page.click('#key-submit')
      await page.waitForSelector('#new-key', { state: 'visible' })
      const key = await page.inputValue('#new-key-value')
      assert.match(key, /^svc_/)
      const row = page.locator('#keys-table tbody tr', { hasText: 'reader' })
      await row.waitFor()
      assert.equal(await row.locator('.key-access').textContent(), 'read-only')
      // alice's own key (made by the test helper) is a full key
      const others = await page.locator('#keys-table tbody tr .key-access').allTextContents()
      assert.ok(others.includes('full'), others.join(','))

      const me = await s.get('/svc_api/me', { key })
      assert.equal(me.json.data.read_only, true)
      assert.equal((await s.get('/svc_api/forms/list', { key })).status, 200, 'a read-only key reads')
      const write = await s.post('/svc_api/forms/create', { key, json: { form_name: 'nope' } })
      assert.equal(write.status, 403)
      assert.equal(write.json.error_code, 1440)
      const names = ((await s.get('/svc_api/forms/list', { key: alice.key })).json.data.forms as any[]).map((f) => f.form_name)
      assert.ok(!names.includes('nope'))
      assert.deepEqual(problems, [])
      await ctx.close()
    })
  })
}

function emailFlow(): void {
  describe(`dashboard: e-mail notifications in Chromium [${ENGINES[0]}]`, { concurrency: false }, () => {
    let s: TestServer
    let browser: BrowserLease
    let smtp: Awaited<ReturnType<typeof smtpSink>>

    before(async () => {
      smtp = await smtpSink()
      s = await startServer({
        engine: ENGINES[0],
        env: { RATE_LIMITS: HIGH_LIMITS, SMTP_URL: smtp.url, SMTP_FROM: 'svc <svc@localhost>', NOTIFY_POLL: '20ms' },
      })
      browser = await openBrowser()
    })
    after(async () => {
      await browser?.close()
      await s?.close()
      await smtp?.close()
    })

    it('adds an address, verifies it from the mail, mails each submission, and switches to digest and off', async () => {
      const bob = await s.user({ name: 'bob' })
      const form = (await s.post('/svc_api/forms/create', { key: bob.key, json: { form_name: 'Mailbox' } })).json.data as { id: string; form_slug: string }
      const cookie = await s.login(bob.username, bob.password)
      const ctx = await browser.newContext({ ignoreHTTPSErrors: true, locale: 'en-US' })
      await ctx.addCookies(sessionCookiesFor(cookie, s.url))
      const page = await ctx.newPage()
      const problems = watchErrors(page, [{ url: '/svc_api/forms/webhook/', status: 404 }])
      await page.goto(`${s.url}/dashboard/forms`)
      await page.click('button[aria-label="Notifications Mailbox"]')
      await page.waitForSelector('#addr-box', { state: 'visible' })
      assert.match((await page.textContent('#email-info')) ?? '', /No verified address yet/)
      await page.fill('#addr-input', 'bob@example.com')
      await page.click('#addr-form button[type=submit]')
      await page.waitForFunction(() => document.getElementById('addr-list')?.textContent?.includes('waiting for verification'))
      await until(() => smtp.mails.length === 1, 10_000, 'the verification mail')
      const token = /verify\?token=([A-Za-z0-9]{40})/.exec(decodeQp(smtp.mails[0].raw))?.[1]
      assert.ok(token)
      // the mail's link, opened in the browser: a page that says so, in the browser's language
      // (opening it confirms nothing: the person presses Confirm, which a mail scanner does not)
      const verified = await ctx.newPage()
      assert.equal((await verified.goto(`${s.url}/svc_api/notify/verify?token=${token}`))?.status(), 200)
      assert.equal(await verified.textContent('h1'), 'Confirm this address')
      assert.match((await verified.textContent('p')) ?? '', /bob@example\.com/)
      await verified.reload()
      assert.equal(await verified.textContent('h1'), 'Confirm this address', 'opening the link twice confirms nothing')
      await Promise.all([verified.waitForURL(/\/svc_api\/notify\/verify$/), verified.click('button[type=submit]')])
      assert.equal(await verified.textContent('h1'), 'Address verified')
      assert.match((await verified.textContent('p')) ?? '', /bob@example\.com/)
      await verified.close()

      await page.selectOption('#email-mode', 'each')
      await page.waitForFunction(() => document.getElementById('email-info')?.textContent === 'Sent to: bob@example.com')
      assert.match((await page.textContent('#addr-list')) ?? '', /bob@example\.com verified/)
      await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Eve' } })
      await until(() => smtp.mails.length === 2, 10_000, 'the submission mail')
      assert.match(decodeQp(smtp.mails[1].raw), /Subject: New submission to Mailbox/)
      await page.click('#deliv-refresh')
      await page.waitForSelector('#deliv-table tbody tr[data-status="delivered"]')
      assert.match((await page.textContent('#deliv-table tbody')) ?? '', /email\s*bob@example\.com\s*delivered\s*1/)

      await page.selectOption('#email-mode', 'digest')
      await until(async () => (await s.get(`/svc_api/forms/email/${form.id}`, { key: bob.key })).json.data.mode === 'digest', 10_000, 'digest mode')
      await page.selectOption('#email-mode', 'off')
      await until(async () => (await s.get(`/svc_api/forms/email/${form.id}`, { key: bob.key })).json.data.enabled === false, 10_000, 'e-mail off')
      const e = (await s.get(`/svc_api/forms/email/${form.id}`, { key: bob.key })).json.data
      assert.equal(e.mode, 'digest', 'off keeps the mode')
      assert.deepEqual(problems, [])
      await ctx.close()
    })
  })
}
