import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { type BrowserContext, type Page } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { countXhrAnswers, openBrowser, type BrowserLease } from '../support/browser.js'

// The console's pages and their CSP are the same on both engines; the API suites
// (test/http/abuse.test.ts) cover both.
const engine = ENGINES[0]

const ADMIN_PAGES = ['/admin', '/admin/reports', '/admin/content', '/admin/settings', '/admin/audit', '/admin/health']
/** Every admin API route with a body a browser would send. */
const ADMIN_API: Array<[string, string, unknown?]> = [
  ['GET', '/svc_api/admin/users'],
  ['POST', '/svc_api/admin/users/someone', { disabled: true }],
  ['GET', '/svc_api/admin/users/someone/keys'],
  ['DELETE', '/svc_api/admin/users/someone/keys/x'],
  ['POST', '/svc_api/admin/invites', {}],
  ['GET', '/svc_api/admin/content?user=someone'],
  ['GET', '/svc_api/admin/settings'],
  ['POST', '/svc_api/admin/settings', { registration: 'closed' }],
  ['GET', '/svc_api/admin/audit'],
  ['GET', '/svc_api/admin/audit?format=json'],
  ['GET', '/svc_api/admin/reports'],
  ['POST', '/svc_api/admin/reports', { url: 'https://x.example/a', category: 'spam' }],
  ['GET', '/svc_api/admin/reports/x'],
  ['POST', '/svc_api/admin/reports/x/quarantine', {}],
  ['POST', '/svc_api/admin/reports/x/restore', {}],
  ['POST', '/svc_api/admin/reports/x/takedown', {}],
  ['POST', '/svc_api/admin/reports/x/lift', {}],
  ['POST', '/svc_api/admin/reports/x/dismiss', {}],
  ['GET', `/svc_api/admin/reports/x/evidence/${'a'.repeat(64)}`],
  ['GET', '/svc_api/admin/blocklist'],
  ['GET', '/svc_api/admin/health'],
]

describe(`admin console and report page in Chromium [${engine}]`, () => {
  let s: TestServer
  let browser: BrowserLease
  let admin: Awaited<ReturnType<TestServer['user']>>
  let alice: Awaited<ReturnType<TestServer['user']>>
  const problems: string[] = []
  /** BACKUP_DIR of the server, so its health page shows the backup schedule. */
  let backupDir: string

  /** A new page of `ctx`, watched: a CSP or Trusted Types violation, or a script error, fails the run. */
  const watched = async (ctx: BrowserContext): Promise<Page> => {
    const page = await ctx.newPage()
    page.setDefaultTimeout(10_000)
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy|TrustedHTML|Trusted Type|Refused to/i.test(m.text())) problems.push(m.text())
    })
    page.on('pageerror', (e) => problems.push(String(e)))
    page.on('dialog', (d) => void d.accept())
    return page
  }
  /** A fresh browser (a context of its own: no cookies), in English. */
  const open = async (): Promise<{ ctx: BrowserContext; page: Page }> => {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true, locale: 'en-US' })
    return { ctx, page: await watched(ctx) }
  }
  /**
   * One browser per person for the file, signed in through the login page on first use (its
   * first page is that one); each test opens a page of it and closes only that page. A visitor,
   * a sign-in that is itself checked, or a person whose sessions a test ends (alice, disabled
   * in the main test) uses open().
   */
  const people = new Map<string, Promise<{ ctx: BrowserContext; spare: Page | null }>>()
  const pageOf = async (u: { username: string; password: string }): Promise<Page> => {
    let person = people.get(u.username)
    if (person === undefined) {
      person = open().then(async ({ ctx, page }) => {
        await login(page, u)
        return { ctx, spare: page }
      })
      people.set(u.username, person)
      person.catch(() => people.delete(u.username))
    }
    const p = await person
    const page = p.spare ?? (await watched(p.ctx))
    p.spare = null
    return page
  }
  const login = async (page: Page, u: { username: string; password: string }) => {
    await page.goto(`${s.url}/login`)
    await page.getByLabel('Username').fill(u.username)
    await page.getByLabel('Password').fill(u.password)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.waitForURL('**/dashboard')
  }
  /** A same-origin API call from the page, as the console's script makes it (CSRF token included). */
  const call = (page: Page, method: string, p: string, body?: unknown) =>
    page.evaluate(
      async ([m, url, b]) => {
        const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? ''
        const r = await fetch(url, {
          method: m,
          headers: { 'content-type': 'application/json', 'x-csrf-token': csrf, accept: 'application/json' },
          body: b === undefined ? undefined : JSON.stringify(b),
        })
        return { status: r.status, body: await r.text() }
      },
      [method, p, body] as const,
    )
  const auditActions = async () =>
    (await s.deps.db.k.selectFrom('audit_log').select(['action', 'target', 'actor', 'via', 'ip', 'user_agent', 'details']).orderBy('id').execute()).map(
      (r) => ({
        ...r,
        details: JSON.parse(r.details) as Record<string, unknown>,
      }),
    )

  before(async () => {
    backupDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-admin-backups-'))
    // BACKUP_EVERY takes seconds (90s); the page once rounded it down to whole minutes ("1 min")
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, BACKUP_DIR: backupDir, BACKUP_EVERY: '90s' } })
    browser = await openBrowser()
    admin = await s.user({ admin: true })
    alice = await s.user()
  })
  after(async () => {
    await browser?.close().catch(() => {})
    await s?.close()
    if (backupDir) fs.rmSync(backupDir, { recursive: true, force: true })
  })

  it('gives a signed-in non-admin 403 on every admin page and admin API route, and changes nothing', async () => {
    const { ctx, page } = await open()
    try {
      await login(page, alice)
      for (const p of ADMIN_PAGES) {
        const r = await page.goto(s.url + p)
        assert.equal(r?.status(), 403, p)
        assert.equal(await page.locator('#forbidden').count(), 1, p)
        assert.equal(
          await page.locator('#users-table, #reports-table, #settings-form, #audit-table, #content-form, #health-checks').count(),
          0,
          `${p}: no console frame`,
        )
      }
      await page.goto(`${s.url}/dashboard`)
      assert.equal(await page.locator('nav.nav a[href="/admin"], #card-admin').count(), 0, 'no admin link or card for a non-admin')
      for (const [method, p, body] of ADMIN_API) {
        const r = await call(page, method, p, body)
        assert.equal(r.status, 403, `${method} ${p}: ${r.body}`)
        assert.equal(JSON.parse(r.body).error_code, 1011, `${method} ${p}`)
      }
      assert.deepEqual(await auditActions(), [])
      assert.equal((await s.deps.users.byId(alice.id))?.disabled, false)
    } finally {
      await ctx.close()
    }
  })

  it('lets an admin manage accounts, settings, reports and content, and logs every write', { timeout: 120_000 }, async () => {
    const page = await pageOf(admin)
    // the console is reached from the navigation and the dashboard
    await page.goto(`${s.url}/dashboard`)
    assert.equal(await page.locator('#card-admin a[href="/admin"]').count(), 1, 'the dashboard has the admin card')
    await page.locator('nav.nav a[href="/admin"]').click()
    await page.waitForSelector('#users-table')
    const ua = await page.evaluate(() => navigator.userAgent)
    const sitePage = HTML('shady page', '<p>give me your password</p>')
    await uploadFile(s, { key: alice.key }, 'shady.html', sitePage)
    // a copy of the same bytes another account has live before the takedown (not touched by it)
    assert.equal((await uploadFile(s, { key: admin.key }, 'copy.html', sitePage)).status, 200)

    // accounts: VIP, a quota, disable, enable
    await page.goto(`${s.url}/admin`)
    const row = page.locator(`#users-table tbody tr[data-user="${alice.username}"]`)
    await row.waitFor()
    // counts as label: value, so one reads right as well as many ("1 files" before)
    assert.match((await row.textContent()) ?? '', /files: 1 .* KV keys: 0/)
    await row.getByRole('button', { name: 'Make VIP' }).click()
    await page.locator(`#users-table tbody tr[data-user="${alice.username}"]`, { hasText: 'vip' }).getByRole('button', { name: 'Remove VIP' }).waitFor()
    assert.equal((await s.deps.users.byId(alice.id))?.tier, 'vip')
    await row.locator('select').selectOption('files')
    await row.locator('input[type="number"]').fill('42')
    await row.getByRole('button', { name: 'Set' }).click()
    await page.locator(`#users-table tbody tr[data-user="${alice.username}"]`, { hasText: 'files=42' }).waitFor()
    await row.getByRole('button', { name: 'Disable' }).click()
    await page.locator(`#users-table tbody tr[data-user="${alice.username}"]`, { hasText: 'disabled' }).getByRole('button', { name: 'Enable' }).click()
    await page.locator(`#users-table tbody tr[data-user="${alice.username}"]`, { hasText: 'active' }).waitFor()
    assert.equal((await s.deps.users.byId(alice.id))?.disabled, false)
    await page.getByRole('button', { name: 'Create a code' }).click()
    await page.locator('#invite-box').waitFor({ state: 'visible' })
    // the code arrives with the answer to the click; wait for it rather than sample once
    await page.waitForFunction(() => document.querySelector<HTMLInputElement>('#invite-code')?.value.startsWith('INV-'))
    assert.match(await page.locator('#invite-code').inputValue(), /^INV-/)

    // settings, applied at once
    await page.goto(`${s.url}/admin/settings`)
    await page.locator('#setting-registration').waitFor()
    // named in the page's language, not by their keys
    await page.getByLabel('Abuse contact').waitFor()
    assert.equal(await page.locator('#setting-registration option[value="invite"]').textContent(), 'By invitation code')
    await page.locator('#setting-registration').selectOption('pending')
    await page.locator('#setting-abuse_contact').fill('abuse@example.org')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.locator('#settings-status.ok').waitFor()
    assert.equal(await page.locator('#setting-abuse_contact').inputValue(), 'mailto:abuse@example.org')
    assert.match((await s.get('/.well-known/security.txt')).text, /Contact: mailto:abuse@example\.org/)
    // a bad value: the error shows, nothing changes
    await page.locator('#setting-security_contact').fill('ftp://nope')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.locator('#settings-status.error').waitFor()
    assert.doesNotMatch((await s.get('/.well-known/security.txt')).text, /ftp:/)

    // a reporter's text cannot reorder the table around it (a U+202E in its details): it
    // runs in <bdi>, one per reporter-written field
    const spoof = await s.post('/svc_api/abuse/reports', { json: { url: `${s.url}/${alice.username}/shady.html`, category: 'spam', details: 'abc\u202Edef' } })
    assert.ok(spoof.status < 300, spoof.text)
    await page.goto(`${s.url}/admin/reports`)
    await page.locator('#reports-table tbody tr bdi', { hasText: 'abc\u202Edef' }).waitFor()

    // a page the upload heuristics flagged: its reasons under the console's label, once
    await uploadFile(s, { key: alice.key }, 'signin.html', HTML('Sign in', '<form action="https://collector.example.net/x"><input type="password"></form>'))
    await page.goto(`${s.url}/admin/reports`)
    const flaggedRow = page.locator('#reports-table tbody tr', { hasText: `/${alice.username}/signin.html` })
    await flaggedRow.waitFor()
    assert.equal(((await flaggedRow.textContent()) ?? '').split('flagged at upload').length, 2, 'the label once')

    // a case on alice's page: quarantine (451 in the browser on her origin), restore, take down
    const siteUrl = `http://${alice.username}.localhost:${new URL(s.httpUrl).port}/shady.html`
    const reportStatus = page.locator('#reports-status')
    // a URL that names no content: the error shows, and the next case that opens replaces it
    await page.getByLabel('URL of the page, image or data link').fill(`${s.url}/nobody-here/x.html`)
    await page.getByRole('button', { name: 'Open case' }).click()
    await page.locator('#reports-status.error').waitFor()
    await page.getByLabel('URL of the page, image or data link').fill(siteUrl)
    await page.getByLabel('Category').selectOption('phishing')
    await page.getByRole('button', { name: 'Open case' }).click()
    await page.locator('#reports-status.ok').waitFor()
    assert.equal(await reportStatus.textContent(), `Opened a case on ${siteUrl}: act on it in the list below.`)
    const caseRow = page.locator('#reports-table tbody tr', { hasText: siteUrl })
    // whose content it is, before anything is done to it
    assert.equal(await caseRow.locator('td:nth-child(3)').textContent(), alice.username)
    await caseRow.getByRole('button', { name: 'Quarantine' }).click()
    await page.locator('#reports-status', { hasText: `Quarantined ${siteUrl}: visitors get a 451 notice` }).waitFor()
    await page.locator('#reports-filter').selectOption('quarantined')
    await page.locator('#reports-table tbody tr', { hasText: siteUrl }).getByRole('button', { name: 'Restore' }).waitFor()
    // the status shown is in the address: a reload shows the same list
    assert.equal(new URL(page.url()).searchParams.get('status'), 'quarantined')
    await page.reload()
    assert.equal(await page.locator('#reports-filter').inputValue(), 'quarantined')
    await page.locator('#reports-table tbody tr', { hasText: siteUrl }).getByRole('button', { name: 'Restore' }).waitFor()
    const visitor = await open()
    const held = await visitor.page.goto(siteUrl)
    assert.equal(held?.status(), 451)
    assert.match((await visitor.page.textContent('body')) ?? '', /held for review/)
    // the owner sees which of her pages is held, in her dashboard
    const owner = await open()
    await login(owner.page, alice)
    await owner.page.goto(`${s.url}/dashboard/files`)
    const ownRow = owner.page.locator('#files-table tbody tr', { hasText: 'shady.html' })
    await ownRow.locator('.badge.held').waitFor()
    assert.match((await ownRow.textContent()) ?? '', /held for review: visitors get 451/)
    // and, on her dashboard's first page, what is held since when, why, and whom to ask
    await owner.page.goto(`${s.url}/dashboard`)
    const notice = owner.page.locator('#abuse-notices')
    const heldItem = notice.locator('li[data-state="quarantined"]', { hasText: `/${alice.username}/shady.html` })
    assert.match((await heldItem.textContent()) ?? '', /^Held for review since \d{4}-\d\d-\d\d \(phishing\): visitors get a 451 notice/)
    assert.equal(await notice.getByRole('link', { name: 'abuse@example.org' }).getAttribute('href'), 'mailto:abuse@example.org')
    // and which data link is held, on her data page (the case opened through the admin API)
    const aliceCookie = await s.login(alice.username, alice.password)
    const adminCookie = await s.login(admin.username, admin.password)
    await s.deps.db.k.insertInto('entitlements').values({ user_id: alice.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() }).execute()
    const made = await s.post('/api/hosted-data/files', { cookie: aliceCookie, json: { display_name: 'held.json', content: '{"held":true}' } })
    assert.equal(made.status, 200, made.text)
    assert.equal((await s.post('/api/hosted-data/files', { cookie: aliceCookie, json: { display_name: 'kept.json', content: '{}' } })).status, 200)
    const dataCase = await s.post('/svc_api/admin/reports', {
      cookie: adminCookie,
      headers: { 'user-agent': ua },
      json: { url: `${s.url}/svc-data/pub/${made.json.file.public_token}`, category: 'spam' },
    })
    assert.equal(dataCase.status, 201, dataCase.text)
    assert.equal(
      (await s.post(`/svc_api/admin/reports/${dataCase.json.data.id}/quarantine`, { cookie: adminCookie, headers: { 'user-agent': ua } })).status,
      200,
    )
    await owner.page.goto(`${s.url}/dashboard/data`)
    await owner.page.locator('#data-table tbody tr', { hasText: 'held.json' }).locator('.badge.held').waitFor()
    assert.equal(await owner.page.locator('#data-table tbody tr', { hasText: 'kept.json' }).locator('.badge.held').count(), 0)
    await owner.ctx.close()
    // the notice's report link leads to the service's report form, with the page filled in
    await visitor.page.getByRole('link', { name: 'Report content' }).click()
    await visitor.page.waitForURL('**/report?url=*')
    assert.equal(await visitor.page.locator('#report-url').inputValue(), siteUrl)
    // each action counts from its API answer: the list may show the new status (committed)
    // a moment before the caches are dropped, which the answer waits for
    const answered = (action: string) => page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith(`/${action}`))
    const restoredNow = answered('restore')
    await page.locator('#reports-table tbody tr', { hasText: siteUrl }).getByRole('button', { name: 'Restore' }).click()
    assert.equal((await restoredNow).status(), 200)
    await page.locator('#reports-filter').selectOption('restored')
    // the status cell, not a button: a quarantined row also offers Take down
    const restored = page.locator('#reports-table tbody tr', { hasText: siteUrl }).filter({ has: page.locator('td:nth-child(6)', { hasText: /^restored$/ }) })
    await restored.getByRole('button', { name: 'Take down' }).waitFor()
    assert.equal((await visitor.page.goto(siteUrl))?.status(), 200)
    await restored.getByRole('checkbox').check()
    const takenDown = answered('takedown')
    // the confirmation says the account goes too, and whose; the result says what was done
    const asked = page.waitForEvent('dialog')
    await restored.getByRole('button', { name: 'Take down' }).click()
    assert.match((await asked).message(), new RegExp(`and disable the account ${alice.username}\\?`))
    assert.equal((await takenDown).status(), 200)
    await page.locator('#reports-status', { hasText: `Took down ${siteUrl}` }).waitFor()
    assert.match((await reportStatus.textContent()) ?? '', new RegExp(`The account ${alice.username} is disabled\\.$`))
    await page.locator('#reports-filter').selectOption('taken_down')
    await page.locator('#reports-table tbody tr', { hasText: siteUrl }).getByRole('button', { name: 'Lift' }).waitFor()
    assert.equal((await visitor.page.goto(siteUrl))?.status(), 451)
    // and at the page's clean URL, where visitors may have found it (decision 169), though its
    // rows are gone: the removed notice, not a plain 404
    assert.equal((await visitor.page.goto(siteUrl.replace(/\.html$/, '')))?.status(), 451)
    assert.match((await visitor.page.textContent('body')) ?? '', /removed after an abuse report/)
    assert.equal((await s.deps.users.byId(alice.id))?.disabled, true, 'the account was disabled with the takedown')
    // the content search (in a second tab) marks the copy another account had live: its bytes
    // were taken down elsewhere
    const digest = crypto.createHash('sha256').update(sitePage).digest('hex')
    const tab = await page.context().newPage()
    await tab.goto(`${s.url}/admin/content`)
    await tab.getByLabel('SHA-256', { exact: true }).fill(digest)
    await tab.getByRole('button', { name: 'Search' }).click()
    const liveCopy = tab.locator('#content-table tbody tr', { hasText: 'copy.html' }).locator('td:nth-child(4)')
    await liveCopy.waitFor()
    assert.equal(await liveCopy.textContent(), 'live its bytes were taken down elsewhere')
    await tab.close()
    // disabled, she is told whom to ask at the login form
    const back = await open()
    await back.page.goto(`${s.url}/login`)
    await back.page.getByLabel('Username').fill(alice.username)
    await back.page.getByLabel('Password').fill(alice.password)
    await back.page.getByRole('button', { name: 'Log in' }).click()
    await back.page.waitForURL('**/login?error=disabled*')
    assert.equal(await back.page.locator('#disabled-contact').textContent(), 'To ask why, or to appeal, write to abuse@example.org')
    assert.equal(await back.page.locator('#disabled-contact a').getAttribute('href'), 'mailto:abuse@example.org')
    // enabled again (by the operator's command), she is told the page was removed, and why
    await s.deps.users.update(alice.username, { disabled: false })
    await login(back.page, alice)
    const removedItem = back.page.locator('#abuse-notices li[data-state="removed"]', { hasText: `/${alice.username}/shady.html` })
    assert.match((await removedItem.textContent()) ?? '', /^Removed on \d{4}-\d\d-\d\d \(phishing\): it answers 451/)
    await back.ctx.close()
    // lift the takedown: the page is gone (removed by the takedown) but no longer held
    const lifted = answered('lift')
    await page.locator('#reports-table tbody tr', { hasText: siteUrl }).getByRole('button', { name: 'Lift' }).click()
    assert.equal((await lifted).status(), 200)
    await page.locator('#reports-filter').selectOption('lifted')
    await page
      .locator('#reports-table tbody tr', { hasText: siteUrl })
      .filter({ has: page.locator('td:nth-child(6)', { hasText: /^lifted$/ }) })
      .waitFor()
    assert.equal((await visitor.page.goto(siteUrl))?.status(), 404)
    await visitor.ctx.close()
    // dismiss the public report on the same page, still open
    const spoofed = () => page.locator('#reports-table tbody tr', { has: page.locator('bdi', { hasText: 'abc\u202Edef' }) })
    await page.locator('#reports-filter').selectOption('open')
    const dismissAsked = page.waitForEvent('dialog')
    await spoofed().getByRole('button', { name: 'Dismiss' }).click()
    assert.equal((await dismissAsked).message(), 'Dismiss this report? It closes with no action on the content and cannot be reopened.')
    await page.locator('#reports-filter').selectOption('dismissed')
    await spoofed()
      .filter({ has: page.locator('td:nth-child(6)', { hasText: /^dismissed$/ }) })
      .waitFor()

    // content search by hash finds nothing of the removed page, but finds the copy another
    // account had live; its bytes are no longer blocked once the takedown was lifted
    await page.goto(`${s.url}/admin/content`)
    await page.getByLabel('SHA-256', { exact: true }).fill(digest)
    await page.getByRole('button', { name: 'Search' }).click()
    const copy = page.locator('#content-table tbody tr', { hasText: 'copy.html' })
    await copy.waitFor()
    assert.equal(await page.locator('#content-table tbody tr').count(), 1, 'only the copy')
    assert.equal(await copy.locator('td:nth-child(2)').textContent(), admin.username)
    assert.equal(await copy.locator('td:nth-child(4)').textContent(), 'live')
    // and which of an owner's content is held for review
    await page.getByLabel('SHA-256', { exact: true }).fill('')
    await page.getByLabel('Owner (username)').fill(alice.username)
    await page.getByRole('button', { name: 'Search' }).click()
    await page
      .locator('#content-table tbody tr', { hasText: 'held.json' })
      .locator('td:nth-child(4)', { hasText: /^held for review$/ })
      .waitFor()
    assert.equal(await page.locator('#content-table tbody tr', { hasText: 'kept.json' }).locator('td:nth-child(4)').textContent(), 'live')
    await page.getByLabel('Owner (username)').fill(`no-such-${alice.username}`)
    await page.getByRole('button', { name: 'Search' }).click()
    await page.locator('#content-table tbody tr', { hasText: 'Nothing found.' }).waitFor()

    // the audit log page shows the actions, and its downloads work
    await page.goto(`${s.url}/admin/audit`)
    await page.locator('#audit-table tbody tr', { hasText: 'abuse.takedown' }).waitFor()
    const csv = await call(page, 'GET', '/svc_api/admin/audit?format=csv')
    assert.equal(csv.status, 200)
    assert.match(csv.body, /abuse\.quarantine/)

    // every write made from the pages is in the audit log: who, what, from where
    const log = await auditActions()
    assert.deepEqual(
      log.map((e) => `${e.action} ${e.target}`),
      [
        `user.update ${alice.username}`,
        `user.update ${alice.username}`,
        `user.update ${alice.username}`,
        `user.update ${alice.username}`,
        `invite.create ${log[4].target}`,
        'settings.set registration',
        'settings.set abuse_contact',
        `abuse.open site:${alice.username}/shady.html`,
        `abuse.quarantine site:${alice.username}/shady.html`,
        `abuse.open data:${made.json.file.public_token}`,
        `abuse.quarantine data:${made.json.file.public_token}`,
        `abuse.restore site:${alice.username}/shady.html`,
        `abuse.takedown site:${alice.username}/shady.html`,
        `abuse.lift site:${alice.username}/shady.html`,
        `abuse.dismiss site:${alice.username}/shady.html`,
      ],
    )
    for (const e of log) {
      assert.equal(e.actor, admin.username)
      assert.equal(e.via, 'web')
      assert.equal(e.ip, '127.0.0.1')
      assert.equal(e.user_agent, ua, 'the browser that made the change')
    }
    assert.deepEqual(log[0].details, { tier: 'vip' })
    assert.deepEqual(log[1].details, { limits: { files: 42 } })
    const entry = (action: string) => log.find((e) => e.action === action)!
    assert.equal(entry('abuse.open').details.category, 'phishing')
    assert.equal(entry('abuse.takedown').details.disabled_account, true)
    // each case action names its report
    const reports = await s.deps.db.k.selectFrom('abuse_reports').select(['id', 'status']).execute()
    for (const e of log.filter((x) => x.action.startsWith('abuse.'))) {
      assert.ok(
        reports.some((r) => r.id === e.details.report),
        `${e.action}: its report`,
      )
    }
    assert.deepEqual(reports.map((r) => r.status).sort(), ['dismissed', 'lifted', 'open', 'quarantined'])
    assert.deepEqual(problems, [])
    await page.close()
  })

  it("the account search shows the answer to what is typed now, never an earlier search's that came back last", async () => {
    const tag = `srch${crypto.randomBytes(3).toString('hex')}`
    await s.user({ name: `${tag}a1` })
    await s.user({ name: `${tag}a2` })
    await s.user({ name: `${tag}b1` })
    const page = await pageOf(admin)
    try {
      const answers = await countXhrAnswers(page)
      await page.goto(`${s.url}/admin`)
      await page.locator(`#users-table tbody tr[data-user="${admin.username}"]`).waitFor()
      // the broader search is held until the narrower one, typed after it, has been shown
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      const isBroad = (u: URL) => u.pathname === '/svc_api/admin/users' && u.searchParams.get('search') === tag
      await page.route(isBroad, async (route) => {
        await held
        await route.continue()
      })
      const broad = page.waitForRequest((r) => isBroad(new URL(r.url())))
      await page.locator('#users-q').fill(tag)
      await broad
      await page.locator('#users-q').fill(`${tag}b`)
      // the first listing shows every account; the narrower answer leaves only b1
      await page.locator(`#users-table tbody tr[data-user="${tag}a1"]`).waitFor({ state: 'detached' })
      await page.locator(`#users-table tbody tr[data-user="${tag}b1"]`).waitFor()
      const done = await answers.handled()
      release()
      await answers.moreThan(done)
      const shown = await page.locator('#users-table tbody tr[data-user]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-user')))
      assert.deepEqual(shown, [`${tag}b1`])
      assert.equal(await page.locator('#users-q').inputValue(), `${tag}b`)
    } finally {
      await page.close()
    }
  })

  it("revokes one of an account's API keys from the accounts page: its next API call gets 401", async () => {
    const carol = await s.user()
    const { key, info } = await s.deps.apiKeys.create(carol.id, { name: 'found in a page' })
    // used before, so the server keeps the key's row between requests (decision 184)
    for (let i = 0; i < 3; i++) assert.equal((await s.get('/svc_api/me', { key })).status, 200)
    const page = await pageOf(admin)
    try {
      await page.goto(`${s.url}/admin`)
      await page.locator('#users-q').fill(carol.username)
      const row = page.locator(`#users-table tbody tr[data-user="${carol.username}"]`)
      await row.getByRole('button', { name: 'API keys' }).click()
      await page.locator('#keys-panel h2', { hasText: `API keys of ${carol.username}` }).waitFor()
      const keyRow = page.locator(`#keys-table tbody tr[data-key="${info.id}"]`)
      assert.match((await keyRow.textContent()) ?? '', new RegExp(`^found in a pagesvc_…${key.slice(-4)}full`))
      assert.equal(await page.locator('#keys-table tbody tr[data-key]').count(), 2, "carol's two keys")
      // the confirmation names the key and the account; the result stays in the status line
      const asked = page.waitForEvent('dialog')
      await keyRow.getByRole('button', { name: 'Revoke' }).click()
      assert.equal(
        (await asked).message(),
        `Revoke the key "found in a page" (svc_…${key.slice(-4)}) of ${carol.username}? It is deleted: programs using it stop working at once, and it cannot be brought back.`,
      )
      await page.locator('#keys-status.ok', { hasText: `Revoked the key "found in a page" (svc_…${key.slice(-4)}) of ${carol.username}.` }).waitFor()
      await keyRow.waitFor({ state: 'detached' })
      assert.equal(await page.locator('#keys-table tbody tr[data-key]').count(), 1)
      // the revoked key's row is gone: focus is on the line saying so, not on <body>
      await page.waitForFunction(() => document.activeElement?.id === 'keys-status')
      const after = await s.get('/svc_api/me', { key })
      assert.equal(after.status, 401, after.text)
      assert.equal(after.json.error_code, 1002)
      assert.equal((await s.get('/svc_api/me', { key: carol.key })).status, 200, 'her other key still works')
      const ua = await page.evaluate(() => navigator.userAgent)
      const entry = (await auditActions()).filter((e) => e.action === 'key.revoke')
      assert.deepEqual(entry, [
        {
          action: 'key.revoke',
          target: carol.username,
          actor: admin.username,
          via: 'web',
          ip: '127.0.0.1',
          user_agent: ua,
          details: { key_id: info.id, name: 'found in a page' },
        },
      ])
      assert.deepEqual(problems, [])
    } finally {
      await page.close()
    }
  })

  it('keeps keyboard focus in place when an action re-renders its list, never on <body>', async () => {
    const dave = await s.user()
    assert.equal((await uploadFile(s, { key: dave.key }, 'odd.html', HTML('odd'))).status, 200)
    const page = await pageOf(admin)
    const focused = () =>
      page.evaluate(() => {
        const a = document.activeElement
        return { tag: a?.tagName, id: a?.id ?? '', text: a?.textContent ?? '', row: a?.closest('tr')?.getAttribute('data-user') ?? null }
      })
    try {
      await page.goto(`${s.url}/admin`)
      await page.locator('#users-q').fill(dave.username)
      // the search's own load (250 ms after typing) has rendered: no later one replaces the row
      // while a field of it is being filled in
      await page.waitForFunction(() => document.querySelectorAll('#users-table tbody tr').length === 1)
      const row = page.locator(`#users-table tbody tr[data-user="${dave.username}"]`)
      await row.getByRole('button', { name: 'Make VIP' }).focus()
      await page.keyboard.press('Enter')
      await page.locator(`#users-table tbody tr[data-user="${dave.username}"]`, { hasText: 'vip' }).waitFor()
      // the same place in the re-rendered row: the button that undoes it
      await page.waitForFunction(() => document.activeElement?.textContent === 'Remove VIP')
      assert.deepEqual(await focused(), { tag: 'BUTTON', id: '', text: 'Remove VIP', row: dave.username })

      // the field takes what the admin API takes (2^53 - 1, svc user set's largest too); past
      // it the browser refuses the form and nothing is sent
      const field = row.locator('input[type="number"]')
      assert.equal(await field.getAttribute('max'), String(Number.MAX_SAFE_INTEGER))
      await field.fill(String(Number.MAX_SAFE_INTEGER))
      assert.equal(await field.evaluate((e) => (e as HTMLInputElement).validity.valid), true)
      await field.fill('9007199254740993')
      assert.equal(await field.evaluate((e) => (e as HTMLInputElement).validity.rangeOverflow), true)
      // a quota set below what the account holds: the admin is told, and nothing is removed
      await row.locator('select').selectOption('files')
      await row.locator('input[type="number"]').fill('0')
      await row.getByRole('button', { name: 'Set' }).click()
      await page.waitForFunction(() => document.querySelector('#users-status')?.textContent?.includes('already holds more than the new limit (files 1 > 0)'))
      assert.equal((await s.get(`/${dave.username}/odd.html`)).status, 200)

      // a report acted on leaves the "open" list: focus goes to the line saying what was done
      const opened = await call(page, 'POST', '/svc_api/admin/reports', { url: `${s.url}/${dave.username}/odd.html`, category: 'spam' })
      assert.equal(opened.status, 201, opened.body)
      await page.goto(`${s.url}/admin/reports?status=open`)
      const reportRow = page.locator('#reports-table tbody tr', { hasText: `/${dave.username}/odd.html` })
      await reportRow.getByRole('button', { name: 'Quarantine' }).focus()
      await page.keyboard.press('Enter')
      await reportRow.waitFor({ state: 'detached' })
      await page.waitForFunction(() => document.activeElement?.id === 'reports-status')
      assert.match((await focused()).text, /^Quarantined /)
      assert.deepEqual(problems, [])
    } finally {
      await page.close()
    }
  })

  it("names a report's category and status and an item's kind in the console's language, and the category on the owner's dashboard", async () => {
    const dave = await s.user()
    await uploadFile(s, { key: dave.key }, 'held.html', HTML('Held', '<p>held</p>'))
    await uploadFile(s, { key: dave.key }, 'kept.html', HTML('Kept', '<p>kept</p>'))
    const url = `http://${dave.username}.localhost:${new URL(s.httpUrl).port}/held.html`
    const adminCookie = await s.login(admin.username, admin.password)
    const made = await s.post('/svc_api/admin/reports', { cookie: adminCookie, json: { url, category: 'copyright' } })
    assert.equal(made.status, 201, made.text)
    assert.equal((await s.post(`/svc_api/admin/reports/${made.json.data.id}/takedown`, { cookie: adminCookie, json: {} })).status, 200)
    // a Chinese browser: signed in on the English form, then the language switch's cookie
    const zh = async (u: { username: string; password: string }) => {
      const ctx = await browser.newContext({ ignoreHTTPSErrors: true, locale: 'zh-CN' })
      await ctx.addCookies([{ name: 'lang', value: 'en', url: s.url }])
      const page = await ctx.newPage()
      page.setDefaultTimeout(10_000)
      page.on('pageerror', (e) => problems.push(String(e)))
      await login(page, u)
      await ctx.addCookies([{ name: 'lang', value: 'zh', url: s.url }])
      return { ctx, page }
    }
    const a = await zh(admin)
    try {
      await a.page.goto(`${s.url}/admin/reports?status=taken_down`)
      const row = a.page.locator('#reports-table tbody tr', { hasText: url })
      await row.waitFor()
      assert.equal(await row.locator('td:nth-child(4)').textContent(), '侵犯版权')
      assert.equal(await row.locator('td:nth-child(6)').textContent(), '已下架')
      // the filter and the case form offer the same words, and still send the codes
      const filter = await a.page.locator('#reports-filter option').evaluateAll((os) => os.map((o) => [(o as HTMLOptionElement).value, o.textContent]))
      assert.deepEqual(filter, [
        ['', '全部'],
        ['open', '待处理'],
        ['quarantined', '已隔离'],
        ['restored', '已恢复'],
        ['taken_down', '已下架'],
        ['lifted', '已解除下架'],
        ['dismissed', '已驳回'],
      ])
      const cats = await a.page.locator('#case-category option').evaluateAll((os) => os.map((o) => [(o as HTMLOptionElement).value, o.textContent]))
      assert.deepEqual(cats, [
        ['phishing', '钓鱼'],
        ['malware', '恶意软件'],
        ['spam', '垃圾信息'],
        ['copyright', '侵犯版权'],
        ['other', '其他'],
      ])
      // and the content search names each item's kind
      await a.page.goto(`${s.url}/admin/content`)
      await a.page.locator('#content-user').fill(dave.username)
      await a.page.locator('#content-user').press('Enter')
      const kept = a.page.locator('#content-table tbody tr', { hasText: 'kept.html' })
      assert.equal(await kept.locator('td:nth-child(1)').textContent(), '单个文件')
    } finally {
      await a.ctx.close()
    }
    const d = await zh(dave)
    try {
      await d.page.goto(`${s.url}/dashboard`)
      const item = d.page.locator('#abuse-notices li[data-state="removed"]')
      assert.match((await item.textContent()) ?? '', /^已于 \d{4}-\d\d-\d\d 下架（侵犯版权）：/)
    } finally {
      await d.ctx.close()
    }
    assert.deepEqual(problems, [])
  })

  it('takes a report from the public form without an account', async () => {
    const { ctx, page } = await open()
    try {
      await page.goto(`${s.url}/report?url=${encodeURIComponent('https://example.net/somewhere')}`)
      assert.match((await page.textContent('main')) ?? '', /abuse@example\.org/)
      // each choice is a small box right before its own words, not a full-width field
      for (const radio of await page.locator('#report-form input[type=radio]').all()) {
        const box = (await radio.boundingBox())!
        const label = (await radio.locator('xpath=..').boundingBox())!
        assert.ok(box.width < 32, `a radio ${box.width}px wide`)
        assert.ok(box.x - label.x < 8, `a radio ${box.x - label.x}px from its label's start`)
      }
      await page.getByLabel('Spam').check()
      await page.getByLabel('Details (optional)').fill('unsolicited ads')
      await page.getByRole('button', { name: 'Send report' }).click()
      await page.locator('#report-sent').waitFor()
      const rows = await s.deps.db.k.selectFrom('abuse_reports').selectAll().where('url', '=', 'https://example.net/somewhere').execute()
      assert.equal(rows.length, 1)
      assert.equal(rows[0].category, 'spam')
      assert.equal(rows[0].details, 'unsolicited ads')
      assert.equal(rows[0].source, 'public')
      assert.deepEqual(problems, [])
    } finally {
      await ctx.close()
    }
  })

  it("shows an admin the instance's health, and a failing check with its message after Refresh", async () => {
    const page = await pageOf(admin)
    try {
      await page.goto(`${s.url}/admin`)
      // the console's own pages are a row of links, not a bulleted list
      const links = page.locator('nav.subnav li')
      assert.equal(await page.locator('nav.subnav ul').evaluate((ul) => getComputedStyle(ul).listStyleType), 'none')
      const tops = await links.evaluateAll((lis) => lis.map((li) => li.getBoundingClientRect().top))
      assert.equal(new Set(tops).size, 1, `one row at this width: ${tops.join(', ')}`)
      await page.locator('nav.subnav a[href="/admin/health"]').click()
      await page.waitForURL('**/admin/health')
      const db = page.locator('#health-checks tbody tr[data-check="database"]')
      await db.waitFor()
      assert.equal(await db.locator('td').first().textContent(), 'Database')
      assert.equal(await db.locator('.badge.on').textContent(), 'ok')
      assert.equal(await page.locator('#health-overall.badge.on').textContent(), 'ok')
      const version = (JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version
      const shown = (await page.locator('#health-facts tbody tr[data-fact="version"]').textContent()) ?? ''
      assert.ok(shown.includes(`svc ${version} (API `), shown)
      assert.match((await page.locator('#health-facts tbody tr[data-fact="database"]').textContent()) ?? '', /SQLite/)

      // the blob store's temp folder gone: Refresh shows the storage check failing, with its message
      const tmp = path.join(s.dataDir, 'blobs', 'tmp')
      fs.renameSync(tmp, `${tmp}-away`)
      try {
        await page.getByRole('button', { name: 'Refresh' }).click()
        const storage = page.locator('#health-checks tbody tr[data-check="storage"]')
        await storage.locator('.badge.held', { hasText: 'error' }).waitFor()
        assert.match((await storage.locator('code').textContent()) ?? '', /^ENOENT/)
        assert.equal(await page.locator('#health-overall.badge.held').textContent(), 'unavailable')
      } finally {
        fs.renameSync(`${tmp}-away`, tmp)
      }
      assert.deepEqual(problems, [])
    } finally {
      await page.close()
    }
  })

  it('shows the backup interval as BACKUP_EVERY gives it, seconds included', async () => {
    // the server's BACKUP_EVERY is 90s (before); the page once rounded it down to whole minutes ("1 min")
    const page = await pageOf(admin)
    try {
      await page.goto(`${s.url}/admin/health`)
      const row = page.locator('#health-facts tbody tr[data-fact="backups"]')
      await row.waitFor()
      const text = (await row.textContent()) ?? ''
      assert.ok(text.includes(`every 90 s to ${backupDir}, 7 kept`), text)
    } finally {
      await page.close()
    }
  })
})
