import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs, { existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { runCli } from './run.js'
import { COMMON_OPTIONS } from '../../src/cli/client/args.js'
import { CLIENT_HELP } from '../../src/cli/client/help.js'
import { allFlags, exclusivePairs, GENERAL_HELP, renderHelp, type CommandHelp, type Flags } from '../../src/cli/help.js'
import { OPERATOR_HELP } from '../../src/cli/operator-help.js'

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..')

const OPERATOR = 'Server and operator commands'
const CLIENT = 'Client commands'

// `svc --help`, `-h`, `help` and `svc` alone print both lists; a command's own help is tested below
describe('svc help', () => {
  for (const args of [['--help'], ['-h'], ['help'], []]) {
    it(`svc ${args.join(' ')}`.trim(), async () => {
      const r = await runCli(args)
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stderr, '')
      for (const s of [OPERATOR, CLIENT]) assert.ok(r.stdout.includes(s), `${s} in:\n${r.stdout}`)
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
    assert.match(r.stderr, /^error: unknown command "nope"/)
    assert.ok(r.stderr.includes(OPERATOR) && r.stderr.includes(CLIENT))
  })

  it('an option before the command: exit 2, and the line with the command first', async () => {
    const before = await runCli(['--url', 'https://example.test', 'whoami', '--json'])
    assert.equal(before.code, 2)
    assert.equal(before.stdout, '')
    assert.equal(before.stderr, 'error: options go after the command: svc whoami --url https://example.test --json\n')
    const alone = await runCli(['-x'])
    assert.equal(alone.code, 2)
    assert.equal(alone.stderr, 'error: unknown option "-x": the command comes first (svc COMMAND [OPTIONS]); svc --help lists the commands\n')
  })

  // each an operator command's bad arguments: exit 2 and one "error:" message, nothing done;
  // the arguments are checked before the data folder (DATA_DIR here does not exist: decision 190)
  let tmp = ''
  let noData = ''
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-help-'))
    noData = path.join(tmp, 'no-data-here')
  })
  after(() => fs.rmSync(tmp, { recursive: true, force: true }))
  it('a bad setting: exit 78 and one "error:" message naming each variable, nothing made', async () => {
    const dir = path.join(tmp, 'bad-settings')
    for (const [args, extra] of [
      [['serve'], { PORT: 'not-a-port', LOG_LEVEL: 'loud' }],
      [['user', 'add', 'x1', '--password', 'a long password'], { DATABASE_URL: 'mysql://nope' }],
    ] as const) {
      const r = await runCli([...args], { env: { DATA_DIR: dir, ...extra } })
      assert.equal(r.code, 78, r.stderr)
      assert.equal(r.stdout, '')
      assert.match(r.stderr, /^error: invalid configuration:\n( {2}[A-Z_]+: .+\n)+$/)
      for (const name of Object.keys(extra)) assert.ok(r.stderr.includes(`\n  ${name}: `), `${name} named in ${r.stderr}`)
    }
    assert.equal(fs.existsSync(dir), false, 'no data folder made')
  })

  const bad: Array<[args: string[], message: RegExp]> = [
    [['serve', '--bogus'], /^error: Unknown option '--bogus'/],
    [['key', 'create', 'bob', '--nope'], /^error: Unknown option '--nope'/],
    // a negative value after a space is the option's value, refused by the option's own check
    [['key', 'create', 'bob', '--expires-days', '-5'], /^error: --expires-days takes an integer from 1 to \d+, not "-5"\nusage: svc key /],
    [['sweep', '--grace-seconds', '-60'], /^error: --grace-seconds takes an integer from 0 to 31536000, not "-60"\nusage: svc sweep /],
    [['backup', 'somewhere', '--keep'], /^error: Option '--keep <value>' argument missing/],
    [['move'], /^error: missing --from-data-dir DIR \(the data folder of the SQLite instance to move\)\nusage: svc move /],
    [['move', '--from-data-dir', 'x', 'extra'], /^error: unexpected argument "extra"\nusage: svc move /],
    [['sweep', '--grace-seconds=-60'], /^error: --grace-seconds takes an integer from 0 to 31536000, not "-60"\nusage: svc sweep /],
    [['sweep', '--grace-seconds', 'soon'], /^error: --grace-seconds takes an integer from 0 to 31536000, not "soon"\nusage: svc sweep /],
  ]
  for (const [args, message] of bad) {
    it(`svc ${args.join(' ')}: a usage error`, async () => {
      const r = await runCli(args, { env: { DATA_DIR: noData, PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1' } })
      assert.equal(r.code, 2, r.stderr)
      assert.match(r.stderr, message)
      assert.equal(r.stdout, '')
      assert.equal(fs.existsSync(noData), false, 'no data folder made')
    })
  }

  // an option no command takes: exit 2, the error, then the command's synopsis, nothing done
  // (redeem-code and lock read no option before, and went on without a word)
  for (const args of [
    ['serve', '--bogus'],
    ['key', 'create', 'bob', '--bogus'],
    ['redeem-code', 'create', 'hosted-data', '--bogus'],
    ['lock', 'image', 'tok', '--bogus'],
    ['export', 'bob', 'bob.zip', '--bogus'],
    ['version', '--bogus'],
    ['deploy', '.', '--bogus'],
    ['whoami', '--bogus'],
    ['forms', 'ls', '--bogus'],
    ['mcp', '--bogus'],
  ]) {
    it(`svc ${args.join(' ')}: exit 2, the error and the usage on stderr`, async () => {
      const r = await runCli(args, { env: { DATA_DIR: noData, PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1', SVC_URL: 'http://127.0.0.1:9' } })
      assert.equal(r.code, 2, r.stderr)
      assert.equal(r.stdout, '')
      assert.match(r.stderr, /^error: .*--bogus/i)
      assert.match(r.stderr, new RegExp(`\\nusage: svc ${args[0]}\\b`), r.stderr)
    })
  }
})

// Every command has its own help: `svc CMD --help`, `svc CMD -h` and `svc help CMD` print that
// command's synopsis (every "usage:" line names it), what it does and its options, exit 0, and
// read no configuration, data folder or server. The environment here would make any of those fail.
describe('svc CMD --help: the command help', () => {
  const CLIENT_CMDS = [
    'login',
    'logout',
    'whoami',
    'deploy',
    'deploys',
    'rollback',
    'promote',
    'delete',
    'user-site',
    'page',
    'kv',
    'data',
    'forms',
    'domain',
    'access',
    'mcp',
  ]
  const OPERATOR_CMDS = [
    'serve',
    'migrate',
    'user',
    'key',
    'grant',
    'redeem-code',
    'lock',
    'unlock',
    'feature',
    'sweep',
    'backup',
    'restore',
    'move',
    'export',
    'import',
  ]
  const GENERAL_CMDS = ['help', 'version']
  let scratch = ''
  let env: Record<string, string> = {}
  before(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cmd-help-'))
    const badConfig = path.join(scratch, 'config.json')
    fs.writeFileSync(badConfig, 'not json')
    env = {
      HOME: path.join(scratch, 'no-home'),
      XDG_CONFIG_HOME: path.join(scratch, 'no-xdg'),
      SVC_CONFIG: badConfig,
      SVC_URL: 'http://127.0.0.1:9',
      SVC_API_KEY: 'bogus',
      // an operator command that read its configuration would stop here (exit 78)
      PORT: 'not-a-port',
      DATA_DIR: path.join(scratch, 'data'),
      DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none',
    }
  })
  after(() => fs.rmSync(scratch, { recursive: true, force: true }))

  // `svc CMD --help`, run once per command for every test here that reads it
  const helpRuns = new Map<string, ReturnType<typeof runCli>>()
  const helpOf = (cmd: string): ReturnType<typeof runCli> => {
    let r = helpRuns.get(cmd)
    if (r === undefined) helpRuns.set(cmd, (r = runCli([cmd, '--help'], { env })))
    return r
  }

  /** The synopsis: the "usage:" line and the indented lines after it, up to the first blank line. */
  const synopsis = (out: string): string[] => {
    const lines = out.split('\n')
    const i = lines.findIndex((l) => l.startsWith('usage: '))
    assert.ok(i >= 0, `a usage line in:\n${out}`)
    const end = lines.indexOf('', i)
    return lines.slice(i, end < 0 ? undefined : end).map((l) => l.replace(/^usage: /, '').trim())
  }

  for (const cmd of [...CLIENT_CMDS, ...OPERATOR_CMDS, ...GENERAL_CMDS]) {
    it(`svc ${cmd} --help, -h and svc help ${cmd}`, async () => {
      const outs: string[] = []
      for (const args of [
        [cmd, '--help'],
        [cmd, '-h'],
        ['help', cmd],
      ]) {
        const r = await (args[1] === '--help' ? helpOf(cmd) : runCli(args, { env }))
        assert.equal(r.code, 0, `svc ${args.join(' ')}: ${r.stderr}`)
        assert.equal(r.stderr, '', `svc ${args.join(' ')}`)
        outs.push(r.stdout)
      }
      assert.equal(outs[1], outs[0], '-h prints what --help does')
      assert.equal(outs[2], outs[0], 'svc help CMD prints what CMD --help does')
      const out = outs[0]
      for (const line of synopsis(out))
        assert.ok(line.startsWith(`svc ${cmd} `) || line === `svc ${cmd}` || line.startsWith('['), `a synopsis line of another command: ${line}`)
      assert.ok(!out.includes(OPERATOR) && !out.includes(CLIENT), 'not the whole list')
      assert.match(out, /\nExamples:\n {2}svc /, 'an example')
      assert.ok(!existsSync(env.DATA_DIR), 'no data folder made')
    })
  }

  it('the help tables hold every command, and nothing else', () => {
    assert.deepEqual(Object.keys(CLIENT_HELP).sort(), [...CLIENT_CMDS].sort())
    assert.deepEqual(Object.keys(OPERATOR_HELP).sort(), [...OPERATOR_CMDS].sort())
    assert.deepEqual(Object.keys(GENERAL_HELP).sort(), [...GENERAL_CMDS].sort())
  })

  // the parsers read their options from these tables (parserOptions, parse): each option
  // there, and each connection option of a client command, has its line in the help
  for (const [cmd, h, common] of [
    ...Object.entries(CLIENT_HELP).map(([c, h]) => [c, h, COMMON_OPTIONS] as const),
    ...Object.entries(OPERATOR_HELP).map(([c, h]) => [c, h, {}] as const),
    ...Object.entries(GENERAL_HELP).map(([c, h]) => [c, h, {}] as const),
  ]) {
    it(`svc ${cmd} --help lists every option its parser takes`, async () => {
      const r = await helpOf(cmd)
      assert.equal(r.code, 0, r.stderr)
      const flags: Flags = { ...allFlags(h), ...common }
      for (const [name, f] of Object.entries(flags)) {
        const short = f.short ? `-${f.short}, ` : ' {4}'
        assert.match(r.stdout, new RegExp(`^ {2}${short}--${name}\\b.*\\S`, 'm'), `--${name} in:\n${r.stdout}`)
      }
    })
  }

  // the top-level list is made from the same tables: a command added to one is listed with
  // no second edit (and the loop above checks each listed command has its own help)
  it('svc --help lists every command of the tables with its summary, and nothing else', async () => {
    const r = await runCli(['--help'], { env })
    assert.equal(r.code, 0, r.stderr)
    const tables: Record<string, CommandHelp> = { ...OPERATOR_HELP, ...CLIENT_HELP, ...GENERAL_HELP }
    const listed = [...r.stdout.matchAll(/^ {2}([a-z][a-z-]*) {2,}(\S.*)$/gm)].map((m) => [m[1], m[2]] as const)
    assert.deepEqual(listed.map(([c]) => c).sort(), Object.keys(tables).sort())
    for (const [c, summary] of listed) assert.equal(summary, tables[c].summary, `the summary of ${c}`)
    for (const line of r.stdout.split('\n')) assert.ok(line.length <= 100, `a line over 100 columns: ${line}`)
  })

  // parse(), admin.ts's parseOptions(), parseArgs() and main.ts's usageRefused() take the
  // options from the help tables, never an inline table, so the option test above sees every
  // option a command takes. A source scan: the call sites are few and plain. parse(),
  // parseOptions() and usageRefused() hand their caller's table on to parseArgs: those three
  // calls are the exceptions.
  it('every parser in src/cli reads its options from a help table', () => {
    const dir = path.join(ROOT, 'src', 'cli')
    const PASSED_ON = new Set([`${path.join('client', 'args.ts')}: all`, 'main.ts: parserOptions(h.flags)', 'admin.ts: parserOptions(flags)'])
    /** The top-level comma-separated parts inside the bracket at `open`. */
    const parts = (text: string, open: number): string[] => {
      const out: string[] = []
      let depth = 0
      let start = open + 1
      for (let i = open; i < text.length; i++) {
        const c = text[i]
        if ('([{'.includes(c)) depth++
        else if (')]}'.includes(c) && --depth === 0) return [...out, text.slice(start, i).trim()].filter(Boolean)
        else if (c === ',' && depth === 1) {
          out.push(text.slice(start, i).trim())
          start = i + 1
        }
      }
      throw new Error(`unbalanced call at ${open}`)
    }
    const TABLE = /^(?:parserOptions\()?(?:CLIENT_HELP|OPERATOR_HELP|GENERAL_HELP)(?:\.[\w]+|\[[\w'-]+\])+\)?$/
    const found: string[] = []
    for (const f of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
      if (!f.endsWith('.ts')) continue
      const text = fs.readFileSync(path.join(dir, f), 'utf8')
      for (const m of text.matchAll(/(?<![.\w]|function )(parse|parseOptions|parseArgs|usageRefused)\(/g)) {
        const args = parts(text, m.index + m[0].length - 1)
        const options =
          m[1] === 'parse' || m[1] === 'parseOptions'
            ? args[1]
            : m[1] === 'usageRefused'
              ? args[0]
              : parts(args[0], 0)
                  .find((p) => p.startsWith('options:'))
                  ?.slice(8)
                  .trim()
        if (PASSED_ON.has(`${f}: ${options}`)) continue
        found.push(`${f}: ${m[1]}(${options})`)
        assert.match(options ?? '(none)', TABLE, `${f}: ${m[1]}(...) with options ${options}`)
      }
    }
    assert.ok(found.length >= 30, `the scan found the parsers:\n${found.join('\n')}`)
  })

  // the synopsis names every option a command takes, on a line of the subcommand that takes
  // it (a subcommand's own table): an option only the options list shows is easy to miss
  it("every option of a table is in a synopsis line (its subcommand's)", () => {
    const missing: string[] = []
    for (const [cmd, h] of Object.entries({ ...OPERATOR_HELP, ...CLIENT_HELP, ...GENERAL_HELP } as Record<string, CommandHelp>)) {
      const lines = synopses(h.usage)
      const tables: Array<[sub: string | undefined, flags: Flags]> = [[undefined, h.flags ?? {}], ...Object.entries(h.subs ?? {})]
      for (const [sub, flags] of tables)
        for (const [name, f] of Object.entries(flags)) {
          const shown = lines.some(
            (l) => (sub === undefined || l.sub === sub) && (l.options.includes(`--${name}`) || (f.short !== undefined && l.options.includes(`-${f.short}`))),
          )
          if (!shown) missing.push(`svc ${cmd}${sub ? ` ${sub}` : ''} --${name}`)
        }
    }
    assert.deepEqual(missing, [], 'options in no synopsis line of their (sub)command')
  })

  // a command with subcommands whose options are not all everyone's declares them by
  // subcommand (`subs`), so its parser refuses an option of another subcommand (decision 196)
  it('a command whose synopsis has several subcommands declares its options per subcommand', () => {
    for (const [cmd, h] of Object.entries({ ...OPERATOR_HELP, ...CLIENT_HELP } as Record<string, CommandHelp>)) {
      const subs = new Set(synopses(h.usage).flatMap((l) => (l.sub === undefined ? [] : [l.sub])))
      if (h.subs === undefined) {
        if (subs.size > 1) assert.deepEqual(Object.keys(h.flags), [], `svc ${cmd} (${[...subs].join(', ')}): options by subcommand (subs)`)
      } else assert.deepEqual([...subs].sort(), Object.keys(h.subs).sort(), `svc ${cmd}: a table for each subcommand of the synopsis`)
    }
  })

  it('a subcommand with --help prints its command help: svc kv incr -h, svc user add bob --help', async () => {
    const kv = await helpOf('kv')
    assert.ok(kv.stdout.includes('svc kv incr'), kv.stdout)
    assert.ok(!kv.stdout.includes('deploy'), 'nothing of svc deploy')
    for (const args of [
      ['kv', 'incr', '-h'],
      ['kv', 'incr', 'hits', '--help', '--json'],
    ]) {
      const r = await runCli(args, { env })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stdout, kv.stdout)
    }
    const user = await runCli(['user', 'add', 'bob', '--help'], { env })
    assert.equal(user.code, 0, user.stderr)
    assert.match(user.stdout, /^usage: svc user add/m)
    assert.ok(!user.stdout.includes('svc key create'))
  })

  it('svc deploy --help: each flag with its meaning, a default, the environment', async () => {
    const r = await helpOf('deploy')
    assert.match(r.stdout, /^ {2}-m, --message MESSAGE +\S/m)
    assert.match(r.stdout, /--concurrency N +.*\(default 2\)/)
    assert.match(r.stdout, /^Environment:\n(?: {2}.*\n)*? {2}SVC_URL\b/m)
  })

  it('svc help nosuch: exit 2, the command named and svc --help pointed to', async () => {
    for (const args of [
      ['help', 'nosuch'],
      ['help', 'nosuch', 'more'],
    ]) {
      const r = await runCli(args, { env })
      assert.equal(r.code, 2)
      assert.equal(r.stdout, '')
      assert.equal(r.stderr, 'error: unknown command "nosuch": svc --help lists the commands\n')
    }
  })

  it('svc help help: the help command itself', async () => {
    const r = await runCli(['help', 'help'], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^usage: svc help \[COMMAND\]/m)
  })
})

/**
 * The synopsis lines of a table, each `svc` line with the indented lines that continue it: the
 * subcommand it is about (its second word, when that is a plain lowercase word) and the options
 * it names (`--name` and `-x`).
 */
function synopses(usage: readonly string[]): Array<{ sub?: string; options: string[] }> {
  const out: Array<{ sub?: string; options: string[] }> = []
  for (const line of usage) {
    if (line.startsWith('svc ')) {
      const second = line.split(' ')[2]
      out.push({ sub: second !== undefined && /^[a-z][a-z-]*$/.test(second) ? second : undefined, options: [] })
    }
    out[out.length - 1].options.push(...[...line.matchAll(/(?<![\w-])(--?[A-Za-z][\w-]*)/g)].map((m) => m[1]))
  }
  return out
}

/**
 * Every options table a parser reads, with the words that reach that parser: a subcommand's
 * own table (`user set`), or a command's (with the subcommand of the first synopsis line that
 * names `flag`, for `access set`). `common`: what the parser takes besides (client commands).
 */
function optionTables(): Array<{ label: string; words: (flag: string) => string[]; h: CommandHelp; flags: Flags; common: Flags }> {
  const out: ReturnType<typeof optionTables> = []
  const tables: Array<[Record<string, CommandHelp>, Flags]> = [
    [OPERATOR_HELP, {}],
    [CLIENT_HELP, COMMON_OPTIONS],
  ]
  for (const [table, common] of tables)
    for (const [cmd, h] of Object.entries(table)) {
      for (const [sub, flags] of Object.entries(h.subs ?? {})) out.push({ label: `${cmd} ${sub}`, words: () => [cmd, sub], h, flags, common })
      if (h.flags) {
        const words = (flag: string) => {
          const line = h.usage.find((u) => u.split(' ').some((w) => w.replace(/^\[/, '') === `--${flag}`)) ?? `svc ${cmd}`
          const lead = line.split(' ').slice(1)
          const n = lead.findIndex((w) => !/^[a-z][a-z-]*$/.test(w))
          return n < 0 ? lead : lead.slice(0, n)
        }
        out.push({ label: cmd, words, h, flags: h.flags, common })
      }
    }
  return out
}

// Options that contradict each other are declared in the tables (`excludes`); the shared
// parsing code refuses any such pair before anything else, and each option's help names the
// options it excludes. Decision 194.
describe('options that exclude each other', () => {
  const REQUIRED: Array<[table: string, a: string, b: string]> = [
    ['user set', 'vip', 'no-vip'],
    ['user set', 'vip', 'tier'],
    ['user set', 'no-vip', 'tier'],
    ['user set', 'disable', 'enable'],
    ['user set', 'admin', 'no-admin'],
    ['forms notify', 'webhook', 'no-webhook'],
    ['forms notify', 'paused', 'no-webhook'],
    ['kv set', 'counter', 'no-counter'],
    ['kv set', 'public', 'no-public'],
    ['kv incr', 'counter', 'no-counter'],
    ['kv ls', 'public', 'page'],
    ['access set', 'password-stdin', 'no-password'],
    ['access set', 'expires', 'no-expiry'],
    ['login', 'password', 'password-stdin'],
    ['login', 'key', 'key-stdin'],
    ['login', 'password-stdin', 'key-stdin'],
  ]
  const declared = optionTables().flatMap((t) => exclusivePairs({ ...t.common, ...t.flags }).map(([a, b]) => ({ ...t, a, b })))

  it('the tables declare the contradictory pairs, each naming an option of its own table', () => {
    const names = declared.map((d) => `${d.label}: ${[d.a, d.b].sort().join(' ')}`)
    for (const [t, a, b] of REQUIRED) assert.ok(names.includes(`${t}: ${[a, b].sort().join(' ')}`), `${t}: --${a} and --${b} in\n${names.join('\n')}`)
    assert.equal(new Set(names).size, names.length, 'each pair once')
    for (const t of optionTables())
      for (const [name, f] of Object.entries(t.flags))
        for (const other of f.excludes ?? []) {
          assert.ok(Object.hasOwn({ ...t.common, ...t.flags }, other), `${t.label} --${name} excludes --${other}, which it does not take`)
          assert.notEqual(other, name)
        }
  })

  it("each option's help names the options it excludes", () => {
    for (const d of declared) {
      const help = renderHelp(d.h, { title: 'Options every client command takes:', flags: d.common })
      // the block of this table (a subcommand's own one, or the command's), then the option's lines
      const sub = d.label.split(' ')[1]
      const block = sub === undefined ? help : help.slice(help.indexOf(`Options of svc ${d.label}:`))
      for (const [x, y] of [
        [d.a, d.b],
        [d.b, d.a],
      ]) {
        if (!Object.hasOwn(d.flags, x)) continue // a common option's block is every command's: it names none
        const lines = block.split('\n')
        const i = lines.findIndex((l) => new RegExp(`^ {2}(?:-\\w, | {4})--${x}\\b`).test(l))
        assert.ok(i >= 0, `--${x} in the help of ${d.label}`)
        let text = lines[i]
        for (let j = i + 1; j < lines.length && /^ {8,}\S/.test(lines[j]); j++) text += ` ${lines[j].trim()}`
        assert.match(text.replace(/\s+/g, ' '), new RegExp(`; not with (?:--[\\w-]+, )*--${y}\\b[^;]*$`), `${d.label}: ${text}`)
      }
    }
  })

  let tmp = ''
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-excludes-'))
  })
  after(() => fs.rmSync(tmp, { recursive: true, force: true }))
  it('each declared pair, in either order, is refused first: exit 2, both named, the synopsis', async () => {
    assert.ok(declared.length >= REQUIRED.length)
    const env = {
      DATA_DIR: path.join(tmp, 'no-data'),
      SVC_URL: 'http://127.0.0.1:9',
      SVC_API_KEY: 'x'.repeat(64),
      SVC_CONFIG: path.join(tmp, 'no-config.json'),
    }
    const given = (d: (typeof declared)[number], name: string) => {
      const f = d.flags[name] ?? d.common[name]
      return f.type === 'string' ? [`--${name}`, 'x'] : [`--${name}`]
    }
    for (const d of declared)
      for (const order of [
        [d.a, d.b],
        [d.b, d.a],
      ]) {
        const args = [...d.words(d.a), ...given(d, order[0]), ...given(d, order[1])]
        const r = await runCli(args, { env, input: 'secret\n' })
        const what = `svc ${args.join(' ')}`
        assert.equal(r.code, 2, `${what}: ${r.stderr}`)
        assert.equal(r.stdout, '', what)
        assert.match(r.stderr, new RegExp(`^error: --${d.a} and --${d.b} exclude each other\\nusage: svc ${args[0]}\\b`), what)
        assert.equal(fs.existsSync(env.DATA_DIR), false, `${what}: no data folder made`)
      }
  })
})

// An option of one subcommand is refused by another (exit 2, the error and the synopsis), as
// the parser of each subcommand reads that subcommand's table: each option of a `subs` table,
// given to the first subcommand that does not take it (decision 196)
describe('an option of another subcommand', () => {
  let tmp = ''
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-subopts-'))
  })
  after(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const tables = optionTables().filter((t) => t.label.includes(' '))
  const cases = new Map<string, { args: string[]; name: string }>()
  for (const t of tables)
    for (const [name, f] of Object.entries(allFlags(t.h))) {
      const [cmd, sub] = t.label.split(' ')
      const key = `${cmd} --${name}`
      if (cases.has(key) || Object.hasOwn(t.flags, name) || Object.hasOwn(t.common, name)) continue
      cases.set(key, { args: [cmd, sub, 'ARG', `--${name}`, ...(f.type === 'string' ? ['x'] : [])], name })
    }

  it('the subs tables give cases', () => assert.ok(cases.size >= 20, [...cases.keys()].join('\n')))
  for (const { args, name } of cases.values())
    it(`svc ${args.join(' ')}: exit 2, the error and the synopsis`, async () => {
      const env = {
        DATA_DIR: path.join(tmp, 'no-data'),
        SVC_URL: 'http://127.0.0.1:9',
        SVC_API_KEY: 'x'.repeat(64),
        SVC_CONFIG: path.join(tmp, 'no-config.json'),
      }
      const r = await runCli(args, { env, input: 'secret\n' })
      assert.equal(r.code, 2, r.stderr)
      assert.equal(r.stdout, '')
      assert.match(r.stderr, new RegExp(`^error: (?:unknown|Unknown) option '?--${name}\\b[^\\n]*\\nusage: svc ${args[0]}\\b`), r.stderr)
      assert.equal(fs.existsSync(env.DATA_DIR), false, 'no data folder made')
    })
})

// docs/cli.md's synopses are the ones the help prints: every synopsis of the tables (a `svc`
// line and the indented lines that continue it) is in one of its plain ``` blocks, and those
// blocks hold nothing else, so an option added to a table must be added there too
it("docs/cli.md's synopsis blocks hold exactly the help tables' synopses", () => {
  const group = (lines: readonly string[], where: string): string[] => {
    const out: string[] = []
    for (const l of lines) {
      if (l.trim() === '') continue
      if (l.startsWith('svc ')) out.push(l.trimEnd())
      else {
        assert.ok(out.length > 0 && /^ +\S/.test(l), `${where}: a line that is no synopsis: ${l}`)
        out[out.length - 1] += `\n${l.trimEnd()}`
      }
    }
    return out
  }
  const tables: Record<string, CommandHelp> = { ...OPERATOR_HELP, ...CLIENT_HELP, ...GENERAL_HELP }
  const fromTables = Object.entries(tables).flatMap(([c, h]) => group(h.usage, `the table of ${c}`))
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'cli.md'), 'utf8')
  // the fenced blocks, opening and closing lines paired in order; those opened by a bare ```
  const blocks: string[][] = []
  let open: { bare: boolean; lines: string[] } | null = null
  for (const line of doc.split('\n')) {
    if (!line.startsWith('```')) open?.lines.push(line)
    else if (open === null) open = { bare: line === '```', lines: [] }
    else {
      if (open.bare) blocks.push(open.lines)
      open = null
    }
  }
  assert.ok(blocks.length > 0, 'plain ``` blocks in docs/cli.md')
  const inDoc = blocks.flatMap((b) => group(b, 'docs/cli.md'))
  const missing = fromTables.filter((u) => !inDoc.includes(u))
  const extra = inDoc.filter((u) => !fromTables.includes(u))
  assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, 'synopses missing from docs/cli.md, or there and in no table')
  assert.equal(new Set(inDoc).size, inDoc.length, 'each synopsis once in docs/cli.md')
})
