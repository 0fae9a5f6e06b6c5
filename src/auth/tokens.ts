import crypto from 'node:crypto'

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** Uniformly random string over [A-Za-z0-9] (rejection sampling, no modulo bias). */
export function randomString(length: number): string {
  let out = ''
  while (out.length < length) {
    for (const b of crypto.randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62]
    }
  }
  return out
}

/** SHA-256 of a string, as hex: the one-shot `crypto.hash` (Node 20.12+), else a Hash object. */
export const sha256hex: (s: string) => string =
  typeof crypto.hash === 'function' ? (s) => crypto.hash('sha256', s, 'hex') : (s) => crypto.createHash('sha256').update(s).digest('hex')

/** API keys: 64 characters, "svc_" + 60 random alphanumerics (the prefix helps secret scanners). */
export const API_KEY_RE = /^svc_[A-Za-z0-9]{60}$/
export const newApiKey = (): string => `svc_${randomString(60)}`

/** Session ids: 256 random bits, base64url. Only their SHA-256 is stored. */
export const newSessionId = (): string => crypto.randomBytes(32).toString('base64url')
export const SESSION_ID_RE = /^[A-Za-z0-9_-]{43}$/

/**
 * The `__Host-` cookie set beside `session`, holding a digest of its id. A page on a sibling
 * host (a user's origin under the service's registrable domain) can toss a `session` cookie
 * with a parent Domain, but never a `__Host-` one: a browser sending fetch metadata (every one
 * that does also keeps `__Host-` cookies to their host) proves with it that its session cookie
 * is the service's own, host-only one (decision 255).
 */
export const SESSION_BIND_COOKIE = '__Host-session_bind'
/** The value of SESSION_BIND_COOKIE for a session id. */
export const sessionBind = (sid: string): string => crypto.createHash('sha256').update(`session-bind:${sid}`).digest('base64url')

export const newId = (): string => crypto.randomUUID()

/** URL-safe public token (>= 16 characters). */
export const newPublicToken = (): string => randomString(22)
