import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { URL } from 'node:url'
import { REDIS_URL, needs, startServer, type TestServer } from '../support/server.js'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js'
import { clearRedisPrefix } from '../support/redis.js'

// Concurrency slots live in Redis (a lease of 10 minutes each). A request whose slot call
// times out answers 503 / 1504, but the call itself still reaches Redis once it answers
// again: unless it is given back, every request refused during a hang keeps a slot of its
// caller after Redis is back, and a caller whose slots were all taken so is refused (1206)
// for ten minutes.
describe('concurrency slots after a Redis hang', needs('redis'), () => {
  let s: TestServer
  let relay: TcpProxy
  const prefix = `svc-test-${crypto.randomBytes(5).toString('hex')}:`
  before(async () => {
    relay = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379))
    s = await startServer({
      env: {
        REDIS_URL: `redis://127.0.0.1:${relay.port}`,
        REDIS_PREFIX: prefix,
        RATE_LIMITS: JSON.stringify({ authenticated: { concurrent: 2 } }),
      },
    })
  })
  after(async () => {
    await s?.close()
    await relay?.close()
    await clearRedisPrefix(REDIS_URL, prefix)
  })

  it('a request refused during the hang holds no slot once Redis answers', async () => {
    const u = await s.user()
    assert.equal((await s.get('/svc_api/me', { key: u.key })).status, 200)
    relay.hang()
    const refused = await Promise.all([1, 2].map(() => s.get('/svc_api/me', { key: u.key })))
    for (const r of refused) assert.deepEqual([r.status, r.json.error_code], [503, 1504])
    relay.resume()
    // what waited in the relay is delivered now; then each caller's two slots are free
    let r = await s.get('/svc_api/me', { key: u.key })
    for (let i = 0; i < 50 && r.status === 503; i++) {
      await new Promise((res) => setTimeout(res, 100))
      r = await s.get('/svc_api/me', { key: u.key })
    }
    assert.equal(r.status, 200, r.text)
    const both = await Promise.all([1, 2].map(() => s.get('/svc_api/me', { key: u.key })))
    assert.deepEqual(
      both.map((x) => x.status),
      [200, 200],
    )
  })
})
