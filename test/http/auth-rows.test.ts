import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { expectError } from '../support/errors.js'
import { svc } from '../support/images.js'

// The caller's key or session row may be kept between requests (SQLite: src/auth/principal.ts,
// db.changeStamp). Every test first uses the key or session several times, so a kept row
// exists, then changes the row in one way, and expects the very next request to see it.
for (const engine of ENGINES) {
  describe(`a key or session row changed after use answers at the next request [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine })
    })
    after(() => s.close())

    const warm = async (auth: { key?: string; cookie?: string }) => {
      for (let i = 0; i < 3; i++) assert.equal((await s.get('/svc_api/me', auth)).status, 200)
    }

    it('the owner disables, enables and deletes the key in the dashboard', async () => {
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      const made = await s.post('/svc_api/api-keys', { cookie, json: { name: 'kept' } })
      const { id, key } = made.json.data
      await warm({ key })
      assert.equal((await s.post(`/svc_api/api-keys/${id}/disable`, { cookie })).status, 200)
      expectError(await s.get('/svc_api/me', { key }), 401, 1002)
      assert.equal((await s.post(`/svc_api/api-keys/${id}/enable`, { cookie })).status, 200)
      await warm({ key })
      assert.equal((await s.request('DELETE', `/svc_api/api-keys/${id}`, { cookie })).status, 200)
      expectError(await s.get('/svc_api/me', { key }), 401, 1002)
    })

    it('an operator command (its own database connection) disables the account, turns API access off and on', async () => {
      const u = await s.user()
      await warm({ key: u.key })
      await svc(s, 'user', 'set', u.username, '--disable')
      expectError(await s.get('/svc_api/me', { key: u.key }), 403, 1006)
      await svc(s, 'user', 'set', u.username, '--enable')
      await warm({ key: u.key })
      await svc(s, 'user', 'set', u.username, '--api-access', 'off')
      expectError(await s.get('/svc_api/me', { key: u.key }), 403, 1007)
      await svc(s, 'user', 'set', u.username, '--api-access', 'on')
      assert.equal((await s.get('/svc_api/me', { key: u.key })).status, 200)
    })

    it('a tier change shows in the next answer', async () => {
      const u = await s.user()
      await warm({ key: u.key })
      const before = (await s.get('/svc_api/me', { key: u.key })).json.data
      await svc(s, 'user', 'set', u.username, before.tier === 'vip' ? '--no-vip' : '--vip')
      const after = (await s.get('/svc_api/me', { key: u.key })).json.data
      assert.notEqual(after.tier, before.tier)
    })

    it('logout ends the session at the next request', async () => {
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      await warm({ cookie })
      // a script's post (no browser's Origin or Sec-Fetch headers) needs no CSRF token
      const out = await s.post('/logout', { cookie, headers: { accept: 'application/json' } })
      assert.ok(out.status < 400, `logout: ${out.status} ${out.text}`)
      expectError(await s.get('/svc_api/me', { cookie }), 401, 1002)
    })

    if (engine === 'sqlite')
      it("another process's commit to svc.db (no statement of the server's) answers at the next request", async () => {
        const u = await s.user()
        await warm({ key: u.key })
        const other = new SQLite(path.join(s.dataDir, 'svc.db'))
        try {
          other.pragma('busy_timeout = 5000')
          const r = other.prepare('update api_keys set expires_at = 1 where user_id = (select id from users where username = ?)').run(u.username)
          assert.equal(r.changes, 1)
          expectError(await s.get('/svc_api/me', { key: u.key }), 401, 1002)
          other.prepare('update api_keys set expires_at = null where user_id = (select id from users where username = ?)').run(u.username)
          assert.equal((await s.get('/svc_api/me', { key: u.key })).status, 200)
        } finally {
          other.close()
        }
      })
  })
}
