import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, uploadFile } from '../support/hosting.js'
import { registry } from '../../src/observability/registry.js'

/**
 * Fast paths (answers written before routing) must not show: for each cached public answer,
 * the router (the first read, which fills the cache), the fast path (the next read) and
 * `app.inject` (which reaches the router directly; the app runs the fast paths in a hook
 * there) give the same status, body and headers, but the per-request ones.
 */

/** Headers that differ per request or per connection, whoever answers. */
const PER_REQUEST = new Set(['date', 'x-request-id', 'connection', 'keep-alive', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'transfer-encoding'])

const fastPathAnswers = async (): Promise<number> => {
  let n = 0
  for (const m of (await registry.getSingleMetric('svc_http_requests_total')?.get())?.values ?? []) if (m.labels.route === '(fast path)') n += m.value
  return n
}

const comparable = (headers: Record<string, string | string[] | number | undefined>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers))
    if (!PER_REQUEST.has(k.toLowerCase()) && v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v)
  return out
}

for (const engine of ENGINES) {
  describe(`fast paths answer as the router does [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    let etag = ''
    const page = HTML('parity', `<p>${'the same bytes either way; '.repeat(40)}</p>`)
    // behind a proxy that says HTTPS, so inject (plain, no TLS socket) takes the same branches
    const proxied = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '192.0.2.7' }

    // one file per case, so the case's first read finds its cache cold
    const NAMES = ['plain', 'etag', 'range', 'range416']
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, TRUST_PROXY: '1' } })
      u = await s.user()
      for (const n of [...NAMES, 'origin']) {
        const up = await uploadFile(s, { key: u.key }, `${n}.html`, page, {}, proxied)
        assert.equal(up.status, 200, up.text)
      }
      const st = await s.post('/svc_api/data/store', { key: u.key, json: { key: 'parity', value: { a: [1, 2, 3] }, is_public: true }, headers: proxied })
      assert.equal(st.status, 200, st.text)
      // the ETag is the content's, the same for every file: learnt from the router
      etag = (await s.app.inject({ method: 'HEAD', url: `/${u.username}/origin.html`, headers: proxied })).headers.etag as string
      assert.ok(etag)
    })
    after(() => s?.close())

    // [name, request, whether the first read (a cache miss) goes through the router]
    const cases: Array<[string, () => { url: string; headers: Record<string, string> }, boolean]> = [
      // a path-form page whose holds and visitor access are known is taken before routing,
      // its misses too (resolved there); the router's handler serves the others the same way
      ['a hosted page', () => ({ url: `/${u.username}/plain.html`, headers: {} }), false],
      ['a hosted page, If-None-Match (304)', () => ({ url: `/${u.username}/etag.html`, headers: { 'if-none-match': etag } }), false],
      ['a hosted page, Range', () => ({ url: `/${u.username}/range.html`, headers: { range: 'bytes=5-99' } }), false],
      ['a hosted page, unsatisfiable Range (416)', () => ({ url: `/${u.username}/range416.html`, headers: { range: 'bytes=999999-' } }), false],
      // a user's origin is always taken before routing (its misses are read there too)
      ["a page on the user's origin", () => ({ url: '/origin.html', headers: { host: `${u.username}.localhost:${new URL(s.url).port}` } }), false],
      ['the KV public read', () => ({ url: `/svc_api/data/public/${u.username}/parity`, headers: {} }), true],
    ]
    for (const [name, make, routedFirst] of cases) {
      it(name, async () => {
        const { url, headers } = make()
        const h = { ...proxied, ...headers }
        const n0 = await fastPathAnswers()
        const first = await s.get(url, { headers: h })
        assert.equal(await fastPathAnswers(), routedFirst ? n0 : n0 + 1, routedFirst ? 'the first read is routed' : 'taken before routing')
        const fast = await s.get(url, { headers: h })
        assert.equal(await fastPathAnswers(), (routedFirst ? n0 : n0 + 1) + 1, 'the next read is a fast-path answer')
        assert.equal(first.status, fast.status)
        assert.equal(first.text, fast.text)
        assert.deepEqual(comparable(first.headers), comparable(fast.headers))
        const injected = await s.app.inject({ method: 'GET', url, headers: { host: new URL(s.url).host, ...h } })
        assert.equal(injected.statusCode, fast.status)
        assert.equal(injected.body, fast.text)
        assert.deepEqual(comparable(injected.headers), comparable(fast.headers))
      })
    }
  })
}
