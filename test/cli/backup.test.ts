import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import SQLite from 'better-sqlite3'
import { S3Client, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, DeleteObjectCommand } from '@aws-sdk/client-s3'
import { startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { S3_ACCESS_KEY, S3_BUCKET, S3_SECRET_KEY, startS3, type TestS3 } from '../support/s3.js'
import { runCli } from './run.js'
import { spawnSync } from 'node:child_process'
import { restoreSqlite } from '../../src/cli/backup.js'
import { folderTarget } from '../../src/cli/snapshot-target.js'
import { allMigrations } from '../../src/db/migrate.js'
import { BLOB_COLUMNS, FEATURE_TABLES } from '../../src/features/tables.js'

type Write = { kind: 'kv'; key: string; value: unknown } | { kind: 'file'; name: string; body: string }

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex')

/** Every blob file under a backup's blobs/ folder: digest -> path. */
function blobFiles(root: string): Map<string, string> {
  const m = new Map<string, string>()
  if (!fs.existsSync(root)) return m
  for (const e of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (e.isFile() && /^[0-9a-f]{64}$/.test(e.name)) m.set(e.name, path.join(e.parentPath, e.name))
  }
  return m
}

const flipByte = (file: string, at: number) => {
  const b = fs.readFileSync(file)
  b[at] ^= 0x01
  fs.writeFileSync(file, b)
}

describe('svc backup and restore [sqlite]', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-backup-test-'))
  const servers: TestServer[] = []
  let s3: TestS3 | null = null
  after(async () => {
    for (const s of servers) await s.close()
    await s3?.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })
  // the CLI child reads its configuration from the environment, like `svc serve`
  const cliEnv = (dataDir: string) => ({ DATA_DIR: dataDir, DATABASE_URL: undefined, STORAGE_URL: undefined })

  it('snapshots a live server under writes; restore brings back every acknowledged write; tampering is refused; later backups copy only new blobs', async (t) => {
    const s = await startServer({ engine: 'sqlite', env: { RATE_LIMITS: HIGH_LIMITS } })
    servers.push(s)
    const alice = await s.user()
    const dest = path.join(tmp, 'backups')

    // a writer loop: KV stores and single-file uploads, each recorded once acknowledged
    const acked: Write[] = []
    let stop = false
    let n = 0
    const writer = (async () => {
      while (!stop) {
        const i = n++
        if (i % 2 === 0) {
          const value = { i, pad: crypto.randomBytes(16).toString('hex') }
          const r = await s.post('/svc_api/data/store', { key: alice.key, json: { key: `k${i}`, value } })
          assert.equal(r.status, 200, r.text)
          acked.push({ kind: 'kv', key: `k${i}`, value })
        } else {
          const body = `<!doctype html><title>${i}</title><p>${crypto.randomBytes(24).toString('hex')}</p>`
          const r = await uploadFile(s, { key: alice.key }, `f${i}.html`, body)
          assert.equal(r.status, 200, r.text)
          acked.push({ kind: 'file', name: `f${i}.html`, body })
        }
      }
    })()
    while (acked.length < 20) await new Promise((r) => setTimeout(r, 20))

    // the writes acknowledged before the backup process starts must all be in its snapshot
    const beforeBackup = acked.slice()
    const b1 = await runCli(['backup', dest], { env: cliEnv(s.dataDir) })
    assert.equal(b1.code, 0, b1.stderr)
    const during = acked.length - beforeBackup.length
    const snap1 = /^snapshot (\S+):/.exec(b1.stdout)?.[1]
    assert.ok(snap1, b1.stdout)
    const m1 = JSON.parse(fs.readFileSync(path.join(snap1, 'manifest.json'), 'utf8'))
    assert.equal(m1.format, 1)
    assert.equal(m1.service_version, '0.1.0')
    assert.ok(m1.migrations.length > 0)
    assert.equal(m1.database.sha256, sha(fs.readFileSync(path.join(snap1, 'svc.db'))))
    // the copy holds the database's secrets: never readable by other users of the machine
    assert.equal(fs.statSync(path.join(snap1, 'svc.db')).mode & 0o777, 0o640)
    // the first backup copies every blob it references
    const copied1 = Number(/\((\d+) copied/.exec(b1.stdout)?.[1])
    assert.equal(copied1, m1.blobs.length, b1.stdout)
    assert.ok(m1.blobs.length >= beforeBackup.filter((w) => w.kind === 'file').length)

    // the backup's blobs verify: each file hashes to its name and has the manifest's size
    const files1 = blobFiles(path.join(dest, 'blobs'))
    for (const b of m1.blobs) {
      const bytes = fs.readFileSync(files1.get(b.digest)!)
      assert.equal(sha(bytes), b.digest)
      assert.equal(bytes.length, b.size)
    }

    // more writes, then a second backup into the same DIR: only the blobs new since are copied
    const target = acked.length + 10
    while (acked.length < target) await new Promise((r) => setTimeout(r, 20))
    stop = true
    await writer
    const blobsBefore2 = new Set(blobFiles(path.join(dest, 'blobs')).keys())
    const b2 = await runCli(['backup', dest], { env: cliEnv(s.dataDir) })
    assert.equal(b2.code, 0, b2.stderr)
    const snap2 = /^snapshot (\S+):/.exec(b2.stdout)![1]
    const m2 = JSON.parse(fs.readFileSync(path.join(snap2, 'manifest.json'), 'utf8'))
    const fresh = m2.blobs.filter((b: { digest: string }) => !blobsBefore2.has(b.digest)).length
    assert.ok(fresh > 0)
    assert.match(b2.stdout, new RegExp(`\\(${fresh} copied, \\d+ bytes; ${m2.blobs.length - fresh} already in the backup\\)`))

    // restore the first snapshot into a new data dir and start a second server from it
    const restored = path.join(tmp, 'restored')
    const r = await runCli(['restore', snap1, '--data-dir', restored], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, new RegExp(`${m1.blobs.length} blobs verified`))
    // a new folder made private, as svc serve makes one (its blobs were written first)
    assert.equal(fs.statSync(restored).mode & 0o777, 0o700, "the restored data folder is its owner's only")
    const s2 = await startServer({ engine: 'sqlite', dataDir: restored, keepData: true, env: { RATE_LIMITS: HIGH_LIMITS } })
    servers.push(s2)
    for (const w of beforeBackup) {
      if (w.kind === 'kv') {
        const g = await s2.get(`/svc_api/data/get?key=${w.key}`, { key: alice.key })
        assert.equal(g.status, 200, `${w.key}: ${g.text}`)
        assert.deepEqual(g.json.data.value, w.value)
      } else {
        const g = await s2.get(`/${alice.username}/${w.name}`)
        assert.equal(g.status, 200, w.name)
        assert.equal(g.text, w.body)
      }
    }
    // every blob the restored database references is in the restored store
    const refs = await s2.deps.db.k.selectFrom('files').select('digest').execute()
    const restoredBlobs = blobFiles(path.join(restored, 'blobs'))
    for (const { digest } of refs) assert.ok(restoredBlobs.has(digest), digest)
    t.diagnostic(`${beforeBackup.length} writes acknowledged before the backup, ${during} while it ran; ${m1.blobs.length} blobs in the snapshot`)

    // restoring over an existing database is refused without --force
    const again = await runCli(['restore', snap1, '--data-dir', restored], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(again.code, 1)
    assert.match(again.stderr, /svc\.db exists.*--force/)
    // and with --force while a server runs on it (s2): it would keep its old, unlinked database
    // and lose every later write; nothing is touched. (Checked by stat only: a descriptor of
    // svc.db opened and closed in this process would drop s2's SQLite locks, POSIX semantics.)
    const liveIno = fs.statSync(path.join(restored, 'svc.db')).ino
    const running = await runCli(['restore', snap2, '--data-dir', restored, '--force'], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(running.code, 1, running.stdout)
    assert.match(running.stderr, /svc\.db is in use \(a running svc serve\?\): stop it/)
    assert.equal(fs.statSync(path.join(restored, 'svc.db')).ino, liveIno, 'svc.db not replaced')
    assert.ok(fs.existsSync(path.join(restored, 'svc.db-wal')), "the running server's WAL is left alone")

    // --force over a data dir whose blobs were damaged: a blob that does not hash to its name
    // is rewritten, in either layout (a damaged legacy copy is replaced and removed)
    const damaged = path.join(tmp, 'damaged')
    const d0 = await runCli(['restore', snap1, '--data-dir', damaged], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(d0.code, 0, d0.stderr)
    const [one, two] = m1.blobs.map((b: { digest: string }) => b.digest) as string[]
    const oneFile = path.join(damaged, 'blobs', one.slice(0, 2), one)
    flipByte(oneFile, 3)
    const twoFile = path.join(damaged, 'blobs', two.slice(0, 2), two)
    const twoLegacy = path.join(damaged, 'blobs', two.slice(0, 2), two.slice(2, 4), two)
    fs.mkdirSync(path.dirname(twoLegacy), { recursive: true })
    fs.renameSync(twoFile, twoLegacy)
    flipByte(twoLegacy, 3)
    const forced = await runCli(['restore', snap1, '--data-dir', damaged, '--force'], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(forced.code, 0, forced.stderr)
    assert.match(forced.stdout, /\(2 written\)/)
    assert.equal(sha(fs.readFileSync(oneFile)), one)
    assert.equal(sha(fs.readFileSync(twoFile)), two)
    assert.equal(fs.existsSync(twoLegacy), false, 'the damaged legacy copy is removed')

    // a tampered blob: one byte changed; restore names it and writes nothing
    const victim = m1.blobs[0].digest as string
    const victimFile = blobFiles(path.join(dest, 'blobs')).get(victim)!
    flipByte(victimFile, 5)
    const bad = path.join(tmp, 'bad-blob')
    const t1 = await runCli(['restore', snap1, '--data-dir', bad], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(t1.code, 1)
    assert.match(t1.stderr, new RegExp(`blob ${victim}: content does not match its name`))
    assert.equal(fs.existsSync(bad), false, 'nothing written')
    flipByte(victimFile, 5)

    // a tampered database file
    flipByte(path.join(snap1, 'svc.db'), 200)
    const bad2 = path.join(tmp, 'bad-db')
    const t2 = await runCli(['restore', snap1, '--data-dir', bad2], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(t2.code, 1)
    assert.match(t2.stderr, /svc\.db: sha256 [0-9a-f]{64} .*does not match the manifest/)
    assert.equal(fs.existsSync(bad2), false, 'nothing written')
    flipByte(path.join(snap1, 'svc.db'), 200)

    // a manifest that leaves out a blob the database references (still valid JSON)
    const manifestFile = path.join(snap1, 'manifest.json')
    const original = fs.readFileSync(manifestFile, 'utf8')
    const short = JSON.parse(original)
    const dropped = short.blobs.shift().digest as string
    fs.writeFileSync(manifestFile, JSON.stringify(short))
    const bad3 = path.join(tmp, 'bad-manifest')
    const t3 = await runCli(['restore', snap1, '--data-dir', bad3], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(t3.code, 1)
    assert.match(t3.stderr, new RegExp(`blob ${dropped}: referenced by svc\\.db \\(\\w+\\.\\w+\\) but not in the manifest`))
    assert.equal(fs.existsSync(bad3), false, 'nothing written')
    fs.writeFileSync(manifestFile, original)

    // retention: delete a file on the live server, back up with --keep 1; the older snapshots
    // go, and so does the blob only they referenced
    const gone = beforeBackup.find((w) => w.kind === 'file')!
    const goneDigest = (await s.deps.db.k.selectFrom('files').select('digest').where('file_name', '=', gone.name).executeTakeFirstOrThrow()).digest
    const del = await s.request('DELETE', `/svc_api/files/${gone.name}`, { key: alice.key })
    assert.equal(del.status, 200, del.text)
    const b3 = await runCli(['backup', dest, '--keep', '1'], { env: cliEnv(s.dataDir) })
    assert.equal(b3.code, 0, b3.stderr)
    assert.match(b3.stdout, /\(0 copied, 0 bytes;/)
    assert.match(b3.stdout, /retention: removed 2 snapshots and 1 blobs/)
    const left = fs.readdirSync(dest).filter((x) => !['blobs', '.backup.lock'].includes(x))
    assert.equal(left.length, 1)
    assert.equal(blobFiles(path.join(dest, 'blobs')).has(goneDigest), false)
  })

  it(
    'backs up to a bucket (s3://), incrementally; restore from it verifies, refuses tampering, and the restored instance serves',
    { timeout: 180_000 },
    async (t) => {
      s3 = await startS3()
      const s = await startServer({ engine: 'sqlite', env: { RATE_LIMITS: HIGH_LIMITS } })
      servers.push(s)
      const alice = await s.user({ vip: true })
      const files = new Map<string, string>()
      for (let i = 0; i < 4; i++) files.set(`p${i}.html`, `<!doctype html><title>${i}</title><p>${crypto.randomBytes(16).toString('hex')}</p>`)
      // one blob above 5 MiB: it goes up through a multipart upload and a server-side copy
      files.set('big.html', `<!doctype html><pre>${crypto.randomBytes(3 * 1024 * 1024 + 100).toString('hex')}</pre>`)
      for (const [name, body] of files) assert.equal((await uploadFile(s, { key: alice.key }, name, body)).status, 200, name)
      const kv = { hello: crypto.randomBytes(8).toString('hex') }
      assert.equal((await s.post('/svc_api/data/store', { key: alice.key, json: { key: 'k', value: kv } })).status, 200)

      // the destination takes STORAGE_URL's settings; here the credentials are in the URL
      const prefix = `bk-${crypto.randomBytes(4).toString('hex')}`
      const dest = s3.storageUrl(prefix)
      const settings = new URL(dest.replace(/^s3:/, 'http:')).searchParams
      // (the notice about later SDK releases is silenced as storage/s3.ts does)
      process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
      const client = new S3Client({
        region: 'us-east-1',
        endpoint: s3.endpoint,
        forcePathStyle: true,
        credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY },
      })
      t.after(() => client.destroy())
      const object = async (key: string) =>
        Buffer.from(await (await client.send(new GetObjectCommand({ Bucket: S3_BUCKET, Key: key }))).Body!.transformToByteArray())
      const keys = async (p: string) => {
        const r = await client.send(new ListObjectsV2Command({ Bucket: S3_BUCKET, Prefix: p }))
        return (r.Contents ?? []).map((o) => o.Key!).sort()
      }
      const blobKey = (d: string) => `${prefix}/blobs/${d.slice(0, 2)}/${d.slice(2, 4)}/${d}`

      const b1 = await runCli(['backup', dest], { env: cliEnv(s.dataDir) })
      assert.equal(b1.code, 0, b1.stderr)
      assert.doesNotMatch(b1.stdout + b1.stderr, /S3RVER|secretAccessKey/, 'no credentials printed')
      const snap1 = /^snapshot (\S+):/.exec(b1.stdout)?.[1]
      assert.match(snap1 ?? '', new RegExp(`^s3://${S3_BUCKET}/${prefix}/\\d{4}-\\d{2}-\\d{2}T[\\d-]+Z$`), b1.stdout)
      const name1 = snap1!.split('/').pop()!
      const m1 = JSON.parse((await object(`${prefix}/${name1}/manifest.json`)).toString('utf8'))
      assert.equal(m1.format, 1)
      assert.equal(m1.database.sha256, sha(await object(`${prefix}/${name1}/svc.db`)))
      assert.equal(m1.blobs.length, files.size)
      assert.match(b1.stdout, new RegExp(`\\(${files.size} copied, \\d+ bytes; 0 already in the backup\\)`))
      for (const b of m1.blobs) {
        const bytes = await object(blobKey(b.digest))
        assert.equal(sha(bytes), b.digest)
        assert.equal(bytes.length, b.size)
      }
      assert.ok(
        m1.blobs.some((b: { size: number }) => b.size > 5 * 1024 * 1024),
        'the large blob is in the bucket whole',
      )
      assert.deepEqual(await keys(`${prefix}/blobs/tmp/`), [], 'no temp object left')
      assert.deepEqual(await keys(`${prefix}/.backup.lock`), [], 'the lock is released')

      // a second backup uploads only the blob that is new since
      const newer = `<!doctype html><title>new</title>${crypto.randomBytes(16).toString('hex')}`
      assert.equal((await uploadFile(s, { key: alice.key }, 'new.html', newer)).status, 200)
      const b2 = await runCli(['backup', dest], { env: cliEnv(s.dataDir) })
      assert.equal(b2.code, 0, b2.stderr)
      assert.match(b2.stdout, new RegExp(`\\(1 copied, ${Buffer.byteLength(newer)} bytes; ${files.size} already in the backup\\)`))
      assert.equal((await keys(`${prefix}/blobs/`)).length, files.size + 1)

      // restore the first snapshot into a new data dir, credentials from the environment this
      // time (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, as for STORAGE_URL), and start from it
      const where = `${snap1}?${new URLSearchParams({ endpoint: settings.get('endpoint')!, region: 'us-east-1', forcePathStyle: 'true' })}`
      const s3Env = (dataDir: string) => ({ ...cliEnv(dataDir), AWS_ACCESS_KEY_ID: S3_ACCESS_KEY, AWS_SECRET_ACCESS_KEY: S3_SECRET_KEY })
      const restored = path.join(tmp, 's3-restored')
      const r = await runCli(['restore', where, '--data-dir', restored], { env: s3Env(path.join(tmp, 'unused')) })
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`svc\\.db and ${files.size} blobs verified \\(${files.size} written\\)`))
      const s2 = await startServer({ engine: 'sqlite', dataDir: restored, keepData: true, env: { RATE_LIMITS: HIGH_LIMITS } })
      servers.push(s2)
      for (const [name, body] of files) {
        const g = await s2.get(`/${alice.username}/${name}`)
        assert.equal(g.status, 200, name)
        assert.equal(g.text, body)
      }
      assert.deepEqual((await s2.get('/svc_api/data/get?key=k', { key: alice.key })).json.data.value, kv)
      assert.equal((await s2.get(`/${alice.username}/new.html`)).status, 404, 'the first snapshot predates new.html')

      // tampering: a blob object whose bytes no longer match its name, then the database object
      const victim = m1.blobs[0].digest as string
      const original = await object(blobKey(victim))
      const put = (key: string, body: Buffer) => client.send(new PutObjectCommand({ Bucket: S3_BUCKET, Key: key, Body: body }))
      const flipped = (b: Buffer, at: number) => {
        const c = Buffer.from(b)
        c[at] ^= 0x01
        return c
      }
      await put(blobKey(victim), flipped(original, 5))
      const bad = path.join(tmp, 's3-bad-blob')
      const t1 = await runCli(['restore', where, '--data-dir', bad], { env: s3Env(path.join(tmp, 'unused')) })
      assert.equal(t1.code, 1)
      assert.match(t1.stderr, new RegExp(`does not verify, nothing restored:\\n.*blob ${victim}: content does not match its name`))
      assert.equal(fs.existsSync(bad), false, 'nothing written')
      await put(blobKey(victim), original)
      const dbKey = `${prefix}/${name1}/svc.db`
      const dbBytes = await object(dbKey)
      await put(dbKey, flipped(dbBytes, 200))
      const t2 = await runCli(['restore', where, '--data-dir', bad], { env: s3Env(path.join(tmp, 'unused')) })
      assert.equal(t2.code, 1)
      assert.match(t2.stderr, /svc\.db: sha256 [0-9a-f]{64} .*does not match the manifest/)
      assert.equal(fs.existsSync(bad), false, 'nothing written')
      await put(dbKey, dbBytes)

      // one backup at a time: a lock held by another host is respected and named
      await put(`${prefix}/.backup.lock`, Buffer.from(JSON.stringify({ host: 'elsewhere', pid: 1, started: '2026-01-01T00:00:00.000Z' })))
      const busy = await runCli(['backup', dest], { env: cliEnv(s.dataDir) })
      assert.equal(busy.code, 1)
      assert.match(
        busy.stderr,
        /another backup \(pid 1 on elsewhere, since 2026-01-01T00:00:00\.000Z\) is writing to s3:\/\/.*; if none is, delete .*\.backup\.lock/,
      )
      await client.send(new DeleteObjectCommand({ Bucket: S3_BUCKET, Key: `${prefix}/.backup.lock` }))

      // retention in the bucket: --keep 1 drops the older snapshots and the blob only they listed
      const goneDigest = sha(Buffer.from(files.get('p0.html')!))
      assert.equal((await s.request('DELETE', '/svc_api/files/p0.html', { key: alice.key })).status, 200)
      const b3 = await runCli(['backup', dest, '--keep', '1'], { env: cliEnv(s.dataDir) })
      assert.equal(b3.code, 0, b3.stderr)
      assert.match(b3.stdout, /retention: removed 2 snapshots and 1 blobs/)
      const name3 = /^snapshot \S+\/(\S+):/.exec(b3.stdout)![1]
      const left = (await keys(`${prefix}/`)).filter((k) => !k.startsWith(`${prefix}/blobs/`))
      assert.deepEqual(left, [`${prefix}/${name3}/manifest.json`, `${prefix}/${name3}/svc.db`])
      assert.equal((await keys(blobKey(goneDigest))).length, 0)
    },
  )

  it('refuses a snapshot taken by a newer release, whose migrations this one does not know, writing nothing', async () => {
    const live = path.join(tmp, 'newer-live')
    assert.equal((await runCli(['migrate'], { env: cliEnv(live) })).code, 0)
    const dest = path.join(tmp, 'newer-backups')
    const b = await runCli(['backup', dest], { env: cliEnv(live) })
    assert.equal(b.code, 0, b.stderr)
    const snap = /^snapshot (\S+):/.exec(b.stdout)![1]
    // what a later release's backup holds: one more migration ran, the manifest matching it
    const dbFile = path.join(snap, 'svc.db')
    const db = new SQLite(dbFile)
    db.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('9999-from-the-future', new Date().toISOString())
    db.close()
    const manifestFile = path.join(snap, 'manifest.json')
    const m = JSON.parse(fs.readFileSync(manifestFile, 'utf8'))
    const bytes = fs.readFileSync(dbFile)
    Object.assign(m, { service_version: '99.0.0', migrations: [...m.migrations, '9999-from-the-future'] })
    m.database = { ...m.database, sha256: sha(bytes), size: bytes.length }
    fs.writeFileSync(manifestFile, JSON.stringify(m))

    const into = path.join(tmp, 'newer-restored')
    const r = await runCli(['restore', snap, '--data-dir', into], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(r.code, 1, r.stdout)
    assert.match(r.stderr, /taken by a newer release \(svc 99\.0\.0\): .*\(9999-from-the-future\).*Nothing restored/)
    assert.equal(fs.existsSync(into), false, 'nothing written')
  })

  it('a database a newer release migrated: migrate says so, and MIGRATE_ON_START=0 starts on it', async () => {
    const dir = path.join(tmp, 'newer-db')
    assert.equal((await runCli(['migrate'], { env: cliEnv(dir) })).code, 0)
    const db = new SQLite(path.join(dir, 'svc.db'))
    db.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('9999-from-the-future', new Date().toISOString())
    db.close()
    const m = await runCli(['migrate'], { env: cliEnv(dir) })
    assert.equal(m.code, 1, m.stdout)
    assert.match(m.stderr, /migrated by a newer release \(migration 9999-from-the-future is unknown to this one\).*MIGRATE_ON_START=0/)
    assert.doesNotMatch(m.stderr, /corrupted migrations/)
    // migrations are additive: an instance that does not migrate serves on the newer schema
    const s = await startServer({ engine: 'sqlite', dataDir: dir, keepData: true, env: { MIGRATE_ON_START: '0', RATE_LIMITS: HIGH_LIMITS } })
    servers.push(s)
    assert.equal((await s.get('/readyz')).status, 200)
  })

  it('a --force restore whose copy fails leaves the database it was to replace with its last write', async () => {
    const live = path.join(tmp, 'wal-live')
    assert.equal((await runCli(['migrate'], { env: cliEnv(live) })).code, 0)
    const dest = path.join(tmp, 'wal-backups')
    const b = await runCli(['backup', dest], { env: cliEnv(live) })
    assert.equal(b.code, 0, b.stderr)
    const snap = /^snapshot (\S+):/.exec(b.stdout)![1]
    // the data dir to replace: its last write only in the WAL, left by a process killed before any checkpoint
    const old = path.join(tmp, 'wal-old')
    assert.equal((await runCli(['migrate'], { env: cliEnv(old) })).code, 0)
    const killed = spawnSync(
      process.execPath,
      [
        '-e',
        `const db = require('better-sqlite3')(process.argv[1]); db.pragma('wal_autocheckpoint = 0');
         db.exec("create table marker (v text)"); db.prepare("insert into marker values ('kept')").run();
         process.kill(process.pid, 'SIGKILL')`,
        path.join(old, 'svc.db'),
      ],
      { cwd: process.cwd() },
    )
    assert.equal(killed.signal, 'SIGKILL', String(killed.stderr))
    assert.ok(fs.statSync(path.join(old, 'svc.db-wal')).size > 0)
    // the snapshot's database verifies, then its copy reads other bytes (as a full disk or a
    // changed snapshot would fail it): the restore fails, and the old database keeps the write
    // its WAL held (the in-use check's connection checkpoints it before the WAL is removed)
    const source = folderTarget(path.dirname(snap))
    const changed = path.join(tmp, 'wal-changed.db')
    fs.writeFileSync(changed, 'not the snapshot')
    let reads = 0
    const wrapped = {
      ...source,
      async localDatabase(name: string) {
        const local = (await source.localDatabase(name))!
        return {
          release: () => local.release(),
          get file() {
            return ++reads <= 2 ? local.file : changed
          },
        }
      },
    }
    await assert.rejects(
      restoreSqlite({
        source: wrapped,
        name: path.basename(snap),
        dataDir: old,
        blobRoot: path.join(old, 'blobs'),
        blobColumns: BLOB_COLUMNS,
        knownMigrations: Object.keys(allMigrations(FEATURE_TABLES)),
        force: true,
      }),
      /svc\.db: content does not match/,
    )
    assert.equal(reads, 3, 'the copy read the database a third time')
    const db = new SQLite(path.join(old, 'svc.db'), { readonly: true })
    try {
      assert.deepEqual(db.prepare('select v from marker').all(), [{ v: 'kept' }], 'its last write is still there')
    } finally {
      db.close()
    }
    await source.close()
  })

  // `svc restore` given the folder `svc backup` was given (not one of its snapshots) said
  // `cannot read DIR/manifest.json: ENOENT ...`: it names the snapshots to pick from instead
  it('restore of the backup folder itself names its newest snapshot, writing nothing', async () => {
    const live = path.join(tmp, 'root-live')
    assert.equal((await runCli(['migrate'], { env: cliEnv(live) })).code, 0)
    const dest = path.join(tmp, 'root-backups')
    for (let i = 0; i < 2; i++) assert.equal((await runCli(['backup', dest], { env: cliEnv(live) })).code, 0)
    const snaps = fs
      .readdirSync(dest)
      .filter((n) => n !== 'blobs')
      .sort()
    assert.equal(snaps.length, 2)
    const into = path.join(tmp, 'root-restored')
    const r = await runCli(['restore', dest, '--data-dir', into], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(r.code, 1, r.stdout)
    assert.equal(
      r.stderr,
      `error: ${dest} is a backup folder (the DIR of svc backup), not a snapshot: restore one of its 2 snapshots, the newest being ${path.join(dest, snaps[1])}\n`,
    )
    assert.equal(fs.existsSync(into), false, 'nothing written')
    // the snapshot it names restores into a new folder made private, as svc serve makes one
    const ok = await runCli(['restore', path.join(dest, snaps[1]), '--data-dir', into], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(ok.code, 0, ok.stderr)
  })

  it('restore of a path that does not exist names it and what the command takes, writing nothing', async () => {
    const missing = path.join(tmp, 'no-such-snapshot')
    const into = path.join(tmp, 'missing-restored')
    const r = await runCli(['restore', missing, '--data-dir', into], { env: cliEnv(path.join(tmp, 'unused')) })
    assert.equal(r.code, 1, r.stdout)
    assert.equal(
      r.stderr,
      `error: ${missing} does not exist: svc restore takes one snapshot folder that svc backup made (DIR/<time>, holding manifest.json); nothing was restored\n`,
    )
    assert.equal(fs.existsSync(into), false, 'nothing written')
  })

  // a full disk made `svc backup` print SQLite's bare `database or disk is full` (or a bare
  // `ENOSPC: no space left on device, write` while copying blobs), naming neither the
  // destination nor what was left behind. A small tmpfs needs root.
  it(
    'a backup onto a full disk names the destination and the cause, and leaves no snapshot',
    { skip: process.getuid?.() !== 0 && 'needs root to mount a tmpfs' },
    async (t) => {
      const live = path.join(tmp, 'full-live')
      assert.equal((await runCli(['migrate'], { env: cliEnv(live) })).code, 0)
      const small = path.join(tmp, 'small')
      fs.mkdirSync(small)
      if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', small]).status !== 0) return t.skip('cannot mount a tmpfs here')
      try {
        const dest = path.join(small, 'backups')
        const r = await runCli(['backup', dest], { env: cliEnv(live) })
        assert.equal(r.code, 1, r.stdout)
        assert.equal(r.stdout, '')
        assert.equal(
          r.stderr,
          `error: backup into ${dest} failed: no space left on the device (database or disk is full); the incomplete snapshot was removed\n`,
        )
        assert.deepEqual(fs.readdirSync(dest), [], 'no partial snapshot or lock left')
        // a restore onto it, the same: where, why, and that the database was not written
        const b = await runCli(['backup', path.join(tmp, 'full-snapshots')], { env: cliEnv(live) })
        assert.equal(b.code, 0, b.stderr)
        const snapshot = /^snapshot (\S+):/.exec(b.stdout)?.[1] ?? ''
        const into = path.join(small, 'restored')
        const r2 = await runCli(['restore', snapshot, '--data-dir', into], { env: cliEnv(path.join(tmp, 'unused')) })
        assert.equal(r2.code, 1, r2.stdout)
        assert.equal(
          r2.stderr,
          `error: restore into ${into} failed: no space left on the device (ENOSPC: no space left on device, write); svc.db was not restored\n`,
        )
        assert.equal(fs.existsSync(path.join(into, 'svc.db')), false)
      } finally {
        spawnSync('umount', [small])
      }
    },
  )

  // `svc backup $DATA_DIR` succeeded: the snapshot's blobs went into the live store's own
  // blobs/ (in the layout it still reads and sweeps), doubling it on the same disk, where the
  // sweeper deletes any it finds unreferenced and the snapshot then fails to verify
  it('refuses a destination that is the data folder or inside its blobs, writing nothing there', async () => {
    const live = path.join(tmp, 'self-live')
    assert.equal((await runCli(['migrate'], { env: cliEnv(live) })).code, 0)
    const before = fs.readdirSync(live).sort()
    for (const dest of [live, path.join(live, 'blobs', 'bk')]) {
      const r = await runCli(['backup', dest], { env: cliEnv(live) })
      assert.equal(r.code, 1, r.stdout)
      assert.equal(
        r.stderr,
        `error: ${dest} is inside the data folder ${live} (the folder itself or its blobs/): a snapshot there mixes its blobs with the live ones, which the sweeper deletes; back up to a folder outside it, on another disk\n`,
      )
      assert.deepEqual(fs.readdirSync(live).sort(), before, dest)
    }
    // BACKUP_DIR there is a bad configuration, refused at start (exit 78)
    const r = await runCli(['serve'], { env: { ...cliEnv(live), BACKUP_DIR: live, PORT: '0', HTTP_PORT: '0' } })
    assert.equal(r.code, 78, r.stdout)
    assert.match(r.stderr, /BACKUP_DIR: must be outside DATA_DIR and its blobs\/ \(a snapshot there mixes its blobs with the live ones\)/)
    // a folder beside it, or DATA_DIR/backups (as the snapshots before a migration), is fine
    assert.equal((await runCli(['backup', path.join(live, 'backups')], { env: cliEnv(live) })).code, 0)
  })

  it('refuses PostgreSQL and S3 with a pointer to the documented procedure', async () => {
    const pg = await runCli(['backup', path.join(tmp, 'x')], { env: { DATA_DIR: tmp, DATABASE_URL: 'postgres://127.0.0.1:1/none' } })
    assert.equal(pg.code, 1)
    assert.match(pg.stderr, /SQLite .* only; with PostgreSQL follow the procedure in docs\/operations\/backups\.md/)
    const s3 = await runCli(['backup', path.join(tmp, 'x')], { env: { DATA_DIR: tmp, STORAGE_URL: 's3://bucket/p?endpoint=http://127.0.0.1:1&region=x' } })
    assert.equal(s3.code, 1, s3.stderr)
    assert.match(s3.stderr, /local blob store only; with S3 follow the procedure in docs\/operations\/backups\.md/)
    assert.equal(fs.existsSync(path.join(tmp, 'x')), false)
  })

  it('a restore into --data-dir with PostgreSQL or S3 configured warns that it writes a SQLite folder and leaves them untouched', async () => {
    const live = path.join(tmp, 'pg-live')
    assert.equal((await runCli(['migrate'], { env: cliEnv(live) })).code, 0)
    const dest = path.join(tmp, 'pg-backups')
    assert.equal((await runCli(['backup', dest], { env: cliEnv(live) })).code, 0)
    const snap = path.join(
      dest,
      fs.readdirSync(dest).find((n) => n !== 'blobs')!,
    )
    const doc = 'docs/operations/backups.md ("PostgreSQL and a bucket")'
    const cases: Array<[env: Record<string, string>, names: string, whats: string, without: string]> = [
      [{ DATABASE_URL: 'postgres://127.0.0.1:1/none' }, 'DATABASE_URL is', 'PostgreSQL', 'DATABASE_URL'],
      [
        { DATABASE_URL: 'postgres://127.0.0.1:1/none', STORAGE_URL: 's3://bucket/p?endpoint=http://127.0.0.1:1&region=x' },
        'DATABASE_URL and STORAGE_URL are',
        'PostgreSQL and the bucket',
        'DATABASE_URL or STORAGE_URL',
      ],
    ]
    for (const [i, [env, names, whats, without]] of cases.entries()) {
      const into = path.join(tmp, `pg-restored-${i}`)
      const r = await runCli(['restore', snap, '--data-dir', into], { env: { ...cliEnv(live), ...env } })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(
        r.stderr,
        `warning: ${names} set, but svc restore writes SQLite and local blobs only: it leaves ${whats} untouched and writes a data folder into ${into}, which svc serve uses with DATA_DIR=${into} and without ${without}; to restore ${whats} see ${doc}\n`,
      )
      assert.ok(fs.existsSync(path.join(into, 'svc.db')))
    }
    // without --data-dir it still refuses to act on the configured PostgreSQL instance
    const r = await runCli(['restore', snap], { env: { ...cliEnv(live), DATABASE_URL: 'postgres://127.0.0.1:1/none' } })
    assert.equal(r.code, 1)
    assert.equal(r.stderr, `error: DATABASE_URL is set: restore a SQLite snapshot with --data-dir, or see ${doc}\n`)
  })
})
