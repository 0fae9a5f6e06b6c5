import type { IncomingMessage } from 'node:http'
import type { FastifyRequest } from 'fastify'
import type { Config } from '../config.js'

/** Whether the request arrived over HTTPS (behind a proxy only X-Forwarded-Proto counts). */
export function isHttps(req: FastifyRequest | IncomingMessage, config: Pick<Config, 'trustProxy'>): boolean {
  if (config.trustProxy) {
    const p = req.headers['x-forwarded-proto']
    // the common answer, without the split below
    if (p === 'https') return true
    const first = (Array.isArray(p) ? p[0] : p)?.split(',')[0].trim().toLowerCase()
    return first === 'https'
  }
  return (req.socket as { encrypted?: boolean }).encrypted === true
}

/**
 * The status of a redirect from plain HTTP to HTTPS: 301 for GET and HEAD, 308 for any other
 * method, which a client repeats with its body (after a 301 browsers send a POST as a GET,
 * and a form's post would be lost).
 */
export const upgradeStatus = (method: string | undefined): 301 | 308 => (method === 'GET' || method === 'HEAD' ? 301 : 308)

/**
 * The host the client asked for: behind a trusted proxy its X-Forwarded-Host (first value),
 * else the Host header. The one reading of it, for the origins built from it and for the
 * checks that must see the host those origins name (MCP's DNS-rebinding check).
 */
export function requestHost(req: FastifyRequest | IncomingMessage, config: Pick<Config, 'trustProxy'>): string | undefined {
  const fwdHost = config.trustProxy ? req.headers['x-forwarded-host'] : undefined
  const host = (Array.isArray(fwdHost) ? fwdHost[0] : fwdHost) ?? req.headers.host
  return host?.split(',')[0].trim()
}

/** The origin clients use to reach the service: PUBLIC_URL, else https://{Host}. */
export function serviceOrigin(req: FastifyRequest, config: Pick<Config, 'publicUrl' | 'trustProxy'>): string {
  if (config.publicUrl) return config.publicUrl
  return req.raw.httpsOrigin ?? `https://${requestHost(req, config) ?? 'localhost'}`
}

/**
 * The service's origin for links sent out of band (mail, webhooks, CSV), where a forged Host
 * would lead someone else to another site: PUBLIC_URL, else the request's own origin only when
 * its Host is a loopback name and port and nothing else (the one-command start); null
 * otherwise. A Host such as `localhost\@evil.test` or `localhost#@evil.test` is loopback to a
 * browser's parser but names evil.test to others (a webhook receiver's, a mail filter's), so
 * a Host that is more than a host and port gives no link (decision 330).
 */
export function linkOrigin(req: FastifyRequest, config: Pick<Config, 'publicUrl' | 'trustProxy'>): string | null {
  if (config.publicUrl) return config.publicUrl
  const o = serviceOrigin(req, config)
  let u: URL
  try {
    u = new URL(o)
  } catch {
    return null
  }
  // the origin as written is scheme://host[:port] and nothing else: no user, path, query,
  // fragment or backslash
  const exact = /^https?:\/\/[a-z0-9.:[\]-]+$/i.test(o)
  return exact && isLoopbackHost(u.hostname) ? u.origin : null
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1'])

/** A host name (as URL.hostname or a Host header's name spells it) that names this machine. */
export const isLoopbackHost = (host: string): boolean => LOOPBACK_HOSTS.has(host)

/** The origin of user content: CONTENT_ORIGIN when set, else the service origin. */
export function contentOrigin(req: FastifyRequest, config: Pick<Config, 'publicUrl' | 'trustProxy' | 'contentOrigin'>): string {
  return config.contentOrigin ?? serviceOrigin(req, config)
}

/** Client address: the socket peer, or the first X-Forwarded-For hop when TRUST_PROXY=1. */
export function clientIp(req: FastifyRequest | IncomingMessage, config: Pick<Config, 'trustProxy'>): string {
  if (config.trustProxy) {
    const xff = req.headers['x-forwarded-for']
    const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0].trim()
    if (first) return first
  }
  return req.socket.remoteAddress ?? 'unknown'
}

/**
 * Fetch-metadata / Origin check for cookie-authenticated state changes: refuses a request
 * whose Sec-Fetch-Site says another site, or whose Origin is present and not ours ("null"
 * included). Clients that send neither header (curl, scripts) pass.
 */
export function isCrossSite(req: FastifyRequest, config: Pick<Config, 'publicUrl' | 'trustProxy'>): boolean {
  const sfs = req.headers['sec-fetch-site']
  if (sfs !== undefined && sfs !== 'same-origin' && sfs !== 'none') return true
  const origin = req.headers.origin
  if (origin !== undefined) {
    const own = serviceOrigin(req, config)
    const hostOrigin = `https://${req.headers.host ?? ''}`
    if (origin !== own && origin !== hostOrigin) {
      if (sfs === 'same-origin') warnOriginMismatch(req, config, origin, own, hostOrigin)
      return true
    }
  }
  return false
}

const ORIGIN_WARNING_EVERY_MS = 60_000
// per service (its config object): when it last logged the warning below
const lastOriginWarning = new WeakMap<object, number>()

/**
 * A browser that says its write is same-origin, from an origin the service does not take for
 * its own, is its own user's page, not a forgery: PUBLIC_URL or the proxy's Host header does
 * not match the address browsers use (a port dropped, another host name), and every sign-in
 * would fail as "expired" with nothing logged (decision 320). Still refused; logged at
 * most once a minute, since any client can send these headers.
 */
function warnOriginMismatch(req: FastifyRequest, config: object, origin: string, own: string, hostOrigin: string): void {
  const now = Date.now()
  if (now - (lastOriginWarning.get(config) ?? -Infinity) < ORIGIN_WARNING_EVERY_MS) return
  lastOriginWarning.set(config, now)
  req.log.warn(
    { origin: origin.slice(0, 200), serviceOrigin: own, hostOrigin: hostOrigin.slice(0, 200) },
    "refused a browser's same-origin write: its Origin is neither the service's origin (PUBLIC_URL) nor https://{Host}; set PUBLIC_URL to the address browsers use, and have the proxy pass that Host (with its port)",
  )
}
