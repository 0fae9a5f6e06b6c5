import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type Res, type TestServer } from '../support/server.js'
import { HTML, uploadFile } from '../support/hosting.js'
import { expectError } from '../support/errors.js'
import { registry } from '../../src/observability/registry.js'
import { FakeClock } from '../../src/util/clock.js'

/**
 * Every per-address limit counts an IPv6 client by its /64 (the smallest network an ISP hands
 * out: its addresses cost the client nothing to change) and an IPv4 client by its address.
 * Each row reaches its limit from two addresses of one /64, is then refused from both, and
 * still counts an address of the next /64 apart.
 */

const fastPathAnswers = async (): Promise<number> => {
  let n = 0
  for (const m of (await registry.getSingleMetric('svc_http_requests_total')?.get())?.values ?? []) if (m.labels.route === '(fast path)') n += m.value
  return n
}

type Outcome = 'counted' | 'refused'

interface Row {
  name: string
  /** The row's own /64 (four groups), so rows never share a counter. */
  net: string
  limit: number
  attempt(ip: string, i: number): Promise<Outcome>
}

for (const engine of ENGINES) {
  describe(`per-address limits count an IPv6 client by its /64 [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    const clock = new FakeClock(Date.UTC(2026, 0, 15, 4, 0, 0))
    const via = (ip: string) => ({ 'x-forwarded-proto': 'https', 'x-forwarded-for': ip })
    const setup = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '192.0.2.1' }
    const basic = (pw: string) => `Basic ${Buffer.from(`visitor:${pw}`).toString('base64')}`
    let registerToken = ''

    before(async () => {
      s = await startServer({ engine, clock, env: { TRUST_PROXY: '1' } })
      alice = await s.user()
      const kv = await s.post('/svc_api/data/store', { key: alice.key, json: { key: 'score', value: 7, data_type: 'number', is_public: true }, headers: setup })
      assert.equal(kv.status, 200, kv.text)
      const up = await uploadFile(s, { key: alice.key }, 'door.html', HTML('door'), {}, setup)
      assert.equal(up.status, 200, up.text)
      const pw = await s.request('PUT', '/api/access/door.html', { key: alice.key, json: { password: 'open-sesame' }, headers: setup })
      assert.equal(pw.status, 200, pw.text)
      registerToken = /name="_csrf" value="([^"]*)"/.exec((await s.get('/register', { headers: setup })).text)?.[1] ?? ''
      assert.ok(registerToken)
      // the first read fills the cache: the next ones are answered before routing
      assert.equal((await s.get(`/svc_api/data/public/${alice.username}/score`, { headers: setup })).status, 200)
    })
    after(() => s?.close())

    const rows: Row[] = [
      {
        name: 'API requests (the guard)',
        net: '2001:db8:a:1',
        limit: 10,
        async attempt(ip) {
          const r = await s.get('/svc_api/me', { headers: via(ip) })
          if (r.status === 401) return 'counted'
          expectError(r, 429, 1204)
          return 'refused'
        },
      },
      {
        name: 'API requests (the KV public read answered before routing, same counter as the guard)',
        net: '2001:db8:a:2',
        limit: 10,
        async attempt(ip) {
          const before = await fastPathAnswers()
          const r = await s.get(`/svc_api/data/public/${alice.username}/score`, { headers: via(ip) })
          if (r.status === 200) {
            assert.equal(await fastPathAnswers(), before + 1, 'answered by the fast path')
            return 'counted'
          }
          expectError(r, 429, 1204)
          // the guard counts the same /64 by the same key
          expectError(await s.get('/svc_api/me', { headers: via(ip) }), 429, 1204)
          return 'refused'
        },
      },
      {
        name: 'login failures',
        net: '2001:db8:a:3',
        limit: 50,
        async attempt(ip, i) {
          // a new name each time: the per-name limit (10) never applies
          const r = await s.post('/login', {
            form: { username: `nobody${i}`, password: 'wrong-password' },
            headers: { ...via(ip), accept: 'application/json' },
          })
          if (r.status === 401) return 'counted'
          expectError(r, 429, 1005)
          return 'refused'
        },
      },
      {
        name: 'sign-ups',
        net: '2001:db8:a:4',
        limit: 20,
        async attempt(ip, i) {
          const username = `net${i}x${ip.split(':')[3]}${ip.length}`
          const form = { _csrf: registerToken, username, password: 'a long password', password2: 'a long password' }
          const r = await s.post('/register', { form, headers: { ...via(ip), 'accept-language': 'en' } })
          if (r.header('location') === '/dashboard') {
            assert.ok(await s.deps.users.byName(username))
            return 'counted'
          }
          assert.match(r.header('location') ?? '', /^\/register\?error=throttled&/)
          assert.equal(await s.deps.users.byName(username), undefined)
          return 'refused'
        },
      },
      {
        name: 'wrong visitor passwords',
        net: '2001:db8:a:5',
        limit: 10,
        async attempt(ip, i) {
          const r: Res = await s.get(`/${alice.username}/door.html`, { headers: { ...via(ip), authorization: basic(`guess-${i}`) } })
          if (r.status === 401) return 'counted'
          assert.equal(r.status, 429, r.text.slice(0, 200))
          assert.ok(Number(r.header('retry-after')) > 0)
          return 'refused'
        },
      },
    ]

    for (const row of rows) {
      it(row.name, async () => {
        const a = `${row.net}::1`
        const b = `${row.net}:ffff:ffff:ffff:fffe`
        for (let i = 0; i < row.limit; i++) assert.equal(await row.attempt(i % 2 ? b : a, i), 'counted', `attempt ${i + 1} of ${row.limit}`)
        assert.equal(await row.attempt(a, row.limit), 'refused', 'the /64 has used its limit')
        assert.equal(await row.attempt(b, row.limit + 1), 'refused', 'whichever address of it asks')
        const next = row.net.replace(/:(\w+)$/, (_, g: string) => `:${(parseInt(g, 16) + 0x100).toString(16)}`)
        assert.equal(await row.attempt(`${next}::1`, row.limit + 2), 'counted', 'another /64 is counted apart')
      })
    }
  })
}
