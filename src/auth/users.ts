import type { Db } from '../db/kysely.js'
import { isUniqueViolation } from '../db/kysely.js'
import type { Clock } from '../util/clock.js'
import { hashPassword } from './passwords.js'
import { passwordProblem, TIERS, usernameIssue, usernameProblem, type Tier } from './account-rules.js'
import { newId } from './tokens.js'
import { isQuotaName, type QuotaName } from '../limits/quotas.js'

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
export function createUsers(db: Db, clock: Clock, reserved: ReadonlySet<string> = new Set()) {
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
      // the name of a deleted account stays held (docs/api/accounts.md: deleting an account)
      if (await db.k.selectFrom('retired_usernames').select('username').where('username', '=', name).executeTakeFirst())
        throw new UserInputError(`user "${name}" already exists (the name of a deleted account is not given again)`)
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
    /**
     * The account's own password change (the web interface): the new hash, and every session
     * of the account but `keepSessionHash` (the browser that changed it) ended, in one
     * transaction. API keys are not touched. The caller has checked the current password.
     */
    async changePassword(userId: string, password: string, keepSessionHash: string): Promise<void> {
      const p = passwordProblem(password)
      if (p) throw new UserInputError(p)
      const hash = await hashPassword(password)
      await db.k.transaction().execute(async (trx) => {
        await trx.updateTable('users').set({ password_hash: hash, updated_at: clock.now() }).where('id', '=', userId).execute()
        await trx.deleteFrom('sessions').where('user_id', '=', userId).where('id_hash', '!=', keepSessionHash).execute()
      })
    },
  }
}
export type Users = ReturnType<typeof createUsers>
