import { Registry, collectDefaultMetrics, type Counter, type Metric } from 'prom-client'

/**
 * The Prometheus registry of this process (one process = one instance) and the cheap metric
 * kinds the hot paths use. Importing this starts nothing: the server calls
 * `startDefaultMetrics()` once it is built.
 */
export const registry = new Registry()

let defaultsStarted = false
/**
 * Starts prom-client's process metrics (svc_process_..., svc_nodejs_...) once per process.
 * The event-loop delay is sampled every EVENT_LOOP_SAMPLE_MS rather than prom-client's 10 ms:
 * its timer is what wakes an idle server, and ten samples a second still give a scrape its
 * percentiles (decision 181).
 */
export const EVENT_LOOP_SAMPLE_MS = 100
export function startDefaultMetrics(): void {
  if (defaultsStarted) return
  defaultsStarted = true
  collectDefaultMetrics({ register: registry, prefix: 'svc_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })
}

/**
 * A counter child for the hot serving paths: a plain number that the path adds to, moved into
 * its prom-client counter whenever the metrics are read (the counter's `collect`). prom-client
 * hashes and validates the labels on every `inc`; on a cached hosted page that was a tenth of
 * the request's whole cost (perf, 2-core machine).
 */
export interface HotCount {
  n: number
}
const hotCounts = new Map<Counter<string>, { labels: Record<string, string>; count: HotCount }[]>()
export function hotCount<T extends string>(counter: Counter<T>, labels: Record<T, string>): HotCount {
  const count: HotCount = { n: 0 }
  let list = hotCounts.get(counter)
  if (!list) hotCounts.set(counter, (list = []))
  list.push({ labels, count })
  return count
}
/** The `collect` of every counter that has hot counts. */
export function flushHotCounts(this: Counter<string>): void {
  for (const { labels, count } of hotCounts.get(this) ?? []) {
    if (count.n > 0) this.inc(labels, count.n)
    count.n = 0
  }
}

/** One label set's buckets of a LeanHistogram. */
export class HistogramChild {
  count = 0
  sum = 0
  readonly counts: Float64Array
  constructor(
    readonly labels: Record<string, string>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length)
  }
  observe(v: number): void {
    this.count++
    this.sum += v
    const b = this.bounds
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]) {
        this.counts[i]++
        return
      }
    }
  }
}

/**
 * A Prometheus histogram whose label children are held as objects, so that observing costs a
 * few additions (prom-client's Histogram hashes and validates the labels on every `observe`,
 * about 0.5 µs: too much for the public host's cached answers). It is registered in the same
 * registry and rendered by prom-client exactly as its own histograms (the `get()` shape of
 * prom-client's Histogram: `_bucket` series with `le`, then `_sum` and `_count`).
 */
export class LeanHistogram<L extends string> {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private readonly children = new Map<string, HistogramChild>()
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    readonly buckets: readonly number[],
    register: Registry,
  ) {
    register.registerMetric(this as unknown as Metric<string>)
  }

  /** The child of these label values (in labelNames order); keep it for a hot path. */
  labels(...values: string[]): HistogramChild {
    const key = values.join('\u0000')
    let c = this.children.get(key)
    if (!c) {
      const labels: Record<string, string> = {}
      this.labelNames.forEach((n, i) => {
        labels[n] = values[i]
      })
      c = new HistogramChild(labels, this.buckets)
      this.children.set(key, c)
    }
    return c
  }

  observe(labels: Record<L, string>, v: number): void {
    this.labels(...this.labelNames.map((n) => labels[n])).observe(v)
  }

  reset(): void {
    this.children.clear()
  }

  get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = []
    for (const c of this.children.values()) {
      let acc = 0
      this.buckets.forEach((le, i) => {
        acc += c.counts[i]
        values.push({ labels: { le, ...c.labels }, value: acc, metricName: `${this.name}_bucket` })
      })
      values.push({ labels: { le: '+Inf', ...c.labels }, value: c.count, metricName: `${this.name}_bucket` })
      values.push({ labels: c.labels, value: c.sum, metricName: `${this.name}_sum` })
      values.push({ labels: c.labels, value: c.count, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }
}
