import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ENGINES, REDIS_URL, needs, startServer, type TestServer } from '../support/server.js'
import { expectError } from '../support/errors.js'
import { backupSqlite, openSnapshotTarget } from '../../src/cli/backup.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'

const PACKAGE_VERSION = (JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version

for (const engine of ENGINES) {
  describe(`admin health page API [${engine}]`, () => {
    let s: TestServer
    let admin: { username: string; key: string; cookie: string }
    let alice: { cookie: string }
    const health = () => s.get('/svc_api/admin/health', { cookie: admin.cookie })

    before(async () => {
      s = await startServer({ engine })
      const a = await s.user({ admin: true })
      admin = { ...a, cookie: await s.login(a.username, a.password) }
      const b = await s.user()
      alice = { cookie: await s.login(b.username, b.password) }
    })
    after(() => s.close())

    it('gives an admin the checks of /readyz and what the instance knows of itself', async () => {
      const r = await health()
      assert.equal(r.status, 200, r.text)
      assert.equal(r.header('cache-control'), 'no-store')
      const d = r.json.data
      assert.equal(r.json.success, true)
      assert.equal(d.status, 'ok')
      assert.deepEqual(d.checks, [
        { name: 'database', result: 'ok', required: true },
        { name: 'storage', result: 'ok', required: true },
      ])
      assert.equal(d.version, PACKAGE_VERSION)
      assert.match(d.api_version, /^\d+\.\d+\.\d+$/)
      assert.equal(d.node, process.version)
      assert.equal(d.pid, process.pid)
      assert.ok(d.uptime_seconds >= 0 && Date.parse(d.started_at) <= Date.parse(d.checked_at), r.text)
      assert.equal(d.database.engine, engine)
      // SQLite's group commit is counted; PostgreSQL has none
      if (engine === 'sqlite') assert.equal(typeof d.database.pending_commits, 'number')
      else assert.equal(d.database.pending_commits, null)
      assert.deepEqual(d.storage, { kind: 'local' })
      assert.ok(d.memory.rss_bytes > 0 && d.memory.heap_used_bytes > 0 && d.memory.heap_total_bytes >= d.memory.heap_used_bytes, r.text)
      // the local blob store lives in DATA_DIR: one disk, with its free space
      assert.equal(d.disks.length, 1, r.text)
      assert.equal(d.disks[0].what, 'data_dir')
      assert.equal(d.disks[0].path, s.dataDir)
      assert.equal(d.disks[0].error, null)
      assert.ok(d.disks[0].free_bytes > 0 && d.disks[0].total_bytes >= d.disks[0].free_bytes, r.text)
      assert.deepEqual(d.backups, { scheduled: false, destination: null, every_seconds: 86400, keep: 7, last_at: null })
      // the database is named by its engine, never its URL
      assert.ok(!r.text.includes('postgres://'), r.text)
    })

    it('refuses a non-admin (403 / 1011), an API key (as every admin route does) and no session (401)', async () => {
      expectError(await s.get('/svc_api/admin/health', { cookie: alice.cookie }), 403, 1011)
      const byKey = await s.get('/svc_api/admin/health', { key: admin.key })
      expectError(byKey, 403, 1009)
      // the same refusal as a neighbour's
      assert.equal((await s.get('/svc_api/admin/users', { key: admin.key })).json.error_code, byKey.json.error_code)
      assert.equal((await s.get('/svc_api/admin/health')).status, 401)
    })

    it('shows a failing dependency with its full message, while /readyz shows a proxied caller only "error"', async () => {
      const tmp = path.join(s.dataDir, 'blobs', 'tmp')
      const away = `${tmp}-away`
      fs.renameSync(tmp, away)
      try {
        const r = await health()
        assert.equal(r.status, 200, r.text)
        assert.equal(r.json.data.status, 'unavailable')
        const storage = r.json.data.checks.find((c: { name: string }) => c.name === 'storage')
        assert.equal(storage.required, true)
        assert.match(storage.result, /^error: ENOENT/)
        assert.ok(storage.result.includes(s.dataDir), storage.result)
        assert.equal(r.json.data.checks.find((c: { name: string }) => c.name === 'database').result, 'ok')
        const probe = await s.get('/readyz', { headers: { 'x-forwarded-for': '203.0.113.7' } })
        assert.equal(probe.status, 503)
        assert.equal(probe.json.checks.storage, 'error')
      } finally {
        fs.renameSync(away, tmp)
      }
      assert.equal((await health()).json.data.status, 'ok')
    })
  })
}

describe('admin health with Redis and scheduled backups', () => {
  it('lists Redis as a check that is only reported', needs('redis'), async () => {
    const s = await startServer({ engine: ENGINES[0], env: { REDIS_URL, REDIS_PREFIX: `t${process.pid}h:` } })
    try {
      const a = await s.user({ admin: true })
      const r = await s.get('/svc_api/admin/health', { cookie: await s.login(a.username, a.password) })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.json.data.checks[2], { name: 'redis', result: 'ok', required: false })
      assert.ok(!r.text.includes(REDIS_URL), 'the Redis URL is not shown')
    } finally {
      await s.close()
    }
  })

  it('names the backup folder and the time of its last snapshot (SQLite)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-health-backups-'))
    const s = await startServer({ engine: 'sqlite', env: { BACKUP_DIR: dir, BACKUP_EVERY: '6h', BACKUP_KEEP: '3' } })
    try {
      const a = await s.user({ admin: true })
      const cookie = await s.login(a.username, a.password)
      const before = (await s.get('/svc_api/admin/health', { cookie })).json.data.backups
      assert.deepEqual(before, { scheduled: true, destination: dir, every_seconds: 6 * 3600, keep: 3, last_at: null })
      const at = new Date('2026-12-01T02:03:04.567Z')
      const target = await openSnapshotTarget(dir)
      try {
        await backupSqlite({ dataDir: s.dataDir, blobs: s.deps.blobs, blobColumns: BLOB_COLUMNS, target, keep: 3, now: at })
      } finally {
        await target.close()
      }
      const after = (await s.get('/svc_api/admin/health', { cookie })).json.data.backups
      assert.equal(after.last_at, at.toISOString())
    } finally {
      await s.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
