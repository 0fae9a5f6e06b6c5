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

  it('a svc.db that is no SQLite database is named with what to do, in one line, by serve and operator commands (exit 1)', async () => {
    const dir = path.join(tmp, 'not-sqlite')
    fs.mkdirSync(dir)
    const file = path.join(dir, 'svc.db')
    fs.writeFileSync(file, 'not a database\n')
    for (const args of [['key', 'create', 'bob'], ['migrate'], ['serve']]) {
      const r = await runCli(args, { env: { DATA_DIR: dir, PORT: '0', HTTP_PORT: '0' } })
      assert.equal(r.code, 1, args.join(' '))
      assert.equal(
        r.stderr,
        `error: cannot open the SQLite database ${file}: file is not a database; set DATA_DIR to the service's data folder, or restore a snapshot (svc restore)\n`,
      )
      assert.equal(fs.readFileSync(file, 'utf8'), 'not a database\n')
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

/** `svc serve` on DATA_DIR (free ports): resolves with its start line once it listens, or with its exit when it stops first. */
function startServe(dataDir: string, o: { uid?: number } = {}) {
  const child = spawn(process.execPath, [SVC_BIN, 'serve'], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(o.uid === undefined ? {} : { uid: o.uid, gid: o.uid }),
  })
  let stdout = ''
  let stderr = ''
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  void exited.then(() => clearTimeout(timer))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const started = new Promise<{ listening: string } | { code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      const l = stdout.split('\n').find((x) => x.startsWith('svc listening on '))
      if (l !== undefined) resolve({ listening: l })
    })
    void exited.then((code) => resolve({ code, stdout, stderr }))
  })
  return { child, started, exited }
}

// Two `svc serve` on one SQLite data folder each keep their own caches, holds and rate limits
// with nothing telling the other of a change: a page redeployed through one stays the old page
// on the other, a takedown through one is served on by the other. The second is refused
// (decision 206).
describe('svc serve: one server per SQLite data folder', () => {
  let tmp: string
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-serve-lock-'))
  })
  after(() => fs.rmSync(tmp, { recursive: true, force: true }))

  it('refuses a second svc serve on the same data folder (exit 78, naming the first), and the first keeps serving', async () => {
    const dir = path.join(tmp, 'shared')
    const first = startServe(dir)
    let second: ReturnType<typeof startServe> | undefined
    try {
      const a = await first.started
      assert.ok('listening' in a, JSON.stringify(a))
      const url = /HTTP on (http:\/\/\S+)/.exec(a.listening)?.[1]
      second = startServe(dir)
      const b = await second.started
      assert.ok(!('listening' in b), `the second started too: ${JSON.stringify(b)}`)
      assert.equal(b.code, 78, b.stderr)
      assert.equal(b.stdout, '')
      assert.equal(
        b.stderr,
        `error: DATA_DIR ${dir} is in use by another svc serve (pid ${first.child.pid}): one server per SQLite data folder; stop it first, or run more instances on PostgreSQL (docs/operations/scale-out.md)\n`,
      )
      assert.ok(url !== undefined, a.listening)
      const live = await fetch(`http://127.0.0.1:${new URL(url).port}/livez`, { redirect: 'manual' })
      assert.ok(live.status < 500, 'the first still answers')
      assert.equal(first.child.exitCode, null, 'the first still runs')
    } finally {
      second?.child.kill('SIGKILL')
      first.child.kill('SIGKILL')
      await Promise.all([first.exited, second?.exited])
    }
    // a server killed outright leaves no lock behind: the next one starts
    const again = startServe(dir)
    try {
      const c = await again.started
      assert.ok('listening' in c, JSON.stringify(c))
    } finally {
      again.child.kill('SIGTERM')
      assert.equal(await again.exited, 0)
    }
  })
})

// A data folder owned by another account, or on a read-only mount, made every command fail with
// a bare `EACCES: permission denied, open '.../svc.db'` (or `unable to open database file`,
// exit 1). Each is refused up front, naming the folder, the file, who runs the command and who
// owns it (decision 207). Root passes every permission check, so the test runs the command as
// `nobody`, and mounts a read-only folder: both need root.
describe('a data folder this process may not write', () => {
  const root = process.getuid?.() === 0
  const NOBODY = 65534
  let tmp: string
  let dir: string
  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-datadir-perm-'))
    fs.chmodSync(tmp, 0o755)
    dir = path.join(tmp, 'data')
    const m = await runCli(['migrate'], { env: { DATA_DIR: dir } })
    assert.equal(m.code, 0, m.stderr)
    fs.chmodSync(dir, 0o755)
  })
  after(() => fs.rmSync(tmp, { recursive: true, force: true }))

  const commands = [['serve'], ['user', 'add', 'bob', '--password', 'a long password'], ['backup', 'BACKUPS'], ['migrate']]
  for (const args of commands) {
    it(`svc ${args[0]} run by another user is refused (exit 78), naming the file, the user and its owner`, { skip: !root && 'needs root' }, async () => {
      const argv = args.map((a) => (a === 'BACKUPS' ? path.join(tmp, `bk-${args[0]}`) : a))
      const before = fs.readdirSync(dir).sort()
      const r = await runCli(argv, { env: { DATA_DIR: dir, PORT: '0', HTTP_PORT: '0', LOG_LEVEL: 'silent' }, uid: NOBODY, timeoutMs: 20_000 })
      assert.equal(r.code, 78, r.stderr + r.stdout)
      assert.equal(
        r.stderr,
        `error: DATA_DIR ${dir}: the folder cannot be read and written by this user (uid ${NOBODY}, nobody); it belongs to uid 0 (root), mode 0755. Run svc as the data folder's owner, or give the folder to this user (chown -R nobody ${dir}); nothing was done\n`,
      )
      assert.equal(r.stdout, '')
      assert.deepEqual(fs.readdirSync(dir).sort(), before, 'nothing made in the folder')
    })
  }

  it('a folder this user may write holding a database it may not is refused naming svc.db', { skip: !root && 'needs root' }, async () => {
    const open = path.join(tmp, 'open')
    fs.cpSync(dir, open, { recursive: true })
    fs.chmodSync(open, 0o777)
    for (const args of [['serve'], ['user', 'add', 'bob', '--password', 'a long password']]) {
      const r = await runCli(args, { env: { DATA_DIR: open, PORT: '0', HTTP_PORT: '0', LOG_LEVEL: 'silent' }, uid: NOBODY, timeoutMs: 20_000 })
      assert.equal(r.code, 78, r.stderr + r.stdout)
      assert.equal(
        r.stderr,
        `error: DATA_DIR ${open}: svc.db cannot be read and written by this user (uid ${NOBODY}, nobody); it belongs to uid 0 (root), mode 0640. Run svc as the data folder's owner, or give the folder to this user (chown -R nobody ${open}); nothing was done\n`,
      )
    }
  })

  it('a read-only file system is refused by svc serve and operator commands (exit 78)', { skip: !root && 'needs root' }, async (t) => {
    const ro = path.join(tmp, 'ro')
    fs.mkdirSync(ro)
    const mounted = await new Promise<boolean>((resolve) => {
      const c = spawn('sh', ['-c', `mount --bind ${dir} ${ro} && mount -o remount,bind,ro ${ro}`], { stdio: 'ignore' })
      c.on('close', (code) => resolve(code === 0))
      c.on('error', () => resolve(false))
    })
    if (!mounted) return t.skip('cannot mount here')
    try {
      for (const args of [['serve'], ['user', 'add', 'bob', '--password', 'a long password'], ['backup', path.join(tmp, 'bk-ro')]]) {
        const r = await runCli(args, { env: { DATA_DIR: ro, PORT: '0', HTTP_PORT: '0', LOG_LEVEL: 'silent' }, timeoutMs: 20_000 })
        assert.equal(r.code, 78, r.stderr + r.stdout)
        assert.equal(
          r.stderr,
          `error: DATA_DIR ${ro} is on a read-only file system: svc writes its database and blobs there. Remount it read-write, or restore a backup into a writable folder; nothing was done\n`,
        )
      }
    } finally {
      await new Promise((resolve) => spawn('umount', [ro], { stdio: 'ignore' }).on('close', resolve))
    }
  })
})

// `svc export alice $DATA_DIR/svc.db` (a slip of the shell) renamed the archive over the live
// database, with the server still running on the old one: the next start found a zip. And an
// export that failed to write printed a bare `ENOENT: ... open 'FILE.partial'` or `ENOSPC`.
describe('svc export and the data folder', () => {
  let tmp: string
  let dir: string
  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-datadir-export-'))
    dir = path.join(tmp, 'data')
    assert.equal((await runCli(['migrate'], { env: { DATA_DIR: dir } })).code, 0)
    assert.equal((await runCli(['user', 'add', 'bob', '--password', 'a long password'], { env: { DATA_DIR: dir } })).code, 0)
  })
  after(() => fs.rmSync(tmp, { recursive: true, force: true }))

  it('refuses to write the archive over a file the service keeps there (exit 1), which stays as it was', async () => {
    const db = path.join(dir, 'svc.db')
    const before = crypto.createHash('sha256').update(fs.readFileSync(db)).digest('hex')
    for (const file of [db, path.join(dir, 'blobs', 'x.zip'), dir]) {
      const r = await runCli(['export', 'bob', file], { env: { DATA_DIR: dir } })
      assert.equal(r.code, 1, r.stdout)
      assert.equal(
        r.stderr,
        `error: ${file} is the data folder's own (its database, certificate, lock or blobs): write the archive elsewhere; nothing was written\n`,
      )
    }
    assert.equal(crypto.createHash('sha256').update(fs.readFileSync(db)).digest('hex'), before)
    // beside them is fine
    const ok = await runCli(['export', 'bob', path.join(dir, 'bob.zip')], { env: { DATA_DIR: dir } })
    assert.equal(ok.code, 0, ok.stderr)
  })

  it('a file it cannot write is named with the cause (exit 1)', async () => {
    const file = path.join(tmp, 'no-such-folder', 'bob.zip')
    const r = await runCli(['export', 'bob', file], { env: { DATA_DIR: dir } })
    assert.equal(r.code, 1, r.stdout)
    assert.equal(r.stderr, `error: export to ${file} failed: ENOENT: no such file or directory, open '${file}.partial'; nothing was written\n`)
  })
})

// DATA_DIR naming a file was reported as a folder this user may not write (root: "chown -R
// root ...") or one without svc.db
describe('a DATA_DIR that is a file', () => {
  let tmp: string
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-datadir-file-'))
  })
  after(() => fs.rmSync(tmp, { recursive: true, force: true }))

  it('is named as a file by svc serve and operator commands (exit 78), below it too', async () => {
    const file = path.join(tmp, 'data')
    fs.writeFileSync(file, 'not a folder')
    for (const [dir, what] of [
      [file, `DATA_DIR ${file} is a file, not a folder`],
      [path.join(file, 'sub'), `DATA_DIR ${path.join(file, 'sub')} cannot be made: ${file} is a file, not a folder`],
    ] as const) {
      for (const args of [['serve'], ['user', 'add', 'bob', '--password', 'a long password']]) {
        const r = await runCli(args, { env: { DATA_DIR: dir, PORT: '0', HTTP_PORT: '0', LOG_LEVEL: 'silent' }, timeoutMs: 20_000 })
        assert.equal(r.code, 78, r.stderr + r.stdout)
        assert.equal(r.stderr, `error: ${what}; nothing was done (set DATA_DIR to the data folder svc serve uses)\n`, args[0])
      }
    }
    assert.equal(fs.readFileSync(file, 'utf8'), 'not a folder')
  })
})
