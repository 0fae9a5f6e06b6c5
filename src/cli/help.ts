/**
 * Per-command help (`svc CMD --help`, `svc CMD -h`, `svc help CMD`). A command's options are
 * declared once, as a Flags table: its parser takes the table (parserOptions) and its help is
 * printed from it (renderHelp), so the two cannot name different options. This module and
 * the tables load no server or client code: help needs no configuration and no network.
 */

/** One option: what node:util parseArgs takes, and its line in the command's help. */
export interface Flag {
  readonly type: 'string' | 'boolean'
  readonly short?: string
  readonly multiple?: boolean
  /** The value's name in the help (string options): N, NAME, URL. */
  readonly arg?: string
  /** What it does, with its default when it has one. */
  readonly help: string
  /**
   * Options of the same table (or the client's common options) that contradict this one:
   * given together, the parser refuses them (exclusionError). Declared on one side only.
   */
  readonly excludes?: readonly string[]
  /** Options of the same table this one needs: given without them, the parser refuses it (optionsError). */
  readonly requires?: readonly string[]
  /**
   * The values a string option takes: the refusal of one it does not take (`--NAME takes ...`),
   * else null. The parser checks each value given, before the command reads or sends anything.
   */
  readonly check?: ValueCheck
}

/** A value check of a string option: the refusal of `value` given as `--name`, or null. */
export type ValueCheck = (value: string, name: string) => string | null

/** A check that refuses a value `ok` does not accept, saying what the option takes. */
export const takes =
  (what: string, ok: (value: string) => boolean): ValueCheck =>
  (value, name) =>
    ok(value) ? null : `--${name} takes ${what}, not ${JSON.stringify(value)}`

/** One of `values`, as written. */
export const oneOf = (...values: string[]): ValueCheck => takes(`one of ${values.join(', ')}`, (v) => values.includes(v))

/**
 * A whole number in digits from `min` to `max`. Every integer option names its bound: without
 * one, digits past 2^53 are read rounded and enough of them read as Infinity.
 */
export const anInteger = (min: number, max: number): ValueCheck =>
  takes(`an integer from ${min} to ${max}`, (v) => /^\d+$/.test(v) && Number(v) >= min && Number(v) <= max)

/** Any finite number (negative too). */
export const aNumber: ValueCheck = takes('a number', (v) => v.trim() !== '' && Number.isFinite(Number(v)))

/** Bytes, or with k/M/G (decimal) or KiB/MiB/GiB: the count of bytes, or null for other text. */
export function parseSize(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*(b|k|kb|m|mb|g|gb|kib|mib|gib)?$/i.exec(text.trim())
  if (!m) return null
  const mult: Record<string, number> = { b: 1, k: 1e3, kb: 1e3, m: 1e6, mb: 1e6, g: 1e9, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 }
  return Math.floor(Number(m[1]) * mult[(m[2] ?? 'b').toLowerCase()])
}

/** A size, as parseSize reads it. */
export const aSize: ValueCheck = takes('a size like 5000000, 5MB or 4MiB', (v) => parseSize(v) !== null)

export type Flags = Readonly<Record<string, Flag>>

interface CommandText {
  /** Synopsis lines, each starting with `svc CMD`. */
  readonly usage: readonly string[]
  /** The command's line in `svc --help`: what it does, in a few words. */
  readonly summary: string
  /** What the command does, in a sentence or two. */
  readonly about: string
  /** Environment variables the command reads, with their meaning. */
  readonly env?: ReadonlyArray<readonly [name: string, meaning: string]>
  readonly examples: readonly string[]
  /** Where the full description is (a file under docs/). */
  readonly see?: string
}

/**
 * A command's help and its options: `flags` for a command with one parser (`{}` when it takes
 * none), or `subs` for one whose subcommands each parse their own (`{}` for one that takes none).
 * Every parser reads one of these tables, never an inline one (test/cli/help.test.ts checks).
 */
export type CommandHelp = CommandText &
  (
    | { readonly flags: Flags; readonly subs?: undefined }
    | {
        readonly flags?: Flags
        /** The options by subcommand. */
        readonly subs: Readonly<Record<string, Flags>>
      }
  )

/**
 * The table as node:util parseArgs takes it (type, short, multiple), typed as the table so
 * the parsed values keep their types.
 */
export function parserOptions<F extends Flags>(flags: F): F {
  const out: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {}
  for (const [name, f] of Object.entries(flags)) {
    out[name] = { type: f.type }
    if (f.short !== undefined) out[name].short = f.short
    if (f.multiple) out[name].multiple = true
  }
  return out as unknown as F
}

/**
 * The pairs of options a table declares contradictory (`excludes`), each once, both names in
 * the table's order.
 */
export function exclusivePairs(flags: Flags): Array<[string, string]> {
  const names = Object.keys(flags)
  const pairs = new Map<string, [string, string]>()
  for (const [name, f] of Object.entries(flags))
    for (const other of f.excludes ?? []) {
      const pair: [string, string] = names.indexOf(name) < names.indexOf(other) ? [name, other] : [other, name]
      pairs.set(pair.join(' '), pair)
    }
  return [...pairs.values()]
}

/**
 * `args` with each `--name -5` (a string option, then a negative number) joined as
 * `--name=-5`: node:util parseArgs takes such a value for an option only in that form, and
 * would refuse the pair as ambiguous before the option's own check could name what it takes.
 */
export function joinNegativeValues(args: readonly string[], flags: Flags): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (a === '--') return [...out, ...args.slice(i)]
    const name = a.startsWith('--') && !a.includes('=') ? a.slice(2) : null
    if (name !== null && flags[name]?.type === 'string' && /^-\d/.test(args[i + 1] ?? '')) out.push(`${a}=${args[++i]}`)
    else out.push(a)
  }
  return out
}

/** node:util parseArgs's refusals (unknown option, missing or ambiguous value): bad usage too. */
export const isParseArgsError = (e: unknown): e is Error => e instanceof TypeError && String((e as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS_')

/**
 * The refusal of the first declared pair both given (`values` as parseArgs returns them), or
 * null. Every parser calls it on its table, so no contradiction is settled by the order the
 * code reads the options in.
 */
export function exclusionError(flags: Flags, values: Readonly<Record<string, unknown>>): string | null {
  for (const [a, b] of exclusivePairs(flags)) if (values[a] !== undefined && values[b] !== undefined) return `--${a} and --${b} exclude each other`
  return null
}

/**
 * What the parser refuses in a table's options once node:util parseArgs took them (`values` as
 * it returns them), or null: a contradictory pair (exclusionError), then an option given
 * without one it requires, then a value an option does not take (its `check`), each in the
 * table's order. Every parser calls it on its table, so every such refusal is a usage error
 * with the command's synopsis, raised before the command reads or sends anything.
 */
export function optionsError(flags: Flags, values: Readonly<Record<string, unknown>>): string | null {
  const conflict = exclusionError(flags, values)
  if (conflict !== null) return conflict
  for (const [name, f] of Object.entries(flags))
    for (const other of f.requires ?? []) if (values[name] !== undefined && values[other] === undefined) return `--${name} goes with --${other}`
  for (const [name, f] of Object.entries(flags)) {
    const given = values[name]
    if (f.check === undefined || given === undefined) continue
    for (const v of Array.isArray(given) ? given : [given]) {
      const refused = typeof v === 'string' ? f.check(v, name) : null
      if (refused !== null) return refused
    }
  }
  return null
}

/** The options `name` may not be given with, both sides of each pair, in the table's order. */
const excludedBy = (flags: Flags, name: string): string[] => exclusivePairs(flags).flatMap(([a, b]) => (a === name ? [b] : b === name ? [a] : []))

/** Every option name of a command (both forms), for tests and error messages. */
export function allFlags(h: CommandHelp): Flags {
  return Object.assign({}, h.flags ?? {}, ...Object.values(h.subs ?? {})) as Flags
}

const WIDTH = 92

/** -h and --help, which every command takes. */
export const HELP_FLAG = { type: 'boolean', short: 'h', help: 'print this help and exit' } as const satisfies Flag

/** Words wrapped to WIDTH columns, each line starting with `indent`. */
function wrap(text: string, indent: string, first = indent): string[] {
  const lines: string[] = []
  let line = first
  let empty = true
  for (const w of text.split(/\s+/).filter(Boolean)) {
    if (!empty && line.length + 1 + w.length > WIDTH) {
      lines.push(line)
      line = indent
      empty = true
    }
    line += empty ? w : ` ${w}`
    empty = false
  }
  lines.push(line)
  return lines
}

/** The synopsis as a usage error states it: `usage: svc ...`, the other lines aligned below. */
export const usageText = (h: CommandHelp): string => `usage: ${h.usage.join('\n       ')}`

const flagName = (name: string, f: Flag) => `${f.short ? `-${f.short}, ` : '    '}--${name}${f.arg ? ` ${f.arg}` : ''}`

/**
 * A block of options: the names in a column, the meanings wrapped beside them, each with the
 * options it excludes. `others`: the options the parser takes besides (the common ones).
 */
function flagBlock(title: string, flags: Flags, others: Flags = {}): string[] {
  const entries = Object.entries(flags)
  if (entries.length === 0) return []
  const col = Math.min(30, Math.max(...entries.map(([n, f]) => flagName(n, f).length)) + 4)
  const out = [title]
  for (const [n, f] of entries) {
    const left = `  ${flagName(n, f)}`
    const pad = ' '.repeat(col)
    const excluded = excludedBy({ ...others, ...flags }, n)
    const needs = f.requires?.length ? `; only with ${f.requires.map((x) => `--${x}`).join(', ')}` : ''
    const help = `${f.help}${needs}${excluded.length ? `; not with ${excluded.map((x) => `--${x}`).join(', ')}` : ''}`
    if (left.length + 2 > col) out.push(left, ...wrap(help, pad))
    else out.push(...wrap(help, pad, left.padEnd(col)))
  }
  return out
}

/** The help of one command, as `svc CMD --help` prints it. `common`: options every command of its kind takes. */
export function renderHelp(h: CommandHelp, common?: { title: string; flags: Flags; env?: CommandHelp['env'] }): string {
  const out = [usageText(h), '', ...wrap(h.about, '')]
  const blocks: string[][] = []
  // without common options (operator commands), -h/--help is listed with the command's own
  const own = common ? (h.flags ?? {}) : { ...h.flags, help: HELP_FLAG }
  blocks.push(flagBlock('Options:', own, common?.flags))
  const cmd = h.usage[0].split(' ').slice(0, 2).join(' ')
  for (const [sub, flags] of Object.entries(h.subs ?? {})) blocks.push(flagBlock(`Options of ${cmd} ${sub}:`, flags, common?.flags))
  if (common) blocks.push(flagBlock(common.title, common.flags))
  for (const b of blocks) if (b.length) out.push('', ...b)
  const env = [...(h.env ?? []), ...(common?.env ?? [])]
  if (env.length) {
    const col = Math.max(...env.map(([n]) => n.length)) + 4
    out.push('', 'Environment:')
    for (const [n, m] of env) out.push(...wrap(m, ' '.repeat(col), `  ${n}`.padEnd(col)))
  }
  out.push('', 'Examples:', ...h.examples.map((e) => `  ${e}`))
  if (h.see) out.push('', `More: ${h.see}`)
  return `${out.join('\n')}\n`
}

/** A part of `svc --help`: a title, then each command of a table with its summary. */
export interface OverviewSection {
  readonly title: string
  readonly commands: Readonly<Record<string, CommandHelp>>
  /** A sentence after the list. */
  readonly note?: string
}

/**
 * `svc --help`: the intro, then every command of the tables, one line each (name and summary),
 * so a command added to a table is listed with no second edit.
 */
export function renderOverview(intro: readonly string[], sections: readonly OverviewSection[]): string {
  const col = Math.max(...sections.flatMap((s) => Object.keys(s.commands).map((n) => n.length))) + 6
  const out = [...intro]
  for (const s of sections) {
    out.push('', s.title)
    for (const [name, h] of Object.entries(s.commands)) out.push(`  ${name}`.padEnd(col) + h.summary)
    if (s.note) out.push(...wrap(s.note, '  '))
  }
  return `${out.join('\n')}\n`
}

/** The commands about the CLI itself: their help, and their lines in `svc --help`. */
export const GENERAL_HELP = {
  help: {
    usage: ['svc help [COMMAND]'],
    summary: "print a command's help (as svc COMMAND --help does), or this list",
    about: 'Prints the help of COMMAND (as svc COMMAND --help and -h do), or without one the list of every command (svc --help).',
    flags: {},
    examples: ['svc help deploy', 'svc kv --help'],
    see: 'docs/cli.md',
  },
  version: {
    usage: ['svc version'],
    summary: 'print the version (also svc --version, svc -V)',
    about: 'Prints svc and its version, as package.json has it (svc 1.2.3). svc --version and svc -V do the same.',
    flags: {},
    examples: ['svc version', 'svc --version'],
  },
} as const satisfies Record<string, CommandHelp>
