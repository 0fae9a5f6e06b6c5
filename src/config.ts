import path from 'node:path'
import { parseS3Url } from './storage/s3-url.js'

/** Service configuration: the only place that reads the environment. */
export interface Config {
  port: number
  httpPort: number
  host: string
  dataDir: string
  databaseUrl: string | null
  storageUrl: string | null
  redisUrl: string | null
  /** Prefix of every Redis key and channel (several deployments may share one Redis). */
  redisPrefix: string
  /** Run pending migrations at start (default); 0 = refuse to start until `svc migrate` ran. */
  migrateOnStart: boolean
  /** Bearer token that may read GET /metrics from anywhere (unset: loopback only). */
  metricsToken: string | null
  trustProxy: boolean
  tlsCert: string | null
  tlsKey: string | null
  publicUrl: string | null
  contentOrigin: string | null
  logLevel: string
  registration: boolean
  /** Multipliers/overrides of the rate-limit table, as JSON (see limits/tiers.ts). */
  rateLimits: RateLimitOverrides | null
  /** Limits of uploads (bytes / counts). */
  maxUploadBytes: number
  sessionTtlSeconds: number
  /**
   * Send the public host's hot bodies with sendfile(2) from sealed memfds when the native addon
   * is built (Linux, plain-HTTP connections: behind a TLS-terminating proxy); 0 = always copy.
   */
  sendfile: boolean
}

export type RateLimitOverrides = Partial<Record<'default' | 'authenticated' | 'vip', Partial<Record<'minute' | 'hour' | 'day' | 'concurrent', number>>>>

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`)
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/**
 * Builds a frozen Config from an environment object. Every problem is collected and
 * reported at once, each naming its variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const problems: string[] = []
  const str = (name: string): string | null => {
    const v = env[name]
    return v === undefined || v === '' ? null : v
  }
  const port = (name: string, def: number): number => {
    const v = str(name)
    if (v === null) return def
    if (!/^\d+$/.test(v) || Number(v) < 0 || Number(v) > 65535) {
      problems.push(`${name}: must be a port number 0-65535, got "${v}"`)
      return def
    }
    return Number(v)
  }
  const int = (name: string, def: number, min: number, max: number): number => {
    const v = str(name)
    if (v === null) return def
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
      problems.push(`${name}: must be an integer ${min}-${max}, got "${v}"`)
      return def
    }
    return Number(v)
  }
  const bool = (name: string, def: boolean): boolean => {
    const v = str(name)
    if (v === null) return def
    if (['1', 'true', 'yes', 'on'].includes(v.toLowerCase())) return true
    if (['0', 'false', 'no', 'off'].includes(v.toLowerCase())) return false
    problems.push(`${name}: must be 1/0 (or true/false), got "${v}"`)
    return def
  }
  const origin = (name: string): string | null => {
    const v = str(name)
    if (v === null) return null
    try {
      const u = new URL(v)
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('protocol')
      if (u.pathname !== '/' || u.search || u.hash) throw new Error('path')
      return u.origin
    } catch {
      problems.push(`${name}: must be an origin like https://example.com (no path), got "${v}"`)
      return null
    }
  }

  const databaseUrl = str('DATABASE_URL')
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push(`DATABASE_URL: must start with postgres:// (unset = SQLite in DATA_DIR), got "${redact(databaseUrl)}"`)
  }
  const storageUrl = str('STORAGE_URL')
  if (storageUrl !== null) {
    if (!/^s3:\/\/[^/?]+/.test(storageUrl) && !/^file:\/\//.test(storageUrl)) {
      problems.push(`STORAGE_URL: must be s3://bucket?endpoint=... or file:///path, got "${redact(storageUrl)}"`)
    } else if (storageUrl.startsWith('s3://')) {
      try {
        parseS3Url(storageUrl)
      } catch (e) {
        problems.push(`${(e as Error).message}, got "${redact(storageUrl)}"`)
      }
    }
  }
  const redisUrl = str('REDIS_URL')
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    problems.push(`REDIS_URL: must start with redis:// or rediss://, got "${redact(redisUrl)}"`)
  }
  const redisPrefix = str('REDIS_PREFIX') ?? 'svc:'
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(redisPrefix)) problems.push(`REDIS_PREFIX: 1-64 characters of A-Za-z0-9_.:-, got "${redisPrefix}"`)
  const metricsToken = str('METRICS_TOKEN')
  if (metricsToken !== null && metricsToken.length < 16) problems.push('METRICS_TOKEN: must be at least 16 characters')
  const tlsCert = str('TLS_CERT')
  const tlsKey = str('TLS_KEY')
  if ((tlsCert === null) !== (tlsKey === null)) {
    problems.push(`${tlsCert === null ? 'TLS_CERT' : 'TLS_KEY'}: TLS_CERT and TLS_KEY must be set together`)
  }
  const trustProxy = bool('TRUST_PROXY', false)
  if (trustProxy && tlsCert !== null) {
    problems.push('TRUST_PROXY: cannot be combined with TLS_CERT/TLS_KEY (the proxy terminates TLS)')
  }
  const logLevel = str('LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`)

  let rateLimits: RateLimitOverrides | null = null
  const rl = str('RATE_LIMITS')
  if (rl !== null) {
    try {
      rateLimits = parseRateLimits(JSON.parse(rl))
    } catch (e) {
      problems.push(`RATE_LIMITS: ${(e as Error).message}`)
    }
  }

  const config: Config = {
    port: port('PORT', 8443),
    httpPort: port('HTTP_PORT', 8080),
    host: str('HOST') ?? '0.0.0.0',
    dataDir: path.resolve(str('DATA_DIR') ?? './data'),
    databaseUrl,
    storageUrl,
    redisUrl,
    redisPrefix,
    migrateOnStart: bool('MIGRATE_ON_START', true),
    metricsToken,
    trustProxy,
    tlsCert,
    tlsKey,
    publicUrl: origin('PUBLIC_URL'),
    contentOrigin: origin('CONTENT_ORIGIN'),
    logLevel,
    registration: bool('REGISTRATION', true),
    rateLimits,
    maxUploadBytes: int('MAX_UPLOAD_BYTES', 16 * 1024 * 1024, 1, 1024 * 1024 * 1024),
    sessionTtlSeconds: int('SESSION_TTL_SECONDS', 7 * 24 * 3600, 60, 365 * 24 * 3600),
    sendfile: bool('SENDFILE', true),
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return Object.freeze(config)
}

function parseRateLimits(v: unknown): RateLimitOverrides {
  const tiers = ['default', 'authenticated', 'vip']
  const windows = ['minute', 'hour', 'day', 'concurrent']
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('must be a JSON object of tiers')
  for (const [tier, w] of Object.entries(v)) {
    if (!tiers.includes(tier)) throw new Error(`unknown tier "${tier}" (use ${tiers.join(', ')})`)
    if (typeof w !== 'object' || w === null) throw new Error(`tier "${tier}" must be an object`)
    for (const [win, n] of Object.entries(w)) {
      if (!windows.includes(win)) throw new Error(`unknown window "${win}" (use ${windows.join(', ')})`)
      if (!Number.isInteger(n) || (n as number) < 1) throw new Error(`${tier}.${win} must be a positive integer`)
    }
  }
  return v as RateLimitOverrides
}

/** Hides credentials inside a URL (user:password@, secret query parameters) before it is printed. */
export function redact(url: string): string {
  return url
    .replace(/\/\/([^/@]*)@/, '//***@')
    .replace(/([?&](?:secretAccessKey|accessKeyId|password|sessionToken)=)[^&#]*/gi, '$1***')
}
