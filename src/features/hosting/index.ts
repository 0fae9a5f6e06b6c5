import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import type { Feature } from '../feature.js'
import { createHostCache } from './cache.js'
import { HOSTING_CHANNEL } from './invalidate.js'
import { createResolver } from './resolver.js'
import { createHostHandler } from './serve.js'

/**
 * The public host: GET/HEAD /{username}/{file} and /{username}/{folder}/... of published
 * projects. Registered in the public context (no API guard, no rate limits, no cookies read
 * or set). Answers are written straight to the Node response from precomputed headers; every
 * write anywhere (any instance, through the bus) drops the user's cached paths.
 */
export function hostingPublic(app: FastifyInstance, deps: Deps): void {
  const cache = createHostCache()
  deps.bus.subscribe(HOSTING_CHANNEL, (username) => cache.invalidate(username))
  const host = createHostHandler(cache, createResolver(deps.db, cache), deps.blobs, app.log)
  // cached answers skip the router (measured: about a quarter of the CPU per request); behind
  // a proxy, a request that did not arrive over HTTPS goes through the router's redirect
  const proxied = deps.config.trustProxy
  app.addFastPath((req, res) => {
    if (proxied) {
      const p = req.headers['x-forwarded-proto']
      if (typeof p !== 'string' || p.split(',')[0].trim().toLowerCase() !== 'https') return false
    }
    return host.fast(req, res)
  })
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
