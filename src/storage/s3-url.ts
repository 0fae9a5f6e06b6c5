// STORAGE_URL of the S3 driver, parsed without loading the AWS SDK: config.ts validates it at
// start-up, storage/s3.ts builds the client from it.

/** Client settings in the shape of the SDK's S3ClientConfig (kept structural, no SDK import). */
export interface S3ClientSettings {
  region: string
  endpoint?: string
  forcePathStyle: boolean
  credentials?: { accessKeyId: string; secretAccessKey: string }
  maxAttempts: number
  requestHandler: {
    connectionTimeout: number
    requestTimeout: number
    throwOnRequestTimeout: boolean
    socketTimeout: number
    httpAgent: { keepAlive: boolean; maxSockets: number }
    httpsAgent: { keepAlive: boolean; maxSockets: number }
  }
  requestChecksumCalculation: 'WHEN_REQUIRED'
  responseChecksumValidation: 'WHEN_REQUIRED'
}

export interface S3Settings {
  bucket: string
  /** Key prefix inside the bucket ('' or ending with '/'). */
  prefix: string
  client: S3ClientSettings
}

const positiveInt = (v: string | null, name: string, def: number, setting: string): number => {
  if (v === null) return def
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new Error(`${setting}: ${name} must be a positive integer`)
  return Number(v)
}

/**
 * Parses `s3://bucket[/prefix]?endpoint=URL&region=R&forcePathStyle=true` plus the optional
 * `accessKeyId`/`secretAccessKey` (otherwise the SDK's standard chain: AWS_ACCESS_KEY_ID /
 * AWS_SECRET_ACCESS_KEY, shared config, instance role), `connectTimeoutMs` (1000),
 * `timeoutMs` (10000, until the response headers) and `idleTimeoutMs` (5000, no byte moving).
 * `setting` names the URL's origin in errors (STORAGE_URL, or a backup destination).
 */
export function parseS3Url(url: string, setting = 'STORAGE_URL'): S3Settings {
  const m = /^s3:\/\/([^/?#]+)(\/[^?#]*)?(\?[^#]*)?$/.exec(url)
  if (!m) throw new Error(`${setting}: expected s3://bucket[/prefix]?endpoint=...`)
  const bucket = m[1]
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '')
  const q = new URLSearchParams(m[3] ?? '')
  const endpoint = q.get('endpoint')
  if (endpoint !== null && !/^https?:\/\/[^/]+\/?$/.test(endpoint)) throw new Error(`${setting}: endpoint must be http(s)://host[:port]`)
  const accessKeyId = q.get('accessKeyId')
  const secretAccessKey = q.get('secretAccessKey')
  if ((accessKeyId === null) !== (secretAccessKey === null)) throw new Error(`${setting}: accessKeyId and secretAccessKey go together`)
  const fps = q.get('forcePathStyle')
  const connectTimeoutMs = positiveInt(q.get('connectTimeoutMs'), 'connectTimeoutMs', 1000, setting)
  const timeoutMs = positiveInt(q.get('timeoutMs'), 'timeoutMs', 10_000, setting)
  const idleTimeoutMs = positiveInt(q.get('idleTimeoutMs'), 'idleTimeoutMs', 5000, setting)
  return {
    bucket,
    prefix: prefix ? `${prefix}/` : '',
    client: {
      region: q.get('region') ?? 'us-east-1',
      ...(endpoint ? { endpoint } : {}),
      forcePathStyle: fps === 'true' || fps === '1',
      ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey } } : {}),
      // fail fast: one retry, short connect and first-byte timeouts, and an idle timeout on
      // every socket (a stalled transfer errors instead of hanging the request)
      maxAttempts: 2,
      requestHandler: {
        connectionTimeout: connectTimeoutMs,
        requestTimeout: timeoutMs,
        throwOnRequestTimeout: true,
        socketTimeout: idleTimeoutMs,
        httpAgent: { keepAlive: true, maxSockets: 64 },
        httpsAgent: { keepAlive: true, maxSockets: 64 },
      },
      // S3-compatible servers differ in their support of the newer default checksums
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    },
  }
}
