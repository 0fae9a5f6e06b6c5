import { hotCount, type HistogramChild, type HotCount } from './registry.js'
import { metrics, METHODS, METHOD_INDEX } from './metrics.js'

type Children = Map<number, { count: HotCount; time: HistogramChild }>
const byRoute = new Map<string, Children>()

/**
 * Counts one answered request (svc_http_requests_total and its duration) under a route
 * pattern. The label children are kept per route, keyed by status and method as a number,
 * so that counting costs two Map lookups and a few additions: prom-client's own `inc` hashes
 * and validates the labels on every call.
 */
export function countRequest(route: string, method: string, status: number, seconds: number): void {
  let children = byRoute.get(route)
  if (!children) byRoute.set(route, (children = new Map()))
  const i = METHOD_INDEX.get(method) ?? METHODS.size
  const k = status * 8 + i
  let c = children.get(k)
  if (!c) {
    const m = i < METHODS.size ? method : 'OTHER'
    c = { count: hotCount(metrics.requests, { route, method: m, status: String(status) }), time: metrics.duration.labels(route, m) }
    children.set(k, c)
  }
  c.count.n++
  c.time.observe(seconds)
}

/** Counts a request answered by a fast path (before routing) under route "(fast path)". */
export const countFastPath = (method: string, status: number, seconds: number): void => countRequest('(fast path)', method, status, seconds)
