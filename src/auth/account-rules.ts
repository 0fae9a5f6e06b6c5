/**
 * The rules of accounts and API keys that need no database: the tiers, which names a new
 * account may take, what a password must be, how long a key may live. The service applies them
 * (auth/users.ts, auth/passwords.ts, auth/api-keys.ts) and operator commands check their
 * arguments with them before anything is opened (src/cli/admin.ts): this module imports
 * nothing, so a command's help and argument check load no database or hashing code.
 */

export type Tier = 'default' | 'authenticated' | 'vip'
export const TIERS: Tier[] = ['default', 'authenticated', 'vip']

/** Names that would collide with the service's own paths, compared case-insensitively. */
export const RESERVED_USERNAMES = new Set([
  'svc_api',
  'api',
  'login',
  'logout',
  'register',
  'dashboard',
  'api-keys',
  'svc-img',
  'svc-data',
  'image-host',
  'hosted-data',
  'healthz',
  'livez',
  'readyz',
  'static',
  'assets',
  '.well-known',
  'favicon.ico',
  'robots.txt',
  'openapi.json',
  'metrics',
  'docs',
  'admin',
  'redeem',
  'settings',
  'account',
  'files',
  'folders',
  'forms',
  'kv',
  'images',
  'data',
  'www',
  'root',
  'null',
  'undefined',
  'sitemap.xml',
  'humans.txt',
  'ads.txt',
  'security.txt',
  'well-known',
  'report',
  'mcp',
])

/**
 * Names a new account may not take, though an existing one keeps working: a per-user origin
 * ({username}.{CONTENT_DOMAIN}) would be a host that browsers, mail clients and operating
 * systems ask for by name (proxy, mail and device autoconfiguration), one whose
 * `/.well-known/` files speak for the whole domain (OpenPGP keys of its addresses, its
 * MTA-STS policy), or a mailbox RFC 2142 reserves.
 */
const REFUSED_FOR_NEW = new Set([
  'wpad',
  'autodiscover',
  'autoconfig',
  'isatap',
  'openpgpkey',
  'mta-sts',
  'enterpriseenrollment',
  'enterpriseregistration',
  'lyncdiscover',
  'postmaster',
  'abuse',
  'hostmaster',
  'webmaster',
  'noc',
  'security',
  'mail',
  'smtp',
  'imap',
  'pop',
  'ftp',
  'ns1',
  'ns2',
])
export const USERNAME_RE = /^[a-z0-9][a-z0-9_-]{1,31}$/

/**
 * Whether a lower-case path segment can name an account: its form, and not one of the
 * service's own first path segments (the public host never takes those, whatever the case).
 */
export const canNameUser = (name: string): boolean => USERNAME_RE.test(name) && !RESERVED_USERNAMES.has(name)

/**
 * What is wrong with a name for a new account: reserved, its form, or its DNS label; null:
 * nothing. `alsoReserved`: names this configuration reserves besides the fixed lists (the
 * label of the service's own host under the content domain: serviceLabels in http/site-origin).
 */
export function usernameIssue(username: string, alsoReserved: ReadonlySet<string> = NONE): 'reserved' | 'format' | 'label' | null {
  const name = username.toLowerCase()
  if (RESERVED_USERNAMES.has(name) || REFUSED_FOR_NEW.has(name) || alsoReserved.has(name)) return 'reserved'
  if (!USERNAME_RE.test(username)) return 'format'
  // a DNS label of the user's origin: no hyphen at its end, and none in its third and fourth
  // places (the form of IDN labels, xn--, which a browser would show as other letters)
  if (username.endsWith('-') || username.slice(2, 4) === '--') return 'label'
  return null
}

const NONE: ReadonlySet<string> = new Set()

/** Why a username cannot be used, or null. */
export function usernameProblem(username: string, alsoReserved: ReadonlySet<string> = NONE): string | null {
  switch (usernameIssue(username, alsoReserved)) {
    case 'reserved':
      return `"${username}" is reserved`
    case 'format':
      return 'username must be 2-32 characters of a-z, 0-9, _ and -, starting with a letter or digit'
    case 'label':
      return 'username must not end with "-" or have "--" as its third and fourth characters'
    case null:
      return null
  }
}

/** A new password's length, in characters, and its size at most, in UTF-8 bytes. */
export const MIN_PASSWORD_LENGTH = 8
export const MAX_PASSWORD_BYTES = 1024

/** Problems with a new password, or null when acceptable. */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `password must have at least ${MIN_PASSWORD_LENGTH} characters`
  if (Buffer.byteLength(password) > MAX_PASSWORD_BYTES) return `password must be at most ${MAX_PASSWORD_BYTES} bytes`
  return null
}

/** The longest life of an API key, in days (1 to this, or no expiry). */
export const MAX_KEY_DAYS = 365

/** An API key's name: 1 to this many characters once trimmed, as it is stored. */
export const MAX_KEY_NAME_LENGTH = 64

/** What is wrong with a name for a new API key (its length, trimmed), or null. */
export function keyNameProblem(name: string): string | null {
  const n = name.trim().length
  return n < 1 || n > MAX_KEY_NAME_LENGTH ? `name must be 1-${MAX_KEY_NAME_LENGTH} characters` : null
}
