import type { Principal } from '../auth/principal.js'
import type { ErrorFormat } from '../errors/render.js'

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
  interface FastifyRequest {
    principal: Principal | null
  }
}
export {}
