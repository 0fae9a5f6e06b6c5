import fs from 'node:fs'
import path from 'node:path'
import { ApiClient, encodePath } from './api.js'
import { intOption, parse, sizeOption } from './args.js'
import { configPath, normaliseUrl, readConfig, removeConfig, writeConfig, type ConnectionFlags } from './config.js'
import { ApiError, CliError, UsageError } from './errors.js'
import { formatBytes, type Reporter } from './progress.js'
import { toCsv } from './csv.js'
import { readSecret } from './prompt.js'

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

const flagsOf = (v: { url?: string; key?: string; insecure?: boolean }): ConnectionFlags => ({ url: v.url, key: v.key, insecure: v.insecure })

const keyHint = (key: string) => `${key.slice(0, 4)}…${key.slice(-4)}`

function need(v: string | undefined, what: string): string {
  if (v === undefined || v === '') throw new UsageError(`missing ${what}`)
  return v
}

function noMore(positionals: string[], used: number) {
  if (positionals.length > used) throw new UsageError(`unexpected argument "${positionals[used]}"`)
}

// ---------------------------------------------------------------- login, logout, whoami

/**
 * svc login: stores the server URL and an API key (checked with /svc_api/me), and with
 * --username a login session for the session-only endpoints (hosted data). The file is 0600.
 */
export async function loginCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, {
    username: { type: 'string' },
    password: { type: 'string' },
    'password-stdin': { type: 'boolean' },
    'key-stdin': { type: 'boolean' },
  })
  noMore(positionals, 0)
  const file = configPath()
  const stored = readConfig(file)
  const url = normaliseUrl(need(v.url ?? process.env.SVC_URL ?? stored.url, '--url (the server, e.g. https://host)'))
  const sameServer = stored.url !== undefined && normaliseUrl(stored.url) === url
  const insecure = v.insecure === true || /^(1|true|yes|on)$/i.test(process.env.SVC_INSECURE ?? '') || (sameServer && stored.insecure === true)
  const next = sameServer ? { ...stored } : {}
  next.url = url
  next.insecure = insecure || undefined

  if (v.username !== undefined) {
    const username = need(v.username, '--username')
    let password = v.password
    if (password !== undefined) ctx.rep.note('warning: --password is visible to other users of this machine in the process list; prefer --password-stdin or SVC_PASSWORD')
    if (password === undefined && v['password-stdin']) password = (await readStdin()).replace(/\r?\n$/, '')
    password ??= process.env.SVC_PASSWORD
    password ??= await readSecret(`password for ${username}: `)
    if (!password) throw new UsageError('no password: use --password-stdin, SVC_PASSWORD, or run in a terminal to be asked')
    const api = new ApiClient({ url, insecure, source: { url: 'flag' } }, { notify: (m) => ctx.rep.note(m) })
    try {
      const r = await api.post('/login', { auth: 'none', body: new URLSearchParams({ username, password }).toString(), contentType: 'application/x-www-form-urlencoded' })
      const setCookie = r.headers['set-cookie']
      const first = (Array.isArray(setCookie) ? setCookie : [setCookie ?? '']).map((c) => c.split(';')[0]).find((c) => c.startsWith('session='))
      if (!first) throw new CliError('the server answered the login without a session cookie')
      next.session = first
      next.username = typeof r.json?.data?.username === 'string' ? r.json.data.username : username
    } finally {
      await api.close()
    }
  }

  let key = v.key
  if (key === undefined && v['key-stdin']) key = (await readStdin()).trim()
  if (key === undefined && v.username === undefined) key = process.env.SVC_API_KEY || (await readSecret('API key: '))
  let who: string | undefined
  if (key) {
    const api = new ApiClient({ url, key, insecure, source: { url: 'flag', key: 'flag' } }, { notify: (m) => ctx.rep.note(m) })
    try {
      const r = await api.get('/svc_api/me')
      who = r.json?.data?.username
    } finally {
      await api.close()
    }
    next.key = key
  }
  if (!next.key && !next.session) throw new UsageError('give --key KEY (or --key-stdin), or --username NAME')
  writeConfig(next, file)
  const what: string[] = []
  if (next.key) what.push(`API key${who ? ` of ${who}` : ''}`)
  if (v.username !== undefined) what.push(`session of ${next.username}`)
  if (ctx.json) ctx.emit({ success: true, url, username: who ?? next.username ?? null, key: next.key ? keyHint(next.key) : null, session: Boolean(next.session), config: file })
  else ctx.out(`logged in to ${url} (${what.join(' and ')}); saved in ${file}`)
  return 0
}

/** svc logout: ends the stored session on the server and removes the config file. */
export async function logoutCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { positionals } = parse(args, {})
  noMore(positionals, 0)
  const file = configPath()
  const stored = readConfig(file)
  if (stored.session && stored.url) {
    const api = new ApiClient({ url: normaliseUrl(stored.url), session: stored.session, insecure: stored.insecure === true, source: { url: 'config' } }, { notify: () => {} })
    await api.post('/logout', { auth: 'session', okStatuses: [401, 403] }).catch(() => {})
    await api.close()
  }
  const removed = removeConfig(file)
  if (ctx.json) ctx.emit({ success: true, removed, config: file })
  else ctx.out(removed ? `logged out; removed ${file}` : `not logged in (no ${file})`)
  return 0
}

/** svc whoami: who the configured credentials belong to, on which server. */
export async function whoamiCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, {})
  noMore(positionals, 0)
  const api = ctx.api(flagsOf(v))
  const r = await api.get('/svc_api/me')
  const d = r.json?.data ?? {}
  const conn = api.conn
  if (ctx.json) {
    ctx.emit({ success: true, url: conn.url, username: d.username ?? null, tier: d.tier ?? null, via: d.via ?? null, key: conn.key ? keyHint(conn.key) : null, key_source: conn.source.key ?? null, session: Boolean(conn.session) })
  } else {
    const how = conn.key ? `API key ${keyHint(conn.key)} from ${conn.source.key === 'env' ? 'SVC_API_KEY' : conn.source.key === 'flag' ? '--key' : configPath()}` : 'login session'
    ctx.out(`${d.username} (${d.tier ?? 'unknown'} tier) on ${conn.url}, via ${how}`)
  }
  return 0
}

// ---------------------------------------------------------------- deploy

export async function deployCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, {
    project: { type: 'string', short: 'p' },
    'no-publish': { type: 'boolean' },
    delete: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    dotfiles: { type: 'boolean' },
    concurrency: { type: 'string' },
    'batch-files': { type: 'string' },
    'batch-bytes': { type: 'string' },
  })
  const dir = need(positionals[0], 'the folder to deploy: svc deploy <dir>')
  noMore(positionals, 1)
  const api = ctx.api(flagsOf(v))
  // loaded here: the ignore matcher and MIME table are only needed by deploy
  const { deploy, describeDeploy } = await import('./deploy.js')
  const r = await deploy(api, {
    dir,
    project: v.project,
    publish: !v['no-publish'],
    delete: v.delete === true,
    dryRun: v['dry-run'] === true,
    dotfiles: v.dotfiles === true,
    concurrency: intOption(v.concurrency, 'concurrency', 2),
    maxBatchFiles: v['batch-files'] !== undefined ? intOption(v['batch-files'], 'batch-files', 1) : undefined,
    maxBatchBytes: sizeOption(v['batch-bytes'], 'batch-bytes'),
  }, ctx.rep)
  if (ctx.json) ctx.emit(r)
  else ctx.out(describeDeploy(r))
  return r.success ? 0 : 1
}

// ---------------------------------------------------------------- page

/** svc page: the spec's single-file upload (POST /svc_api/upload). */
export async function pageCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, {
    project: { type: 'string', short: 'p' },
    description: { type: 'string' },
  })
  const file = need(positionals[0], 'the HTML file: svc page <file.html>')
  noMore(positionals, 1)
  if (!/\.html?$/i.test(file)) throw new UsageError(`${file}: only .html and .htm files can be uploaded as a page (use svc deploy for a folder)`)
  const data = readLocal(file)
  const api = ctx.api(flagsOf(v))
  const fields: Record<string, string> = {}
  if (v.project !== undefined) fields.project_name = v.project
  if (v.description !== undefined) fields.description = v.description
  const { body, contentType } = multipartBody(fields, [{ name: 'file', filename: path.basename(file), type: 'text/html', data }])
  const r = await api.post('/svc_api/upload', { body, contentType })
  const d = r.json?.data ?? {}
  if (ctx.json) ctx.emit(r.json)
  else ctx.out(`${d.is_update ? 'updated' : 'created'} ${d.file_name} (${formatBytes(Number(d.file_size ?? data.length))}, project ${d.project_name}): ${d.url}`)
  return 0
}

// ---------------------------------------------------------------- kv

const KV_TYPES = ['json', 'text', 'number']

/** The value and data_type to store, from the text given on the command line. */
export function kvValue(text: string, type: string | undefined): { value: unknown; data_type: string } {
  if (type !== undefined && !KV_TYPES.includes(type)) throw new UsageError(`--type must be one of ${KV_TYPES.join(', ')}`)
  if (type === 'text') return { value: text, data_type: 'text' }
  if (type === 'number') {
    const n = Number(text)
    if (text.trim() === '' || !Number.isFinite(n)) throw new UsageError(`"${text}" is not a number`)
    return { value: n, data_type: 'number' }
  }
  try {
    const value = JSON.parse(text) as unknown
    // a bare number is stored as a number, so `svc kv incr` can add to it
    return { value, data_type: type === undefined && typeof value === 'number' ? 'number' : 'json' }
  } catch {
    if (type === 'json') throw new UsageError('the value is not valid JSON (use --type text for plain text)')
    return { value: text, data_type: 'text' }
  }
}

const showValue = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2))

export async function kvCommand(ctx: Ctx, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  const { values: v, positionals } = parse(rest, {
    type: { type: 'string' },
    public: { type: 'boolean' },
    tags: { type: 'string' },
    file: { type: 'string' },
    by: { type: 'string' },
    page: { type: 'string' },
    'per-page': { type: 'string' },
  })
  const api = () => ctx.api(flagsOf(v))
  switch (sub) {
    case 'get': {
      const key = need(positionals[0], 'KEY: svc kv get KEY')
      noMore(positionals, 1)
      const r = await api().get('/svc_api/data/get', { query: { key } })
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(showValue(r.json?.data?.value))
      return 0
    }
    case 'set': {
      const key = need(positionals[0], 'KEY: svc kv set KEY VALUE')
      let text: string
      if (v.file !== undefined) {
        noMore(positionals, 1)
        text = v.file === '-' ? await readStdin() : readLocal(v.file).toString('utf8')
      } else if (positionals[1] === '-') {
        text = await readStdin()
      } else {
        text = need(positionals[1], 'VALUE: svc kv set KEY VALUE (or --file F, or - for stdin)')
        noMore(positionals, 2)
      }
      const body: Record<string, unknown> = { key, ...kvValue(text, v.type) }
      if (v.public !== undefined) body.is_public = v.public
      if (v.tags !== undefined) body.tags = v.tags.split(',').map((t) => t.trim()).filter(Boolean)
      const r = await api().post('/svc_api/data/store', { json: body })
      const d = r.json?.data ?? {}
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(`stored ${d.key ?? key} (${d.data_type ?? body.data_type}, ${d.is_public ? 'public' : 'private'})`)
      return 0
    }
    case 'incr': {
      const key = need(positionals[0], 'KEY: svc kv incr KEY [BY]')
      const byText = v.by ?? positionals[1] ?? '1'
      noMore(positionals, v.by !== undefined ? 1 : 2)
      const by = Number(byText)
      if (!Number.isFinite(by) || byText.trim() === '') throw new UsageError(`"${byText}" is not a number`)
      const r = await api().post('/svc_api/data/incr', { json: { key, by } })
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(showValue(r.json?.data?.value))
      return 0
    }
    case 'rm':
    case 'delete': {
      const key = need(positionals[0], 'KEY: svc kv rm KEY')
      noMore(positionals, 1)
      const r = await api().delete('/svc_api/data/delete', { query: { key } })
      if (ctx.json) ctx.emit(r.json)
      else ctx.out(`deleted ${key}`)
      return 0
    }
    case 'ls':
    case 'list': {
      noMore(positionals, 0)
      const perPage = intOption(v['per-page'], 'per-page', 100)
      const one = v.page !== undefined
      let page = intOption(v.page, 'page', 1)
      const items: any[] = []
      let last: any = {}
      for (;;) {
        const r = await api().get('/svc_api/data/list', { query: { page, per_page: perPage } })
        last = r.json?.data ?? {}
        const got = Array.isArray(last.items) ? last.items : []
        items.push(...got)
        if (one || got.length === 0 || page >= Number(last.total_pages ?? page)) break
        page++
      }
      if (ctx.json) {
        ctx.emit({ success: true, data: { items, total: last.total ?? items.length, quota: last.quota ?? null, usage: last.usage ?? null } })
        return 0
      }
      const rows = items.map((it) => [String(it.key), String(it.data_type ?? ''), it.is_public ? 'public' : 'private', String(it.updated_at ?? ''), preview(it.value)])
      ctx.out(table(['KEY', 'TYPE', 'READ', 'UPDATED', 'VALUE'], rows))
      const usage = last.usage && last.quota ? `; ${last.usage.keys}/${last.quota.max_keys} keys used` : ''
      ctx.out(`${last.total ?? items.length} key${(last.total ?? items.length) === 1 ? '' : 's'}${usage}`)
      return 0
    }
    default:
      throw new UsageError('usage: svc kv get|set|incr|rm|ls ...')
  }
}

function preview(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v)
  const one = (s ?? '').replace(/\s+/g, ' ')
  return one.length > 40 ? `${one.slice(0, 39)}…` : one
}

/** A left-aligned text table. */
export function table(head: string[], rows: string[][]): string {
  const all = [head, ...rows]
  const w = head.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)))
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : (c ?? '').padEnd(w[i]))).join('  ')).join('\n')
}

// ---------------------------------------------------------------- hosted data

/**
 * svc data push: a new hosted data file, or a new version of the file with the same display
 * name (or --id). The hosted-data API accepts only a login session (spec), so this needs
 * `svc login --username`.
 */
export async function dataCommand(ctx: Ctx, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  if (sub !== 'push') throw new UsageError('usage: svc data push <file> [--default] [--id FILE_ID] [--name NAME] [--type CONTENT_TYPE]')
  const { values: v, positionals } = parse(rest, {
    default: { type: 'boolean' },
    id: { type: 'string' },
    name: { type: 'string' },
    type: { type: 'string' },
  })
  const file = need(positionals[0], 'the file: svc data push <file>')
  noMore(positionals, 1)
  const buf = readLocal(file)
  let content: string
  try {
    content = new TextDecoder('utf-8', { fatal: true }).decode(buf)
  } catch {
    throw new CliError(`${file} is not UTF-8 text; hosted data holds text and JSON files`)
  }
  const contentType = v.type ?? textType(file)
  const displayName = v.name ?? path.basename(file)
  const api = ctx.api(flagsOf(v))
  let id = v.id
  if (id === undefined) {
    const list = await api.get('/api/hosted-data/files', { auth: 'session' })
    const files: any[] = Array.isArray(list.json?.files) ? list.json.files : []
    id = files.find((f) => f?.display_name === displayName)?.id
  }
  let r
  let created = false
  if (id === undefined) {
    r = await postJsonOrFile(api, '/api/hosted-data/files', { display_name: displayName, content, content_type: contentType }, file, buf, contentType)
    created = true
  } else {
    r = await postJsonOrFile(api, `/api/hosted-data/files/${encodeURIComponent(id)}/versions`, { content, set_default: v.default === true, ...(v.type !== undefined ? { content_type: v.type } : {}) }, file, buf, contentType)
  }
  const f = r.json?.file ?? {}
  if (ctx.json) ctx.emit(r.json)
  else {
    const version = f.version_count !== undefined ? `version ${f.version_count}` : 'new version'
    ctx.out(`${created ? 'created' : `pushed ${version} of`} ${f.display_name ?? displayName} (id ${f.id ?? id})${!created && !v.default ? '; the default version is unchanged (--default makes it the default)' : ''}`)
    if (f.public_url) ctx.out(`public link (default version ${f.default_version ?? 1}): ${f.public_url}`)
  }
  return 0
}

/** JSON body; a body over the server's JSON limit (413) is sent again as a multipart file. */
async function postJsonOrFile(api: ApiClient, p: string, json: Record<string, unknown>, file: string, data: Buffer, type: string) {
  try {
    return await api.post(p, { json, auth: 'session' })
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 413) throw e
    const fields: Record<string, string> = {}
    for (const [k, val] of Object.entries(json)) if (k !== 'content') fields[k] = String(val)
    const { body, contentType } = multipartBody(fields, [{ name: 'file', filename: path.basename(file), type, data }])
    return api.post(p, { body, contentType, auth: 'session' })
  }
}

// ---------------------------------------------------------------- forms

/** svc forms export: submissions as JSON, a table, or CSV (the server's, else converted here). */
export async function formsCommand(ctx: Ctx, args: string[]): Promise<number> {
  const [sub, ...rest] = args
  if (sub !== 'export') throw new UsageError('usage: svc forms export <form_id> [--csv] [-o FILE]')
  const { values: v, positionals } = parse(rest, {
    csv: { type: 'boolean' },
    output: { type: 'string', short: 'o' },
  })
  const id = need(positionals[0], 'the form id: svc forms export <form_id>')
  noMore(positionals, 1)
  const api = ctx.api(flagsOf(v))
  const r = await api.get(`/svc_api/forms/export/${encodePath(id)}`, { query: v.csv ? { format: 'csv' } : undefined })
  const write = (text: string) => {
    if (v.output) {
      fs.writeFileSync(v.output, text)
      ctx.rep.note(`wrote ${v.output} (${formatBytes(Buffer.byteLength(text))})`)
    } else process.stdout.write(text)
  }
  const total = Number(r.headers['x-total-count'])
  const exported = Number(r.headers['x-exported-count'])
  if (Number.isFinite(total) && Number.isFinite(exported) && exported < total) {
    ctx.rep.note(`warning: exported ${exported} of ${total} submissions (the per-export row quota form_export_rows)`)
  }
  const data = r.json?.data
  if (v.csv) {
    write(/csv/i.test(r.contentType) || data === undefined ? r.text : toCsv(submissionRows(data)))
    return 0
  }
  if (ctx.json) {
    write(`${JSON.stringify(r.json, null, 2)}\n`)
    return 0
  }
  const rows = submissionRows(data)
  const form = data?.form ?? {}
  const head = `form ${form.form_name ?? id}${form.form_slug ? ` (${form.form_slug})` : ''}: ${data?.exported_count ?? rows.length - 1} submission${(data?.exported_count ?? rows.length - 1) === 1 ? '' : 's'}\n`
  write(`${head}${rows.length > 1 ? `${table(rows[0], rows.slice(1).map((r) => r.map((c) => preview(c))))}\n` : ''}`)
  return 0
}

/** Rows (with a header row) of exported submissions: id, created_at, is_read, then each field. */
export function submissionRows(data: any): string[][] {
  const subs: any[] = Array.isArray(data?.submissions) ? data.submissions : []
  const fieldNames: string[] = []
  const cfg: any[] = Array.isArray(data?.form?.fields_config) ? data.form.fields_config : []
  for (const f of cfg) if (typeof f?.name === 'string' && !fieldNames.includes(f.name)) fieldNames.push(f.name)
  for (const s of subs) for (const k of Object.keys(s?.data ?? {})) if (!fieldNames.includes(k)) fieldNames.push(k)
  const cell = (x: unknown) => (x === undefined || x === null ? '' : typeof x === 'string' ? x : JSON.stringify(x))
  return [
    ['id', 'created_at', 'is_read', ...fieldNames],
    ...subs.map((s) => [cell(s.id), cell(s.created_at), cell(s.is_read), ...fieldNames.map((n) => cell(s?.data?.[n]))]),
  ]
}

// ---------------------------------------------------------------- helpers

const TEXT_TYPES: Record<string, string> = {
  '.json': 'application/json', '.csv': 'text/csv', '.tsv': 'text/tab-separated-values', '.txt': 'text/plain',
  '.md': 'text/markdown', '.xml': 'application/xml', '.yaml': 'application/yaml', '.yml': 'application/yaml',
  '.html': 'text/html', '.htm': 'text/html', '.css': 'text/css', '.js': 'text/javascript', '.svg': 'image/svg+xml',
  '.geojson': 'application/geo+json', '.ndjson': 'application/x-ndjson',
}

/** Content type of a hosted data file from its extension (text/plain when unknown). */
export const textType = (file: string): string => TEXT_TYPES[path.extname(file).toLowerCase()] ?? 'text/plain'

function readLocal(file: string): Buffer {
  try {
    return fs.readFileSync(file)
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`)
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of process.stdin) chunks.push(c as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** A small multipart/form-data body (fields, then files). */
export function multipartBody(fields: Record<string, string>, files: Array<{ name: string; filename: string; type: string; data: Buffer }>): { body: Buffer; contentType: string } {
  const boundary = `----svc-cli-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`
  const parts: Buffer[] = []
  const q = (s: string) => s.replace(/[\r\n"\\]/g, (c) => encodeURIComponent(c))
  for (const [k, val] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${q(k)}"\r\n\r\n${val}\r\n`))
  for (const f of files) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${q(f.name)}"; filename="${q(f.filename)}"\r\nContent-Type: ${f.type}\r\n\r\n`), f.data, Buffer.from('\r\n'))
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` }
}
