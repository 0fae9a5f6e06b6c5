import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { uploadFile } from '../support/hosting.js'
import { openContext } from '../support/browser.js'

// Small apps a user hand-writes on their own origin (http://{username}.localhost:PORT) that
// use the key-value store with fetch(), driven in Chromium. CORS and the rate limit are plain
// HTTP, the same on both engines: one engine is enough here.
const engine = ENGINES[0]

type User = Awaited<ReturnType<TestServer['user']>>
type Out = Record<string, unknown>

/** The anonymous tier is small, so a page reaches it; keys are not the subject here. */
const LIMITS = JSON.stringify({
  default: { minute: 4, hour: 1000, day: 10000, concurrent: 20 },
  authenticated: { minute: 100000, hour: 100000, day: 1000000, concurrent: 1000 },
  vip: { minute: 100000, hour: 100000, day: 1000000, concurrent: 1000 },
})

/** A page whose script is `body` (an async function body with API and USER in scope); it leaves `out` in window.__out. */
const appPage = (
  api: string,
  user: string,
  body: string,
) => `<!doctype html><html><head><title>loading</title><link rel="icon" href="data:,"></head><body><script>
(async () => {
  const API = ${JSON.stringify(api)}
  const USER = ${JSON.stringify(user)}
  const out = {}
  try {
${body}
  } catch (e) { out.threw = String(e) }
  window.__out = out
  document.title = 'done'
})()
</script></body></html>`

async function run(page: Page, url: string): Promise<Out> {
  await page.goto(url)
  await page.waitForFunction(() => document.title === 'done', null, { timeout: 20_000 })
  return page.evaluate(() => (window as unknown as { __out: Out }).__out)
}

describe(`key-value apps on a user's own origin (Chromium) [${engine}]`, () => {
  let s: TestServer
  let ctx: BrowserContext
  let alice: User
  let siteOf: (u: User) => string
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: LIMITS } })
    alice = await s.user()
    siteOf = (u) => `http://${u.username}.localhost:${new URL(s.httpUrl).port}`
    ctx = await openContext()
  })
  after(async () => {
    await ctx?.close()
    await s?.close()
  })

  it('a leaderboard past the anonymous rate limit reads the 429 answer; preflights are not counted', async () => {
    for (const k of ['top1', 'top2', 'top3', 'top4', 'top5', 'top6'])
      assert.equal((await s.post('/svc_api/data/store', { key: alice.key, json: { key: k, value: k, is_public: true } })).status, 200)
    // a fetch wrapper that sends a custom header: every new URL costs the browser a preflight
    const page = appPage(
      s.url,
      alice.username,
      `
    out.reads = []
    for (const k of ['top1', 'top2', 'top3', 'top4', 'top5', 'top6']) {
      try {
        const r = await fetch(API + '/svc_api/data/public/' + USER + '/' + k, { headers: { 'X-Requested-With': 'leaderboard' } })
        const j = await r.json()
        out.reads.push({ status: r.status, code: j.error_code ?? null, value: j.data ? j.data.value : null, retryAfter: r.headers.get('retry-after') })
      } catch (e) {
        out.reads.push({ threw: e.name })
      }
    }`,
    )
    assert.equal((await uploadFile(s, { key: alice.key }, 'board.html', page)).status, 200)
    const p = await ctx.newPage()
    try {
      const out = await run(p, `${siteOf(alice)}/board.html`)
      const reads = out.reads as Array<Record<string, unknown>>
      assert.deepEqual(
        reads.slice(0, 4).map((r) => r.value),
        ['top1', 'top2', 'top3', 'top4'],
        `four reads fit the limit of 4 (${JSON.stringify(reads)})`,
      )
      for (const r of reads.slice(4)) {
        assert.equal(r.status, 429, `the page reads the refusal, not a network error (${JSON.stringify(reads)})`)
        assert.equal(r.code, 1204)
        assert.ok(Number(r.retryAfter) >= 1, 'Retry-After is exposed to the page')
      }
    } finally {
      await p.close()
    }
  })
})
