import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { Migrator, sql, type Kysely } from 'kysely'
import { openDatabase } from '../../src/db/kysely.js'
import { allMigrations } from '../../src/db/migrate.js'
import { FEATURE_TABLES } from '../../src/features/tables.js'
import { ENGINES, PG_URL, startServer, type Res, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'
import { imageForm, makeImage } from '../support/images.js'
import { expectError } from '../support/errors.js'
import { assertUsageExact, raceAtQuota, usageCounter, usageStored } from '../support/quota-race.js'
import { createImageHost } from '../../src/features/image-host/service.js'

type Account = Awaited<ReturnType<TestServer['user']>> & { cookie: string }
type Table = 'files' | 'images' | 'hosted_files' | 'hosted_versions' | 'forms' | 'domains' | 'api_keys'

// every quota checked on a write keeps a counter (db/usage.ts): 20 writes racing for the
// last place give exactly one success, and the counter equals the rows afterwards
for (const engine of ENGINES) {
  describe(`quota races on the usage counters [${engine}]`, () => {
    let s: TestServer
    let png: Buffer
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DOMAINS_PER_USER: '4' } })
      png = await makeImage('png')
    })
    after(() => s.close())

    const account = async (limits: Record<string, number> = {}, grants: string[] = []): Promise<Account> => {
      const u = await s.user()
      await s.deps.users.update(u.username, { limits })
      for (const feature of grants)
        await s.deps.db.k.insertInto('entitlements').values({ user_id: u.id, feature, source: 'grant', created_at: Date.now() }).execute()
      return { ...u, cookie: await s.login(u.username, u.password) }
    }
    const rows = async (table: Table, userId: string, fileId?: string): Promise<number> => {
      const { rows } =
        table === 'hosted_versions'
          ? await sql<{ n: number | string }>`select count(*) as n from hosted_versions where file_id = ${fileId}`.execute(s.deps.db.k)
          : await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)} where user_id = ${userId}`.execute(s.deps.db.k)
      return Number(rows[0].n)
    }
    const counted = (kind: string, table: Table, userId: string, fileId?: string) => async () => ({
      counter: await usageCounter(s, userId, kind),
      rows: await rows(table, userId, fileId),
    })
    const plain = (r: Res) => expectError(r, 400, 'plain')
    const images = (u: Account) => {
      const f = imageForm([{ name: 'p.png', data: png }])
      return s.post('/api/image-host/upload', { cookie: u.cookie, body: f.body, headers: { 'content-type': f.contentType, 'accept-language': 'en' } })
    }
    const data = (u: Account, p: string, body: unknown) => s.request('POST', p, { cookie: u.cookie, json: body, headers: { 'accept-language': 'en' } })

    it('single files (1201); a delete gives the place back', async () => {
      const u = await account({ files: 5 })
      await raceAtQuota({
        quota: 5,
        write: (i) => uploadFile(s, { key: u.key }, `f${i}.html`, HTML(`f${i}`)),
        refused: (r) => {
          assert.equal(r.status, 400, r.text)
          assert.equal(r.json.error_code, 1201)
          assert.equal(r.json.error_type, 'QUOTA_ERROR')
        },
        counted: counted('files', 'files', u.id),
      })
      assert.equal((await s.request('DELETE', '/svc_api/files/f-1.html', { key: u.key })).status, 200)
      assert.deepEqual(await counted('files', 'files', u.id)(), { counter: 4, rows: 4 })
      assert.equal((await s.get('/svc_api/upload/info', { key: u.key })).json.data.remaining_quota, 1)
    })

    it('a fractional limit counts as its floor on both engines', async () => {
      const u = await account({ files: 1.5 })
      assert.equal((await uploadFile(s, { key: u.key }, 'one.html', HTML('one'))).status, 200)
      const r = await uploadFile(s, { key: u.key }, 'two.html', HTML('two'))
      assert.equal(r.status, 400, r.text)
      assert.equal(r.json.error_code, 1201)
      assert.deepEqual(await counted('files', 'files', u.id)(), { counter: 1, rows: 1 })
    })

    it('images: count and bytes (plain 400); delete and replace keep the byte counter exact', async () => {
      const u = await account({ images: 4 }, ['image-host'])
      await raceAtQuota({
        quota: 4,
        write: () => images(u),
        refused: (r) => {
          plain(r)
          assert.match(r.json.message, /image count limit reached \(4 of 4 images\)/)
        },
        counted: counted('images', 'images', u.id),
      })
      const bytes = async (userId: string) => {
        const r = await s.deps.db.k
          .selectFrom('images')
          .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('size'), eb.val(0)).as('b'))
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow()
        return { counter: await usageCounter(s, userId, 'image_bytes'), rows: Number(r.b) }
      }
      const b = await bytes(u.id)
      assert.equal(b.counter, b.rows)
      const size = b.rows / 4
      // the byte quota: room for exactly two stored images
      const v = await account({ image_bytes: 2 * size }, ['image-host'])
      await raceAtQuota({
        quota: 2,
        write: () => images(v),
        refused: (r) => {
          plain(r)
          assert.match(r.json.message, /total image size limit of \d+ bytes reached/)
        },
        counted: async () => {
          const c = await bytes(v.id)
          return { counter: c.counter / size, rows: c.rows / size }
        },
      })
      const list = await s.get('/api/image-host/images', { cookie: u.cookie })
      const token = list.json.images[0].public_token as string
      // a replacement by a larger image moves the byte counter by the difference
      const big = await makeImage('jpeg', { width: 200, height: 160 })
      const f = imageForm([{ name: 'big.jpg', data: big }])
      const rep = await s.post(`/api/image-host/images/${token}/replace`, { cookie: u.cookie, body: f.body, headers: { 'content-type': f.contentType } })
      assert.equal(rep.status, 200, rep.text)
      const afterReplace = await bytes(u.id)
      assert.equal(afterReplace.counter, afterReplace.rows)
      assert.notEqual(afterReplace.rows, b.rows)
      assert.equal((await s.request('DELETE', `/api/image-host/images/${token}`, { cookie: u.cookie })).status, 200)
      assert.deepEqual(await counted('images', 'images', u.id)(), { counter: 3, rows: 3 })
      assert.deepEqual(await bytes(u.id), { counter: 3 * size, rows: 3 * size })
    })

    it('an image deleted while it is being replaced leaves the byte counter exact', async () => {
      const u = await account({}, ['image-host'])
      assert.equal((await images(u)).status, 200)
      const token = (await s.get('/api/image-host/images', { cookie: u.cookie })).json.images[0].public_token as string
      // the delete is sent once the replace, under the user's lock, has read the image's size
      const store = s.deps.services.get(createImageHost).store
      const limits = store.userLimits.bind(store)
      let deleting: Promise<Res> | undefined
      store.userLimits = async (...args) => {
        store.userLimits = limits
        deleting = s.request('DELETE', `/api/image-host/images/${token}`, { cookie: u.cookie })
        await Promise.race([deleting, new Promise((resolve) => setTimeout(resolve, 300))])
        return limits(...args)
      }
      const f = imageForm([{ name: 'big.jpg', data: await makeImage('jpeg', { width: 200, height: 160 }) }])
      let rep: Res
      try {
        rep = await s.post(`/api/image-host/images/${token}/replace`, { cookie: u.cookie, body: f.body, headers: { 'content-type': f.contentType } })
      } finally {
        store.userLimits = limits
      }
      assert.ok(rep.status === 200 || rep.status === 404, `${rep.status} ${rep.text}`)
      assert.equal((await deleting!).status, 200)
      assert.deepEqual(await counted('images', 'images', u.id)(), { counter: 0, rows: 0 })
      assert.equal(await usageCounter(s, u.id, 'image_bytes'), 0)
    })

    it('hosted data files and versions per file (plain 400); a version delete gives one back', async () => {
      const u = await account({ hosted_files: 5, hosted_versions: 6 }, ['hosted-data'])
      const F = '/api/hosted-data/files'
      await raceAtQuota({
        quota: 5,
        write: (i) => data(u, F, { display_name: `d${i}`, content: `data ${i}` }),
        refused: (r) => {
          plain(r)
          assert.match(r.json.message, /hosted data files 5\/5/)
        },
        counted: counted('hosted_files', 'hosted_files', u.id),
      })
      const list = await s.request('GET', F, { cookie: u.cookie })
      const id = list.json.files[0].id as string
      const kind = `hosted_versions:${id}`
      await raceAtQuota({
        quota: 6,
        existing: 1,
        write: (i) => data(u, `${F}/${id}/versions`, { content: `version ${i}` }),
        refused: (r) => {
          plain(r)
          assert.match(r.json.message, /versions of this file 6\/6/)
        },
        counted: counted(kind, 'hosted_versions', u.id, id),
      })
      assert.equal((await s.request('DELETE', `${F}/${id}/versions/2`, { cookie: u.cookie })).status, 200)
      assert.deepEqual(await counted(kind, 'hosted_versions', u.id, id)(), { counter: 5, rows: 5 })
      // deleting the file drops its version counter and gives back its place
      assert.equal((await s.request('DELETE', `${F}/${id}`, { cookie: u.cookie })).status, 200)
      assert.equal(await usageCounter(s, u.id, kind), 0)
      assert.equal((await s.deps.db.k.selectFrom('usage').select('n').where('kind', '=', kind).execute()).length, 0)
      assert.deepEqual(await counted('hosted_files', 'hosted_files', u.id)(), { counter: 4, rows: 4 })
    })

    it('forms (1613, 429)', async () => {
      const u = await account({ forms: 4 })
      await raceAtQuota({
        quota: 4,
        write: (i) => s.post('/svc_api/forms/create', { key: u.key, json: { form_name: `form ${i}` } }),
        refused: (r) => expectError(r, 429, 1613),
        counted: counted('forms', 'forms', u.id),
      })
      const list = await s.get('/svc_api/forms/list', { key: u.key })
      assert.deepEqual(list.json.data.quota.forms, { used: 4, limit: 4 })
      await s.request('DELETE', `/svc_api/forms/delete/${list.json.data.forms[0].id}`, { key: u.key })
      assert.deepEqual(await counted('forms', 'forms', u.id)(), { counter: 3, rows: 3 })
    })

    it('custom domains (1341)', async () => {
      const u = await account()
      assert.equal((await batchUpload(s, { key: u.key }, 'site', [{ filename: 'index.html', data: '<p>x</p>' }])).status, 200)
      await raceAtQuota({
        quota: 4,
        write: (i) => s.post('/api/domains', { key: u.key, json: { domain: `d${i < 0 ? `m${-i}` : i}.example.test`, project: 'site' } }),
        refused: (r) => expectError(r, 403, 1341),
        counted: counted('domains', 'domains', u.id),
      })
    })

    it('API keys (1207)', async () => {
      // the account starts with one key: 10 is the fixed limit
      const u = await account()
      await raceAtQuota({
        quota: 10,
        existing: 1,
        write: (i) => s.post('/svc_api/api-keys', { cookie: u.cookie, json: { name: `k${i}` } }),
        refused: (r) => expectError(r, 400, 1207),
        counted: counted('api_keys', 'api_keys', u.id),
      })
    })

    it('takedowns of a file, an image and a data file uncount exactly what they delete', async () => {
      const u = await account({}, ['image-host', 'hosted-data'])
      const a = await s.user({ admin: true })
      const admin = await s.login(a.username, a.password)
      const takedown = async (url: string) => {
        const rep = await s.request('POST', '/svc_api/admin/reports', { cookie: admin, json: { url, category: 'spam' } })
        assert.equal(rep.status, 201, rep.text)
        const r = await s.request('POST', `/svc_api/admin/reports/${rep.json.data.id}/takedown`, { cookie: admin, json: {} })
        assert.equal(r.status, 200, r.text)
      }
      for (const n of ['a', 'b']) assert.equal((await uploadFile(s, { key: u.key }, `${n}.html`, HTML(`takedown ${n}`))).status, 200)
      const img = await images(u)
      assert.equal(img.status, 200, img.text)
      await images(u)
      const F = '/api/hosted-data/files'
      const d = await data(u, F, { display_name: 'gone', content: 'taken down' })
      await data(u, `${F}/${d.json.file.id}/versions`, { content: 'taken down too' })
      await data(u, F, { display_name: 'kept', content: 'kept' })

      await takedown(`${s.url}/${u.username}/a.html`)
      await takedown(`${s.url}/svc-img/pub/${img.json.images[0].public_token}`)
      await takedown(`${s.url}/svc-data/pub/${d.json.file.public_token}`)
      assert.deepEqual(await counted('files', 'files', u.id)(), { counter: 1, rows: 1 })
      assert.deepEqual(await counted('images', 'images', u.id)(), { counter: 1, rows: 1 })
      assert.equal(await usageCounter(s, u.id, 'image_bytes'), Number(img.json.images[0].size)) // the other image: the same bytes
      assert.deepEqual(await counted('hosted_files', 'hosted_files', u.id)(), { counter: 1, rows: 1 })
      assert.equal(await usageCounter(s, u.id, `hosted_versions:${d.json.file.id}`), 0)
    })

    it('the migrations fill the counters from the rows already there', async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-usage-'))
      const schema = `t_usage_${crypto.randomBytes(4).toString('hex')}`
      const db = await openDatabase({ databaseUrl: engine === 'postgres' ? `${PG_URL}?schema=${schema}` : null, dataDir })
      try {
        const migrator = new Migrator({
          db: db.k,
          provider: { getMigrations: async () => allMigrations(FEATURE_TABLES) },
          ...(db.schema ? { migrationTableSchema: db.schema } : {}),
        })
        const before = await migrator.migrateTo('0745-abuse')
        assert.equal(before.error, undefined)
        const k = db.k as Kysely<any>
        const now = Date.now()
        const users = ['u1', 'u2']
        for (const id of users) await k.insertInto('users').values({ id, username: id, password_hash: 'x', created_at: now, updated_at: now }).execute()
        const common = { created_at: now, updated_at: now }
        for (let i = 0; i < 3; i++) {
          await k
            .insertInto('files')
            .values({
              id: `f${i}`,
              user_id: 'u1',
              file_name: `f${i}.html`,
              project_name: 'p',
              digest: 'd',
              size: 1,
              content_type: 'text/html',
              created_at: now,
            })
            .execute()
          await k
            .insertInto('images')
            .values({
              id: `i${i}`,
              user_id: i < 2 ? 'u1' : 'u2',
              public_token: `t${i}`,
              file_name: 'x.png',
              content_type: 'image/png',
              size: 10 + i,
              digest: 'd',
              ...common,
            })
            .execute()
          await k
            .insertInto('api_keys')
            .values({ id: `k${i}`, user_id: 'u2', name: 'k', key_hash: `h${i}`, hint: 'abcd', created_at: now })
            .execute()
        }
        for (const f of ['h1', 'h2'])
          await k
            .insertInto('hosted_files')
            .values({ id: f, user_id: 'u1', public_token: `p${f}`, display_name: f, default_version: 1, latest_version: 2, ...common })
            .execute()
        for (const [f, v] of [
          ['h1', 1],
          ['h1', 2],
          ['h2', 1],
        ] as const)
          await k.insertInto('hosted_versions').values({ file_id: f, version: v, digest: 'd', size: 1, content_type: 'text/plain', created_at: now }).execute()
        await k
          .insertInto('forms')
          .values({ id: 'fm', user_id: 'u2', form_name: 'f', form_slug: 'fm', slug_key: 'fm', fields_config: '[]', allowed_origins: '[]', ...common })
          .execute()
        await k.insertInto('domains').values({ id: 'dm', user_id: 'u2', name: 'a.example.test', project: 'p', token: 't', created_at: now }).execute()
        const after = await migrator.migrateToLatest()
        assert.equal(after.error, undefined)
        assert.deepEqual(await usageStored(db.k, 'u1'), {
          files: 3,
          images: 2,
          image_bytes: 21,
          hosted_files: 2,
          'hosted_versions:h1': 2,
          'hosted_versions:h2': 1,
        })
        assert.deepEqual(await usageStored(db.k, 'u2'), { images: 1, image_bytes: 12, api_keys: 3, forms: 1, domains: 1 })
        for (const id of users) await assertUsageExact(db.k, id)
      } finally {
        if (db.schema) await sql`drop schema if exists ${sql.id(db.schema)} cascade`.execute(db.k)
        await db.close()
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })
}
