import { Counter, Gauge } from 'prom-client'
import { registry, flushHotCounts, LeanHistogram } from './registry.js'

/**
 * Every metric of the service. Labels carry only route patterns, methods, status codes and
 * fixed names: never a raw URL, user, key or IP.
 *
 * Bytes read from and written to the blob store are counted by `instrumentBlobStore`
 * (blob-store.ts). Features that send stored content call `countServed(reply, 'hosting')`
 * (http.ts) or `metrics.blobBytesServed.inc({ source }, n)`, so bytes served from their caches
 * count too. Layers below observability (db, infra) get hooks from the composition root.
 */
export const metrics = {
  requests: new Counter({
    name: 'svc_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
    collect: flushHotCounts,
  }),
  duration: new LeanHistogram(
    'svc_http_request_duration_seconds',
    'Time to answer an HTTP request, by route pattern and method',
    ['route', 'method'] as const,
    [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registry,
  ),
  inFlight: new Gauge({
    name: 'svc_http_requests_in_flight',
    help: 'Routed HTTP requests begun and not yet ended (body still arriving, or being answered), by route pattern',
    labelNames: ['route'] as const,
    registers: [registry],
    collect: collectInFlight,
  }),
  rateLimitRejections: new Counter({
    name: 'svc_rate_limit_rejections_total',
    help: 'API requests refused by a rate limit (429), by window',
    labelNames: ['window'] as const,
    registers: [registry],
  }),
  dependencyErrors: new Counter({
    name: 'svc_dependency_errors_total',
    help: 'Requests failed because a backing service was unavailable (1504)',
    labelNames: ['dependency'] as const,
    registers: [registry],
  }),
  dependencyUp: new Gauge({
    name: 'svc_dependency_up',
    help: 'Whether a dependency answered the last readiness probe (/readyz, /healthz) within its timeout: 1 yes, 0 no',
    labelNames: ['dependency'] as const,
    registers: [registry],
  }),
  storageErrors: new Counter({
    name: 'svc_storage_errors_total',
    help: 'Blob store operations that failed, by driver and operation',
    labelNames: ['driver', 'op'] as const,
    registers: [registry],
  }),
  dbErrors: new Counter({
    name: 'svc_db_errors_total',
    help: 'Database queries that failed, by engine and kind (constraint = expected conflicts)',
    labelNames: ['engine', 'kind'] as const,
    registers: [registry],
  }),
  blobBytesRead: new Counter({
    name: 'svc_blob_bytes_read_total',
    help: 'Bytes read out of the blob store (caches in front of it not included)',
    labelNames: ['driver'] as const,
    registers: [registry],
  }),
  blobBytesServed: new Counter({
    name: 'svc_blob_bytes_served_total',
    help: 'Bytes of stored content sent to clients, by serving feature (cache hits included)',
    labelNames: ['source'] as const,
    registers: [registry],
    collect: flushHotCounts,
  }),
  blobBytesStored: new Counter({
    name: 'svc_blob_bytes_stored_total',
    help: 'Bytes written into the blob store',
    labelNames: ['driver'] as const,
    registers: [registry],
  }),
  blobCacheLookups: new Counter({
    name: 'svc_blob_cache_lookups_total',
    help: 'Blob reads through the disk cache in front of S3, by result: hit, miss (fetched into the cache), bypass (streamed from S3: too large or no room)',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  blobCacheEvictions: new Counter({
    name: 'svc_blob_cache_evicted_bytes_total',
    help: 'Bytes of cached blobs removed to stay under BLOB_CACHE_SIZE',
    registers: [registry],
  }),
  blobCacheFailures: new Counter({
    name: 'svc_blob_cache_failures_total',
    help: 'Disk-cache fills refused, by reason: corrupt (bytes did not match the digest; never served), error (download or disk failed)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  blobCacheBytes: new Gauge({
    name: 'svc_blob_cache_bytes',
    help: 'Bytes of blobs held by the disk cache',
    registers: [registry],
  }),
  sendfile: new Counter({
    name: 'svc_hosting_sendfile_total',
    help: 'Public host answers sent with sendfile from the blob file (src/http/sendfile.ts), by result: whole, rest_copied (the kernel took a part: Node wrote the rest), failed (peer gone)',
    labelNames: ['result'] as const,
    registers: [registry],
    collect: collectSendfile,
  }),
}

// requests in flight by route pattern: plain numbers, read into the gauge on each scrape
const inFlightByRoute = new Map<string, { n: number }>()
/**
 * Counts a routed request in flight under its route pattern until its response closes
 * (answered in full, or the connection gone); every request entered is left exactly once.
 */
export function enterFlight(route: string, res: { once(event: 'close', fn: () => void): unknown }): void {
  let c = inFlightByRoute.get(route)
  if (!c) inFlightByRoute.set(route, (c = { n: 0 }))
  const count = c
  count.n++
  res.once('close', () => count.n--)
}
function collectInFlight(this: Gauge<'route'>): void {
  for (const [route, c] of inFlightByRoute) this.set({ route }, c.n)
}

/** Counts kept by http/sendfile.ts (they only grow); `observeSendfile` names them. */
export interface SendfileCounts {
  whole: number
  finishedByCopy: number
  failed: number
}
let sendfileCounts: SendfileCounts | null = null
/** Lets svc_hosting_sendfile_total read these counts (the server passes http/sendfile's). */
export function observeSendfile(counts: SendfileCounts): void {
  sendfileCounts = counts
}

// each read of the metrics adds what the counts grew by since the last one
const sendfileSeen = { whole: 0, finishedByCopy: 0, failed: 0 }
function collectSendfile(this: Counter<'result'>): void {
  if (!sendfileCounts) return
  for (const [key, result] of [
    ['whole', 'whole'],
    ['finishedByCopy', 'rest_copied'],
    ['failed', 'failed'],
  ] as const) {
    this.inc({ result }, sendfileCounts[key] - sendfileSeen[key])
    sendfileSeen[key] = sendfileCounts[key]
  }
}

/** Methods counted under their own name; any other is counted as OTHER. */
export const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
export const METHOD_INDEX = new Map([...METHODS].map((m, i) => [m, i]))
