import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { beijingTime } from '../../src/util/time.js'
import tls from 'node:tls'
import crypto from 'node:crypto'
import { ENGINES, HAVE_REDIS, REDIS_URL, startServer, type TestServer } from '../support/server.js'
import { FakeClock } from '../../src/util/clock.js'
import { createRedisLimitStore } from '../../src/limits/redis.js'
import { createMemoryLimitStore, type LimitStore } from '../../src/limits/store.js'
import { AppError } from '../../src/errors/app-error.js'
import { metrics } from '../../src/observability/metrics.js'

const BEIJING_NOON = Date.UTC(2026, 0, 15, 4, 0, 0)

type StoreKind = 'memory' | 'redis'
// the Redis store only when the run has Redis (scripts/run-tests.mjs says when it is skipped)
const stores: StoreKind[] = HAVE_REDIS ? ['memory', 'redis'] : ['memory']
// the store renews held slots on the server's clock, looking every 20 ms (not every 20 s)
const makeStore = (kind: StoreKind, clock: FakeClock): LimitStore =>
  kind === 'memory'
    ? createMemoryLimitStore(clock, { renewMs: 20 })
    : createRedisLimitStore(REDIS_URL, { serverTime: false, prefix: `svc:test:${crypto.randomBytes(6).toString('hex')}:`, clock, renewMs: 20 })

/** Opens a TLS request whose body never completes, holding a concurrency slot. */
function stalledRequest(s: TestServer, path: string): Promise<tls.TLSSocket> {
  const port = Number(new URL(s.url).port)
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      sock.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":`)
      resolve(sock)
    })
    sock.on('error', reject)
  })
}

/** Sends the rest of a stalledRequest's body (1000 bytes of JSON in all) and reads its answer's status. */
function finishRequest(sock: tls.TLSSocket): Promise<number> {
  return new Promise((resolve, reject) => {
    let head = ''
    sock.on('data', (d: Buffer) => {
      head += d.toString('latin1')
      const m = /^HTTP\/1\.1 (\d{3})/.exec(head)
      if (m) {
        sock.destroy()
        resolve(Number(m[1]))
      }
    })
    sock.on('error', reject)
    sock.write(`1${' '.repeat(993)}}`)
  })
}

/** Polls `cond` (every 20 ms, 250 times at most) and says whether it came true. */
async function eventually(cond: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 250; i++) {
    if (await cond()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return cond()
}

for (const engine of ENGINES) {
  for (const storeKind of stores) {
    describe(`rate limits [${engine}, ${storeKind}]`, () => {
      let s: TestServer
      const clock = new FakeClock(BEIJING_NOON)
      // the store, failing on demand (a Redis outage as the service sees it: 1504 from the store)
      const outage = { on: false }
      before(async () => {
        const store = makeStore(storeKind, clock)
        const down = () => {
          if (outage.on) throw new AppError('DEPENDENCY_UNAVAILABLE')
        }
        const limits: LimitStore = {
          ...store,
          kind: store.kind,
          hit: async (...a) => (down(), store.hit(...a)),
          acquire: async (...a) => (down(), store.acquire(...a)),
          release: (...a) => store.release(...a),
          inFlight: (...a) => store.inFlight(...a),
          close: () => store.close(),
          sync: store.sync && {
            hit: (...a) => (down(), store.sync!.hit(...a)),
            acquire: (...a) => (down(), store.sync!.acquire(...a)),
            release: (...a) => store.sync!.release(...a),
          },
        }
        s = await startServer({ engine, clock, limits })
      })
      after(() => s.close())

      it('limits an anonymous client to 10 per minute with 1204, integer retry_after and the four headers', async () => {
        // a quarter second past the whole one: reset_time and X-RateLimit-Reset must round alike
        clock.set(BEIJING_NOON + 250)
        const seen: number[] = []
        for (let i = 0; i < 10; i++) {
          const r = await s.get('/svc_api/me', { headers: { 'x-forwarded-for': '9.9.9.9' } })
          assert.equal(r.status, 401)
          assert.equal(r.header('x-ratelimit-window'), 'minute')
          assert.equal(r.header('x-ratelimit-limit'), '10')
          seen.push(Number(r.header('x-ratelimit-remaining')))
          clock.advance(1000)
        }
        assert.deepEqual(seen, [9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
        const limited = await s.get('/svc_api/me')
        assert.equal(limited.status, 429)
        assert.equal(limited.json.error_code, 1204)
        assert.equal(limited.json.error_type, 'QUOTA_ERROR')
        assert.ok(Number.isInteger(limited.json.retry_after) && limited.json.retry_after >= 1)
        assert.equal(limited.header('retry-after'), String(limited.json.retry_after))
        assert.match(limited.json.details.reset_time, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
        assert.equal(limited.json.details.limit, 10)
        assert.equal(limited.json.details.current, 10)
        const reset = Number(limited.header('x-ratelimit-reset'))
        assert.ok(reset * 1000 > clock.now())
        assert.equal(limited.json.details.reset_time, beijingTime(reset * 1000), 'the body and the header name the same second')
        // hammering while limited does not move the reset
        for (let i = 0; i < 3; i++) {
          clock.advance(500)
          const again = await s.get('/svc_api/me')
          assert.equal(again.status, 429)
          assert.equal(Number(again.header('x-ratelimit-reset')), reset)
        }
        // at the reset time a request is allowed again
        clock.set(reset * 1000)
        const ok = await s.get('/svc_api/me')
        assert.equal(ok.status, 401)
      })

      it('slides the hour window: the 101st request within the hour is 1203, after it ages out it passes', async () => {
        const u = await s.user()
        await s.deps.users.update(u.username, { tier: 'default' })
        const start = BEIJING_NOON + 3 * 3600_000
        for (let i = 0; i < 100; i++) {
          clock.set(start + i * 35_000) // 100 requests over 57.75 minutes, under 10 per minute
          const r = await s.get('/svc_api/me', { key: u.key })
          assert.equal(r.status, 200, `request ${i}`)
        }
        clock.set(start + 59.5 * 60_000)
        const limited = await s.get('/svc_api/me', { key: u.key })
        assert.equal(limited.status, 429)
        assert.equal(limited.json.error_code, 1203)
        assert.equal(limited.header('x-ratelimit-window'), 'hour')
        assert.equal(limited.json.retry_after, 30)
        clock.set(start + 3600_000 + 1)
        const ok = await s.get('/svc_api/me', { key: u.key })
        assert.equal(ok.status, 200)
        assert.equal(ok.header('x-ratelimit-window'), 'hour')
        assert.equal(ok.header('x-ratelimit-remaining'), '0')
      })

      it('switches every key of an account to the VIP limits at once', async () => {
        clock.set(BEIJING_NOON + 8 * 3600_000)
        const u = await s.user()
        const before = await s.get('/svc_api/me', { key: u.key })
        assert.equal(before.header('x-ratelimit-limit'), '60')
        await s.deps.users.update(u.username, { tier: 'vip' })
        const after = await s.get('/svc_api/me', { key: u.key })
        assert.equal(after.header('x-ratelimit-limit'), '300')
        assert.equal(after.header('x-ratelimit-remaining'), '298')
      })

      it('refuses a third concurrent anonymous request (1206) and frees slots when clients go away', async () => {
        clock.set(BEIJING_NOON + 20 * 3600_000)
        const a = await stalledRequest(s, '/svc_api/none')
        const b = await stalledRequest(s, '/svc_api/none')
        // wait until both are counted
        const id = 'ip:127.0.0.1'
        for (let i = 0; i < 50 && (await s.deps.limits.inFlight(id, clock.now())) < 2; i++) await new Promise((r) => setTimeout(r, 20))
        const third = await s.get('/svc_api/me')
        assert.equal(third.status, 429)
        assert.equal(third.json.error_code, 1206)
        a.destroy()
        b.destroy()
        for (let i = 0; i < 50 && (await s.deps.limits.inFlight(id, clock.now())) > 0; i++) await new Promise((r) => setTimeout(r, 20))
        assert.equal(await s.deps.limits.inFlight(id, clock.now()), 0)
        const fourth = await s.get('/svc_api/me')
        assert.equal(fourth.status, 401)
      })

      it('requests running past the slot TTL keep their slots (a third is refused, 1206) until each ends', async () => {
        const start = BEIJING_NOON + 30 * 3600_000
        clock.set(start)
        const id = 'ip:127.0.0.1'
        const a = await stalledRequest(s, '/svc_api/none')
        const b = await stalledRequest(s, '/svc_api/none')
        try {
          assert.ok(await eventually(async () => (await s.deps.limits.inFlight(id, clock.now())) === 2), 'both requests hold a slot')
          // 9 minutes on (the slots were taken for 10): the store renews them, since both still
          // run; waits for the renewal (a slot not renewed would have expired 18 minutes on)
          clock.set(start + 9 * 60_000)
          await eventually(async () => (await s.deps.limits.inFlight(id, start + 18 * 60_000)) === 2)
          // 18 minutes after they began, both still running: a third request finds no slot
          clock.set(start + 18 * 60_000)
          const third = await s.get('/svc_api/me')
          assert.equal(third.status, 429, 'a third request while two run')
          assert.equal(third.json.error_code, 1206)
          assert.equal(third.json.details.current, 2)
          assert.equal(third.json.details.limit, 2)
          assert.equal(third.header('retry-after'), '1')
          // the first request ends (its body arrives, it is answered): its slot is given back
          assert.equal(await finishRequest(a), 404)
          assert.ok(await eventually(async () => (await s.deps.limits.inFlight(id, clock.now())) === 1), 'the ended request gave its slot back')
          assert.equal((await s.get('/svc_api/me')).status, 401, 'a request is admitted again')
          // renewed again: the other one still holds its slot 36 minutes on
          clock.set(start + 27 * 60_000)
          await eventually(async () => (await s.deps.limits.inFlight(id, start + 36 * 60_000)) === 1)
          clock.set(start + 36 * 60_000)
          assert.equal(await s.deps.limits.inFlight(id, clock.now()), 1, 'still held while it runs')
          b.destroy()
          assert.ok(await eventually(async () => (await s.deps.limits.inFlight(id, clock.now())) === 0), 'the aborted request gave its slot back')
        } finally {
          a.destroy()
          b.destroy()
        }
      })

      it('a cached KV public read (answered before routing) counts like a routed one: same answer, one count each, 1204 and 1504 in the API format with CORS', async () => {
        clock.set(BEIJING_NOON + 48 * 3600_000)
        const u = await s.user()
        assert.equal((await s.post('/svc_api/data/store', { key: u.key, json: { key: 'board', value: { top: ['玩家', 3] }, is_public: true } })).status, 200)
        const path = `/svc_api/data/public/${u.username}/board`
        const fastCount = async (status: string) =>
          (await metrics.requests.get()).values.find((v) => v.labels.route === '(fast path)' && v.labels.method === 'GET' && v.labels.status === status)
            ?.value ?? 0
        const routed = await s.get(path) // a miss: the route answers and fills the cache
        const before = await fastCount('200')
        const fast = await s.get(path)
        assert.equal(await fastCount('200'), before + 1, 'the second read is answered by the fast path')
        assert.equal(routed.status, 200)
        assert.equal(fast.status, 200)
        assert.deepEqual(fast.body, routed.body)
        // the same headers, but the request id: only routed answers have one (docs/operations/health.md)
        const names = (h: Record<string, unknown>) =>
          Object.keys(h)
            .filter((k) => k !== 'x-request-id')
            .sort()
        assert.deepEqual(names(fast.headers), names(routed.headers))
        for (const [k, v] of Object.entries(routed.headers)) {
          if (k !== 'date' && k !== 'x-ratelimit-remaining' && k !== 'x-request-id') assert.deepEqual(fast.headers[k], v, k)
        }
        assert.equal(routed.header('x-ratelimit-remaining'), '9')
        assert.equal(fast.header('x-ratelimit-remaining'), '8')
        for (let left = 7; left >= 0; left--) assert.equal((await s.get(path)).header('x-ratelimit-remaining'), String(left))
        const limited = await s.get(path)
        assert.equal(limited.status, 429)
        assert.equal(limited.json.error_code, 1204)
        assert.equal(limited.header('access-control-allow-origin'), '*')
        assert.equal(limited.header('x-ratelimit-remaining'), '0')
        assert.ok(Number(limited.header('retry-after')) >= 1)
        // the refused read was not counted: the window frees one minute after the first read
        clock.advance(60_000)
        assert.equal((await s.get(path)).status, 200)
        // the limit store fails: 1504, nothing answered from the cache
        outage.on = true
        try {
          const down = await s.get(path)
          assert.equal(down.status, 503)
          assert.equal(down.json.error_code, 1504)
          assert.equal(down.header('access-control-allow-origin'), '*')
        } finally {
          outage.on = false
        }
        assert.equal((await s.get(path)).status, 200)
        // slots are given back when each response closes, just after the client has it
        for (let i = 0; i < 50 && (await s.deps.limits.inFlight('ip:127.0.0.1', clock.now())) > 0; i++) await new Promise((r) => setTimeout(r, 20))
        assert.equal(await s.deps.limits.inFlight('ip:127.0.0.1', clock.now()), 0, 'every slot given back')
        // readers that go away before their answer: no crash, and their slots are given back
        clock.advance(61_000)
        const port = Number(new URL(s.url).port)
        await Promise.all(
          Array.from(
            { length: 5 },
            () =>
              new Promise<void>((resolve, reject) => {
                const sock = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
                  sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, () => {
                    sock.destroy()
                    resolve()
                  })
                })
                sock.on('error', reject)
              }),
          ),
        )
        for (let i = 0; i < 50 && (await s.deps.limits.inFlight('ip:127.0.0.1', clock.now())) > 0; i++) await new Promise((r) => setTimeout(r, 20))
        assert.equal(await s.deps.limits.inFlight('ip:127.0.0.1', clock.now()), 0, 'aborted reads gave their slots back')
        assert.equal((await s.get(path)).status, 200)
      })

      it("a cached KV public read is refused (1206) while running requests hold all of the caller's slots, and is answered again once they end", async () => {
        clock.set(BEIJING_NOON + 72 * 3600_000)
        const u = await s.user()
        assert.equal((await s.post('/svc_api/data/store', { key: u.key, json: { key: 'slots', value: 1, is_public: true } })).status, 200)
        const path = `/svc_api/data/public/${u.username}/slots`
        assert.equal((await s.get(path)).status, 200) // fills the cache: the next reads are answered before routing
        const id = 'ip:127.0.0.1'
        const a = await stalledRequest(s, '/svc_api/none')
        const b = await stalledRequest(s, '/svc_api/none')
        for (let i = 0; i < 50 && (await s.deps.limits.inFlight(id, clock.now())) < 2; i++) await new Promise((r) => setTimeout(r, 20))
        assert.equal(await s.deps.limits.inFlight(id, clock.now()), 2)
        const refused = await s.get(path)
        assert.equal(refused.status, 429)
        assert.equal(refused.json.error_code, 1206)
        assert.equal(refused.header('access-control-allow-origin'), '*')
        assert.equal(await s.deps.limits.inFlight(id, clock.now()), 2, 'the refused read took no slot')
        a.destroy()
        b.destroy()
        for (let i = 0; i < 50 && (await s.deps.limits.inFlight(id, clock.now())) > 0; i++) await new Promise((r) => setTimeout(r, 20))
        const ok = await s.get(path)
        assert.equal(ok.status, 200)
        assert.deepEqual(ok.json.data.value, 1)
        // counted once each: the route's read, the stalled pair, this read (the refusal was not counted)
        assert.equal(ok.header('x-ratelimit-remaining'), '6')
      })
    })
  }
}

describe('daily window resets at 00:00 Beijing time (16:00 UTC)', () => {
  for (const storeKind of stores) {
    it(`[${storeKind}]`, async () => {
      const clock = new FakeClock(Date.UTC(2026, 0, 15, 15, 58, 0)) // 23:58 Beijing
      const s = await startServer({
        clock,
        limits: makeStore(storeKind, clock),
        env: { RATE_LIMITS: JSON.stringify({ default: { minute: 1000, hour: 1000, day: 5 } }) },
      })
      try {
        for (let i = 0; i < 5; i++) assert.equal((await s.get('/svc_api/me')).status, 401)
        const limited = await s.get('/svc_api/me')
        assert.equal(limited.status, 429)
        assert.equal(limited.json.error_code, 1205)
        assert.equal(limited.header('x-ratelimit-window'), 'day')
        assert.equal(Number(limited.header('x-ratelimit-reset')), Date.UTC(2026, 0, 15, 16, 0, 0) / 1000)
        assert.equal(limited.json.details.reset_time, '2026-01-16 00:00:00')
        clock.set(Date.UTC(2026, 0, 15, 16, 0, 0))
        assert.equal((await s.get('/svc_api/me')).status, 401)
      } finally {
        await s.close()
      }
    })
  }
})
