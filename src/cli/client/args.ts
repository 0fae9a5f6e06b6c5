import { parseArgs } from 'node:util'
import { exclusionError, HELP_FLAG, parserOptions, type Flags } from '../help.js'
import { UsageError } from './errors.js'

/** Options every client command accepts (its help lists them after the command's own). */
export const COMMON_OPTIONS = {
  url: { type: 'string', arg: 'URL', help: 'the server, e.g. https://host (default: SVC_URL, else the config file)' },
  key: { type: 'string', arg: 'KEY', help: 'the API key (default: SVC_API_KEY, else the config file)' },
  insecure: { type: 'boolean', help: 'accept a self-signed certificate (a local svc serve)' },
  json: { type: 'boolean', help: 'print one JSON document on stdout, also on failure' },
  help: HELP_FLAG,
} as const satisfies Flags

/**
 * util.parseArgs with the common options, usage errors as UsageError, negative numbers
 * accepted as values (`svc kv incr hits -1`, `--by -1`), and the table's contradictory
 * options (`excludes`) refused.
 */
export function parse<O extends Flags>(args: string[], options: O) {
  const table: Flags = { ...COMMON_OPTIONS, ...options }
  const all = parserOptions({ ...COMMON_OPTIONS, ...options })
  const fixed: string[] = []
  const tail: string[] = []
  let afterDashes = false
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (afterDashes) {
      tail.push(a)
      continue
    }
    if (a === '--') {
      afterDashes = true
      continue
    }
    const isNeg = (s: string | undefined) => s !== undefined && /^-\d/.test(s)
    const name = a.startsWith('--') && !a.includes('=') ? a.slice(2) : null
    if (name && (all as Flags)[name]?.type === 'string' && isNeg(args[i + 1])) {
      fixed.push(`${a}=${args[++i]}`)
      continue
    }
    if (isNeg(a)) {
      tail.push(a)
      continue
    }
    fixed.push(a)
  }
  let parsed
  try {
    parsed = parseArgs({ args: tail.length ? [...fixed, '--', ...tail] : fixed, options: all, allowPositionals: true, strict: true })
  } catch (e) {
    // Node's own text suggests '-- "--flag"' (for a positional that starts with '-'), which a
    // mistyped option does not need: name the option and the options there are instead
    const code = (e as NodeJS.ErrnoException).code
    const unknown = /^Unknown option '([^']+)'/.exec((e as Error).message)
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) {
      const names = Object.keys(options).map((n) => `--${n}`)
      throw new UsageError(
        `unknown option ${unknown[1]}${names.length ? `; this command takes ${names.join(', ')}` : ''} (and the connection options: svc --help)`,
        true,
      )
    }
    throw new UsageError((e as Error).message, true)
  }
  const conflict = exclusionError(table, parsed.values)
  if (conflict !== null) throw new UsageError(conflict, true)
  return parsed
}

/** A positive integer option, or the default. */
export function intOption(v: string | undefined, name: string, def: number, min = 1): number {
  if (v === undefined) return def
  if (!/^\d+$/.test(v) || Number(v) < min) throw new UsageError(`--${name} must be an integer >= ${min}`)
  return Number(v)
}

/** A size option: bytes, or with k/M/G (decimal) or KiB/MiB/GiB suffixes. */
export function sizeOption(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined
  const m = /^(\d+(?:\.\d+)?)\s*(b|k|kb|m|mb|g|gb|kib|mib|gib)?$/i.exec(v.trim())
  if (!m) throw new UsageError(`--${name}: use a size like 5000000, 5MB or 4MiB`)
  const mult: Record<string, number> = { b: 1, k: 1e3, kb: 1e3, m: 1e6, mb: 1e6, g: 1e9, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 }
  return Math.floor(Number(m[1]) * mult[(m[2] ?? 'b').toLowerCase()])
}
