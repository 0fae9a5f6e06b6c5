import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { referencedDigests } from '../../src/cli/backup.js'
import { BLOB_COLUMNS, FEATURE_TABLES } from '../../src/features/tables.js'
import { PostgresAdapter, type Kysely } from 'kysely'
import { openDatabase } from '../../src/db/kysely.js'
import { migrateToLatest, type MigrationSet } from '../../src/db/migrate.js'
import { createLocalBlobStore } from '../../src/storage/local.js'
import { MoveError, moveSqliteToPostgres } from '../../src/cli/move.js'
import { dropSchema, needs, PG_URL, pgQuery, startServer, type Res, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, uploadFile } from '../support/hosting.js'
import { deploySite } from '../support/deploys.js'
import { imageForm, makeImage } from '../support/images.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { runCli, SVC_BIN } from './run.js'

// svc move (bin/svc, from dist/): a SQLite instance with two users, keys, sessions, a project
// with an old deploy kept, KV, a form with submissions, an image, hosted data, a custom domain
// and a visitor password, moved into a fresh PostgreSQL schema and an s3rver bucket; an
// instance on the target answers the same to the same keys, password and session, and its
// counters continue. A refused move (source running, target not empty, a blob missing)
// changes nothing.

/** What a visitor sees of an answer. */
const seen = (r: Res) => ({ status: r.status, type: r.header('content-type'), etag: r.header('etag'), body: r.body.toString('base64') })

const schemaExists = async (schema: string) => (await pgQuery('select 1 from pg_namespace where nspname = $1', [schema])).length > 0

describe('svc move [sqlite -> postgres + s3]', needs('postgres'), () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-move-test-'))
  const servers: TestServer[] = []
  const schemas: string[] = []
  /** The source's data folder: kept when its server closes, for the move. */
  let source: string | null = null
  let s3: TestS3 | null = null
  after(async () => {
    for (const s of servers) await s.close().catch(() => {})
    for (const n of schemas) await dropSchema(n)
    if (source !== null) fs.rmSync(source, { recursive: true, force: true })
    await s3?.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })
  const newSchema = () => {
    const n = `t_move_${crypto.randomBytes(5).toString('hex')}`
    schemas.push(n)
    return n
  }
  const moveEnv = (schema: string, storageUrl: string) => ({
    DATABASE_URL: `${PG_URL}?schema=${schema}`,
    STORAGE_URL: storageUrl,
    DATA_DIR: path.join(tmp, 'unused'),
  })

  it('moves every table and blob; the same keys, password and session work on the target, and counters continue', { timeout: 240_000 }, async () => {
    s3 = await startS3()
    const a = await startServer({ engine: 'sqlite', keepData: true, env: { RATE_LIMITS: HIGH_LIMITS } })
    servers.push(a)
    source = a.dataDir
    const alice = await a.user()
    const bob = await a.user()
    // by a child process: this one opening and closing svc.db would drop the server's SQLite
    // locks (POSIX semantics), which the refusal of a move while it runs relies on
    for (const feature of ['image-host', 'hosted-data']) {
      const g = await runCli(['grant', alice.username, feature], { env: { DATA_DIR: a.dataDir } })
      assert.equal(g.code, 0, g.stderr)
    }
    const cookie = await a.login(alice.username, alice.password)

    // a project deployed twice: the first deploy is kept, for a rollback
    const v1 = { 'index.html': HTML('v1'), 'app.css': 'body{color:red}' }
    const v2 = { 'index.html': HTML('v2'), 'app.css': 'body{color:blue}' }
    assert.equal((await deploySite(a, alice.key, 'site', v1)).res.status, 201)
    assert.equal((await deploySite(a, alice.key, 'site', v2)).res.status, 201)
    assert.equal((await uploadFile(a, { key: bob.key }, 'page.html', HTML('bob'))).status, 200)
    assert.equal((await a.post('/svc_api/data/store', { key: alice.key, json: { key: 'score', value: { n: 1, s: '排行' }, is_public: true } })).status, 200)
    for (let i = 0; i < 2; i++) assert.equal((await a.post('/svc_api/data/incr', { key: alice.key, json: { key: 'visits' } })).status, 200)
    const form = await a.post('/svc_api/forms/create', {
      key: alice.key,
      json: { form_name: 'Contact', form_slug: `contact-${crypto.randomBytes(3).toString('hex')}`, fields_config: [{ name: 'msg', type: 'text' }] },
    })
    assert.equal(form.status, 200, form.text)
    const slug = form.json.data.form_slug as string
    const formId = form.json.data.id as string
    for (const msg of ['one', 'two']) assert.equal((await a.post(`/api/forms/submit/${slug}`, { json: { msg } })).status, 200)
    const img = imageForm([{ name: 'dot.png', data: await makeImage('png'), type: 'image/png' }])
    const imgUp = await a.post('/api/image-host/upload', { cookie, body: img.body, headers: { 'content-type': img.contentType } })
    assert.equal(imgUp.status, 200, imgUp.text)
    const imgUrl = new URL(imgUp.json.images[0].public_url as string).pathname
    const hd = await a.request('POST', '/api/hosted-data/files', { cookie, json: { display_name: 'data.json', content: '{"v":1}' } })
    assert.equal(hd.status, 200, hd.text)
    const hdUrl = new URL(hd.json.file.public_url as string).pathname
    const domain = `moved-${crypto.randomBytes(3).toString('hex')}.example.com`
    assert.equal((await a.post('/api/domains', { key: alice.key, json: { domain, project: 'site' } })).status, 200)
    assert.equal((await deploySite(a, alice.key, 'private', { 'index.html': HTML('members') })).res.status, 201)
    assert.equal((await a.request('PUT', '/api/access/private', { key: alice.key, json: { password: 'visitor-secret' } })).status, 200)

    const urls = [
      `/${alice.username}/site/app.css`,
      `/${alice.username}/private/`,
      `/${bob.username}/page.html`,
      `/svc_api/data/public/${alice.username}/score`,
      imgUrl,
      hdUrl,
    ]
    const before = new Map<string, ReturnType<typeof seen>>()
    for (const u of urls) before.set(u, seen(await a.get(u)))
    assert.equal(before.get(urls[0])!.status, 200)
    assert.equal(before.get(urls[1])!.status, 401)
    const domainsBefore = (await a.get('/api/domains', { key: alice.key })).json
    const accessBefore = (await a.get('/api/access', { key: alice.key })).json
    const tables = await a.deps.db.k.introspection.getTables()

    await a.close()

    // refused while a server runs on the source (the shipped `svc serve`, a process of its
    // own): nothing written, not even the target's schema
    const serve = spawn(process.execPath, [SVC_BIN, 'serve'], {
      env: { ...process.env, DATA_DIR: a.dataDir, PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise((r) => serve.once('exit', r))
    try {
      let said = ''
      serve.stdout.on('data', (d: Buffer) => (said += d.toString()))
      serve.stderr.on('data', (d: Buffer) => (said += d.toString()))
      for (let i = 0; i < 600 && !/svc listening on/.test(said) && serve.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50))
      assert.match(said, /svc listening on/)
      const s1 = newSchema()
      const running = await runCli(['move', '--from-data-dir', a.dataDir], { env: moveEnv(s1, s3.storageUrl()) })
      assert.equal(running.code, 1, running.stderr)
      assert.equal(running.stdout, '')
      assert.match(running.stderr, /^error: .*svc\.db is in use \(a running svc serve\?\): stop it, then move; nothing was moved\n$/)
      assert.equal(await schemaExists(s1), false)
    } finally {
      serve.kill('SIGTERM')
      await exited
    }

    // refused into a target that holds an account: it keeps its own rows only
    const other = await startServer({ engine: 'postgres' })
    servers.push(other)
    const carol = await other.user()
    const full = await runCli(['move', '--from-data-dir', a.dataDir], { env: { ...moveEnv('x', s3.storageUrl()), DATABASE_URL: other.env.DATABASE_URL } })
    assert.equal(full.code, 1, full.stderr)
    assert.match(full.stderr, /the target database is not empty \(it holds accounts\).*nothing was moved/)
    const names = await other.deps.db.k.selectFrom('users').select('username').execute()
    assert.deepEqual(
      names.map((r) => r.username),
      [carol.username],
    )

    // a blob the rows reference missing from the source: refused before anything is written,
    // not even the target's migrations
    const broken = path.join(tmp, 'broken')
    fs.cpSync(a.dataDir, broken, { recursive: true })
    const css = crypto.createHash('sha256').update(v1['app.css']).digest('hex')
    const blobFiles = fs.readdirSync(path.join(broken, 'blobs'), { recursive: true, withFileTypes: true }).filter((d) => d.isFile() && d.name === css)
    assert.equal(blobFiles.length, 1)
    fs.rmSync(path.join(blobFiles[0].parentPath, blobFiles[0].name))
    const s2 = newSchema()
    const lost = await runCli(['move', '--from-data-dir', broken], { env: moveEnv(s2, s3.storageUrl()) })
    assert.equal(lost.code, 1, lost.stderr)
    assert.match(lost.stderr, new RegExp(`blob ${css} \\(deploy_files\\.digest\\) is missing from the source's blobs; nothing was moved`))
    assert.deepEqual(await pgQuery('select count(*)::int as n from information_schema.tables where table_schema = $1', [s2]), [{ n: 0 }])

    // the move
    const schema = newSchema()
    const storageUrl = s3.storageUrl()
    const moved = await runCli(['move', '--from-data-dir', a.dataDir], { env: moveEnv(schema, storageUrl), timeoutMs: 120_000 })
    assert.equal(moved.code, 0, moved.stderr)
    assert.match(moved.stdout, /^moving .*svc\.db into postgres:\/\/postgres@127\.0\.0\.1:5432\/test \(schema t_move_\w+\), blobs into s3:\/\/svc-test\/\w+\n/)
    assert.match(moved.stdout, /^ {2}users: 2 rows$/m)
    assert.match(moved.stdout, /^ {2}deploys: 3 rows$/m)
    assert.match(moved.stdout, /^ {2}form_submissions: 2 rows$/m)
    assert.match(moved.stdout, /^ {2}sessions: 1 row$/m)
    // every table of the source, kysely's own bookkeeping left to the target's migrations
    const listed = [...moved.stdout.matchAll(/^ {2}(\w+): \d+ rows?$/gm)].map((m) => m[1]).sort()
    assert.deepEqual(
      listed,
      tables
        .map((t) => t.name)
        .filter((n) => !n.startsWith('kysely_'))
        .sort(),
    )
    assert.match(moved.stdout, /^blobs: (\d+) referenced, \1 copied \(\d+ bytes\), 0 already in the target; each digest verified$/m)
    assert.match(moved.stdout, /^verified and committed: \d+ tables, \d+ rows \(each table's count matches the source\), \d+ blobs, 0 sequences set$/m)

    const b = await startServer({ engine: 'postgres', pgSchema: schema, env: { RATE_LIMITS: HIGH_LIMITS, STORAGE_URL: storageUrl } })
    servers.push(b)
    // the same bytes at every address
    for (const u of urls) assert.deepEqual(seen(await b.get(u)), before.get(u), u)
    // the same API keys, password and session
    assert.equal((await b.get('/svc_api/files', { key: bob.key })).status, 200)
    assert.equal((await b.get('/svc_api/data/get?key=score', { key: alice.key })).json.data.value.s, '排行')
    await b.login(bob.username, bob.password)
    assert.equal((await b.get('/api/domains', { cookie })).status, 200)
    assert.deepEqual((await b.get('/api/domains', { key: alice.key })).json, domainsBefore)
    assert.deepEqual((await b.get('/api/access', { key: alice.key })).json, accessBefore)
    // the old deploy is kept: a rollback serves it
    assert.equal((await b.get(`/${alice.username}/site/app.css`)).text, v2['app.css'])
    const back = await b.post('/api/folders/site/rollback', { key: alice.key })
    assert.equal(back.status, 200, back.text)
    assert.equal((await b.get(`/${alice.username}/site/app.css`)).text, v1['app.css'])
    // counters continue: an increment, a new key, a new submission after the moved ones
    const inc = await b.post('/svc_api/data/incr', { key: alice.key, json: { key: 'visits' } })
    assert.equal(inc.json.data.value, 3, inc.text)
    assert.equal((await b.post('/svc_api/data/store', { key: alice.key, json: { key: 'new', value: 'after' } })).status, 200)
    assert.equal((await b.post(`/api/forms/submit/${slug}`, { json: { msg: 'three' } })).status, 200)
    const subs = (await b.get(`/svc_api/forms/data/${formId}`, { key: alice.key })).json.data.submissions as Array<{ data: { msg: string } }>
    assert.deepEqual(
      subs.map((x) => x.data.msg),
      ['three', 'two', 'one'],
    )
    // the bucket holds exactly the blobs the source's rows reference
    const src = new SQLite(path.join(a.dataDir, 'svc.db'), { readonly: true })
    const referenced = new Set(referencedDigests(src, BLOB_COLUMNS).map((d) => d.digest))
    src.close()
    const inBucket = new Set<string>()
    for await (const x of b.deps.blobs.list()) inBucket.add(x.digest)
    assert.ok(referenced.size >= 8, String(referenced.size))
    assert.deepEqual([...inBucket].sort(), [...referenced].sort())
  })
})

// The conversion by the target column's type, on columns today's tables do not have (a table
// a future feature may add): a boolean, JSON, bytes, a time, a bigint past 2^53, a serial and
// an always-generated identity, whose sequences continue after the moved rows. A value the
// target cannot take fails the move, naming the column, and commits nothing.
describe('svc move: every column type [sqlite -> postgres]', needs('postgres'), () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-move-types-'))
  const schemas: string[] = []
  after(async () => {
    for (const n of schemas) await dropSchema(n)
    fs.rmSync(tmp, { recursive: true, force: true })
  })
  const extra: MigrationSet = {
    name: 'move-test',
    migrations: {
      '9990-move-test-types': {
        async up(db: Kysely<any>) {
          const postgres = db.getExecutor().adapter instanceof PostgresAdapter
          await db.schema
            .createTable('move_types')
            .addColumn('id', 'serial', (c) => c.primaryKey())
            .addColumn('flag', 'boolean')
            .addColumn('doc', postgres ? 'jsonb' : 'text')
            .addColumn('raw', postgres ? 'bytea' : 'blob')
            .addColumn('at', postgres ? 'timestamptz' : 'bigint')
            .addColumn('big', 'bigint')
            .execute()
          await db.schema
            .createTable('move_ids')
            .addColumn('id', 'integer', (c) => (postgres ? c.primaryKey().generatedAlwaysAsIdentity() : c.primaryKey()))
            .addColumn('type_id', 'integer', (c) => c.references('move_types.id'))
            .execute()
        },
      },
    },
  }
  const sets = [...FEATURE_TABLES, extra]
  const source = async (name: string, doc: string) => {
    const dir = path.join(tmp, name)
    const db = await openDatabase({ databaseUrl: null, dataDir: dir })
    await migrateToLatest(db, sets)
    await db.close()
    const raw = new SQLite(path.join(dir, 'svc.db'))
    const ins = raw.prepare('insert into move_types (id, flag, doc, raw, at, big) values (?, ?, ?, ?, ?, ?)')
    ins.run(1, 1, doc, Buffer.from([0, 255, 10]), 1_700_000_000_123, 9_007_199_254_740_993n)
    ins.run(5, 0, null, null, null, null)
    raw.prepare('insert into move_ids (id, type_id) values (?, ?)').run(7, 5)
    raw.close()
    return dir
  }
  const move = async (dir: string, release: readonly MigrationSet[] = sets) => {
    const schema = `t_move_${crypto.randomBytes(5).toString('hex')}`
    schemas.push(schema)
    const target = await openDatabase({ databaseUrl: `${PG_URL}?schema=${schema}`, dataDir: tmp })
    const to = createLocalBlobStore(path.join(tmp, `${schema}-blobs`))
    const lines: string[] = []
    try {
      const r = await moveSqliteToPostgres({
        fromDataDir: dir,
        fromBlobRoot: path.join(dir, 'blobs'),
        target,
        targetBlobs: to,
        sets: release,
        blobColumns: BLOB_COLUMNS,
        folder: { dataDir: path.join(tmp, `${schema}-data`), tls: 'self-signed', backupDir: null },
        log: (l) => lines.push(l),
      }).catch((e: Error) => e)
      return { r, lines, schema }
    } finally {
      await target.close()
      await to.close()
    }
  }

  it('converts each value by the target column type and continues the sequences', async () => {
    const { r, lines, schema } = await move(await source('good', '{"a":[1,"x"],"b":null}'))
    if (r instanceof Error) throw r
    assert.equal(r.sequences, 2)
    assert.ok(lines.includes('  move_types: 2 rows') && lines.includes('  move_ids: 1 row'), lines.join('\n'))
    const rows = await pgQuery<Record<string, unknown>>(`select id, flag, doc, raw, at, big::text as big from ${schema}.move_types order by id`)
    assert.deepEqual(rows, [
      { id: 1, flag: true, doc: { a: [1, 'x'], b: null }, raw: Buffer.from([0, 255, 10]), at: new Date(1_700_000_000_123), big: '9007199254740993' },
      { id: 5, flag: false, doc: null, raw: null, at: null, big: null },
    ])
    // the next ids follow the moved ones
    assert.deepEqual(await pgQuery(`insert into ${schema}.move_types (flag) values (true) returning id`), [{ id: 6 }])
    assert.deepEqual(await pgQuery(`insert into ${schema}.move_ids (type_id) values (6) returning id`), [{ id: 8 }])
  })

  it('refuses a value the target column cannot take, naming it, and commits nothing', async () => {
    const { r, schema } = await move(await source('bad', 'not json'))
    assert.ok(r instanceof MoveError)
    assert.equal(r.message, 'move_types.doc: the value "not json" is not JSON (the target column is jsonb)')
    for (const t of ['users', 'move_types', 'move_ids']) assert.deepEqual(await pgQuery(`select count(*)::int as n from ${schema}.${t}`), [{ n: 0 }], t)

    // a source migrated by a release that knows more: refused before the target is touched
    const newer = await move(await source('newer', '{}'), FEATURE_TABLES)
    assert.ok(newer.r instanceof MoveError)
    assert.match(newer.r.message, /svc\.db ran migrations this release does not know \(9990-move-test-types\): move it with that release or a later one$/)
    assert.deepEqual(await pgQuery('select 1 from information_schema.tables where table_schema = $1', [newer.schema]), [])
  })
})
