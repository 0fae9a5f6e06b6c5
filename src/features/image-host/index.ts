import type { Feature } from '../feature.js'
import { imageHostUi } from './page.js'
import { imageHostApi } from './routes.js'
import { imagePublic } from './public.js'
import { createImageHost, type ImageHost } from './service.js'
import { createVariants, type Variants } from './variants.js'

/** The image host's state: its service (one per Deps) and a variant cache per app, shared by its contexts. */
export interface ImageHostState {
  host: ImageHost
  variants: Variants
}

/** Image hosting: upload, list, metadata, replace, delete (session + entitlement), public links. */
export const imageHostFeature: Feature<ImageHostState> = {
  name: 'image-host',
  ui: imageHostUi,
  init: (deps) => ({ host: deps.services.get(createImageHost), variants: createVariants() }),
  api: (app, deps, { host }) => imageHostApi(app, deps, host),
  public: (app, deps, { host, variants }) => imagePublic(app, deps, host, variants),
}
