import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import tls from 'node:tls'
import { Readable } from 'node:stream'
import { ApiError, CliError, UsageError } from './errors.js'
import type { Connection } from './config.js'

export const CLIENT_VERSION = '0.1.0'

export interface ApiResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  json: any
  contentType: string
  /** The request and the server, to name them in errors ("POST https://host/path"). */
  where?: { request: string; server: string }
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>
  json?: unknown
  /** A prepared body (re-sent as is on a retry), or a function giving the body of each attempt. */
  body?: Buffer | string | (() => AsyncIterable<Buffer>)
  contentType?: string
  /** Needed with a streamed body. */
  contentLength?: number
  /** 'key' (default): the API key, else the session; 'session': the session cookie only; 'none'. */
  auth?: 'key' | 'session' | 'none'
  /** Answers with these statuses are returned instead of thrown. */
  okStatuses?: number[]
  /** The answer may be other than JSON (a CSV export); otherwise a 2xx body must be JSON. */
  anyBody?: boolean
  /** Extra request headers (e.g. the Accept an MCP endpoint asks for). */
  headers?: Record<string, string>
  /**
   * Sending it twice has the effect of sending it once. Default: every method but POST. A
   * request that is not is repeated only when it surely was not handled (a 429, or a reset of a
   * kept-alive connection before any answer), never after a 502/503/504 or a timeout.
   */
  idempotent?: boolean
  /**
   * Takes the body of a 2xx answer as a stream instead of buffering it (a download); called
   * again from the start on a retry, so it must begin its output afresh each time.
   */
  sink?: (body: http.IncomingMessage) => Promise<void>
}

/** Notices the client prints while it waits (rate limits, retries). */
export type Notify = (message: string) => void

export interface ClientOptions {
  /** Rate-limit answers waited out per request before giving up. */
  maxRateRetries?: number
  /** Longest single wait in seconds; a longer retry_after (daily limit) fails at once. */
  maxWaitSeconds?: number
  /** Multiplies every wait (tests use a small factor with a fake server clock). */
  waitScale?: number
  notify?: Notify
}

const NETWORK_RETRIES = 3
const REQUEST_TIMEOUT_MS = 300_000
const TRANSIENT_STATUS = new Set([502, 503, 504])

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The Accept-Language the CLI sends: Chinese when the locale is Chinese, else English. */
export function acceptLanguage(env: NodeJS.ProcessEnv = process.env): string {
  const loc = env.LC_ALL || env.LC_MESSAGES || env.LANG || ''
  return /^zh/i.test(loc) ? 'zh-CN,zh;q=0.9' : 'en'
}

/** Encodes each segment of a slash-separated path for use in a URL path. */
export const encodePath = (p: string): string => p.split('/').map(encodeURIComponent).join('/')

/**
 * HTTP client of the svc API: adds the credentials, parses the three error formats into
 * ApiError, waits out 429 answers (retry_after / Retry-After, bounded) and retries transient
 * failures (502/503/504, connection resets) of idempotent requests a few times. Bodies are
 * buffers, so every retry sends exactly the same request.
 */
export class ApiClient {
  private readonly agent: http.Agent
  readonly maxRateRetries: number
  readonly maxWaitSeconds: number
  readonly waitScale: number
  notify: Notify
  /** Requests sent (retries included), for summaries and benchmarks. */
  requests = 0
  rateLimitWaits = 0

  constructor(
    readonly conn: Connection,
    opts: ClientOptions = {},
  ) {
    // node's own HTTP client: nothing to load at start-up, and a keep-alive agent that
    // accepts a self-signed certificate only when asked to (--insecure)
    this.agent = conn.url.startsWith('https:')
      ? new https.Agent({ keepAlive: true, maxSockets: 16, rejectUnauthorized: !conn.insecure })
      : new http.Agent({ keepAlive: true, maxSockets: 16 })
    this.maxRateRetries = opts.maxRateRetries ?? 10
    this.maxWaitSeconds = opts.maxWaitSeconds ?? 300
    this.waitScale = opts.waitScale ?? 1
    this.notify = opts.notify ?? ((m) => process.stderr.write(`${m}\n`))
  }

  async close(): Promise<void> {
    this.agent.destroy()
  }

  url(p: string, query?: RequestOptions['query']): string {
    const qs = new URLSearchParams()
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) qs.set(k, String(v))
    const q = qs.toString()
    return `${this.conn.url}${p}${q ? `?${q}` : ''}`
  }

  private headers(o: RequestOptions): Record<string, string> {
    const h: Record<string, string> = {
      accept: 'application/json',
      'accept-language': acceptLanguage(),
      'user-agent': `svc-cli/${CLIENT_VERSION}`,
    }
    const auth = o.auth ?? 'key'
    if (auth === 'key') {
      if (this.conn.key) h.authorization = `Bearer ${this.conn.key}`
      else if (this.conn.session) h.cookie = this.conn.session
      else if (this.conn.keyServer)
        throw new UsageError(
          `no API key for ${this.conn.url}: the stored key is for ${this.conn.keyServer} and is sent nowhere else; pass --key or set SVC_API_KEY`,
        )
      else throw new UsageError('no API key: run `svc login --url URL --key KEY`, or set SVC_API_KEY')
    } else if (auth === 'session') {
      if (!this.conn.session) {
        throw new UsageError(
          'this command needs a login session, not an API key (the API accepts only sessions here): run `svc login --username NAME` (password from a prompt, --password-stdin or SVC_PASSWORD) first',
        )
      }
      h.cookie = this.conn.session
    }
    if (o.json !== undefined) h['content-type'] = 'application/json'
    else if (o.contentType) h['content-type'] = o.contentType
    if (o.contentLength !== undefined) h['content-length'] = String(o.contentLength)
    return { ...h, ...(o.headers ?? {}) }
  }

  /** Sends one request and returns its answer; non-2xx answers throw ApiError (unless okStatuses). */
  async call(method: string, p: string, o: RequestOptions = {}): Promise<ApiResponse> {
    const headers = this.headers(o)
    const body = o.json !== undefined ? JSON.stringify(o.json) : o.body
    const target = this.url(p, o.query)
    const idempotent = o.idempotent ?? method !== 'POST'
    let rateRetries = 0
    let netRetries = 0
    for (;;) {
      let res: ApiResponse
      try {
        res = await this.once(method, target, headers, body, o.sink)
      } catch (e) {
        // the body's own failure (a local file that changed while it was sent) is not the network's
        if (e instanceof CliError) throw e
        // an http:// URL naming a TLS port: the server drops the plain request without a word,
        // which reads as a reset; said once, before any retry
        if (this.conn.url.startsWith('http:') && (await this.speaksTls(e))) throw plainToTls(this.conn.url)
        if (netRetries < NETWORK_RETRIES && isTransientNetworkError(e) && (idempotent || notHandled(e))) {
          netRetries++
          const wait = 500 * 2 ** (netRetries - 1)
          this.notify(`connection problem (${(e as Error).message}); retrying in ${(wait / 1000).toFixed(1)} s`)
          await sleep(wait * this.waitScale)
          continue
        }
        if (!idempotent && isTransientNetworkError(e)) this.notify(unknownOutcome(method, p))
        throw networkError(e, this.conn.url)
      }
      if (res.status >= 200 && res.status < 300) {
        // every API answer is JSON: a 2xx page of something else (a website, a proxy's or
        // captive portal's page at a wrong URL) is no success, whatever the command reads of it
        if (!o.anyBody && res.json === undefined && res.text.trim() !== '') {
          throw new CliError(
            `${method} ${this.conn.url}${p} answered HTTP ${res.status} with ${res.contentType.split(';')[0] || 'no content type'}, not JSON: is ${this.conn.url} the address of an svc server?`,
            { status: res.status, content_type: res.contentType || null },
          )
        }
        return res
      }
      res.where = { request: `${method} ${this.conn.url}${p}`, server: this.conn.url }
      if (o.okStatuses?.includes(res.status)) return res
      const err = ApiError.from(res.status, res.json, res.text, res.headers, res.where)
      if (res.status === 429) {
        const wait = err.retryAfter ?? 1
        if (rateRetries >= this.maxRateRetries) throw err
        if (wait > this.maxWaitSeconds) throw err
        rateRetries++
        this.rateLimitWaits++
        this.notify(`rate limited (error ${err.code ?? 429}): waiting ${Math.ceil(wait)} s before retry ${rateRetries}/${this.maxRateRetries}`)
        await sleep(Math.max(wait, 0.05) * 1000 * this.waitScale)
        continue
      }
      if (TRANSIENT_STATUS.has(res.status) && !idempotent) this.notify(unknownOutcome(method, p))
      else if (TRANSIENT_STATUS.has(res.status) && netRetries < NETWORK_RETRIES) {
        netRetries++
        const wait = Math.max((err.retryAfter ?? 0) * 1000, 500 * 2 ** (netRetries - 1))
        this.notify(`server unavailable (HTTP ${res.status}${err.code ? `, error ${err.code}` : ''}); retrying in ${(wait / 1000).toFixed(1)} s`)
        await sleep(wait * this.waitScale)
        continue
      }
      throw err
    }
  }

  private tlsProbe?: Promise<boolean>

  /**
   * Whether the server of an http:// URL speaks TLS on that port: asked once, after a failure a
   * TLS port gives a plain request (a reset, a hang-up, bytes that are not HTTP).
   */
  private speaksTls(e: unknown): Promise<boolean> {
    const code = (e as { code?: string })?.code ?? ''
    if (!['ECONNRESET', 'EPIPE'].includes(code) && !code.startsWith('HPE_')) return Promise.resolve(false)
    this.tlsProbe ??= new Promise<boolean>((resolve) => {
      const u = new URL(this.conn.url)
      const host = u.hostname.replace(/^\[|\]$/g, '')
      const socket = tls.connect({ host, port: Number(u.port || 80), rejectUnauthorized: false, ...(net.isIP(host) ? {} : { servername: host }) })
      const done = (v: boolean) => {
        socket.destroy()
        resolve(v)
      }
      socket.setTimeout(5000, () => done(false))
      socket.on('secureConnect', () => done(true))
      socket.on('error', () => done(false))
    })
    return this.tlsProbe
  }

  private once(
    method: string,
    target: string,
    headers: Record<string, string>,
    body: RequestOptions['body'],
    sink?: RequestOptions['sink'],
  ): Promise<ApiResponse> {
    this.requests++
    const u = new URL(target)
    const mod = u.protocol === 'https:' ? https : http
    const h = { ...headers }
    if (typeof body === 'string' || Buffer.isBuffer(body)) h['content-length'] = String(Buffer.byteLength(body))
    return new Promise<ApiResponse>((resolve, reject) => {
      const req = mod.request(u, { method, headers: h, agent: this.agent, timeout: REQUEST_TIMEOUT_MS }, (res) => {
        const status = res.statusCode ?? 0
        if (sink && status >= 200 && status < 300) {
          sink(res).then(
            () => resolve({ status, headers: res.headers, text: '', json: undefined, contentType: String(res.headers['content-type'] ?? '') }),
            (e: unknown) => {
              res.destroy()
              reject(e)
            },
          )
          return
        }
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', reject)
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          const ct = String(res.headers['content-type'] ?? '')
          let json: unknown
          if (/json/i.test(ct) || /^\s*[{[]/.test(text)) {
            try {
              json = JSON.parse(text)
            } catch {}
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, contentType: ct })
        })
      })
      req.on('timeout', () => req.destroy(Object.assign(new Error('no answer within 5 minutes'), { code: 'ETIMEDOUT' })))
      // reusedSocket: a reset of a kept-alive connection the server had just closed (notHandled)
      req.on('error', (e) => reject(Object.assign(e, { reusedSocket: req.reusedSocket })))
      if (typeof body === 'function') {
        const src = Readable.from(body(), { objectMode: false })
        src.on('error', (e) => req.destroy(e))
        src.pipe(req)
      } else req.end(body)
    })
  }

  get(p: string, o?: RequestOptions) {
    return this.call('GET', p, o)
  }
  post(p: string, o?: RequestOptions) {
    return this.call('POST', p, o)
  }
  delete(p: string, o?: RequestOptions) {
    return this.call('DELETE', p, o)
  }
}

function isTransientNetworkError(e: unknown): boolean {
  const code = (e as { code?: string })?.code ?? ''
  return ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED'].includes(code)
}

/**
 * A reset on a kept-alive connection before any answer: the server closed the idle connection
 * as the request went out, so it never read it (the retry Node's documentation advises).
 */
function notHandled(e: unknown): boolean {
  const err = e as { code?: string; reusedSocket?: boolean }
  return err.reusedSocket === true && (err.code === 'ECONNRESET' || err.code === 'EPIPE')
}

/** The notice for a request that may have taken effect and is therefore not repeated. */
function unknownOutcome(method: string, p: string): string {
  return `${method} ${p} may or may not have taken effect: it is not repeated automatically; check its result before running the command again`
}

/** An http:// URL whose port answers with TLS. */
function plainToTls(url: string): CliError {
  return new CliError(`cannot talk plain HTTP to ${url}: the server answered with TLS; use ${url.replace(/^http:/, 'https:')}`)
}

/** A readable message for a failure to reach the server (certificate, refused, DNS). */
function networkError(e: unknown, url: string): Error {
  const err = e as { code?: string; message?: string; cause?: { code?: string; message?: string }; cert?: { subjectaltname?: string } }
  const code = err.code ?? err.cause?.code ?? ''
  // a certificate its chain vouches for, of another name: --insecure would only hide that
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    const names = err.cert?.subjectaltname
    return new CliError(
      `the TLS certificate of ${url} is not for ${new URL(url).hostname}${names ? ` (its names: ${names})` : ''}; use the server's address with a name its certificate holds`,
    )
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code) || /certificate/i.test(err.message ?? '')) {
    return new CliError(
      `cannot verify the TLS certificate of ${url} (${code || err.message}); for a local server with a self-signed certificate use --insecure or SVC_INSECURE=1`,
    )
  }
  // an https:// URL naming a plain-HTTP port: OpenSSL's "wrong version number" says only that
  if (code === 'EPROTO' && /wrong version number|packet length too long|http request/i.test(err.message ?? ''))
    return new CliError(`cannot make a TLS connection to ${url}: the port answers without TLS (a plain-HTTP port?); use the server's HTTPS address`)
  if (code === 'ECONNREFUSED') return new CliError(`cannot connect to ${url}: connection refused (is the server running?)`)
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new CliError(`cannot resolve the host of ${url}`)
  return new CliError(`request to ${url} failed: ${err.message ?? String(e)}${code ? ` (${code})` : ''}`)
}
