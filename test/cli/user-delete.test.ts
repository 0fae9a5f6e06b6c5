import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { runCli } from './run.js'

// `svc user delete` (bin/svc, as an operator runs it beside a running server): refused without
// --force, then the account and what it holds go, the name stays held, the audit log says so.
for (const engine of ENGINES) {
  describe(`svc user delete [${engine}]`, () => {
    let s: TestServer
    const cliEnv = () => ({ DATA_DIR: s.dataDir, DATABASE_URL: s.env.DATABASE_URL, STORAGE_URL: undefined })
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    })
    after(async () => {
      await s?.close()
    })

    it('asks for --force, deletes the account with what it holds, holds the name and is audited', async () => {
      const u = await s.user()
      assert.equal((await uploadFile(s, { key: u.key }, 'a.html', '<p>a</p>')).status, 200)
      assert.equal((await s.post('/svc_api/data/store', { key: u.key, json: { key: 'k', value: 'v' } })).status, 200)

      const unsure = await runCli(['user', 'delete', u.username], { env: cliEnv() })
      assert.equal(unsure.code, 2, unsure.stderr)
      assert.match(unsure.stderr, /add --force to do it/)
      assert.ok(await s.deps.users.byName(u.username), 'nothing deleted without --force')

      const r = await runCli(['user', 'delete', u.username, '--force'], { env: cliEnv() })
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`^deleted user ${u.username} \\(files 1, file_bytes 8, kv_keys 1\\); the name stays held`, 'm'))
      assert.equal(await s.deps.users.byName(u.username), undefined)
      assert.equal((await s.get('/svc_api/me', { key: u.key })).status, 401)
      assert.equal((await s.get(`/${u.username}/a.html`)).status, 404)
      const k = s.deps.db.k
      assert.equal((await k.selectFrom('files').select('id').where('user_id', '=', u.id).execute()).length, 0)
      assert.equal((await k.selectFrom('kv_entries').select('key').where('user_id', '=', u.id).execute()).length, 0)

      const audit = await k.selectFrom('audit_log').select(['action', 'target', 'via']).where('action', '=', 'cli.user.delete').execute()
      assert.deepEqual(audit, [{ action: 'cli.user.delete', target: u.username, via: 'cli' }])

      // the name is held: svc user add refuses it; a second delete finds no such user
      const again = await runCli(['user', 'add', u.username, '--password', 'a-long-password'], { env: cliEnv() })
      assert.equal(again.code, 1, again.stdout)
      assert.match(again.stderr, /already exists/)
      const twice = await runCli(['user', 'delete', u.username, '--force'], { env: cliEnv() })
      assert.equal(twice.code, 1)
      assert.match(twice.stderr, new RegExp(`no user "${u.username}"`))
    })

    it("svc user release gives a deleted name back to new accounts, never its forms' slugs (decision 267)", async () => {
      const u = await s.user()
      const slug = `rel-${u.username}`
      assert.equal((await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Contact', form_slug: slug } })).status, 200)
      assert.equal((await runCli(['user', 'delete', u.username, '--force'], { env: cliEnv() })).code, 0)
      // a name that is not held, or is a live account's: nothing to release
      const live = await s.user()
      for (const name of [live.username, `never-${u.username}`]) {
        const no = await runCli(['user', 'release', name], { env: cliEnv() })
        assert.equal(no.code, 1, no.stdout)
        assert.match(no.stderr, /is not held/)
      }
      const r = await runCli(['user', 'release', u.username.toUpperCase()], { env: cliEnv() })
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`^released the name ${u.username}: a new account may take it`, 'm'))
      const audit = await s.deps.db.k.selectFrom('audit_log').select(['action', 'target']).where('action', '=', 'cli.user.release').execute()
      assert.deepEqual(audit, [{ action: 'cli.user.release', target: u.username.toUpperCase() }])
      // a new account takes the name; the old form's slug stays held from it
      const added = await runCli(['user', 'add', u.username, '--password', 'a-long-password'], { env: cliEnv() })
      assert.equal(added.code, 0, added.stderr)
      const cookie = await s.login(u.username, 'a-long-password')
      const made = await s.post('/svc_api/forms/create', {
        cookie,
        headers: { 'x-csrf-token': await s.csrfToken(cookie) },
        json: { form_name: 'Mine', form_slug: slug },
      })
      assert.equal(made.status, 400, made.text)
      assert.equal(made.json.error_code, 1610)
    })
  })
}
