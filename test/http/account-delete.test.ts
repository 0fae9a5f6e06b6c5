import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { PassThrough } from 'node:stream'
import { sql } from 'kysely'
import { request } from 'undici'
import { ENGINES, REDIS_URL, insecureAgent, needs, startServer, type TestServer, startSecond } from '../support/server.js'
import { HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { blobDigests, imageForm, makeImage, svc } from '../support/images.js'
import { startDns, verifiedDomain, type TestDns } from '../support/dns.js'
import { deploySite, manifestOf, sha, tarOf } from '../support/deploys.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'
import { sweepBlobs } from '../../src/storage/sweeper.js'
import { expectError } from '../support/errors.js'

const ASK = '/.well-known/svc/tls-allowed?domain='
/** Bytes two accounts both publish: one blob, content-addressed. */
const SHARED = '<!doctype html><p>the same bytes in two accounts</p>'

/**
 * Rows per table, for every table the database has (read from its catalog, so a table a later
 * migration adds is counted too), but the migrator's own.
 */
async function tableCounts(s: TestServer): Promise<Map<string, number>> {
  const k = s.deps.db.k
  const names =
    s.engine === 'sqlite'
      ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(k)).rows.map((r) => r.name)
      : (
          await sql<{
            name: string
          }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(k)
        ).rows.map((r) => r.name)
  const out = new Map<string, number>()
  for (const t of names.filter((n) => !n.startsWith('kysely_')).sort()) {
    const r = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(t)}`.execute(k)
    out.set(t, Number(r.rows[0].n))
  }
  return out
}

/** Everything an account can hold, made through the API: pages, a project with a domain, KV, a form and a submission, an image, hosted data. */
async function fillAccount(s: TestServer, dns: TestDns | null, domain: string) {
  const u = await s.user()
  const cookie = await s.login(u.username, u.password)
  await svc(s, 'grant', u.username, 'image-host')
  await svc(s, 'grant', u.username, 'hosted-data')
  const form = imageForm([{ name: 'a.png', data: await makeImage('png', { width: 8, height: 8, color: '#654321' }) }])
  const img = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
  assert.equal(img.status, 200, img.text)
  const data = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'd.txt', content: `data of ${u.username}`, content_type: 'text/plain' } })
  assert.equal(data.status, 200, data.text)
  const kv = await s.post('/svc_api/data/store', { key: u.key, json: { key: 'k', value: 'v', is_public: true } })
  assert.equal(kv.status, 200, kv.text)
  assert.equal((await uploadFile(s, { key: u.key }, 'shared.html', SHARED)).status, 200)
  assert.equal((await uploadFile(s, { key: u.key }, 'own.html', `<p>only ${u.username}</p>`)).status, 200)
  const { res } = await deploySite(s, u.key, 'site', { 'index.html': `<p>site of ${u.username}</p>` })
  assert.equal(res.status, 201, res.text)
  if (dns) await verifiedDomain(s, dns, u.key, domain, 'site')
  const f = await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Contact', form_slug: `del-${crypto.randomBytes(4).toString('hex')}` } })
  assert.equal(f.status, 200, f.text)
  const sub = await s.post(`/api/forms/submit/${f.json.data.form_slug}`, { json: { message: 'hello' } })
  assert.ok(sub.status < 400, sub.text)
  const links = [
    `/svc-img/pub/${img.json.images[0].public_token}`,
    `/svc-data/pub/${data.json.file.public_token}`,
    `/svc_api/data/public/${u.username}/k`,
    `/${u.username}/own.html`,
    `/${u.username}/shared.html`,
    `/${u.username}/site/`,
  ]
  return { ...u, cookie, links, formSlug: f.json.data.form_slug as string }
}

/** Every link answers `status` (asked twice: the second answer comes from the caches when they hold them). */
async function expectAll(s: TestServer, links: string[], status: number, why: string) {
  for (let i = 0; i < 2; i++) for (const p of links) assert.equal((await s.get(p)).status, status, `${p}: ${why}`)
}

for (const engine of ENGINES) {
  describe(`deleting an account [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let adminCookie: string
    let adminName: string

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr } })
      const a = await s.user({ admin: true })
      adminName = a.username
      adminCookie = await s.login(a.username, a.password)
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it('by an admin: no row of it is left in any table, its sessions, keys, links and domain go at once, shared bytes stay', async () => {
      // another account publishes the same bytes first: its blob must outlive the delete and a sweep
      const bob = await s.user()
      assert.equal((await uploadFile(s, { key: bob.key }, 'shared.html', SHARED)).status, 200)
      const before = await tableCounts(s)
      const u = await fillAccount(s, dns, 'www.delete-me.test')
      // an admin account (deleted by another admin) with an invitation it made
      await svc(s, 'user', 'set', u.username, '--admin')
      assert.equal((await s.post('/svc_api/admin/invites', { cookie: u.cookie, json: {} })).status, 200)
      const filled = await tableCounts(s)
      const grew = [...filled].filter(([t, n]) => n > (before.get(t) ?? 0)).map(([t]) => t)
      for (const t of ['users', 'api_keys', 'sessions', 'entitlements', 'usage', 'kv_entries', 'forms', 'form_submissions', 'images', 'hosted_files'])
        assert.ok(grew.includes(t), `the account has rows in ${t}`)
      for (const t of ['hosted_versions', 'files', 'folders', 'folder_files', 'deploys', 'deploy_files', 'domains', 'domain_tokens', 'invites'])
        assert.ok(grew.includes(t), `the account has rows in ${t}`)
      await expectAll(s, [...u.links, ASK + 'www.delete-me.test'], 200, 'served (and cached) before')
      const own = sha(`<p>only ${u.username}</p>`)
      assert.ok((await blobDigests(s)).has(own))

      const del = await s.request('DELETE', `/svc_api/admin/users/${u.username}`, { cookie: adminCookie })
      assert.equal(del.status, 200, del.text)
      assert.equal(del.json.data.username, u.username)
      assert.equal(del.json.data.usage.files, 2)
      assert.equal(del.json.data.usage.kv_keys, 1)

      const after = await tableCounts(s)
      for (const [t, n] of after) {
        // kept on purpose: the audit log gains the delete's entry, the name is held
        if (t === 'audit_log') assert.ok(n > (before.get(t) ?? 0), 'audited')
        else if (t === 'retired_usernames' || t === 'form_slugs_held') assert.equal(n, (before.get(t) ?? 0) + 1, t)
        else assert.equal(n, before.get(t) ?? 0, `${t}: every row the account made is gone`)
      }
      // its form's slug stays held: no other account takes the address old pages post to
      expectError(await s.post('/svc_api/forms/create', { key: bob.key, json: { form_name: 'Mine', form_slug: u.formSlug } }), 400, 1610)
      // sessions and keys end at once
      assert.equal((await s.get('/svc_api/me', { cookie: u.cookie })).status, 401)
      assert.equal((await s.get('/svc_api/me', { key: u.key })).status, 401)
      // public URLs answer 404 at once (the caches were warm), the domain gets no certificate
      await expectAll(s, u.links, 404, 'a deleted account serves nothing')
      await expectAll(s, [ASK + 'www.delete-me.test'], 404, "no certificate for a deleted account's domain")
      // the other account's copy of the shared bytes is untouched
      assert.equal((await s.get(`/${bob.username}/shared.html`)).status, 200)
      // the sweep removes the account's own blobs, never the shared one
      await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
      const left = await blobDigests(s)
      assert.ok(left.has(sha(SHARED)), 'a blob another account uses stays')
      assert.ok(!left.has(own), "the account's own blob is swept")
      assert.equal((await s.get(`/${bob.username}/shared.html`)).text, SHARED)

      // the domain is released: another account claims and verifies it
      const carol = await s.user()
      const { res } = await deploySite(s, carol.key, 'site', { 'index.html': '<p>carol</p>' })
      assert.equal(res.status, 201, res.text)
      await verifiedDomain(s, dns, carol.key, 'www.delete-me.test', 'site')
      assert.equal((await s.get(ASK + 'www.delete-me.test')).status, 200)

      // the name stays held from new accounts
      await assert.rejects(s.deps.users.create(u.username, 'another-password-1'), /already exists/)
      // audited, with what it held
      const log = await s.get('/svc_api/admin/audit?action=user.delete', { cookie: adminCookie })
      const e = log.json.data.entries.find((x: { target: string }) => x.target === u.username)
      assert.ok(e, log.text)
      assert.equal(e.actor, adminName)
      assert.equal(e.details.usage.files, 2)
    })

    it('an admin cannot delete their own account, an unknown one or one without the admin flag', async () => {
      assert.equal((await s.request('DELETE', `/svc_api/admin/users/${adminName}`, { cookie: adminCookie })).status, 400)
      assert.equal((await s.request('DELETE', '/svc_api/admin/users/nobody-here', { cookie: adminCookie })).status, 404)
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      const other = await s.user()
      assert.equal((await s.request('DELETE', `/svc_api/admin/users/${other.username}`, { cookie })).status, 403)
      assert.equal((await s.get('/svc_api/me', { key: other.key })).status, 200, 'nothing deleted')
    })

    it('by the account itself: its name and password again, a session only; a refusal changes nothing', async () => {
      const u = await fillAccount(s, null, '')
      const del = (json: unknown, auth: { cookie?: string; key?: string }) => s.post('/svc_api/account/delete', { ...auth, json })
      const before = await tableCounts(s)
      const wrongPw = await del({ username: u.username, password: 'not-the-password' }, { cookie: u.cookie })
      assert.equal(wrongPw.status, 400, wrongPw.text)
      assert.equal(wrongPw.json.field, 'password')
      const wrongName = await del({ username: `${u.username}x`, password: u.password }, { cookie: u.cookie })
      assert.equal(wrongName.status, 400, wrongName.text)
      assert.equal(wrongName.json.field, 'username')
      // an API key never deletes the account, even with the password
      const byKey = await del({ username: u.username, password: u.password }, { key: u.key })
      assert.equal(byKey.status, 403, byKey.text)
      assert.equal(byKey.json.error_code, 1009, 'session only')
      assert.deepEqual(await tableCounts(s), before, 'refusals change nothing')
      await expectAll(s, u.links, 200, 'still served')
      assert.equal((await s.get('/svc_api/me', { cookie: u.cookie })).status, 200)

      const ok = await del({ username: u.username.toUpperCase(), password: u.password }, { cookie: u.cookie })
      assert.equal(ok.status, 200, ok.text)
      assert.match(ok.header('set-cookie') ?? '', /session=;.*Max-Age=0/)
      assert.equal((await s.get('/svc_api/me', { cookie: u.cookie })).status, 401)
      await expectAll(s, u.links, 404, 'gone at once')
      assert.equal(await s.deps.users.byName(u.username), undefined)
      const log = await s.get('/svc_api/admin/audit?action=user.delete', { cookie: adminCookie })
      const e = log.json.data.entries.find((x: { target: string }) => x.target === u.username)
      assert.equal(e?.actor, u.username, log.text)
    })

    it('a deploy still arriving when its account is deleted answers 409 / 1410, not 500, and leaves nothing', async () => {
      const u = await s.user()
      const files = { 'index.html': '<p>late</p>', 'big.bin': Buffer.alloc(200_000, 7) }
      const tar = await tarOf([manifestOf(files), ...Object.entries(files).map(([name, data]) => ({ name, data }))])
      const body = new PassThrough()
      const answer = request(`${s.url}/api/folders/late/deploys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/x-tar' },
        body,
        dispatcher: insecureAgent,
      })
      // the request is authenticated and reading its body when the account goes
      body.write(tar.subarray(0, 100_000))
      await new Promise((r) => setTimeout(r, 300))
      assert.equal((await s.request('DELETE', `/svc_api/admin/users/${u.username}`, { cookie: adminCookie })).status, 200)
      body.end(tar.subarray(100_000))
      const r = await answer
      const j = (await r.body.json()) as { error_code: number }
      assert.equal(r.statusCode, 409)
      assert.equal(j.error_code, 1410)
      assert.equal((await s.deps.db.k.selectFrom('folders').select('id').where('user_id', '=', u.id).execute()).length, 0, 'no project left behind')
      assert.equal((await s.get('/svc_api/me', { key: u.key })).status, 401, 'a retry is told the key is gone')
    })

    it('an admin account does not delete itself', async () => {
      const r = await s.post('/svc_api/account/delete', {
        cookie: adminCookie,
        json: { username: adminName, password: 'whatever-it-is' },
      })
      assert.equal(r.status, 400, r.text)
      assert.ok(await s.deps.users.byName(adminName))
    })

    it('abuse records, evidence and blocked bytes of a taken-down account are kept', async () => {
      const u = await fillAccount(s, null, '')
      const rep = await s.post('/svc_api/admin/reports', { cookie: adminCookie, json: { url: `${s.url}/${u.username}/own.html`, category: 'phishing' } })
      assert.equal(rep.status, 201, rep.text)
      const td = await s.post(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, { cookie: adminCookie, json: {} })
      assert.equal(td.status, 200, td.text)
      const digest = sha(`<p>only ${u.username}</p>`)
      assert.equal((await s.request('DELETE', `/svc_api/admin/users/${u.username}`, { cookie: adminCookie })).status, 200)
      const k = s.deps.db.k
      assert.ok(await k.selectFrom('abuse_reports').select('id').where('id', '=', rep.json.data.id).executeTakeFirst(), 'the report stays')
      assert.ok(await k.selectFrom('blocked_digests').select('digest').where('digest', '=', digest).executeTakeFirst(), 'its bytes stay blocked')
      await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
      assert.ok((await blobDigests(s)).has(digest), 'the evidence keeps its blob')
      const list = await s.get('/svc_api/admin/reports', { cookie: adminCookie })
      assert.equal(list.status, 200, list.text)
      assert.ok(
        list.json.data.reports.some((x: { id: string }) => x.id === rep.json.data.id),
        'still listed',
      )
      // the bytes cannot be published again by anyone
      const v = await s.user()
      assert.equal((await uploadFile(s, { key: v.key }, 'again.html', `<p>only ${u.username}</p>`)).status, 451)
    })
  })

  describe(`deleting an account across instances (Redis bus) [${engine}]`, needs('redis'), () => {
    it('the admin console on one instance and `svc user delete` both end it on the other at once', async () => {
      const a = await startServer({
        engine,
        keepData: true,
        env: { RATE_LIMITS: HIGH_LIMITS, REDIS_URL, REDIS_PREFIX: `t${crypto.randomBytes(4).toString('hex')}:` },
      })
      const b = await startSecond(a)
      try {
        const adm = await a.user({ admin: true })
        const cookie = await a.login(adm.username, adm.password)
        for (const how of ['console', 'cli']) {
          const u = await fillAccount(a, null, '')
          const onB = await b.login(u.username, u.password)
          await expectAll(b, u.links, 200, `served (and cached) on b before (${how})`)
          if (how === 'console') assert.equal((await a.request('DELETE', `/svc_api/admin/users/${u.username}`, { cookie })).status, 200)
          else await svc(a, 'user', 'delete', u.username, '--force')
          await expectAll(b, u.links, 404, `b drops them at once (${how})`)
          assert.equal((await b.get('/svc_api/me', { cookie: onB })).status, 401, `the session on b ends (${how})`)
          assert.equal((await b.get('/svc_api/me', { key: u.key })).status, 401, `the key on b ends (${how})`)
        }
      } finally {
        await b.close()
        await a.close()
      }
    })
  })
}
