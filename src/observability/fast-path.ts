import { hotCount, type HistogramChild, type HotCount } from './registry.js'
import { metrics, METHODS, METHOD_INDEX } from './metrics.js'

const fastChildren = new Map<number, { count: HotCount; time: HistogramChild }>()
/**
 * Counts a request answered by a fast path (the public host's cached answers, written before
 * routing) under route "(fast path)"; its label children are kept, keyed by a number, so that
 * this costs a Map lookup and a few additions per hit.
 */
export function countFastPath(method: string, status: number, seconds: number): void {
  const i = METHOD_INDEX.get(method) ?? METHODS.size
  const k = status * 8 + i
  let c = fastChildren.get(k)
  if (!c) {
    const m = i < METHODS.size ? method : 'OTHER'
    c = { count: hotCount(metrics.requests, { route: '(fast path)', method: m, status: String(status) }), time: metrics.duration.labels('(fast path)', m) }
    fastChildren.set(k, c)
  }
  c.count.n++
  c.time.observe(seconds)
}
