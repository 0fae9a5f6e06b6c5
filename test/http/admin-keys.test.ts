import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { ENGINES, startServer, type TestServer, startSecond } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { expectError } from '../support/errors.js'
import { runCli } from '../cli/run.js'

const sha = (s: string) => crypto.createHash('sha256').update(s).digest('hex')
type User = Awaited<ReturnType<TestServer['user']>> & { cookie: string }

// An admin lists one account's API keys and revokes one (GET / DELETE
// /svc_api/admin/users/:username/keys...). Two instances share the database (on SQLite, one
// file): the key is used on both before the revoke, so each keeps its row (decision 184), and
// the very next request on either is refused.
for (const engine of ENGINES) {
  describe(`the admin API lists and revokes an account's API keys [${engine}]`, () => {
    let a: TestServer
    let b: TestServer
    let admin: User
    let alice: User
    let bob: User
    /** alice's second key, the one that leaks. */
    let leaked: { id: string; key: string; name: string }
    const adminCall = (method: string, p: string) => a.request(method, p, { cookie: admin.cookie })
    const auditOf = async (action: string) =>
      ((await adminCall('GET', `/svc_api/admin/audit?limit=500&action=${action}`)).json.data.entries as Array<Record<string, any>>).reverse()
    /** The key answers `status` to GET /svc_api/me on both instances, three times each. */
    const expectKey = async (key: string, status: number, why: string) => {
      for (const s of [a, b]) for (let i = 0; i < 3; i++) assert.equal((await s.get('/svc_api/me', { key })).status, status, `${s.url}: ${why}`)
    }

    before(async () => {
      a = await startServer({ engine, keepData: true, env: { RATE_LIMITS: HIGH_LIMITS } })
      b = await startSecond(a)
      const mk = async (o: { admin?: boolean } = {}) => {
        const u = await a.user(o)
        return { ...u, cookie: await a.login(u.username, u.password) }
      }
      admin = await mk({ admin: true })
      alice = await mk()
      bob = await mk()
      const made = await a.post('/svc_api/api-keys', { cookie: alice.cookie, json: { name: 'in a published page', read_only: false } })
      assert.equal(made.status, 200, made.text)
      leaked = { id: made.json.data.id, key: made.json.data.key, name: made.json.data.name }
    })
    after(async () => {
      // b was given a's data dir and schema: its close removes them, after a's connections end
      await a?.close()
      await b?.close()
    })

    it('says which quotas a change sets below what the account holds, removing nothing', async () => {
      for (const k of ['a', 'b', 'c']) assert.equal((await a.post('/svc_api/data/store', { key: bob.key, json: { key: k, value: 1 } })).status, 200)
      const set = (limits: Record<string, number | null>) =>
        a.request('POST', `/svc_api/admin/users/${bob.username}`, { cookie: admin.cookie, json: { limits } })
      const below = await set({ kv_keys: 1, forms: 0 })
      assert.equal(below.status, 200, below.text)
      // forms are not counted by the accounts list: only what it counts is named
      assert.deepEqual(below.json.data.over, [{ quota: 'kv_keys', used: 3, limit: 1 }])
      assert.equal((await a.get('/svc_api/data/get?key=c', { key: bob.key })).status, 200, 'nothing is removed')
      expectError(await a.post('/svc_api/data/store', { key: bob.key, json: { key: 'd', value: 1 } }), 400, 1605)
      const back = await set({ kv_keys: null, forms: null })
      assert.deepEqual(back.json.data.over, [])
      // a change of no quota says nothing of them
      const vip = await a.request('POST', `/svc_api/admin/users/${bob.username}`, { cookie: admin.cookie, json: { tier: 'vip' } })
      assert.deepEqual(vip.json.data.over, [])
      await a.request('POST', `/svc_api/admin/users/${bob.username}`, { cookie: admin.cookie, json: { tier: 'default' } })
    })

    it('takes a quota up to 2^53 - 1, as svc user set --limit does, and refuses more changing nothing', async () => {
      const set = (limits: Record<string, number | null>) =>
        a.request('POST', `/svc_api/admin/users/${bob.username}`, { cookie: admin.cookie, json: { limits } })
      const max = await set({ site_bytes: Number.MAX_SAFE_INTEGER })
      assert.equal(max.status, 200, max.text)
      assert.equal(max.json.data.limits.site_bytes, Number.MAX_SAFE_INTEGER)
      // 2^53 (JSON has no exact 2^53 + 1): the schema's maximum, named in the message
      const over = await a.request('POST', `/svc_api/admin/users/${bob.username}`, {
        cookie: admin.cookie,
        json: { limits: { site_bytes: 2 ** 53 } },
        headers: { 'accept-language': 'en' },
      })
      expectError(over, 400, 1106)
      assert.match(over.json.message, /limits\.site_bytes .*must be at most 9007199254740991/)
      const row = await a.deps.db.k.selectFrom('users').select('limits').where('username', '=', bob.username).executeTakeFirstOrThrow()
      assert.equal(JSON.parse(row.limits).site_bytes, Number.MAX_SAFE_INTEGER, 'unchanged')
      assert.equal((await set({ site_bytes: null })).status, 200)
    })

    it("lists an account's keys with exactly the fields of its owner's list, never a key or its hash", async () => {
      const r = await adminCall('GET', `/svc_api/admin/users/${alice.username}/keys`)
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.data.username, alice.username)
      const own = await a.get('/svc_api/api-keys', { cookie: alice.cookie })
      assert.equal(own.status, 200, own.text)
      assert.deepEqual(r.json.data.keys, own.json.data.keys)
      assert.equal(r.json.data.keys.length, 2)
      for (const k of r.json.data.keys) {
        assert.deepEqual(Object.keys(k).sort(), ['created_at', 'enabled', 'expires_at', 'hint', 'id', 'last_used_at', 'name', 'read_only'])
      }
      for (const secret of [alice.key, leaked.key]) {
        assert.ok(!r.text.includes(secret), 'no key in the answer')
        assert.ok(!r.text.includes(secret.slice(4, 40)), 'no part of a key beyond its hint')
        assert.ok(!r.text.includes(sha(secret)), 'no key hash in the answer')
      }
      const mine = r.json.data.keys.find((k: { id: string }) => k.id === leaked.id)
      assert.equal(mine.name, leaked.name)
      assert.equal(mine.hint, leaked.key.slice(-4))
      assert.equal(mine.enabled, true)
      assert.equal(mine.read_only, false)
      // an unknown account: the neighbours' 404
      expectError(await adminCall('GET', '/svc_api/admin/users/nobody-here/keys'), 404, 1708)
    })

    it('refuses a non-admin (403 / 1011) and no session (401), changing nothing', async () => {
      const before = (await auditOf('key.revoke')).length
      for (const [method, p] of [
        ['GET', `/svc_api/admin/users/${alice.username}/keys`],
        ['DELETE', `/svc_api/admin/users/${alice.username}/keys/${leaked.id}`],
        ['DELETE', `/svc_api/admin/users/${bob.username}/keys/${leaked.id}`],
      ]) {
        // the account's owner included: revoking is an admin's act, the owner has DELETE /svc_api/api-keys/:id
        for (const u of [alice, bob]) expectError(await a.request(method, p, { cookie: u.cookie }), 403, 1011)
        assert.equal((await a.request(method, p)).status, 401, `${method} ${p}`)
      }
      await expectKey(leaked.key, 200, 'still live')
      assert.equal((await auditOf('key.revoke')).length, before)
    })

    it('a key id of another account is not found (404), and nothing changes', async () => {
      const before = (await auditOf('key.revoke')).length
      expectError(await adminCall('DELETE', `/svc_api/admin/users/${bob.username}/keys/${leaked.id}`), 404, 1405)
      expectError(await adminCall('DELETE', `/svc_api/admin/users/nobody-here/keys/${leaked.id}`), 404, 1708)
      await expectKey(leaked.key, 200, "another account's revoke leaves it live")
      const list = await adminCall('GET', `/svc_api/admin/users/${alice.username}/keys`)
      assert.equal(list.json.data.keys.length, 2)
      assert.equal((await auditOf('key.revoke')).length, before)
    })

    it('revokes one key: refused from its very next request on every instance; the other key works; audited', async () => {
      // used on both instances first, so each keeps the key's row between requests
      await expectKey(leaked.key, 200, 'live before the revoke')
      await expectKey(alice.key, 200, 'live before the revoke')
      const r = await a.request('DELETE', `/svc_api/admin/users/${alice.username}/keys/${leaked.id}`, {
        cookie: admin.cookie,
        headers: { 'user-agent': 'admin-keys-test' },
      })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.json.data, { id: leaked.id, name: leaked.name })
      for (const s of [a, b]) expectError(await s.get('/svc_api/me', { key: leaked.key }), 401, 1002)
      await expectKey(leaked.key, 401, 'revoked')
      await expectKey(alice.key, 200, "the account's other key still works")
      assert.equal((await a.get('/svc_api/me', { cookie: alice.cookie })).status, 200, 'and her session')
      // deleted, as the owner's delete does: gone from both lists, no way to enable it again
      const own = await a.get('/svc_api/api-keys', { cookie: alice.cookie })
      assert.deepEqual(
        own.json.data.keys.map((k: { id: string }) => k.id),
        (await adminCall('GET', `/svc_api/admin/users/${alice.username}/keys`)).json.data.keys.map((k: { id: string }) => k.id),
      )
      assert.ok(!own.json.data.keys.some((k: { id: string }) => k.id === leaked.id))
      expectError(await a.post(`/svc_api/api-keys/${leaked.id}/enable`, { cookie: alice.cookie }), 404, 1405)
      // the audit log: who, what, whose, which key
      const log = await auditOf('key.revoke')
      assert.equal(log.length, 1)
      assert.equal(log[0].actor, admin.username)
      assert.equal(log[0].via, 'web')
      assert.equal(log[0].target, alice.username)
      assert.equal(log[0].user_agent, 'admin-keys-test')
      assert.deepEqual(log[0].details, { key_id: leaked.id, name: leaked.name })
      // a second revoke of the same key finds nothing, and logs nothing
      expectError(await adminCall('DELETE', `/svc_api/admin/users/${alice.username}/keys/${leaked.id}`), 404, 1405)
      assert.equal((await auditOf('key.revoke')).length, 1)
    })

    it('the operator lists and revokes a key with svc key, on the running instances', async () => {
      const cli = (args: string[]) =>
        runCli(['key', ...args], { env: { DATA_DIR: a.dataDir, ...(a.env.DATABASE_URL ? { DATABASE_URL: a.env.DATABASE_URL } : {}) } })
      const made = await a.post('/svc_api/api-keys', { cookie: bob.cookie, json: { name: 'deploy bot' } })
      assert.equal(made.status, 200, made.text)
      await expectKey(made.json.data.key, 200, 'live before the revoke')
      // one line per key with its id, name and last characters; never a key itself
      const listed = await cli(['list', bob.username])
      assert.equal(listed.code, 0, listed.stderr)
      const [head, ...rows] = listed.stdout.trimEnd().split('\n')
      assert.match(head, /^ID +NAME +KEY +CREATED +LAST USED +EXPIRES +ACCESS +STATE$/)
      const row = rows.find((l) => l.includes('deploy bot'))!
      assert.ok(row.startsWith(`${made.json.data.id} `), row)
      assert.match(row, new RegExp(`svc_…${made.json.data.key.slice(-4)} .* never +full +enabled$`))
      assert.equal(rows.length, (await a.get('/svc_api/api-keys', { cookie: bob.cookie })).json.data.keys.length)
      for (const secret of [bob.key, made.json.data.key]) assert.ok(!listed.stdout.includes(secret))
      // revoked: refused from its next request on both instances, the other key still works
      const revoked = await cli(['revoke', bob.username, made.json.data.id])
      assert.equal(revoked.code, 0, revoked.stderr)
      assert.equal(revoked.stdout, `revoked key ${made.json.data.id} of ${bob.username}\n`)
      await expectKey(made.json.data.key, 401, 'revoked by the operator')
      await expectKey(bob.key, 200, 'the other key')
      const again = await cli(['revoke', bob.username, made.json.data.id])
      assert.equal(again.code, 1)
      assert.match(again.stderr, /^error: user "[^"]+" has no key with the id .* \(svc key list \S+ shows them\)\n$/)
      // the revoke is in the audit log, the list is not
      const mine = async (action: string) => (await auditOf(action)).filter((e) => e.target === bob.username).map((e) => [e.action, e.via])
      assert.deepEqual(await mine('cli.key.revoke'), [['cli.key.revoke', 'cli']])
      assert.deepEqual(await mine('cli.key.list'), [])
    })
  })
}
