import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import type { Feature } from '../feature.js'
import { imageHostApi } from './routes.js'
import { imagePublic } from './public.js'
import { createImageHost, type ImageHost } from './service.js'
import { imageMigrations } from './store.js'
import { createVariants, type Variants } from './variants.js'

/** One image host (service + variant cache) per Deps, shared by the api and public contexts. */
const instances = new WeakMap<Deps, { host: ImageHost; variants: Variants }>()
export function imageHostOf(deps: Deps) {
  let i = instances.get(deps)
  if (!i) {
    i = { host: createImageHost(deps), variants: createVariants() }
    instances.set(deps, i)
  }
  return i
}

/** Image hosting: upload, list, metadata, replace, delete (session + entitlement), public links. */
export const imageHostFeature: Feature = {
  name: 'image-host',
  migrations: imageMigrations,
  blobColumns: [{ table: 'images', column: 'digest' }],
  api: (app: FastifyInstance, deps: Deps) => imageHostApi(app, deps, imageHostOf(deps).host),
  public: (app: FastifyInstance, deps: Deps) => {
    const { host, variants } = imageHostOf(deps)
    imagePublic(app, deps, host, variants)
  },
}
