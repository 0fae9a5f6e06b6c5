/**
 * Per-user quotas: defaults (documented in docs/limits.md) that `svc user set --limit NAME=VALUE`
 * overrides per account. One table for every part of the service.
 */
export const QUOTA_DEFAULTS = {
  files: 100,
  kv_keys: 1000,
  kv_entry_bytes: 64 * 1024,
  forms: 20,
  form_submissions_month: 1000,
  form_export_rows: 5000,
  form_file_bytes: 100 * 1024 * 1024,
  images: 500,
  image_bytes: 500 * 1024 * 1024,
  image_max_bytes: 10 * 1024 * 1024,
  hosted_files: 50,
  hosted_file_bytes: 10 * 1024 * 1024,
  hosted_versions: 20,
  site_bytes: 1024 * 1024 * 1024,
} as const

/**
 * The largest value a quota may be set to, by every way of setting one (the admin API's schema,
 * the admin console's field, `svc user set --limit`): the largest integer JSON and the
 * database's JSON text keep exactly (2^53 - 1); past it a value would be stored rounded.
 */
export const QUOTA_MAX = Number.MAX_SAFE_INTEGER

export type QuotaName = keyof typeof QUOTA_DEFAULTS
/** The value of each quota for an account without its own (the table above, or config.quotaDefaults). */
export type QuotaDefaults = Readonly<Record<QuotaName, number>>
export const QUOTA_NAMES = Object.keys(QUOTA_DEFAULTS) as QuotaName[]

export const isQuotaName = (s: string): s is QuotaName => Object.hasOwn(QUOTA_DEFAULTS, s)

/**
 * The effective value of a quota for a user (`limits` is the user's JSON overrides), else its
 * default: `defaults`, the configured ones (config.quotaDefaults) where a caller has them.
 */
export function quotaOf(limits: string | Record<string, number>, name: QuotaName, defaults: QuotaDefaults = QUOTA_DEFAULTS): number {
  const o = typeof limits === 'string' ? safeParse(limits) : limits
  const v = o[name]
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : defaults[name]
}

function safeParse(s: string): Record<string, number> {
  try {
    const v = JSON.parse(s)
    return typeof v === 'object' && v !== null ? v : {}
  } catch {
    return {}
  }
}
