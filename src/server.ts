import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import http from 'node:http'
import https from 'node:https'
import v8 from 'node:v8'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { ConfigError, type Config } from './config.js'
import { hostName, isContentOnlyHost, siteUserOf } from './http/site-origin.js'
import { isApiPath } from './http/api-path.js'
import { upgradeStatus } from './http/origin.js'
import { ensureDataDir } from './util/private-files.js'
import { upperEscapes } from './util/percent-escapes.js'
import { answerClientError, guardHttpServer, refuseHostless } from './http/errors.js'

/** Server timeouts against slow clients (slowloris, stalled uploads). */
/**
 * Node's own limits: the headers within 20 s; no limit on the whole request (requestTimeout 0),
 * so a big upload on a slow link is not cut: its body is watched for idleness instead
 * (BODY_TIMEOUT, watchBody in http/errors.ts), as nginx's client_body_timeout does.
 */
export const SERVER_TIMEOUTS = { headersTimeout: 20_000, requestTimeout: 0, keepAliveTimeout: 5_000 }

/**
 * The V8 flag `svc serve` sets for itself (decision 342): the old space may grow to twice
 * its live size between full collections, where V8 alone lets it reach four times. On the
 * long tail the public host's cache entries die in the old space, so that multiple is what the
 * process's memory settles at. Not set when the process was started with its own
 * (`node --heap-growing-percent=N bin/svc serve`): the operator's choice stands.
 */
export const HEAP_GROWING_PERCENT = 100
export function heapGrowth(execArgv: readonly string[]): { flag: string; own: boolean } {
  const given = execArgv.find((a) => /^--heap[-_]growing[-_]percent=/.test(a))
  return given === undefined ? { flag: `--heap-growing-percent=${HEAP_GROWING_PERCENT}`, own: false } : { flag: given, own: true }
}
/** Sets this process's heap growth as heapGrowth chooses, before its heap grows; returns the choice. */
export function applyHeapGrowth(): { flag: string; own: boolean } {
  const heap = heapGrowth(process.execArgv)
  if (!heap.own) v8.setFlagsFromString(heap.flag)
  return heap
}

/** TLS material: TLS_CERT/TLS_KEY, or a self-signed pair generated once into DATA_DIR. */
export async function tlsMaterial(config: Config): Promise<{ cert: Buffer; key: Buffer } | null> {
  if (config.trustProxy) return null
  if (config.tlsCert && config.tlsKey) return readTlsFiles(config.tlsCert, config.tlsKey)
  const certFile = path.join(config.dataDir, 'tls-cert.pem')
  const keyFile = path.join(config.dataDir, 'tls-key.pem')
  // the generated certificate covers users' origins too: *.localhost, and *.CONTENT_DOMAIN
  const wildcards = ['*.localhost', ...(config.contentDomain ? [`*.${config.contentDomain}`] : [])]
  const covers = (pem: Buffer) => {
    const san = new crypto.X509Certificate(pem).subjectAltName ?? ''
    return wildcards.every((w) => san.includes(`DNS:${w}`))
  }
  if (!fs.existsSync(certFile) || !fs.existsSync(keyFile) || !covers(fs.readFileSync(certFile))) {
    ensureDataDir(config.dataDir)
    const notAfter = new Date()
    notAfter.setFullYear(notAfter.getFullYear() + 5)
    // loaded only here: the certificate library and its ASN.1 modules are a fifth of a start's imports
    const { default: selfsigned } = await import('selfsigned')
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      notAfterDate: notAfter,
      extensions: [
        {
          name: 'subjectAltName',
          altNames: [{ type: 2, value: 'localhost' }, ...wildcards.map((value) => ({ type: 2, value })), { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }],
        },
      ],
    } as Parameters<typeof selfsigned.generate>[1])
    fs.writeFileSync(keyFile, pems.private, { mode: 0o600 })
    fs.writeFileSync(certFile, pems.cert)
  }
  return { cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }
}

/**
 * TLS_CERT/TLS_KEY read and checked before listening: a file that cannot be read, is not PEM,
 * or a key that does not belong to the certificate is a configuration problem (ConfigError,
 * exit 78, naming the variable), never a bare ENOENT or OpenSSL error with exit 1.
 */
function readTlsFiles(certFile: string, keyFile: string): { cert: Buffer; key: Buffer } {
  const problems: string[] = []
  const read = (name: string, file: string): Buffer | null => {
    try {
      return fs.readFileSync(file)
    } catch (err) {
      problems.push(`${name}: cannot read "${file}" (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
      return null
    }
  }
  const cert = read('TLS_CERT', certFile)
  const key = read('TLS_KEY', keyFile)
  let x509: crypto.X509Certificate | null = null
  let privateKey: crypto.KeyObject | null = null
  if (cert) {
    try {
      x509 = new crypto.X509Certificate(cert)
    } catch {
      problems.push(`TLS_CERT: "${certFile}" is not a PEM certificate`)
    }
  }
  if (key) {
    try {
      privateKey = crypto.createPrivateKey(key)
    } catch {
      problems.push(`TLS_KEY: "${keyFile}" is not an unencrypted PEM private key`)
    }
  }
  if (x509 && privateKey && !x509.checkPrivateKey(privateKey)) {
    problems.push(`TLS_KEY: the key in "${keyFile}" does not belong to the certificate in TLS_CERT`)
  }
  if (problems.length > 0 || !cert || !key) throw new ConfigError(problems)
  return { cert, key }
}

/** Builds the node server that Fastify runs on: HTTPS unless TRUST_PROXY=1. */
export function serverFactoryFor(tls: { cert: Buffer; key: Buffer } | null) {
  return (handler: http.RequestListener) => {
    const server = tls ? https.createServer({ ...tls, ...SERVER_TIMEOUTS }, handler) : http.createServer({ ...SERVER_TIMEOUTS }, handler)
    server.keepAliveTimeout = SERVER_TIMEOUTS.keepAliveTimeout
    return server
  }
}

/** A host name (letters, digits, `-`, `_`, dots) or a bracketed IPv6 address, as hostName() gives it. */
const HOST_NAME_RE = /^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*|\[[0-9a-f:.]+\])$/

/**
 * The plain-HTTP listener of the default and TLS modes: API paths go through the app (and
 * answer 1116 there, with the usual headers); every other path redirects to HTTPS.
 */
export function createHttpRedirector(app: FastifyInstance, config: Config, httpsPort: () => number): http.Server {
  // the main server's own request listener (Fastify behind the app's fast paths), so a request
  // taken here is handled exactly as on the main port
  const main = app.server.listeners('request')[0] as http.RequestListener
  const docBase = config.publicUrl ?? ''
  const server = http.createServer({ ...SERVER_TIMEOUTS }, (req, res) => {
    if (refuseHostless(req, res, docBase)) return
    // stopping: this answer is the connection's last one (as on the main port)
    if (!server.listening) res.shouldKeepAlive = false
    // a host of the content domain: a user's or project's origin, or one that names nobody
    const content = siteUserOf(req.headers.host, config) !== null || isContentOnlyHost(req.headers.host, config)
    // on loopback it is served over plain HTTP too: *.localhost is a secure context in
    // browsers, and needs no certificate warning
    if (content && hostName(req.headers.host).endsWith('.localhost')) {
      main(req, res)
      return
    }
    const hostname = hostName(req.headers.host) || 'localhost'
    const port = httpsPort()
    const httpsOrigin = `https://${hostname}${port === 443 ? '' : `:${port}`}`
    if (!content && isApiPath(req.url ?? '/')) {
      // its answer (1116) links the service on the HTTPS port, not on this one
      if (HOST_NAME_RE.test(hostname)) req.httpsOrigin = httpsOrigin
      app.routing(req, res)
      return
    }
    // the Host goes into the Location: only a host name or address, never a path or spaces
    // (`Host: evil.example/x?` would send the browser elsewhere), as nginx refuses one
    if (!(config.publicUrl && !content) && !HOST_NAME_RE.test(hostname)) {
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 11, Connection: 'close' })
      res.end('Bad Request')
      return
    }
    const base = (content ? null : config.publicUrl) ?? httpsOrigin
    // the request's path with its escapes uppercased, as every Location the service builds;
    // 308 for a method other than GET and HEAD: a form's post arrives on HTTPS with its body
    const location = base + (req.url && req.url.startsWith('/') ? upperEscapes(req.url) : '/')
    res.writeHead(upgradeStatus(req.method), { Location: location, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 0 })
    res.end()
  })
  // requests its parser refuses are answered as the main port answers them
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => answerClientError(err, socket, docBase))
  guardHttpServer(server, docBase)
  server.keepAliveTimeout = SERVER_TIMEOUTS.keepAliveTimeout
  return server
}

export interface Listening {
  httpsUrl: string | null
  httpUrl: string | null
  port: number
  httpPort: number | null
  close(): Promise<void>
}

/** Starts listening on PORT (and HTTP_PORT in the default and TLS modes). */
export async function listen(app: FastifyInstance, config: Config, tlsOn: boolean): Promise<Listening> {
  // Fastify cannot tell that our server factory speaks TLS: its log line would say http://
  await app.listen({
    port: config.port,
    host: config.host,
    listenTextResolver: (address) => `Server listening at ${tlsOn ? address.replace(/^http:/, 'https:') : address}`,
  })
  const port = (app.server.address() as AddressInfo).port
  let redirector: http.Server | null = null
  let httpPort: number | null = null
  if (tlsOn) {
    redirector = createHttpRedirector(app, config, () => port)
    await new Promise<void>((resolve, reject) => {
      redirector!.once('error', reject)
      redirector!.listen(config.httpPort, config.host, () => resolve())
    })
    httpPort = (redirector.address() as AddressInfo).port
  }
  app.ports.main = port
  app.ports.http = httpPort
  const shown = ['0.0.0.0', '::', '127.0.0.1', '::1'].includes(config.host) ? 'localhost' : config.host
  return {
    port,
    httpPort,
    httpsUrl: tlsOn ? `https://${shown}:${port}` : null,
    httpUrl: tlsOn ? `http://${shown}:${httpPort}` : `http://${shown}:${port}`,
    async close() {
      // both listeners stop accepting at once and let requests in flight finish (a page of a
      // user's site on *.localhost is served on HTTP_PORT too); a keep-alive connection is
      // closed as soon as it is idle, not after keepAliveTimeout. svc serve bounds the wait
      // (15 s) with its own timer
      const plain = redirector ? new Promise<void>((r) => redirector.close(() => r())) : null
      const reap = () => {
        redirector?.closeIdleConnections()
        app.server.closeIdleConnections()
      }
      const sweep = setInterval(reap, 100)
      try {
        await Promise.all([plain, app.close()])
      } finally {
        clearInterval(sweep)
      }
    },
  }
}
