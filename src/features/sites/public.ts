import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import { createHostCache } from './host-cache.js'
import { createResolver } from './resolver.js'
import { createEncodings } from './encodings.js'
import { publicFiles } from '../../http/public-link.js'
import { createHostHandler, type SiteRouting } from './serve.js'
import { tlsAsk } from './tls-ask.js'
import { isHttps, requestHost } from '../../http/origin.js'
import { hostName, isContentOnlyHost, portOf, serviceOriginFromContent, siteOf, userSiteOrigin, type ListenPorts } from '../../http/site-origin.js'
import { canNameUser } from '../../auth/account-rules.js'
import { decodeSegment } from './paths.js'
import type { Config } from '../../config.js'
import { OPEN_SITES, type SiteHooks } from '../../http/site-hooks.js'

/** Custom domains and visitor access, when the domains feature is part of the app (its state). */
export const siteHooksOf = (app: FastifyInstance): SiteHooks => (app.featureState('domains') as SiteHooks | undefined) ?? OPEN_SITES
import { hostHolds } from '../abuse/public.js'

/** The public host's view of users' origins (src/http/site-origin.ts) under this config. */
export function siteRouting(config: Config, ports: ListenPorts): SiteRouting {
  return {
    siteOf: (req) => siteOf(req.headers.host, config),
    contentOnly: (req) => isContentOnlyHost(req.headers.host, config),
    documentTarget(req, path) {
      const slash = path.indexOf('/', 1)
      if (slash < 0) return null
      const username = decodeSegment(path.slice(1, slash))?.toLowerCase()
      if (username === undefined || !canNameUser(username)) return null
      const origin = userSiteOrigin(username, req, config, ports)
      return origin === null ? null : origin + path.slice(slash)
    },
    userOrigin(req, username) {
      // a request made to the user's origin names it itself; the path form's, as documentTarget
      if (siteOf(req.headers.host, config) !== null) return `${isHttps(req, config) ? 'https' : 'http'}://${req.headers.host ?? ''}`
      return userSiteOrigin(username, req, config, ports)
    },
    domainOrigin(req, domain) {
      // the port the visitor reached the service on serves every name that points here: kept
      // over HTTPS; from plain HTTP (the loopback listener), the HTTPS listener's; behind a
      // proxy that was asked over plain HTTP, its default HTTPS port
      const port = isHttps(req, config) ? portOf(requestHost(req, config)) : !config.trustProxy && ports.main !== null ? `:${ports.main}` : ''
      return `https://${domain}${port === ':443' ? '' : port}`
    },
    upgrade(req) {
      // behind a proxy, a user's origin answers over HTTPS only (loopback names excepted)
      if (!config.trustProxy || isHttps(req, config) || hostName(req.headers.host).endsWith('.localhost')) return null
      return `https://${req.headers.host}${req.url ?? '/'}`
    },
  }
}

/**
 * The public host: GET/HEAD /{username}/{file} and /{username}/{folder}/... of published
 * projects. Registered in the public context (no API guard, no rate limits, no cookies read
 * or set). Answers are written straight to the Node response from precomputed headers; every
 * write anywhere (any instance, through the bus) drops the user's cached paths.
 */
export function hostingPublic(app: FastifyInstance, deps: Deps): void {
  // with REDIS_URL, nothing is cached while the subscription is down, and everything cached
  // goes when it is lost and when it is back (FLUSH_ALL): invalidations may have been missed
  const cache = createHostCache({ bus: deps.bus })
  // bodies go out from the blob files (the public links' open-file cache, by digest), never from memory
  const files = deps.services.get(publicFiles)
  const encodings = createEncodings(deps.blobs, app.log)
  app.addHook('onClose', async () => {
    await encodings.close()
    files.closeAll()
  })
  const { config } = deps
  const sites = siteRouting(config, app.ports)
  const hooks = siteHooksOf(app)
  // abuse handling: held paths answer 451; a user's origin answers the report link and
  // security.txt by sending the visitor to the service's own (PUBLIC_URL, or loopback's)
  const holds = hostHolds(deps, (req) => serviceOriginFromContent(req.headers.host, config, app.ports))
  const host = createHostHandler(
    cache,
    createResolver(deps.db, cache),
    { blobs: deps.blobs, files, encodings, sendfile: config.sendfile },
    app.log,
    sites,
    deps.clock,
    hooks,
    holds,
  )
  // cached answers skip the router (docs/benchmarks/2026-11-22-public-host-machines-b-c.md); behind
  // a proxy, a path-form request that did not arrive over HTTPS goes through the router's
  // redirect (a user's origin upgrades itself)
  app.addFastPath(
    (req, res, route) =>
      (!config.trustProxy ||
        isHttps(req, config) ||
        sites.siteOf(req) !== null ||
        sites.contentOnly(req) ||
        hooks.domain(hostName(req.headers.host)) !== null) &&
      host.fast(req, res, route),
  )
  tlsAsk(app, deps, hooks)
  app.route({
    method: ['GET', 'HEAD'],
    url: '/:username/*',
    exposeHeadRoute: false,
    logLevel: 'warn',
    schema: { hide: true },
    handler(req, reply) {
      reply.hijack()
      host.handle(req.raw, reply.raw)
    },
  })
  // other methods on path-form content answer as on a user's origin: a page on another origin
  // reading with a header that is not safelisted (If-None-Match, a Range of several parts,
  // Cache-Control) asks first (OPTIONS, 204); a write is 405 with Allow, as for a static file
  // (a form body to a page was handed to the forms feature by the fast path: decision 180).
  // Any route of the service's own under a first segment wins (static before wildcard).
  app.route({
    method: ['OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/:username/*',
    logLevel: 'warn',
    schema: { hide: true },
    // answered before any body is read or parsed (a write's body is not this route's)
    onRequest(req, reply, _done) {
      const first = (req.raw.url ?? '/').split(/[/?]/)[1] ?? ''
      const username = decodeSegment(first)?.toLowerCase()
      if (username === undefined || !canNameUser(username)) {
        reply.callNotFound()
        return
      }
      reply.hijack()
      host.otherMethod(req.method, reply.raw)
    },
    handler(_req, reply) {
      return reply.callNotFound()
    },
  })
}
