import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import v8 from 'node:v8'
import vm from 'node:vm'
import path from 'node:path'
import url from 'node:url'
import { spawn } from 'node:child_process'
import { HAVE_REDIS, REDIS_URL, needs } from '../support/server.js'
import { createRedisLimitStore } from '../../src/limits/redis.js'
import { createMemoryLimitStore, TimeLog, type LimitStore } from '../../src/limits/store.js'
import { FakeClock } from '../../src/util/clock.js'
import { tierRules, type WindowRule } from '../../src/limits/tiers.js'

v8.setFlagsFromString('--expose-gc')

const root = path.resolve(path.dirname(url.fileURLToPath(import.meta.url)), '../..')

/** Polls `cond` (every 20 ms, for 10 s at most) and says whether it came true. */
async function until(cond: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 500; i++) {
    if (await cond()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return cond()
}

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

  it('a held slot is renewed until released; once its holder stops renewing (died), it expires after its TTL', async () => {
    const TTL = 10 * 60_000
    const prefix = `svc:test:${crypto.randomBytes(6).toString('hex')}:`
    const cases: Array<() => { holder: LimitStore; other: LimitStore; clock: FakeClock }> = [
      () => {
        const clock = new FakeClock()
        const holder = createMemoryLimitStore(clock, { renewMs: 20 })
        return { holder, other: holder, clock }
      },
    ]
    // the Redis store only when the run has Redis (scripts/run-tests.mjs says when it is skipped):
    // the holder and another instance sharing it
    if (HAVE_REDIS)
      cases.push(() => {
        const clock = new FakeClock()
        const opts = { serverTime: false, prefix, clock, renewMs: 20 }
        return { holder: createRedisLimitStore(REDIS_URL, opts), other: createRedisLimitStore(REDIS_URL, opts), clock }
      })
    for (const make of cases) {
      const { holder, other, clock } = make()
      const start = clock.now()
      try {
        assert.equal((await holder.acquire('x', 2, 't1', start, TTL)).ok, true)
        assert.equal((await holder.acquire('x', 2, 't2', start, TTL)).ok, true)
        // 9 minutes on, both still held: renewed to 10 minutes from then
        clock.set(start + 9 * 60_000)
        assert.ok(await until(async () => (await other.inFlight('x', start + 18 * 60_000)) === 2), `${holder.kind}: renewed`)
        clock.set(start + 18 * 60_000)
        assert.deepEqual(await other.acquire('x', 2, 'o1', clock.now(), TTL), { ok: false, current: 2 }, holder.kind)
        // a released slot is free at once, and no renewal brings it back
        await holder.release('x', 't1')
        assert.equal((await other.acquire('x', 2, 'o1', clock.now(), TTL)).ok, true, holder.kind)
        await other.release('x', 'o1')
        clock.set(start + 27 * 60_000)
        assert.ok(await until(async () => (await other.inFlight('x', start + 36 * 60_000)) === 1), `${holder.kind}: t2 renewed again`)
        assert.equal(await other.inFlight('x', start + 36 * 60_000), 1, `${holder.kind}: t1 stays released`)
        // the holder dies without releasing t2 (its renewals stop): t2 lasts its TTL from the last renewal, then is free
        await holder.close()
        clock.set(start + 36 * 60_000)
        assert.equal(await other.inFlight('x', clock.now()), 1, holder.kind)
        assert.equal((await other.acquire('x', 1, 'o2', clock.now(), TTL)).ok, false, holder.kind)
        clock.set(start + 37 * 60_000 + 1)
        assert.equal(await other.inFlight('x', clock.now()), 0, holder.kind)
        assert.equal((await other.acquire('x', 1, 'o2', clock.now(), TTL)).ok, true, holder.kind)
        await other.release('x', 'o2')
      } finally {
        await holder.close()
        await other.close()
      }
    }
  })

  it('a slot of an instance killed with SIGKILL is renewed while it lives and expires after its TTL once it is gone', needs('redis'), async () => {
    const TTL = 2000
    const prefix = `svc:test:${crypto.randomBytes(6).toString('hex')}:`
    const src = JSON.stringify(url.pathToFileURL(path.join(root, 'src/limits/redis.ts')).href)
    // another instance: takes a slot on the system clock (renewals looked for every 50 ms), then runs on
    const code = [
      `const { createRedisLimitStore } = await import(${src})`,
      `const store = createRedisLimitStore(${JSON.stringify(REDIS_URL)}, { serverTime: true, prefix: ${JSON.stringify(prefix)}, renewMs: 50 })`,
      `const slot = await store.acquire('ip:held', 1, 'child', Date.now(), ${TTL})`,
      `process.stdout.write(slot.ok ? 'held\\n' : 'refused\\n')`,
      `setInterval(() => {}, 1000)`,
    ].join('\n')
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
    const store = createRedisLimitStore(REDIS_URL, { serverTime: true, prefix })
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => (String(d).includes('held') ? resolve() : reject(new Error(String(d)))))
        child.once('exit', (c) => reject(new Error(`the slot holder exited (${c})`)))
      })
      const heldAt = Date.now()
      // two TTLs later, the living holder's slot is still taken
      await new Promise((r) => setTimeout(r, 2 * TTL + 200))
      assert.ok(Date.now() > heldAt + 2 * TTL)
      assert.equal(await store.inFlight('ip:held', Date.now()), 1, 'renewed while its holder lives')
      assert.equal((await store.acquire('ip:held', 1, 'other', Date.now(), TTL)).ok, false)
      child.kill('SIGKILL')
      await new Promise((r) => child.once('exit', r))
      // nothing released it: it is free once its TTL has passed since the last renewal
      assert.ok(await until(async () => (await store.inFlight('ip:held', Date.now())) === 0), 'the dead holder’s slot expired')
      assert.equal((await store.acquire('ip:held', 1, 'other', Date.now(), TTL)).ok, true)
      await store.release('ip:held', 'other')
    } finally {
      child.kill('SIGKILL')
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
