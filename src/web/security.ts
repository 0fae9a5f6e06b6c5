import crypto from 'node:crypto'
import type { FastifyReply } from 'fastify'

/** A fresh CSP nonce (128 random bits) for one response. */
export const newNonce = (): string => crypto.randomBytes(16).toString('base64')

/**
 * The policy of the service's own pages. Scripts and styles run only with this response's
 * nonce: never 'unsafe-inline', and never 'self', because /{user}/x.js is user content on
 * this origin. Trusted Types forbid the DOM's HTML sinks (innerHTML and friends) outright, so
 * the page scripts can only put user content into the page as text.
 */
export function pageCsp(nonce: string, imageOrigins: string[] = []): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    ["img-src 'self' data:", ...imageOrigins].join(' '),
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join('; ')
}

/** Headers of every page of the service (HTML with the account's data: never cached). */
export function setPageHeaders(reply: FastifyReply, nonce: string, imageOrigins: string[] = []): void {
  reply.header('Content-Security-Policy', pageCsp(nonce, imageOrigins))
  reply.header('X-Frame-Options', 'DENY')
  reply.header('Referrer-Policy', 'same-origin')
  reply.header('Cross-Origin-Opener-Policy', 'same-origin')
  reply.header('Cross-Origin-Resource-Policy', 'same-origin')
  reply.header('Cache-Control', 'no-store')
  reply.header('Vary', 'Cookie, Accept-Language')
  reply.header('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=()')
}

/**
 * Where a login may send the browser back to: a path of the dashboard or the admin console
 * (with its query), nothing else: never another origin (`//host`, a scheme), never a path
 * with a backslash or control character, never a dot segment (`..` or `%2e%2e`, which the
 * browser resolves out of the dashboard, to a hosted page of the path form). null: not such a path.
 */
export function safeNext(v: unknown): string | null {
  if (typeof v !== 'string' || v.length > 512) return null
  if (!/^\/(dashboard|admin)(\/[A-Za-z0-9_\-./%]*)?(\?[A-Za-z0-9_\-.=&%]*)?$/.test(v) || v.includes('//')) return null
  const path = v.split('?', 1)[0]
  return path.split('/').some((seg) => /^(\.|%2e){1,2}$/i.test(seg)) ? null : v
}
