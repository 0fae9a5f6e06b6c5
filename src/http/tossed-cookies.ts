import net from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'
import { sessionBound, sessionCookies } from '../auth/principal.js'
import { isHttps, requestHost } from './origin.js'
import { hostName } from './site-origin.js'

/** Request paths deeper than this get their first levels cleared only. */
const MAX_LEVELS = 32
// a cookie path as a Set-Cookie attribute can spell it: visible ASCII without ';'
const COOKIE_PATH_RE = /^[\x21-\x3a\x3c-\x7e]+$/

/**
 * Cookie tossing: a page on a host of the service's registrable domain (a user's origin under
 * a content domain shared with the service) can set `session` with a parent Domain and any
 * Path; the browser sends it beside the service's own cookie, which is host-only. The guard
 * refuses every request carrying two (AUTH_AMBIGUOUS), so a tossed copy alone would lock the
 * visitor out for as long as it lives. These Set-Cookie values expire every copy such a request
 * can carry that the service never sets: with a Domain (the host and each parent), at each
 * path that matches the request's (with and without its trailing slash), partitioned or not.
 * The host-only cookie is not among them, so the next request is the visitor's own again.
 */
export function tossedSessionClears(host: string, path: string, secure: boolean): string[] {
  if (host === '' || host.startsWith('[') || net.isIP(host) !== 0) return []
  const labels = host.split('.')
  const domains: string[] = []
  // a single label (`com`) is a public suffix: browsers take no cookie for it
  for (let i = 0; i < labels.length - 1; i++) domains.push(labels.slice(i).join('.'))
  const paths = new Set(['/'])
  let at = 0
  for (let level = 0; level < MAX_LEVELS; level++) {
    const next = path.indexOf('/', at + 1)
    const prefix = next < 0 ? path : path.slice(0, next)
    if (prefix.length > 1) paths.add(prefix).add(`${prefix}/`)
    if (next < 0) break
    at = next
  }
  const out: string[] = []
  for (const d of domains) {
    for (const p of paths) {
      if (!COOKIE_PATH_RE.test(p)) continue
      const base = `session=; Domain=${d}; Path=${p}; Max-Age=0`
      out.push(secure ? `${base}; Secure` : base)
      // a partitioned copy is a cookie of its own, expired only by a partitioned Set-Cookie
      if (secure) out.push(`${base}; Secure; Partitioned`)
    }
  }
  return out
}

/**
 * Adds tossedSessionClears to every answer of the router to a request with more than one
 * `session` cookie, or with one that a browser (Sec-Fetch-Site) sent without its binding
 * cookie (sessionBound): a tossed copy alone, which the guard takes for no session.
 */
export function installTossedCookieClearing(app: FastifyInstance, config: Pick<Config, 'trustProxy'>): void {
  app.addHook('onRequest', (req, reply, done) => {
    const cookie = req.headers.cookie
    const sessions = cookie !== undefined && cookie.indexOf('session') >= 0 ? sessionCookies(cookie) : []
    const unbound = sessions.length === 1 && req.headers['sec-fetch-site'] !== undefined && !sessionBound(cookie, sessions[0])
    if (sessions.length > 1 || unbound) {
      const q = req.url.indexOf('?')
      const clears = tossedSessionClears(hostName(requestHost(req, config)), q < 0 ? req.url : req.url.slice(0, q), isHttps(req, config))
      for (const c of clears) reply.header('Set-Cookie', c)
    }
    done()
  })
}
