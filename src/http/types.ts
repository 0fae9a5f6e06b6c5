import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Principal } from '../auth/principal.js'
import type { ErrorFormat, Lang } from '../errors/render.js'
import type { AppError } from '../errors/app-error.js'
import type { ErrorKey } from '../errors/codes.js'
import type { WindowState } from '../limits/store.js'
import type { ListenPorts } from './site-origin.js'

/**
 * A handler that sees a request before the router, for hot paths that need no hooks (the
 * public host's cached answers, the KV public read). It returns true when it takes the
 * request: it then answers it, now or later, or hands it to the router with
 * `route(req, res, handover)` (once, before writing anything). False: the router handles the
 * request as usual.
 */
export type FastPath = (req: IncomingMessage, res: ServerResponse, route: (req: IncomingMessage, res: ServerResponse, handover?: Handover) => void) => boolean

/** The outcome of counting a request against its caller's limits; `window` gives the X-RateLimit-* headers. */
export type Admission = { ok: true; window: WindowState } | { ok: false; window: WindowState; error: AppError }

/**
 * What a fast path tells the router when it hands a request over: the only state the two
 * share, carried on the request itself (`req.handedOver`, set by the app's `route`).
 */
export interface Handover {
  /** The rate-limit admission the fast path already made (or its failure): the API guard
   * uses it instead of counting the request twice. */
  admission?: Admission | { failed: unknown }
  /**
   * A form post to a page of a user's site (the public host checked that `path` is a page
   * of `username`'s site as this host serves it), rewritten to SITE_FORM_ROUTE. `root`: the
   * site's root on this host, `/` on a user's or project's origin or a domain, `/{username}/`
   * on the path form, whose origin is the service's own and so no owner's. `hold`: the page's
   * hold key (abuse handling), which the forms route reads again under the owner's lock
   * before storing; null where no hold applies (no abuse handling).
   */
  siteForm?: { username: string; path: string; root: string; hold: string | null }
}

/** The forms feature's route for posts to site pages; it refuses any request without `siteForm`. */
export const SITE_FORM_ROUTE = '/api/forms/site-submit'

declare module 'node:http' {
  interface IncomingMessage {
    /** Set when a fast path handed this request to the router; the app then counts it as a
     * routed request, not a fast-path answer. */
    handedOver?: Handover
    /** Set when app.inject's fast-path hook routed this request again under the path a fast
     * path handed it over to: the request the router first matched, whose reply is dropped. */
    superseded?: unknown
    /** Set by the plain-HTTP listener on an API request: the service's origin on the HTTPS
     * port (the one its redirects name), used for the absolute links of the answer. */
    httpsOrigin?: string
  }
}

/** How a route authenticates its caller. */
export type AuthMode = 'none' | 'any' | 'session'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** 'any' = API key or session; 'session' = session only (API key -> 403); default 'none'. */
    auth?: AuthMode
    /** Error body format: 'A' numeric (default), 'B' single-file upload, 'plain' {success,message}. */
    errorFormat?: ErrorFormat
    /** The language of the route's errors when Accept-Language names neither (default: Chinese, as the spec). */
    lang?: Lang
    /** Entitlement the caller's account must hold (image-host, hosted-data). */
    entitlement?: string
    /** A POST that only reads (or checks each operation itself, as /mcp does): read-only keys may call it. */
    readOnlySafe?: boolean
    /**
     * Skip the API rate limit for this route (login has its own throttle); 'handler': a request
     * with a valid API key is counted by the handler itself (admitInHandler), once its body says
     * what it is (POST /mcp); any other request is counted here as usual.
     */
    rateLimit?: false | 'handler'
    /** The error a body of a media type the route does not take answers (default: 'expected application/json'). */
    mediaTypeError?: ErrorKey
    /** The error a body over the route's bodyLimit answers, given that limit (default: 413 / 1109). */
    bodyTooLarge?: (limit: number) => AppError
    /** A route that only refuses its method (a catch-all, a 405): not among the methods its path has (http/allowed-methods.ts). */
    refusesMethod?: true
    /** The route also takes no body at all (its schema's body is what it takes when one is sent): not required in the document. */
    optionalBody?: true
  }
  interface FastifyInstance {
    /** Registers a FastPath (see above): run before routing by the server factory, else (app.inject) in an onRequest hook. */
    addFastPath(fn: FastPath): void
    /** The ports the server listens on, once listen() has run (for URLs of users' origins). */
    ports: ListenPorts
    /** The state a feature's `init` built for this app (undefined without init); for tests. */
    featureState(name: string): unknown
    /** Compiles every route schema not compiled yet (they compile on first use); for tests. */
    compileSchemas(): void
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}
export {}
