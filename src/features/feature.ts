import type { FastifyInstance } from 'fastify'
import type { Deps } from '../deps.js'
import type { MigrationSet } from '../db/migrate.js'
import type { BlobColumn } from '../storage/sweeper.js'
import type { FeatureUi } from '../web/page.js'

/**
 * A feature's tables: its migrations and the columns where it keeps blob digests (for the
 * sweeper). Listed in features/tables.ts, apart from the routes, so migrating loads no route code.
 */
export interface FeatureTables extends MigrationSet {
  blobColumns?: BlobColumn[]
}

/**
 * One part of the spec. A feature contributes routes in up to three contexts (its tables are
 * in features/tables.ts):
 * - api: /svc_api/... and /api/... (auth, rate limits, HTTPS rule, origin checks applied)
 * - public: content served to anyone (public host, public links): no auth, no rate limits
 * - pages: the service's own HTML pages (session, CSRF, strict CSP)
 *
 * A feature with a web interface declares it in `ui` (its page.ts: pages, messages, browser
 * scripts); the pages shell (features/pages) renders them in the common frame and navigation.
 *
 * `init` builds the feature's state (services, caches) once per app, before any context is
 * registered; every context of that app receives the same state. State lives in the app,
 * never in module scope, so two apps in one process (tests, two instances) share nothing.
 */
export interface Feature<S = void> {
  name: string
  ui?: FeatureUi
  init?(deps: Deps): S | Promise<S>
  api?(app: FastifyInstance, deps: Deps, state: S): void | Promise<void>
  public?(app: FastifyInstance, deps: Deps, state: S): void | Promise<void>
  pages?(app: FastifyInstance, deps: Deps, state: S): void | Promise<void>
}

/**
 * Any feature, whatever its state (the list in features/index.ts). The methods are declared
 * as methods, so a Feature<S> is one: app.ts hands each feature only the state its init built.
 */
export type AnyFeature = Feature<unknown>
