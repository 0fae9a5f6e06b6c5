import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { FakeClock } from '../../src/util/clock.js'
import { raceAtQuota } from '../support/quota-race.js'
import { createKvStore, type KvRow, type Overwrite } from '../../src/features/kv/store.js'
import { createKvService } from '../../src/features/kv/service.js'
import { DurabilityError } from '../../src/db/durability.js'

const RATE_LIMITS = JSON.stringify(
  Object.fromEntries(['default', 'authenticated', 'vip'].map((t) => [t, { minute: 100000, hour: 100000, day: 100000, concurrent: 1000 }])),
)

type User = Awaited<ReturnType<TestServer['user']>>

for (const engine of ENGINES) {
  describe(`write path: counters and durability [${engine}]`, () => {
    let s: TestServer
    let clock: FakeClock
    const store = (u: User, body: unknown) => s.post('/svc_api/data/store', { key: u.key, json: body })
    const incr = (u: User, body: unknown) => s.post('/svc_api/data/incr', { key: u.key, json: body })
    const del = (u: User, key: string) => s.request('DELETE', `/svc_api/data/delete?key=${encodeURIComponent(key)}`, { key: u.key })
    const setLimits = (u: User, limits: Record<string, number | null>) => s.deps.users.update(u.username, { limits })
    /** The counter row against the rows it counts. */
    const counted = async (u: User) => {
      const c = await s.deps.db.k.selectFrom('kv_usage').select('keys').where('user_id', '=', u.id).executeTakeFirst()
      const n = await s.deps.db.k
        .selectFrom('kv_entries')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('user_id', '=', u.id)
        .executeTakeFirstOrThrow()
      return { counter: c ? Number(c.keys) : 0, rows: Number(n.n) }
    }

    before(async () => {
      clock = new FakeClock()
      s = await startServer({ engine, clock, env: { RATE_LIMITS } })
    })
    after(() => s.close())

    for (const route of ['store', 'incr'] as const) {
      it(`20 parallel ${route}s of new keys at quota - 1: exactly one succeeds, the counter stays exact`, async () => {
        const u = await s.user()
        await setLimits(u, { kv_keys: 10 })
        await raceAtQuota({
          quota: 10,
          // setup: k0..k8, numbers (incremented below)
          write: (i) =>
            i < 0
              ? store(u, { key: `k${-i - 1}`, value: -i - 1, data_type: 'number' })
              : route === 'store'
                ? store(u, { key: `new${i}`, value: i })
                : incr(u, { key: `new${i}` }),
          refused: (r) => {
            assert.equal(r.status, 400)
            assert.equal(r.json.error_code, 1605)
            assert.match(r.json.message, /10/)
          },
          counted: () => counted(u),
        })
        // updates of existing keys and increments of existing counters are never refused
        assert.equal((await store(u, { key: 'k1', value: 42 })).json.data.value, 42)
        assert.equal((await incr(u, { key: 'k2' })).json.data.value, 3)
        // a delete frees one place
        assert.equal((await del(u, 'k0')).status, 200)
        assert.deepEqual(await counted(u), { counter: 9, rows: 9 })
        assert.equal((await store(u, { key: 'again', value: 1 })).status, 200)
        assert.equal((await store(u, { key: 'over', value: 1 })).json.error_code, 1605)
      })
    }

    it('expired entries stop counting: at the quota they are purged and the write goes through', async () => {
      const u = await s.user()
      await setLimits(u, { kv_keys: 3 })
      assert.equal((await store(u, { key: 'short', value: 1, ttl: 1 })).status, 200)
      assert.equal((await incr(u, { key: 'n', ttl: 1 })).status, 200)
      assert.equal((await store(u, { key: 'keep', value: 1 })).status, 200)
      const full = await store(u, { key: 'x', value: 1 })
      assert.equal(full.json.error_code, 1605)
      assert.match(full.json.message, /3/)
      clock.advance(1500)
      // the expired counter restarts from nothing (not from its old value) under its own key
      const n = await incr(u, { key: 'n', by: 5 })
      assert.equal(n.json.data.value, 5)
      // a new life, above the version the expired one had (decision 150)
      assert.equal(n.json.data.version, 2)
      assert.equal(n.json.data.expires_at, null)
      assert.deepEqual(await counted(u), { counter: 3, rows: 3 })
      // at the quota (short, n, keep): the expired row is purged, then the new key fits
      assert.equal((await store(u, { key: 'x', value: 1 })).status, 200)
      assert.deepEqual(await counted(u), { counter: 3, rows: 3 })
      const refused = await store(u, { key: 'y', value: 1 })
      assert.equal(refused.json.error_code, 1605)
      assert.match(refused.json.message, /current 3|当前 3/)
      // the periodic purge uncounts exactly what it deletes
      await store(u, { key: 'x', value: 2, ttl: 1 })
      clock.advance(1500)
      const kv = await s.deps.db.k.selectFrom('kv_entries').select('key').where('user_id', '=', u.id).execute()
      assert.equal(kv.length, 3)
      const { createKvService } = await import('../../src/features/kv/service.js')
      await createKvService({ db: s.deps.db, clock }).purgeExpired()
      assert.deepEqual(await counted(u), { counter: 2, rows: 2 })
    })

    it('a create over an expired row, and creates racing deletes of the same keys, answer 200 or 404 only', async () => {
      const u = await s.user()
      assert.equal((await store(u, { key: 'e', value: 1, ttl: 1 })).status, 200)
      clock.advance(1500)
      // the one-statement create meets the expired row; the transaction path purges it and creates
      const again = await store(u, { key: 'e', value: 2 })
      assert.equal(again.status, 200, again.text)
      assert.equal(again.json.data.version, 2)
      assert.equal(again.json.data.value, 2)
      assert.deepEqual(await counted(u), { counter: 1, rows: 1 })
      const ops = Array.from({ length: 60 }, (_, i) => (i % 3 === 2 ? del(u, `r${i % 4}`) : store(u, { key: `r${i % 4}`, value: i })))
      const statuses = (await Promise.all(ops)).map((r) => r.status)
      assert.deepEqual(
        statuses.filter((st) => st !== 200 && st !== 404),
        [],
      )
      const c = await counted(u)
      assert.equal(c.counter, c.rows)
    })

    it('an increment of a live integer, a float and a non-number entry keep their answers', async () => {
      const u = await s.user()
      await store(u, { key: 'big', value: 9007199254740990, data_type: 'number' })
      const a = await incr(u, { key: 'big' })
      assert.equal(a.json.data.value, 9007199254740991)
      // past 2^53 - 1 integers are not exact: refused (400 / 1106), the entry unchanged
      const b = await incr(u, { key: 'big', by: 2 })
      assert.equal(b.status, 400, b.text)
      assert.equal(b.json.error_code, 1106)
      assert.equal((await s.get('/svc_api/data/get?key=big', { key: u.key })).json.data.value, 9007199254740991)
      await store(u, { key: 'f', value: 1.5, data_type: 'number' })
      assert.equal((await incr(u, { key: 'f', by: 2 })).json.data.value, 3.5)
      assert.equal((await incr(u, { key: 'f', by: 0.25 })).json.data.value, 3.75)
      await store(u, { key: 'neg', value: -3, data_type: 'number' })
      const n = await incr(u, { key: 'neg', by: 1, ttl: 60 })
      assert.equal(n.json.data.value, -2)
      assert.equal(n.json.data.size, 2)
      assert.equal(n.json.data.version, 2)
      assert.notEqual(n.json.data.expires_at, null)
      await store(u, { key: 't', value: 'x', data_type: 'text' })
      assert.equal((await incr(u, { key: 't' })).status, 400)
      // a store without data_type onto a text entry still checks the value against text
      assert.equal((await store(u, { key: 't', value: 5 })).status, 400)
      assert.equal((await store(u, { key: 't', value: 'y' })).json.data.data_type, 'text')
    })

    for (const [name, bys] of [
      ['of one sign', Array.from({ length: 120 }, (_, i) => 1 + (i % 3))],
      ['of both signs', Array.from({ length: 120 }, (_, i) => (i % 3 === 0 ? -2 : 1 + (i % 2)))],
    ] as const) {
      it(`120 parallel increments ${name} of one key: every answer fits one serial order`, async () => {
        const u = await s.user()
        await store(u, { key: 'hot', value: 1000, data_type: 'number' })
        const before = (await s.get('/svc_api/data/get?key=hot', { key: u.key })).json.data
        const answers = await Promise.all(bys.map((by) => incr(u, { key: 'hot', by })))
        // merged or not, the answers read as if the increments ran one after another:
        // versions before+1..before+120, each value the previous one plus its own increment
        const seen = answers.map((r, i) => {
          assert.equal(r.status, 200, r.text)
          return { by: bys[i], ...(r.json.data as { value: number; version: number; updated_at: string; size: number }) }
        })
        seen.sort((a, b) => a.version - b.version)
        let prev = { value: before.value as number, version: before.version as number, updated_at: before.updated_at as string }
        for (const e of seen) {
          assert.equal(e.version, prev.version + 1)
          assert.equal(e.value, prev.value + e.by)
          assert.equal(e.size, String(e.value).length)
          assert.ok(e.updated_at > prev.updated_at, `${e.updated_at} after ${prev.updated_at}`)
          prev = e
        }
        const after = (await s.get('/svc_api/data/get?key=hot', { key: u.key })).json.data
        assert.equal(after.value, 1000 + bys.reduce((a: number, b: number) => a + b, 0))
        assert.equal(after.version, prev.version)
        assert.equal(after.updated_at, prev.updated_at)
      })
    }

    it('a batch of overwrites writes each entry as one overwrite alone would', async () => {
      // two users with the same entries: one user's are overwritten one by one, the other's in
      // one statement; apart from the owner, every row back and every row stored is the same
      const kv = createKvStore(s.deps.db)
      const [one, many] = [await s.user(), await s.user()]
      for (const u of [one, many]) {
        await store(u, { key: 'a', value: { n: 1 }, tags: ['x'], is_public: true })
        await store(u, { key: 'b', value: 'text', data_type: 'text' })
        await store(u, { key: 'c', value: 1, ttl: 1 })
        await store(u, { key: 'e', value: 2, ttl: 600 })
        await store(u, { key: 'f', value: [1] })
      }
      clock.advance(2000) // c has expired
      const now = clock.now()
      const items = (userId: string): Overwrite[] => [
        // optional fields unset: tags, public flag and expiry are kept
        { userId, key: 'a', now, value: '{"n":2}', size: 7, data_type: 'json', requireJson: true },
        // a text entry and a json-only write: no row
        { userId, key: 'b', now, value: '"t"', size: 3, data_type: 'json', requireJson: true },
        // expired and missing entries: no row
        { userId, key: 'c', now, value: '3', size: 1, data_type: 'json', requireJson: true },
        { userId, key: 'd', now, value: '4', size: 1, data_type: 'json', requireJson: true },
        // every optional field set, the expiry cleared, and the type changed
        { userId, key: 'e', now, value: '"five"', size: 6, data_type: 'text', requireJson: false, tags: '["y","z"]', is_public: 1, expires_at: null },
        { userId, key: 'f', now, value: '[2]', size: 3, data_type: 'json', requireJson: true, is_public: 0, expires_at: now + 5000 },
      ]
      const alone = []
      for (const f of items(one.id)) alone.push(await kv.updateInPlace(f))
      const batch = await kv.updateManyInPlace(items(many.id))
      const owned = (r: KvRow | undefined) => r && { ...r, user_id: 'x', version: Number(r.version), updated_at: Number(r.updated_at) }
      const byKey = new Map(batch.map((r) => [r.key, owned(r)]))
      assert.deepEqual(
        items(many.id).map((f) => byKey.get(f.key)),
        alone.map(owned),
      )
      assert.deepEqual(
        alone.map((r) => r?.key),
        ['a', undefined, undefined, undefined, 'e', 'f'],
      )
      const rows = async (u: User) =>
        (await s.deps.db.k.selectFrom('kv_entries').selectAll().where('user_id', '=', u.id).orderBy('key').execute()).map((r) => owned(r))
      assert.deepEqual(await rows(many), await rows(one))
    })

    for (const [name, failure, expect] of [
      [
        'refused as a whole (a deadlock): its overwrites run one by one',
        () => Object.assign(new Error('deadlock detected'), { code: '40P01' }),
        'each its own',
      ],
      ['whose sync failed: every caller gets the durability error', () => new DurabilityError(new Error('EIO (injected)')), 'all fail'],
    ] as const) {
      it(`a round of overwrites ${name}`, async () => {
        // a service of its own, so its store's batch statement can be made to fail
        const kv = createKvService({ db: s.deps.db, clock })
        const u = await s.user()
        const user = await s.deps.users.update(u.username, {})
        const keys = Array.from({ length: 12 }, (_, i) => `r${i}`)
        for (const key of keys) await kv.put(user, { key, value: 0 })
        let rounds = 0
        const real = kv.store.updateManyInPlace
        kv.store.updateManyInPlace = () => {
          rounds++
          return Promise.reject(failure())
        }
        try {
          const out = await Promise.allSettled(keys.map((key) => kv.put(user, { key, value: 1 })))
          assert.ok(rounds >= 1, 'the writes went in at least one round')
          if (expect === 'each its own') {
            for (const r of out) {
              assert.equal(r.status, 'fulfilled')
              if (r.status === 'fulfilled') assert.deepEqual([r.value.created, r.value.entry.version, r.value.entry.value], [false, 2, 1])
            }
          } else {
            // the first write ran alone and was made durable; the round after it failed whole
            const failed = out.filter((r) => r.status === 'rejected')
            assert.equal(failed.length, keys.length - 1)
            for (const r of failed) assert.ok(r.status === 'rejected' && r.reason instanceof DurabilityError)
          }
        } finally {
          kv.store.updateManyInPlace = real
        }
      })
    }

    it('parallel chains of writes to 40 keys: the writes of each key land once, in order', async () => {
      const u = await s.user()
      const keys = Array.from({ length: 40 }, (_, i) => `k${i}`)
      // a quarter of the entries are text: a write without data_type takes the transaction path
      for (const key of keys) await store(u, key.endsWith('3') ? { key, value: 'start', data_type: 'text' } : { key, value: 0, tags: ['t'] })
      const chains = await Promise.all(
        keys.map(async (key) => {
          const seen: Array<{ version: number; value: unknown }> = []
          for (let n = 1; n <= 4; n++) {
            const text = key.endsWith('3')
            const body = text ? { key, value: `v${n}` } : n === 3 ? { key, value: n, tags: ['u'], is_public: true } : { key, value: n }
            const r = await store(u, body)
            assert.equal(r.status, 200, r.text)
            seen.push({ version: r.json.data.version, value: r.json.data.value })
          }
          return { key, seen }
        }),
      )
      for (const { key, seen } of chains) {
        const text = key.endsWith('3')
        assert.deepEqual(
          seen,
          [1, 2, 3, 4].map((n) => ({ version: 1 + n, value: text ? `v${n}` : n })),
        )
        const e = (await s.get(`/svc_api/data/get?key=${key}`, { key: u.key })).json.data
        assert.equal(e.version, 5)
        assert.equal(e.data_type, text ? 'text' : 'json')
        // tags and the public flag set by the third write are kept by the fourth
        if (!text) assert.deepEqual([e.tags, e.is_public], [['u'], true])
      }
    })

    it('a key lookup shared by parallel requests never admits a request sent after the account was disabled', async () => {
      const u = await s.user()
      let disabled = false
      let stop = false
      const results: Array<{ after: boolean; status: number }> = []
      const worker = async () => {
        while (!stop) {
          const after = disabled
          const r = await s.get('/svc_api/me', { key: u.key })
          results.push({ after, status: r.status })
        }
      }
      const workers = Array.from({ length: 24 }, worker)
      // enough answers on each side, however busy the machine (10 s at most each)
      const until = async (enough: () => boolean) => {
        for (const end = Date.now() + 10_000; !enough() && Date.now() < end;) await new Promise((r) => setTimeout(r, 20))
      }
      await until(() => results.filter((x) => x.status === 200).length > 20)
      await s.deps.users.update(u.username, { disabled: true })
      disabled = true
      await until(() => results.filter((x) => x.after).length > 20)
      stop = true
      await Promise.all(workers)
      const before = results.filter((x) => !x.after)
      const after = results.filter((x) => x.after)
      assert.ok(before.some((x) => x.status === 200) && after.length > 20, `${before.length} before, ${after.length} after`)
      assert.deepEqual(
        after.filter((x) => x.status !== 403),
        [],
      )
    })

    if (engine === 'sqlite') {
      /** The barrier's next fsync fails (EIO), the ones after it run; returns the undo. */
      const failNextSync = () => {
        const barrier = s.deps.db.barrier!
        const real = (barrier as unknown as { sync: () => Promise<void> }).sync
        let fail = 1
        barrier.setSync(async () => {
          if (fail-- > 0) throw Object.assign(new Error('EIO: i/o error, fdatasync (injected)'), { code: 'EIO' })
          await real()
        })
        return () => barrier.setSync(real)
      }

      it('a failed fsync answers 503 (1503) to the writes it covered, and the next writes work', async () => {
        const u = await s.user()
        const restore = failNextSync()
        try {
          const r = await store(u, { key: 'a', value: 1 })
          assert.equal(r.status, 503, r.text)
          assert.equal(r.json.success, false)
          assert.equal(r.json.error_code, 1503)
          assert.equal(r.json.error_type, 'SERVER_ERROR')
          assert.equal(r.json.details.reason, '写入未能持久保存到磁盘，可能没有保存成功')
          const next = await Promise.all([store(u, { key: 'b', value: 1 }), incr(u, { key: 'c' }), store(u, { key: 'a', value: 2 })])
          assert.deepEqual(
            next.map((x) => x.status),
            [200, 200, 200],
          )
          const rows = await sql<{ key: string }>`select key from kv_entries where user_id = ${u.id} order by key`.execute(s.deps.db.k)
          assert.deepEqual(
            rows.rows.map((x) => x.key),
            ['a', 'b', 'c'],
          )
        } finally {
          restore()
        }
      })

      it('after a failed fsync, a reader holding an old snapshot delays the next writes, not fails them', async () => {
        const u = await s.user()
        const restore = failNextSync()
        // another connection's read transaction, its snapshot taken before the next writes:
        // the recovery's checkpoint cannot copy their frames until it ends
        const reader = new SQLite(path.join(s.dataDir, 'svc.db'), { readonly: true })
        try {
          assert.equal((await store(u, { key: 'a', value: 1 })).status, 503)
          reader.exec('begin')
          reader.prepare('select count(*) from kv_entries').get()
          const ended = new Promise<void>((ok) =>
            setTimeout(() => {
              reader.exec('commit')
              ok()
            }, 150),
          )
          const next = await Promise.all([store(u, { key: 'b', value: 1 }), incr(u, { key: 'c' })])
          await ended
          assert.deepEqual(
            next.map((x) => x.status),
            [200, 200],
            next.map((x) => x.text).join('\n'),
          )
        } finally {
          reader.close()
          restore()
        }
      })
    }
  })
}
