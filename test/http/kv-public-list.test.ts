import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import { ENGINES, REDIS_URL, dropSchema, needs, startSecond, startServer, type TestServer } from '../support/server.js'
import { FakeClock } from '../../src/util/clock.js'

// the anonymous tier refuses the 41st request of a minute (each test starts a new minute);
// keys (the owners' setup) are not limited here
const RATE_LIMITS = JSON.stringify({
  default: { minute: 40, hour: 100000, day: 100000, concurrent: 100 },
  authenticated: { minute: 100000, hour: 100000, day: 100000, concurrent: 1000 },
  vip: { minute: 100000, hour: 100000, day: 100000, concurrent: 1000 },
})

type User = Awaited<ReturnType<TestServer['user']>>
type Res = Awaited<ReturnType<TestServer['get']>>

const listPath = (username: string, q = '') => `/svc_api/data/public-list/${username}${q}`

for (const engine of ENGINES) {
  describe(`the public listing of a user's entries, without a key [${engine}]`, () => {
    let s: TestServer
    let clock: FakeClock
    const store = (u: User, body: unknown) => s.post('/svc_api/data/store', { key: u.key, json: body })
    // messages in English, which the 400s' patterns match
    const list = (username: string, q = '', headers: Record<string, string> = {}) =>
      s.get(listPath(username, q), { headers: { 'accept-language': 'en', ...headers } })
    const keysOf = (r: Res) => (r.json.data.items as Array<{ key: string }>).map((i) => i.key)
    const ok = (r: Res) => {
      assert.equal(r.status, 200, r.text)
      return r
    }
    const invalid = (r: Res, code: number, pattern: RegExp) => {
      assert.equal(r.status, 400, r.text)
      assert.equal(r.json.success, false)
      assert.equal(r.json.error_code, code, r.text)
      assert.match(r.json.message, pattern)
      assert.equal(r.header('access-control-allow-origin'), '*', 'a page reads the error')
    }

    before(async () => {
      clock = new FakeClock()
      s = await startServer({ engine, clock, env: { RATE_LIMITS } })
    })
    after(() => s.close())

    it("lists only the owner's public entries, with the public read's fields, by key; never a private one", async () => {
      clock.advance(61_000)
      const alice = await s.user()
      const bob = await s.user()
      for (const b of [
        { key: 'zeta', value: 'last', data_type: 'text', is_public: true },
        { key: 'alpha', value: { top: ['玩家', 3] }, is_public: true, tags: ['t'] },
        { key: 'Beta', value: 7, data_type: 'number', is_public: true, public_incr: true },
        { key: 'secret', value: 'private', data_type: 'text' },
        { key: 'hidden', value: 1, data_type: 'number', is_public: false },
      ])
        assert.equal((await store(alice, b)).status, 200)
      assert.equal((await store(bob, { key: 'other', value: 1, is_public: true })).status, 200)

      const r = ok(await list(alice.username))
      assert.deepEqual(Object.keys(r.json).sort(), ['data', 'success'])
      assert.equal(r.json.success, true)
      assert.deepEqual(Object.keys(r.json.data).sort(), ['items', 'next_after', 'per_page'])
      assert.equal(r.json.data.per_page, 50, "the authenticated list's default")
      assert.equal(r.json.data.next_after, null)
      // byte order: upper case first, as the authenticated list
      assert.deepEqual(keysOf(r), ['Beta', 'alpha', 'zeta'])
      assert.ok(!r.text.includes('private') && !r.text.includes('hidden') && !r.text.includes('other'))
      // each item is exactly what the public read answers for that key
      for (const item of r.json.data.items) {
        const one = ok(await s.get(`/svc_api/data/public/${alice.username}/${item.key}`))
        assert.deepEqual(item, one.json.data, item.key)
      }
      assert.deepEqual(Object.keys(r.json.data.items[0]).sort(), ['data_type', 'key', 'owner', 'updated_at', 'value'])
      assert.deepEqual(r.json.data.items[1].value, { top: ['玩家', 3] })
      assert.equal(r.json.data.items[0].owner, alice.username)
      // CORS as the public read: any origin, never credentials, revalidated each time
      assert.equal(r.header('access-control-allow-origin'), '*')
      assert.equal(r.header('access-control-allow-credentials'), undefined)
      assert.equal(r.header('cache-control'), 'no-cache')
      assert.match(r.header('access-control-expose-headers') ?? '', /ETag/)
      // the username is matched as the public read matches it
      assert.deepEqual(keysOf(ok(await list(alice.username.toUpperCase()))), ['Beta', 'alpha', 'zeta'])
      // an account without public entries: an empty list
      const carol = await s.user()
      assert.equal((await store(carol, { key: 'mine', value: 1 })).status, 200)
      const empty = ok(await list(carol.username))
      assert.deepEqual(empty.json.data, { items: [], per_page: 50, next_after: null })
      // the legacy read by key keeps its path: /public/{name} is still the key {name}
      assert.equal((await store(bob, { key: 'board', value: 'legacy', data_type: 'text', is_public: true })).status, 200)
      assert.equal(ok(await s.get('/svc_api/data/public/board')).json.data.value, 'legacy')
    })

    it('filters by prefix and pages by the after cursor, without skipping or repeating a key', async () => {
      clock.advance(61_000)
      const u = await s.user()
      const keys = ['item-a', 'item-b', 'item-c', 'item-d', 'item-e', 'items', 'itemz-x', 'other']
      for (const key of keys) assert.equal((await store(u, { key, value: key, data_type: 'text', is_public: true })).status, 200)
      // a private key in the middle of the range is skipped, not counted in the page
      assert.equal((await store(u, { key: 'item-bb', value: 'no', data_type: 'text' })).status, 200)

      const first = ok(await list(u.username, '?prefix=item-&per_page=2'))
      assert.deepEqual(keysOf(first), ['item-a', 'item-b'])
      assert.equal(first.json.data.per_page, 2)
      assert.equal(first.json.data.next_after, 'item-b')
      // a key deleted before the cursor does not shift the next page
      assert.equal((await s.request('DELETE', '/svc_api/data/delete?key=item-a', { key: u.key })).status, 200)
      const second = ok(await list(u.username, `?prefix=item-&per_page=2&after=${first.json.data.next_after}`))
      assert.deepEqual(keysOf(second), ['item-c', 'item-d'])
      assert.equal(second.json.data.next_after, 'item-d')
      const third = ok(await list(u.username, `?prefix=item-&per_page=2&after=item-d`))
      assert.deepEqual(keysOf(third), ['item-e'])
      assert.equal(third.json.data.next_after, null)
      // the prefix is byte-wise: 'items' and 'itemz-x' are not under 'item-'
      assert.deepEqual(keysOf(ok(await list(u.username, '?prefix=item'))), ['item-b', 'item-c', 'item-d', 'item-e', 'items', 'itemz-x'])
      assert.deepEqual(keysOf(ok(await list(u.username, '?prefix=nothing'))), [])
      // after alone, a key that does not exist, and empty values (every key)
      assert.deepEqual(keysOf(ok(await list(u.username, '?after=items'))), ['itemz-x', 'other'])
      assert.deepEqual(keysOf(ok(await list(u.username, '?after=item-bz&per_page=1'))), ['item-c'])
      assert.equal(keysOf(ok(await list(u.username, '?prefix=&after='))).length, 7)
      // 100 is the largest page, as for the authenticated list
      assert.equal(ok(await list(u.username, '?per_page=100')).json.data.per_page, 100)
    })

    it("bad query values are 400 in the API format (1108, 1106); a missing or disabled account is the public read's 404 / 1604", async () => {
      clock.advance(61_000)
      const u = await s.user()
      assert.equal((await store(u, { key: 'shown', value: 1, is_public: true })).status, 200)
      for (const q of ['?per_page=0', '?per_page=101', '?per_page=abc', '?per_page=-1', '?per_page=1.5']) invalid(await list(u.username, q), 1108, /per_page/)
      invalid(await list(u.username, '?page=2'), 1106, /page is not taken here/)
      invalid(await list(u.username, '?prefix=a&prefix=b'), 1106, /prefix/)
      invalid(await list(u.username, '?after=a&after=b'), 1106, /after/)
      invalid(await list(u.username, '?prefix=%00'), 1106, /NUL/)

      const notFound = async (name: string) => {
        const r = await list(name)
        assert.equal(r.status, 404, r.text)
        assert.equal(r.json.error_code, 1604)
        assert.equal(r.header('access-control-allow-origin'), '*')
        return r.json
      }
      const missing = await notFound('no-such-user')
      await notFound('x'.repeat(65))
      await s.deps.users.update(u.username, { disabled: true })
      try {
        // the same body as the public read of the disabled account's entry
        const disabled = await notFound(u.username)
        assert.deepEqual(disabled, missing)
        const read = await s.get(`/svc_api/data/public/${u.username}/shown`, { headers: { 'accept-language': 'en' } })
        assert.equal(read.status, 404)
        assert.deepEqual(read.json, disabled)
      } finally {
        await s.deps.users.update(u.username, { disabled: false })
      }
      assert.deepEqual(keysOf(ok(await list(u.username))), ['shown'])
    })

    it('a write shows at once: set, incr, the public flag, delete, expiry; the ETag follows and 304 / 412 as the public read', async () => {
      clock.advance(61_000)
      const u = await s.user()
      assert.equal((await store(u, { key: 'score', value: 1, data_type: 'number', is_public: true })).status, 200)
      assert.equal((await store(u, { key: 'soon', value: 'brief', data_type: 'text', is_public: true, ttl: 5 })).status, 200)
      const before = ok(await list(u.username))
      assert.deepEqual(keysOf(before), ['score', 'soon'])
      const tag = before.header('etag')
      assert.match(tag ?? '', /^"[A-Za-z0-9_-]+"$/)
      // unchanged: 304 with no body and the 200's headers; a weak tag matches too
      const same = await list(u.username, '', { 'if-none-match': tag! })
      assert.equal(same.status, 304)
      assert.equal(same.body.length, 0)
      assert.equal(same.header('etag'), tag)
      assert.equal(same.header('access-control-allow-origin'), '*')
      assert.equal((await list(u.username, '', { 'if-none-match': `W/${tag}` })).status, 304)
      assert.equal((await list(u.username, '', { 'if-match': tag! })).status, 200)
      const failed = await list(u.username, '', { 'if-match': '"other"' })
      assert.equal(failed.status, 412)
      assert.equal(failed.body.length, 0)

      const valueOf = (r: Res, key: string) => r.json.data.items.find((i: { key: string }) => i.key === key)?.value
      // an overwrite
      assert.equal((await store(u, { key: 'score', value: 5 })).status, 200)
      const set = ok(await list(u.username, '', { 'if-none-match': tag! }))
      assert.equal(valueOf(set, 'score'), 5)
      assert.notEqual(set.header('etag'), tag)
      // an increment (the merged in-place path)
      assert.equal((await s.post('/svc_api/data/incr', { key: u.key, json: { key: 'score', by: 2 } })).status, 200)
      assert.equal(valueOf(ok(await list(u.username)), 'score'), 7)
      // a visitor's increment of a public counter
      assert.equal((await store(u, { key: 'score', value: 7, public_incr: true })).status, 200)
      assert.equal((await s.post(`/svc_api/data/public/${u.username}/score/incr`)).status, 200)
      assert.equal(valueOf(ok(await list(u.username)), 'score'), 8)
      // the public flag, both ways, and a new public entry
      assert.equal((await store(u, { key: 'score', value: 8, is_public: false })).status, 200)
      assert.deepEqual(keysOf(ok(await list(u.username))), ['soon'])
      assert.equal((await store(u, { key: 'score', value: 8, is_public: true })).status, 200)
      assert.equal((await store(u, { key: 'added', value: true, is_public: true })).status, 200)
      assert.deepEqual(keysOf(ok(await list(u.username))), ['added', 'score', 'soon'])
      // a delete
      assert.equal((await s.request('DELETE', '/svc_api/data/delete?key=added', { key: u.key })).status, 200)
      assert.deepEqual(keysOf(ok(await list(u.username))), ['score', 'soon'])
      // an expired entry is never listed, though its row is not purged yet
      clock.advance(6000)
      const later = ok(await list(u.username))
      assert.deepEqual(keysOf(later), ['score'])
      assert.ok(!later.text.includes('brief'))
    })

    it('is counted in the anonymous tier per address, with the public read; a preflight is not; a 429 carries CORS', async () => {
      clock.advance(61_000)
      const u = await s.user()
      assert.equal((await store(u, { key: 'k', value: 1, is_public: true })).status, 200)
      const pre = await s.request('OPTIONS', listPath(u.username), {
        headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match' },
      })
      assert.equal(pre.status, 204)
      assert.equal(pre.header('access-control-allow-origin'), '*')
      assert.match(pre.header('access-control-allow-methods') ?? '', /\bGET\b/)
      assert.match(pre.header('access-control-allow-headers') ?? '', /if-none-match/i)
      assert.equal(pre.header('access-control-allow-credentials'), undefined)
      assert.equal(pre.header('x-ratelimit-limit'), undefined)

      const first = ok(await list(u.username))
      assert.equal(first.header('x-ratelimit-limit'), '40')
      assert.equal(first.header('x-ratelimit-remaining'), '39')
      // the public read and the listing share the address's count
      assert.equal((await s.get(`/svc_api/data/public/${u.username}/k`)).header('x-ratelimit-remaining'), '38')
      assert.equal(ok(await list(u.username)).header('x-ratelimit-remaining'), '37')
      for (let left = 36; left >= 0; left--) assert.equal(ok(await list(u.username)).header('x-ratelimit-remaining'), String(left))
      const refused = await list(u.username)
      assert.equal(refused.status, 429)
      assert.equal(refused.json.error_code, 1204)
      assert.equal(refused.header('access-control-allow-origin'), '*')
      assert.ok(Number(refused.header('retry-after')) >= 1)
      // the owner's key is its own count, untouched by the address's
      assert.equal((await s.get('/svc_api/data/list', { key: u.key })).status, 200)
      clock.advance(61_000)
      ok(await list(u.username))
    })

    it('is documented in the OpenAPI document with its 304 and 412', async () => {
      const doc = (await s.get('/openapi.json')).json
      const op = doc.paths['/svc_api/data/public-list/{username}']?.get
      assert.ok(op, 'documented')
      assert.deepEqual(
        (op.parameters as Array<{ in: string; name: string }>)
          .filter((p) => p.in === 'query')
          .map((p) => p.name)
          .sort(),
        ['after', 'per_page', 'prefix'],
      )
      for (const code of ['200', '304', '412']) assert.ok(op.responses[code], code)
      assert.ok(op.responses['304'].headers?.ETag)
      assert.equal(op.security?.length ?? 0, 0, 'no authentication')
    })
  })

  describe(`the public listing across instances (Redis bus) [${engine}]`, needs('redis'), () => {
    it('a write on one instance shows in the listing of the other at once', async () => {
      const a = await startServer({
        engine,
        keepData: true,
        env: { RATE_LIMITS, REDIS_URL, REDIS_PREFIX: `t${crypto.randomBytes(4).toString('hex')}:` },
      })
      const b = await startSecond(a)
      try {
        const u = await a.user()
        const write = (body: unknown) => a.post('/svc_api/data/store', { key: u.key, json: body })
        const listed = async () => {
          const r = await b.get(listPath(u.username))
          assert.equal(r.status, 200, r.text)
          return (r.json.data.items as Array<{ key: string; value: unknown }>).map((i) => `${i.key}=${JSON.stringify(i.value)}`)
        }
        assert.equal((await write({ key: 'greeting', value: 'hi', data_type: 'text', is_public: true })).status, 200)
        // read on b, also its public read (whose cache a write must drop there too)
        assert.deepEqual(await listed(), ['greeting="hi"'])
        assert.equal((await b.get(`/svc_api/data/public/${u.username}/greeting`)).json.data.value, 'hi')
        assert.equal((await write({ key: 'greeting', value: 'hello' })).status, 200)
        assert.deepEqual(await listed(), ['greeting="hello"'])
        assert.equal((await b.get(`/svc_api/data/public/${u.username}/greeting`)).json.data.value, 'hello')
        assert.equal((await write({ key: 'greeting', value: 'hello', is_public: false })).status, 200)
        assert.deepEqual(await listed(), [])
        assert.equal((await a.post('/svc_api/data/incr', { key: u.key, json: { key: 'count', by: 3 } })).status, 200)
        assert.equal((await write({ key: 'count', value: 3, is_public: true })).status, 200)
        assert.deepEqual(await listed(), ['count=3'])
        assert.equal((await a.request('DELETE', '/svc_api/data/delete?key=count', { key: u.key })).status, 200)
        assert.deepEqual(await listed(), [])
      } finally {
        await b.close()
        await a.close()
        if (engine === 'postgres') await dropSchema((a.env.DATABASE_URL ?? '').split('schema=')[1])
        fs.rmSync(a.dataDir, { recursive: true, force: true })
      }
    })
  })
}
