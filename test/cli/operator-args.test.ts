import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { ENGINES, PG_URL, dropSchema } from '../support/server.js'
import { makeTree, runCli } from './run.js'
import { commandLine } from '../../src/cli/admin.js'
import { usageText } from '../../src/cli/help.js'
import { OPERATOR_HELP, limitSetting } from '../../src/cli/operator-help.js'
import { UserPatch } from '../../src/features/admin/schemas.js'
import { QUOTA_MAX } from '../../src/limits/quotas.js'
import { createUsers } from '../../src/auth/users.js'
import { openDatabase } from '../../src/db/kysely.js'
import { systemClock } from '../../src/util/clock.js'

const PW = 'a long password'
const PARSE_ARGS_UNKNOWN = (o: string) =>
  `Unknown option '--${o}'. To specify a positional argument starting with a '-', place it at the end of the command after '--', as in '-- "--${o}"`
const QUOTAS =
  'files, kv_keys, kv_entry_bytes, forms, form_submissions_month, form_export_rows, form_file_bytes, images, image_bytes, image_max_bytes, hosted_files, hosted_file_bytes, hosted_versions, site_bytes'
const LIMIT_TAKES = `--limit takes NAME=N or NAME=default, N an integer from 0 to 9007199254740991, NAME one of ${QUOTAS}`

// Command lines each operator command refuses from its arguments alone, with the refusal's
// message: a missing, extra or unknown argument, an unknown option, contradictory options, an
// option value its table does not take, a name or password the account rules refuse. FILE
// stands for a path in the test's folder, which must stay as it was.
const REFUSED: Array<[args: string[], message: string]> = [
  [['user'], 'missing a subcommand: add or set or delete or release'],
  [['user', 'remove', 'bob'], 'unknown subcommand "remove": add or set or delete or release'],
  [['user', 'release'], 'missing <username>'],
  [['user', 'release', 'bob', 'carol'], 'unexpected argument "carol"'],
  // a delete says it means it, as svc restore's --force does
  [['user', 'delete', 'bob'], 'svc user delete removes bob and everything it holds for good: add --force to do it'],
  [['user', 'delete', '--force'], 'missing <username>'],
  [['user', 'delete', 'bob', 'carol', '--force'], 'unexpected argument "carol"'],
  [['user', 'add', '--password', PW], 'missing <username>'],
  [['user', 'add', 'bob'], 'missing --password'],
  [['user', 'add', 'bob', 'carol', '--password', PW], 'unexpected argument "carol"'],
  [['user', 'add', 'bob', '--password', PW, '--bogus'], PARSE_ARGS_UNKNOWN('bogus')],
  // the account rules the service applies (auth/account-rules.ts), with its messages
  [['user', 'add', 'Admin', '--password', PW], '"admin" is reserved'],
  [['user', 'add', 'wpad', '--password', PW], '"wpad" is reserved'],
  [['user', 'add', 'b', '--password', PW], 'username must be 2-32 characters of a-z, 0-9, _ and -, starting with a letter or digit'],
  [['user', 'add', 'bob.smith', '--password', PW], 'username must be 2-32 characters of a-z, 0-9, _ and -, starting with a letter or digit'],
  [['user', 'add', 'x'.repeat(33), '--password', PW], 'username must be 2-32 characters of a-z, 0-9, _ and -, starting with a letter or digit'],
  [['user', 'add', 'bob-', '--password', PW], 'username must not end with "-" or have "--" as its third and fourth characters'],
  [['user', 'add', 'xn--bob', '--password', PW], 'username must not end with "-" or have "--" as its third and fourth characters'],
  [['user', 'add', 'bob', '--password', 'short'], 'password must have at least 8 characters'],
  [['user', 'add', 'bob', '--password', 'é'.repeat(513)], 'password must be at most 1024 bytes'],
  [['user', 'set', 'bob', '--password', 'short'], 'password must have at least 8 characters'],
  [['user', 'set', 'bob', '--password', ''], 'password must have at least 8 characters'],
  [['user', 'set', '--vip'], 'missing <username>'],
  // nothing to change: refused as svc access set is, not "updated" with an audit entry
  [['user', 'set', 'bob'], 'nothing to set: --vip, --no-vip, --tier, --disable, --enable, --api-access, --admin, --no-admin, --password or --limit'],
  [['user', 'set', 'bob', '--tier', 'gold'], '--tier takes one of default, authenticated, vip, not "gold"'],
  [['user', 'set', 'bob', '--tier', 'VIP'], '--tier takes one of default, authenticated, vip, not "VIP"'],
  [['user', 'set', 'bob', '--api-access', 'maybe'], '--api-access takes one of on, off, not "maybe"'],
  [['user', 'set', 'bob', '--limit', 'bogus=1'], `${LIMIT_TAKES}, not "bogus=1"`],
  [['user', 'set', 'bob', '--limit', 'files=lots'], `${LIMIT_TAKES}, not "files=lots"`],
  [['user', 'set', 'bob', '--limit', '__proto__=1'], `${LIMIT_TAKES}, not "__proto__=1"`],
  [['user', 'set', 'bob', '--limit', 'files=-1'], `${LIMIT_TAKES}, not "files=-1"`],
  [['user', 'set', 'bob', '--limit', 'files=5', '--limit', 'files'], `${LIMIT_TAKES}, not "files"`],
  // past 2^53 it would be stored rounded, past the double range as null: the default, not a larger quota
  [['user', 'set', 'bob', '--limit', 'files=9007199254740992'], `${LIMIT_TAKES}, not "files=9007199254740992"`],
  [['user', 'set', 'bob', '--limit', `files=${'9'.repeat(400)}`], `${LIMIT_TAKES}, not "files=${'9'.repeat(400)}"`],
  [['user', 'set', 'bob', 'carol', '--vip'], 'unexpected argument "carol"'],
  // options that contradict each other: refused, not settled silently by the last one read
  [['user', 'set', 'bob', '--vip', '--no-vip'], '--vip and --no-vip exclude each other'],
  [['user', 'set', 'bob', '--no-vip', '--tier', 'vip'], '--no-vip and --tier exclude each other'],
  [['user', 'set', 'bob', '--tier', 'default', '--vip'], '--vip and --tier exclude each other'],
  [['user', 'set', 'bob', '--disable', '--enable'], '--disable and --enable exclude each other'],
  [['user', 'set', 'bob', '--enable', '--admin', '--no-admin'], '--admin and --no-admin exclude each other'],
  [['key'], 'missing a subcommand: create or list or revoke'],
  [['key', 'list'], 'missing <username>'],
  [['key', 'list', 'bob', 'carol'], 'unexpected argument "carol"'],
  [['key', 'revoke', 'bob'], 'missing <key-id> (svc key list shows the ids)'],
  [['key', 'revoke', 'bob', 'id', 'more'], 'unexpected argument "more"'],
  [['key', 'list', 'bob', '--name', 'x'], PARSE_ARGS_UNKNOWN('name')],
  [['key', 'create'], 'missing <username>'],
  [['key', 'create', 'bob', '--bogus'], PARSE_ARGS_UNKNOWN('bogus')],
  [['key', 'create', 'bob', '--expires-days', '0'], '--expires-days takes an integer from 1 to 365, not "0"'],
  [['key', 'create', 'bob', '--expires-days', '366'], '--expires-days takes an integer from 1 to 365, not "366"'],
  [['key', 'create', 'bob', '--expires-days', '1.5'], '--expires-days takes an integer from 1 to 365, not "1.5"'],
  [['key', 'create', 'bob', '--expires-days', ''], '--expires-days takes an integer from 1 to 365, not ""'],
  [['key', 'create', 'bob', 'carol'], 'unexpected argument "carol"'],
  // the service's rule for a key's name (auth/account-rules.ts), trimmed as it is stored
  [['key', 'create', 'bob', '--name', ''], '--name takes 1 to 64 characters, not ""'],
  [['key', 'create', 'bob', '--name', '   '], '--name takes 1 to 64 characters, not "   "'],
  [['key', 'create', 'bob', '--name', 'k'.repeat(65)], `--name takes 1 to 64 characters, not "${'k'.repeat(65)}"`],
  [['grant'], 'missing <username>'],
  [['grant', 'bob'], 'missing the feature: image-host or hosted-data'],
  [['grant', 'bob', 'paid-stuff'], 'feature must be one of image-host, hosted-data'],
  [['grant', 'bob', 'image-host', 'extra'], 'unexpected argument "extra"'],
  [['redeem-code'], 'missing a subcommand: create'],
  [['redeem-code', 'create'], 'missing the feature: image-host or hosted-data'],
  [['redeem-code', 'create', 'gold'], 'feature must be one of image-host, hosted-data'],
  [['redeem-code', 'create', 'image-host', 'extra'], 'unexpected argument "extra"'],
  [['lock'], 'missing what to lock: image or hosted-data'],
  [['lock', 'image'], 'missing <public_token>'],
  [['lock', 'picture', 'tok'], 'unknown kind "picture": image or hosted-data'],
  [['lock', 'image', 'tok', 'extra'], 'unexpected argument "extra"'],
  [['unlock', 'hosted-data'], 'missing <file_id>'],
  [['unlock', 'hosted-data', 'f1', '--bogus'], PARSE_ARGS_UNKNOWN('bogus')],
  [['feature', 'bob'], 'missing <file_name>'],
  [['feature', 'bob', 'a.html', 'b.html'], 'unexpected argument "b.html"'],
  [['feature', 'bob', 'a.html', '--bogus'], PARSE_ARGS_UNKNOWN('bogus')],
  [['sweep', 'now'], 'unexpected argument "now"'],
  [['sweep', '--grace-seconds', 'soon'], '--grace-seconds takes an integer from 0 to 31536000, not "soon"'],
  [['sweep', '--grace-seconds=-1'], '--grace-seconds takes an integer from 0 to 31536000, not "-1"'],
  [['sweep', '--grace-seconds', '-1'], '--grace-seconds takes an integer from 0 to 31536000, not "-1"'],
  [['sweep', '--bogus'], PARSE_ARGS_UNKNOWN('bogus')],
  [['export', 'bob'], 'missing FILE'],
  [['export', 'bob', 'FILE', 'extra'], 'unexpected argument "extra"'],
  [['export', 'bob', 'FILE', '--bogus'], PARSE_ARGS_UNKNOWN('bogus')],
  [['import'], 'missing FILE'],
  [['import', 'FILE', 'FILE'], 'unexpected argument "FILE"'],
  [['import', 'FILE', '--as'], "Option '--as <value>' argument missing"],
  [['import', 'FILE', '--as', 'wpad'], '"wpad" is reserved'],
  [['import', 'FILE', '--as', 'a.b'], 'username must be 2-32 characters of a-z, 0-9, _ and -, starting with a letter or digit'],
  [['migrate', 'now'], 'svc migrate takes no arguments (now)'],
  [['backup'], 'missing DIR (or s3://BUCKET)'],
  [['backup', 'FILE', 'extra'], 'unexpected argument "extra"'],
  [['backup', 'FILE', '--keep', '0'], '--keep takes an integer from 1 to 10000, not "0"'],
  // past 2^53 a number is read rounded, and enough digits read as Infinity: each has a bound
  [['backup', 'FILE', '--keep', '10001'], '--keep takes an integer from 1 to 10000, not "10001"'],
  [['backup', 'FILE', '--keep', '9'.repeat(400)], `--keep takes an integer from 1 to 10000, not "${'9'.repeat(400)}"`],
  [['sweep', '--grace-seconds', '31536001'], '--grace-seconds takes an integer from 0 to 31536000, not "31536001"'],
  [['sweep', '--grace-seconds', '9007199254740993'], '--grace-seconds takes an integer from 0 to 31536000, not "9007199254740993"'],
  [['sweep', '--grace-seconds', '9'.repeat(400)], `--grace-seconds takes an integer from 0 to 31536000, not "${'9'.repeat(400)}"`],
  [['restore'], 'missing SNAPSHOT (a folder svc backup made, or its s3:// address)'],
  [['restore', 'FILE', '--bogus'], PARSE_ARGS_UNKNOWN('bogus')],
]

/** The refusal of a command line as stderr shows it: the message, then the command's synopsis. */
const refusal = (args: string[], message: string) => `error: ${message}\n${usageText(OPERATOR_HELP[args[0] as keyof typeof OPERATOR_HELP])}\n`

// checkArguments reads no configuration and touches no file (its signature takes neither):
// every refused line is checked in this process, and the spawned cases below show that such a
// refusal is what `svc` prints, with exit 2, before anything is opened or made (decision 198)
// one rule for a quota's largest value: svc user set --limit takes what the admin API's schema
// (and so the admin console) takes, and refuses what it refuses
it("svc user set --limit takes a quota up to the admin API schema's maximum, and no more", () => {
  const limits = UserPatch.properties.limits as unknown as { patternProperties: Record<string, { anyOf: Array<{ maximum?: number }> }> }
  const schemaMax = Object.values(limits.patternProperties)[0].anyOf.find((b) => b.maximum !== undefined)?.maximum
  assert.equal(schemaMax, QUOTA_MAX)
  assert.deepEqual(limitSetting(`site_bytes=${QUOTA_MAX}`), ['site_bytes', QUOTA_MAX])
  assert.equal(limitSetting(`site_bytes=${BigInt(QUOTA_MAX) + 1n}`), null)
  assert.ok(LIMIT_TAKES.includes(`from 0 to ${QUOTA_MAX},`))
})

describe('operator commands: each refused command line, its message and the synopsis', () => {
  for (const [args, message] of REFUSED)
    it(`svc ${args.join(' ').slice(0, 80)}: ${message.slice(0, 60)}`, () => {
      const line = commandLine(args[0], args.slice(1))
      assert.ok('refused' in line, 'refused')
      assert.equal(line.refused, refusal(args, message))
    })
})

// the help's examples are copied as they stand: each must be a command line its command takes
describe("operator commands: every example of a command's help is a command line it takes", () => {
  // svc serve takes no argument and is started by main.ts, not checked by commandLine
  for (const [cmd, help] of Object.entries(OPERATOR_HELP).filter(([c]) => c !== 'serve'))
    for (const example of help.examples)
      it(example, () => {
        // leading VAR=value assignments are the shell's; "$PW" stands for a password
        const words = example.split(' ').filter((w, i, all) => !(/^[A-Z_]+=/.test(w) && all.slice(0, i).every((x) => /^[A-Z_]+=/.test(x))))
        assert.equal(words[0], 'svc')
        assert.equal(words[1], cmd)
        const line = commandLine(
          cmd,
          words.slice(2).map((w) => (w === '"$PW"' ? PW : w)),
        )
        assert.ok('checked' in line, 'refused' in line ? line.refused : '')
      })
})

// Some of REFUSED, one of each kind of refusal, run as `svc`: a value of a table, a positional
// argument, an account rule, node:util's refusal, a command that opens no database
const SPAWNED = [
  ['user', 'add', 'Admin', '--password', PW],
  ['user', 'add', 'bob', '--password', 'short'],
  ['user', 'set', 'bob', '--password', 'short'],
  ['user', 'set', 'bob', '--tier', 'gold'],
  ['user', 'set', 'bob', '--limit', 'files=lots'],
  ['user', 'set', 'bob', '--vip', '--no-vip'],
  ['key', 'create', 'bob', '--expires-days', '366'],
  ['key', 'create', 'bob', '--name', ''],
  ['user', 'set', 'bob', '--limit', 'files=9007199254740992'],
  ['grant', 'bob', 'paid-stuff'],
  ['export', 'bob', 'FILE', '--bogus'],
  ['migrate', 'now'],
  ['backup', 'FILE', '--keep', '0'],
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

    for (const [i, given] of SPAWNED.entries()) {
      it(`svc ${given.join(' ')}: exit 2, the error and the synopsis, nothing made`, async () => {
        const dir = path.join(tmp, `data-${i}`)
        const db = path.join(dir, 'svc.db')
        // SQLite: a data folder whose svc.db has no tables yet, so any migration would show
        if (engine === 'sqlite') {
          fs.mkdirSync(dir, { recursive: true })
          fs.writeFileSync(db, '')
        }
        const before = fs.readdirSync(tmp).sort()
        const args = given.map((a) => (a === 'FILE' ? path.join(tmp, 'out.zip') : a))
        const r = await runCli(args, { env: envFor(dir, untouched(i)) })
        assert.equal(r.code, 2, r.stderr + r.stdout)
        assert.equal(r.stdout, '')
        const [, message] = REFUSED.find(([a]) => a.join(' ') === given.join(' '))!
        assert.equal(r.stderr, refusal(args, message))
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

    it("a name the configuration reserves (the service's host under CONTENT_DOMAIN): exit 2 once it is read, nothing made", async () => {
      const reserving = { PUBLIC_URL: 'https://svc.example.test', CONTENT_DOMAIN: 'example.test' }
      for (const [i, given] of [
        ['user', 'add', 'SVC', '--password', PW],
        ['import', 'FILE', '--as', 'svc'],
      ].entries()) {
        const dir = path.join(tmp, `reserved-${i}`)
        const args = given.map((a) => (a === 'FILE' ? path.join(tmp, 'none.zip') : a))
        const r = await runCli(args, { env: { ...envFor(dir, untouched(100 + i)), ...reserving } })
        assert.equal(r.code, 2, r.stderr + r.stdout)
        assert.equal(r.stderr, refusal(args, '"svc" is reserved'))
        assert.equal(fs.existsSync(dir), false, 'no DATA_DIR made')
        if (engine === 'postgres') assert.equal(await schemaExists(client!, untouched(100 + i)), false, 'no schema made')
      }
    })

    if (engine === 'sqlite')
      it('a DATA_DIR that does not exist: the usage error comes first (exit 2, not 78), and no folder is made', async () => {
        const dir = path.join(tmp, 'typo')
        for (const args of [
          ['key', 'create', 'bob', '--bogus'],
          ['user', 'set', 'bob', '--tier', 'gold'],
          ['user', 'add', 'bob-', '--password', PW],
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
        [['user', 'add', 'Carol', '--password', 'é'.repeat(512)], 0, /^created user carol \(authenticated\)\n$/],
        [['user', 'add', 'carol', '--password', PW], 1, /^error: user "carol" already exists\n$/],
        [
          [
            'user',
            'set',
            'bob',
            '--tier',
            'authenticated',
            '--api-access',
            'off',
            '--limit',
            'files=5',
            '--limit',
            'kv_keys=default',
            '--password',
            'x'.repeat(8),
          ],
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
        [['export', 'nobody', path.join(tmp, 'nobody.zip')], 1, /^error: no user "nobody"\n$/],
        [
          ['import', path.join(tmp, 'missing.zip')],
          1,
          /^error: \S+missing\.zip does not exist: svc import takes the \.zip or \.tar\.gz file that svc export wrote; nothing was imported\n$/,
        ],
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

    it("a name or password the account rules refuse: the command line is refused with the service's own message", async () => {
      // the database of the test above: what createUsers refuses there, svc refuses before it
      const db = await openDatabase({ databaseUrl: engine === 'postgres' ? `${PG_URL}?schema=${used}` : null, dataDir: path.join(tmp, 'live') })
      try {
        const users = createUsers(db, systemClock)
        const refusedBy = (p: Promise<unknown>) =>
          p.then(
            () => assert.fail('accepted'),
            (e: Error) => e.message,
          )
        for (const [name, password] of [
          ['Admin', PW],
          ['b', PW],
          ['bob-', PW],
          ['dave', 'short'],
          ['dave', 'é'.repeat(513)],
        ]) {
          const line = commandLine('user', ['add', name, '--password', password])
          assert.ok('refused' in line)
          assert.equal(line.refused, refusal(['user'], await refusedBy(users.create(name, password))), name)
        }
        const line = commandLine('user', ['set', 'bob', '--password', 'short'])
        assert.ok('refused' in line)
        assert.equal(line.refused, refusal(['user'], await refusedBy(users.update('bob', { password: 'short' }))))
      } finally {
        await db.close()
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
    [['forms', 'delete-submission'], /missing the submission id/],
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
    [['kv', 'ls', '--page', '0'], /--page takes an integer from 1 to 999999999, not "0"/],
    [['kv', 'ls', '--per-page', 'abc'], /--per-page takes an integer from 1 to 100/],
    [['kv', 'incr', 'hits', '--by', 'abc'], /--by takes a number, not "abc"/],
    [['kv', 'incr', 'hits', 'abc'], /"abc" is not a number/],
    [['deploy', '.', '--concurrency', '0'], /--concurrency takes an integer from 1 to 64, not "0"/],
    [['deploy', '.', '--concurrency', 'abc'], /--concurrency takes an integer from 1 to 64/],
    [['deploy', '.', '--batch-files', '0'], /--batch-files takes an integer from 1 to 10000/],
    // past 2^53 a number is read rounded, and enough digits read as Infinity: each has a bound
    [['deploy', '.', '--concurrency', '65'], /--concurrency takes an integer from 1 to 64, not "65"/],
    [['deploy', '.', '--concurrency', '9'.repeat(400)], /--concurrency takes an integer from 1 to 64, not "9{400}"/],
    [['deploy', '.', '--batch-files', '9007199254740993'], /--batch-files takes an integer from 1 to 10000, not "9007199254740993"/],
    [['deploy', '.', '--batch-files', '9'.repeat(400)], /--batch-files takes an integer from 1 to 10000, not "9{400}"/],
    [['kv', 'ls', '--page', '1000000000'], /--page takes an integer from 1 to 999999999, not "1000000000"/],
    [['kv', 'ls', '--per-page', '101'], /--per-page takes an integer from 1 to 100, not "101"/],
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
    it(`svc ${args.join(' ').slice(0, 80)}`, async () => {
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
