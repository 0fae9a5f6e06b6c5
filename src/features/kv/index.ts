import type { Feature } from '../feature.js'
import { kvUi } from './page.js'
import { kvApi } from './routes.js'
import { kvPublicFastPath } from './public-fast.js'
import { createKvService } from './service.js'

/** Expired entries are invisible at once; this job only reclaims their rows. */
const PURGE_EVERY_MS = 10 * 60_000

/** The key-value store ("my database"): entries per user, public reads, counters, CAS, expiry. */
export const kvFeature: Feature = {
  name: 'kv',
  ui: kvUi,
  api(app, deps) {
    const kv = deps.services.get(createKvService)
    kvApi(app, deps, kv)
    app.addFastPath(kvPublicFastPath(deps, kv))
    const timer = setInterval(() => {
      kv.purgeExpired().catch((err) => app.log.warn({ err }, 'kv expiry purge failed'))
    }, PURGE_EVERY_MS)
    timer.unref()
    app.addHook('onClose', async () => clearInterval(timer))
  },
}
