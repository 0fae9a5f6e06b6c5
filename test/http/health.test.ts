import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
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
