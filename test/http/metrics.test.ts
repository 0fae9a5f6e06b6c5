import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { Readable } from 'node:stream'
import Fastify from 'fastify'
import { request } from 'undici'
import { ENGINES, insecureAgent, startServer, multipart, type TestServer } from '../support/server.js'
import { until } from '../support/webhooks.js'
import { countServed } from '../../src/observability/http.js'
import { registry } from '../../src/observability/registry.js'
import { sample } from '../support/metrics.js'

for (const engine of ENGINES) {
  describe(`metrics [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: JSON.stringify({ authenticated: { minute: 3 } }) } })
      alice = await s.user()
    })
    after(() => s.close())

    const scrape = async () => {
      const r = await s.get('/metrics')
      assert.equal(r.status, 200)
      return r.text
    }

    it('serves Prometheus text to a direct loopback client, no-store', async () => {
      const r = await s.get('/metrics')
      assert.equal(r.status, 200)
      assert.match(r.header('content-type')!, /^text\/plain; version=0\.0\.4/)
      assert.equal(r.header('cache-control'), 'no-store')
      assert.match(r.text, /# TYPE svc_http_requests_total counter/)
      assert.match(r.text, /# TYPE svc_http_request_duration_seconds histogram/)
      assert.match(r.text, /svc_process_cpu_seconds_total/)
    })

    it('counts requests and latency by route pattern, never by raw URL or query', async () => {
      const t0 = await scrape()
      const before = sample(t0, 'svc_http_requests_total', { route: '/svc_api/me', method: 'GET', status: '200' })
      const r = await s.get('/svc_api/me?token=sekrit-query-value', { key: alice.key })
      assert.equal(r.status, 200)
      await s.get('/no-such-page-sekrit-path')
      await s.get('/svc_api/missing-sekrit-endpoint')
      const t1 = await scrape()
      assert.equal(sample(t1, 'svc_http_requests_total', { route: '/svc_api/me', method: 'GET', status: '200' }), before + 1)
      assert.ok(sample(t1, 'svc_http_request_duration_seconds_count', { route: '/svc_api/me', method: 'GET' }) >= 1)
      assert.ok(sample(t1, 'svc_http_requests_total', { route: '(unmatched)', method: 'GET', status: '404' }) >= 1)
      assert.ok(sample(t1, 'svc_http_requests_total', { route: '/svc_api/*', method: 'GET', status: '404' }) >= 1)
      assert.ok(!t1.includes('sekrit'), 'no raw path or query in labels')
      assert.ok(!t1.includes(alice.username) && !t1.includes(alice.key), 'no user or key in labels')
      assert.ok(!t1.includes('127.0.0.1'), 'no client address in labels')
    })

    it('counts rate-limit rejections by window', async () => {
      const bob = await s.user()
      const before = sample(await scrape(), 'svc_rate_limit_rejections_total', { window: 'minute' })
      const codes: number[] = []
      for (let i = 0; i < 5; i++) codes.push((await s.get('/svc_api/me', { key: bob.key })).status)
      assert.deepEqual(codes, [200, 200, 200, 429, 429])
      assert.equal(sample(await scrape(), 'svc_rate_limit_rejections_total', { window: 'minute' }), before + 2)
    })

    it('counts blob bytes read and stored, storage errors and database errors', async () => {
      const t0 = await scrape()
      const body = Buffer.from('x'.repeat(1234))
      const { digest } = await s.deps.blobs.put(body)
      const stream = await s.deps.blobs.get(digest)
      for await (const _ of stream) {
        /* drain */
      }
      await s.deps.blobs.read(digest)
      await assert.rejects(s.deps.blobs.get('0'.repeat(64)))
      await assert.rejects(sql`select nope from no_such_table`.execute(s.deps.db.k))
      const t1 = await scrape()
      const d = (name: string, labels: Record<string, string>) => sample(t1, name, labels) - sample(t0, name, labels)
      assert.equal(d('svc_blob_bytes_read_total', { driver: 'local' }), 2468)
      assert.equal(d('svc_blob_bytes_stored_total', { driver: 'local' }), 1234)
      assert.equal(d('svc_storage_errors_total', { driver: 'local', op: 'get' }), 1)
      assert.equal(d('svc_db_errors_total', { engine, kind: 'other' }), 1)
    })

    it('counts hosted pages: cached hits under route "(fast path)", body bytes as served by "hosting"', async () => {
      const u = await s.user()
      const html = `<!doctype html><p>${'m'.repeat(3000)}</p>`
      const mp = multipart([{ name: 'file', filename: 'm.html', type: 'text/html', data: html }])
      assert.equal((await s.post('/svc_api/upload', { key: u.key, body: mp.body, headers: { 'content-type': mp.contentType } })).status, 200)
      const t0 = await scrape()
      for (let i = 0; i < 3; i++) assert.equal((await s.get(`/${u.username}/m.html`)).text, html)
      await s.request('HEAD', `/${u.username}/m.html`)
      const t1 = await scrape()
      const d = (name: string, labels: Record<string, string>) => sample(t1, name, labels) - sample(t0, name, labels)
      assert.equal(d('svc_blob_bytes_served_total', { source: 'hosting' }), 3 * Buffer.byteLength(html))
      assert.ok(d('svc_http_requests_total', { route: '(fast path)', method: 'GET', status: '200' }) >= 1)
      assert.equal(
        d('svc_http_requests_total', { route: '(fast path)', method: 'GET', status: '200' }) +
          d('svc_http_requests_total', { route: '/:username/*', method: 'GET', status: '200' }),
        3,
      )
    })

    it('counts routed requests in flight by route pattern, from before their body is read to their end', async () => {
      const u = await s.user()
      const inFlight = async () => sample(await scrape(), 'svc_http_requests_in_flight', { route: '/svc_api/upload' })
      assert.equal(await inFlight(), 0)
      const mp = multipart([{ name: 'file', filename: 'flight.html', type: 'text/html', data: '<p>in flight</p>' }])
      // the body is sent in two parts: the second waits for `more`
      const upload = (more: Promise<void>, signal?: AbortSignal) => {
        async function* parts() {
          yield mp.body.subarray(0, 8)
          await more
          yield mp.body.subarray(8)
        }
        return request(`${s.url}/svc_api/upload`, {
          method: 'POST',
          headers: { authorization: `Bearer ${u.key}`, 'content-type': mp.contentType, 'content-length': String(mp.body.length) },
          body: Readable.from(parts()),
          dispatcher: insecureAgent,
          signal,
        })
      }
      let release = () => {}
      const answer = upload(new Promise<void>((resolve) => (release = resolve)))
      await until(async () => (await inFlight()) === 1, 10_000, 'the upload counted in flight while its body arrives')
      release()
      const r = await answer
      assert.equal(r.statusCode, 200, await r.body.text())
      await until(async () => (await inFlight()) === 0, 10_000, 'the answered upload no longer in flight')
      // a client that leaves in the middle of its body is no longer in flight either
      const abort = new AbortController()
      const gone = upload(new Promise<void>(() => {}), abort.signal).then(
        () => 'answered',
        () => 'aborted',
      )
      await until(async () => (await inFlight()) === 1, 10_000, 'the second upload in flight')
      abort.abort()
      assert.equal(await gone, 'aborted')
      await until(async () => (await inFlight()) === 0, 10_000, 'the abandoned upload no longer in flight')
    })

    it('hides /metrics from forwarded (proxied) requests', async () => {
      // any header a proxy adds: one that sets X-Real-IP and X-Forwarded-Proto only is a proxy too
      const proxied: Record<string, string>[] = [
        { 'x-forwarded-for': '203.0.113.9' },
        { forwarded: 'for=203.0.113.9' },
        { 'x-real-ip': '203.0.113.9' },
        { 'x-forwarded-proto': 'https' },
        { 'x-forwarded-host': 'svc.example.com' },
        { via: '1.1 proxy' },
      ]
      for (const headers of proxied) {
        const r = await s.get('/metrics', { headers })
        assert.equal(r.status, 404)
        assert.ok(!r.text.includes('svc_'))
      }
    })
  })
}

describe('metrics with METRICS_TOKEN', () => {
  let s: TestServer
  const token = 'metrics-token-0123456789abcdef'
  before(async () => {
    s = await startServer({ env: { METRICS_TOKEN: token } })
  })
  after(() => s.close())

  it('answers only a request carrying the bearer token, from anywhere', async () => {
    assert.equal((await s.get('/metrics')).status, 404)
    assert.equal((await s.get('/metrics', { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 404)
    const ok = await s.get('/metrics', { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '203.0.113.9' } })
    assert.equal(ok.status, 200)
    assert.match(ok.text, /svc_http_requests_total/)
  })

  it('refuses a METRICS_TOKEN shorter than 16 characters at start-up', async () => {
    await assert.rejects(startServer({ env: { METRICS_TOKEN: 'short' } }), /METRICS_TOKEN/)
  })
})

describe('countServed', () => {
  it('adds the Content-Length of a complete GET response to svc_blob_bytes_served_total{source}', async () => {
    const app = Fastify()
    app.route({
      method: ['GET', 'HEAD'],
      url: '/x',
      handler: async (_req, reply) => {
        countServed(reply, 'test-source')
        return reply.type('text/html').send(Buffer.alloc(5000, 97))
      },
    })
    const before = sample(await registry.metrics(), 'svc_blob_bytes_served_total', { source: 'test-source' })
    assert.equal((await app.inject({ method: 'GET', url: '/x' })).statusCode, 200)
    assert.equal((await app.inject({ method: 'HEAD', url: '/x' })).statusCode, 200)
    assert.equal(sample(await registry.metrics(), 'svc_blob_bytes_served_total', { source: 'test-source' }), before + 5000)
    await app.close()
  })
})
