import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Agent, request } from 'undici'
import { runCli, makeTree, SVC_BIN } from './run.js'
import { startS3, type TestS3 } from '../support/s3.js'

// The shipped CLI (the bundle in dist/bin) with S3 storage: the S3 driver is loaded only when
// STORAGE_URL names a bucket, from a chunk of its own, so a bundle that lost it fails here.
describe('bin/svc with STORAGE_URL=s3://', () => {
  let s3: TestS3
  let dir: string
  let child: ChildProcess
  let env: Record<string, string>
  let base = ''
  const insecure = new Agent({ connect: { rejectUnauthorized: false } })

  before(async () => {
    s3 = await startS3()
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-s3-cli-'))
    env = { DATA_DIR: path.join(dir, 'data'), STORAGE_URL: s3.storageUrl(), PORT: '0', HTTP_PORT: '0', LOG_LEVEL: 'warn' }
    child = spawn(process.execPath, [SVC_BIN, 'serve'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout!.on('data', (d) => (out += d))
    child.stderr!.on('data', (d) => (err += d))
    for (let i = 0; i < 600 && !/svc listening on/.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50))
    const m = /svc listening on (https:\/\/localhost:\d+)/.exec(out)
    assert.ok(m, `the server did not start:\n${out}\n${err}`)
    base = m[1]
  })
  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
    }
    await insecure.close()
    await s3?.close()
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  it('serves a deploy whose bytes live in the bucket, and the operator commands open the bucket too', async () => {
    assert.equal((await runCli(['user', 'add', 'alice', '--password', 'long password 123'], { env })).code, 0)
    const key = (await runCli(['key', 'create', 'alice'], { env })).stdout.trim().split('\n').pop()!
    const site = makeTree({ 'index.html': '<p>from the bucket</p>' })
    const d = await runCli(['deploy', site, '--project', 'site'], { env: { SVC_URL: base, SVC_API_KEY: key, SVC_INSECURE: '1' } })
    assert.equal(d.code, 0, d.stderr)
    const r = await request(`${base}/alice/site/`, { dispatcher: insecure })
    assert.equal(r.statusCode, 200)
    assert.equal(await r.body.text(), '<p>from the bucket</p>')
    const sweep = await runCli(['sweep', '--grace-seconds', '0'], { env })
    assert.equal(sweep.code, 0, sweep.stderr)
    const again = await request(`${base}/alice/site/`, { dispatcher: insecure })
    assert.equal(await again.body.text(), '<p>from the bucket</p>', 'the sweep kept the referenced blob')
  })
})
