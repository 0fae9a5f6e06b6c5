import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import { TLS_ASK_PATH, hostName, projectSegment, siteOf } from '../../http/site-origin.js'
import { publishedFolder } from './folders-store.js'
import { OPEN_SITES, type SiteHooks } from '../../http/site-hooks.js'

/**
 * GET /.well-known/svc/tls-allowed?domain=NAME: the `ask` endpoint of a TLS proxy that gets
 * certificates on demand (Caddy's on_demand_tls, deploy/Caddyfile). 200 only for the names
 * this service answers for: the host of PUBLIC_URL, {username}.{CONTENT_DOMAIN} of an
 * existing account that is not disabled, {project}.{username}.{CONTENT_DOMAIN} of such an
 * account's published project, {deploy id}--{project}.{username}.{CONTENT_DOMAIN} of one of its
 * kept deploys, and verified custom domains (hooks.domain) of such an account's published project;
 * 404 for everything else (names that serve nothing included), so nobody can make the proxy
 * request certificates (and spend the CA's rate limits) for names of their choosing.
 * Answered over plain HTTP too (the proxy asks the instance directly), never cached.
 */
export function tlsAsk(app: FastifyInstance, deps: Deps, hooks: SiteHooks = OPEN_SITES): void {
  const { config } = deps
  const ownHost = config.publicUrl ? hostName(new URL(config.publicUrl).host) : null
  app.get(TLS_ASK_PATH, { schema: { hide: true }, logLevel: 'warn' }, async (req, reply) => {
    const q = req.query as Record<string, unknown>
    const raw = typeof q.domain === 'string' ? q.domain.toLowerCase() : ''
    // a bare host name only: no port, no path, no trailing dot
    const name = /^[a-z0-9._-]{1,253}$/.test(raw) && hostName(raw) === raw ? raw : ''
    let allowed = name !== '' && name === ownHost
    if (!allowed && name !== '') {
      // a custom domain is asked about as its project's own origin is: the domain's record
      // outlives its project (deleted, taken down, unpublished), a certificate must not
      const site = siteOf(name, config) ?? (await hooks.domain(name))
      if (site !== null) {
        const user = await deps.users.byName(site.username)
        // a project's own origin: published; one of its kept deploys: kept (published or not)
        allowed =
          user !== undefined &&
          !user.disabled &&
          (site.project === null || (await publishedFolder(deps.db, user.id, projectSegment(site.project, site.deploy ?? null))) !== undefined)
      }
    }
    reply.header('Cache-Control', 'no-store').type('text/plain; charset=utf-8')
    return allowed ? reply.code(200).send('allowed') : reply.code(404).send('Not Found')
  })
}
