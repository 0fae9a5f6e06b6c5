/**
 * A Netlify site's `netlify.toml` rules (`[[redirects]]`, `[[headers]]`), which svc does not
 * read, as the `_redirects` and `_headers` lines that say the same (NEW-SITES-2). Only what
 * those tables need of TOML is read: one-line `key = value` pairs (basic and literal strings,
 * integers, booleans, inline tables of strings); anything else in a rule makes it one to
 * write by hand.
 */
import fsp from 'node:fs/promises'
import path from 'node:path'
import { BUILD_FOLDERS } from './project.js'

type Value = string | number | boolean | Record<string, string> | undefined

/** One `key = value` line's value, or undefined when it is not one of the kinds read here. */
function parseValue(text: string): Value {
  const t = text.trim()
  const basic = /^"((?:[^"\\]|\\.)*)"\s*(?:#.*)?$/.exec(t)
  if (basic) {
    try {
      return JSON.parse(`"${basic[1]}"`) as string
    } catch {
      return undefined
    }
  }
  const literal = /^'([^']*)'\s*(?:#.*)?$/.exec(t)
  if (literal) return literal[1]
  const bare = /^([^\s#]+)\s*(?:#.*)?$/.exec(t)
  if (bare) {
    if (bare[1] === 'true' || bare[1] === 'false') return bare[1] === 'true'
    if (/^[+-]?\d+$/.test(bare[1])) return Number(bare[1])
    return undefined
  }
  const inline = /^\{(.*)\}\s*(?:#.*)?$/.exec(t)
  if (inline) {
    const out: Record<string, string> = {}
    for (const pair of inline[1].split(',')) {
      if (pair.trim() === '') continue
      const m = /^\s*"?([A-Za-z0-9_-]+)"?\s*=\s*(.+)$/.exec(pair)
      const v = m ? parseValue(m[2]) : undefined
      if (typeof v !== 'string') return undefined
      out[m![1]] = v
    }
    return out
  }
  return undefined
}

export interface NetlifyRules {
  /** The file read. */
  file: string
  /** `_redirects` lines, in the file's order. */
  redirects: string[]
  /** `_headers` lines (a pattern, then its indented `Name: value` lines). */
  headers: string[]
  /** How many rules could not be said as lines (conditions, signed proxies, multi-line values...). */
  byHand: number
}

/** The `[[redirects]]` and `[[headers]]` of a netlify.toml's text, as lines; null when it has none. */
export function netlifyRules(text: string, file: string): NetlifyRules | null {
  type Block = { kind: 'redirects' | 'headers'; keys: Record<string, Value>; values: Record<string, Value>; bad: boolean }
  const blocks: Block[] = []
  let block: Block | null = null
  let inValues = false
  for (const raw of text.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    const table = /^(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$/.exec(line)
    if (table) {
      const name = table[2]
      inValues = false
      if (table[1] === '[[' && (name === 'redirects' || name === 'headers')) blocks.push((block = { kind: name, keys: {}, values: {}, bad: false }))
      else if (table[1] === '[' && block?.kind === 'headers' && name === 'headers.values') inValues = true
      // a sub-table of a rule (`[redirects.query]`) is not read: the rule is written by hand
      else if (table[1] === '[' && block !== null && name.startsWith(`${block.kind}.`)) block.bad = true
      else block = null
      continue
    }
    if (block === null) continue
    const kv = /^"?([A-Za-z0-9_-]+)"?\s*=\s*(.*)$/.exec(line)
    const value = kv ? parseValue(kv[2]) : undefined
    if (kv === null || value === undefined) {
      block.bad = true
      continue
    }
    if (inValues) block.values[kv[1]] = value
    else block.keys[kv[1]] = value
  }
  const out: NetlifyRules = { file, redirects: [], headers: [], byHand: 0 }
  for (const b of blocks) {
    if (b.kind === 'redirects') {
      const { from, to, status = 301, force = false, query, ...rest } = b.keys
      const queryOk = query === undefined || (typeof query === 'object' && Object.values(query).every((v) => !/\s/.test(v)))
      if (
        b.bad ||
        typeof from !== 'string' ||
        typeof to !== 'string' ||
        typeof status !== 'number' ||
        typeof force !== 'boolean' ||
        !queryOk ||
        Object.keys(rest).length > 0
      ) {
        out.byHand++
        continue
      }
      const q = typeof query === 'object' ? Object.entries(query).map(([k, v]) => ` ${k}=${v}`) : []
      out.redirects.push(`${from}${q.join('')} ${to} ${status}${force ? '!' : ''}`)
    } else {
      const { for: pattern, ...rest } = b.keys
      const values = Object.entries(b.values)
      if (b.bad || typeof pattern !== 'string' || Object.keys(rest).length > 0 || values.length === 0 || values.some(([, v]) => typeof v !== 'string')) {
        out.byHand++
        continue
      }
      out.headers.push(pattern, ...values.map(([k, v]) => `  ${k}: ${v as string}`))
    }
  }
  return out.redirects.length + out.headers.length + out.byHand === 0 ? null : out
}

/**
 * The netlify.toml that configures the deployed folder: its own, or for a build folder
 * (`dist/`, `.output/public/`) the one of the folder above it (the repository's, where Netlify
 * reads it). Null when there is none or it holds no rule.
 */
export async function findNetlifyRules(dir: string): Promise<NetlifyRules | null> {
  let d = path.resolve(dir)
  for (;;) {
    const file = path.join(d, 'netlify.toml')
    const st = await fsp.stat(file).catch(() => null)
    if (st?.isFile() && st.size <= 1 << 20) return netlifyRules(await fsp.readFile(file, 'utf8'), file)
    if (!BUILD_FOLDERS.has(path.basename(d).toLowerCase()) || path.dirname(d) === d) return null
    d = path.dirname(d)
  }
}

/**
 * What `svc deploy` says (on stderr) of a netlify.toml's rules, or null when the folder's
 * `_redirects` and `_headers` already hold every line they translate to.
 */
export async function netlifyNote(dir: string, label: string): Promise<string | null> {
  const rules = await findNetlifyRules(dir)
  if (rules === null) return null
  const has = async (name: string, lines: string[]): Promise<boolean> => {
    const text = await fsp.readFile(path.join(dir, name), 'utf8').catch(() => '')
    const own = new Set(text.split(/\r?\n/).map((l) => l.trim().replace(/\s+/g, ' ')))
    return lines.every((l) => own.has(l.trim().replace(/\s+/g, ' ')))
  }
  const redirects = rules.redirects.length > 0 && !(await has('_redirects', rules.redirects))
  const headers = rules.headers.length > 0 && !(await has('_headers', rules.headers))
  if (!redirects && !headers && rules.byHand === 0) return null
  const at = (name: string) => path.join(label, name)
  const shown = path.relative(process.cwd(), rules.file)
  const lines = [
    `note: ${shown.startsWith('..') ? rules.file : shown} holds rules that svc does not read: it reads _redirects and _headers at the root of the deployed folder, as Netlify also does, so these do not apply here`,
  ]
  // where a build takes them from: Vite and most generators copy public/ into the build
  const built = path.dirname(rules.file) !== path.resolve(dir)
  const where = (name: string) => (built ? `${at(name)} (or the folder your build copies into it, such as public/)` : at(name))
  if (redirects) lines.push(`  the same rules as lines of ${where('_redirects')}:`, ...rules.redirects.map((l) => `    ${l}`))
  if (headers) lines.push(`  the same rules as lines of ${where('_headers')}:`, ...rules.headers.map((l) => `    ${l}`))
  if (rules.byHand > 0)
    lines.push(`  ${rules.byHand} rule(s) there use what these lines cannot say (conditions, signed proxies, sub-tables): write them by hand`)
  return lines.join('\n')
}
