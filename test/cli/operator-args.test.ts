import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { ENGINES, PG_URL, dropSchema } from '../support/server.js'
import { makeTree, runCli } from './run.js'

const PW = 'a long password'

// Command lines each operator command refuses from its arguments alone: a missing, extra or
// unknown argument, an unknown option, an option value it never takes. FILE stands for a path
// in the test's folder, which must stay as it was.
const REFUSED: string[][] = [
  ['user'],
  ['user', 'remove', 'bob'],
  ['user', 'add', '--password', PW],
  ['user', 'add', 'bob'],
  ['user', 'add', 'bob', 'carol', '--password', PW],
  ['user', 'add', 'bob', '--password', PW, '--bogus'],
  ['user', 'set', '--vip'],
  ['user', 'set', 'bob', '--tier', 'gold'],
  ['user', 'set', 'bob', '--api-access', 'maybe'],
  ['user', 'set', 'bob', '--limit', 'bogus=1'],
  ['user', 'set', 'bob', 'carol', '--vip'],
  // options that contradict each other: refused, not settled silently by the last one read
  ['user', 'set', 'bob', '--vip', '--no-vip'],
  ['user', 'set', 'bob', '--no-vip', '--tier', 'vip'],
  ['user', 'set', 'bob', '--tier', 'default', '--vip'],
  ['user', 'set', 'bob', '--disable', '--enable'],
  ['user', 'set', 'bob', '--enable', '--admin', '--no-admin'],
  ['key'],
  ['key', 'create'],
  ['key', 'create', 'bob', '--bogus'],
  ['key', 'create', 'bob', '--expires-days', '0'],
  ['key', 'create', 'bob', '--expires-days', '366'],
  ['key', 'create', 'bob', 'carol'],
  ['grant'],
  ['grant', 'bob'],
  ['grant', 'bob', 'paid-stuff'],
  ['grant', 'bob', 'image-host', 'extra'],
  ['redeem-code'],
  ['redeem-code', 'create'],
  ['redeem-code', 'create', 'gold'],
  ['redeem-code', 'create', 'image-host', 'extra'],
  ['lock'],
  ['lock', 'image'],
  ['lock', 'picture', 'tok'],
  ['lock', 'image', 'tok', 'extra'],
  ['unlock', 'hosted-data'],
  ['unlock', 'hosted-data', 'f1', '--bogus'],
  ['feature', 'bob'],
  ['feature', 'bob', 'a.html', 'b.html'],
  ['feature', 'bob', 'a.html', '--bogus'],
  ['sweep', 'now'],
  ['sweep', '--grace-seconds', 'soon'],
  ['sweep', '--bogus'],
  ['export', 'bob'],
  ['export', 'bob', 'FILE', 'extra'],
  ['export', 'bob', 'FILE', '--bogus'],
  ['import'],
  ['import', 'FILE', 'FILE'],
  ['import', 'FILE', '--as'],
  ['migrate', 'now'],
  ['backup'],
  ['backup', 'FILE', 'extra'],
  ['backup', 'FILE', '--keep', '0'],
  ['restore'],
  ['restore', 'FILE', '--bogus'],
]

const schemaExists = async (c: pg.Client, schema: string) =>
  (await c.query('select 1 from information_schema.schemata where schema_name = $1', [schema])).rowCount === 1

// A mistyped operator command is refused before it touches the data folder or the database:
// exit 2, `error: ...` and the command's synopsis, and nothing made or migrated (decision 190).
for (const engine of ENGINES) {
  describe(`operator commands check their arguments before the data folder [${engine}]`, () => {
    let tmp: string
    let client: pg.Client | undefined
    const suffix = crypto.randomBytes(4).toString('hex')
    // each refused command has a schema of its own, which it must not create
    const untouched = (i: number) => `cliorder_${suffix}_${i}`
    const used = `cliorder_${suffix}_ok`
    const envFor = (dir: string, schema: string): Record<string, string> =>
      engine === 'postgres' ? { DATA_DIR: dir, DATABASE_URL: `${PG_URL}?schema=${schema}` } : { DATA_DIR: dir }
    before(async () => {
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cliorder-'))
      if (engine === 'postgres') {
        client = new pg.Client({ connectionString: PG_URL })
        await client.connect()
      }
    })
    after(async () => {
      fs.rmSync(tmp, { recursive: true, force: true })
      if (engine === 'postgres') {
        for (const r of (
          await client!.query<{ name: string }>('select schema_name as name from information_schema.schemata where schema_name like $1', [
            `cliorder_${suffix}%`,
          ])
        ).rows)
          await dropSchema(r.name)
        await client?.end()
      }
    })

    for (const [i, args] of REFUSED.entries()) {
      it(`svc ${args.join(' ')}: exit 2, the error and the synopsis, nothing made`, async () => {
        const dir = path.join(tmp, `data-${i}`)
        const db = path.join(dir, 'svc.db')
        // SQLite: a data folder whose svc.db has no tables yet, so any migration would show
        if (engine === 'sqlite') {
          fs.mkdirSync(dir, { recursive: true })
          fs.writeFileSync(db, '')
        }
        const before = fs.readdirSync(tmp).sort()
        const r = await runCli(
          args.map((a) => (a === 'FILE' ? path.join(tmp, 'out.zip') : a)),
          { env: envFor(dir, untouched(i)) },
        )
        assert.equal(r.code, 2, r.stderr + r.stdout)
        assert.equal(r.stdout, '')
        assert.match(r.stderr, new RegExp(`^error: [^\\n]+\\nusage: svc ${args[0]}[ \\n]`), r.stderr)
        assert.deepEqual(fs.readdirSync(tmp).sort(), before, 'no file or folder made beside the data folder')
        if (engine === 'sqlite') {
          assert.deepEqual(fs.readdirSync(dir), ['svc.db'], 'no journal or other file in the data folder')
          assert.equal(fs.statSync(db).size, 0, 'svc.db untouched: no migration ran')
        } else {
          assert.equal(fs.existsSync(dir), false, 'no DATA_DIR made')
          assert.equal(await schemaExists(client!, untouched(i)), false, 'no schema made')
        }
      })
    }

    if (engine === 'sqlite')
      it('a DATA_DIR that does not exist: the usage error comes first (exit 2, not 78), and no folder is made', async () => {
        const dir = path.join(tmp, 'typo')
        for (const args of [
          ['key', 'create', 'bob', '--bogus'],
          ['user', 'set', 'bob', '--tier', 'gold'],
          ['grant', 'bob'],
          ['feature', 'bob', 'a.html', 'b.html'],
          ['sweep', 'now'],
          ['import'],
        ]) {
          const r = await runCli(args, { env: { DATA_DIR: dir } })
          assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
          assert.match(r.stderr, new RegExp(`^error: [^\\n]+\\nusage: svc ${args[0]}[ \\n]`))
          assert.equal(fs.existsSync(dir), false, args.join(' '))
        }
      })

    it('valid command lines still work, and what only the database can tell is still exit 1', async () => {
      const dir = path.join(tmp, 'live')
      const env = envFor(dir, used)
      const file = path.join(tmp, 'bob.zip')
      const steps: Array<[args: string[], code: number, out: RegExp]> = [
        [['migrate'], 0, /migrations up to date|applied \d+ migrations/],
        [['user', 'add', 'bob', '--password', PW, '--vip'], 0, /^created user bob \(vip\)\n$/],
        [
          ['user', 'set', 'bob', '--tier', 'authenticated', '--api-access', 'off', '--limit', 'files=5', '--limit', 'kv_keys=default'],
          0,
          /^updated bob: tier authenticated, enabled, api access off, limits \{"files":5\}\n$/,
        ],
        [['key', 'create', 'bob', '--name', 'ci', '--expires-days', '365', '--read-only'], 0, /^[A-Za-z0-9_]{64}\n$/],
        [['grant', 'bob', 'image-host'], 0, /^granted image-host to bob\n$/],
        [['grant', 'bob', 'image-host', '--revoke'], 0, /^revoked image-host from bob\n$/],
        [['redeem-code', 'create', 'hosted-data'], 0, /^DATA-\S+\n$/],
        [['lock', 'image', 'no-such-token'], 1, /^error: no image "no-such-token"\n$/],
        [['unlock', 'hosted-data', 'no-such-file'], 1, /^error: no hosted-data "no-such-file"\n$/],
        [['feature', 'bob', 'none.html', '--off'], 1, /^error: no file "none\.html" for bob\n$/],
        [['key', 'create', 'nobody'], 1, /^error: no user "nobody"\n$/],
        [['sweep', '--grace-seconds', '0'], 0, /^deleted \d+ unreferenced blobs and \d+ temp files\n$/],
        [['export', 'bob', file], 0, /^exported bob to /],
        [['import', file, '--as', 'bob2'], 0, /^imported bob2: /],
      ]
      for (const [args, code, out] of steps) {
        const r = await runCli(args, { env })
        assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}${r.stdout}`)
        assert.match(code === 0 ? r.stdout : r.stderr, out, args.join(' '))
      }
    })
  })
}

// The client commands' usage errors print the synopsis after the message, as a parser's
// refusal does: an unexpected argument, a missing one, a missing or unknown subcommand, an
// option value the command does not take, an option of another subcommand (decision 196)
describe('client commands: a missing, unexpected or refused argument prints the synopsis', () => {
  const cases: Array<[args: string[], message: RegExp]> = [
    [['whoami', 'extra'], /unexpected argument "extra"/],
    [['deploy', '.', 'extra'], /unexpected argument "extra"/],
    [['kv', 'get', 'a', 'b'], /unexpected argument "b"/],
    [['deploy'], /missing the folder to deploy/],
    [['page'], /missing the HTML file/],
    [['promote'], /missing the deploy to make live/],
    [['kv', 'get'], /missing KEY/],
    [['kv', 'set', 'a'], /missing VALUE/],
    [['kv', 'incr'], /missing KEY/],
    [['kv'], /missing a subcommand: get, set, incr, rm or ls/],
    [['kv', 'put', 'a', '1'], /unknown subcommand "put": get, set, incr, rm or ls/],
    [['data', 'push'], /missing the file to push/],
    [['data'], /missing a subcommand: push/],
    [['forms', 'notify'], /missing the form id/],
    [['forms', 'redeliver'], /missing the delivery id/],
    [['forms', 'nope'], /unknown subcommand "nope"/],
    [['domain', 'add', 'www.example.com'], /missing --project NAME/],
    [['domain', 'verify'], /missing DOMAIN/],
    [['domain'], /missing a subcommand/],
    [['access', 'set'], /missing NAME/],
    [['access', 'open', 'site'], /unknown subcommand "open"/],
    // a value an option (or argument) does not take, checked from the help table before
    // anything is read or sent: the same error and synopsis
    [['forms', 'notify', '12', '--email', 'sometimes'], /--email takes one of each, digest, off, on, not "sometimes"/],
    [['forms', 'notify', '12', '--paused'], /--paused goes with --webhook/],
    [['kv', 'set', 'k', 'v', '--type', 'x'], /--type takes one of json, text, number, not "x"/],
    [['kv', 'set', 'k', '--file', 'FILE', '--type', 'x'], /--type takes one of json, text, number/],
    [['kv', 'ls', '--page', '0'], /--page takes an integer of 1 or more, not "0"/],
    [['kv', 'ls', '--per-page', 'abc'], /--per-page takes an integer of 1 or more/],
    [['kv', 'incr', 'hits', '--by', 'abc'], /--by takes a number, not "abc"/],
    [['kv', 'incr', 'hits', 'abc'], /"abc" is not a number/],
    [['deploy', '.', '--concurrency', '0'], /--concurrency takes an integer of 1 or more, not "0"/],
    [['deploy', '.', '--concurrency', 'abc'], /--concurrency takes an integer of 1 or more/],
    [['deploy', '.', '--batch-files', '0'], /--batch-files takes an integer of 1 or more/],
    [['deploy', '.', '--batch-bytes', 'lots'], /--batch-bytes takes a size like 5000000, 5MB or 4MiB, not "lots"/],
    [['access', 'set', 'site', '--expires', 'nonsense'], /--expires takes an ISO 8601 time .* or a duration .*, not "nonsense"/],
    [['access', 'set', 'site', '--password-stdin', '--expires', 'nonsense'], /--expires takes/],
    [['access', 'set', 'site'], /nothing to set/],
    [['whoami', '--url', 'ftp://host'], /invalid server URL "ftp:\/\/host": use https:\/\//],
    [['page', 'notes.txt'], /only \.html and \.htm files/],
    [['deploys', 'site', '--project', 'other'], /two projects named/],
    // an option of another subcommand
    [['domain', 'add', 'x.example.com', '--project', 'p', '--off'], /unknown option --off; this command takes --project/],
    [['domain', 'primary', 'x.example.com', '--project', 'p'], /unknown option --project; this command takes --off/],
    [['domain', 'verify', 'x.example.com', '--off'], /unknown option --off/],
    [['kv', 'get', 'k', '--type', 'text'], /unknown option --type/],
    [['kv', 'ls', '--by', '2'], /unknown option --by/],
    [['access', 'clear', 'site', '--expires', '7d'], /unknown option --expires/],
    [['access', 'list', '--no-password'], /unknown option --no-password/],
  ]
  for (const [args, message] of cases) {
    it(`svc ${args.join(' ')}`, async () => {
      // FILE: a file that is there, so only the refused value stops the command
      const file = makeTree({ 'value.txt': 'v' })
      const r = await runCli(
        args.map((a) => (a === 'FILE' ? path.join(file, 'value.txt') : a)),
        { env: { SVC_URL: 'http://127.0.0.1:9', SVC_API_KEY: 'x'.repeat(64) }, input: 'secret\n' },
      )
      assert.equal(r.code, 2, r.stderr)
      assert.equal(r.stdout, '')
      assert.match(r.stderr, new RegExp(`^error: [^\\n]+\\nusage: svc ${args[0]}[ \\n]`), r.stderr)
      assert.match(r.stderr.split('\n')[0], message)
      assert.equal(r.stderr.match(/^usage: /gm)?.length, 1, 'the synopsis once')
    })
  }
})
