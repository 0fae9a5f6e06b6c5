import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { FakeClock } from '../../src/util/clock.js'
import { createKvStore } from '../../src/features/kv/store.js'
import { createKvService } from '../../src/features/kv/service.js'

// hundreds of requests per account: lift the per-minute and concurrency limits
const RATE_LIMITS = JSON.stringify(
  Object.fromEntries(['default', 'authenticated', 'vip'].map((t) => [t, { minute: 100000, hour: 100000, day: 100000, concurrent: 1000 }])),
)

type User = Awaited<ReturnType<TestServer['user']>>

for (const engine of ENGINES) {
  describe(`key-value store [${engine}]`, () => {
    let s: TestServer
    let clock: FakeClock
    let alice: User
    const store = (u: User, body: unknown) => s.post('/svc_api/data/store', { key: u.key, json: body })
    const raw = (u: User, text: string, p = '/svc_api/data/store') => s.post(p, { key: u.key, body: text, headers: { 'content-type': 'application/json' } })
    const get = (u: User, key: string) => s.get(`/svc_api/data/get?key=${encodeURIComponent(key)}`, { key: u.key })
    const incr = (u: User, body: unknown) => s.post('/svc_api/data/incr', { key: u.key, json: body })
    const del = (u: User, key: string) => s.request('DELETE', `/svc_api/data/delete?key=${encodeURIComponent(key)}`, { key: u.key })
    const list = (u: User, q = '') => s.get(`/svc_api/data/list${q}`, { key: u.key })
    const setLimits = (u: User, limits: Record<string, number | null>) => s.deps.users.update(u.username, { limits })
    const code = (r: { status: number; json: any }, status: number, errorCode: number) => {
      assert.equal(r.status, status, JSON.stringify(r.json))
      assert.equal(r.json.success, false)
      assert.equal(r.json.error_code, errorCode, JSON.stringify(r.json))
    }

    before(async () => {
      clock = new FakeClock()
      s = await startServer({ engine, clock, env: { RATE_LIMITS } })
      alice = await s.user()
    })
    after(() => s.close())

    it('stores, updates (created_at kept, no duplicate) and reads an entry with every field', async () => {
      const r = await store(alice, { key: 'score', value: { top: [1, 2, 3] } })
      assert.equal(r.status, 200)
      assert.equal(r.json.success, true)
      assert.equal(typeof r.json.message, 'string')
      const d = r.json.data
      assert.deepEqual(Object.keys(d).sort(), ['created_at', 'data_type', 'expires_at', 'is_public', 'key', 'size', 'tags', 'updated_at', 'value', 'version'])
      assert.deepEqual(d.value, { top: [1, 2, 3] })
      assert.equal(d.data_type, 'json')
      assert.deepEqual(d.tags, [])
      assert.equal(d.is_public, false)
      assert.equal(d.version, 1)
      assert.equal(d.expires_at, null)
      assert.equal(d.size, Buffer.byteLength(JSON.stringify({ top: [1, 2, 3] })))
      assert.match(d.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+08:00$/)
      assert.equal(d.created_at, d.updated_at)

      clock.advance(5000)
      const u = await store(alice, { key: 'score', value: 'now text', data_type: 'text', tags: ['game', '排行'], is_public: true })
      assert.equal(u.status, 200)
      assert.notEqual(u.json.message, r.json.message)
      assert.equal(u.json.data.created_at, d.created_at)
      assert.ok(u.json.data.updated_at > d.updated_at)
      assert.equal(u.json.data.version, 2)
      assert.equal(u.json.data.data_type, 'text')
      assert.deepEqual(u.json.data.tags, ['game', '排行'])

      const g = await get(alice, 'score')
      assert.equal(g.status, 200)
      assert.deepEqual(Object.keys(g.json).sort(), ['data', 'success'])
      assert.deepEqual(g.json.data, u.json.data)

      // omitted metadata keeps its value on update; data_type, tags and is_public included
      const k = await store(alice, { key: 'score', value: 'again' })
      assert.equal(k.json.data.data_type, 'text')
      assert.equal(k.json.data.is_public, true)
      assert.deepEqual(k.json.data.tags, ['game', '排行'])
      const l = await list(alice)
      assert.equal(l.json.data.items.filter((i: any) => i.key === 'score').length, 1)
    })

    it('checks keys: 100 characters pass, 101 give 1601 (before format), bad formats 1606', async () => {
      const ok = await store(alice, { key: 'k'.repeat(100), value: 1 })
      assert.equal(ok.status, 200)
      code(await store(alice, { key: 'k'.repeat(101), value: 1 }), 400, 1601)
      code(await store(alice, { key: '1'.repeat(101), value: 1 }), 400, 1601)
      for (const bad of ['1abc', '_abc', '-a', 'a b', 'é', 'aé', 'a.b', 'a/b', '', ' a', 'a\u0000']) {
        code(await store(alice, { key: bad, value: 1 }), 400, 1606)
      }
      for (const good of ['a', 'Z', 'a-b_C9', 'abc-']) assert.equal((await store(alice, { key: good, value: 1 })).status, 200)
    })

    it("names data_type and its allowed values when it is none of them, in the answer's language", async () => {
      for (const bad of ['xml', 'JSON', 5, null, ['json']]) {
        for (const lang of ['zh', 'en'] as const) {
          const r = await s.post('/svc_api/data/store', { key: alice.key, json: { key: 'dt', value: 1, data_type: bad }, headers: { 'accept-language': lang } })
          code(r, 400, 1106)
          assert.equal(
            r.json.message,
            lang === 'zh' ? '参数错误：data_type 须为以下值之一：json、text、number' : 'Invalid parameter: data_type must be one of: json, text, number',
            `${JSON.stringify(bad)}: ${r.json.message}`,
          )
        }
      }
      assert.equal((await get(alice, 'dt')).status, 404, 'nothing stored')
    })

    it("says what is wrong with a store, incr, read or list in the answer's language", async () => {
      const CJK = /[\u4e00-\u9fff]/
      const u = await s.user()
      assert.equal((await store(u, { key: 'num', value: 1, data_type: 'number' })).status, 200)
      assert.equal((await store(u, { key: 'obj', value: { a: 1 } })).status, 200)
      assert.equal((await store(u, { key: 'edge', value: Number.MAX_SAFE_INTEGER, data_type: 'number' })).status, 200)
      const deep = '['.repeat(65) + ']'.repeat(65)
      type Req = { method: string; path: string; json?: unknown; body?: string; headers?: Record<string, string> }
      const post = (path: string, json: unknown): Req => ({ method: 'POST', path, json })
      const rawPost = (body: string): Req => ({ method: 'POST', path: '/svc_api/data/store', body, headers: { 'content-type': 'application/json' } })
      const cases: Array<[Req, string]> = [
        [post('/svc_api/data/store', { key: 'k', value: 5, data_type: 'text' }), 'value must be a string for data_type text'],
        [post('/svc_api/data/store', { key: 'k', value: '5', data_type: 'number' }), 'value must be a finite number for data_type number'],
        [rawPost('{"key":"k","value":{"a":[1e400]}}'), 'value holds a number out of range (numbers must be finite doubles)'],
        [post('/svc_api/data/store', { key: 'k', value: 'a\u0000b', data_type: 'text' }), 'value contains U+0000, which the store cannot keep'],
        [rawPost('{"key":"k","value":["\\ud800"]}'), 'value contains an unpaired UTF-16 surrogate, which is not valid Unicode'],
        [post('/svc_api/data/store', { key: 'k', value: { 'a\u0000': 1 } }), 'value (a member name) contains U+0000, which the store cannot keep'],
        [rawPost(`{"key":"k","value":${deep}}`), 'value nests deeper than 64 levels'],
        [
          post('/svc_api/data/store', { key: 'num', value: 'text now' }),
          "value must be a finite number for data_type number (the entry's current type; send data_type to change it)",
        ],
        [
          post('/svc_api/data/store', { key: 'k', value: 1, if_updated_at: 'yesterday' }),
          'if_updated_at must be an ISO 8601 timestamp as returned in updated_at',
        ],
        [post('/svc_api/data/incr', { key: 'obj' }), 'entry "obj" has data_type json; incr only adds to number entries'],
        [
          post('/svc_api/data/incr', { key: 'edge' }),
          `the result is out of range: an increment must give a number within ±${Number.MAX_SAFE_INTEGER} that differs from ${Number.MAX_SAFE_INTEGER}`,
        ],
        [{ method: 'GET', path: '/svc_api/data/list?page=2&after=a' }, 'page and after cannot be given together: after says where the page starts'],
        [
          { method: 'POST', path: '/svc_api/data/store', json: { key: 'k', value: 1 }, headers: { 'if-match': '3' } },
          'If-Match must be * or a list of quoted entity tags such as "3" (an entry\'s ETag is its version, quoted)',
        ],
      ]
      for (const [req, en] of cases) {
        for (const lang of [undefined, 'zh-CN', 'en']) {
          const headers = { ...req.headers, ...(lang ? { 'accept-language': lang } : {}) }
          const r = await s.request(req.method, req.path, { key: u.key, json: req.json, body: req.body, headers })
          code(r, 400, 1106)
          if (lang === 'en') assert.equal(r.json.message, `Invalid parameter: ${en}`)
          else {
            assert.ok(CJK.test(r.json.message), r.json.message)
            assert.doesNotMatch(r.json.message, /[a-z]{4,} [a-z]{2,}/, `no English words: ${r.json.message}`)
          }
        }
      }
      for (const k of ['k', 'num', 'edge'])
        assert.equal((await get(u, k)).json.data?.value ?? null, k === 'num' ? 1 : k === 'edge' ? Number.MAX_SAFE_INTEGER : null)
    })

    it('answers 400 for a missing key or value, an unknown data_type or a value of the wrong type', async () => {
      code(await store(alice, { value: 1 }), 400, 1106)
      code(await store(alice, { key: 'nov' }), 400, 1106)
      code(await store(alice, { key: 'dt', value: 1, data_type: 'xml' }), 400, 1106)
      code(await store(alice, { key: 'n1', value: '5', data_type: 'number' }), 400, 1106)
      code(await store(alice, { key: 'n1', value: [5], data_type: 'number' }), 400, 1106)
      code(await store(alice, { key: 't1', value: 5, data_type: 'text' }), 400, 1106)
      code(await raw(alice, '{"key":"n2","value":1e400,"data_type":"number"}'), 400, 1106)
      code(await raw(alice, '{"key":"n2","value":{"a":[1e400]}}'), 400, 1106)
      code(await raw(alice, '{"key":"n2","value":{"__proto__":{"x":1}}}'), 400, 1113)
      code(await raw(alice, '{"key":"n2","value":'), 400, 1113)
      code(await store(alice, { key: 'tg', value: 1, tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }), 400, 1106)
      code(await store(alice, { key: 'tg', value: 1, tags: ['x'.repeat(33)] }), 400, 1106)
      code(await store(alice, { key: 'tg', value: 1, tags: ['a\nb'] }), 400, 1106)
      code(await store(alice, { key: 'tg', value: 1, ttl: 0 }), 400, 1106)
      // no type coercion: what is stored is what was sent
      code(await store(alice, { key: true, value: 1 }), 400, 1106)
      code(await store(alice, { key: 'tg', value: 1, is_public: 'true' }), 400, 1106)
      code(await store(alice, { key: 'tg', value: 1, version: '1' }), 400, 1106)
      code(await store(alice, { key: 'tg', value: 1, tags: 'one' }), 400, 1106)
      code(await store(alice, { key: 'tg', value: 1, ttl: false }), 400, 1106)
      code(await store(alice, [{ key: 'tg', value: 1 }]), 400, 1106)
      code(await raw(alice, '"just a string"'), 400, 1106)
      assert.equal((await store(alice, { key: 'nul', value: null })).status, 200)
      assert.equal((await store(alice, { key: 'num', value: -12.5, data_type: 'number' })).json.data.value, -12.5)
      // the entry's kept type applies to an update without data_type
      const n = await store(alice, { key: 'num', value: 'text now' })
      code(n, 400, 1106)
      assert.match(n.json.message, /data_type/)
      for (const k of ['nov', 'dt', 'n1', 't1', 'n2', 'tg']) code(await get(alice, k), 404, 1604)
    })

    it('round-trips unicode and deep JSON exactly, and refuses what cannot be stored alike on both engines', async () => {
      const unicode = {
        emoji: '😀👨‍👩‍👧‍👦🏳️‍🌈',
        cjk: '数据库キー값',
        rtl: 'abc\u202Edef',
        nfd: 'e\u0301',
        nfc: 'é',
        astral: '𝄞𠜎',
        zwj: 'a\u200Db',
        controls: '\t\n\u0001\u001f\u007f',
        quotes: '"\\\'/<script>',
        big: 9007199254740991,
        neg: -0.000001,
        exp: 1.5e300,
        nested: [{ 键: ['值', { '😀': true }] }, null, false],
        empty: { '': '' },
      }
      const r = await store(alice, { key: 'uni', value: unicode })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual((await get(alice, 'uni')).json.data.value, unicode)
      const t = await store(alice, { key: 'utext', value: 'ünï 😀 \u202E', data_type: 'text' })
      assert.equal(t.status, 200)
      assert.equal((await get(alice, 'utext')).json.data.value, 'ünï 😀 \u202E')

      let deep: unknown = 'bottom'
      for (let i = 0; i < 64; i++) deep = i % 2 ? [deep] : { d: deep }
      assert.equal((await store(alice, { key: 'deep', value: deep })).status, 200)
      assert.deepEqual((await get(alice, 'deep')).json.data.value, deep)
      code(await store(alice, { key: 'deeper', value: [deep] }), 400, 1106)
      const huge = await raw(alice, `{"key":"huge","value":${'['.repeat(100000)}${']'.repeat(100000)}}`)
      assert.equal(huge.status, 400)
      assert.ok(huge.json.error_code === 1106 || huge.json.error_code === 1113)

      code(await store(alice, { key: 'z1', value: 'a\u0000b' }), 400, 1106)
      code(await store(alice, { key: 'z1', value: 'a\u0000b', data_type: 'text' }), 400, 1106)
      code(await store(alice, { key: 'z1', value: { 'x\u0000': 1 } }), 400, 1106)
      code(await store(alice, { key: 'z1', value: [['ok', '\u0000']] }), 400, 1106)
      code(await store(alice, { key: 'z1', value: 1, tags: ['a\u0000'] }), 400, 1106)
      code(await raw(alice, '{"key":"z1","value":"\\ud800"}'), 400, 1106)
      code(await raw(alice, '{"key":"z1","value":{"\\udc00x":1}}'), 400, 1106)
      code(await raw(alice, '{"key":"z1","value":"x","data_type":"text","tags":["\\udbff"]}'), 400, 1106)
      code(await get(alice, 'z1'), 404, 1604)
      // U+0000 in a path or query string is refused for every route by the API guard (400 / 1106)
      code(await s.get('/svc_api/data/get?key=a%00b', { key: alice.key }), 400, 1106)
      code(await s.get(`/svc_api/data/public/${alice.username}/a%00b`), 400, 1106)
      code(await s.get('/svc_api/data/public/a%00b'), 400, 1106)
      code(await s.request('DELETE', '/svc_api/data/delete?key=a%00b', { key: alice.key }), 400, 1106)
      code(await s.get('/svc_api/data/get', { key: alice.key }), 400, 1106)
      code(await s.get('/svc_api/data/get?key=a&key=b', { key: alice.key }), 400, 1106)
    })

    it('enforces the entry size quota (1602 states the limit) before touching the database', async () => {
      const u = await s.user()
      await setLimits(u, { kv_entry_bytes: 100 })
      const exact = 'x'.repeat(98) // JSON text "xxx..." = 100 bytes
      assert.equal((await store(u, { key: 'a', value: exact, data_type: 'text' })).json.data.size, 100)
      const r = await store(u, { key: 'b', value: exact + 'x', data_type: 'text' })
      code(r, 400, 1602)
      assert.match(r.json.message, /100/)
      code(await store(u, { key: 'a', value: '€'.repeat(33) }), 400, 1602) // 99 UTF-8 bytes + 2 quotes
      // a body larger than the route's limit is refused from its Content-Length, as 1602
      const big = await raw(u, JSON.stringify({ key: 'c', value: 'y'.repeat(4 * 1024 * 1024 + 10) }))
      code(big, 400, 1602)
      assert.match(big.json.message, /100/)
      code(await incr(u, { key: 'a' }), 400, 1106)
      const l = await list(u)
      assert.deepEqual(
        l.json.data.items.map((i: any) => i.key),
        ['a'],
      )
      assert.equal(l.json.data.items[0].value, exact)
      assert.deepEqual(l.json.data.quota, { max_keys: 1000, max_entry_bytes: 100 })
      assert.deepEqual(l.json.data.usage, { keys: 1, bytes: 100 })
    })

    it('enforces the key count quota (1605 states current and limit); updates at the limit work', async () => {
      const u = await s.user()
      await setLimits(u, { kv_keys: 3 })
      for (const k of ['a', 'b', 'c']) assert.equal((await store(u, { key: k, value: k })).status, 200)
      const r = await store(u, { key: 'd', value: 1 })
      code(r, 400, 1605)
      assert.match(r.json.message, /3.*3/)
      assert.equal((await store(u, { key: 'a', value: 'updated' })).status, 200)
      code(await incr(u, { key: 'counter' }), 400, 1605)
      assert.equal((await del(u, 'c')).status, 200)
      assert.equal((await store(u, { key: 'd', value: 1 })).status, 200)
    })

    it('refuses creates at the key quota alike from the read and the write path; expiry, deletes and overwrites still pass', async () => {
      const u = await s.user()
      await setLimits(u, { kv_keys: 2 })
      assert.equal((await store(u, { key: 'a', value: 1, ttl: 60 })).status, 200)
      assert.equal((await store(u, { key: 'b', value: 1 })).status, 200)
      // the first refusal comes from the write path, the next ones from one read (the user is known at the quota)
      const first = await store(u, { key: 'c', value: 1 })
      code(first, 400, 1605)
      const again = await store(u, { key: 'c', value: 1 })
      assert.deepEqual(again.json, first.json)
      code(await incr(u, { key: 'd' }), 400, 1605)
      assert.equal((await store(u, { key: 'b', value: 2, data_type: 'number' })).json.data.version, 2)
      assert.equal((await incr(u, { key: 'b' })).json.data.value, 3)
      // an expired entry frees its place: the read sees it and leaves the create to the write path
      clock.advance(60_000)
      assert.equal((await store(u, { key: 'c', value: 1 })).status, 200)
      const full = await incr(u, { key: 'e' })
      code(full, 400, 1605)
      assert.match(full.json.message, /2.*2/)
      assert.equal((await del(u, 'b')).status, 200)
      assert.equal((await incr(u, { key: 'e' })).json.data.value, 1)
      const l = await list(u)
      assert.deepEqual(
        l.json.data.items.map((i: any) => i.key),
        ['c', 'e'],
      )
      assert.equal(l.json.data.usage.keys, 2)
    })

    // PostgreSQL's locks (on SQLite one connection serves reads and writes in turn: an open
    // transaction holds both)
    if (engine === 'postgres')
      it('refuses a create at the key quota while another transaction holds the writes', async () => {
        const u = await s.user()
        await setLimits(u, { kv_keys: 1 })
        assert.equal((await store(u, { key: 'a', value: 1 })).status, 200)
        code(await store(u, { key: 'b', value: 1 }), 400, 1605)
        // another transaction holds the user's row lock, as every KV write path takes it, and
        // keeps every other writer off kv_entries (reads go on)
        let release!: () => void
        const released = new Promise<void>((r) => (release = r))
        let locked!: () => void
        const isLocked = new Promise<void>((r) => (locked = r))
        const holder = s.deps.db.k.transaction().execute(async (trx) => {
          await trx.selectFrom('users').select('id').where('id', '=', u.id).forUpdate().execute()
          await sql`lock table kv_entries in exclusive mode`.execute(trx)
          locked()
          await released
        })
        await isLocked
        const refused = store(u, { key: 'c', value: 1 })
        // answered while the transaction is still open: the refusal is one read, no write
        const first = await Promise.race([refused, new Promise<null>((r) => setTimeout(() => r(null), 5000))])
        release()
        await holder
        await refused
        assert.ok(first, 'the refusal waited for the open transaction')
        code(first, 400, 1605)
      })

    if (engine === 'postgres')
      describe('a write in a transaction is not fooled by an in-place write that commits between its read and its write', () => {
        /**
         * Runs `first` (an in-place write: one statement, no user lock) and then `second` (a
         * transactional write) while another transaction holds the entry's row: `first` queues
         * on the row, `second` reads the entry and queues after it; then the row is released.
         */
        const interleave = async (u: User, key: string, first: () => Promise<any>, second: () => Promise<any>) => {
          const k = s.deps.db.k
          // the backends waiting, directly or not, on `holder`
          const waiting = async (holder: number): Promise<number> => {
            const r = await sql<{ n: string }>`with recursive w(pid) as (
                select pid from pg_stat_activity where ${holder} = any(pg_blocking_pids(pid))
                union select a.pid from pg_stat_activity a join w on w.pid = any(pg_blocking_pids(a.pid)))
              select count(*) as n from w`.execute(k)
            return Number(r.rows[0].n)
          }
          const until = async (holder: number, n: number) => {
            for (let i = 0; i < 500 && (await waiting(holder)) < n; i++) await new Promise((r) => setTimeout(r, 20))
            assert.equal(await waiting(holder), n)
          }
          return k.connection().execute(async (conn) => {
            await sql`begin`.execute(conn)
            const holder = Number((await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(conn)).rows[0].pid)
            await conn.selectFrom('kv_entries').select('key').where('user_id', '=', u.id).where('key', '=', key).forUpdate().execute()
            const a = first()
            await until(holder, 1)
            const b = second()
            await until(holder, 2)
            await sql`rollback`.execute(conn)
            return Promise.all([a, b])
          })
        }

        it('a compare-and-swap from the version before an overwrite is a conflict', async () => {
          const u = await s.user()
          assert.equal((await store(u, { key: 'raced', value: 'v1' })).json.data.version, 1)
          const [fast, cas] = await interleave(
            u,
            'raced',
            () => store(u, { key: 'raced', value: 'fast' }),
            () => store(u, { key: 'raced', value: 'cas', version: 1 }),
          )
          assert.equal(fast.status, 200, fast.text)
          assert.equal(fast.json.data.version, 2)
          // the overwrite committed first, so version 1 is stale: the CAS must not write
          code(cas, 409, 1409)
          assert.equal(cas.json.details.current_version, 2)
          const now = (await get(u, 'raced')).json.data
          assert.equal(now.value, 'fast')
          assert.equal(now.version, 2)
        })

        it('an increment in a transaction adds to the value an in-place increment wrote', async () => {
          const u = await s.user()
          await store(u, { key: 'counted', value: 10, data_type: 'number' })
          // a fractional `by` takes the transaction path
          const [a, b] = await interleave(
            u,
            'counted',
            () => incr(u, { key: 'counted', by: 1 }),
            () => incr(u, { key: 'counted', by: 0.5 }),
          )
          assert.equal(a.json.data.value, 11)
          assert.equal(b.json.data.value, 11.5)
          const now = (await get(u, 'counted')).json.data
          assert.equal(now.value, 11.5)
          assert.equal(now.version, 3)
        })
      })

    it('never lets concurrent stores pass the key count quota together', async () => {
      const u = await s.user()
      await setLimits(u, { kv_keys: 5 })
      await store(u, { key: 'pre', value: 0 })
      const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => store(u, { key: `k${i}`, value: i })))
      assert.equal(rs.filter((r) => r.status === 200).length, 4)
      for (const r of rs.filter((x) => x.status !== 200)) code(r, 400, 1605)
      const l = await list(u)
      assert.equal(l.json.data.total, 5)
      assert.equal(l.json.data.usage.keys, 5)
      // mixed increments and stores of new keys at the edge
      await setLimits(u, { kv_keys: 8 })
      const mixed = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? incr(u, { key: `c${i}` }) : store(u, { key: `m${i}`, value: i }))))
      assert.equal(mixed.filter((r) => r.status === 200).length, 3)
      assert.equal((await list(u)).json.data.total, 8)
    })

    it('lists by key with paging, quota and usage; bad paging gives 1107/1108', async () => {
      const u = await s.user()
      const keys = ['b', 'A', 'a', 'Z9', 'c_1', 'c-1']
      for (const k of keys) await store(u, { key: k, value: k })
      const l = await list(u)
      assert.equal(l.status, 200)
      assert.deepEqual(Object.keys(l.json.data).sort(), ['items', 'page', 'per_page', 'quota', 'total', 'total_pages', 'usage'])
      assert.deepEqual(
        l.json.data.items.map((i: any) => i.key),
        [...keys].sort(),
      )
      assert.equal(l.json.data.page, 1)
      assert.equal(l.json.data.per_page, 50)
      assert.equal(l.json.data.total, 6)
      assert.equal(l.json.data.total_pages, 1)
      assert.deepEqual(l.json.data.quota, { max_keys: 1000, max_entry_bytes: 65536 })
      assert.deepEqual(l.json.data.usage, { keys: 6, bytes: keys.reduce((n, k) => n + k.length + 2, 0) })
      const p2 = await list(u, '?page=2&per_page=4')
      assert.deepEqual(
        p2.json.data.items.map((i: any) => i.key),
        [...keys].sort().slice(4),
      )
      assert.equal(p2.json.data.total_pages, 2)
      assert.deepEqual((await list(u, '?page=9')).json.data.items, [])
      for (const q of ['?page=0', '?page=-1', '?page=1.5', '?page=abc', '?page=1e20']) code(await list(u, q), 400, 1107)
      for (const q of ['?per_page=0', '?per_page=101', '?per_page=x']) code(await list(u, q), 400, 1108)
      assert.equal((await list(u, '?per_page=100')).json.data.per_page, 100)
    })

    it('deletes an entry; a missing one answers 404 / 1604', async () => {
      await store(alice, { key: 'gone', value: 1 })
      const d = await del(alice, 'gone')
      assert.equal(d.status, 200)
      assert.deepEqual(Object.keys(d.json).sort(), ['message', 'success'])
      assert.equal(d.json.success, true)
      code(await del(alice, 'gone'), 404, 1604)
      code(await get(alice, 'gone'), 404, 1604)
      code(await s.request('DELETE', '/svc_api/data/delete', { key: alice.key }), 400, 1106)
    })

    it('keeps keys per user: another user neither sees nor changes them', async () => {
      const bob = await s.user()
      await store(alice, { key: 'mine', value: 'alice' })
      code(await get(bob, 'mine'), 404, 1604)
      code(await del(bob, 'mine'), 404, 1604)
      assert.equal((await store(bob, { key: 'mine', value: 'bob' })).json.data.version, 1)
      assert.equal((await get(alice, 'mine')).json.data.value, 'alice')
    })

    it('renames a legacy key with old_key; 1603 when the new key is taken', async () => {
      const u = await s.user()
      const kv = createKvStore(s.deps.db)
      const t0 = clock.now() - 86400_000
      for (const key of ['legacy key!', '9lives', 'dup.legacy']) {
        await kv.insert(s.deps.db.k, {
          user_id: u.id,
          key,
          value: '"old"',
          data_type: 'text',
          tags: '["x"]',
          is_public: 1,
          version: 3,
          size: 5,
          created_at: t0,
          updated_at: t0,
          expires_at: null,
        })
      }
      assert.equal((await get(u, 'legacy key!')).json.data.value, 'old')
      const r = await store(u, { key: 'legacyKey', old_key: 'legacy key!', value: 'new' })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.data.key, 'legacyKey')
      assert.equal(r.json.data.value, 'new')
      assert.equal(r.json.data.version, 4)
      assert.deepEqual(r.json.data.tags, ['x'])
      assert.equal(r.json.data.created_at, (await get(u, 'legacyKey')).json.data.created_at)
      assert.ok(r.json.data.created_at < r.json.data.updated_at)
      code(await get(u, 'legacy key!'), 404, 1604)
      assert.equal((await list(u)).json.data.total, 3)

      await store(u, { key: 'taken', value: 1 })
      code(await store(u, { key: 'taken', old_key: '9lives', value: 2 }), 400, 1603)
      assert.equal((await get(u, '9lives')).json.data.value, 'old')
      assert.equal((await get(u, 'taken')).json.data.value, 1)
      code(await store(u, { key: 'fresh', old_key: 'taken', value: 2 }), 400, 1106) // not a legacy key
      code(await store(u, { key: 'fresh', old_key: 'no such legacy!', value: 2 }), 404, 1604)
      code(await store(u, { key: 'bad key', old_key: '9lives', value: 2 }), 400, 1606)
      assert.equal((await del(u, 'dup.legacy')).status, 200)
    })

    it('increments atomically, creating the entry at 0; refuses non-number entries', async () => {
      // a user who never deleted an entry: new entries start at version 1
      const u = await s.user()
      const r = await incr(u, { key: 'hits' })
      assert.equal(r.status, 200)
      assert.equal(r.json.data.value, 1)
      assert.equal(r.json.data.data_type, 'number')
      assert.equal(r.json.data.version, 1)
      assert.equal((await incr(u, { key: 'hits', by: 5 })).json.data.value, 6)
      assert.equal((await incr(u, { key: 'hits', by: -2.5 })).json.data.value, 3.5)
      await store(u, { key: 'notnum', value: { a: 1 } })
      const bad = await incr(u, { key: 'notnum' })
      code(bad, 400, 1106)
      assert.match(bad.json.message, /number/)
      code(await incr(u, { key: '1bad' }), 400, 1606)
      code(await raw(u, '{"key":"hits","by":1e400}', '/svc_api/data/incr'), 400, 1106)
      code(await incr(u, { key: 'hits', by: 'x' }), 400, 1106)
      assert.equal((await store(u, { key: 'big', value: 1.7e308, data_type: 'number' })).status, 200)
      code(await incr(u, { key: 'big', by: 1.7e308 }), 400, 1106)
      assert.equal((await get(u, 'big')).json.data.value, 1.7e308)
      // an addition a double cannot hold exactly is refused, not answered as done
      code(await incr(u, { key: 'big', by: 1 }), 400, 1106)
      assert.equal((await store(u, { key: 'edge', value: Number.MAX_SAFE_INTEGER - 1, data_type: 'number' })).status, 200)
      assert.equal((await incr(u, { key: 'edge' })).json.data.value, Number.MAX_SAFE_INTEGER)
      const past = await incr(u, { key: 'edge' })
      code(past, 400, 1106)
      assert.match(past.json.message, /9007199254740991/)
      code(await incr(u, { key: 'edge', by: 0.5 }), 400, 1106)
      assert.equal((await get(u, 'edge')).json.data.version, 2)
      // a `by` too small to change the number would be lost
      assert.equal((await store(u, { key: 'edge', value: 1e15, data_type: 'number' })).status, 200)
      code(await incr(u, { key: 'edge', by: 1e-10 }), 400, 1106)
      assert.equal((await incr(u, { key: 'edge', by: 0.5 })).json.data.value, 1e15 + 0.5)
      assert.equal((await store(u, { key: 'low', value: -Number.MAX_SAFE_INTEGER, data_type: 'number' })).status, 200)
      code(await incr(u, { key: 'low', by: -1 }), 400, 1106)
      assert.equal((await get(u, 'low')).json.data.value, -Number.MAX_SAFE_INTEGER)
      // an incr body has the store's 4 MiB limit (whitespace is valid JSON padding)
      const padded = await raw(u, `{"key":"hits"${' '.repeat(2 * 1024 * 1024)}}`, '/svc_api/data/incr')
      assert.equal(padded.status, 200, padded.text)
      assert.equal(padded.json.data.value, 4.5)
    })

    it('reads a text/plain body as JSON on store and incr (fetch with a string body and no Content-Type)', async () => {
      // fetch(url, {method: 'POST', body: JSON.stringify(x), headers: {Authorization}}) sends text/plain;charset=UTF-8
      const plain = (p: string, body: string, headers: Record<string, string> = {}) =>
        s.post(p, { key: alice.key, body, headers: { 'content-type': 'text/plain;charset=UTF-8', ...headers } })
      const st = await plain('/svc_api/data/store', JSON.stringify({ key: 'plainBody', value: { todo: ['milk', 'café'] } }))
      assert.equal(st.status, 200, st.text)
      assert.deepEqual((await get(alice, 'plainBody')).json.data.value, { todo: ['milk', 'café'] })
      const inc = await plain('/svc_api/data/incr', '{"key":"plainHits","by":2}')
      assert.equal(inc.status, 200, inc.text)
      assert.equal(inc.json.data.value, 2)
      // conditions, size limits and validation are the JSON body's
      code(await plain('/svc_api/data/store', '{"key":"plainBody","value":1}', { 'if-match': '"9"' }), 409, 1409)
      code(await plain('/svc_api/data/store', JSON.stringify({ key: 'plainBig', value: 'x'.repeat(70000) })), 400, 1602)
      code(await plain('/svc_api/data/store', '{"key":"plainBody"}'), 400, 1106)
      // text that is not JSON: the JSON body's error, which names the fix
      const bad = await plain('/svc_api/data/store', 'key=plainBody&value=1')
      assert.equal(bad.status, 400, bad.text)
      assert.equal(bad.json.success, false)
      assert.equal(bad.json.error_code, (await raw(alice, 'key=plainBody&value=1')).json.error_code)
      assert.deepEqual((await get(alice, 'plainBody')).json.data.value, { todo: ['milk', 'café'] })
    })

    it('refuses a form or multipart body on store and incr with 415 / 1112 and stores nothing', async () => {
      // a form body was parsed into fields: key=formBody&value=1 stored the string "1"
      const form = (p: string, body: string, type: string) => s.post(p, { key: alice.key, body, headers: { 'content-type': type } })
      const mp = `--b\r\nContent-Disposition: form-data; name="key"\r\n\r\nformBody\r\n--b\r\nContent-Disposition: form-data; name="value"\r\n\r\n1\r\n--b--\r\n`
      for (const p of ['/svc_api/data/store', '/svc_api/data/incr']) {
        code(await form(p, 'key=formBody&value=1', 'application/x-www-form-urlencoded'), 415, 1112)
        code(await form(p, mp, 'multipart/form-data; boundary=b'), 415, 1112)
      }
      code(await get(alice, 'formBody'), 404, 1604)
    })

    it('200 concurrent increments of one key end exactly +200', async () => {
      const u = await s.user({ vip: true })
      await store(u, { key: 'counter', value: 1000, data_type: 'number', is_public: true })
      const rs = await Promise.all(Array.from({ length: 200 }, () => incr(u, { key: 'counter' })))
      assert.deepEqual([...new Set(rs.map((r) => r.status))], [200])
      const g = await get(u, 'counter')
      assert.equal(g.json.data.value, 1200)
      assert.equal(g.json.data.version, 201)
      assert.equal(new Set(rs.map((r) => r.json.data.value)).size, 200)
      assert.equal((await s.get(`/svc_api/data/public/${u.username}/counter`)).json.data.value, 1200)
    })

    it('compare-and-swap: a stale version or updated_at answers 409 / 1409 and changes nothing', async () => {
      // a user who never deleted an entry: new entries start at version 1
      const u = await s.user()
      const a = await store(u, { key: 'cas', value: 'v1' })
      const v1 = a.json.data
      const b = await store(u, { key: 'cas', value: 'v2', version: 1 })
      assert.equal(b.status, 200)
      assert.equal(b.json.data.version, 2)
      const stale = await store(u, { key: 'cas', value: 'lost', version: 1, is_public: true })
      assert.equal(stale.status, 409)
      assert.equal(stale.json.error_code, 1409)
      assert.equal(stale.json.error_type, 'BUSINESS_ERROR')
      assert.equal(stale.json.details.current_version, 2)
      assert.match(stale.json.message, /2/)
      const now = (await get(u, 'cas')).json.data
      assert.equal(now.value, 'v2')
      assert.equal(now.is_public, false)
      // same clock instant: updated_at still moves, so it is a CAS token too
      code(await store(u, { key: 'cas', value: 'lost', if_updated_at: v1.updated_at }), 409, 1409)
      const c = await store(u, { key: 'cas', value: 'v3', if_updated_at: now.updated_at })
      assert.equal(c.status, 200)
      assert.ok(c.json.data.updated_at > now.updated_at)
      code(await store(u, { key: 'cas', value: 'x', version: 0 }), 409, 1409)
      code(await store(u, { key: 'cas', value: 'x', if_updated_at: 'yesterday' }), 400, 1106)
      // the right shape with a field out of range is as malformed as garbage, not a conflict
      for (const bad of ['2026-13-45T99:99:99Z', '2026-02-30T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T00:60:00Z', '2026-01-01T00:00:00+24:00'])
        code(await store(u, { key: 'cas', value: 'x', if_updated_at: bad }), 400, 1106)
      // version 0 = create only if absent
      assert.equal((await store(u, { key: 'cas-new', value: 1, version: 0 })).json.data.version, 1)
      code(await store(u, { key: 'cas-none', value: 1, version: 3 }), 409, 1409)
      code(await get(u, 'cas-none'), 404, 1604)
      // racing CAS writers from the same read: exactly one wins
      const base = (await get(u, 'cas')).json.data.version
      const race = await Promise.all(Array.from({ length: 10 }, (_, i) => store(u, { key: 'cas', value: `w${i}`, version: base })))
      assert.equal(race.filter((r) => r.status === 200).length, 1)
      assert.equal(race.filter((r) => r.status === 409).length, 9)
    })

    it('If-Match / If-None-Match on store, incr and delete: the ETag is the version; a stale one is 409 / 1409', async () => {
      const u = await s.user()
      const write = (body: unknown, headers: Record<string, string>, p = '/svc_api/data/store') => s.post(p, { key: u.key, json: body, headers })
      const remove = (key: string, headers: Record<string, string>) =>
        s.request('DELETE', `/svc_api/data/delete?key=${encodeURIComponent(key)}`, { key: u.key, headers })
      const value = async (key: string) => (await get(u, key)).json.data?.value
      const a = await store(u, { key: 'im', value: 'v1' })
      assert.equal(a.header('etag'), '"1"')
      assert.equal((await get(u, 'im')).header('etag'), '"1"')

      // a stale tag: 409 with the current version, nothing changed
      const stale = await write({ key: 'im', value: 'lost' }, { 'if-match': '"7"' })
      code(stale, 409, 1409)
      assert.equal(stale.json.details.current_version, 1)
      assert.equal(await value('im'), 'v1')
      const b = await write({ key: 'im', value: 'v2' }, { 'if-match': '"1"' })
      assert.equal(b.status, 200, b.text)
      assert.equal(b.json.data.version, 2)
      assert.equal(b.header('etag'), '"2"')
      code(await write({ key: 'im', value: 'lost' }, { 'if-match': '"1"' }), 409, 1409)
      // If-Match compares strongly: a weak tag never matches; a list matches any of its tags
      code(await write({ key: 'im', value: 'lost' }, { 'if-match': 'W/"2"' }), 409, 1409)
      assert.equal((await write({ key: 'im', value: 'v3' }, { 'if-match': '"5", "2"' })).json.data.version, 3)
      assert.equal(await value('im'), 'v3')
      // * = the entry exists; If-None-Match * = it does not
      code(await write({ key: 'im-new', value: 1 }, { 'if-match': '*' }), 409, 1409)
      code(await get(u, 'im-new'), 404, 1604)
      code(await write({ key: 'im', value: 'lost' }, { 'if-none-match': '*' }), 409, 1409)
      assert.equal((await write({ key: 'im-new', value: 1 }, { 'if-none-match': '*' })).json.data.version, 1)
      assert.equal((await write({ key: 'im', value: 'v4' }, { 'if-match': '*' })).json.data.version, 4)
      // a condition that cannot be read, or one the body's version contradicts: 400 / 1106
      for (const bad of ['4', '"4" "5"', '*, "4"', '']) code(await write({ key: 'im', value: 'lost' }, { 'if-match': bad }), 400, 1106)
      code(await write({ key: 'im', value: 'lost', version: 4 }, { 'if-match': '"3"' }), 400, 1106)
      assert.equal(await value('im'), 'v4')
      assert.equal((await write({ key: 'im', value: 'v5', version: 4 }, { 'if-match': '"4"' })).json.data.version, 5)

      // incr
      await store(u, { key: 'im-n', value: 10, data_type: 'number' })
      code(await write({ key: 'im-n', by: 5 }, { 'if-match': '"9"' }, '/svc_api/data/incr'), 409, 1409)
      const n = await write({ key: 'im-n', by: 5 }, { 'if-match': '"1"' }, '/svc_api/data/incr')
      assert.equal(n.json.data.value, 15)
      assert.equal(n.header('etag'), '"2"')
      code(await write({ key: 'im-n2' }, { 'if-match': '*' }, '/svc_api/data/incr'), 409, 1409)
      code(await get(u, 'im-n2'), 404, 1604)

      // delete: a stale tag keeps the entry; a missing entry is 1604 whatever the condition
      const d = await remove('im', { 'if-match': '"4"' })
      code(d, 409, 1409)
      assert.equal(d.json.details.current_version, 5)
      assert.equal(await value('im'), 'v5')
      code(await remove('im', { 'if-none-match': '*' }), 409, 1409)
      code(await remove('im', { 'if-match': 'nope' }), 400, 1106)
      assert.equal((await remove('im', { 'if-match': '"5"' })).status, 200)
      code(await get(u, 'im'), 404, 1604)
      code(await remove('im', { 'if-match': '"5"' }), 404, 1604)

      // pages may send the conditions and read the ETag
      const pre = await s.request('OPTIONS', '/svc_api/data/store', {
        headers: {
          origin: 'https://app.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type, if-match',
        },
      })
      assert.match(pre.header('access-control-allow-headers') ?? '', /if-match/i)
      assert.match(a.header('access-control-expose-headers') ?? '', /\bETag\b/)
    })

    it('never gives a key a version it had before a delete or expiry (no ABA through If-Match or version)', async () => {
      const u = await s.user()
      const version = (r: { json: any }) => r.json.data.version as number
      // a life of `k`: versions 1 to 3, then deleted
      assert.equal(version(await store(u, { key: 'k', value: 'a' })), 1)
      await store(u, { key: 'k', value: 'b' })
      const held = await store(u, { key: 'k', value: 'c' })
      assert.equal(held.header('etag'), '"3"')
      assert.equal((await del(u, 'k')).status, 200)
      // stored again three times (the one-statement create, then overwrites): never 1 to 3
      const seen: number[] = []
      for (const value of ['x', 'y', 'z']) seen.push(version(await store(u, { key: 'k', value })))
      assert.ok(seen[0] > 3, `re-created at version ${seen[0]}`)
      assert.deepEqual(seen, [seen[0], seen[0] + 1, seen[0] + 2])
      // the client that read version 3 before the delete cannot overwrite what it never saw
      const stale = await s.post('/svc_api/data/store', { key: u.key, json: { key: 'k', value: 'lost' }, headers: { 'if-match': '"3"' } })
      code(stale, 409, 1409)
      code(await store(u, { key: 'k', value: 'lost', version: 3 }), 409, 1409)
      assert.equal((await get(u, 'k')).json.data.value, 'z')
      // every way to end and start a life: delete then incr (transaction path), a conditional
      // create, an expiry purged by the owner's next write, an expiry purged by the job
      let last = seen[2]
      const next = async (end: () => Promise<unknown>, start: () => Promise<{ json: any; status: number }>) => {
        await end()
        const r = await start()
        assert.equal(r.status, 200, JSON.stringify(r.json))
        assert.ok(version(r) > last, `version ${version(r)} after ${last}`)
        last = version(r)
      }
      await next(
        () => del(u, 'k'),
        () => incr(u, { key: 'k', by: 2 }),
      )
      await next(
        () => del(u, 'k'),
        () => s.post('/svc_api/data/store', { key: u.key, json: { key: 'k', value: 1 }, headers: { 'if-none-match': '*' } }),
      )
      await next(
        async () => {
          await store(u, { key: 'k', value: 2, ttl: 1 })
          last += 1
          clock.advance(1_000)
        },
        () => store(u, { key: 'k', value: 3 }),
      )
      await next(
        async () => {
          await store(u, { key: 'k', value: 4, ttl: 1 })
          last += 1
          clock.advance(1_000)
          assert.ok((await createKvStore(s.deps.db).purgeExpired(clock.now())) >= 1)
        },
        () => store(u, { key: 'k', value: 5 }),
      )
      // other keys and other users keep starting at 1 until they delete something
      assert.equal(version(await store(await s.user(), { key: 'k', value: 1 })), 1)
    })

    it('expires entries with ttl: missing everywhere once expired (FakeClock), purged later', async () => {
      const u = await s.user()
      await setLimits(u, { kv_keys: 2 })
      const r = await store(u, { key: 'temp', value: 'soon gone', ttl: 60, is_public: true })
      assert.equal(r.status, 200)
      assert.ok(r.json.data.expires_at)
      await store(u, { key: 'keep', value: 1 })
      clock.advance(59_000)
      assert.equal((await get(u, 'temp')).status, 200)
      // an update without ttl keeps the expiry
      const k = await store(u, { key: 'temp', value: 'still' })
      assert.equal(k.json.data.expires_at, r.json.data.expires_at)
      clock.advance(1_000)
      code(await get(u, 'temp'), 404, 1604)
      code(await s.get(`/svc_api/data/public/${u.username}/temp`), 404, 1604)
      code(await s.get('/svc_api/data/public/temp'), 404, 1604)
      code(await del(u, 'temp'), 404, 1604)
      const l = await list(u)
      assert.deepEqual(
        l.json.data.items.map((i: any) => i.key),
        ['keep'],
      )
      assert.equal(l.json.data.usage.keys, 1)
      // the expired key no longer counts against kv_keys, and storing it again creates it anew
      const again = await store(u, { key: 'temp', value: 'new' })
      assert.equal(again.status, 200)
      // a new life: above the versions the expired entry had (1 and 2)
      assert.equal(again.json.data.version, 3)
      assert.equal(again.json.data.expires_at, null)
      assert.equal(again.json.data.created_at, again.json.data.updated_at)
      // incr with ttl, then ttl null clears the expiry
      await store(u, { key: 'keep', value: 1, ttl: 10 })
      const cleared = await store(u, { key: 'keep', value: 2, ttl: null })
      assert.equal(cleared.json.data.expires_at, null)
      clock.advance(20_000)
      assert.equal((await get(u, 'keep')).json.data.value, 2)
      // the periodic purge removes the rows of expired entries
      await store(u, { key: 'temp', value: 'x', ttl: 1 })
      clock.advance(2_000)
      const kv = createKvStore(s.deps.db)
      const before = await s.deps.db.k.selectFrom('kv_entries').select('key').where('user_id', '=', u.id).execute()
      assert.equal(before.length, 2)
      assert.ok((await kv.purgeExpired(clock.now())) >= 1)
      const rows = await s.deps.db.k.selectFrom('kv_entries').select('key').where('user_id', '=', u.id).execute()
      assert.deepEqual(
        rows.map((x) => x.key),
        ['keep'],
      )
      const ti = await incr(u, { key: 'tick', ttl: 5 })
      assert.ok(ti.json.data.expires_at)
      clock.advance(5_000)
      assert.equal((await incr(u, { key: 'tick' })).json.data.value, 1)
    })

    it('public read: only is_public entries, same 1604 otherwise; CORS for any origin, no credentials, no-cache', async () => {
      const bob = await s.user()
      await store(bob, { key: 'board', value: [{ name: '玩家', score: 9 }], is_public: true, tags: ['t'] })
      await store(bob, { key: 'secret', value: 'hidden' })
      const r = await s.get(`/svc_api/data/public/${bob.username}/board`, { headers: { origin: 'null' } })
      assert.equal(r.status, 200)
      assert.deepEqual(Object.keys(r.json.data).sort(), ['data_type', 'key', 'owner', 'updated_at', 'value'])
      assert.deepEqual(r.json.data.value, [{ name: '玩家', score: 9 }])
      assert.equal(r.json.data.owner, bob.username)
      assert.equal(r.json.data.key, 'board')
      assert.equal(r.json.data.data_type, 'json')
      assert.equal(r.json.data.updated_at, (await get(bob, 'board')).json.data.updated_at)
      assert.equal(r.header('access-control-allow-origin'), '*')
      assert.equal(r.header('access-control-allow-credentials'), undefined)
      assert.equal(r.header('cache-control'), 'no-cache')
      assert.match(r.header('content-type')!, /^application\/json/)
      assert.ok(r.header('x-ratelimit-limit'))
      assert.equal(r.header('set-cookie'), undefined)
      assert.equal((await s.get(`/svc_api/data/public/${bob.username.toUpperCase()}/board`)).status, 200)
      const head = await s.request('HEAD', `/svc_api/data/public/${bob.username}/board`)
      assert.equal(head.status, 200)
      assert.equal(head.header('access-control-allow-origin'), '*')
      // a session cookie changes nothing
      const cookie = await s.login(bob.username, bob.password)
      assert.deepEqual((await s.get(`/svc_api/data/public/${bob.username}/board`, { cookie })).json, r.json)

      const priv = await s.get(`/svc_api/data/public/${bob.username}/secret`)
      const missing = await s.get(`/svc_api/data/public/${bob.username}/nothing`)
      const otherUser = await s.get(`/svc_api/data/public/${alice.username}/board`)
      const noUser = await s.get('/svc_api/data/public/nobody-at-all/board')
      for (const x of [priv, missing, otherUser, noUser]) {
        code(x, 404, 1604)
        assert.deepEqual(x.json, missing.json)
        assert.equal(x.header('access-control-allow-origin'), '*')
        assert.equal(x.header('access-control-allow-credentials'), undefined)
      }
      // making it private again hides it
      await store(bob, { key: 'board', value: [], is_public: false })
      code(await s.get(`/svc_api/data/public/${bob.username}/board`), 404, 1604)

      const pre = await s.request('OPTIONS', `/svc_api/data/public/${bob.username}/board`, {
        headers: { origin: 'null', 'access-control-request-method': 'GET', 'access-control-request-headers': 'content-type' },
      })
      assert.equal(pre.status, 204)
      assert.equal(pre.header('access-control-allow-origin'), '*')
      assert.match(pre.header('access-control-allow-methods')!, /GET/)
      assert.match(pre.header('access-control-allow-headers')!, /content-type/i)
      assert.equal(pre.header('access-control-allow-credentials'), undefined)
      assert.equal(
        (await s.request('OPTIONS', '/svc_api/data/public/board', { headers: { origin: 'null', 'access-control-request-method': 'GET' } })).status,
        204,
      )
      // a URL refused before any route (a malformed escape: 400; a segment over the router's
      // bound: 414) is readable from any origin too
      for (const [bad, status] of [
        [`/svc_api/data/public/${bob.username}/%E0%A4%A`, 400],
        [`/svc_api/data/public/${bob.username}/${'k'.repeat(3000)}`, 414],
      ] as const) {
        const r = await s.get(bad, { headers: { origin: 'null' } })
        assert.equal(r.status, status, bad.slice(0, 60))
        assert.equal(r.json.error_code, 1110)
        assert.equal(r.header('access-control-allow-origin'), '*', bad.slice(0, 60))
        assert.equal(r.header('access-control-allow-credentials'), undefined)
      }
      // the key-authenticated endpoints allow any origin but never credentials (decision 127)
      const privRead = await get(bob, 'secret')
      assert.equal(privRead.header('access-control-allow-origin'), '*')
      assert.equal(privRead.header('access-control-allow-credentials'), undefined)
      const prePriv = await s.request('OPTIONS', '/svc_api/data/store', {
        headers: { origin: 'https://a.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      })
      assert.equal(prePriv.status, 204)
      assert.match(prePriv.header('access-control-allow-methods')!, /POST/)
      assert.match(prePriv.header('access-control-allow-headers')!, /authorization/i)
      assert.equal(prePriv.header('access-control-allow-credentials'), undefined)
    })

    it('get and the public read answer If-None-Match with 304, with the ETag the writes use', async () => {
      const u = await s.user()
      const w = await store(u, { key: 'cond', value: { n: 1 }, is_public: true })
      const tag = w.header('etag')!
      assert.equal(tag, `"${w.json.data.version}"`)
      const own = (headers: Record<string, string>) => s.get('/svc_api/data/get?key=cond', { key: u.key, headers })
      const pub = (headers: Record<string, string>) => s.get(`/svc_api/data/public/${u.username}/cond`, { headers })

      // the private read: 304 on a matching tag (weakly, in a list, or *), no body, the same
      // ETag and Cache-Control as its 200; a stale tag reads the entry
      const full = await own({})
      assert.equal(full.status, 200)
      assert.equal(full.header('etag'), tag)
      // the tag names a version of this user's entry, not of the URL: no cache keeps the answer
      assert.equal(full.header('cache-control'), 'private, no-store')
      for (const inm of [tag, `W/${tag}`, `"999", ${tag}`, '*']) {
        const r = await own({ 'if-none-match': inm })
        assert.equal(r.status, 304, `${inm}: ${r.status} ${r.text}`)
        assert.equal(r.text, '')
        assert.equal(r.header('etag'), tag)
        assert.equal(r.header('cache-control'), full.header('cache-control'))
        assert.equal(r.header('access-control-allow-origin'), '*')
        assert.ok(r.header('x-ratelimit-limit'))
      }
      assert.equal((await own({ 'if-none-match': '"999"' })).status, 200)
      // a malformed field matches nothing (a read is lenient, RFC 9110)
      assert.equal((await own({ 'if-none-match': 'nope' })).status, 200)
      code(await s.get('/svc_api/data/get?key=none', { key: u.key, headers: { 'if-none-match': '*' } }), 404, 1604)

      // the public read: the same tag, from the route (first read) and from the cache
      const p = await pub({})
      assert.equal(p.status, 200)
      assert.equal(p.header('etag'), tag)
      assert.match(p.header('access-control-expose-headers') ?? '', /\bETag\b/)
      for (let i = 0; i < 2; i++) {
        const r = await pub({ 'if-none-match': tag })
        assert.equal(r.status, 304, `read ${i}: ${r.status}`)
        assert.equal(r.text, '')
        assert.equal(r.header('etag'), tag)
        assert.equal(r.header('cache-control'), 'no-cache')
        assert.equal(r.header('access-control-allow-origin'), '*')
        assert.ok(r.header('x-ratelimit-limit'))
      }
      assert.equal((await pub({ 'if-none-match': '"999"' })).status, 200)
      // the legacy read's entry may change owner (whose versions are their own): no tag, no 304
      const legacy = await s.get('/svc_api/data/public/cond', { headers: { 'if-none-match': '*' } })
      assert.equal(legacy.status, 200)
      assert.equal(legacy.header('etag'), undefined)

      // a write moves the tag: the old one reads the new value on both
      const w2 = await store(u, { key: 'cond', value: { n: 2 } })
      assert.notEqual(w2.header('etag'), tag)
      const after = await own({ 'if-none-match': tag })
      assert.equal(after.status, 200)
      assert.deepEqual(after.json.data.value, { n: 2 })
      const pAfter = await pub({ 'if-none-match': tag })
      assert.equal(pAfter.status, 200)
      assert.deepEqual(pAfter.json.data.value, { n: 2 })
      assert.equal(pAfter.header('etag'), w2.header('etag'))
      // private again: 1604 whatever the condition
      await store(u, { key: 'cond', value: 3, is_public: false })
      code(await pub({ 'if-none-match': '*' }), 404, 1604)
    })

    it('get and the public read answer a failing If-Match with 412 and no body (decision 160)', async () => {
      const u = await s.user()
      const w = await store(u, { key: 'pre', value: { n: 1 }, is_public: true })
      const tag = w.header('etag')!
      const own = (headers: Record<string, string>) => s.get('/svc_api/data/get?key=pre', { key: u.key, headers })
      const pub = (headers: Record<string, string>) => s.get(`/svc_api/data/public/${u.username}/pre`, { headers })
      // [read, the 412's Cache-Control]: the get's own no-store stays; the public read's
      // no-cache turns private, as every 412 of a public body (decision 143)
      const reads: Array<[string, typeof own, string]> = [
        ['get', own, 'private, no-store'],
        ['public read', pub, 'private, no-cache'],
      ]
      for (const [name, read, cache] of reads) {
        // twice: the public read's second answer comes from its cache
        for (let i = 0; i < 2; i++) {
          // another tag, the right one weak (If-Match compares strongly), a malformed field
          for (const im of ['"nope"', `W/${tag}`, '"999", "998"', 'nope']) {
            const r = await read({ 'if-match': im })
            assert.equal(r.status, 412, `${name} ${im}: ${r.status} ${r.text}`)
            assert.equal(r.text, '')
            assert.equal(r.header('content-length'), '0')
            assert.equal(r.header('etag'), tag)
            assert.equal(r.header('cache-control'), cache)
            assert.equal(r.header('access-control-allow-origin'), '*')
            assert.ok(r.header('x-ratelimit-limit'))
          }
          // If-Match is decided first: it fails before a matching If-None-Match is read
          assert.equal((await read({ 'if-match': '"nope"', 'if-none-match': tag })).status, 412)
          for (const im of [tag, `"999", ${tag}`, '*']) {
            const r = await read({ 'if-match': im })
            assert.equal(r.status, 200, `${name} ${im}: ${r.status}`)
            assert.deepEqual(r.json.data.value, { n: 1 })
          }
          assert.equal((await read({ 'if-match': tag, 'if-none-match': tag })).status, 304)
          // entries have no Last-Modified: If-Unmodified-Since is ignored (RFC 9110 13.1.4)
          assert.equal((await read({ 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status, 200)
        }
      }
      // the legacy read has no ETag: only * passes
      const legacy = (im: string) => s.get('/svc_api/data/public/pre', { headers: { 'if-match': im } })
      for (let i = 0; i < 2; i++) {
        assert.equal((await legacy('*')).status, 200)
        const r = await legacy(tag)
        assert.equal(r.status, 412)
        assert.equal(r.text, '')
        assert.equal(r.header('etag'), undefined)
        assert.equal(r.header('cache-control'), 'private, no-cache')
      }
      // a missing (or private) entry is 1604 whatever the condition
      code(await s.get('/svc_api/data/get?key=none', { key: u.key, headers: { 'if-match': '"1"' } }), 404, 1604)
      await store(u, { key: 'pre', value: 2, is_public: false })
      code(await pub({ 'if-match': '"nope"' }), 404, 1604)
    })

    it('public reads are cached, and every write on any instance (through the bus) shows at once', async () => {
      const u = await s.user()
      const path = `/svc_api/data/public/${u.username}/live`
      code(await s.get(path), 404, 1604) // a cached miss
      await store(u, { key: 'live', value: 1, data_type: 'number', is_public: true })
      assert.equal((await s.get(path)).json.data.value, 1)
      assert.equal((await s.get('/svc_api/data/public/live')).json.data.value, 1)
      assert.equal((await incr(u, { key: 'live' })).status, 200)
      assert.equal((await s.get(path)).json.data.value, 2)
      assert.equal((await s.get('/svc_api/data/public/live')).json.data.value, 2)
      // another instance on the same database and bus
      const other = createKvService({ db: s.deps.db, clock, bus: s.deps.bus })
      const user = (await s.deps.users.byId(u.id))!
      assert.equal(JSON.parse((await other.publicRead(u.username, 'live')).body.toString()).data.value, 2)
      assert.equal((await store(u, { key: 'live', value: 'from this instance', data_type: 'text' })).status, 200)
      assert.equal(JSON.parse((await other.publicRead(u.username, 'live')).body.toString()).data.value, 'from this instance')
      await other.put(user, { key: 'live', value: 'from the other' })
      assert.equal((await s.get(path)).json.data.value, 'from the other')
      assert.equal((await s.get('/svc_api/data/public/live')).json.data.value, 'from the other')
      await other.remove(user, 'live')
      code(await s.get(path), 404, 1604)
      code(await s.get('/svc_api/data/public/live'), 404, 1604)
    })

    it('legacy public read by key: the oldest live public entry wins, ties by username', async () => {
      const t = clock.now()
      const zed = await s.user({ name: `zz${t.toString(36)}` })
      const amy = await s.user({ name: `aa${t.toString(36)}` })
      const mid = await s.user({ name: `mm${t.toString(36)}` })
      const key = `shared${t.toString(36)}`
      code(await s.get(`/svc_api/data/public/${key}`), 404, 1604)
      await store(mid, { key, value: 'mid private, oldest', is_public: false })
      clock.advance(1000)
      await store(zed, { key, value: 'zed', is_public: true })
      clock.advance(1000)
      await store(amy, { key, value: 'amy', is_public: true })
      for (let i = 0; i < 3; i++) {
        const r = await s.get(`/svc_api/data/public/${key}`)
        assert.equal(r.status, 200)
        assert.equal(r.json.data.owner, zed.username)
        assert.equal(r.json.data.value, 'zed')
        assert.equal(r.header('access-control-allow-origin'), '*')
      }
      // an update keeps created_at, so the winner does not change
      await store(zed, { key, value: 'zed v2' })
      assert.equal((await s.get(`/svc_api/data/public/${key}`)).json.data.owner, zed.username)
      // the winner's entry turns private: the next oldest public one wins
      await store(zed, { key, value: 'zed', is_public: false })
      assert.equal((await s.get(`/svc_api/data/public/${key}`)).json.data.owner, amy.username)
      // equal created_at: the username sorting first wins
      const tie = `tie${t.toString(36)}`
      await store(zed, { key: tie, value: 'z', is_public: true })
      await store(mid, { key: tie, value: 'm', is_public: true })
      await store(amy, { key: tie, value: 'a', is_public: true })
      assert.equal((await s.get(`/svc_api/data/public/${tie}`)).json.data.owner, amy.username)
      await del(amy, tie)
      assert.equal((await s.get(`/svc_api/data/public/${tie}`)).json.data.owner, mid.username)
    })

    it('list with prefix: exact byte-wise prefix, paged over the matches, usage of the whole store', async () => {
      const u = await s.user()
      const kv = createKvStore(s.deps.db)
      for (const key of ['app-a', 'app-b', 'app_c', 'appz', 'App-x', 'ap', 'apq', 'other']) assert.equal((await store(u, { key, value: 1 })).status, 200)
      // legacy keys (written before the key format) may hold LIKE wildcards and any Unicode
      const t0 = clock.now()
      for (const key of ['app%x', 'app\\y', 'appé', 'app😀', 'app\u{10FFFF}', 'apq\u{10FFFF}z', 'é']) {
        await kv.insert(s.deps.db.k, {
          user_id: u.id,
          key,
          value: '1',
          data_type: 'json',
          tags: '[]',
          is_public: 0,
          version: 1,
          size: 1,
          created_at: t0,
          updated_at: t0,
          expires_at: null,
        })
      }
      const keys = async (q: string) => {
        const r = await list(u, q)
        assert.equal(r.status, 200, r.text)
        return r.json.data.items.map((i: any) => i.key)
      }
      const p = (prefix: string, rest = '') => `?prefix=${encodeURIComponent(prefix)}${rest}`
      assert.deepEqual(await keys(p('app-')), ['app-a', 'app-b'])
      // `_` and `%` are plain characters, not LIKE wildcards; case matters
      assert.deepEqual(await keys(p('app_')), ['app_c'])
      assert.deepEqual(await keys(p('app%')), ['app%x'])
      assert.deepEqual(await keys(p('app\\')), ['app\\y'])
      assert.deepEqual(await keys(p('App')), ['App-x'])
      assert.deepEqual(await keys(p('APP')), [])
      // the key equal to the prefix is included; byte order (UTF-8) throughout
      assert.deepEqual(await keys(p('ap')), [
        'ap',
        'app%x',
        'app-a',
        'app-b',
        'app\\y',
        'app_c',
        'appz',
        'appé',
        'app😀',
        'app\u{10FFFF}',
        'apq',
        'apq\u{10FFFF}z',
      ])
      assert.deepEqual(await keys(p('appé')), ['appé'])
      assert.deepEqual(await keys(p('app\u{10FFFF}')), ['app\u{10FFFF}'])
      assert.deepEqual(await keys(p('apq\u{10FFFF}')), ['apq\u{10FFFF}z'])
      assert.deepEqual(await keys(p('é')), ['é'])
      assert.deepEqual(await keys(p('zzz')), [])
      assert.deepEqual(await keys(p('x'.repeat(2000))), [])
      // paging, total and total_pages count the matches; usage and quota the whole store
      const all = await list(u)
      assert.equal(all.json.data.total, 15)
      const first = await list(u, p('app', '&per_page=3'))
      assert.equal(first.json.data.total, 9)
      assert.equal(first.json.data.total_pages, 3)
      assert.deepEqual(first.json.data.usage, all.json.data.usage)
      assert.deepEqual(first.json.data.quota, all.json.data.quota)
      const paged: string[] = []
      for (let page = 1; page <= 4; page++) paged.push(...(await keys(p('app', `&per_page=3&page=${page}`))))
      assert.deepEqual(paged, await keys(p('app')))
      // an empty prefix is every key; expired entries are gone from the matches too
      assert.equal((await keys(p(''))).length, 15)
      await store(u, { key: 'app-a', value: 1, ttl: 1 })
      clock.advance(2000)
      assert.deepEqual(await keys(p('app-')), ['app-b'])
      assert.equal((await list(u, p('app-'))).json.data.total, 1)
      // given twice: 400 / 1106
      code(await list(u, '?prefix=a&prefix=b'), 400, 1106)
    })

    it('list with after: a cursor in key order, so keys added or deleted between pages are neither skipped nor repeated', async () => {
      const u = await s.user()
      for (const key of ['a', 'b', 'c', 'd', 'e']) assert.equal((await store(u, { key, value: key })).status, 200)
      const keys = (r: { json: any }) => r.json.data.items.map((i: any) => i.key)
      const first = await list(u, '?per_page=2&after=')
      assert.deepEqual(keys(first), ['a', 'b'])
      assert.equal(first.json.data.next_after, 'b')
      // between the pages one key before the cursor goes and one comes: offsets would skip `c`
      assert.equal((await del(u, 'a')).status, 200)
      assert.equal((await store(u, { key: 'ab', value: 1 })).status, 200)
      const second = await list(u, '?per_page=2&after=b')
      assert.deepEqual(keys(second), ['c', 'd'])
      assert.equal(second.json.data.next_after, 'd')
      // total and usage stay the whole list's; the last page says there is no more
      assert.equal(second.json.data.total, 5)
      const last = await list(u, '?per_page=2&after=d')
      assert.deepEqual(keys(last), ['e'])
      assert.equal(last.json.data.next_after, null)
      // a full last page knows there is no more (no empty page to ask for)
      assert.equal((await list(u, '?per_page=1&after=d')).json.data.next_after, null)
      // after need not be a key; byte order; with a prefix, both bounds hold
      assert.deepEqual(keys(await list(u, '?after=bz')), ['c', 'd', 'e'])
      assert.deepEqual(keys(await list(u, '?after=')), ['ab', 'b', 'c', 'd', 'e'])
      for (const key of ['p1', 'p2', 'p3', 'q']) await store(u, { key, value: 1 })
      const pre = await list(u, '?prefix=p&after=p1')
      assert.deepEqual(keys(pre), ['p2', 'p3'])
      assert.equal(pre.json.data.total, 3)
      // page mode is as the spec says, with the spec's fields only
      const paged = await list(u, '?page=2&per_page=2')
      assert.deepEqual(keys(paged), ['c', 'd'])
      assert.equal(paged.json.data.page, 2)
      assert.equal('next_after' in paged.json.data, false)
      // page and after together, or after twice: 400 / 1106
      code(await list(u, '?page=2&after=b'), 400, 1106)
      code(await list(u, '?page=1&after='), 400, 1106)
      code(await list(u, '?after=a&after=b'), 400, 1106)
    })

    it('requires credentials for writes and private reads; refuses cross-site cookie writes', async () => {
      for (const [m, p] of [
        ['POST', '/svc_api/data/store'],
        ['POST', '/svc_api/data/incr'],
        ['GET', '/svc_api/data/get?key=a'],
        ['GET', '/svc_api/data/list'],
        ['DELETE', '/svc_api/data/delete?key=a'],
      ]) {
        code(await s.request(m, p, m === 'POST' ? { json: { key: 'a', value: 1 } } : {}), 401, 1001)
      }
      const cookie = await s.login(alice.username, alice.password)
      code(await s.post('/svc_api/data/store', { cookie, json: { key: 'csrf', value: 1 }, headers: { origin: 'null' } }), 403, 1008)
      code(await s.post('/svc_api/data/store', { cookie, json: { key: 'csrf', value: 1 }, headers: { 'sec-fetch-site': 'cross-site' } }), 403, 1008)
      code(await get(alice, 'csrf'), 404, 1604)
      assert.equal((await s.post('/svc_api/data/store', { cookie, json: { key: 'csrf', value: 1 } })).status, 200)
      // a same-origin browser write needs the session's CSRF token (the pages send it)
      code(
        await s.post('/svc_api/data/store', { cookie, json: { key: 'csrf', value: 2 }, headers: { 'sec-fetch-site': 'same-origin', origin: s.url } }),
        403,
        1012,
      )
      const token = await s.csrfToken(cookie)
      assert.equal(
        (
          await s.post('/svc_api/data/store', {
            cookie,
            json: { key: 'csrf', value: 2 },
            headers: { 'sec-fetch-site': 'same-origin', origin: s.url, 'x-csrf-token': token },
          })
        ).status,
        200,
      )
    })

    it('documents the store, its extensions and its error codes in the OpenAPI document', async () => {
      const doc = (await s.get('/openapi.json')).json
      for (const p of [
        '/svc_api/data/store',
        '/svc_api/data/incr',
        '/svc_api/data/get',
        '/svc_api/data/list',
        '/svc_api/data/delete',
        '/svc_api/data/public/{username}/{key}',
        '/svc_api/data/public/{key}',
        '/svc_api/data/public-list/{username}',
      ]) {
        assert.ok(doc.paths[p], p)
      }
      const body = doc.paths['/svc_api/data/store'].post.requestBody.content['application/json'].schema
      for (const f of ['key', 'value', 'data_type', 'tags', 'is_public', 'old_key', 'version', 'if_updated_at', 'ttl']) assert.ok(body.properties[f], f)
    })
  })
}
