import crypto from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../errors/app-error.js'
import type { Config } from '../config.js'
import { registry } from './registry.js'
import { metrics, enterFlight } from './metrics.js'
import { countRequest } from './fast-path.js'

const WINDOW_BY_KEY: Record<string, string> = {
  RATE_LIMIT_MINUTE: 'minute',
  RATE_LIMIT_HOUR: 'hour',
  RATE_LIMIT_DAY: 'day',
  RATE_LIMIT_CONCURRENT: 'concurrent',
}
const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1'])

/** The route pattern that answered (never the raw URL). */
function routeLabel(req: FastifyRequest): string {
  return req.routeOptions?.url ?? '(unmatched)'
}

/**
 * Whether a request carries a header a proxy adds: `Forwarded`, `Via`, `X-Real-IP` or any
 * `X-Forwarded-*`. A proxy on loopback may set only some of them (nginx with X-Real-IP and
 * X-Forwarded-Proto, no X-Forwarded-For), so any one marks the request as proxied.
 */
function viaProxy(req: FastifyRequest): boolean {
  const h = req.headers
  if (h.forwarded !== undefined || h.via !== undefined || h['x-real-ip'] !== undefined) return true
  return Object.keys(h).some((name) => name.startsWith('x-forwarded-'))
}

/**
 * Who may read /metrics: with METRICS_TOKEN, whoever sends `Authorization: Bearer <token>`;
 * without it, only a direct loopback connection that no proxy forwarded (viaProxy). Everyone
 * else gets the plain 404 of an unknown page.
 */
export function mayReadMetrics(req: FastifyRequest, config: Pick<Config, 'metricsToken'>): boolean {
  if (config.metricsToken) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')
    if (!m) return false
    const a = crypto.createHash('sha256').update(m[1]).digest()
    const b = crypto.createHash('sha256').update(config.metricsToken).digest()
    return crypto.timingSafeEqual(a, b)
  }
  if (viaProxy(req)) return false
  return LOOPBACK.has(req.raw.socket.remoteAddress ?? '')
}

/**
 * Counts every request (route pattern, method, status, latency) and the routed ones in flight,
 * and serves GET /metrics.
 */
export function installMetrics(app: FastifyInstance, config: Config): void {
  // in flight from the routing hooks' end (before the body is read) until the response closes;
  // a request routed again (superseded) was hijacked in onRequest and never gets here
  app.addHook('preParsing', (req, reply, payload, done) => {
    enterFlight(routeLabel(req), reply.raw)
    done(null, payload)
  })
  app.addHook('onResponse', (req, reply, done) => {
    // a request routed again is counted once, under the route that answered it
    if (req.raw.superseded === req) return done()
    countRequest(routeLabel(req), req.method, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
  app.addHook('onError', async (_req, _reply, err) => {
    if (!(err instanceof AppError)) return
    const window = WINDOW_BY_KEY[err.key]
    if (window) metrics.rateLimitRejections.inc({ window })
    else if (err.key === 'DEPENDENCY_UNAVAILABLE') metrics.dependencyErrors.inc({ dependency: 'redis' })
  })
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (!mayReadMetrics(req, config)) return reply.code(404).type('text/plain; charset=utf-8').send('Not Found')
    const body = await registry.metrics()
    return reply.header('Cache-Control', 'no-store').type(registry.contentType).send(body)
  })
}

/**
 * Counts this response's body (its Content-Length, once the response has been sent in full;
 * HEAD and aborted responses not) as stored content served by `source` (a fixed feature name).
 */
export function countServed(reply: FastifyReply, source: string): void {
  if (reply.request.method === 'HEAD') return
  reply.raw.once('finish', () => {
    const n = Number(reply.getHeader('content-length'))
    if (Number.isFinite(n) && n > 0) metrics.blobBytesServed.inc({ source }, n)
  })
}
