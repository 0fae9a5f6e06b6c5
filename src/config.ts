import path from 'node:path'
import { parseS3Url } from './storage/s3-url.js'
import { ownedByDataDir } from './util/private-files.js'
import { QUOTA_DEFAULTS, QUOTA_MAX, type QuotaDefaults } from './limits/quotas.js'

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
  /**
   * Domain under which each user's content has its own origin, {username}.{domain}
   * (CONTENT_DOMAIN). null with contentDomainAuto: "localhost" for requests made to a
   * loopback host (the one-command start), none otherwise; CONTENT_DOMAIN=off: never.
   */
  contentDomain: string | null
  contentDomainAuto: boolean
  logLevel: string
  registration: boolean
  /** Multipliers/overrides of the rate-limit table, as JSON (see limits/tiers.ts). */
  rateLimits: RateLimitOverrides | null
  /** Limits of uploads (bytes / counts). */
  maxUploadBytes: number
  /**
   * Files sent with a form submission: the largest one (FORM_FILE_MAX_BYTES), all of one
   * submission together (FORM_SUBMISSION_FILE_BYTES) and how many (FORM_SUBMISSION_FILES).
   */
  formFileMaxBytes: number
  formSubmissionFileBytes: number
  formSubmissionFiles: number
  /**
   * The per-account quotas an account without its own limit gets (limits/quotas.ts): the
   * table's, but `form_file_bytes`, which FORM_FILE_QUOTA_BYTES sets.
   */
  quotaDefaults: QuotaDefaults
  sessionTtlSeconds: number
  /**
   * Send the public host's bodies with sendfile(2) from their blob files when the native addon
   * is built (Linux, plain-HTTP connections: behind a TLS-terminating proxy); 0 = always copy.
   */
  sendfile: boolean
  /**
   * Local disk cache of blobs in front of S3 storage (ignored with local storage): folder
   * (BLOB_CACHE_DIR, default DATA_DIR/blob-cache) and most bytes (BLOB_CACHE_SIZE; 0 = off).
   */
  blobCacheDir: string
  blobCacheBytes: number
  /** Scheduled snapshots by `svc serve` (SQLite and local blobs): folder, interval (ms), how many kept. */
  backupDir: string | null
  backupEveryMs: number
  backupKeep: number
  /** How many deploys each folder project keeps (the live one always stays). */
  deploysKeep: number
  /** The bytes of one deploy's files in all (an archive past it is refused as it streams). */
  deployMaxBytes: number
  /** PostgreSQL: a query of the server unanswered this long fails (0: never). */
  databaseQueryTimeoutMs: number
  /** A request body that moves no byte this long is refused (408) and its connection closed. */
  bodyTimeoutMs: number
  /** DNS servers that custom-domain TXT checks ask (`ip` or `ip:port`, comma-separated); null: the system's. */
  dnsResolver: string[] | null
  /** Custom domains one user may attach (verified or not). */
  domainsPerUser: number
  /** Host names POST /mcp accepts besides PUBLIC_URL's (or, without it, loopback names and IP addresses). */
  mcpAllowedHosts: string[]
  /** Refuse webhook targets on private, loopback and link-local addresses (SSRF); default on. */
  webhookBlockPrivate: boolean
  /** Form notifications: first retry delay (doubles each try), how long retries go on, how often the outbox is polled. */
  notifyRetryBaseMs: number
  notifyMaxAgeMs: number
  notifyPollMs: number
  /** The longest one webhook try may take, connection to the answer's last byte. */
  webhookTimeoutMs: number
  /** Period of the e-mail digest (submissions of a period go out in one mail). */
  notifyDigestMs: number
  /** SMTP server of notification mails (smtp:// or smtps://user:pass@host:port), or null: no e-mail. */
  smtpUrl: string | null
  smtpFrom: string
  /** The longest one notification mail may take, connection to the server's last answer. */
  smtpTimeoutMs: number
}

export type RateLimitOverrides = Partial<Record<'default' | 'authenticated' | 'vip', Partial<Record<'minute' | 'hour' | 'day' | 'concurrent', number>>>>

/** The local blob store's folder: STORAGE_URL's file:// path, else DATA_DIR/blobs (meaningless with S3). */
export const blobFolder = (dataDir: string, storageUrl: string | null): string =>
  storageUrl?.startsWith('file://') ? new URL(storageUrl).pathname : path.join(dataDir, 'blobs')

/**
 * Whether `svc serve` takes scheduled backups: BACKUP_DIR is set and the instance runs on SQLite
 * with a local blob store (the only setup they cover; serve warns and ignores BACKUP_DIR otherwise).
 */
export const backupsScheduled = (c: Pick<Config, 'backupDir' | 'databaseUrl' | 'storageUrl'>): boolean =>
  c.backupDir !== null && !c.databaseUrl && !c.storageUrl?.startsWith('s3://')

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

  const hostList = (name: string): string[] => {
    const v = str(name)
    if (v === null) return []
    const hosts = v
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean)
    for (const h of hosts) if (!/^[a-z0-9.-]{1,253}$/.test(h)) problems.push(`${name}: host names separated by commas (no ports), got "${h}"`)
    return hosts
  }

  /** A duration like 500ms, 30s, 10m, 24h or 1d, at least `minMs`. */
  const duration = (name: string, def: string, minMs: number): number => {
    const v = str(name) ?? def
    const m = /^(\d+)(ms|s|m|h|d)$/.exec(v)
    const ms = m ? Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms' | 's' | 'm' | 'h' | 'd'] : 0
    if (!m || ms < minMs) problems.push(`${name}: a duration like 30s, 10m or 24h (at least ${minMs} ms), got "${v}"`)
    return m && ms >= minMs ? ms : 0
  }
  const smtpUrl = str('SMTP_URL')
  if (smtpUrl !== null && !/^smtps?:\/\/[^/]+/.test(smtpUrl))
    problems.push(`SMTP_URL: must be smtp://[user:pass@]host[:port] or smtps://..., got "${redact(smtpUrl)}"`)

  const databaseUrl = str('DATABASE_URL')
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push(`DATABASE_URL: must start with postgres:// (unset = SQLite in DATA_DIR), got "${redact(databaseUrl)}"`)
  } else if (databaseUrl !== null) {
    // the URL and its ?schema= are checked here, with every other problem (exit 78), not
    // when the pool opens; the same rule as openPostgres in db/kysely.ts
    let url: URL | null = null
    try {
      url = new URL(databaseUrl)
    } catch {
      problems.push(`DATABASE_URL: not a valid URL, got "${redact(databaseUrl)}"`)
    }
    const schema = url?.searchParams.get('schema') ?? null
    if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      problems.push(`DATABASE_URL: ?schema= must be 1-63 characters of [a-z0-9_], not starting with a digit, got "${schema}"`)
    }
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
  const contentDomainRaw = str('CONTENT_DOMAIN')?.toLowerCase() ?? null
  const contentDomainOff = contentDomainRaw === 'off' || contentDomainRaw === '0'
  const contentDomain = contentDomainRaw === null || contentDomainOff ? null : contentDomainRaw.replace(/^\*\./, '').replace(/\.$/, '')
  if (contentDomain !== null && !/^(?=.{1,200}$)([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(contentDomain)) {
    problems.push(`CONTENT_DOMAIN: must be a domain name like pages.example.net (or off), got "${contentDomainRaw}"`)
  }
  const backupDir = str('BACKUP_DIR')
  if (backupDir?.startsWith('s3://')) {
    try {
      parseS3Url(backupDir, 'BACKUP_DIR')
    } catch (e) {
      problems.push(`${(e as Error).message}, got "${redact(backupDir)}"`)
    }
  }
  const backupEveryRaw = str('BACKUP_EVERY') ?? '24h'
  const every = /^(\d+)(s|m|h|d)$/.exec(backupEveryRaw)
  const backupEveryMs = every ? Number(every[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[every[2] as 's' | 'm' | 'h' | 'd'] : 0
  if (!every || backupEveryMs < 1000) problems.push(`BACKUP_EVERY: a duration like 30m, 6h or 1d, got "${backupEveryRaw}"`)
  const blobCacheBytes = byteSize(str('BLOB_CACHE_SIZE') ?? '1G')
  if (blobCacheBytes === null)
    problems.push(`BLOB_CACHE_SIZE: a size in bytes like 1073741824, 512M or 4G (0 or off disables), got "${str('BLOB_CACHE_SIZE')}"`)
  const dataDir = path.resolve(str('DATA_DIR') ?? './data')
  if (backupDir !== null && !backupDir.startsWith('s3://') && ownedByDataDir(backupDir, dataDir, blobFolder(dataDir, storageUrl))) {
    problems.push(`BACKUP_DIR: must be outside DATA_DIR and its blobs/ (a snapshot there mixes its blobs with the live ones), got "${backupDir}"`)
  }
  const dnsRaw = str('DNS_RESOLVER')
  const dnsResolver = dnsRaw === null ? null : dnsRaw.split(',').map((x) => x.trim())
  if (dnsResolver !== null && !dnsResolver.every((x) => /^(\d{1,3}(\.\d{1,3}){3}(:\d{1,5})?|\[[0-9a-fA-F:]+\](:\d{1,5})?|[0-9a-fA-F:]+)$/.test(x))) {
    problems.push(`DNS_RESOLVER: IP addresses with an optional port, comma-separated (127.0.0.1:5353, [::1]:53), got "${dnsRaw}"`)
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
    // loopback unless asked: a laptop's start (registration open) is not reachable from its network
    host: str('HOST') ?? '127.0.0.1',
    dataDir,
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
    contentDomain,
    contentDomainAuto: contentDomainRaw === null,
    logLevel,
    registration: bool('REGISTRATION', true),
    rateLimits,
    maxUploadBytes: int('MAX_UPLOAD_BYTES', 16 * 1024 * 1024, 1, 1024 * 1024 * 1024),
    formFileMaxBytes: int('FORM_FILE_MAX_BYTES', 8 * 1024 * 1024, 1, 1024 * 1024 * 1024),
    formSubmissionFileBytes: int('FORM_SUBMISSION_FILE_BYTES', 8 * 1024 * 1024, 1, 1024 * 1024 * 1024),
    formSubmissionFiles: int('FORM_SUBMISSION_FILES', 5, 0, 100),
    quotaDefaults: Object.freeze({ ...QUOTA_DEFAULTS, form_file_bytes: int('FORM_FILE_QUOTA_BYTES', QUOTA_DEFAULTS.form_file_bytes, 0, QUOTA_MAX) }),
    sessionTtlSeconds: int('SESSION_TTL_SECONDS', 7 * 24 * 3600, 60, 365 * 24 * 3600),
    sendfile: bool('SENDFILE', true),
    blobCacheDir: path.resolve(str('BLOB_CACHE_DIR') ?? path.join(dataDir, 'blob-cache')),
    blobCacheBytes: blobCacheBytes ?? 0,
    backupDir: backupDir === null || backupDir.startsWith('s3://') ? backupDir : path.resolve(backupDir),
    backupEveryMs,
    backupKeep: int('BACKUP_KEEP', 7, 1, 1000),
    deploysKeep: int('DEPLOYS_KEEP', 10, 1, 1000),
    databaseQueryTimeoutMs: duration('DATABASE_QUERY_TIMEOUT', '30s', 0),
    bodyTimeoutMs: duration('BODY_TIMEOUT', '60s', 100),
    deployMaxBytes: int('DEPLOY_MAX_BYTES', 2 * 1024 * 1024 * 1024, 1, 64 * 1024 * 1024 * 1024),
    dnsResolver,
    domainsPerUser: int('DOMAINS_PER_USER', 5, 0, 10_000),
    mcpAllowedHosts: hostList('MCP_ALLOWED_HOSTS'),
    webhookBlockPrivate: bool('WEBHOOK_BLOCK_PRIVATE', true),
    notifyRetryBaseMs: duration('NOTIFY_RETRY_BASE', '30s', 10),
    notifyMaxAgeMs: duration('NOTIFY_MAX_AGE', '24h', 1000),
    notifyPollMs: duration('NOTIFY_POLL', '2s', 10),
    webhookTimeoutMs: duration('WEBHOOK_TIMEOUT', '10s', 100),
    notifyDigestMs: duration('NOTIFY_DIGEST_EVERY', '1h', 1000),
    smtpUrl,
    smtpFrom: str('SMTP_FROM') ?? 'svc <noreply@localhost>',
    smtpTimeoutMs: duration('SMTP_TIMEOUT', '20s', 100),
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return Object.freeze(config)
}

/** "1073741824", "512M", "4G", "1GiB" (K, M, G, T are powers of 1024); "0" or "off" = 0; null if malformed. */
export function byteSize(v: string): number | null {
  if (/^(off|0)$/i.test(v.trim())) return 0
  const m = /^(\d+(?:\.\d+)?)\s*(?:([kmgt])(?:i?b)?|b)?$/i.exec(v.trim())
  if (!m) return null
  const unit = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[(m[2] ?? '').toLowerCase() as '' | 'k' | 'm' | 'g' | 't']
  const n = Math.floor(Number(m[1]) * unit)
  return Number.isSafeInteger(n) ? n : null
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
  return v
}

/** Hides credentials inside a URL (user:password@, secret query parameters) before it is printed. */
export function redact(url: string): string {
  return url.replace(/\/\/([^/@]*)@/, '//***@').replace(/([?&](?:secretAccessKey|accessKeyId|password|sessionToken)=)[^&#]*/gi, '$1***')
}
