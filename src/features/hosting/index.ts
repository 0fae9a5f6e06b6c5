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
  const handle = createHostHandler(cache, createResolver(deps.db, cache), deps.blobs, app.log)
  app.route({
    method: ['GET', 'HEAD'],
    url: '/:username/*',
    exposeHeadRoute: false,
    logLevel: 'warn',
    schema: { hide: true },
    handler(req, reply) {
      reply.hijack()
      handle(req.raw, reply.raw)
    },
  })
}

export const hostingFeature: Feature = {
  name: 'hosting',
  public: hostingPublic,
}
