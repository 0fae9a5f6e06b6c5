import { parseArgs } from 'node:util'
import { HELP_FLAG, joinNegativeValues, optionsError, parseSize, parserOptions, type Flags, type ValueCheck } from '../help.js'
import { normaliseUrl } from './config.js'
import { UsageError } from './errors.js'

/** --url: a server URL normaliseUrl takes (its refusal as the message). */
function serverUrl(value: string): string | null {
  try {
    normaliseUrl(value)
    return null
  } catch (e) {
    return (e as Error).message
  }
}

/** Options every client command accepts (its help lists them after the command's own). */
export const COMMON_OPTIONS = {
  url: { type: 'string', arg: 'URL', help: 'the server, e.g. https://host (default: SVC_URL, else the config file)', check: serverUrl },
  key: { type: 'string', arg: 'KEY', help: 'the API key (default: SVC_API_KEY, else the config file)' },
  insecure: { type: 'boolean', help: 'accept a self-signed certificate (a local svc serve)' },
  json: { type: 'boolean', help: 'print one JSON document on stdout, also on failure' },
  help: HELP_FLAG,
} as const satisfies Flags

/**
 * util.parseArgs with the common options, usage errors as UsageError, negative numbers
 * accepted as values (`svc kv incr hits -1`, `--by -1`), and what the table refuses
 * (optionsError: contradictory options, one without an option it requires, a value an option
 * does not take), each a UsageError that prints the synopsis.
 */
export function parse<O extends Flags>(args: string[], options: O) {
  const table = { ...COMMON_OPTIONS, ...options }
  const all = parserOptions(table)
  // a negative number where a positional goes (`svc kv incr hits -1`) goes after a `--`
  const joined = joinNegativeValues(args, table)
  const cut = joined.includes('--') ? joined.indexOf('--') : joined.length
  const isNeg = (s: string) => /^-\d/.test(s)
  const fixed = joined.slice(0, cut).filter((a) => !isNeg(a))
  const tail = [...joined.slice(0, cut).filter(isNeg), ...joined.slice(cut + 1)]
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
  const refused = optionsError(table, parsed.values)
  if (refused !== null) throw new UsageError(refused, true)
  return parsed
}

/** An integer option (its table's check refused any other value), or the default. */
export function intOption(v: string | undefined, name: string, def: number, min = 1): number {
  if (v === undefined) return def
  if (!/^\d+$/.test(v) || Number(v) < min) throw new UsageError(`--${name} takes an integer of ${min} or more, not ${JSON.stringify(v)}`, true)
  return Number(v)
}

/** A size option (parseSize: bytes, or with k/M/G or KiB/MiB/GiB suffixes). */
export function sizeOption(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined
  const n = parseSize(v)
  if (n === null) throw new UsageError(`--${name} takes a size like 5000000, 5MB or 4MiB, not ${JSON.stringify(v)}`, true)
  return n
}

/** An expiry from the command line: ISO 8601 with a zone, or a duration from now (30m, 12h, 7d); null for other text. */
export function parseExpiry(text: string, now = Date.now()): string | null {
  const m = /^(\d+)(m|h|d)$/.exec(text)
  if (m) return new Date(now + Number(m[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'm' | 'h' | 'd']).toISOString()
  if (/^\d{4}-\d{2}-\d{2}T/.test(text) && Number.isFinite(Date.parse(text))) return text
  return null
}

/** --expires of svc access set. */
export const anExpiry: ValueCheck = (value, name) =>
  parseExpiry(value) === null
    ? `--${name} takes an ISO 8601 time with a zone (2026-12-31T23:00:00Z) or a duration (30m, 12h, 7d), not ${JSON.stringify(value)}`
    : null
