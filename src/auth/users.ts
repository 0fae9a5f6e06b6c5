import type { Db } from '../db/kysely.js'
import { isUniqueViolation } from '../db/kysely.js'
import type { Clock } from '../util/clock.js'
import { hashPassword, passwordProblem } from './passwords.js'
import { newId } from './tokens.js'
import { isQuotaName, type QuotaName } from '../limits/quotas.js'

export type Tier = 'default' | 'authenticated' | 'vip'
export const TIERS: Tier[] = ['default', 'authenticated', 'vip']

/** The account fields the rest of the service may see (never the password hash). */
export interface User {
  id: string
  username: string
  tier: Tier
  disabled: boolean
  api_access: boolean
  is_admin: boolean
  limits: Record<string, number>
  created_at: number
}

export const USER_COLUMNS = ['id', 'username', 'tier', 'disabled', 'api_access', 'is_admin', 'limits', 'created_at'] as const

export function toUser(r: {
  id: string
  username: string
  tier: string
  disabled: number
  api_access: number
  is_admin: number
  limits: string
  created_at: number
}): User {
  let limits: Record<string, number> = {}
  try {
    limits = JSON.parse(r.limits)
  } catch {}
  return {
    id: r.id,
    username: r.username,
    tier: (TIERS as string[]).includes(r.tier) ? (r.tier as Tier) : 'authenticated',
    disabled: !!r.disabled,
    api_access: !!r.api_access,
    is_admin: !!r.is_admin,
    limits,
    created_at: Number(r.created_at),
  }
}

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

export class UserInputError extends Error {}

export interface UserSettings {
  tier?: Tier
  disabled?: boolean
  api_access?: boolean
  is_admin?: boolean
  password?: string
  limits?: Partial<Record<QuotaName, number | null>>
}

/**
 * Account operations shared by the CLI, registration and login. `reserved`: the names this
 * configuration keeps from new accounts besides the fixed lists (usernameIssue).
 */
export function createUsers(db: Db, clock: Clock, reserved: ReadonlySet<string> = NONE) {
  const byName = (username: string) =>
    db.k
      .selectFrom('users')
      .select([...USER_COLUMNS, 'password_hash'])
      .where('username', '=', username.toLowerCase())
      .executeTakeFirst()

  return {
    /** What is wrong with a name for a new account under this configuration (usernameIssue). */
    nameIssue: (username: string) => usernameIssue(username, reserved),
    async create(username: string, password: string, opts: { vip?: boolean; admin?: boolean } = {}): Promise<User> {
      const name = username.toLowerCase()
      const problem = usernameProblem(name, reserved) ?? passwordProblem(password)
      if (problem) throw new UserInputError(problem)
      const now = clock.now()
      const row = {
        id: newId(),
        username: name,
        password_hash: await hashPassword(password),
        tier: opts.vip ? 'vip' : 'authenticated',
        disabled: 0,
        api_access: 1,
        is_admin: opts.admin ? 1 : 0,
        limits: '{}',
        created_at: now,
        updated_at: now,
      }
      try {
        await db.k.insertInto('users').values(row).execute()
      } catch (e) {
        if (isUniqueViolation(e)) throw new UserInputError(`user "${name}" already exists`)
        throw e
      }
      return toUser(row)
    },
    byName,
    async byId(id: string): Promise<User | undefined> {
      const r = await db.k.selectFrom('users').select(USER_COLUMNS).where('id', '=', id).executeTakeFirst()
      return r ? toUser(r) : undefined
    },
    /** Applies operator settings; disabling an account or changing its password ends its sessions. */
    async update(username: string, s: UserSettings): Promise<User> {
      const row = await byName(username)
      if (!row) throw new UserInputError(`no user "${username}"`)
      const patch: Record<string, unknown> = { updated_at: clock.now() }
      if (s.tier) patch.tier = s.tier
      if (s.disabled !== undefined) patch.disabled = s.disabled ? 1 : 0
      if (s.api_access !== undefined) patch.api_access = s.api_access ? 1 : 0
      if (s.is_admin !== undefined) patch.is_admin = s.is_admin ? 1 : 0
      if (s.password !== undefined) {
        const p = passwordProblem(s.password)
        if (p) throw new UserInputError(p)
        patch.password_hash = await hashPassword(s.password)
      }
      if (s.limits) {
        const limits = JSON.parse(row.limits || '{}') as Record<string, number>
        for (const [k, v] of Object.entries(s.limits)) {
          if (!isQuotaName(k)) throw new UserInputError(`unknown limit "${k}"`)
          if (v === null || v === undefined) delete limits[k]
          else limits[k] = v
        }
        patch.limits = JSON.stringify(limits)
      }
      await db.k.transaction().execute(async (trx) => {
        await trx.updateTable('users').set(patch).where('id', '=', row.id).execute()
        if (s.disabled === true || s.password !== undefined) {
          await trx.deleteFrom('sessions').where('user_id', '=', row.id).execute()
        }
      })
      return (await this.byId(row.id))!
    },
  }
}
export type Users = ReturnType<typeof createUsers>
