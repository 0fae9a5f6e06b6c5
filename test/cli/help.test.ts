import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { runCli } from './run.js'

const OPERATOR = 'Server and operator commands'
const CLIENT = 'Client commands'

// --help and -h after any command print that command's section of the usage and exit 0: no
// server starts, no database is opened or created
describe('svc help', () => {
  const rows: Array<[args: string[], sections: string[]]> = [
    [['--help'], [OPERATOR, CLIENT]],
    [['help'], [OPERATOR, CLIENT]],
    [['serve', '--help'], [OPERATOR]],
    [['serve', '-h'], [OPERATOR]],
    [['user', '--help'], [OPERATOR]],
    [['user', 'add', 'bob', '-h'], [OPERATOR]],
    [['backup', '--help'], [OPERATOR]],
    [['migrate', '--help'], [OPERATOR]],
    [['deploy', '--help'], [CLIENT]],
    [['kv', '-h'], [CLIENT]],
  ]
  for (const [args, sections] of rows) {
    it(`svc ${args.join(' ')}`, async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-help-'))
      try {
        const r = await runCli(args, { env: { DATA_DIR: path.join(dataDir, 'data'), PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1' } })
        assert.equal(r.code, 0, r.stderr)
        assert.equal(r.stderr, '')
        for (const s of [OPERATOR, CLIENT]) assert.equal(r.stdout.includes(s), sections.includes(s), `${s} in:\n${r.stdout}`)
        assert.ok(!r.stdout.includes('svc listening'), 'no server started')
        assert.equal(fs.existsSync(path.join(dataDir, 'data')), false, 'no data folder made')
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    })
  }

  it('svc --version (and -V, version) prints the version, as package.json has it', async () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'package.json'), 'utf8')) as {
      version: string
    }
    for (const a of ['--version', '-V', 'version']) {
      const r = await runCli([a])
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stdout, `svc ${pkg.version}\n`)
    }
  })

  it('an unknown command: exit 2, the usage on stderr', async () => {
    const r = await runCli(['nope'])
    assert.equal(r.code, 2)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /^unknown command "nope"/)
    assert.ok(r.stderr.includes(OPERATOR) && r.stderr.includes(CLIENT))
  })

  // each an operator command's bad arguments: exit 2 and one "error:" message, nothing done
  // (on a data folder that holds a database: a folder without one is refused first, data-dir.test.ts)
  let withDb = ''
  before(async () => {
    withDb = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-help-db-'))
    const m = await runCli(['migrate'], { env: { DATA_DIR: withDb } })
    assert.equal(m.code, 0, m.stderr)
  })
  after(() => fs.rmSync(withDb, { recursive: true, force: true }))
  const bad: Array<[args: string[], message: RegExp]> = [
    [['serve', '--bogus'], /^error: Unknown option '--bogus'/],
    [['key', 'create', 'bob', '--nope'], /^error: Unknown option '--nope'/],
    [['key', 'create', 'bob', '--expires-days', '-5'], /^error: Option '--expires-days' argument is ambiguous/],
    [['backup', 'somewhere', '--keep'], /^error: Option '--keep <value>' argument missing/],
    [['sweep', '--grace-seconds=-60'], /^error: --grace-seconds takes a number of seconds \(0 or more\)\n$/],
    [['sweep', '--grace-seconds', 'soon'], /^error: --grace-seconds takes a number of seconds \(0 or more\)\n$/],
  ]
  for (const [args, message] of bad) {
    it(`svc ${args.join(' ')}: a usage error`, async () => {
      const r = await runCli(args, { env: { DATA_DIR: withDb, PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1' } })
      assert.equal(r.code, 2, r.stderr)
      assert.match(r.stderr, message)
      assert.equal(r.stdout, '')
    })
  }
})
