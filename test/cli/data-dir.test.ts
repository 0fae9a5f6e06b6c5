import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawn } from 'node:child_process'
import { PG_URL, dropSchema, needs } from '../support/server.js'
import { runCli, SVC_BIN } from './run.js'

// A mistyped DATA_DIR must not become a new, empty service that an operator command then acts
// on: every operator command but serve, migrate and restore refuses a DATA_DIR without svc.db
// (SQLite only), names it, and creates nothing there.
describe('operator commands and a DATA_DIR without a database', () => {
  let tmp: string
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-datadir-'))
  })
  after(() => fs.rmSync(tmp, { recursive: true, force: true }))

  const commands: string[][] = [
    ['user', 'add', 'bob', '--password', 'a long password'],
    ['user', 'set', 'bob', '--vip'],
    ['key', 'create', 'bob'],
    ['grant', 'bob', 'image-host'],
    ['redeem-code', 'create', 'image-host'],
    ['lock', 'image', 'abcdefabcdefabcdef'],
    ['unlock', 'hosted-data', 'some-file'],
    ['feature', 'bob', 'page.html'],
    ['sweep'],
    ['backup', 'BACKUPS'],
    ['export', 'bob', 'OUT.zip'],
    ['import', 'OUT.zip'],
  ]
  for (const args of commands) {
    it(`svc ${args.slice(0, 2).join(' ')}: a folder that does not exist is refused (exit 78) and not created`, async () => {
      const dir = path.join(tmp, `typo-${args[0]}-${args[1] ?? ''}`)
      const argv = args.map((a) => (a === 'BACKUPS' || a === 'OUT.zip' ? path.join(tmp, `${path.basename(dir)}-${a}`) : a))
      const r = await runCli(argv, { env: { DATA_DIR: dir } })
      assert.equal(r.code, 78, r.stderr + r.stdout)
      assert.equal(r.stdout, '')
      assert.equal(
        r.stderr,
        `error: DATA_DIR ${dir} does not exist: there is no service database (svc.db) to act on; nothing was done (set DATA_DIR to the data folder svc serve uses)\n`,
      )
      assert.equal(fs.existsSync(dir), false, 'no folder made')
    })
  }

  it('a folder that exists but holds no svc.db is refused too, and left empty', async () => {
    const dir = path.join(tmp, 'empty')
    fs.mkdirSync(dir)
    for (const args of [['user', 'add', 'bob', '--password', 'a long password'], ['sweep']]) {
      const r = await runCli(args, { env: { DATA_DIR: dir } })
      assert.equal(r.code, 78, r.stderr)
      assert.equal(
        r.stderr,
        `error: DATA_DIR ${dir} holds no svc.db: there is no service database to act on; nothing was done (set DATA_DIR to the data folder svc serve uses)\n`,
      )
      assert.deepEqual(fs.readdirSync(dir), [])
    }
  })

  it('svc migrate creates a new database on purpose, and says so; the other commands then work', async () => {
    const dir = path.join(tmp, 'fresh')
    const m = await runCli(['migrate'], { env: { DATA_DIR: dir } })
    assert.equal(m.code, 0, m.stderr)
    assert.match(m.stdout, new RegExp(`^created a new database ${dir}/svc\\.db \\(in a new data folder\\)\\n`))
    const again = await runCli(['migrate'], { env: { DATA_DIR: dir } })
    assert.equal(again.stdout, 'migrations up to date\n')
    const add = await runCli(['user', 'add', 'bob', '--password', 'a long password'], { env: { DATA_DIR: dir } })
    assert.equal(add.code, 0, add.stderr)
  })

  it('svc migrate with an argument (none is taken) is refused with exit 2 before a database is made', async () => {
    const dir = path.join(tmp, 'migrate-typo')
    for (const extra of ['--dry-run', 'now']) {
      const r = await runCli(['migrate', extra], { env: { DATA_DIR: dir } })
      assert.equal(r.code, 2, r.stderr + r.stdout)
      assert.match(r.stderr, new RegExp(`^error: svc migrate takes no arguments \\(${extra}\\)\\nusage: svc migrate\\n`))
      assert.equal(r.stdout, '')
      assert.equal(fs.existsSync(dir), false, 'no folder or database made')
    }
  })

  it('svc serve still starts on a new data folder, and its start line says the database is new', async () => {
    const dir = path.join(tmp, 'first-start')
    const line = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [SVC_BIN, 'serve'], {
        env: { ...process.env, DATA_DIR: dir, PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d
        const l = out.split('\n').find((x) => x.startsWith('svc listening on '))
        if (l !== undefined) child.kill('SIGTERM')
      })
      child.on('error', reject)
      child.on('close', () => {
        clearTimeout(timer)
        resolve(out.split('\n').find((x) => x.startsWith('svc listening on ')) ?? out)
      })
    })
    assert.match(line, new RegExp(`database sqlite \\(${dir}/svc\\.db: new, in a new data folder\\)`))
    assert.ok(fs.existsSync(path.join(dir, 'svc.db')))
  })

  it('with DATABASE_URL the database is elsewhere: DATA_DIR need not hold one', needs('postgres'), async () => {
    const schema = `datadir_${crypto.randomBytes(4).toString('hex')}`
    try {
      const r = await runCli(['user', 'add', 'bob', '--password', 'a long password'], {
        env: { DATA_DIR: path.join(tmp, 'unused'), DATABASE_URL: `${PG_URL}?schema=${schema}` },
      })
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /created user bob/)
    } finally {
      await dropSchema(schema)
    }
  })
})
