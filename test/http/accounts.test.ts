import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { expectError, expectErrorInBoth, rowLabel } from '../support/errors.js'
import { FakeClock } from '../../src/util/clock.js'

for (const engine of ENGINES) {
  describe(`accounts, keys and sessions [${engine}]`, () => {
    let s: TestServer
    const clock = new FakeClock()
    before(async () => {
      s = await startServer({
        engine,
        clock,
        env: {
          RATE_LIMITS: JSON.stringify({
            authenticated: { minute: 10000, hour: 10000, day: 100000, concurrent: 100 },
            default: { minute: 10000, hour: 10000, day: 100000, concurrent: 100 },
          }),
        },
      })
    })
    after(() => s.close())

    it('refuses disabled and expired keys with 1002, a disabled account with 1006, API access off with 1007', async () => {
      const u = await s.user()
      const { key: shortLived } = await s.deps.apiKeys.create(u.id, { name: 'one day', expiresDays: 1 })
      assert.equal((await s.get('/svc_api/me', { key: shortLived })).status, 200)
      clock.advance(86400_000 + 1)
      assert.equal((await s.get('/svc_api/me', { key: shortLived })).json.error_code, 1002)

      const keys = await s.deps.apiKeys.list(u.id)
      const main = keys.find((k) => k.name === 'test')!
      await s.deps.apiKeys.setEnabled(u.id, main.id, false)
      assert.equal((await s.get('/svc_api/me', { key: u.key })).json.error_code, 1002)
      await s.deps.apiKeys.setEnabled(u.id, main.id, true)
      assert.equal((await s.get('/svc_api/me', { key: u.key })).status, 200)

      await s.deps.users.update(u.username, { api_access: false })
      const denied = await s.get('/svc_api/me', { key: u.key })
      assert.equal(denied.status, 403)
      assert.equal(denied.json.error_code, 1007)
      await s.deps.users.update(u.username, { api_access: true, disabled: true })
      const disabled = await s.get('/svc_api/me', { key: u.key })
      assert.equal(disabled.status, 403)
      assert.equal(disabled.json.error_code, 1006)
    })

    it('ends sessions on logout, on disabling the account and on a password change; a disabled account cannot log in', async () => {
      const u = await s.user()
      const c1 = await s.login(u.username, u.password)
      await s.deps.users.update(u.username, { password: 'a-new-password' })
      // the spec's 1002, with a message about the session, not an API key
      const ended = await s.get('/svc_api/me', { cookie: c1, headers: { 'accept-language': 'en' } })
      assert.equal(ended.status, 401)
      assert.equal(ended.json.error_code, 1002)
      assert.match(ended.json.message, /session/i)
      assert.doesNotMatch(ended.json.message, /API key/)
      assert.match(ended.json.solution, /sign in again/i)
      const c2 = await s.login(u.username, 'a-new-password')
      assert.equal((await s.get('/svc_api/me', { cookie: c2 })).status, 200)
      await s.deps.users.update(u.username, { disabled: true })
      assert.equal((await s.get('/svc_api/me', { cookie: c2 })).status, 401)
      const r = await s.post('/login', { form: { username: u.username, password: 'a-new-password' }, headers: { accept: 'application/json' } })
      assert.equal(r.status, 403)
      assert.equal(r.json.error_code, 1006)
      assert.equal(r.header('set-cookie'), undefined)
    })

    it("changes the account's own password from a session: the other sessions end, this one and the API keys stay", async () => {
      const u = await s.user()
      const here = await s.login(u.username, u.password)
      const elsewhere = await s.login(u.username, u.password)
      const change = (json: unknown, cookie = here) => s.post('/svc_api/account/password', { cookie, json })
      const audits = () =>
        s.deps.db.k
          .selectFrom('audit_log')
          .select(['actor', 'action', 'target'])
          .where('action', '=', 'user.password')
          .where('target', '=', u.username)
          .execute()
      // refusals change nothing: the old password still logs in, every session still works
      for (const [body, why, field] of [
        [{ current_password: 'not-the-password', new_password: 'a-new-password' }, /current_password is not/, 'current_password'],
        [{ current_password: u.password, new_password: 'short' }, /new_password must have at least 8 characters/, 'new_password'],
        [{ current_password: u.password, new_password: 'x'.repeat(1025) }, /new_password/, undefined],
        [{ current_password: u.password }, /new_password/, undefined],
      ] as const) {
        const r = await s.post('/svc_api/account/password', { cookie: here, json: body, headers: { 'accept-language': 'en' } })
        expectError(r, 400, 1106)
        assert.match(r.text, why)
        // the service's own checks name the field, for the page to mark it
        assert.equal(r.json.field, field)
      }
      assert.equal((await s.get('/svc_api/me', { cookie: elsewhere })).status, 200)
      assert.deepEqual(await audits(), [])
      // an API key cannot change the password
      expectError(await s.post('/svc_api/account/password', { key: u.key, json: { current_password: u.password, new_password: 'a-new-password' } }), 403, 1009)
      assert.equal((await s.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json' } })).status, 200)

      const ok = await change({ current_password: u.password, new_password: 'a-new-password' })
      assert.equal(ok.status, 200, ok.text)
      assert.equal(ok.json.success, true)
      assert.equal((await s.get('/svc_api/me', { cookie: here })).status, 200, 'the browser that changed it stays signed in')
      assert.equal((await s.get('/svc_api/me', { cookie: elsewhere })).status, 401, 'another session ended')
      assert.equal((await s.get('/svc_api/me', { key: u.key })).status, 200, 'API keys keep working')
      expectError(await s.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json' } }), 401, 1004)
      assert.equal(
        (await s.post('/login', { form: { username: u.username, password: 'a-new-password' }, headers: { accept: 'application/json' } })).status,
        200,
      )
      assert.deepEqual(await audits(), [{ actor: u.username, action: 'user.password', target: u.username }])
    })

    it("guesses of the current password share the login's throttle for the name", async () => {
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      for (let i = 0; i < 10; i++) {
        const r = await s.post('/svc_api/account/password', { cookie, json: { current_password: `wrong-${i}-guess`, new_password: 'a-new-password' } })
        expectError(r, 400, 1106)
      }
      const blocked = await s.post('/svc_api/account/password', { cookie, json: { current_password: u.password, new_password: 'a-new-password' } })
      expectError(blocked, 429, 1005)
      assert.ok(Number(blocked.header('retry-after')) >= 1)
      // the login of that name is throttled too; the password is unchanged
      expectError(await s.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json' } }), 429, 1005)
      clock.advance(15 * 60_000 + 1)
      assert.equal((await s.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json' } })).status, 200)
    })

    it('gives a new session id at every login and never authenticates a made-up one', async () => {
      const u = await s.user()
      const a = await s.login(u.username, u.password)
      const b = await s.login(u.username, u.password)
      assert.notEqual(a, b)
      const fake = `session=${'A'.repeat(43)}`
      assert.equal((await s.get('/svc_api/me', { cookie: fake })).json.error_code, 1002)
      // an API key still gets the key's wording
      const badKey = await s.get('/svc_api/me', { key: `svc_${'A'.repeat(60)}`, headers: { 'accept-language': 'en' } })
      assert.equal(badKey.json.error_code, 1002)
      assert.match(badKey.json.message, /API key/)
    })

    it('answers a username with U+0000 as any unknown one (401 / 1004) on both engines', async () => {
      const u = await s.user()
      for (const username of [`${u.username}\u0000`, '\u0000']) {
        const r = await s.post('/login', { form: { username, password: u.password }, headers: { accept: 'application/json' } })
        expectError(r, 401, 1004)
        assert.equal(r.header('set-cookie'), undefined)
      }
    })

    it('refuses two session cookies in one request (cookie tossing)', async () => {
      const u = await s.user()
      const v = await s.user()
      const a = await s.login(u.username, u.password)
      const b = await s.login(v.username, v.password)
      const r = await s.get('/svc_api/me', { cookie: `${a}; ${b}` })
      assert.equal(r.status, 400)
      assert.equal(r.json.error_code, 1003)
    })

    it('asks for a sign-in (401 / 1001) on a session-only endpoint called without credentials', async () => {
      const en = { 'accept-language': 'en' }
      const keys = await s.get('/svc_api/api-keys', { headers: en })
      expectError(keys, 401, 1001)
      assert.equal(keys.json.message, 'Sign-in required: this endpoint needs a login session')
      assert.match(keys.json.solution, /\/login/)
      assert.match((await s.get('/svc_api/api-keys')).json.message, /登录/)
      // plain format (hosted data): the same message, no code
      const data = await s.get('/api/hosted-data/status', { headers: en })
      expectError(data, 401, 'plain')
      assert.equal(data.json.message, 'Sign-in required: this endpoint needs a login session')
      // an endpoint that also takes keys still names the key
      assert.equal((await s.get('/svc_api/me', { headers: en })).json.message, 'API key missing')
    })

    it('manages API keys over HTTP with a session only, shows a key once, and caps them at 10', async () => {
      const u = await s.user() // holds 1 key
      const cookie = await s.login(u.username, u.password)
      const byKey = await s.get('/svc_api/api-keys', { key: u.key })
      assert.equal(byKey.status, 403)
      assert.equal(byKey.json.error_code, 1009)
      const created = await s.post('/svc_api/api-keys', { cookie, json: { name: 'ci', expires_days: 30 } })
      assert.equal(created.status, 200)
      assert.equal(created.json.data.key.length, 64)
      const list = await s.get('/svc_api/api-keys', { cookie })
      assert.equal(list.json.data.keys.length, 2)
      assert.ok(!list.text.includes(created.json.data.key), 'the key is shown only once')
      assert.ok(list.json.data.keys.every((k: Record<string, unknown>) => !('key_hash' in k) && !('key' in k)))
      for (const days of [0, 366, 1.5]) {
        const bad = await s.post('/svc_api/api-keys', { cookie, json: { name: 'x', expires_days: days } })
        assert.equal(bad.status, 400, `expires_days ${days}`)
      }
      // a misspelt field (a key that would never expire) is refused, naming it
      const typo = await s.post('/svc_api/api-keys', { cookie, json: { name: 'x', expires_in_days: 1 } })
      expectError(typo, 400, 1106)
      assert.equal(typo.json.field, 'expires_in_days')
      assert.match(typo.json.message, /未知字段 "expires_in_days"（可发送 name、expires_days、read_only）/)
      // a name either engine would store differently: NUL, a lone surrogate
      for (const name of ['surr\ud800', '\udc00x', 'a\u0000b']) expectError(await s.post('/svc_api/api-keys', { cookie, json: { name } }), 400, 1106)
      assert.equal((await s.get('/svc_api/api-keys', { cookie })).json.data.keys.length, 2, 'no key created')
      for (let i = 0; i < 8; i++) assert.equal((await s.post('/svc_api/api-keys', { cookie, json: { name: `k${i}` } })).status, 200)
      const eleventh = await s.post('/svc_api/api-keys', { cookie, json: { name: 'too many' } })
      assert.equal(eleventh.status, 400)
      assert.equal(eleventh.json.error_code, 1207)
      const id = created.json.data.id
      assert.equal((await s.post(`/svc_api/api-keys/${id}/disable`, { cookie })).status, 200)
      assert.equal((await s.get('/svc_api/me', { key: created.json.data.key })).json.error_code, 1002)
      assert.equal((await s.post(`/svc_api/api-keys/${id}/enable`, { cookie })).status, 200)
      assert.equal((await s.get('/svc_api/me', { key: created.json.data.key })).status, 200)
      assert.equal((await s.request('DELETE', `/svc_api/api-keys/${id}`, { cookie })).status, 200)
      assert.equal((await s.get('/svc_api/me', { key: created.json.data.key })).json.error_code, 1002)
      const other = await s.user()
      const otherCookie = await s.login(other.username, other.password)
      const list2 = await s.get('/svc_api/api-keys', { cookie })
      const notMine = await s.request('DELETE', `/svc_api/api-keys/${list2.json.data.keys[0].id}`, { cookie: otherCookie })
      assert.equal(notMine.status, 404)
    })

    it("refuses a bad key name in the answer's language, creating nothing", async () => {
      const u = await s.user() // holds 1 key
      const cookie = await s.login(u.username, u.password)
      const create = (name: string) => (headers: Record<string, string>) => s.post('/svc_api/api-keys', { cookie, json: { name }, headers })
      await expectErrorInBoth(create('   '), 400, 1106, '参数错误：name 须为 1-64 个字符', 'Invalid parameter: name must be 1-64 characters')
      await expectErrorInBoth(
        create('surr\ud800'),
        400,
        1106,
        '参数错误：name 不能包含 NUL 字符或孤立的 UTF-16 代理项',
        'Invalid parameter: name must not contain NUL or a lone UTF-16 surrogate',
      )
      assert.equal((await s.get('/svc_api/api-keys', { cookie })).json.data.keys.length, 1, 'no key created')
    })

    it('lets exactly one of 20 concurrent key creations through at 9 keys', async () => {
      const u = await s.user()
      for (let i = 0; i < 8; i++) await s.deps.apiKeys.create(u.id, { name: `k${i}` })
      const results = await Promise.allSettled(Array.from({ length: 20 }, () => s.deps.apiKeys.create(u.id, { name: 'race' })))
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1)
      assert.equal((await s.deps.apiKeys.list(u.id)).length, 10)
    })

    describe('refuses cookie-authenticated writes from another site but not from scripts or the same origin', () => {
      let u: Awaited<ReturnType<TestServer['user']>>
      let cookie: string
      before(async () => {
        u = await s.user()
        cookie = await s.login(u.username, u.password)
      })
      const crossSite: Record<string, string>[] = [
        { origin: 'null' },
        { origin: 'https://evil.test' },
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'same-site' },
      ]
      for (const headers of crossSite) {
        it(`${rowLabel(headers)}: 403 / 1008`, async () => {
          expectError(await s.post('/svc_api/api-keys', { cookie, json: { name: 'x' }, headers }), 403, 1008)
        })
      }
      it('after them all, no key was created', async () => {
        assert.equal((await s.deps.apiKeys.list(u.id)).length, 1)
      })
      it('a script (no Origin, no fetch metadata) and an API key from any origin pass', async () => {
        assert.equal((await s.post('/svc_api/api-keys', { cookie, json: { name: 'cli' } })).status, 200)
        // an API key request is not subject to the cookie rule
        assert.equal((await s.get('/svc_api/me', { key: u.key, headers: { origin: 'https://evil.test' } })).status, 200)
      })
    })

    it('refuses a login posted from another origin (login CSRF)', async () => {
      const u = await s.user()
      for (const headers of [{ origin: 'null' }, { 'sec-fetch-site': 'cross-site' }] as Record<string, string>[]) {
        const r = await s.post('/login', { form: { username: u.username, password: u.password }, headers: { ...headers, accept: 'application/json' } })
        assert.equal(r.status, 403)
        assert.equal(r.header('set-cookie'), undefined)
      }
    })

    it('throttles failed logins per username without affecting other users', async () => {
      const u = await s.user()
      const v = await s.user()
      for (let i = 0; i < 10; i++) {
        const r = await s.post('/login', {
          form: { username: u.username, password: 'wrong-wrong' },
          headers: { accept: 'application/json', 'x-forwarded-for': `10.0.0.${i}` },
        })
        assert.equal(r.status, 401)
      }
      const blocked = await s.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json' } })
      assert.equal(blocked.status, 429)
      assert.equal(blocked.json.error_code, 1005)
      assert.ok(Number(blocked.header('retry-after')) >= 1)
      assert.equal((await s.post('/login', { form: { username: v.username, password: v.password }, headers: { accept: 'application/json' } })).status, 200)
      clock.advance(15 * 60_000 + 1)
      assert.equal((await s.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json' } })).status, 200)
    })

    it('counts failed logins that run at once: a burst gets no more guesses than the limit', async () => {
      const u = await s.user()
      // 30 wrong passwords for one account sent together (from different addresses): each
      // attempt checked the throttle before any failure was recorded, so all 30 were verified
      const burst = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          s.post('/login', {
            form: { username: u.username, password: `wrong-${i}-wrong` },
            headers: { accept: 'application/json', 'x-forwarded-for': `10.1.0.${i}` },
          }),
        ),
      )
      const verified = burst.filter((r) => r.status === 401).length
      const throttled = burst.filter((r) => r.status === 429)
      assert.equal(verified, 10)
      assert.equal(throttled.length, 20)
      for (const r of throttled) {
        assert.equal(r.json.error_code, 1005)
        assert.ok(Number(r.header('retry-after')) >= 1)
      }
      clock.advance(15 * 60_000 + 1)
      assert.equal((await s.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json' } })).status, 200)
    })

    it('answers in English when Accept-Language prefers it, Chinese otherwise', async () => {
      const en = await s.get('/svc_api/me', { headers: { 'accept-language': 'en-US,en;q=0.9,zh;q=0.5' } })
      assert.equal(en.json.message, 'API key missing')
      const zh = await s.get('/svc_api/me', { headers: { 'accept-language': 'zh-CN,zh;q=0.9,en;q=0.5' } })
      assert.equal(zh.json.message, '缺少 API 密钥')
      const none = await s.get('/svc_api/me')
      assert.equal(none.json.message, '缺少 API 密钥')
      for (const f of ['success', 'error_code', 'error_type', 'message', 'solution', 'doc_link']) assert.ok(f in en.json, f)
    })

    it('redeems a one-time code for an entitlement', async () => {
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      const { sha256hex } = await import('../../src/auth/tokens.js')
      await s.deps.db.k
        .insertInto('redeem_codes')
        .values({ code_hash: sha256hex('IMG-test-code-123'), feature: 'image-host', created_at: clock.now(), redeemed_by: null, redeemed_at: null })
        .execute()
      const byKey = await s.post('/api/redeem', { key: u.key, json: { code: 'IMG-test-code-123' } })
      assert.equal(byKey.status, 403)
      assert.deepEqual(Object.keys(byKey.json).sort(), ['message', 'success'])
      const ok = await s.post('/api/redeem', { cookie, json: { code: 'IMG-test-code-123' } })
      assert.equal(ok.status, 200)
      assert.equal(ok.json.feature, 'image-host')
      assert.equal(ok.json.message, '已开通图片托管')
      await expectErrorInBoth(
        (headers) => s.post('/api/redeem', { cookie, json: { code: 'IMG-test-code-123' }, headers }),
        400,
        'plain',
        '参数错误：兑换码不存在或已被使用',
        'Invalid parameter: unknown or already used code',
        true,
      )
      // the feature a code turns on, named in the language asked
      await s.deps.db.k
        .insertInto('redeem_codes')
        .values({ code_hash: sha256hex('DATA-test-code-123'), feature: 'hosted-data', created_at: clock.now(), redeemed_by: null, redeemed_at: null })
        .execute()
      const en = await s.post('/api/redeem', { cookie, json: { code: 'DATA-test-code-123' }, headers: { 'accept-language': 'en' } })
      assert.equal(en.status, 200, en.text)
      assert.deepEqual(en.json, { success: true, message: 'Hosted data enabled', feature: 'hosted-data' })
    })

    it('serves /healthz and an OpenAPI 3.1 document', async () => {
      assert.equal((await s.get('/healthz')).json.status, 'ok')
      const doc = await s.get('/openapi.json')
      assert.equal(doc.json.openapi, '3.1.0')
      assert.ok(doc.json.paths['/svc_api/api-keys'])
      assert.ok(doc.json.paths['/api/redeem'])
    })
  })
}
