import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import https from 'node:https'
import { URL } from 'node:url'
import { Redis } from 'ioredis'
import { REDIS_URL, needs, startServer, type TestServer } from '../support/server.js'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js'
import { clearRedisPrefix } from '../support/redis.js'

// Concurrency slots live in Redis (a lease of 10 minutes each), so a slot that is never given
// back costs its caller one of its few places (two for an anonymous client) for ten minutes;
// a caller whose slots are all taken so is refused (1206) although it runs nothing. Two ways
// an outage left them taken: a slot call that timed out still reached Redis once it answered
// again, after its request had answered 503 / 1504; and a request that ended while Redis was
// cut lost its release, which a Redis that kept its data (a partition) never got.
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

  it('a request that ends while Redis is cut gives its slot back once Redis is back', async () => {
    const u = await s.user()
    const direct = new Redis(REDIS_URL)
    try {
      // two stores of the key whose bodies are not complete yet: each holds one of its two slots
      const url = new URL('/svc_api/data/store', s.url)
      const pending = [1, 2].map((i) => {
        const req = https.request(url, {
          method: 'POST',
          rejectUnauthorized: false,
          headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        })
        const answered = new Promise<number>((resolve, reject) => {
          req.on('response', (res) => {
            res.resume()
            res.on('end', () => resolve(res.statusCode ?? 0))
          })
          req.on('error', reject)
        })
        req.write(`{"key":"k${i}",`)
        return { req, answered }
      })
      const slots = async () => {
        const keys = await direct.keys(`${prefix}*:slots`)
        let n = 0
        for (const k of keys) n += await direct.zcard(k)
        return n
      }
      for (let i = 0; i < 100 && (await slots()) < 2; i++) await new Promise((r) => setTimeout(r, 50))
      assert.equal(await slots(), 2)
      await relay.cut()
      for (const p of pending) p.req.end('"value":"v"}')
      await Promise.all(pending.map((p) => p.answered))
      // the client gives up on the releases it queued (its second failed reconnection)
      await new Promise((r) => setTimeout(r, 2500))
      assert.equal(await slots(), 2, 'the releases could not reach Redis')
      await relay.restore()
      let ready = await s.get('/readyz')
      for (let i = 0; i < 100 && ready.json.checks.redis !== 'ok'; i++) {
        await new Promise((r) => setTimeout(r, 100))
        ready = await s.get('/readyz')
      }
      for (let i = 0; i < 50 && (await slots()) > 0; i++) await new Promise((r) => setTimeout(r, 50))
      assert.equal(await slots(), 0)
      const both = await Promise.all([1, 2].map(() => s.get('/svc_api/me', { key: u.key })))
      assert.deepEqual(
        both.map((x) => x.status),
        [200, 200],
      )
    } finally {
      direct.disconnect()
    }
  })
})
