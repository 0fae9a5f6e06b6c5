import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { type BrowserLease, openBrowser, sessionCookiesFor, watchErrors } from '../support/browser.js'
import { startDns, type TestDns } from '../support/dns.js'

// The dashboard's domain page in Chromium: add a domain, read the DNS record to create, verify
// it (against a DNS server on loopback), make it primary and undo it, and protect a project
// with a visitor password.
const engine = ENGINES[0]

describe(`dashboard: domains and visitor access in Chromium [${engine}]`, () => {
  let s: TestServer
  let dns: TestDns
  let browser: BrowserLease
  let alice: Awaited<ReturnType<TestServer['user']>>

  before(async () => {
    dns = await startDns()
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr } })
    alice = await s.user({ name: 'alice' })
    assert.equal((await batchUpload(s, { key: alice.key }, 'site', [{ filename: 'index.html', data: '<p>dash site</p>' }])).status, 200)
    assert.equal((await s.post('/api/folders/site/publish', { key: alice.key })).status, 200)
    browser = await openBrowser()
  })
  after(async () => {
    await browser?.close()
    await s?.close()
    await dns?.close()
  })

  it('adds, verifies and makes primary a domain, and sets a visitor password', async () => {
    const cookie = await s.login(alice.username, alice.password)
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true, locale: 'en-US' })
    await ctx.addCookies(sessionCookiesFor(cookie, s.url))
    const page = await ctx.newPage()
    const problems = watchErrors(page)
    page.on('dialog', (d) => void d.accept())
    await page.goto(`${s.url}/dashboard/domains`)
    await page.waitForSelector('#dom-project option[value="site"]', { state: 'attached' })
    await page.fill('#dom-domain', 'www.example.test')
    await page.click('#dom-form button[type=submit]')
    const rec = await page.waitForSelector('.dns-record')
    const text = (await rec.textContent()) ?? ''
    const m = /^(_svc-challenge\.www\.example\.test)\s+TXT\s+"(svc-verify=[0-9a-f]{32})"$/.exec(text)
    assert.ok(m, text)
    dns.txt.set(m[1], [m[2]])
    await page.click('button[aria-label="Verify now www.example.test"]')
    await page.waitForFunction(() => document.getElementById('dom-status')?.textContent?.includes('is verified'))
    // the table is drawn again after the status line: wait for it rather than sample it once
    await page.waitForFunction(() => /www\.example\.test\s*site\s*verified/.test(document.querySelector('#dom-table tbody')?.textContent ?? ''))
    assert.equal((await s.get('/', { headers: { host: 'www.example.test' } })).text, '<p>dash site</p>')

    // primary: browsers opening the project on alice's origin are sent to the domain, until undone
    const nav = { host: 'alice.localhost', 'sec-fetch-dest': 'document' }
    await page.click('button[aria-label="Make primary www.example.test"]')
    await page.waitForFunction(() => document.getElementById('dom-status')?.textContent?.includes('is the primary domain of site'))
    await page.waitForFunction(() => /www\.example\.test\s*site\s*primary/.test(document.querySelector('#dom-table tbody')?.textContent ?? ''))
    assert.equal((await s.get('/site/', { headers: nav })).header('location'), 'https://www.example.test/')
    await page.click('button[aria-label="Not primary www.example.test"]')
    await page.waitForFunction(() => document.getElementById('dom-status')?.textContent?.includes('is no longer the primary domain'))
    await page.waitForFunction(() => /www\.example\.test\s*site\s*verified/.test(document.querySelector('#dom-table tbody')?.textContent ?? ''))
    assert.equal((await s.get('/site/', { headers: nav })).text, '<p>dash site</p>')

    await page.fill('#acc-name', 'site')
    await page.fill('#acc-password', 'dash-secret')
    await page.click('#acc-form button[type=submit]')
    await page.waitForFunction(() => /site\s*yes\s*never/.test(document.querySelector('#acc-table tbody')?.textContent ?? ''))
    assert.equal((await s.get('/alice/site/')).status, 401)
    assert.equal((await s.get('/', { headers: { host: 'www.example.test' } })).status, 401)

    await page.click('button[aria-label="Delete www.example.test"]')
    await page.waitForFunction(() => document.querySelector('#dom-table tbody')?.textContent?.includes('No custom domains yet.'))
    assert.deepEqual(problems, [])
    await ctx.close()
  })
})
