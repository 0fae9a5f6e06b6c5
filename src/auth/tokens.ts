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

export const newId = (): string => crypto.randomUUID()

/** URL-safe public token (>= 16 characters). */
export const newPublicToken = (): string => randomString(22)
