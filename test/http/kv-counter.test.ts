import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { FakeClock } from '../../src/util/clock.js'

// the anonymous tier takes the 50 parallel increments of one address, and refuses the 61st
// request of a minute; keys (the owner's setup) are not limited here
const RATE_LIMITS = JSON.stringify({
  default: { minute: 60, hour: 100000, day: 100000, concurrent: 100 },
  authenticated: { minute: 100000, hour: 100000, day: 100000, concurrent: 1000 },
  vip: { minute: 100000, hour: 100000, day: 100000, concurrent: 1000 },
})

type User = Awaited<ReturnType<TestServer['user']>>

for (const engine of ENGINES) {
  describe(`public counters: increments without a key [${engine}]`, () => {
    let s: TestServer
    let clock: FakeClock
    let alice: User
    const store = (u: User, body: unknown) => s.post('/svc_api/data/store', { key: u.key, json: body })
    const incr = (u: User, body: unknown) => s.post('/svc_api/data/incr', { key: u.key, json: body })
    const get = (u: User, key: string) => s.get(`/svc_api/data/get?key=${encodeURIComponent(key)}`, { key: u.key })
    // messages in English, which the 400s' patterns match
    const hit = (user: string, key: string, body?: unknown) =>
      s.post(`/svc_api/data/public/${user}/${key}/incr`, {
        headers: { 'accept-language': 'en', ...(typeof body === 'string' ? { 'content-type': 'text/plain' } : {}) },
        ...(body === undefined ? {} : typeof body === 'string' ? { body } : { json: body }),
      })
    const notFound = (r: { status: number; json: any }) => {
      assert.equal(r.status, 404, JSON.stringify(r.json))
      assert.equal(r.json.success, false)
      assert.equal(r.json.error_code, 1604)
    }
    const invalid = (r: { status: number; json: any }, pattern: RegExp) => {
      assert.equal(r.status, 400, JSON.stringify(r.json))
      assert.equal(r.json.success, false)
      assert.equal(r.json.error_code, 1106)
      assert.match(JSON.stringify(r.json), pattern)
    }

    before(async () => {
      clock = new FakeClock()
      s = await startServer({ engine, clock, env: { RATE_LIMITS } })
      alice = await s.user()
    })
    after(() => s.close())

    it('store and incr set public_incr; get and list show it only on a counter', async () => {
      const plain = await store(alice, { key: 'plain', value: 1, data_type: 'number' })
      assert.equal(plain.status, 200)
      assert.equal('public_incr' in plain.json.data, false, 'an entry stored without the flag answers the fields it had')
      const c = await store(alice, { key: 'likes', value: 0, data_type: 'number', public_incr: true })
      assert.equal(c.status, 200)
      assert.equal(c.json.data.public_incr, true)
      assert.equal((await get(alice, 'likes')).json.data.public_incr, true)
      // an update without the field keeps it, as it keeps is_public
      assert.equal((await store(alice, { key: 'likes', value: 0 })).json.data.public_incr, true)
      const listed = (await s.get('/svc_api/data/list', { key: alice.key })).json.data.items
      assert.equal(listed.find((e: any) => e.key === 'likes').public_incr, true)
      assert.equal('public_incr' in listed.find((e: any) => e.key === 'plain'), false)
      // the owner's incr sets it too, on a new entry and on an existing one
      assert.equal((await incr(alice, { key: 'visits', public_incr: true })).json.data.public_incr, true)
      const off = await incr(alice, { key: 'visits', by: 2, public_incr: false })
      assert.equal(off.json.data.value, 3)
      assert.equal('public_incr' in off.json.data, false)
      assert.equal((await incr(alice, { key: 'visits', public_incr: true })).json.data.public_incr, true)
      invalid(await store(alice, { key: 'bad', value: 1, public_incr: 'yes' }), /public_incr/)
      invalid(await incr(alice, { key: 'bad', public_incr: 1 }), /public_incr/)
      assert.equal((await get(alice, 'bad')).status, 404, 'a refused write stores nothing')
    })

    it('a visitor adds 1 or -1 without a key; the answer, the version and the public read follow', async () => {
      assert.equal((await store(alice, { key: 'hits', value: 10, data_type: 'number', public_incr: true, is_public: true })).status, 200)
      const before = (await get(alice, 'hits')).json.data
      // warm the public read's cache: the increment must drop it
      assert.equal((await s.get(`/svc_api/data/public/${alice.username}/hits`)).json.data.value, 10)
      const r = await hit(alice.username, 'hits')
      assert.equal(r.status, 200, JSON.stringify(r.json))
      assert.deepEqual(Object.keys(r.json).sort(), ['data', 'success'])
      assert.equal(r.json.data.value, 11)
      assert.equal(r.json.data.owner, alice.username)
      assert.equal(r.json.data.data_type, 'number')
      assert.equal(r.header('access-control-allow-origin'), '*')
      assert.equal(r.header('access-control-allow-credentials'), undefined)
      assert.equal(r.header('etag'), `"${before.version + 1}"`)
      assert.ok(r.header('x-ratelimit-limit'), 'counted by the anonymous limiter')
      assert.equal((await s.get(`/svc_api/data/public/${alice.username}/hits`)).json.data.value, 11)
      // -1 undoes a like; the text/plain body a fetch() of a string sends is read as JSON
      assert.equal((await hit(alice.username, 'hits', { delta: -1 })).json.data.value, 10)
      assert.equal((await hit(alice.username, 'hits', '{"delta":1}')).json.data.value, 11)
      // the username is matched as the public read matches it
      assert.equal((await hit(alice.username.toUpperCase(), 'hits', { delta: 1 })).json.data.value, 12)
      const after = (await get(alice, 'hits')).json.data
      assert.equal(after.version, before.version + 4)
      for (const f of ['tags', 'is_public', 'public_incr', 'created_at', 'expires_at', 'data_type'] as const) assert.deepEqual(after[f], before[f], f)
      // a fractional counter takes the transaction's path
      assert.equal((await store(alice, { key: 'half', value: 0.5, data_type: 'number', public_incr: true })).status, 200)
      assert.equal((await hit(alice.username, 'half')).json.data.value, 1.5)
    })

    it('missing, private, not a number, unmarked, expired and disabled all answer the same 404 and change nothing', async () => {
      const bob = await s.user()
      const setup = [
        { key: 'private', value: 5, data_type: 'number' },
        { key: 'readable', value: 5, data_type: 'number', is_public: true },
        { key: 'words', value: 'five', data_type: 'text', public_incr: true, is_public: true },
        { key: 'doc', value: { n: 5 }, public_incr: true },
        { key: 'brief', value: 5, data_type: 'number', public_incr: true, ttl: 1 },
        { key: 'kept', value: 5, data_type: 'number', public_incr: true },
      ]
      for (const b of setup) assert.equal((await store(bob, b)).status, 200)
      const usage = (await s.get('/svc_api/data/list', { key: bob.key })).json.data.usage
      clock.advance(2000)
      const answers = []
      for (const key of ['nothing', 'private', 'readable', 'words', 'doc', 'brief']) {
        const r = await hit(bob.username, key)
        notFound(r)
        answers.push(r.json)
      }
      notFound(await hit('no-such-user', 'kept'))
      notFound(await hit(alice.username, 'kept'))
      // the same body whatever the reason: a visitor cannot tell a private entry from none
      for (const a of answers) assert.deepEqual(a, answers[0])
      // ... which says what a counter needs: a page whose entry is public but not marked (the
      // usual slip) is told of public_incr, not only that the entry must be public
      assert.match(answers[0].solution, /for a public counter, the entry must be a number marked public_incr/)
      const zh = await s.post(`/svc_api/data/public/${bob.username}/readable/incr`, { headers: { 'accept-language': 'zh' } })
      assert.match(zh.json.solution, /公开计数器须是标记了 public_incr 的 number 条目/)
      for (const b of setup.filter((x) => x.key !== 'brief')) {
        const e = (await get(bob, b.key)).json.data
        assert.deepEqual(e.value, b.value, b.key)
        assert.equal(e.version, 1, `${b.key} was not written`)
      }
      assert.equal((await get(bob, 'nothing')).status, 404, 'nothing is created')
      assert.deepEqual((await s.get('/svc_api/data/list', { key: bob.key })).json.data.usage.keys, usage.keys - 1, 'only the expired entry left')

      assert.equal((await hit(bob.username, 'kept')).json.data.value, 6)
      await s.deps.users.update(bob.username, { disabled: true })
      notFound(await hit(bob.username, 'kept'))
      await s.deps.users.update(bob.username, { disabled: false })
      assert.equal((await get(bob, 'kept')).json.data.value, 6, 'the disabled account was not counted')
    })

    it('delta other than 1 or -1, other fields and bodies that are not objects are 400 / 1106, nothing changed', async () => {
      assert.equal((await store(alice, { key: 'strict', value: 7, data_type: 'number', public_incr: true })).status, 200)
      for (const body of [{ delta: 2 }, { delta: 0 }, { delta: '1' }, { delta: 1.5 }, { delta: null }, { delta: -2 }])
        invalid(await hit(alice.username, 'strict', body), /delta/)
      invalid(await hit(alice.username, 'strict', { by: 5 }), /\bby\b/)
      invalid(await hit(alice.username, 'strict', { delta: 1, key: 'other' }), /\bkey\b/)
      invalid(await hit(alice.username, 'strict', [1]), /object/)
      invalid(await hit(alice.username, 'strict', '5'), /object/)
      const r = await s.post(`/svc_api/data/public/${alice.username}/strict/incr`, {
        body: 'delta=1',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      })
      assert.equal(r.status, 415)
      assert.equal(r.json.error_code, 1112)
      const e = (await get(alice, 'strict')).json.data
      assert.equal(e.value, 7)
      assert.equal(e.version, 1)
    })

    it('answers pages on any origin: a preflight that is not counted, errors with CORS headers', async () => {
      const pre = await s.request('OPTIONS', `/svc_api/data/public/${alice.username}/likes/incr`, {
        headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      })
      assert.equal(pre.status, 204)
      assert.equal(pre.header('access-control-allow-origin'), '*')
      assert.match(pre.header('access-control-allow-methods') ?? '', /\bPOST\b/)
      assert.match(pre.header('access-control-allow-headers') ?? '', /content-type/i)
      assert.equal(pre.header('access-control-allow-credentials'), undefined)
      assert.equal(pre.header('x-ratelimit-limit'), undefined)
      const miss = await hit(alice.username, 'nothing')
      assert.equal(miss.header('access-control-allow-origin'), '*')
      assert.match(miss.header('access-control-expose-headers') ?? '', /Retry-After/)
    })

    it('50 parallel visitors add exactly 50; past the anonymous limit the answer is 429 and nothing is added', async () => {
      // a new minute: the earlier tests' anonymous requests are out of the window
      clock.advance(61_000)
      assert.equal((await store(alice, { key: 'crowd', value: 0, data_type: 'number', public_incr: true })).status, 200)
      const answers = await Promise.all(Array.from({ length: 50 }, () => hit(alice.username, 'crowd')))
      assert.deepEqual(
        answers.map((r) => r.status),
        answers.map(() => 200),
      )
      const values = answers.map((r) => r.json.data.value).sort((a, b) => a - b)
      assert.deepEqual(
        values,
        Array.from({ length: 50 }, (_, i) => i + 1),
        'each visitor got its own value',
      )
      const tags = new Set(answers.map((r) => r.header('etag')))
      assert.equal(tags.size, 50, 'and its own version')
      assert.equal((await get(alice, 'crowd')).json.data.value, 50)
      // the minute's limit is 60: 10 more fit, the next is refused
      for (let i = 0; i < 10; i++) assert.equal((await hit(alice.username, 'crowd')).status, 200)
      const refused = await hit(alice.username, 'crowd')
      assert.equal(refused.status, 429)
      assert.equal(refused.json.error_code, 1204)
      assert.equal(refused.header('access-control-allow-origin'), '*')
      assert.ok(Number(refused.header('retry-after')) >= 1)
      assert.equal((await get(alice, 'crowd')).json.data.value, 60)
    })
  })
}
