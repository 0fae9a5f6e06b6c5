/**
 * A Netlify site's `netlify.toml` rules (`[[redirects]]`, `[[headers]]`), which svc does not
 * read, as the `_redirects` and `_headers` lines that say the same (305). The file is
 * parsed as TOML 1.0 (smol-toml); a rule using what those lines cannot say (`conditions`,
 * `signed`, a non-string header value...) is counted as one to write by hand.
 */
import fsp from 'node:fs/promises'
import path from 'node:path'
import { parse as parseToml } from 'smol-toml'
import { BUILD_FOLDERS } from './project.js'

export interface NetlifyRules {
  /** The file read. */
  file: string
  /** `_redirects` lines, in the file's order. */
  redirects: string[]
  /** `_headers` lines (a pattern, then its indented `Name: value` lines). */
  headers: string[]
  /** How many rules could not be said as lines (conditions, signed proxies, values not strings...). */
  byHand: number
}

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date)
/**
 * A value that fits on one line of `_redirects` / `_headers`: no line break nor other control
 * character but a tab (a word, for query values). The lines are written to the terminal, and a cloned
 * repository's netlify.toml may hold escape sequences (`\u001b]...`) that would act on it
 * (decision 331).
 */
const oneLine = (v: unknown, word = false): v is string =>
  typeof v === 'string' && v !== '' && !/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/.test(v) && !(word && /\s/.test(v))

/**
 * One `[[redirects]]` table as a `_redirects` line (`from [query...] to status[!]`, Netlify's
 * default status 301), or null when it holds anything else.
 */
function redirectLine(rule: Record<string, unknown>): string | null {
  const { from, to, status = 301, force = false, query = {}, ...rest } = rule
  if (Object.keys(rest).length > 0 || !oneLine(from, true) || !oneLine(to, true)) return null
  if (!Number.isInteger(status) || typeof force !== 'boolean' || !isTable(query)) return null
  const q = Object.entries(query)
  if (!q.every(([k, v]) => oneLine(k, true) && oneLine(v, true))) return null
  return `${from}${q.map(([k, v]) => ` ${k}=${v as string}`).join('')} ${to} ${String(status)}${force ? '!' : ''}`
}

/** One `[[headers]]` table as `_headers` lines (its pattern, then `  Name: value`), or null. */
function headerLines(rule: Record<string, unknown>): string[] | null {
  const { for: pattern, values, ...rest } = rule
  if (Object.keys(rest).length > 0 || !oneLine(pattern, true) || !isTable(values)) return null
  const entries = Object.entries(values)
  if (entries.length === 0 || !entries.every(([k, v]) => oneLine(k, true) && oneLine(v))) return null
  return [pattern, ...entries.map(([k, v]) => `  ${k}: ${v as string}`)]
}

/**
 * The `[[redirects]]` and `[[headers]]` of a netlify.toml's text, as lines; null when it has
 * none, or is not TOML (Netlify refuses such a file too; nothing can be said of its rules).
 */
export function netlifyRules(text: string, file: string): NetlifyRules | null {
  let doc: Record<string, unknown>
  try {
    doc = parseToml(text)
  } catch {
    return null
  }
  const out: NetlifyRules = { file, redirects: [], headers: [], byHand: 0 }
  const rules = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v])
  for (const r of rules(doc.redirects)) {
    const line = isTable(r) ? redirectLine(r) : null
    if (line === null) out.byHand++
    else out.redirects.push(line)
  }
  for (const h of rules(doc.headers)) {
    const lines = isTable(h) ? headerLines(h) : null
    if (lines === null) out.byHand++
    else out.headers.push(...lines)
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
    lines.push(`  ${rules.byHand} rule(s) there use what these lines cannot say (conditions, signed proxies, a redirect's own headers): write them by hand`)
  return lines.join('\n')
}
