/** Shared pieces of the client commands: the command context, argument checks, local input, tables and multipart bodies. */
import fs from 'node:fs'
import path from 'node:path'
import { ApiClient } from '../api.js'
import { type ConnectionFlags } from '../config.js'
import { CliError, UsageError } from '../errors.js'
import { type Reporter } from '../progress.js'
import { displayWidth, truncate } from '../../../util/unicode.js'

export interface Ctx {
  json: boolean
  rep: Reporter
  /** A line (or block) for people on stdout. */
  out(s: string): void
  /** A JSON document on stdout (--json). */
  emit(v: unknown): void
  /** The API client of this command (created once, from flags, environment and config file). */
  api(flags: ConnectionFlags): ApiClient
}

export const flagsOf = (v: { url?: string; key?: string; insecure?: boolean }): ConnectionFlags => ({ url: v.url, key: v.key, insecure: v.insecure })

export const keyHint = (key: string) => `${key.slice(0, 4)}…${key.slice(-4)}`

/** A required argument or option: missing, a usage error that prints the synopsis. */
export function need(v: string | undefined, what: string): string {
  if (v === undefined || v === '') throw new UsageError(`missing ${what}`, true)
  return v
}

/** A missing or unknown subcommand (one of `subs`, the synopsis's): a usage error that prints the synopsis. */
export function unknownSubcommand(sub: string | undefined, subs: readonly string[]): UsageError {
  const list = `${subs.slice(0, -1).join(', ')}${subs.length > 1 ? ' or ' : ''}${subs.at(-1)}`
  return new UsageError(sub === undefined ? `missing a subcommand: ${list}` : `unknown subcommand "${sub}": ${list}`, true)
}

/** More positional arguments than the synopsis has: a usage error that prints the synopsis, as a parser's refusal does. */
export function noMore(positionals: string[], used: number) {
  if (positionals.length > used) throw new UsageError(`unexpected argument "${positionals[used]}"`, true)
}

export const TEXT_TYPES: Record<string, string> = {
  '.json': 'application/json',
  '.csv': 'text/csv',
  '.tsv': 'text/tab-separated-values',
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.xml': 'application/xml',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.css': 'text/css',
  '.js': 'text/javascript',
  '.svg': 'image/svg+xml',
  '.geojson': 'application/geo+json',
  '.ndjson': 'application/x-ndjson',
}

/** Content type of a hosted data file from its extension (text/plain when unknown). */
export const textType = (file: string): string => TEXT_TYPES[path.extname(file).toLowerCase()] ?? 'text/plain'

export function readLocal(file: string): Buffer {
  try {
    return fs.readFileSync(file)
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`)
  }
}

export async function readStdinBytes(): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of process.stdin) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

export async function readStdin(): Promise<string> {
  return (await readStdinBytes()).toString('utf8')
}

/** A small multipart/form-data body (fields, then files). */
export function multipartBody(
  fields: Record<string, string>,
  files: Array<{ name: string; filename: string; type: string; data: Buffer }>,
): { body: Buffer; contentType: string } {
  const boundary = `----svc-cli-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`
  const parts: Buffer[] = []
  const q = (s: string) => s.replace(/[\r\n"\\]/g, (c) => encodeURIComponent(c))
  for (const [k, val] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${q(k)}"\r\n\r\n${val}\r\n`))
  for (const f of files) {
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${q(f.name)}"; filename="${q(f.filename)}"\r\nContent-Type: ${f.type}\r\n\r\n`),
      f.data,
      Buffer.from('\r\n'),
    )
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` }
}

/**
 * Text from anyone (a visitor's form field, a stored value) made safe to print on a terminal:
 * every C0 and C1 control character (line breaks and tabs too: `preview` folds those to a
 * space first) is written as `\xNN`, so an escape sequence in a submission (ESC [ 2 J, an
 * OSC title or clipboard write, CSI as U+009B) shows as text instead of acting on the owner's
 * terminal.
 */
export const printable = (s: string): string => s.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)

export function preview(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v)
  const one = printable((s ?? '').replace(/\s+/g, ' '))
  // cut between characters: half an emoji's surrogate pair prints as U+FFFD
  return one.length > 40 ? `${truncate(one, 39)}…` : one
}

/**
 * An API timestamp (ISO 8601 with its offset: the spec's +08:00) for a human table: this
 * machine's local time to the second, as `ls -l` and git show dates. Anything that does not
 * parse is shown as it came; --json and exports keep the API's own text.
 */
export function localTime(iso: unknown): string {
  if (typeof iso !== 'string' || iso === '') return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return iso
  const p = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

/** A left-aligned text table, its columns lined up in a terminal (a CJK character takes two). */
export function table(head: string[], rows: string[][]): string {
  const all = [head, ...rows]
  const w = head.map((_, i) => Math.max(...all.map((r) => displayWidth(r[i] ?? ''))))
  const pad = (c: string, i: number) => c + ' '.repeat(w[i] - displayWidth(c))
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : pad(c ?? '', i))).join('  ')).join('\n')
}
