import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import type { Feature } from '../feature.js'
import { sitesUi } from './page.js'
import { filesApi } from './files-routes.js'
import { foldersApi } from './folders-routes.js'
import { deploysApi } from './deploys-routes.js'
import { hostingPublic } from './public.js'

/**
 * Sites: what a user publishes and how visitors get it. Single files (files-*), folder
 * projects (folders-*), and the public host that serves both, on the path form and on each
 * user's own origin (public.ts, resolver.ts, serve.ts, site-rules.ts). Its tables are in
 * files-store.ts and folders-store.ts, listed in features/tables.ts.
 */
export const sitesFeature: Feature = {
  name: 'sites',
  ui: sitesUi,
  api(app: FastifyInstance, deps: Deps) {
    filesApi(app, deps)
    foldersApi(app, deps)
    deploysApi(app, deps)
  },
  public: hostingPublic,
}
