import type { Db } from '../db/kysely.js'
import { addUsage, claimUsage, usageOf } from '../db/usage.js'
import type { Clock } from '../util/clock.js'
import { AppError } from '../errors/app-error.js'
import { isWellFormed } from '../util/unicode.js'
import { newApiKey, newId, sha256hex } from './tokens.js'
import { keyNameProblem, MAX_KEY_DAYS, MAX_KEY_NAME_LENGTH } from './account-rules.js'

export const MAX_KEYS_PER_USER = 10
const DAY = 86400000

/** API key record as shown to its owner (never the key or its hash). */
export interface ApiKeyInfo {
  id: string
  name: string
  hint: string
  enabled: boolean
  /** Only reads: GET/HEAD routes and the read-only MCP tools. */
  read_only: boolean
  expires_at: number | null
  created_at: number
  last_used_at: number | null
}

const KEY_COLUMNS = ['id', 'name', 'hint', 'enabled', 'read_only', 'expires_at', 'created_at', 'last_used_at'] as const

const toInfo = (r: {
  id: string
  name: string
  hint: string
  enabled: number
  read_only: number
  expires_at: number | null
  created_at: number
  last_used_at: number | null
}): ApiKeyInfo => ({
  ...r,
  enabled: !!r.enabled,
  read_only: !!r.read_only,
})

/** API keys: 64 characters, shown once, stored as SHA-256, at most 10 per user. */
export function createApiKeys(db: Db, clock: Clock) {
  return {
    /** Creates a key; the clear key is returned here and never again. */
    async create(userId: string, opts: { name?: string; expiresDays?: number | null; readOnly?: boolean }): Promise<{ key: string; info: ApiKeyInfo }> {
      const name = (opts.name ?? 'default').trim()
      if (keyNameProblem(name) !== null)
        throw new AppError('INVALID_PARAMETER', {
          params: { detail: { zh: `name 须为 1-${MAX_KEY_NAME_LENGTH} 个字符`, en: `name must be 1-${MAX_KEY_NAME_LENGTH} characters` } },
        })
      // stored the same on both engines: PostgreSQL refuses U+0000 and turns a lone surrogate into U+FFFD
      if (name.includes('\u0000') || !isWellFormed(name)) {
        throw new AppError('INVALID_PARAMETER', {
          params: { detail: { zh: 'name 不能包含 NUL 字符或孤立的 UTF-16 代理项', en: 'name must not contain NUL or a lone UTF-16 surrogate' } },
        })
      }
      const days = opts.expiresDays ?? null
      if (days !== null && (!Number.isInteger(days) || days < 1 || days > MAX_KEY_DAYS)) {
        throw new AppError('INVALID_PARAMETER', {
          params: { detail: { zh: `有效期须为 1 到 ${MAX_KEY_DAYS} 天，或不设有效期`, en: `expiry must be 1 to ${MAX_KEY_DAYS} days, or none` } },
        })
      }
      const key = newApiKey()
      const now = clock.now()
      const row = {
        id: newId(),
        user_id: userId,
        name,
        key_hash: sha256hex(key),
        hint: key.slice(-4),
        enabled: 1,
        read_only: opts.readOnly ? 1 : 0,
        expires_at: days === null ? null : now + days * DAY,
        created_at: now,
        last_used_at: null,
      }
      const full = () => new AppError('API_KEY_LIMIT', { params: { limit: MAX_KEYS_PER_USER } })
      if ((await usageOf(db.k, userId, 'api_keys')) >= MAX_KEYS_PER_USER) throw full()
      await db.k.transaction().execute(async (trx) => {
        // the key count lives in the usage counters, taken in the inserting transaction
        if ((await claimUsage(trx, userId, 'api_keys', 1, MAX_KEYS_PER_USER)) !== null) throw full()
        await trx.insertInto('api_keys').values(row).execute()
      })
      const { key_hash: _h, user_id: _u, ...info } = row
      return { key, info: toInfo(info) }
    },
    async list(userId: string): Promise<ApiKeyInfo[]> {
      const rows = await db.k.selectFrom('api_keys').select(KEY_COLUMNS).where('user_id', '=', userId).orderBy('created_at', 'desc').execute()
      return rows.map(toInfo)
    },
    /**
     * Of these key-shaped tokens, the live keys that can write (enabled, not read-only, not
     * expired), each with what names it to `userId`: its name and hint when it is theirs,
     * its hint alone when it is someone else's.
     */
    async liveWriters(tokens: Iterable<string>, userId: string): Promise<Map<string, string>> {
      const byHash = new Map([...tokens].map((t) => [sha256hex(t), t]))
      const out = new Map<string, string>()
      if (byHash.size === 0) return out
      const now = clock.now()
      const rows = await db.k
        .selectFrom('api_keys')
        .select(['key_hash', 'user_id', 'name', 'hint', 'expires_at'])
        .where('key_hash', 'in', [...byHash.keys()])
        .where('enabled', '=', 1)
        .where('read_only', '=', 0)
        .execute()
      for (const r of rows) {
        if (r.expires_at !== null && Number(r.expires_at) <= now) continue
        out.set(byHash.get(r.key_hash)!, r.user_id === userId ? `"${r.name}", svc_…${r.hint}` : `svc_…${r.hint}`)
      }
      return out
    },
    /** Enables or disables one of the user's keys; false when it is not theirs. */
    async setEnabled(userId: string, id: string, enabled: boolean): Promise<boolean> {
      const r = await db.k
        .updateTable('api_keys')
        .set({ enabled: enabled ? 1 : 0 })
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .executeTakeFirst()
      return Number(r.numUpdatedRows) > 0
    },
    async remove(userId: string, id: string): Promise<boolean> {
      return db.k.transaction().execute(async (trx) => {
        const r = await trx.deleteFrom('api_keys').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
        await addUsage(trx, userId, 'api_keys', -Number(r.numDeletedRows))
        return Number(r.numDeletedRows) > 0
      })
    },
  }
}
export type ApiKeys = ReturnType<typeof createApiKeys>
