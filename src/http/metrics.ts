import crypto from 'node:crypto'
import { Transform, pipeline, type Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Registry, Counter, collectDefaultMetrics, type Metric } from 'prom-client'
import { AppError } from '../errors/app-error.js'
import type { Config } from '../config.js'
import type { BlobStore } from '../storage/blob-store.js'
import { sendfileStats } from './sendfile.js'

/**
 * Prometheus metrics of this process (one process = one instance). Labels carry only route
 * patterns, methods, status codes and fixed names: never a raw URL, user, key or IP.
 *
 * Bytes read from and written to the blob store are counted by `instrumentBlobStore`. Features
 * that send stored content call `countServed(reply, 'hosting')` (or
 * `metrics.blobBytesServed.inc({ source }, n)`), so bytes served from their caches count too.
 */
export const registry = new Registry()
collectDefaultMetrics({ register: registry, prefix: 'svc_' })

/**
 * A counter child for the hot serving paths: a plain number that the path adds to, moved into
 * its prom-client counter whenever the metrics are read (the counter's `collect`). prom-client
 * hashes and validates the labels on every `inc`; on a cached hosted page that was a tenth of
 * the request's whole cost (perf, 2-core machine).
 */
export interface HotCount { n: number }
const hotCounts = new Map<Counter<string>, { labels: Record<string, string>; count: HotCount }[]>()
export function hotCount<T extends string>(counter: Counter<T>, labels: Record<T, string>): HotCount {
  const count: HotCount = { n: 0 }
  let list = hotCounts.get(counter as Counter<string>)
  if (!list) hotCounts.set(counter as Counter<string>, (list = []))
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
  constructor(readonly labels: Record<string, string>, private readonly bounds: readonly number[]) {
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
  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly L[], readonly buckets: readonly number[], register: Registry) {
    register.registerMetric(this as unknown as Metric<string>)
  }

  /** The child of these label values (in labelNames order); keep it for a hot path. */
  labels(...values: string[]): HistogramChild {
    const key = values.join('\u0000')
    let c = this.children.get(key)
    if (!c) {
      const labels: Record<string, string> = {}
      this.labelNames.forEach((n, i) => { labels[n] = values[i] })
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

export const metrics = {
  requests: new Counter({
    name: 'svc_http_requests_total', help: 'HTTP requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const, registers: [registry], collect: flushHotCounts,
  }),
  duration: new LeanHistogram('svc_http_request_duration_seconds', 'Time to answer an HTTP request, by route pattern and method',
    ['route', 'method'] as const, [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registry),
  rateLimitRejections: new Counter({
    name: 'svc_rate_limit_rejections_total', help: 'API requests refused by a rate limit (429), by window',
    labelNames: ['window'] as const, registers: [registry],
  }),
  dependencyErrors: new Counter({
    name: 'svc_dependency_errors_total', help: 'Requests failed because a backing service was unavailable (1504)',
    labelNames: ['dependency'] as const, registers: [registry],
  }),
  storageErrors: new Counter({
    name: 'svc_storage_errors_total', help: 'Blob store operations that failed, by driver and operation',
    labelNames: ['driver', 'op'] as const, registers: [registry],
  }),
  dbErrors: new Counter({
    name: 'svc_db_errors_total', help: 'Database queries that failed, by engine and kind (constraint = expected conflicts)',
    labelNames: ['engine', 'kind'] as const, registers: [registry],
  }),
  blobBytesRead: new Counter({
    name: 'svc_blob_bytes_read_total', help: 'Bytes read out of the blob store (caches in front of it not included)',
    labelNames: ['driver'] as const, registers: [registry],
  }),
  blobBytesServed: new Counter({
    name: 'svc_blob_bytes_served_total', help: 'Bytes of stored content sent to clients, by serving feature (cache hits included)',
    labelNames: ['source'] as const, registers: [registry], collect: flushHotCounts,
  }),
  blobBytesStored: new Counter({
    name: 'svc_blob_bytes_stored_total', help: 'Bytes written into the blob store',
    labelNames: ['driver'] as const, registers: [registry],
  }),
  sendfile: new Counter({
    name: 'svc_hosting_sendfile_total',
    help: 'Public host answers sent with sendfile from a memfd (src/http/sendfile.ts), by result: whole, rest_copied (the kernel took a part: Node wrote the rest), failed (peer gone)',
    labelNames: ['result'] as const, registers: [registry], collect: collectSendfile,
  }),
}

// sendfileStats only grows: each read of the metrics adds what it grew by since the last one
const sendfileSeen = { whole: 0, finishedByCopy: 0, failed: 0 }
function collectSendfile(this: Counter<'result'>): void {
  for (const [key, result] of [['whole', 'whole'], ['finishedByCopy', 'rest_copied'], ['failed', 'failed']] as const) {
    this.inc({ result }, sendfileStats[key] - sendfileSeen[key])
    sendfileSeen[key] = sendfileStats[key]
  }
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
const METHOD_INDEX = new Map([...METHODS].map((m, i) => [m, i]))
const WINDOW_BY_KEY: Record<string, string> = {
  RATE_LIMIT_MINUTE: 'minute', RATE_LIMIT_HOUR: 'hour', RATE_LIMIT_DAY: 'day', RATE_LIMIT_CONCURRENT: 'concurrent',
}
const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1'])

/** The route pattern that answered (never the raw URL). */
function routeLabel(req: FastifyRequest): string {
  return req.routeOptions?.url ?? '(unmatched)'
}

/**
 * Who may read /metrics: with METRICS_TOKEN, whoever sends `Authorization: Bearer <token>`;
 * without it, only a direct loopback connection that no proxy forwarded (no Forwarded /
 * X-Forwarded-For header). Everyone else gets the plain 404 of an unknown page.
 */
export function mayReadMetrics(req: FastifyRequest, config: Pick<Config, 'metricsToken'>): boolean {
  if (config.metricsToken) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')
    if (!m) return false
    const a = crypto.createHash('sha256').update(m[1]).digest()
    const b = crypto.createHash('sha256').update(config.metricsToken).digest()
    return crypto.timingSafeEqual(a, b)
  }
  if (req.headers['x-forwarded-for'] !== undefined || req.headers.forwarded !== undefined) return false
  return LOOPBACK.has(req.raw.socket.remoteAddress ?? '')
}

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

/** Counts every request (route pattern, method, status, latency) and serves GET /metrics. */
export function installMetrics(app: FastifyInstance, config: Config): void {
  app.addHook('onResponse', (req, reply, done) => {
    const route = routeLabel(req)
    const method = METHODS.has(req.method) ? req.method : 'OTHER'
    metrics.requests.inc({ route, method, status: String(reply.statusCode) })
    metrics.duration.observe({ route, method }, reply.elapsedTime / 1000)
    done()
  })
  app.addHook('onError', async (_req, _reply, err) => {
    if (!(err instanceof AppError)) return
    const window = WINDOW_BY_KEY[err.key]
    if (window) metrics.rateLimitRejections.inc({ window })
    else if (err.key === 'DEPENDENCY_UNAVAILABLE') metrics.dependencyErrors.inc({ dependency: 'redis' })
  })
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (!mayReadMetrics(req, config)) return reply.code(404).type('text/plain; charset=utf-8').send('Not Found')
    const body = await registry.metrics()
    return reply.header('Cache-Control', 'no-store').type(registry.contentType).send(body)
  })
}

/**
 * Counts this response's body (its Content-Length, once the response has been sent in full;
 * HEAD and aborted responses not) as stored content served by `source` (a fixed feature name).
 */
export function countServed(reply: FastifyReply, source: string): void {
  if (reply.request.method === 'HEAD') return
  reply.raw.once('finish', () => {
    const n = Number(reply.getHeader('content-length'))
    if (Number.isFinite(n) && n > 0) metrics.blobBytesServed.inc({ source }, n)
  })
}

const isAbort = (e: unknown): boolean => {
  const code = (e as { code?: string })?.code
  return code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ABORT_ERR' || code === 'ECONNRESET'
}

/**
 * Wraps a blob store so its failures (by operation) and the bytes it reads and writes are
 * counted. Errors that are the caller's (FILE_TOO_LARGE, a body that broke off) are not
 * storage errors.
 */
export function instrumentBlobStore(store: BlobStore): BlobStore {
  const driver = store.kind
  const failed = (op: string) => (e: unknown): never => {
    const unavailable = e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE'
    // put passes on the body's own errors and the size limit unchanged: not the store's fault
    if (unavailable || (op !== 'put' && !(e instanceof AppError))) metrics.storageErrors.inc({ driver, op })
    throw e
  }
  return {
    kind: store.kind,
    async put(body, opts) {
      const r = await store.put(body, opts).catch(failed('put'))
      metrics.blobBytesStored.inc({ driver }, r.size)
      return r
    },
    async get(digest, range) {
      const src = await store.get(digest, range).catch(failed('get'))
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          metrics.blobBytesRead.inc({ driver }, chunk.length)
          cb(null, chunk)
        },
      })
      return pipeline(src, counter, (err) => {
        if (err && !isAbort(err)) metrics.storageErrors.inc({ driver, op: 'stream' })
      }) as Readable
    },
    async read(digest) {
      const b = await store.read(digest).catch(failed('read'))
      metrics.blobBytesRead.inc({ driver }, b.length)
      return b
    },
    exists: (digest) => store.exists(digest).catch(failed('exists')),
    modifiedMs: (digest) => store.modifiedMs(digest).catch(failed('stat')),
    delete: (digest) => store.delete(digest).catch(failed('delete')),
    async *list() {
      try {
        yield* store.list()
      } catch (e) {
        failed('list')(e)
      }
    },
    cleanTemp: (ms) => store.cleanTemp(ms).catch(failed('cleanTemp')),
    close: () => store.close(),
  }
}
