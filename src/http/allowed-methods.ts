import type { FastifyInstance, RouteOptions } from 'fastify'
import Router from 'find-my-way'
import { AppError } from '../errors/app-error.js'
import type { Text } from '../errors/text.js'

/** The router options of the app; the method index matches paths with the same ones. */
export const ROUTER_OPTIONS = { ignoreTrailingSlash: false, maxParamLength: 2048 } as const

/**
 * The headers of an API path's refusal given before any route (a malformed escape, an overlong
 * segment): readable from any origin, as the public reads' and key-authenticated routes' own
 * refusals are, never with credentials.
 */
export const BEFORE_ROUTE_HEADERS = { 'Access-Control-Allow-Origin': '*' } as const

/** What a path segment over maxParamLength is refused for (414, decision 177). */
export const SEGMENT_TOO_LONG: Text = {
  zh: `路径中某一段超过 ${ROUTER_OPTIONS.maxParamLength} 个字符`,
  en: `a path segment is longer than ${ROUTER_OPTIONS.maxParamLength} characters`,
}

/**
 * True when a segment of the URL's path is longer than maxParamLength once decoded, as the
 * router measures a parameter: no route takes such a path, whatever the segment's place.
 */
export function hasLongSegment(url: string): boolean {
  const q = url.indexOf('?')
  for (const seg of (q < 0 ? url : url.slice(0, q)).split('/')) {
    // decoding never lengthens a segment: a short one is short
    if (seg.length <= ROUTER_OPTIONS.maxParamLength) continue
    let decoded = seg
    try {
      decoded = decodeURIComponent(seg)
    } catch {
      // malformed percent-encoding: measured as sent
    }
    if (decoded.length > ROUTER_OPTIONS.maxParamLength) return true
  }
  return false
}

/** The order methods are listed in an Allow header. */
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
const rank = (m: string) => (ORDER.includes(m) ? ORDER.indexOf(m) : ORDER.length)

/**
 * Which methods a path of a route context has: a second router holding the context's routes
 * as Fastify's own router holds them (same path syntax and options), asked only when no route
 * matched the request's method, so a real route always wins. `track(app)` must run before the
 * routes are added (an onRoute hook); routes with `config.refusesMethod` are not tracked.
 */
export function methodIndex() {
  const router = Router(ROUTER_OPTIONS)
  const methods = new Set<string>()
  const seen = new Set<string>()
  const add = (method: string, url: string) => {
    if (seen.has(`${method} ${url}`)) return
    seen.add(`${method} ${url}`)
    methods.add(method)
    router.on(method as Router.HTTPMethod, url, () => undefined)
  }
  /** The methods other than `method` that `url` (path and query, as on the request line) has, in Allow order. */
  const others = (method: string, url: string): string[] =>
    [...methods].filter((m) => m !== method && router.find(m as Router.HTTPMethod, url) !== null).sort((a, b) => rank(a) - rank(b))
  return {
    others,
    track(app: FastifyInstance): void {
      app.addHook('onRoute', (route: RouteOptions) => {
        if (route.config?.refusesMethod) return
        for (const m of Array.isArray(route.method) ? route.method : [route.method]) {
          add(m, route.url)
          // Fastify answers HEAD on every GET route (exposeHeadRoutes)
          if (m === 'GET') add('HEAD', route.url)
        }
      })
    },
    /**
     * The error of a request no route took: 414 / 1110 when a path segment is over
     * maxParamLength (decision 177), with BEFORE_ROUTE_HEADERS; else 405 with Allow when the
     * path has other methods (RFC 9110 15.5.6), else 404; both are 1404, "no such endpoint"
     * (decision 144).
     */
    miss(method: string, url: string): AppError {
      if (hasLongSegment(url)) return new AppError('INVALID_PATH', { params: { detail: SEGMENT_TOO_LONG }, status: 414, headers: BEFORE_ROUTE_HEADERS })
      const allow = others(method, url)
      if (allow.length === 0) return new AppError('NOT_FOUND')
      const list = allow.join(', ')
      return new AppError('METHOD_NOT_ALLOWED', { params: { method, allow: list }, headers: { Allow: list } })
    },
  }
}
