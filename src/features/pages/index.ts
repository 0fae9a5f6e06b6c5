import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import type { Feature } from '../feature.js'
import { assetRoutes, loadAssets } from './assets.js'
import { createPageRouter } from './page.js'
import { authPages } from './auth-pages.js'
import { appPages } from './app-pages.js'

/**
 * The web interface: sign-up, login, logout, the dashboard, /api-keys and one page per part.
 * Server-rendered HTML from small templates (escaping by default) plus small scripts from
 * ./static, served at /static/ and allowed by a per-response CSP nonce.
 */
export const pagesFeature: Feature = {
  name: 'pages',
  pages(app: FastifyInstance, deps: Deps) {
    const assets = loadAssets()
    const css = assets.get('app.css')?.body.toString('utf8') ?? ''
    assetRoutes(app, assets)
    const router = createPageRouter(app, deps, css, assets)
    authPages(app, deps, router)
    appPages(router)
  },
}
