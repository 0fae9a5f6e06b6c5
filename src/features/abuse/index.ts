import type { Feature } from '../feature.js'
import { OPEN_SITES, type SiteHooks } from '../../http/site-hooks.js'
import { abuseApi } from './routes.js'
import { abusePublic } from './public.js'
import { abusePages, abuseUi } from './page.js'
import { createAbuse, type Abuse } from './service.js'

/**
 * Abuse handling: public reports (no login), the admin queue (quarantine -> 451, takedown ->
 * removed + SHA-256 blocklist, restore, lift), upload heuristics, security.txt. The public
 * host, image links and data links ask it whether content is held (public.ts).
 */
export const abuseFeature: Feature<Abuse> = {
  name: 'abuse',
  ui: abuseUi,
  async init(deps) {
    const abuse = deps.services.get(createAbuse)
    await abuse.holds()
    return abuse
  },
  api(app, deps, abuse) {
    // reported URLs on custom domains name their project: the domains feature's state is the
    // public host's SiteHooks (as features/sites/public.ts reads it)
    abuse.useDomains((app.featureState('domains') as SiteHooks | undefined) ?? OPEN_SITES)
    abuseApi(app, deps, abuse)
  },
  public: (app, deps) => abusePublic(app, deps),
  pages: (app, deps) => abusePages(app, deps),
}
