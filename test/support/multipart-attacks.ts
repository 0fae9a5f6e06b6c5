import fs from 'node:fs'
import tls from 'node:tls'
import zlib from 'node:zlib'
import path from 'node:path'
import { sql } from 'kysely'
import { multipart, type Res, type TestServer } from './server.js'
import { makeImage, svc } from './images.js'

/** One multipart route of the service, ready to be called by a user who may use it. */
export interface MultipartRoute {
  name: string
  path: string
  headers: Record<string, string>
  /** Name of the file part the route reads. */
  field: string
  filename: string
  /**
   * What a malformed body gets here (docs/decisions.md 27): 1106 in the route's format A or B,
   * or 'plain' ({success:false, message}) on the image-hosting and hosted-data routes.
   */
  error: 1106 | 'plain'
  /** The tables the route writes when it accepts a body (usage counters aside). */
  tables: string[]
}

/**
 * Every multipart route, each with the credentials and the record it needs: a user with an
 * API key and a session, entitled to images and hosted data, with one image, one hosted-data
 * file and one form.
 */
export async function multipartRoutes(s: TestServer): Promise<MultipartRoute[]> {
  const u = await s.user()
  const cookie = await s.login(u.username, u.password)
  await svc(s, 'grant', u.username, 'image-host')
  await svc(s, 'grant', u.username, 'hosted-data')
  const img = multipart([{ name: 'file', filename: 'a.png', type: 'image/png', data: await makeImage('png') }])
  const up = await s.post('/api/image-host/upload', { cookie, body: img.body, headers: { 'content-type': img.contentType } })
  if (up.status !== 200) throw new Error(`image upload: ${up.status} ${up.text}`)
  const token = up.json.images[0].public_token as string
  const data = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'd.json', content: '{"a":1}' } })
  if (data.status !== 200) throw new Error(`hosted data: ${data.status} ${data.text}`)
  const form = await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'f' } })
  if (form.status !== 200) throw new Error(`form: ${form.status} ${form.text}`)
  const key = { authorization: `Bearer ${u.key}` }
  const session = { cookie }
  return [
    { name: 'single-file upload', path: '/svc_api/upload', headers: key, field: 'file', filename: 'a.html', error: 1106, tables: ['files'] },
    {
      name: 'folder batch upload',
      path: '/api/folders/p1/batch_upload',
      headers: key,
      field: 'files[]',
      filename: 'a.html',
      error: 1106,
      tables: ['folders', 'folder_files', 'deploys', 'deploy_files'],
    },
    { name: 'image upload', path: '/api/image-host/upload', headers: session, field: 'file', filename: 'a.png', error: 'plain', tables: ['images'] },
    {
      name: 'image replace',
      path: `/api/image-host/images/${token}/replace`,
      headers: session,
      field: 'file',
      filename: 'a.png',
      error: 'plain',
      tables: ['images'],
    },
    {
      name: 'hosted data create',
      path: '/api/hosted-data/files',
      headers: session,
      field: 'file',
      filename: 'd.json',
      error: 'plain',
      tables: ['hosted_files', 'hosted_versions'],
    },
    {
      name: 'hosted data version',
      path: `/api/hosted-data/files/${data.json.file.id}/versions`,
      headers: session,
      field: 'file',
      filename: 'd.json',
      error: 'plain',
      tables: ['hosted_files', 'hosted_versions'],
    },
    {
      name: 'form submit',
      path: `/api/forms/submit/${form.json.data.form_slug}`,
      headers: {},
      field: 'a',
      // an empty <input type=file>: the route reads on past it, where a named file part is
      // refused (1614) before the end of the body is reached
      filename: '',
      error: 1106,
      tables: ['form_submissions', 'form_usage', 'notify_deliveries'],
    },
  ]
}

/** What the multipart routes have recorded (see `recorded`). */
export interface Records {
  /** Every row, as JSON, of each route's tables and of `usage` (the per-user counters), by table. */
  rows: Record<string, string[]>
  /** The blob store's files outside tmp/. */
  blobs: string[]
}

/**
 * A snapshot of what the multipart routes record: two are equal when no refused body left a
 * row, an update, a counter change or a blob behind.
 */
export async function recorded(s: TestServer, routes: MultipartRoute[]): Promise<Records> {
  const rows: Record<string, string[]> = {}
  for (const t of new Set([...routes.flatMap((r) => r.tables), 'usage'])) {
    const all = (await sql<Record<string, unknown>>`select * from ${sql.table(t)}`.execute(s.deps.db.k)).rows
    // sorted: the same rows in whatever order the engine returns them
    rows[t] = all.map((r) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? String(v) : v))).sort()
  }
  const root = path.join(s.dataDir, 'blobs')
  const blobs = fs
    .readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => !f.startsWith(`tmp${path.sep}`) && fs.statSync(path.join(root, f)).isFile())
    .sort()
  return { rows, blobs }
}

/** What a raw exchange saw: the status line's code (null when the server closed without answering) and the answer's time after the body ended. */
export interface Outcome {
  status: number | null
  body: string
  ms: number
}

export interface Attack {
  name: string
  /** Sends one bad request; resolves when the server answered or closed, or after `waitMs`. */
  send(port: number, r: MultipartRoute): Promise<Outcome>
  /** Whether the client stays to read the answer (false: it goes away mid-body). */
  expectsAnswer: boolean
}

const B = 'svcbad'
const head = (r: MultipartRoute) => `--${B}\r\nContent-Disposition: form-data; name="${r.field}"; filename="${r.filename}"\r\nContent-Type: text/plain\r\n\r\n`
const fieldHead = `--${B}\r\nContent-Disposition: form-data; name="note"\r\n\r\n`
const valid = (r: MultipartRoute) => Buffer.from(`${head(r)}{"a":1}\r\n--${B}--\r\n`)

interface RawOptions {
  contentType?: string
  extraHeaders?: Record<string, string>
  /** Declared Content-Length (default: the body's length). */
  length?: number
  /** Wait this long between the headers and the body. */
  delayMs?: number
  /** After the body: 'end' half-closes, 'destroy' resets, 'stay' waits for the answer. */
  then?: 'stay' | 'end' | 'destroy'
  waitMs?: number
}

/** One request over its own TLS connection, bytes exactly as given. */
export function rawMultipart(port: number, r: MultipartRoute, body: Buffer, o: RawOptions = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    const sock = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false })
    const chunks: Buffer[] = []
    let sentAt = 0
    let done = false
    const finish = () => {
      if (done) return
      done = true
      clearTimeout(timer)
      sock.destroy()
      const text = Buffer.concat(chunks).toString('utf8')
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text)
      const at = text.indexOf('\r\n\r\n')
      resolve({ status: m ? Number(m[1]) : null, body: at < 0 ? '' : text.slice(at + 4), ms: sentAt ? Date.now() - sentAt : 0 })
    }
    const timer = setTimeout(finish, o.waitMs ?? 3000)
    sock.on('data', (d) => {
      chunks.push(d)
      // one answer is all we wait for: stop once its declared body has arrived
      const text = Buffer.concat(chunks).toString('latin1')
      const at = text.indexOf('\r\n\r\n')
      const len = /\r\ncontent-length: (\d+)/i.exec(text)
      if (at >= 0 && len && text.length - at - 4 >= Number(len[1])) finish()
    })
    sock.on('close', finish)
    sock.on('error', () => {})
    sock.once('secureConnect', () => {
      const headers = {
        host: 'localhost',
        'content-type': o.contentType ?? `multipart/form-data; boundary=${B}`,
        'content-length': String(o.length ?? body.length),
        accept: 'application/json',
        'accept-language': 'en',
        ...r.headers,
        ...(o.extraHeaders ?? {}),
      }
      sock.write(
        `POST ${r.path} HTTP/1.1\r\n${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}`)
          .join('\r\n')}\r\n\r\n`,
      )
      const sendBody = () => {
        sock.write(body, () => {
          sentAt = Date.now()
          if (o.then === 'end') sock.end()
          if (o.then === 'destroy')
            setTimeout(() => {
              sock.destroy()
              finish()
            }, 50)
        })
      }
      if (o.delayMs) setTimeout(sendBody, o.delayMs)
      else sendBody()
    })
  })
}

/**
 * The Content-Length a client that goes away mid-body declares: under every route's body
 * limit (64 KiB for a form submission), so each route waits for the rest instead of refusing
 * the length up front (413).
 */
const DECLARED = 60_000

/** The malformed, truncated and abandoned bodies a hostile or broken client sends. */
export const ATTACKS: Attack[] = [
  { name: 'multipart/form-data without boundary=', expectsAnswer: true, send: (p, r) => rawMultipart(p, r, valid(r), { contentType: 'multipart/form-data' }) },
  { name: 'a wrong boundary', expectsAnswer: true, send: (p, r) => rawMultipart(p, r, valid(r), { contentType: 'multipart/form-data; boundary=other' }) },
  { name: 'a body that ends inside a file part', expectsAnswer: true, send: (p, r) => rawMultipart(p, r, Buffer.from(`${head(r)}<p>a</p>`)) },
  { name: 'a body that ends inside a text field', expectsAnswer: true, send: (p, r) => rawMultipart(p, r, Buffer.from(`${fieldHead}some val`)) },
  {
    name: 'a body that ends inside part headers',
    expectsAnswer: true,
    send: (p, r) => rawMultipart(p, r, Buffer.from(`--${B}\r\nContent-Disposition: form-da`)),
  },
  { name: 'JSON sent as multipart', expectsAnswer: true, send: (p, r) => rawMultipart(p, r, Buffer.from('{"file":"<p>a</p>"}')) },
  {
    name: 'Content-Encoding: gzip',
    expectsAnswer: true,
    send: (p, r) => rawMultipart(p, r, zlib.gzipSync(valid(r)), { extraHeaders: { 'content-encoding': 'gzip' } }),
  },
  {
    name: 'a truncated body sent 300 ms after the headers',
    expectsAnswer: true,
    send: (p, r) => rawMultipart(p, r, Buffer.from(`${head(r)}<p>a</p>`), { delayMs: 300 }),
  },
  {
    name: 'a truncated body sent 1 s after the headers',
    expectsAnswer: true,
    send: (p, r) => rawMultipart(p, r, Buffer.from(`${head(r)}<p>a</p>`), { delayMs: 1000 }),
  },
  {
    name: 'a client that half-closes mid-body',
    expectsAnswer: false,
    send: (p, r) => rawMultipart(p, r, Buffer.from(`${head(r)}<p>a</p>`), { length: DECLARED, then: 'end', waitMs: 1500 }),
  },
  {
    name: 'a client that aborts mid-body',
    expectsAnswer: false,
    send: (p, r) => rawMultipart(p, r, Buffer.concat([Buffer.from(head(r)), Buffer.alloc(20_000, 'a')]), { length: DECLARED, then: 'destroy', waitMs: 1500 }),
  },
]

/** An outcome as the `Res` that test/support/errors.ts's assertions read (its JSON when it parses). */
export function outcomeRes(out: Outcome): Res {
  let json: any = undefined
  try {
    json = JSON.parse(out.body)
  } catch {
    // not JSON: the assertions name the text
  }
  return { status: out.status ?? 0, headers: {}, text: out.body, body: Buffer.from(out.body), json, header: () => undefined }
}

/**
 * Records the process's uncaught exceptions and unhandled rejections while installed. The
 * server runs in the test process, and node's test runner blames such an error on the hook
 * that started the server, not on the test that caused it: a test that must keep the process
 * up reads `take()` (the errors since the last take) itself.
 */
export function recordUncaught(): { take(): string[]; stop(): void } {
  const errors: string[] = []
  const record = (e: unknown) => void errors.push(e instanceof Error ? (e.stack ?? e.message) : String(e))
  process.on('uncaughtException', record)
  process.on('unhandledRejection', record)
  return {
    take: () => errors.splice(0),
    stop: () => {
      process.off('uncaughtException', record)
      process.off('unhandledRejection', record)
    },
  }
}

/**
 * The descriptors a request could leak: open files below `dataDir`'s blobs/ (temp files of
 * uploads) and connections accepted on `port` whose client (in this process too) has closed
 * its end. Database pool connections, the WAL and idle keep-alive pairs stay out.
 */
export function requestFds(port: number, dataDir: string): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  // inode -> [local, remote, state] of every TCP socket in this network namespace
  const socks = new Map<string, [string, string, string]>()
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    if (!fs.existsSync(table)) continue
    for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length > 9) socks.set(f[9], [f[1], f[2], f[3]])
    }
  }
  const fds: [string, string][] = []
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      fds.push([fd, fs.readlinkSync(`/proc/self/fd/${fd}`)])
    } catch {
      // closed meanwhile (the readdir's own descriptor)
    }
  }
  const openInodes = new Set(fds.map(([, t]) => /^socket:\[(\d+)\]$/.exec(t)?.[1]).filter((i) => i !== undefined))
  const openLocal = new Set([...socks].filter(([inode]) => openInodes.has(inode)).map(([, [local]]) => local))
  const out: string[] = []
  for (const [fd, target] of fds) {
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1]
    const s = inode === undefined ? undefined : socks.get(inode)
    // accepted on the port (not the listener, state 0A) and its client's end is no longer open here
    const orphan = s !== undefined && s[0].endsWith(`:${hexPort}`) && s[2] !== '0A' && !openLocal.has(s[1])
    if (orphan || (inode === undefined && target.startsWith(`${dataDir}/blobs/`))) out.push(`${fd} -> ${target}`)
  }
  return out
}

/** Entries of the local blob store's temp folder. */
export const tmpEntries = (dataDir: string): string[] => fs.readdirSync(`${dataDir}/blobs/tmp`)

/** Polls `f` until it holds or `ms` passed; returns its last value. */
export async function eventually<T>(f: () => T, ok: (v: T) => boolean, ms = 3000): Promise<T> {
  const end = Date.now() + ms
  let v = f()
  while (!ok(v) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50))
    v = f()
  }
  return v
}
