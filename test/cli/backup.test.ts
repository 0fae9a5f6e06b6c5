import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { runCli } from './run.js'

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
  after(async () => {
    for (const s of servers) await s.close()
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

  it('refuses PostgreSQL and S3 with a pointer to the documented procedure', async () => {
    const pg = await runCli(['backup', path.join(tmp, 'x')], { env: { DATA_DIR: tmp, DATABASE_URL: 'postgres://127.0.0.1:1/none' } })
    assert.equal(pg.code, 1)
    assert.match(pg.stderr, /SQLite .* only; with PostgreSQL follow the procedure in docs\/operations\/backups\.md/)
    const s3 = await runCli(['backup', path.join(tmp, 'x')], { env: { DATA_DIR: tmp, STORAGE_URL: 's3://bucket/p?endpoint=http://127.0.0.1:1&region=x' } })
    assert.equal(s3.code, 1, s3.stderr)
    assert.match(s3.stderr, /local blob store only; with S3 follow the procedure in docs\/operations\/backups\.md/)
    assert.equal(fs.existsSync(path.join(tmp, 'x')), false)
  })
})
