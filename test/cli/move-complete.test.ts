import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { referencedDigests } from '../../src/cli/backup.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'
import { dropSchema, needs, PG_URL, pgQuery, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, uploadFile } from '../support/hosting.js'
import { deploySite } from '../support/deploys.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js'
import { runCli } from './run.js'

// svc move beyond the rows (bin/svc, from dist/): a move that fails midway (a row PostgreSQL's
// foreign key refuses) leaves the blobs it copied, says so, and the same command run again
// after the fix completes, skipping them; --dry-run reports the rows, blobs, bytes and files
// and writes nothing anywhere; the self-signed certificate goes into the target's DATA_DIR and
// the rest of the data folder (a pre-migration copy, a file of the operator's) is named; a
// target store or database that goes away midway is named, and the move resumes once it is back.

const sha = (b: Buffer | string) => crypto.createHash('sha256').update(b).digest('hex')

/** The source's tables (Kysely's bookkeeping aside) and their row counts. */
function sourceCounts(dir: string): Map<string, number> {
  const db = new SQLite(path.join(dir, 'svc.db'), { readonly: true })
  try {
    const names = (
      db.prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite\\_%' escape '\\' order by name`).all() as Array<{
        name: string
      }>
    )
      .map((r) => r.name)
      .filter((n) => !n.startsWith('kysely_'))
    return new Map(names.map((n) => [n, (db.prepare(`select count(*) as n from "${n}"`).get() as { n: number }).n]))
  } finally {
    db.close()
  }
}

/** Every referenced blob of the source with its size. */
function sourceBlobs(dir: string): Map<string, number> {
  const db = new SQLite(path.join(dir, 'svc.db'), { readonly: true })
  try {
    const digests = new Set(referencedDigests(db, BLOB_COLUMNS).map((d) => d.digest))
    return new Map([...digests].map((d) => [d, fs.statSync(path.join(dir, 'blobs', d.slice(0, 2), d)).size]))
  } finally {
    db.close()
  }
}

/**
 * A data folder as a comparable value: every file but SQLite's own (whose bytes a checkpoint
 * may rewrite) by its hash, and every table's rows.
 */
function folderState(dir: string): { files: Record<string, string>; rows: Record<string, string> } {
  const files: Record<string, string> = {}
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const rel = path.relative(dir, path.join(e.parentPath, e.name))
    if (/^svc\.db(-wal|-shm)?$/.test(rel)) continue
    files[rel] = e.isFile() ? sha(fs.readFileSync(path.join(dir, rel))) : 'folder'
  }
  const db = new SQLite(path.join(dir, 'svc.db'), { readonly: true })
  try {
    const rows: Record<string, string> = {}
    for (const t of sourceCounts(dir).keys())
      rows[t] = sha(
        JSON.stringify(db.prepare(`select * from "${t}" order by rowid`).raw(true).all(), (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('hex') : v)),
      )
    return { files, rows }
  } finally {
    db.close()
  }
}

describe('svc move: a failed move runs again, --dry-run, the rest of the data folder [sqlite -> postgres]', needs('postgres'), () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-move-complete-'))
  const servers: TestServer[] = []
  const schemas: string[] = []
  let s3: TestS3 | null = null
  /** The stopped source instance's data folder. */
  let source = ''
  let username = ''
  const v1 = { 'index.html': HTML('v1'), 'app.css': 'body{color:red}' }
  after(async () => {
    for (const s of servers) await s.close().catch(() => {})
    for (const n of schemas) await dropSchema(n)
    await s3?.close()
    if (source !== '') fs.rmSync(source, { recursive: true, force: true })
    fs.rmSync(tmp, { recursive: true, force: true })
  })
  const newSchema = () => {
    const n = `t_move_${crypto.randomBytes(5).toString('hex')}`
    schemas.push(n)
    return n
  }
  const schemaExists = async (schema: string) => (await pgQuery('select 1 from pg_namespace where nspname = $1', [schema])).length > 0

  before(async () => {
    const a = await startServer({ engine: 'sqlite', keepData: true, env: { RATE_LIMITS: HIGH_LIMITS } })
    source = a.dataDir
    try {
      const alice = await a.user()
      username = alice.username
      assert.equal((await deploySite(a, alice.key, 'site', v1)).res.status, 201)
      assert.equal((await deploySite(a, alice.key, 'site', { ...v1, 'index.html': HTML('v2') })).res.status, 201)
      assert.equal((await uploadFile(a, { key: alice.key }, 'page.html', HTML('page'))).status, 200)
      assert.equal((await a.post('/api/domains', { key: alice.key, json: { domain: 'moved.example.com', project: 'site' } })).status, 200)
    } finally {
      await a.close()
    }
    // the domain verified (its DNS check is not the subject here); a copy taken before a
    // migration, and a file of the operator's, beside the database
    const raw = new SQLite(path.join(source, 'svc.db'))
    raw.prepare('update domains set verified_at = ?').run(Date.now())
    fs.mkdirSync(path.join(source, 'backups', 'pre-migrate-2026-12-01T00-00-00-000Z'), { recursive: true })
    await raw.backup(path.join(source, 'backups', 'pre-migrate-2026-12-01T00-00-00-000Z', 'svc.db'))
    raw.close()
    fs.writeFileSync(path.join(source, 'notes.txt'), 'the operator notes\n')
  })

  it('--dry-run reports the rows per table, the blobs and bytes and the files, and writes nothing', async () => {
    const schema = newSchema()
    const data = path.join(tmp, 'dry-data')
    const blobs = path.join(tmp, 'dry-blobs')
    const env = { DATABASE_URL: `${PG_URL}?schema=${schema}`, STORAGE_URL: `file://${blobs}`, DATA_DIR: data }
    const before = folderState(source)
    const counts = sourceCounts(source)
    const sizes = sourceBlobs(source)
    const bytes = [...sizes.values()].reduce((n, s) => n + s, 0)
    assert.ok(sizes.size >= 3, String(sizes.size))

    const r = await runCli(['move', '--from-data-dir', source, '--dry-run'], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.match(
      r.stdout,
      /^dry run \(nothing is written\): would move .*svc\.db into postgres:\/\/postgres@127\.0\.0\.1:5432\/test \(schema t_move_\w+\), blobs into /,
    )
    assert.match(r.stdout, /^target: a new schema; the move would create it and run \d+ migrations$/m)
    for (const [t, n] of counts) assert.match(r.stdout, new RegExp(`^ {2}${t}: ${n} rows?$`, 'm'), t)
    assert.match(
      r.stdout,
      new RegExp(`^blobs: ${sizes.size} referenced \\(${bytes} bytes\\), ${sizes.size} to copy \\(${bytes} bytes\\), 0 already in the target$`, 'm'),
    )
    assert.match(r.stdout, new RegExp(`^ {2}tls-cert\\.pem, tls-key\\.pem \\(the self-signed certificate\\): would be copied into DATA_DIR ${data}$`, 'm'))
    assert.match(r.stdout, /^ {2}backups\/ \(1 copy of svc\.db taken before migrations\): would not move; they restore into a SQLite data folder only/m)
    assert.match(r.stdout, /^ {2}notes\.txt: not the service's, would not move: copy it by hand/m)
    assert.match(r.stdout, /^backups made by svc backup: would not move; they restore into a SQLite data folder only/m)
    assert.match(r.stdout, /^custom domains: 1 verified, would move with the rows; their certificates are the TLS proxy's/m)
    const rows = [...counts.values()].reduce((n, c) => n + c, 0)
    assert.match(
      r.stdout,
      new RegExp(`^would move: ${counts.size} tables, ${rows} rows, ${sizes.size} blobs \\(${bytes} bytes\\); run it again without --dry-run to move$`, 'm'),
    )

    // nothing written: the source as it was, no schema, no blob folder, no DATA_DIR
    assert.deepEqual(folderState(source), before)
    assert.equal(await schemaExists(schema), false)
    assert.equal(fs.existsSync(blobs), false)
    assert.equal(fs.existsSync(data), false)

    // a blob missing from the source: the dry run names what the move would refuse, exit 1
    const broken = path.join(tmp, 'dry-broken')
    fs.cpSync(source, broken, { recursive: true })
    const lost = [...sizes.keys()][0]
    fs.rmSync(path.join(broken, 'blobs', lost.slice(0, 2), lost))
    const refused = await runCli(['move', '--from-data-dir', broken, '--dry-run'], { env })
    assert.equal(refused.code, 1, refused.stderr)
    assert.match(
      refused.stdout,
      new RegExp(
        `^blobs: ${sizes.size} referenced \\(\\d+ bytes\\), ${sizes.size - 1} to copy \\(\\d+ bytes\\), 0 already in the target, 1 that cannot move$`,
        'm',
      ),
    )
    assert.match(
      refused.stderr,
      new RegExp(`^error: dry run: the move would be refused: blob ${lost} \\(\\w+\\.digest\\) is missing from the source's blobs; nothing was written\\n$`),
    )
    assert.equal(await schemaExists(schema), false)
    assert.equal(fs.existsSync(blobs), false)

    // the new instances behind a proxy serve its certificate: the self-signed one stays
    const proxied = await runCli(['move', '--from-data-dir', source, '--dry-run'], { env: { ...env, TRUST_PROXY: '1' } })
    assert.equal(proxied.code, 0, proxied.stderr)
    assert.match(
      proxied.stdout,
      /^ {2}tls-cert\.pem, tls-key\.pem \(the self-signed certificate\): not copied, the new instances' settings serve the proxy's certificate \(TRUST_PROXY=1\)$/m,
    )
    assert.equal(await schemaExists(schema), false)
  })

  it('a move that fails midway keeps the blobs it copied, says so, and the same command completes it once fixed', { timeout: 240_000 }, async () => {
    s3 = await startS3()
    // a row PostgreSQL's foreign key refuses (SQLite's was off when it was written): the move
    // fails after the blobs, on the rows
    const dir = path.join(tmp, 'orphan')
    fs.cpSync(source, dir, { recursive: true })
    const raw = new SQLite(path.join(dir, 'svc.db'))
    raw.pragma('foreign_keys = OFF')
    raw.exec(`create temp table ghost as select * from domains limit 1;
      update ghost set id = 'ghost-domain', user_id = 'no-such-user', name = 'ghost.example.com', verified_at = null;
      insert into domains select * from ghost`)
    raw.close()
    const sizes = sourceBlobs(dir)
    const n = sizes.size
    const schema = newSchema()
    const storageUrl = s3.storageUrl()
    const data = path.join(tmp, 'target-data')
    const env = { DATABASE_URL: `${PG_URL}?schema=${schema}`, STORAGE_URL: storageUrl, DATA_DIR: data }

    const failed = await runCli(['move', '--from-data-dir', dir], { env, timeoutMs: 120_000 })
    assert.equal(failed.code, 1, failed.stderr)
    assert.match(
      failed.stderr,
      new RegExp(
        `^error: the move failed: .*violates foreign key constraint.*; no row was committed; the ${n} blobs copied so far stay in the target store: run the same command again once fixed, it keeps them and copies the rest \\(to give up the move instead, svc sweep with the target's settings deletes them an hour after the copy\\)\\n$`,
      ),
    )
    assert.match(failed.stdout, new RegExp(`^blobs: ${n} referenced, ${n} copied \\(\\d+ bytes\\), 0 already in the target; each digest verified$`, 'm'))
    for (const t of ['users', 'deploys', 'domains']) assert.deepEqual(await pgQuery(`select count(*)::int as n from ${schema}.${t}`), [{ n: 0 }], t)
    // a failed move copies no certificate
    assert.equal(fs.existsSync(path.join(data, 'tls-cert.pem')), false)

    // the dry run now finds the target migrated and empty, and every blob in it
    const dry = await runCli(['move', '--from-data-dir', dir, '--dry-run'], { env })
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stdout, /^target: empty; the move would run 0 migrations$/m)
    assert.match(dry.stdout, new RegExp(`^blobs: ${n} referenced \\(\\d+ bytes\\), 0 to copy \\(0 bytes\\), ${n} already in the target$`, 'm'))

    // the operator removes the row and runs the same command again
    const fix = new SQLite(path.join(dir, 'svc.db'))
    fix.prepare(`delete from domains where id = 'ghost-domain'`).run()
    fix.close()
    const again = await runCli(['move', '--from-data-dir', dir], { env, timeoutMs: 120_000 })
    assert.equal(again.code, 0, again.stderr)
    assert.match(again.stdout, new RegExp(`^blobs: ${n} referenced, 0 copied \\(0 bytes\\), ${n} already in the target; each digest verified$`, 'm'))
    assert.match(again.stdout, /^verified and committed: \d+ tables, \d+ rows \(each table's count matches the source\)/m)

    // complete: each table holds the source's rows, the bucket exactly the referenced blobs,
    // and an instance on the target serves the same bytes
    for (const [t, c] of sourceCounts(dir)) assert.deepEqual(await pgQuery(`select count(*)::int as n from ${schema}.${t}`), [{ n: c }], t)
    const b = await startServer({ engine: 'postgres', pgSchema: schema, env: { RATE_LIMITS: HIGH_LIMITS, STORAGE_URL: storageUrl } })
    servers.push(b)
    const inBucket: string[] = []
    for await (const x of b.deps.blobs.list()) inBucket.push(x.digest)
    assert.deepEqual(inBucket.sort(), [...sizes.keys()].sort())
    assert.equal((await b.get(`/${username}/site/app.css`)).text, v1['app.css'])
    assert.equal((await b.get(`/${username}/page.html`)).text, HTML('page'))

    // the rest of the data folder: the certificate into DATA_DIR (the key its owner's only),
    // the rest named
    for (const f of ['tls-cert.pem', 'tls-key.pem']) assert.ok(fs.readFileSync(path.join(data, f)).equals(fs.readFileSync(path.join(dir, f))), f)
    assert.equal(fs.statSync(path.join(data, 'tls-key.pem')).mode & 0o777, 0o600)
    assert.match(again.stdout, new RegExp(`^ {2}tls-cert\\.pem, tls-key\\.pem \\(the self-signed certificate\\): copied into DATA_DIR ${data}; `, 'm'))
    assert.match(again.stdout, /^ {2}backups\/ \(1 copy of svc\.db taken before migrations\): not moved; they restore into a SQLite data folder only/m)
    assert.match(again.stdout, /^ {2}notes\.txt: not the service's, not moved/m)
    assert.match(again.stdout, /^custom domains: 1 verified, moved with the rows/m)
  })

  it('a target that goes away midway is named, the source stays as it was, and the same command completes once it is back', { timeout: 240_000 }, async () => {
    s3 ??= await startS3()
    const dir = path.join(tmp, 'cut-off')
    fs.cpSync(source, dir, { recursive: true })
    const before = folderState(dir)
    const sizes = sourceBlobs(dir)
    const n = sizes.size
    assert.ok(n >= 3, String(n))
    const schema = newSchema()
    // the bucket and the database each behind a relay that the test cuts: the bucket's at the
    // second upload (one blob stored, the next one in flight), the database's at the first
    // table the move reports (its transaction open, rows sent)
    let puts = 0
    let cutStore = true
    const store: TcpProxy = await startTcpProxy(Number(new URL(s3.endpoint).port), '127.0.0.1', {
      onClientData: (chunk) => {
        if (chunk.subarray(0, 4).toString() === 'PUT ' && ++puts === 2 && cutStore) void store.cut()
      },
    })
    const db = await startTcpProxy(Number(new URL(PG_URL).port || 5432))
    const relays = [store, db]
    try {
      const target = new URL(PG_URL)
      target.port = String(db.port)
      const shownDb = `postgres://${target.username}@127.0.0.1:${db.port}${target.pathname} (schema ${schema})`
      target.searchParams.set('schema', schema)
      const bucket = s3.storageUrl(undefined, `http://127.0.0.1:${store.port}`)
      const data = path.join(tmp, 'cut-data')
      const env = { DATABASE_URL: target.toString(), STORAGE_URL: bucket, DATA_DIR: data }
      const unchanged = async (what: string) => {
        assert.deepEqual(folderState(dir), before, `${what}: the source as it was`)
        for (const t of ['users', 'deploys', 'kv_entries'])
          assert.deepEqual(await pgQuery(`select count(*)::int as n from ${schema}.${t}`), [{ n: 0 }], `${what}: ${t}`)
        assert.equal(fs.existsSync(path.join(data, 'tls-cert.pem')), false, `${what}: no certificate copied`)
      }

      // 1. the bucket goes away after one blob
      const noStore = await runCli(['move', '--from-data-dir', dir], { env, timeoutMs: 120_000 })
      assert.equal(noStore.code, 1, noStore.stderr)
      assert.equal(puts, 2)
      assert.match(
        noStore.stderr,
        new RegExp(
          `^error: the move failed: the target blob store s3://svc-test/\\w+ failed \\(.+\\); no row was committed; the 1 blob copied so far stays in the target store: run the same command again once fixed, it keeps it and copies the rest`,
        ),
      )
      assert.doesNotMatch(noStore.stderr, /S3RVER|secretAccessKey/, 'no credential in the message')
      await unchanged('the bucket cut')

      // 2. the bucket is back; the database goes away while the rows are copied
      cutStore = false
      await store.restore()
      let cutAt = ''
      const noDb = await runCli(['move', '--from-data-dir', dir], {
        env,
        timeoutMs: 120_000,
        onStdoutLine: (line) => {
          if (cutAt === '' && /^ {2}\w+: \d+ rows?$/.test(line)) {
            cutAt = line
            void db.cut()
          }
        },
      })
      assert.equal(noDb.code, 1, noDb.stderr)
      assert.notEqual(cutAt, '', noDb.stdout)
      assert.match(noDb.stdout, new RegExp(`^blobs: ${n} referenced, ${n - 1} copied \\(\\d+ bytes\\), 1 already in the target; each digest verified$`, 'm'))
      assert.doesNotMatch(noDb.stdout, /^verified and committed/m)
      // pg's words depend on where the cut finds the connection (a query in flight, or between two)
      const esc = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      assert.match(
        noDb.stderr,
        new RegExp(
          `^error: the move failed: the target database ${esc(shownDb)} cannot be reached \\((Connection terminated unexpectedly|Client has encountered a connection error and is not queryable)\\); no row was committed; the ${n} blobs copied so far stay in the target store: run the same command again once fixed, it keeps them and copies the rest \\(to give up the move instead, svc sweep with the target's settings deletes them an hour after the copy\\)\\n$`,
        ),
      )
      await unchanged('the database cut')

      // 3. both back: the same command completes, every blob kept
      await db.restore()
      const done = await runCli(['move', '--from-data-dir', dir], { env, timeoutMs: 120_000 })
      assert.equal(done.code, 0, done.stderr)
      assert.match(done.stdout, new RegExp(`^blobs: ${n} referenced, 0 copied \\(0 bytes\\), ${n} already in the target; each digest verified$`, 'm'))
      assert.match(done.stdout, /^verified and committed: \d+ tables, \d+ rows \(each table's count matches the source\)/m)
      for (const [t, c] of sourceCounts(dir)) assert.deepEqual(await pgQuery(`select count(*)::int as n from ${schema}.${t}`), [{ n: c }], t)
      assert.deepEqual(folderState(dir).rows, before.rows, 'the source rows as they were')
      const b = await startServer({
        engine: 'postgres',
        pgSchema: schema,
        env: { RATE_LIMITS: HIGH_LIMITS, STORAGE_URL: s3.storageUrl(new URL(bucket).pathname.slice(1)) },
      })
      servers.push(b)
      const inBucket: string[] = []
      for await (const x of b.deps.blobs.list()) inBucket.push(x.digest)
      assert.deepEqual(inBucket.sort(), [...sizes.keys()].sort())
      assert.equal((await b.get(`/${username}/site/app.css`)).text, v1['app.css'])
    } finally {
      for (const r of relays) await r.close()
    }
  })
})
