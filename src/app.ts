import crypto from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import formbody from '@fastify/formbody'
import multipart from '@fastify/multipart'
import swagger from '@fastify/swagger'
import type { Deps } from './deps.js'
import type { FastPath, Handover } from './http/types.js'
import { lazySchemaCompilers } from './http/lazy-schemas.js'
import { compileStrictValidators } from './http/strict-schema.js'
import { errorPage, notFoundPage } from './web/short-page.js'
import { answerClientError, frameworkDetail, guardHttpServer, installErrorHandling, refuseHostless, sendAppError, watchBody } from './http/errors.js'
import { installApiGuard } from './http/guard.js'
import { AppError } from './errors/app-error.js'
import { FEATURES } from './features/index.js'
import { isHttps, upgradeStatus } from './http/origin.js'
import { TLS_ASK_PATH } from './http/site-origin.js'
import { installMetrics } from './observability/http.js'
import { countFastPath } from './observability/fast-path.js'
import { observeSendfile } from './observability/metrics.js'
import { startDefaultMetrics } from './observability/registry.js'
import { sendfileStats } from './http/sendfile.js'
import { API_PREFIXES, isApiPath } from './http/api-path.js'
import { BEFORE_ROUTE_HEADERS, methodIndex, ROUTER_OPTIONS } from './http/allowed-methods.js'
import { upperEscapes } from './util/percent-escapes.js'
import { installTossedCookieClearing } from './http/tossed-cookies.js'
import { SECURITY_SCHEMES, transformDocument, transformRoute } from './features/docs/openapi.js'
import { MCP_PATH } from './features/mcp/routes.js'

/** A request id taken from a trusted proxy: short, no spaces or separators that could forge log fields. */
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,64}$/

/** 16 random hex digits, cut from a pool refilled every 512 ids (one call to the generator per id cost 4% of a write's time). */
let idPool = Buffer.alloc(0)
let idAt = 0
function randomId(): string {
  if (idAt + 8 > idPool.length) {
    idPool = crypto.randomBytes(4096)
    idAt = 0
  }
  idAt += 8
  return idPool.toString('hex', idAt - 8, idAt)
}

export interface AppOptions {
  /** Node server factory (HTTPS or HTTP), from server.ts. */
  serverFactory?: FastifyServerOptions['serverFactory']
  logger?: FastifyServerOptions['logger']
}

/** Log settings: no headers, no query strings (a key pasted into a URL must not be logged). */
export function loggerOptions(level: string) {
  return {
    level,
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]', '*.password', '*.key'], censor: '[redacted]' },
    serializers: {
      req: (req: { method: string; url: string; id: string }) => ({ method: req.method, path: req.url.split('?')[0], id: req.id }),
    },
  }
}

/** Paths behind a proxy that answer over plain HTTP too (not redirected to HTTPS). */
const PLAIN_HTTP_PATHS = new Set(['/healthz', '/livez', '/readyz', '/metrics'])

/** `handedOver` of a request that met every fast path and none took it. */
const PAST_FAST_PATHS: Handover = Object.freeze({})

/**
 * Builds the Fastify app: shared plugins, the three route contexts (api, public, pages), and
 * the explicit list of features. Does not listen.
 */
export async function buildApp(deps: Deps, opts: AppOptions = {}): Promise<FastifyInstance> {
  const { config } = deps
  // handlers that may answer before routing (the public host's cached paths): each gets a
  // first look at every request and returns true when it answered
  const fastPaths: FastPath[] = []
  const factory = opts.serverFactory
  const schemas = lazySchemaCompilers()
  const app = Fastify({
    schemaController: { compilersFactory: schemas.compilersFactory },
    logger: opts.logger ?? loggerOptions(config.logLevel),
    serverFactory:
      factory &&
      ((handler, o) => {
        // a request a fast path hands over carries `handedOver`: Fastify's hook counts it
        const route = (req: IncomingMessage, res: ServerResponse, handover: Handover = {}) => {
          req.handedOver = handover
          handler(req, res)
        }
        const docBase = config.publicUrl ?? ''
        const server = factory((req, res) => {
          if (refuseHostless(req, res, docBase)) return
          // stopping (the listener is closed): this answer is the connection's last one, on
          // the fast paths as on Fastify's routes
          if (!server.listening) res.shouldKeepAlive = false
          watchBody(req, res, config.bodyTimeoutMs, docBase)
          if (fastPaths.length > 0) {
            const t0 = performance.now()
            for (let i = 0; i < fastPaths.length; i++) {
              if (fastPaths[i](req, res, route)) {
                if (req.handedOver !== undefined) return
                const count = () => countFastPath(req.method ?? 'GET', res.statusCode, (performance.now() - t0) / 1000)
                if (res.writableEnded) count()
                else res.once('finish', () => req.handedOver !== undefined || count())
                return
              }
            }
          }
          req.handedOver = PAST_FAST_PATHS
          handler(req, res)
        }, o)
        guardHttpServer(server, docBase)
        return server
      }),
    bodyLimit: 1024 * 1024,
    trustProxy: false,
    requestIdHeader: false,
    // a request id for the logs and the X-Request-Id answer header; behind a proxy the
    // proxy's own id is kept when it looks like one, so both logs can be joined
    genReqId: (req) => {
      const given = config.trustProxy ? req.headers['x-request-id'] : undefined
      return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : randomId()
    },
    routerOptions: ROUTER_OPTIONS,
    // while svc stops, a request that still arrives on an open connection (pipelined, or on a
    // keep-alive connection not yet reaped) is answered as usual, with Connection: close, as
    // nginx does on a graceful stop; Fastify's own 503 is in no format of the spec's
    return503OnClosing: false,
    // a request the HTTP parser refuses never reaches a route: answered in the spec's format
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket, config.publicUrl ?? ''),
    // a URL whose percent-encoding is malformed, or whose path segment is over maxParamLength
    // where no other route takes the path, never reaches a route: answer it in the service's
    // formats (format A on API paths, plain text elsewhere) instead of Fastify's own (it
    // returns nothing: Fastify does not await it), with Fastify's status: 414 for the long
    // segment, as the API's catch-all answers it (methods.miss), else 400
    frameworkErrors: (error, req, reply) => {
      const r = reply as FastifyReply
      const status = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400
      if (isApiPath(req.url)) {
        sendAppError(req, r, new AppError('INVALID_PATH', { params: { detail: frameworkDetail(error) }, status, headers: BEFORE_ROUTE_HEADERS }), config, 'A')
        return
      }
      r.code(status)
        .type('text/plain; charset=utf-8')
        .send(status === 414 ? 'URI Too Long' : 'Bad Request')
    },
  })

  // an empty body is no body, whatever its Content-Type: clients that send
  // `Content-Type: application/json` on every request reach the routes that take no body
  // (publish, the DELETEs) as they reach the reference; a route that needs a body refuses
  // the missing one through its own validation. Anything else is parsed as Fastify does.
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) =>
    body === '' ? done(null, undefined) : parseJson(req, String(body), done),
  )

  app.decorate('addFastPath', (fn: FastPath) => {
    fastPaths.push(fn)
  })
  app.decorate('ports', { main: null, http: null })
  app.decorate('compileSchemas', () => {
    schemas.compileAll()
    compileStrictValidators()
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'svc hosting API',
        version: '1.1.2',
        description: 'Single files, folder projects, key-value store, forms, image hosting and hosted data.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    // security (from each route's config.auth), operationIds, servers and the shared error
    // answer: document-only additions (features/docs/openapi.ts)
    transform: transformRoute,
    transformObject: transformDocument(config),
  })
  await app.register(formbody, { bodyLimit: 64 * 1024 })
  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: { fileSize: config.maxUploadBytes, files: 1000, parts: 2100, fields: 100, fieldSize: 1024 * 1024, headerPairs: 200 },
  })
  installErrorHandling(app, config, errorPage)
  installMetrics(app, config)
  // process metrics and the sendfile counts start with the first app, not at import
  startDefaultMetrics()
  observeSendfile(sendfileStats)

  // app.inject (and a server without a factory) reaches the router directly: the fast paths
  // run here instead, first, so every way in answers alike. A request from the factory has
  // met them already and carries `handedOver`. The router matched the request's path before
  // this hook, so one handed over under another path (SITE_FORM_ROUTE) is routed again, as
  // the factory routes it after its fast paths; the first match is dropped (`superseded`).
  app.addHook('onRequest', (req, reply, done) => {
    const raw = req.raw
    if (raw.handedOver !== undefined) return done()
    const url = raw.url
    for (let i = 0; i < fastPaths.length; i++) {
      let taken = false
      let settled = false
      const settle = (answered: boolean) => {
        if (settled) return
        settled = true
        if (answered) reply.hijack()
        else if (raw.url !== url) {
          raw.superseded = req
          reply.hijack()
          app.routing(raw, reply.raw)
        }
        done()
      }
      const route = (_req: IncomingMessage, _res: ServerResponse, handover: Handover = {}) => {
        raw.handedOver = handover
        if (taken) settle(false)
      }
      if (!fastPaths[i](raw, reply.raw, route)) continue
      taken = true
      // handed to the router at once, answered at once, or either later
      if (raw.handedOver !== undefined) return settle(false)
      if (reply.raw.writableEnded) return settle(true)
      reply.raw.once('finish', () => settle(true))
      reply.raw.once('close', () => settle(true))
      return
    }
    done()
  })
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('X-Request-Id', req.id)
    done()
  })
  // a `session` cookie tossed from a user's origin is expired with the answer it spoiled
  installTossedCookieClearing(app, config)
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (!reply.hasHeader('x-content-type-options')) reply.header('X-Content-Type-Options', 'nosniff')
    done(null, payload)
  })

  // behind a proxy, a page requested over plain HTTP is redirected (308 for a method other
  // than GET and HEAD, as on HTTP_PORT; API paths answer 1116 in the guard); health checks, metrics and the TLS ask endpoint are asked over plain HTTP
  if (config.trustProxy) {
    app.addHook('onRequest', (req, reply, done) => {
      if (!isHttps(req, config) && !isApiPath(req.url) && !PLAIN_HTTP_PATHS.has(req.url) && req.url.split('?')[0] !== TLS_ASK_PATH) {
        const fwd = req.headers['x-forwarded-host']
        const host = (Array.isArray(fwd) ? fwd[0] : fwd) ?? req.headers.host ?? 'localhost'
        reply.redirect(`${config.publicUrl ?? `https://${host}`}${upperEscapes(req.url)}`, upgradeStatus(req.method))
        return
      }
      done()
    })
  }

  // each feature's state, built once before any of its contexts: they all get the same one
  const states = new Map<string, unknown>()
  for (const f of FEATURES) states.set(f.name, await f.init?.(deps))
  app.decorate('featureState', (name: string) => states.get(name))

  // the methods each path of the API and pages contexts has: a request no route takes is
  // answered 405 with Allow when its path has others, else 404 (the public host answers its
  // own paths' methods itself)
  const methods = methodIndex()
  // API context: /svc_api/... and /api/...; its misses go through the guard like any route
  await app.register(async (api) => {
    installApiGuard(api, deps)
    methods.track(api)
    for (const f of FEATURES) await f.api?.(api, deps, states.get(f.name))
    const notFound = async (req: FastifyRequest) => {
      throw methods.miss(req.method, req.url)
    }
    // every path of the context: each prefix for the methods no route of it takes, and all below it
    for (const prefix of API_PREFIXES) {
      // /mcp answers in English, as its routes do (MCP clients send no Accept-Language)
      const config = { refusesMethod: true as const, ...(prefix === MCP_PATH ? { lang: 'en' as const } : {}) }
      const free = api.supportedMethods.filter((method) => !api.hasRoute({ method, url: prefix }))
      api.route({ method: free, url: prefix, schema: { hide: true }, config, handler: notFound })
      api.all(`${prefix}/*`, { schema: { hide: true }, config }, notFound)
    }
  })
  // public content and the service's pages: no API guard
  await app.register(async (pub) => {
    for (const f of FEATURES) await f.public?.(pub, deps, states.get(f.name))
  })
  await app.register(async (pages) => {
    methods.track(pages)
    for (const f of FEATURES) await f.pages?.(pages, deps, states.get(f.name))
    pages.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  })

  app.setNotFoundHandler((req, reply) => {
    if (isApiPath(req.url)) return sendAppError(req, reply, methods.miss(req.method, req.url), config, 'A')
    const allow = methods.others(req.method, req.url)
    if (allow.length > 0) return reply.code(405).header('Allow', allow.join(', ')).type('text/plain; charset=utf-8').send('Method Not Allowed')
    return notFoundPage(req, reply) ?? reply.code(404).type('text/plain; charset=utf-8').send('Not Found')
  })
  return app
}
