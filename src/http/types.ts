import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Principal } from '../auth/principal.js'
import type { ErrorFormat } from '../errors/render.js'

/**
 * A handler that sees a request before the router, for hot paths that need no hooks (the
 * public host's cached answers, the KV public read). It returns true when it takes the
 * request: it then answers it, now or later, or hands it to the router with `route(req, res)`
 * (once, before writing anything). False: the router handles the request as usual.
 */
export type FastPath = (req: IncomingMessage, res: ServerResponse, route: (req: IncomingMessage, res: ServerResponse) => void) => boolean

/** How a route authenticates its caller. */
export type AuthMode = 'none' | 'any' | 'session'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** 'any' = API key or session; 'session' = session only (API key -> 403); default 'none'. */
    auth?: AuthMode
    /** Error body format: 'A' numeric (default), 'B' single-file upload, 'plain' {success,message}. */
    errorFormat?: ErrorFormat
    /** Entitlement the caller's account must hold (image-host, hosted-data). */
    entitlement?: string
    /** Skip the API rate limit for this route (login has its own throttle). */
    rateLimit?: false
  }
  interface FastifyInstance {
    /** Registers a FastPath (see above); it runs only when the app has a server factory. */
    addFastPath(fn: FastPath): void
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}
export {}
