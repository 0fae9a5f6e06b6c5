import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import type { Feature } from '../feature.js'
import { createHostCache } from './cache.js'
import { HOSTING_CHANNEL } from './invalidate.js'
import { createResolver } from './resolver.js'
import { createHostHandler } from './serve.js'
import { FLUSH_ALL, isReliable } from '../../util/bus.js'
import { isHttps } from '../../http/origin.js'

/**
 * The public host: GET/HEAD /{username}/{file} and /{username}/{folder}/... of published
 * projects. Registered in the public context (no API guard, no rate limits, no cookies read
 * or set). Answers are written straight to the Node response from precomputed headers; every
 * write anywhere (any instance, through the bus) drops the user's cached paths.
 */
export function hostingPublic(app: FastifyInstance, deps: Deps): void {
  // with REDIS_URL, nothing is cached while the subscription is down, and everything cached
  // goes when it is lost and when it is back (FLUSH_ALL): invalidations may have been missed
  const cache = createHostCache({ trusted: () => isReliable(deps.bus), sendfile: deps.config.sendfile })
  app.addHook('onClose', async () => cache.close())
  deps.bus.subscribe(HOSTING_CHANNEL, (m) => (m === FLUSH_ALL ? cache.invalidateAll() : cache.invalidate(m)))
  const host = createHostHandler(cache, createResolver(deps.db, cache), deps.blobs, app.log)
  // cached answers skip the router (measured: about a quarter of the CPU per request); behind
  // a proxy, a request that did not arrive over HTTPS goes through the router's redirect
  const { config } = deps
  app.addFastPath((req, res) => (!config.trustProxy || isHttps(req, config)) && host.fast(req, res))
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
}

export const hostingFeature: Feature = {
  name: 'hosting',
  public: hostingPublic,
}
