import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { Migrator, sql, type Kysely } from 'kysely'
import { ENGINES, PG_URL, dropSchema, startServer, type TestServer } from '../support/server.js'
import { openDatabase } from '../../src/db/kysely.js'
import { allMigrations } from '../../src/db/migrate.js'
import { sweepBlobs } from '../../src/storage/sweeper.js'
import { BLOB_COLUMNS, FEATURE_TABLES } from '../../src/features/tables.js'

/**
 * An install of an older release, upgraded: the fixture is a data folder the release of
 * 2026-11-29 made through its own API and CLI (its svc.sql says what it holds). SQLite starts
 * from that database as it is; PostgreSQL from a schema migrated to the same point by this
 * release's migrations, holding the same rows. The server then starts on it as an upgrade does:
 * every newer migration runs, and everything made before still works.
 */
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const FIXTURE = path.join(root, 'test/fixtures/upgrade/2026-11-29')
const access = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'access.json'), 'utf8')) as {
  username: string
  password: string
  key: string
  cookie: string
  form_id: string
  hosted_id: string
}
const blobFiles = (dir: string): string[] =>
  fs.readdirSync(dir, { recursive: true, withFileTypes: true }).flatMap((e) => (e.isFile() ? [path.join(e.parentPath, e.name)] : []))
const blob = (digest: string) => fs.readFileSync(path.join(FIXTURE, 'blobs', digest.slice(0, 2), digest))
const digestOf = (b: Buffer | string) => crypto.createHash('sha256').update(b).digest('hex')

/** The fixture's database, in memory. */
function fixtureDb(): SQLite.Database {
  const db = new SQLite(':memory:')
  db.exec(fs.readFileSync(path.join(FIXTURE, 'svc.sql'), 'utf8'))
  return db
}

/** A PostgreSQL schema as the release of the fixture left it: its migrations, then its rows. */
async function fixtureSchema(schema: string): Promise<void> {
  const src = fixtureDb()
  const db = await openDatabase({ databaseUrl: `${PG_URL}?schema=${schema}`, dataDir: os.tmpdir() })
  try {
    const ran = (src.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>).map((r) => r.name)
    const migrator = new Migrator({ db: db.k, provider: { getMigrations: async () => allMigrations(FEATURE_TABLES) }, migrationTableSchema: schema })
    const { error } = await migrator.migrateTo(ran[ran.length - 1])
    if (error) throw error instanceof Error ? error : new Error('migration failed', { cause: error })
    // tables in the order the migrations made them: a row's parent is there before it
    const tables = (
      src.prepare("select name from sqlite_master where type = 'table' and name not like 'kysely%' order by rowid").all() as Array<{ name: string }>
    ).map((r) => r.name)
    const k = db.k as unknown as Kysely<any>
    for (const t of tables) {
      const rows = src.prepare(`select * from "${t}"`).all() as Array<Record<string, unknown>>
      if (rows.length > 0) await k.insertInto(t).values(rows).execute()
    }
  } finally {
    await db.close()
    src.close()
  }
}

for (const engine of ENGINES) {
  describe(`an install of the release of 2026-11-29 upgraded [${engine}]`, () => {
    it('runs every migration, and serves, authenticates and keeps everything made before', async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-upgrade-'))
      const schema = `t_${crypto.randomBytes(5).toString('hex')}`
      let s: TestServer | undefined
      try {
        fs.cpSync(path.join(FIXTURE, 'blobs'), path.join(dataDir, 'blobs'), { recursive: true })
        if (engine === 'sqlite') {
          const db = new SQLite(path.join(dataDir, 'svc.db'))
          db.exec(fs.readFileSync(path.join(FIXTURE, 'svc.sql'), 'utf8'))
          db.close()
        } else await fixtureSchema(schema)
        s = await startServer({ engine, dataDir, keepData: true, ...(engine === 'postgres' ? { pgSchema: schema } : {}) })
        const k = s.deps.db.k as unknown as Kysely<any>
        // the fixture's session is days old: made current, so the check below is of the upgrade, not of its expiry
        await k
          .updateTable('sessions')
          .set({ last_seen_at: Date.now(), expires_at: Date.now() + 86_400_000 })
          .execute()

        const ran = (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(k)).rows.map((r) => r.name)
        assert.deepEqual(ran, Object.keys(allMigrations(FEATURE_TABLES)).sort())

        const { username: u, key } = access
        // the API key and the session made before, and the password
        assert.equal((await s.get('/svc_api/upload/info', { key })).status, 200)
        assert.equal((await s.get('/api/image-host/status', { cookie: access.cookie })).status, 200)
        assert.equal((await s.post('/login', { form: { username: u, password: access.password }, headers: { accept: 'application/json' } })).status, 200)

        // key-value entries, the public one to anyone
        const list = await s.get('/svc_api/data/list?per_page=100', { key })
        assert.deepEqual(Object.fromEntries(list.json.data.items.map((e: { key: string; value: unknown }) => [e.key, e.value])), {
          'k-json': { a: 1, list: [1, 2, 'three'], nested: { ü: 'ünïcødé' } },
          'k-num': 43,
          'k-pub': { shown: true },
          'k-text': 'hello world',
        })
        assert.equal((await s.get(`/svc_api/data/public/${u}/k-pub`)).json.data.value.shown, true)
        assert.equal((await s.get(`/svc_api/data/public/${u}/k-text`)).status, 404)

        // pages: a single page, the project's live deploy and its rules, the visitor password,
        // the user's origin and the custom domain
        const page = async (p: string, headers: Record<string, string> = {}, plain = false) => {
          const r = await s!.request('GET', p, { headers, plain })
          return { status: r.status, body: r.text, location: r.header('location') }
        }
        const v2 = blob('98682ecc9aaada90e86fc4e9dac45e50aecc2b06c1d2da50a36f2a8cb15da4a1').toString()
        assert.match(v2, /site v2/)
        assert.equal((await page(`/${u}/page.html`)).body, blob('0a1a47405605585ce0d203d9cf1af59736d3df320ce5143f8b241cbaa10fad12').toString())
        assert.equal((await page(`/${u}/site/`)).body, v2)
        assert.equal((await page(`/${u}/site/assets/app.js`)).status, 200)
        assert.match((await page(`/${u}/site/nope`)).body, /custom not found/)
        assert.deepEqual(await page(`/${u}/site/old-path`), { status: 301, body: '', location: `/${u}/site/about.html` })
        assert.equal((await page(`/${u}/secret.html`)).status, 401)
        const basic = { authorization: `Basic ${Buffer.from('x:open sesame').toString('base64')}` }
        assert.match((await page(`/${u}/secret.html`, basic)).body, /secret page/)
        assert.equal((await page('/site/', { host: `${u}.localhost` }, true)).body, v2)
        assert.equal((await page('/', { host: 'www.upgrade-drill.com' })).body, v2)

        // deploys: three kept, v2 live, the preview still a preview
        const deploys = await s.get('/api/folders/site/deploys', { key })
        assert.deepEqual(
          deploys.json.deploys.map((d: { message: string; is_live: boolean; is_preview: boolean }) => [d.message, d.is_live, d.is_preview]),
          [
            ['preview', false, true],
            ['v2', true, false],
            ['v1', false, false],
          ],
        )

        // form submissions, spam flagged as it was
        const subs = (await s.get(`/svc_api/forms/data/${access.form_id}?per_page=100`, { key })).json.data.submissions
        assert.deepEqual(
          subs.map((x: { data: Record<string, string>; is_spam: boolean }) => [x.data.name, x.data.message ?? null, x.is_spam]),
          [
            ['Spam', null, true],
            ['Bob', 'sécond', false],
            ['Ann', 'first', false],
          ],
        )
        assert.equal((await s.get(`/svc_api/forms/export/${access.form_id}?format=csv`, { key })).status, 200)

        // images and hosted data, their bytes served as uploaded
        const images = (await s.get('/api/image-host/images', { cookie: access.cookie })).json.images
        assert.equal(images.length, 2)
        for (const i of images) {
          const r = await s.get(`/svc-img/pub/${i.public_token ?? i.token}`)
          assert.equal(r.status, 200)
          assert.ok(fs.existsSync(path.join(FIXTURE, 'blobs', digestOf(r.body).slice(0, 2), digestOf(r.body))))
        }
        const hosted = (await s.get(`/api/hosted-data/files/${access.hosted_id}`, { cookie: access.cookie })).json.file
        assert.equal((await s.get(`/svc-data/pub/${hosted.public_token}`)).text, '{"v":2}')
        assert.equal((await s.get(`/svc-data/pub/${hosted.public_token}?v=1`)).text, '{"v":1}')

        // new writes work on the upgraded data
        assert.equal((await s.post('/svc_api/data/store', { key, json: { key: 'k-new', value: 1 } })).status, 200)
        assert.equal((await s.post('/api/forms/submit/contact-drill', { json: { name: 'Eve' } })).status, 200)

        // nothing the fixture holds is unreferenced: a sweep without grace deletes none of it
        await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
        for (const f of blobFiles(path.join(FIXTURE, 'blobs'))) {
          assert.ok(await s.deps.blobs.exists(path.basename(f)), `blob ${path.basename(f)} kept`)
        }
      } finally {
        await s?.close()
        if (engine === 'postgres') await dropSchema(schema)
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })
}
