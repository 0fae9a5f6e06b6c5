import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync } from 'node:child_process'
import { needs, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, uploadFile } from '../support/hosting.js'
import { startS3, type TestS3 } from '../support/s3.js'

// scripts/backup-postgres.sh against the local PostgreSQL and s3rver: pg_dump of the
// instance's schema, then every blob of the bucket copied and verified; a second run copies
// nothing new; the dump is a pg_restore archive of the instance's schema; the blobs go back
// into an empty bucket (copy-blobs.mjs --restore) that an instance then serves.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
// never spawnSync: s3rver answers from this process
const exec = (cmd: string, args: string[], env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const c = spawn(cmd, args, { env: { ...process.env, ...env } })
    let stdout = ''
    let stderr = ''
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    c.on('error', reject)
    c.on('close', (code) => resolve({ code, stdout, stderr }))
  })
const run = (args: string[], env: Record<string, string>) => exec(path.join(root, 'scripts/backup-postgres.sh'), args, env)

describe('scripts/backup-postgres.sh [postgres + s3]', needs('postgres'), () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pgbackup-test-'))
  let s: TestServer | null = null
  let s3: TestS3 | null = null
  after(async () => {
    await s?.close()
    await s3?.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  it('dumps the database, then copies and verifies every blob, incrementally', { timeout: 180_000 }, async () => {
    s3 = await startS3()
    const storageUrl = s3.storageUrl()
    s = await startServer({ engine: 'postgres', env: { RATE_LIMITS: HIGH_LIMITS, STORAGE_URL: storageUrl } })
    const u = await s.user()
    const bodies = ['a', 'b', 'c'].map((x) => HTML(`${x} ${crypto.randomBytes(8).toString('hex')}`))
    for (const [i, b] of bodies.entries()) assert.equal((await uploadFile(s, { key: u.key }, `p${i}.html`, b)).status, 200)
    const env = { DATABASE_URL: s.env.DATABASE_URL, STORAGE_URL: storageUrl, DATA_DIR: s.dataDir }
    const dest = path.join(tmp, 'backups')

    // run under the usual umask 022: the script must not leave its files to other accounts
    const r1 = await exec('sh', ['-c', 'umask 022 && exec "$0" "$@"', path.join(root, 'scripts/backup-postgres.sh'), dest], env)
    assert.equal(r1.code, 0, r1.stderr)
    const snap = /^backup (\S+):/.exec(r1.stdout)?.[1]
    assert.ok(snap, r1.stdout)
    // the dump holds password hashes, secrets and form submissions (as svc backup's copy, 0640)
    const open = fs
      .readdirSync(dest, { recursive: true, encoding: 'utf8' })
      .map((f) => path.join(dest, f))
      .filter((f) => (fs.statSync(f).mode & 0o007) !== 0)
    assert.deepEqual(open, [], 'nothing of the backup is readable by other accounts')
    assert.match(r1.stdout, /blobs: copied 3, skipped 0/)
    assert.ok(!fs.readdirSync(dest).some((n) => n.endsWith('.partial')))
    const sums = spawnSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: snap, encoding: 'utf8' })
    assert.equal(sums.status, 0, sums.stderr)
    for (const b of bodies) {
      const digest = crypto.createHash('sha256').update(b).digest('hex')
      const f = path.join(dest, 'blobs', digest.slice(0, 2), digest.slice(2, 4), digest)
      assert.equal(fs.readFileSync(f, 'utf8'), b)
    }

    // incremental: only the new blob is copied
    assert.equal((await uploadFile(s, { key: u.key }, 'new.html', HTML('new'))).status, 200)
    const r2 = await run([dest], env)
    assert.equal(r2.code, 0, r2.stderr)
    assert.match(r2.stdout, /blobs: copied 1, skipped 3/)

    // the dump is a pg_restore archive of the instance's schema, holding the tables' data
    const list = spawnSync('pg_restore', ['--list', path.join(snap, 'svc.dump')], { encoding: 'utf8' })
    assert.equal(list.status, 0, list.stderr)
    const schema = new URL(env.DATABASE_URL).searchParams.get('schema')!
    for (const t of ['users', 'files', 'kv_entries']) assert.match(list.stdout, new RegExp(`TABLE DATA ${schema} ${t} `), t)

    // the blobs go back into an empty bucket with copy-blobs.mjs --restore, and an instance on
    // the database and that bucket serves every page; a second run skips them all
    const restoredUrl = s3.storageUrl()
    const back = (dir: string) => exec('node', [path.join(root, 'scripts/copy-blobs.mjs'), '--restore', dir], { ...env, STORAGE_URL: restoredUrl })
    const b1 = await back(path.join(dest, 'blobs'))
    assert.equal(b1.code, 0, b1.stderr)
    assert.equal(b1.stdout, 'restored 4, skipped 0\n')
    assert.equal((await back(path.join(dest, 'blobs'))).stdout, 'restored 0, skipped 4\n')
    const restored = await startServer({ engine: 'postgres', pgSchema: schema, keepData: true, env: { RATE_LIMITS: HIGH_LIMITS, STORAGE_URL: restoredUrl } })
    try {
      for (const [i, b] of bodies.entries()) assert.equal((await restored.get(`/${u.username}/p${i}.html`)).text, b)
    } finally {
      await restored.close()
      fs.rmSync(restored.dataDir, { recursive: true, force: true })
    }

    // a blob whose bytes do not match its name is refused, naming it
    const bad = path.join(tmp, 'damaged')
    const digest = crypto.createHash('sha256').update('x').digest('hex')
    fs.mkdirSync(path.join(bad, digest.slice(0, 2), digest.slice(2, 4)), { recursive: true })
    fs.writeFileSync(path.join(bad, digest.slice(0, 2), digest.slice(2, 4), digest), 'not x')
    const b3 = await back(bad)
    assert.equal(b3.code, 1)
    assert.match(b3.stderr, new RegExp(`^error: blob ${digest} \\(.*\\): content does not match its name\n$`))
  })

  it('refuses to run without DATABASE_URL and leaves no partial snapshot', async () => {
    const dest = path.join(tmp, 'none')
    const r = await run([dest], { DATABASE_URL: '' })
    assert.notEqual(r.code, 0)
    assert.match(r.stderr, /DATABASE_URL must name the PostgreSQL database/)
    assert.ok(!fs.existsSync(dest))
  })
})
