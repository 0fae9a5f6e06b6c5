import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { request } from 'undici'
import { ENGINES, startServer, type TestServer } from '../support/server.js'

for (const engine of ENGINES) {
  describe(`health probes and request ids [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine })
    })
    after(() => s.close())

    it('/livez answers without asking a dependency; /readyz and /healthz list each one', async () => {
      const live = await s.get('/livez')
      assert.equal(live.status, 200)
      assert.deepEqual(live.json, { status: 'ok' })
      for (const p of ['/readyz', '/healthz']) {
        const r = await s.get(p)
        assert.equal(r.status, 200, r.text)
        assert.deepEqual(r.json, { status: 'ok', checks: { database: 'ok', storage: 'ok' } })
        assert.equal(r.header('cache-control'), 'no-store')
      }
    })

    it('a failing check names no path to a caller through a proxy; a direct loopback caller gets the message', async () => {
      const tmp = path.join(s.dataDir, 'blobs', 'tmp')
      const away = `${tmp}-away`
      fs.renameSync(tmp, away)
      try {
        const anon = await s.get('/readyz', { headers: { 'x-forwarded-for': '203.0.113.7' } })
        assert.equal(anon.status, 503, anon.text)
        assert.deepEqual(anon.json.checks, { database: 'ok', storage: 'error' })
        assert.ok(!anon.text.includes(s.dataDir), anon.text)
        const local = await s.get('/readyz')
        assert.equal(local.status, 503, local.text)
        assert.match(local.json.checks.storage, /^error: ENOENT/)
      } finally {
        fs.renameSync(away, tmp)
      }
      assert.equal((await s.get('/readyz', { headers: { 'x-forwarded-for': '203.0.113.7' } })).status, 200)
    })

    it('every routed answer carries its own X-Request-Id', async () => {
      const ids = new Set<string>()
      for (const p of ['/livez', '/svc_api/me', '/login', '/nope']) {
        const id = (await s.get(p)).header('x-request-id')
        assert.match(id ?? '', /^[0-9a-f]{16}$/, p)
        ids.add(id!)
      }
      assert.equal(ids.size, 4)
      // a client cannot choose its id unless a trusted proxy sits in front
      assert.notEqual((await s.get('/livez', { headers: { 'x-request-id': 'chosen-by-client' } })).header('x-request-id'), 'chosen-by-client')
    })
  })
}

describe('request ids behind a proxy', () => {
  let s: TestServer
  before(async () => {
    s = await startServer({ engine: ENGINES[0], env: { TRUST_PROXY: '1' } })
  })
  after(() => s.close())

  it("keeps the proxy's id when it is well formed, and makes one otherwise", async () => {
    const get = async (id: string) =>
      (await request(`${s.httpUrl}/livez`, { headers: { 'x-request-id': id, 'x-forwarded-proto': 'https' } })).headers['x-request-id']
    assert.equal(await get('caddy-7f3a:12'), 'caddy-7f3a:12')
    assert.match(String(await get('bad id\twith "quotes"')), /^[0-9a-f]{16}$/)
    assert.match(String(await get('x'.repeat(65))), /^[0-9a-f]{16}$/)
  })
})

describe('request ids in the JSON logs', () => {
  const lines: string[] = []
  const proxied: string[] = []
  let s: TestServer
  let p: TestServer
  before(async () => {
    s = await startServer({ engine: ENGINES[0], env: { LOG_LEVEL: 'info' }, logLines: lines })
    p = await startServer({ engine: ENGINES[0], env: { LOG_LEVEL: 'info', TRUST_PROXY: '1' }, logLines: proxied })
  })
  after(async () => {
    await s.close()
    await p.close()
  })

  /** The parsed log lines that carry a request id (pino's reqId, set by Fastify per request). */
  const byId = (from: string[], id: string) =>
    from
      .map((l) => JSON.parse(l) as { reqId?: string; req?: { id?: string; path?: string }; res?: { statusCode?: number }; msg?: string })
      .filter((l) => l.reqId === id)

  /** The "request completed" line of a request: written once the answer is sent, so it may come just after the client has it. */
  const completed = async (from: string[], id: string) => {
    const deadline = Date.now() + 5000
    for (;;) {
      const l = byId(from, id).find((x) => x.msg === 'request completed')
      if (l) return l
      if (Date.now() > deadline) assert.fail(`no "request completed" line for ${id}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  it("each request's log lines carry the id its answer's X-Request-Id names, and no other", async () => {
    const paths = ['/svc_api/me', '/login', '/nope']
    const answers = []
    for (const path of paths) answers.push(await s.get(path))
    const ids = answers.map((r) => r.header('x-request-id')!)
    assert.equal(new Set(ids).size, 3)
    for (const [i, r] of answers.entries()) {
      // Fastify's request log: a line when the request comes in, one once it is answered
      const done = await completed(lines, ids[i])
      assert.equal(done.res?.statusCode, r.status)
      const mine = byId(lines, ids[i])
      const incoming = mine.find((l) => l.msg === 'incoming request')
      assert.equal(incoming?.req?.id, ids[i], JSON.stringify(mine))
      for (const l of mine) if (l.req) assert.equal(l.req.path, paths[i], `a line with ${ids[i]} is about ${paths[i]}`)
    }
  })

  it("behind a proxy, the proxy's id is the one in the logs and in the answer", async () => {
    const r = await request(`${p.httpUrl}/svc_api/me`, { headers: { 'x-request-id': 'edge-42:a', 'x-forwarded-proto': 'https' } })
    await r.body.dump()
    assert.equal(r.headers['x-request-id'], 'edge-42:a')
    assert.equal((await completed(proxied, 'edge-42:a')).res?.statusCode, r.statusCode)
    assert.equal(byId(proxied, 'edge-42:a').find((l) => l.msg === 'incoming request')?.req?.id, 'edge-42:a')
  })
})
