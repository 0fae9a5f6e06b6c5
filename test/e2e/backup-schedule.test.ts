import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { startS3 } from '../support/s3.js'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const bin = path.join(root, 'bin', 'svc')

/** Snapshot folders (not the shared blobs, not one in progress) in a backup folder. */
const snapshots = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => n !== 'blobs' && !n.endsWith('.partial') && !n.startsWith('.')) : [])

/** `svc serve` on DATA_DIR with BACKUP_DIR, every second, keeping `keep`; its output so far, and a stop. */
function serveWithBackups(dataDir: string, backupDir: string, keep: number) {
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: '0',
    HTTP_PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    BACKUP_DIR: backupDir,
    BACKUP_EVERY: '1s',
    BACKUP_KEEP: String(keep),
  }
  const child = spawn(process.execPath, [bin, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const run = { out: '', env, stop: () => new Promise((r) => (child.kill('SIGTERM'), child.once('close', r))) }
  child.stdout.on('data', (d: Buffer) => (run.out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (run.out += d.toString()))
  return run
}

/** `svc restore SNAPSHOT --data-dir TARGET`: its exit code and what it said. */
async function restore(env: NodeJS.ProcessEnv, snapshot: string, target: string): Promise<{ code: unknown; said: string }> {
  const r = spawn(process.execPath, [bin, 'restore', snapshot, '--data-dir', target], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let said = ''
  r.stdout.on('data', (d: Buffer) => (said += d.toString()))
  r.stderr.on('data', (d: Buffer) => (said += d.toString()))
  return { code: await new Promise((res) => r.once('close', res)), said }
}

describe('scheduled backups (BACKUP_DIR)', () => {
  it('svc serve takes a snapshot every BACKUP_EVERY, keeps BACKUP_KEEP, and each one restores', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-sched-'))
    const backupDir = path.join(dataDir, 'bk')
    const serve = serveWithBackups(dataDir, backupDir, 2)
    const count = () => (serve.out.match(/^backup: /gm) ?? []).length
    try {
      const deadline = Date.now() + 20_000
      while (count() < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
      assert.ok(count() >= 3, `three scheduled snapshots: ${serve.out}`)
      assert.equal(snapshots(backupDir).length, 2, 'BACKUP_KEEP=2 keeps two')
    } finally {
      await serve.stop()
    }
    const newest = snapshots(backupDir).sort().pop()!
    const target = path.join(dataDir, 'restored')
    const r = await restore(serve.env, path.join(backupDir, newest), target)
    assert.equal(r.code, 0, `the scheduled snapshot verifies and restores: ${r.said}`)
    assert.ok(fs.existsSync(path.join(target, 'svc.db')))
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('takes the scheduled snapshots into a bucket when BACKUP_DIR is s3://', async () => {
    const s3 = await startS3()
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-sched-s3-'))
    const dest = s3.storageUrl()
    const serve = serveWithBackups(dataDir, dest, 1)
    const taken = () => [...serve.out.matchAll(/^backup: (s3:\/\/\S+) \(\d+ new blobs\)$/gm)].map((m) => m[1])
    try {
      const deadline = Date.now() + 20_000
      while (taken().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
      assert.ok(taken().length >= 2, `two scheduled snapshots in the bucket: ${serve.out}`)
      assert.doesNotMatch(serve.out, /S3RVER/, 'no credentials printed')
    } finally {
      await serve.stop()
    }
    // the newest one verifies and restores (with the destination's settings in the query)
    const r = await restore(serve.env, `${taken().pop()!}?${dest.split('?')[1]}`, path.join(dataDir, 'restored'))
    assert.equal(r.code, 0, r.said)
    assert.ok(fs.existsSync(path.join(dataDir, 'restored', 'svc.db')))
    await s3.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('says at start that it cannot write a BACKUP_DIR folder, and keeps serving', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-sched-ro-'))
    fs.writeFileSync(path.join(dataDir, 'file'), '')
    const backupDir = path.join(dataDir, 'file', 'bk')
    const serve = serveWithBackups(dataDir, backupDir, 1)
    try {
      const said = () => /^warning: BACKUP_DIR (\S+) cannot be written \(ENOTDIR\): scheduled backups fail until it can$/m.exec(serve.out)
      const deadline = Date.now() + 10_000
      while (!said() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
      assert.equal(said()?.[1], backupDir, serve.out)
      assert.match(serve.out, /^svc listening on /m)
    } finally {
      await serve.stop()
    }
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('refuses a BACKUP_EVERY that is not a duration', async () => {
    const { loadConfig } = await import('../../src/config.js')
    assert.throws(() => loadConfig({ BACKUP_EVERY: 'daily' }), /BACKUP_EVERY/)
    assert.equal(loadConfig({ BACKUP_EVERY: '6h' }).backupEveryMs, 6 * 3_600_000)
    // an s3:// BACKUP_DIR is checked like STORAGE_URL, and kept as a URL
    assert.throws(() => loadConfig({ BACKUP_DIR: 's3://b?endpoint=ftp://x' }), /BACKUP_DIR: endpoint must be http\(s\)/)
    assert.equal(loadConfig({ BACKUP_DIR: 's3://b/p?region=x' }).backupDir, 's3://b/p?region=x')
  })
})
