import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BrowserContext } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { openContext } from '../support/browser.js'

// The public read is plain HTTP semantics, the same on both engines: one engine is enough here.
const engine = ENGINES[0]

describe(`key-value public read from a sandboxed hosted page [${engine}]`, () => {
  let s: TestServer
  let ctx: BrowserContext
  const pages: http.Server[] = []
  before(async () => {
    s = await startServer({ engine })
    ctx = await openContext()
  })
  after(async () => {
    await ctx?.close()
    for (const p of pages) await new Promise((resolve) => p.close(resolve))
    await s.close()
  })

  it('reads a public entry with fetch() from an opaque origin (Origin: null), and gets 1604 bodies too', async () => {
    const u = await s.user()
    await s.post('/svc_api/data/store', { key: u.key, json: { key: 'board', value: { top: ['玩家', 42] }, is_public: true } })
    const page = await ctx.newPage()
    try {
      // a hosted page as the public host serves it (CSP sandbox without allow-same-origin),
      // from another loopback origin
      const host = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': 'sandbox allow-scripts' })
        res.end('<!doctype html><title>hosted</title><p>hi</p>')
      })
      await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve))
      pages.push(host)
      const pageUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}/page.html`
      const seen: Array<Promise<string | null>> = []
      page.on('request', (r) => {
        if (r.url().includes('/svc_api/data/public/')) seen.push(r.headerValue('origin'))
      })
      const logs: string[] = []
      page.on('console', (m) => logs.push(m.text()))
      page.on('requestfailed', (r) => logs.push(`failed ${r.url()} ${r.failure()?.errorText}`))
      page.on('response', (r) => logs.push(`response ${r.url()} ${r.status()} ${JSON.stringify(r.headers())}`))
      await page.goto(pageUrl)
      const out = await page
        .evaluate(
          async ([base, user]) => {
            const ok = await fetch(`${base}/svc_api/data/public/${user}/board`)
            // a non-simple header makes the browser send a preflight first
            const legacy = await fetch(`${base}/svc_api/data/public/board`, { headers: { 'Content-Type': 'application/json' } })
            const missing = await fetch(`${base}/svc_api/data/public/${user}/nothing`)
            return {
              origin: self.origin,
              ok: { status: ok.status, json: await ok.json(), remaining: ok.headers.get('x-ratelimit-remaining') },
              legacy: { status: legacy.status, json: await legacy.json() },
              missing: { status: missing.status, json: await missing.json() },
            }
          },
          [s.url, u.username],
        )
        .catch((e) => {
          throw new Error(`${e.message}\n${logs.join('\n')}`)
        })
      assert.equal(out.origin, 'null')
      assert.equal(out.ok.status, 200)
      assert.deepEqual(out.ok.json.data.value, { top: ['玩家', 42] })
      assert.equal(out.ok.json.data.owner, u.username)
      assert.ok(out.ok.remaining !== null, 'X-RateLimit-* headers are exposed to the page')
      assert.equal(out.legacy.status, 200)
      assert.equal(out.legacy.json.data.owner, u.username)
      assert.equal(out.missing.status, 404)
      assert.equal(out.missing.json.error_code, 1604)
      const origins = await Promise.all(seen)
      assert.ok(origins.length >= 3 && origins.every((o) => o === 'null'), `requests carried Origin: null (${origins.join(',')})`)
    } finally {
      await page.close()
    }
  })
})
