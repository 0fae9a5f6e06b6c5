import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import { sourceFile } from '../../web/assets.js'
import type { AnyFeature, Feature } from '../feature.js'
import { assetRoutes, loadAssets } from './assets.js'
import { createPageRouter } from './page.js'
import { authPages } from './auth-pages.js'
import { dashboardPage } from './dashboard.js'
import { buildRegistry } from './registry.js'

/**
 * The web interface's shell: sign-up, login, logout, the dashboard, and the frame (layout,
 * navigation, language, CSP nonce, /static/) around the pages each feature declares in its
 * `ui` (features/<name>/page.ts, messages.ts, static/). Server-rendered HTML from small
 * templates (escaping by default) plus small scripts, allowed by a per-response CSP nonce.
 */
export function pagesFeature(features: readonly AnyFeature[]): Feature {
  return {
    name: 'pages',
    pages(app: FastifyInstance, deps: Deps) {
      const registry = buildRegistry(features.flatMap((f) => (f.ui ? [f.ui] : [])))
      const shell = [sourceFile('features/pages/static/app.css'), sourceFile('features/pages/static/common.js')]
      const assets = loadAssets([...shell, ...registry.scripts])
      const css = assets.get('app.css')?.body.toString('utf8') ?? ''
      assetRoutes(app, assets)
      const router = createPageRouter(app, deps, css, assets, registry)
      authPages(app, deps, router)
      dashboardPage(router, registry)
      for (const p of registry.pages) {
        router.page<string>(p.path, p.auth ?? 'required', async (ctx) => {
          const out = await p.render(ctx)
          return out && { nav: p.nav?.id, ...out }
        })
      }
    },
  }
}
