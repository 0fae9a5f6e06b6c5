import type { FastifyInstance } from 'fastify'
import type { Migration } from 'kysely'
import type { Deps } from '../deps.js'

/**
 * One part of the spec. A feature contributes its migrations, the columns where it keeps blob
 * digests (for the sweeper), and routes in up to three contexts:
 * - api: /svc_api/... and /api/... (auth, rate limits, HTTPS rule, origin checks applied)
 * - public: content served to anyone (public host, public links): no auth, no rate limits
 * - pages: the service's own HTML pages (session, CSRF, strict CSP)
 */
export interface Feature {
  name: string
  migrations?: Record<string, Migration>
  blobColumns?: Array<{ table: string; column: string }>
  api?(app: FastifyInstance, deps: Deps): void | Promise<void>
  public?(app: FastifyInstance, deps: Deps): void | Promise<void>
  pages?(app: FastifyInstance, deps: Deps): void | Promise<void>
}
