import type { Feature } from '../feature.js'
import { healthRoutes } from './routes.js'

/** Liveness and readiness probes for process managers and load balancers. */
export const healthFeature: Feature = {
  name: 'health',
  public: (app, deps) => healthRoutes(app, deps),
}
