import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import v8 from 'node:v8'
import vm from 'node:vm'
import { HAVE_REDIS, REDIS_URL, needs } from '../support/server.js'
import { createRedisLimitStore } from '../../src/limits/redis.js'
import { createMemoryLimitStore, TimeLog } from '../../src/limits/store.js'
import { tierRules, type WindowRule } from '../../src/limits/tiers.js'

v8.setFlagsFromString('--expose-gc')

const rules = tierRules({ authenticated: { minute: 60, hour: 1000, day: 10000, concurrent: 10 } }).authenticated

describe('limit stores', () => {
  it('two instances sharing Redis let exactly `limit` of 200 concurrent requests through', needs('redis'), async () => {
    const prefix = `svc:test:${crypto.randomBytes(6).toString('hex')}:`
    const a = createRedisLimitStore(REDIS_URL, { serverTime: true, prefix })
    const b = createRedisLimitStore(REDIS_URL, { serverTime: true, prefix })
    try {
      const now = Date.now()
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).hit('k:shared', rules.windows, now, true)))
      assert.equal(results.filter((r) => r.allowed).length, 60)
      const counts = await a.hit('k:shared', rules.windows, now, false)
      assert.deepEqual(
        counts.windows.map((w) => w.count),
        [60, 60, 60],
      )
    } finally {
      await a.close()
      await b.close()
    }
  })

  it('concurrency slots expire after their TTL (a crashed holder does not keep them)', async () => {
    const stores = [createMemoryLimitStore()]
    // the Redis store only when the run has Redis (scripts/run-tests.mjs says when it is skipped)
    if (HAVE_REDIS) stores.push(createRedisLimitStore(REDIS_URL, { serverTime: false, prefix: `svc:test:${crypto.randomBytes(6).toString('hex')}:` }))
    for (const store of stores) {
      const now = Date.now()
      assert.equal((await store.acquire('x', 2, 't1', now, 1000)).ok, true)
      assert.equal((await store.acquire('x', 2, 't2', now, 1000)).ok, true)
      assert.equal((await store.acquire('x', 2, 't3', now, 1000)).ok, false)
      assert.equal((await store.acquire('x', 2, 't3', now + 1001, 1000)).ok, true, store.kind)
      await store.release('x', 't3')
      assert.equal(await store.inFlight('x', now + 1001), 0)
      await store.close()
    }
  })

  it('memory store: a sliding window with a very high limit counts and resets exactly while times age out of it', async () => {
    const big = tierRules({ default: { minute: 1_000_000, hour: 1_000_000, day: 1_000_000 } }).default.windows
    const store = createMemoryLimitStore()
    const start = 1_700_000_000_000
    // 30,000 requests, one every 5 ms: 150 s, so the minute window ages out 18,000 of them
    let last = await store.hit('ip:big', big, start, true)
    for (let i = 1; i < 30_000; i++) last = await store.hit('ip:big', big, start + i * 5, true)
    const now = start + 29_999 * 5
    const minute = last.windows.find((w) => w.rule.name === 'minute')!
    const hour = last.windows.find((w) => w.rule.name === 'hour')!
    // times within (now - 60 s, now]: 12,000 of them
    assert.equal(minute.count, 12_000)
    assert.equal(hour.count, 30_000)
    // under the limit, the reset is when the oldest counted request ages out
    assert.equal(minute.resetAt, now - 60_000 + 5 + 60_000)
    assert.equal(hour.resetAt, start + 3_600_000)
    // a peek long after: everything aged out of the minute window
    const later = await store.hit('ip:big', big, now + 61_000, false)
    assert.equal(later.windows.find((w) => w.rule.name === 'minute')!.count, 0)
    assert.equal(later.windows.find((w) => w.rule.name === 'hour')!.count, 30_000)
    await store.close()
  })

  it('TimeLog: pushes, ages out across chunk boundaries and empties, like a plain array would', () => {
    const log = new TimeLog()
    const model: number[] = []
    const check = () => {
      assert.equal(log.length, model.length)
      for (const i of [0, 1, model.length >> 1, model.length - 2, model.length - 1]) {
        if (i >= 0 && i < model.length) assert.equal(log.at(i), model[i], `at(${i})`)
      }
    }
    const age = (cutoff: number) => {
      log.ageOut(cutoff)
      while (model.length > 0 && model[0] <= cutoff) model.shift()
      check()
    }
    let t = 0
    const push = (n: number) => {
      for (let i = 0; i < n; i++) {
        t += 1 + (i % 3)
        log.push(t)
        model.push(t)
      }
      check()
    }
    push(10_000)
    age(model[4095]) // exactly the end of the first chunk
    age(model[0] + 0.5) // inside a chunk
    push(5)
    age(model[model.length - 6]) // leaves five, in the last chunk
    age(t) // everything
    assert.equal(log.length, 0)
    push(4097) // a fresh chunk after emptying, and one more
    age(model[2])
  })

  it('TimeLog: a small log grows its one chunk while ageing out, like a plain array would', () => {
    const log = new TimeLog()
    const model: number[] = []
    let t = 0
    const check = () => {
      assert.equal(log.length, model.length)
      for (let i = 0; i < model.length; i++) assert.equal(log.at(i), model[i], `at(${i})`)
    }
    // pushes across every doubling (8, 16, ... 4,096) and into a second chunk, ageing out as it goes
    for (const [n, keep] of [
      [3, 3],
      [6, 4],
      [9, 9],
      [40, 20],
      [100, 100],
      [4000, 3000],
      [2000, 10],
    ] as const) {
      for (let i = 0; i < n; i++) {
        log.push(++t)
        model.push(t)
      }
      check()
      const cutoff = model[model.length - keep - 1] ?? -1
      log.ageOut(cutoff)
      while (model.length > 0 && model[0] <= cutoff) model.shift()
      check()
    }
  })

  it('keeps about 2 KB per identity: 10,000 client addresses with two windows stay under 40 MiB', async () => {
    const store = createMemoryLimitStore()
    const two: WindowRule[] = [
      { name: 'minute', kind: 'sliding', ms: 60_000, limit: 10 },
      { name: 'hour', kind: 'sliding', ms: 3_600_000, limit: 100 },
    ]
    const gc = vm.runInNewContext('gc') as () => void
    gc()
    const before = process.memoryUsage()
    const now = Date.now()
    for (let i = 0; i < 10_000; i++) assert.equal((await store.hit(`form-submit:f:10.0.${i >> 8}.${i & 255}`, two, now, true)).allowed, true)
    gc()
    const after = process.memoryUsage()
    const grown = (after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers) / 1048576
    // 16.6 MiB in runs (maps and strings per identity, 64 bytes per log); a full chunk per
    // window took 625 MiB
    assert.ok(grown < 40, `heap + array buffers grew by ${grown.toFixed(1)} MiB`)
    await store.close()
  })

  it('fails fast with 1504 when Redis is unreachable', async () => {
    const store = createRedisLimitStore('redis://127.0.0.1:1', { serverTime: true })
    const t0 = Date.now()
    await assert.rejects(store.hit('k', rules.windows, Date.now(), true), (e: any) => e.key === 'DEPENDENCY_UNAVAILABLE')
    assert.ok(Date.now() - t0 < 2500, `took ${Date.now() - t0} ms`)
    await store.close()
  })
})
