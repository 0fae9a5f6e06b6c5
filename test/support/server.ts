import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { Agent, request as undiciRequest, FormData } from 'undici'
import pg from 'pg'
import { loadConfig } from '../../src/config.js'
import { createDeps, type Deps, type DepsOverrides } from '../../src/compose.js'
import { buildApp, loggerOptions, type AppOptions } from '../../src/app.js'
import { listen, serverFactoryFor, tlsMaterial, type Listening } from '../../src/server.js'
import type { FastifyInstance } from 'fastify'
import type { Engine } from '../../src/db/kysely.js'
import { migratedPostgres, migratedSqlite } from './templates.js'
import { documentedAnswers, type OpenApiDoc } from './openapi-answers.js'

/**
 * Services this run has. scripts/run-tests.mjs probes PostgreSQL and Redis once: outside CI it
 * sets SVC_TEST_POSTGRES=0 / SVC_TEST_REDIS=0 for a missing one (and says so), in CI it fails.
 */
export const HAVE_POSTGRES = process.env.SVC_TEST_POSTGRES !== '0'
export const HAVE_REDIS = process.env.SVC_TEST_REDIS !== '0'
/** Engines the API suites run on: SVC_TEST_ENGINES=sqlite,postgres (default both; postgres only when reachable). */
export const ENGINES: Engine[] = (
  (process.env.SVC_TEST_ENGINES ?? 'sqlite,postgres')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean) as Engine[]
).filter((e) => e !== 'postgres' || HAVE_POSTGRES)
/**
 * The `skip` option of a test or suite that needs PostgreSQL or Redis: false when the run has
 * them, else the reason (node's test runner prints it next to the skipped test).
 */
export function needs(...services: Array<'postgres' | 'redis'>): { skip: string | false } {
  const missing = services.filter((x) => (x === 'postgres' ? !HAVE_POSTGRES : !HAVE_REDIS))
  return { skip: missing.length > 0 && `needs ${missing.join(' and ')} (not reachable; see scripts/run-tests.mjs)` }
}
export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

export const insecureAgent = new Agent({ connect: { rejectUnauthorized: false }, keepAliveTimeout: 1000 })

export interface Res {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  body: Buffer
  json: any
  header(name: string): string | undefined
}

export interface ReqOptions {
  headers?: Record<string, string>
  json?: unknown
  form?: Record<string, string>
  body?: string | Buffer | FormData
  key?: string
  cookie?: string
  /** Use the plain-HTTP listener (HTTP_PORT) instead of HTTPS. */
  plain?: boolean
  /** Gives up on the request (e.g. AbortSignal.timeout): a server that never answers fails fast. */
  signal?: AbortSignal
}

const CERT_FILES = ['tls-cert.pem', 'tls-key.pem'] as const
let certCache: Map<string, Buffer> | null = null
/**
 * A self-signed pair generated once per test process and written into each DATA_DIR. It is kept
 * in memory and its temporary folder removed at once, so no private key outlives the test run.
 */
async function cachedCert(): Promise<Map<string, Buffer>> {
  if (certCache) return certCache
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cert-'))
  try {
    await tlsMaterial(loadConfig({ DATA_DIR: dir }))
    certCache = new Map(CERT_FILES.map((f) => [f, fs.readFileSync(path.join(dir, f))]))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  return certCache
}

export interface TestServer {
  engine: Engine
  url: string
  httpUrl: string
  dataDir: string
  deps: Deps
  app: FastifyInstance
  env: Record<string, string>
  request(method: string, p: string, o?: ReqOptions): Promise<Res>
  get(p: string, o?: ReqOptions): Promise<Res>
  post(p: string, o?: ReqOptions): Promise<Res>
  /** Creates a user (unique name unless given) and returns its credentials. */
  user(opts?: { name?: string; vip?: boolean; admin?: boolean; password?: string }): Promise<{ username: string; password: string; id: string; key: string }>
  /** Logs in and returns the Cookie header value: `session=...; __Host-session_bind=...`. */
  login(username: string, password: string): Promise<string>
  /**
   * The CSRF token of a session cookie ("session=..."): browser cookie writes (Sec-Fetch-Site
   * or Origin present) must send it as X-CSRF-Token.
   */
  csrfToken(cookie: string): Promise<string>
  /** The server's log lines at warn and above, parsed, when started with `captureLogs` (else none). */
  logs: LogLine[]
  close(): Promise<void>
}

/** One pino log line: `level` 40 warn, 50 error, 60 fatal. */
export interface LogLine {
  level: number
  msg?: string
  [k: string]: unknown
}

export interface StartOptions extends DepsOverrides {
  engine?: Engine
  env?: Record<string, string>
  /** Reuse a data dir / database schema (restart tests). */
  dataDir?: string
  pgSchema?: string
  keepData?: boolean
  /** PostgreSQL server URL to use instead of PG_URL (e.g. through a relay); the schema is added. */
  pgUrl?: string
  /** Keep the server's warn and error log lines in `logs` (instead of LOG_LEVEL's output). */
  captureLogs?: boolean
  /**
   * Receives each JSON log line the server writes (the service's own logger settings, at
   * LOG_LEVEL: give env.LOG_LEVEL too, the tests' default is silent).
   */
  logLines?: string[]
}

const uid = () => crypto.randomBytes(5).toString('hex')

/** Starts a real server (HTTPS + HTTP listeners on loopback) on a fresh SQLite file or PostgreSQL schema. */
/**
 * A second instance over `a`'s data (its data dir, or its PostgreSQL schema) with `a`'s
 * environment (its Redis bus and prefix too) and `opts` on top: two instances of one service.
 * `a` must have been started with `keepData: true`.
 */
export function startSecond(a: TestServer, opts: StartOptions = {}): Promise<TestServer> {
  return startServer({
    engine: a.engine,
    dataDir: a.dataDir,
    pgSchema: (a.env.DATABASE_URL ?? '').split('schema=')[1],
    ...opts,
    env: { ...a.env, ...opts.env },
  })
}

export async function startServer(opts: StartOptions = {}): Promise<TestServer> {
  const engine = opts.engine ?? 'sqlite'
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-'))
  const cert = await cachedCert()
  for (const [f, pem] of cert) {
    if (!fs.existsSync(path.join(dataDir, f))) fs.writeFileSync(path.join(dataDir, f), pem, { mode: 0o600 })
  }
  if (engine === 'sqlite' && opts.dataDir === undefined && opts.env?.MIGRATE_ON_START === undefined) {
    fs.writeFileSync(path.join(dataDir, 'svc.db'), await migratedSqlite(), { mode: 0o600 })
  }
  // a caller that names the database itself (env.DATABASE_URL without pgSchema: a second
  // instance on another's) owns it: this server makes no schema of its own and drops none
  const namedByCaller = opts.env?.DATABASE_URL !== undefined && opts.pgSchema === undefined
  const schema = opts.pgSchema ?? `t_${uid()}`
  let madeSchema = false
  if (engine === 'postgres' && !namedByCaller && opts.pgSchema === undefined && opts.pgUrl === undefined && opts.env?.MIGRATE_ON_START === undefined) {
    const t = await migratedPostgres(PG_URL)
    if (t !== null) {
      madeSchema = true
      const c = new pg.Client({ connectionString: PG_URL })
      await c.connect()
      try {
        await c.query(t.sql.replaceAll(t.name, schema))
      } finally {
        await c.end()
      }
    }
  }
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PORT: '0',
    HTTP_PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // tests' webhook receivers listen on loopback; the SSRF guard's own tests turn it back on
    WEBHOOK_BLOCK_PRIVATE: '0',
    ...(engine === 'postgres' ? { DATABASE_URL: `${opts.pgUrl ?? PG_URL}?schema=${schema}` } : {}),
    ...(opts.env ?? {}),
  }
  // a start that fails (tests of bad settings, unreachable services) leaves no folder with a key behind
  const discard = async () => {
    if (!opts.dataDir && !opts.keepData) fs.rmSync(dataDir, { recursive: true, force: true })
    if (madeSchema && !opts.keepData) await dropSchema(schema)
  }
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(env)
  } catch (e) {
    await discard()
    throw e
  }
  const deps = await createDeps(config, opts).catch(async (e) => {
    // close what the test handed in, so a failed start fails fast instead of hanging the file
    await Promise.allSettled([opts.limits?.close(), opts.bus?.close(), opts.blobs?.close()])
    await discard()
    throw e
  })
  const tls = await tlsMaterial(config)
  // one stream for both options: every line to logLines, warn and above (parsed) to logs
  const logs: LogLine[] = []
  let logger: AppOptions['logger'] = undefined
  if (opts.captureLogs || opts.logLines) {
    const lines = opts.logLines
    let partial = ''
    const stream = {
      write(chunk: string) {
        partial += chunk
        let i: number
        while ((i = partial.indexOf('\n')) >= 0) {
          const line = partial.slice(0, i)
          partial = partial.slice(i + 1)
          lines?.push(line)
          if (opts.captureLogs) {
            const parsed = JSON.parse(line) as LogLine
            if (parsed.level >= 40) logs.push(parsed)
          }
        }
      },
    }
    logger = { ...loggerOptions(lines ? config.logLevel : 'warn'), stream }
  }
  const app = await buildApp(deps, { serverFactory: serverFactoryFor(tls), logger })
  const l: Listening = await listen(app, config, tls !== null)
  const url = tls ? `https://127.0.0.1:${l.port}` : `http://127.0.0.1:${l.port}`
  const httpUrl = `http://127.0.0.1:${l.httpPort ?? l.port}`

  let documented: ReturnType<typeof documentedAnswers> | undefined
  const request = async (method: string, p: string, o: ReqOptions = {}): Promise<Res> => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) }
    let body: string | Buffer | FormData | undefined = o.body
    if (o.json !== undefined) {
      body = JSON.stringify(o.json)
      headers['content-type'] ??= 'application/json'
    }
    if (o.form) {
      body = new URLSearchParams(o.form).toString()
      headers['content-type'] ??= 'application/x-www-form-urlencoded'
    }
    if (o.key) headers.authorization = `Bearer ${o.key}`
    if (o.cookie) headers.cookie = o.cookie
    const r = await undiciRequest((o.plain ? httpUrl : url) + p, { method: method as 'GET', headers, body, dispatcher: insecureAgent, signal: o.signal })
    const buf = Buffer.from(await r.body.arrayBuffer())
    const text = buf.toString('utf8')
    let json: any = undefined
    try {
      json = JSON.parse(text)
    } catch {}
    const hs = r.headers as Record<string, string | string[] | undefined>
    // every answer of the API is one the served document describes (its status, its media
    // type, a JSON body's schema): a generated client reads answers by it. A request for
    // another host (a user's origin, a custom domain) reaches a site, not the API
    const media = String(hs['content-type'] ?? '')
    const isJson = json !== undefined && media.startsWith('application/json')
    if (o.headers?.host === undefined && (isJson || (buf.length > 0 && media !== ''))) {
      documented ??= typeof app.swagger === 'function' ? documentedAnswers(app.swagger() as unknown as OpenApiDoc) : () => null
      const wrong = isJson ? documented(method, p, r.statusCode, json) : documented(method, p, r.statusCode, undefined, media)
      if (wrong !== null) throw new Error(`an answer /openapi.json does not describe: ${wrong}`)
    }
    return {
      status: r.statusCode,
      headers: hs,
      text,
      body: buf,
      json,
      header: (n) => {
        const v = hs[n.toLowerCase()]
        return Array.isArray(v) ? v.join(', ') : v
      },
    }
  }

  const server: TestServer = {
    engine,
    url,
    httpUrl,
    dataDir,
    deps,
    app,
    env,
    request,
    get: (p, o) => request('GET', p, o),
    post: (p, o) => request('POST', p, o),
    async user(u = {}) {
      const username = u.name ?? `u${uid()}`
      const password = u.password ?? `pw-${uid()}-secret`
      const created = await deps.users.create(username, password, { vip: u.vip, admin: u.admin })
      const { key } = await deps.apiKeys.create(created.id, { name: 'test' })
      return { username, password, id: created.id, key }
    },
    async login(username, password) {
      const r = await request('POST', '/login', { form: { username, password }, headers: { accept: 'application/json' } })
      if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`)
      // the session cookie and its __Host- binding cookie, as a browser sends them back
      const set = r.headers['set-cookie']
      return (Array.isArray(set) ? set : [set ?? '']).map((c) => c.split(';')[0]).join('; ')
    },
    async csrfToken(cookie) {
      const sid = cookie.replace(/^session=/, '').split(';')[0]
      const row = await deps.db.k
        .selectFrom('sessions')
        .select('csrf_token')
        .where('id_hash', '=', crypto.createHash('sha256').update(sid).digest('hex'))
        .executeTakeFirstOrThrow()
      return row.csrf_token
    },
    logs,
    async close() {
      await l.close().catch(() => {})
      await deps.close().catch(() => {})
      if (!opts.keepData) {
        if (engine === 'postgres' && !namedByCaller) await dropSchema(schema)
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    },
  }
  return server
}

/** One query on the test PostgreSQL, on a connection of its own: its rows. */
export async function pgQuery<T>(text: string, values: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: PG_URL })
  await c.connect()
  try {
    return (await c.query(text, values)).rows as T[]
  } finally {
    await c.end()
  }
}

/** Drops a test schema from PostgreSQL. */
export async function dropSchema(schema: string): Promise<void> {
  await pgQuery(`drop schema if exists "${schema}" cascade`)
}

/** Builds a multipart/form-data body by hand, so file names keep directories and odd bytes. */
export function multipart(parts: Array<{ name: string; filename?: string; filenameStar?: string; type?: string; data: string | Buffer }>): {
  body: Buffer
  contentType: string
} {
  const boundary = `----svctest${uid()}`
  const chunks: Buffer[] = []
  for (const p of parts) {
    let disp = `form-data; name="${p.name}"`
    if (p.filename !== undefined) disp += `; filename="${p.filename}"`
    if (p.filenameStar !== undefined) disp += `; filename*=UTF-8''${p.filenameStar}`
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disp}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`))
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data))
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` }
}

export { FormData }
