import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { URL } from 'node:url'
import { ENGINES, PG_URL, REDIS_URL, multipart, startServer, type TestServer } from '../support/server.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js'

// /readyz against real PostgreSQL, Redis and S3 (s3rver), each reached through a relay the
// test cuts and restores: the probe must go non-200 within its timeout, naming the
// dependency, and come back on its own. /livez never asks a dependency.
const engine = ENGINES.includes('postgres') ? 'postgres' : ENGINES[0]

describe(`readiness follows its dependencies [${engine}, Redis, S3]`, () => {
  let s: TestServer
  let s3: TestS3
  const relays: Record<string, TcpProxy> = {}
  let pgUrl: string | undefined
  before(async () => {
    s3 = await startS3()
    relays.redis = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379))
    relays.storage = await startTcpProxy(Number(new URL(s3.endpoint).port))
    const env: Record<string, string> = {
      REDIS_URL: `redis://127.0.0.1:${relays.redis.port}`,
      STORAGE_URL: s3.storageUrl(undefined, `http://127.0.0.1:${relays.storage.port}`),
    }
    if (engine === 'postgres') {
      relays.database = await startTcpProxy(Number(new URL(PG_URL).port || 5432))
      const u = new URL(PG_URL)
      u.port = String(relays.database.port)
      pgUrl = u.toString()
    }
    // a query unanswered for 1 s fails (the default is 30 s)
    s = await startServer({ engine, env: { ...env, DATABASE_QUERY_TIMEOUT: '1s' }, pgUrl })
  })
  after(async () => {
    await s?.close()
    for (const r of Object.values(relays)) await r.close()
    await s3?.close()
  })

  /** Polls /readyz until `ok(status)` or the deadline; returns the last answer and when it came. */
  const waitReady = async (want: number, deadlineMs: number) => {
    const t0 = Date.now()
    for (;;) {
      const r = await s.get('/readyz')
      if (r.status === want || Date.now() - t0 > deadlineMs) return { r, ms: Date.now() - t0 }
      await new Promise((res) => setTimeout(res, 200))
    }
  }

  it('answers 200 with every dependency ok', async () => {
    const r = await s.get('/readyz')
    assert.equal(r.status, 200, r.text)
    assert.deepEqual(Object.keys(r.json.checks).sort(), ['database', 'redis', 'storage'])
    assert.equal((await s.get('/livez')).status, 200)
  })

  /** The readiness gauge of a dependency, as /metrics shows it (loopback may read it). */
  const gauge = async (dep: string) => {
    const m = new RegExp(`^svc_dependency_up\\{dependency="${dep}"\\} (\\d)$`, 'm').exec((await s.get('/metrics')).text)
    return m ? Number(m[1]) : null
  }

  for (const dep of ['database'] as const) {
    it(`${dep} down: 503 naming it within the timeout, and 200 again once it is back`, async (t) => {
      if (!relays[dep]) return t.skip(`${dep} is not reached over the network on ${engine}`)
      await relays[dep].cut()
      const down = await waitReady(503, 6000)
      assert.equal(down.r.status, 503, down.r.text)
      assert.equal(down.r.json.status, 'unavailable')
      assert.notEqual(down.r.json.checks[dep], 'ok')
      assert.ok(down.ms < 6000, `went non-200 after ${down.ms} ms`)
      assert.equal((await s.get('/livez')).status, 200, 'liveness asks no dependency')
      await relays[dep].restore()
      const up = await waitReady(200, 20_000)
      assert.equal(up.r.status, 200, `not ready again: ${up.r.text}`)
    })
  }

  // Redis is shared by every instance: down, every instance would fail alike, while each still
  // serves the public host (decision 147). Readiness reports it and stays 200.
  it('redis down: still ready (200, degraded) naming it in the body and the gauge, ok again once it is back', async () => {
    await relays.redis.cut()
    const t0 = Date.now()
    let r = await s.get('/readyz')
    while (r.json.checks.redis === 'ok' && Date.now() - t0 < 6000) {
      await new Promise((res) => setTimeout(res, 200))
      r = await s.get('/readyz')
    }
    assert.equal(r.status, 200, r.text)
    assert.equal(r.json.status, 'degraded')
    assert.notEqual(r.json.checks.redis, 'ok')
    assert.equal(r.json.checks.database, 'ok')
    const health = await s.get('/healthz')
    assert.equal(health.status, 200)
    assert.notEqual(health.json.checks.redis, 'ok')
    assert.equal(await gauge('redis'), 0)
    assert.equal(await gauge('database'), 1)
    await relays.redis.restore()
    const up = await waitReady(200, 20_000)
    for (let i = 0; i < 100 && up.r.json.status !== 'ok'; i++) {
      await new Promise((res) => setTimeout(res, 200))
      up.r = await s.get('/readyz')
    }
    assert.equal(up.r.json.status, 'ok', up.r.text)
    assert.equal(await gauge('redis'), 1)
  })

  // an S3 bucket is shared too: down, each instance still serves what its disk cache holds
  // (decision 237); a local blob folder stays required (test/http/health.test.ts)
  it('S3 down: still ready (200, degraded) naming storage, cached pages served, uploads 503; ok again once it is back', async () => {
    const u = await s.user()
    const page = Buffer.from('<!doctype html><title>kept</title><p>served from the disk cache')
    const upload = (name: string) => {
      const form = multipart([{ name: 'file', filename: name, data: page }])
      return s.post('/svc_api/upload', { key: u.key, body: form.body, headers: { 'content-type': form.contentType } })
    }
    const up = await upload('kept.html')
    assert.equal(up.status, 200, up.text)
    assert.equal((await s.get(`/${u.username}/kept.html`)).status, 200)
    await relays.storage.cut()
    try {
      const t0 = Date.now()
      let r = await s.get('/readyz')
      while (r.json.checks.storage === 'ok' && Date.now() - t0 < 6000) {
        await new Promise((res) => setTimeout(res, 200))
        r = await s.get('/readyz')
      }
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.status, 'degraded')
      assert.notEqual(r.json.checks.storage, 'ok')
      assert.equal(await gauge('storage'), 0)
      const cached = await s.get(`/${u.username}/kept.html`)
      assert.equal(cached.status, 200)
      assert.ok(cached.body.equals(page))
      const refused = await upload('new.html')
      assert.equal(refused.status, 503, refused.text)
    } finally {
      await relays.storage.restore()
    }
    const back = await waitReady(200, 20_000)
    for (let i = 0; i < 100 && back.r.json.status !== 'ok'; i++) {
      await new Promise((res) => setTimeout(res, 200))
      back.r = await s.get('/readyz')
    }
    assert.equal(back.r.json.status, 'ok', back.r.text)
  })

  it('a hung database: API requests answer 503 / 1504 within the timeouts, and work again when it answers', async (t) => {
    if (!relays.database) return t.skip(`the database is not reached over the network on ${engine}`)
    const u = await s.user()
    const read = () => s.get('/svc_api/data/get?key=k', { key: u.key })
    assert.equal((await read()).status, 404)
    const cookie = await s.login(u.username, u.password)
    relays.database.hang()
    try {
      for (let i = 0; i < 2; i++) {
        const t0 = Date.now()
        const r = await read()
        const ms = Date.now() - t0
        assert.equal(r.status, 503, r.text)
        assert.equal(r.json.error_code, 1504)
        // a query times out after 1 s; a new connection, whose handshake hangs too, after 5 s
        assert.ok(ms < 7000, `answered after ${ms} ms`)
      }
      // a person opening the dashboard gets a page saying so, not the API's JSON
      const nav = { accept: 'text/html,application/xhtml+xml', 'sec-fetch-mode': 'navigate', 'accept-language': 'en' }
      const page = await s.get('/dashboard', { cookie, headers: nav })
      assert.equal(page.status, 503, page.text)
      assert.match(page.header('content-type') ?? '', /^text\/html/)
      assert.match(page.text, /<title>Briefly unavailable<\/title>/)
      assert.match(page.header('cache-control') ?? '', /no-store/)
    } finally {
      relays.database.resume()
    }
    let status = 0
    for (let i = 0; i < 50 && status !== 404; i++) {
      status = (await read()).status
      if (status !== 404) await new Promise((r) => setTimeout(r, 200))
    }
    assert.equal(status, 404, 'reads work again')
  })
})
