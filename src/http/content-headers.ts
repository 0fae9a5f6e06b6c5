import type { ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * Sandbox for hosted pages (user HTML on the service's own origin): scripts, forms and popups
 * run, but in an opaque origin (no allow-same-origin), so a page can never use a visitor's
 * session cookie, read the service's storage, or call the API as the visitor.
 */
export const HOSTED_PAGE_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-popups-to-escape-sandbox allow-modals allow-downloads'

/**
 * For raw public links (images, hosted data): nothing active runs at all, even SVG or HTML
 * content; inline styles stay so an SVG renders.
 */
export const INERT_CONTENT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"

/** Headers every response carrying user content gets. */
export function setUserContentHeaders(reply: FastifyReply, kind: 'page' | 'inert'): void {
  reply.header('Content-Security-Policy', kind === 'page' ? HOSTED_PAGE_CSP : INERT_CONTENT_CSP)
  reply.header('X-Content-Type-Options', 'nosniff')
  reply.header('Cross-Origin-Resource-Policy', 'cross-origin')
  reply.header('Referrer-Policy', 'no-referrer')
}

/** Raw-header variant for hot paths that write to the Node response directly. */
export function userContentHeaderList(kind: 'page' | 'inert'): Array<[string, string]> {
  return [
    ['Content-Security-Policy', kind === 'page' ? HOSTED_PAGE_CSP : INERT_CONTENT_CSP],
    ['X-Content-Type-Options', 'nosniff'],
    ['Cross-Origin-Resource-Policy', 'cross-origin'],
    ['Referrer-Policy', 'no-referrer'],
  ]
}

/**
 * CORS for public, credential-less reads: any origin, never Allow-Credentials (name, value,
 * ...). `expose`: a feature's own response headers a page on another origin may read too.
 */
export const publicCorsHeaders = (...expose: string[]): readonly string[] => [
  'Access-Control-Allow-Origin',
  '*',
  'Access-Control-Expose-Headers',
  ['ETag', 'Content-Length', 'Content-Type', 'Content-Range', 'Accept-Ranges', ...expose].join(', '),
]

export const PUBLIC_CORS_HEADERS = publicCorsHeaders()

/** Headers of hosted content on the path form (/{user}/...): the sandbox and the public CORS grant (name, value, ...). */
export const PAGE_CONTENT_HEADERS: readonly string[] = [...userContentHeaderList('page').flat(), ...PUBLIC_CORS_HEADERS]

/** Plain-text answers of the public host (404 and friends), with the sandbox headers too. */
export function plainHeaders(length: number): string[] {
  return ['Content-Type', 'text/plain; charset=utf-8', 'Content-Length', String(length), 'Cache-Control', 'no-cache', ...PAGE_CONTENT_HEADERS]
}

const NOT_ALLOWED = Buffer.from('Method Not Allowed')
const H405 = [...plainHeaders(NOT_ALLOWED.length), 'Allow', 'GET, HEAD, OPTIONS']
/**
 * The public host's answer to a method a page does not take, on the raw response: the sites
 * feature's before a body is read, the forms feature's to a form body naming no form.
 */
export const notAllowed = (res: ServerResponse): void => {
  res.writeHead(405, H405).end(NOT_ALLOWED)
}

/**
 * The answer to a CORS preflight of public content (name, value, ...): besides the methods,
 * the request headers a conditional, range or no-cache read sends, none of which is
 * safelisted, so a page on another origin can revalidate or resume what it reads.
 */
export const PUBLIC_PREFLIGHT_HEADERS: readonly string[] = [
  'Access-Control-Allow-Origin',
  '*',
  'Access-Control-Allow-Methods',
  'GET, HEAD, OPTIONS',
  'Access-Control-Allow-Headers',
  'If-None-Match, If-Modified-Since, If-Range, Range, Cache-Control',
  'Access-Control-Max-Age',
  '86400',
]

/** Sets PUBLIC_CORS_HEADERS (or a feature's list from publicCorsHeaders) on a Fastify reply. */
export function setPublicCors(reply: FastifyReply, headers: readonly string[] = PUBLIC_CORS_HEADERS): void {
  for (let i = 0; i < headers.length; i += 2) reply.header(headers[i], headers[i + 1])
}

/**
 * The CORS preflight handler of a public link (image or data): 204 with PUBLIC_PREFLIGHT_HEADERS
 * and the link's own CORS headers, so each kind of link lets the same cross-origin reads through.
 */
export const publicPreflight =
  (headers: readonly string[] = PUBLIC_CORS_HEADERS) =>
  (_req: FastifyRequest, reply: FastifyReply): FastifyReply => {
    setPublicCors(reply, headers)
    for (let i = 0; i < PUBLIC_PREFLIGHT_HEADERS.length; i += 2) reply.header(PUBLIC_PREFLIGHT_HEADERS[i], PUBLIC_PREFLIGHT_HEADERS[i + 1])
    return reply.code(204).send()
  }
