import crypto from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { randomString } from '../auth/tokens.js'

/**
 * CSRF tokens. Two kinds:
 * - the session's synchronizer token (sessions.csrf_token): the service's pages send it in an
 *   `X-CSRF-Token` header on every write (or a hidden `_csrf` field of an HTML form);
 * - a pre-session form token for /login and /register (double submit: a `__Host-form_csrf` cookie
 *   and the same value in the form), against login CSRF.
 * Both are required only when the request comes from a browser, i.e. carries `Sec-Fetch-Site`
 * or `Origin`; clients that send neither (curl with a cookie, scripts) keep working, and the
 * cross-site check (origin.ts) still refuses foreign browsers first.
 */

/** Whether a browser sent the request (fetch metadata or an Origin header is present). */
export function fromBrowser(req: FastifyRequest): boolean {
  return req.headers['sec-fetch-site'] !== undefined || req.headers.origin !== undefined
}

/** Constant-time comparison of two tokens; false when either is missing. */
export function tokensEqual(a: unknown, b: unknown): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || a.length === 0 || b.length === 0) return false
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && crypto.timingSafeEqual(x, y)
}

/** The CSRF token a request carries: the `X-CSRF-Token` header, else a form field `_csrf`. */
export function sentCsrfToken(req: FastifyRequest): string | undefined {
  const h = req.headers['x-csrf-token']
  if (typeof h === 'string') return h
  const body = req.body as Record<string, unknown> | undefined
  return body && typeof body === 'object' && typeof body._csrf === 'string' ? body._csrf : undefined
}

/** Whether a cookie-authenticated write passes the session token rule. */
export function sessionCsrfOk(req: FastifyRequest, sessionToken: string | undefined): boolean {
  return !fromBrowser(req) || tokensEqual(sentCsrfToken(req), sessionToken)
}

/**
 * `__Host-`: the browser takes this cookie only from the service's own host, over HTTPS, for
 * `/`, without a Domain, so a page on a sibling host (a user's origin under the same
 * registrable domain) can neither plant a value it knows nor overwrite it (decision 146).
 * The service's pages are served over HTTPS only (or behind a TLS proxy), so no host needs
 * the old name.
 */
export const FORM_TOKEN_COOKIE = '__Host-form_csrf'
const FORM_TOKEN_RE = /^[A-Za-z0-9]{32}$/

/** The value of one cookie in a Cookie header (the first one), or undefined. */
export function readCookie(cookieHeader: string | undefined, name: string): string | undefined {
  if (!cookieHeader) return undefined
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** The pre-session form token of this browser, and a Set-Cookie value when a new one was made. */
export function formToken(req: FastifyRequest): { token: string; setCookie: string | null } {
  const existing = readCookie(req.headers.cookie, FORM_TOKEN_COOKIE)
  if (existing && FORM_TOKEN_RE.test(existing)) return { token: existing, setCookie: null }
  const token = randomString(32)
  return { token, setCookie: `${FORM_TOKEN_COOKIE}=${token}; Path=/; HttpOnly; Secure; SameSite=Strict` }
}

/** Whether a /login or /register form post carries the browser's form token (double submit). */
export function formTokenOk(req: FastifyRequest): boolean {
  if (!fromBrowser(req)) return true
  const cookie = readCookie(req.headers.cookie, FORM_TOKEN_COOKIE)
  return !!cookie && FORM_TOKEN_RE.test(cookie) && tokensEqual(sentCsrfToken(req), cookie)
}
