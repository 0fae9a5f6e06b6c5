import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext, Page } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { openContext, sessionCookiesFor } from '../support/browser.js'

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

  it('a like button in two tabs: every increment counts once, with the owner key the page holds', async () => {
    // the owner opens their own page with the key in the fragment (never sent to the server)
    const page = appPage(
      s.url,
      alice.username,
      `
    const KEY = location.hash.slice(1)
    const like = () => fetch(API + '/svc_api/data/incr', { method: 'POST', headers: { Authorization: 'Bearer ' + KEY, 'Content-Type': 'application/json' }, body: JSON.stringify({ key: 'likes' }) })
    const answers = await Promise.all(Array.from({ length: 15 }, like))
    out.statuses = answers.map((r) => r.status)
    out.remaining = answers[0].headers.get('x-ratelimit-remaining')
    const r = await fetch(API + '/svc_api/data/get?key=likes', { headers: { Authorization: 'Bearer ' + KEY } })
    out.get = { status: r.status, body: await r.json() }`,
    )
    assert.equal((await uploadFile(s, { key: alice.key }, 'likes.html', page)).status, 200)
    const [a, b] = [await ctx.newPage(), await ctx.newPage()]
    try {
      const url = `${siteOf(alice)}/likes.html#${alice.key}`
      const [outA, outB] = await Promise.all([run(a, url), run(b, url)])
      for (const out of [outA, outB]) {
        assert.equal(out.threw, undefined, `the page could call the API (${JSON.stringify(out)})`)
        assert.ok(
          (out.statuses as number[]).every((st) => st === 200),
          JSON.stringify(out.statuses),
        )
        assert.ok(out.remaining !== null, 'X-RateLimit-* headers are exposed to the page')
      }
      const got = await s.get('/svc_api/data/get?key=likes', { key: alice.key })
      assert.equal(got.json.data.value, 30, 'two tabs of 15 likes each: 30')
    } finally {
      await a.close()
      await b.close()
    }
  })

  it('a todo list synced from localStorage: a stale tab reads its 409, an unload save arrives', async () => {
    // the list lives in localStorage (shared by the tabs), each tab keeps the version it last saw; saves are
    // compare-and-swap, and the page saves once more with keepalive when it is left
    const page = appPage(
      s.url,
      alice.username,
      `
    const KEY = location.hash.slice(1)
    const auth = { Authorization: 'Bearer ' + KEY, 'Content-Type': 'application/json' }
    let version = 0
    const load = async () => {
      const r = await fetch(API + '/svc_api/data/get?key=todos', { headers: auth })
      const j = await r.json()
      if (r.status === 200) { localStorage.setItem('todos', JSON.stringify(j.data.value)); version = j.data.version }
      else version = 0
      return { status: r.status, code: j.error_code ?? null }
    }
    window.save = async (todos) => {
      localStorage.setItem('todos', JSON.stringify(todos))
      const r = await fetch(API + '/svc_api/data/store', { method: 'POST', headers: auth, body: JSON.stringify({ key: 'todos', value: todos, version }) })
      const j = await r.json()
      if (r.status === 200) version = j.data.version
      return { status: r.status, code: j.error_code ?? null, details: j.details ?? null }
    }
    addEventListener('pagehide', () => {
      fetch(API + '/svc_api/data/store', { method: 'POST', keepalive: true, headers: auth, body: JSON.stringify({ key: 'todos-unload', value: JSON.parse(localStorage.getItem('todos') || '[]') }) })
    })
    out.load = await load()`,
    )
    assert.equal((await uploadFile(s, { key: alice.key }, 'todo.html', page)).status, 200)
    const [a, b] = [await ctx.newPage(), await ctx.newPage()]
    try {
      const url = `${siteOf(alice)}/todo.html#${alice.key}`
      const first = await run(a, url)
      assert.deepEqual(first.load, { status: 404, code: 1604 }, 'the first visit reads the 1604 of a missing entry')
      const save = (p: Page, todos: unknown) => p.evaluate((t) => (window as unknown as { save: (t: unknown) => Promise<Out> }).save(t), todos)
      assert.equal((await save(a, ['milk'])).status, 200)
      await run(b, url)
      assert.equal((await save(a, ['milk', 'eggs'])).status, 200)
      // tab b still holds version 1: its save is refused and the page reads why
      const stale = await save(b, ['bread'])
      assert.equal(stale.status, 409)
      assert.equal(stale.code, 1409)
      assert.equal((stale.details as { current_version: number }).current_version, 2)
      assert.deepEqual((await s.get('/svc_api/data/get?key=todos', { key: alice.key })).json.data.value, ['milk', 'eggs'])
      // leaving the page: the keepalive save is sent after the page is gone
      await b.goto('about:blank')
      let arrived: unknown
      for (let i = 0; i < 100 && arrived === undefined; i++) {
        const r = await s.get('/svc_api/data/get?key=todos-unload', { key: alice.key })
        if (r.status === 200) arrived = r.json.data.value
        else await new Promise((r) => setTimeout(r, 50))
      }
      assert.deepEqual(arrived, ['bread'], 'the unload save arrived')
    } finally {
      await a.close()
      await b.close()
    }
  })

  it("errors reach the page with CORS; another user's page cannot write with the visitor's session", async () => {
    // a server of its own: the anonymous calls below would meet the small tier the first test used up
    const s2 = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    const site = (u: User) => `http://${u.username}.localhost:${new URL(s2.httpUrl).port}`
    const alice = await s2.user()
    const bob = await s2.user()
    const visitorCookie = await s2.login(alice.username, alice.password)
    const csrf = await s2.csrfToken(visitorCookie)
    await ctx.addCookies(sessionCookiesFor(visitorCookie, s2.url))
    const page = appPage(
      s2.url,
      bob.username,
      `
    const KEY = location.hash.slice(1)
    const call = async (name, path, init) => {
      try {
        const r = await fetch(path.startsWith('http') ? path : API + path, init)
        const j = await r.json()
        out[name] = { status: r.status, code: j.error_code ?? null, success: j.success }
      } catch (e) { out[name] = { threw: e.name } }
    }
    const json = (key, body) => ({ method: 'POST', headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' }, body: JSON.stringify(body) })
    await call('badKey', '/svc_api/data/store', json('svc_' + 'x'.repeat(60), { key: 'a', value: 1 }))
    await call('badFormat', '/svc_api/data/store', json(KEY, { key: '../etc', value: 1 }))
    await call('tooLarge', '/svc_api/data/store', json(KEY, { key: 'big', value: 'x'.repeat(70000) }))
    await call('missing', '/svc_api/data/delete?key=nothing', { method: 'DELETE', headers: { Authorization: 'Bearer ' + KEY } })
    await call('noAuth', '/svc_api/data/list', {})
    // the API over plain HTTP: the page reads the 1116 that says to use https
    await call('plainHttp', ${JSON.stringify(s2.httpUrl)} + '/svc_api/data/get?key=a', { headers: { Authorization: 'Bearer ' + KEY } })
    // the visitor (Alice) is signed in to the service: Bob's page tries to act as her
    await call('asVisitor', '/svc_api/data/store', { method: 'POST', credentials: 'include', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': ${JSON.stringify(csrf)} }, body: JSON.stringify({ key: 'pwned', value: 1 }) })
    await call('readAsVisitor', '/svc_api/data/list', { credentials: 'include' })`,
    )
    assert.equal((await uploadFile(s2, { key: bob.key }, 'errors.html', page)).status, 200)
    const p = await ctx.newPage()
    try {
      const out = await run(p, `${site(bob)}/errors.html#${bob.key}`)
      assert.deepEqual(out.badKey, { status: 401, code: 1002, success: false })
      assert.deepEqual(out.badFormat, { status: 400, code: 1606, success: false })
      assert.deepEqual(out.tooLarge, { status: 400, code: 1602, success: false })
      assert.deepEqual(out.missing, { status: 404, code: 1604, success: false })
      assert.deepEqual(out.noAuth, { status: 401, code: 1001, success: false })
      assert.deepEqual(out.plainHttp, { status: 400, code: 1116, success: false })
      // no answer allows credentials: the page reads nothing it sent the visitor's cookie with
      assert.deepEqual(out.asVisitor, { threw: 'TypeError' })
      assert.deepEqual(out.readAsVisitor, { threw: 'TypeError' })
      assert.equal((await s2.get('/svc_api/data/get?key=pwned', { key: alice.key })).status, 404, 'nothing was written as the visitor')
    } finally {
      await p.close()
      await ctx.clearCookies()
      await s2.close()
    }
  })
})

describe(`a visit counter on a user's own origin, without a key (Chromium) [${engine}]`, () => {
  let s: TestServer
  let ctx: BrowserContext
  let alice: User
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    alice = await s.user()
    ctx = await openContext()
  })
  after(async () => {
    await ctx?.close()
    await s?.close()
  })

  it('each load adds 1 to a public counter with a plain fetch and shows the count', async () => {
    const store = (body: unknown) => s.post('/svc_api/data/store', { key: alice.key, json: body })
    assert.equal((await store({ key: 'visits', value: 41, data_type: 'number', public_incr: true })).status, 200)
    // the page holds no key (a write key would be refused on upload, decision 223): a POST
    // without a body or custom header is a simple request, so not even a preflight is sent
    const page = appPage(
      s.url,
      alice.username,
      `
    const r = await fetch(API + '/svc_api/data/public/' + USER + '/visits/incr', { method: 'POST' })
    const j = await r.json()
    document.body.append(Object.assign(document.createElement('p'), { id: 'count', textContent: j.success ? j.data.value + ' visits' : 'error ' + j.error_code }))
    out.status = r.status
    out.etag = r.headers.get('etag')`,
    )
    assert.equal((await uploadFile(s, { key: alice.key }, 'counter.html', page)).status, 200)
    const p = await ctx.newPage()
    const preflights: string[] = []
    p.on('request', (r) => {
      if (r.method() === 'OPTIONS') preflights.push(r.url())
    })
    try {
      const url = `http://${alice.username}.localhost:${new URL(s.httpUrl).port}/counter.html`
      const first = await run(p, url)
      assert.equal(first.status, 200, JSON.stringify(first))
      assert.equal(await p.locator('#count').textContent(), '42 visits')
      const second = await run(p, url)
      assert.equal(await p.locator('#count').textContent(), '43 visits')
      assert.notEqual(second.etag, first.etag, 'each answer names the version it made')
      assert.deepEqual(preflights, [])
      // a counter its owner unmarks is no longer anyone's to add to: the page reads the 404
      assert.equal((await store({ key: 'visits', value: 43, public_incr: false })).status, 200)
      const third = await run(p, url)
      assert.equal(third.status, 404)
      assert.equal(await p.locator('#count').textContent(), 'error 1604')
      assert.equal((await s.get('/svc_api/data/get?key=visits', { key: alice.key })).json.data.value, 43)
    } finally {
      await p.close()
    }
  })
})

describe(`a guestbook listed on a user's own origin, without a key (Chromium) [${engine}]`, () => {
  let s: TestServer
  let ctx: BrowserContext
  let alice: User
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    alice = await s.user()
    ctx = await openContext()
  })
  after(async () => {
    await ctx?.close()
    await s?.close()
  })

  it("lists the owner's public entries page by page with a plain fetch; private ones never, a new one at the next load", async () => {
    const store = (body: unknown) => s.post('/svc_api/data/store', { key: alice.key, json: body })
    for (const [key, name, text] of [
      ['msg-1', 'Ana', 'hello'],
      ['msg-2', 'Bo', '你好'],
      ['msg-3', 'Cy', '<b>not markup</b>'],
    ])
      assert.equal((await store({ key, value: { name, text }, is_public: true })).status, 200)
    assert.equal((await store({ key: 'msg-0', value: { name: 'owner', text: 'draft, private' } })).status, 200)
    assert.equal((await store({ key: 'settings', value: { theme: 'dark' }, is_public: true })).status, 200)
    // the page holds no key; a GET without custom headers sends no preflight. Two entries a
    // page, followed by next_after, to show every message under the prefix
    const page = appPage(
      s.url,
      alice.username,
      `
    const list = document.createElement('ul')
    list.id = 'book'
    document.body.append(list)
    out.statuses = []
    let after = ''
    for (;;) {
      const r = await fetch(API + '/svc_api/data/public-list/' + USER + '?prefix=msg-&per_page=2&after=' + encodeURIComponent(after))
      const j = await r.json()
      out.statuses.push(r.status)
      if (!j.success) { out.error = j.error_code; break }
      for (const e of j.data.items) list.append(Object.assign(document.createElement('li'), { textContent: e.value.name + ': ' + e.value.text }))
      if (j.data.next_after === null) break
      after = j.data.next_after
    }`,
    )
    assert.equal((await uploadFile(s, { key: alice.key }, 'guestbook.html', page)).status, 200)
    const p = await ctx.newPage()
    const preflights: string[] = []
    p.on('request', (r) => {
      if (r.method() === 'OPTIONS') preflights.push(r.url())
    })
    try {
      const url = `http://${alice.username}.localhost:${new URL(s.httpUrl).port}/guestbook.html`
      const first = await run(p, url)
      assert.deepEqual(first.statuses, [200, 200], JSON.stringify(first))
      assert.deepEqual(await p.locator('#book li').allTextContents(), ['Ana: hello', 'Bo: 你好', 'Cy: <b>not markup</b>'])
      // the owner signs a message and hides another: the next load shows both changes (the
      // browser may revalidate its copy: the page's ETag changed, so it gets the new list)
      assert.equal((await store({ key: 'msg-4', value: { name: 'Di', text: 'new' }, is_public: true })).status, 200)
      assert.equal((await store({ key: 'msg-2', value: { name: 'Bo', text: '你好' }, is_public: false })).status, 200)
      const second = await run(p, url)
      assert.deepEqual(second.statuses, [200, 200], JSON.stringify(second))
      assert.deepEqual(await p.locator('#book li').allTextContents(), ['Ana: hello', 'Cy: <b>not markup</b>', 'Di: new'])
      assert.deepEqual(preflights, [])
    } finally {
      await p.close()
    }
  })
})
