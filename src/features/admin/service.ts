import type { FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { invalidateAccount } from '../accounts/invalidate.js'
import { deleteAccount, dropDeletedAccount, type DeletedUsage } from '../accounts/delete.js'
import { AppError } from '../../errors/app-error.js'
import { mapText, type Text } from '../../errors/text.js'
import { createInvalidatedCache } from '../../infra/invalidated-cache.js'
import { clientIp } from '../../http/origin.js'
import { randomString, sha256hex } from '../../auth/tokens.js'
import { UserInputError, type User, type UserSettings } from '../../auth/users.js'
import { TIERS, type Tier } from '../../auth/account-rules.js'
import { isQuotaName, quotaOf, QUOTA_MAX, QUOTA_NAMES, type QuotaName } from '../../limits/quotas.js'
import { createAdminStore, writeAudit, type AuditEntry } from './store.js'

/** Registration modes of new accounts. */
export const REGISTRATION_MODES = ['open', 'pending', 'invite', 'closed'] as const
export type RegistrationMode = (typeof REGISTRATION_MODES)[number]

/** Brand names whose presence in a login page flags it for review (the `brand_words` default). */
export const DEFAULT_BRAND_WORDS =
  'paypal, apple id, icloud, microsoft, office 365, outlook, google, gmail, facebook, instagram, whatsapp, netflix, amazon, metamask, coinbase, binance, trust wallet, ledger, chase, wells fargo, bank of america, dhl, fedex, usps, docusign, dropbox, adobe'

interface SettingDef {
  describe: string
  /** Normalises a value or throws a BadSetting. */
  check(v: string): string
}

/** A refused setting value: why, in both languages (the setting's name goes before it). */
class BadSetting extends Error {
  constructor(readonly why: Text) {
    super(why.en)
  }
}
const NOT_CONTACT: Text = { zh: '须为电子邮件地址、mailto: 或 https:// 网址', en: 'must be an e-mail address, mailto: or https:// URL' }

const contact = (v: string): string => {
  const s = v.trim()
  if (s === '') return ''
  // a mailto: value first: the address pattern below would take "mailto:a" for a local part,
  // and every save of the stored value would add another "mailto:"
  if (/^mailto:[^\s@<>"]+@[^\s@<>"]+$/i.test(s)) return `mailto:${s.slice(7)}`
  if (/^[^\s@<>":]+@[^\s@<>"]+\.[^\s@<>"]+$/.test(s)) return `mailto:${s}`
  let u: URL
  try {
    u = new URL(s)
  } catch {
    throw new BadSetting(NOT_CONTACT)
  }
  if (u.protocol !== 'https:') throw new BadSetting(NOT_CONTACT)
  return u.href
}

/**
 * Settings an admin may change while the service runs (no restart): each is read through the
 * settings cache, which every instance drops when one of them changes (bus channel
 * "settings"). Anything that needs a restart (ports, storage, domains) stays in config.ts.
 */
export const SETTINGS: Record<string, SettingDef> = {
  registration: {
    describe: 'New accounts: open, pending (an admin approves each), invite (an invitation code) or closed',
    check(v) {
      if (!(REGISTRATION_MODES as readonly string[]).includes(v))
        throw new BadSetting({ zh: `须为以下值之一：${REGISTRATION_MODES.join('、')}`, en: `must be one of ${REGISTRATION_MODES.join(', ')}` })
      return v
    },
  },
  abuse_contact: {
    describe: 'Where abuse reports can also be sent (e-mail or https URL); shown on the report page, 451 notices and security.txt',
    check: contact,
  },
  security_contact: {
    describe: 'Contact of security.txt (e-mail or https URL); empty: the abuse contact',
    check: contact,
  },
  brand_words: {
    describe: 'Comma-separated brand names: a login page naming one is flagged for review',
    check(v) {
      const words = v
        .split(',')
        .map((w) => w.trim().toLowerCase())
        .filter(Boolean)
      if (words.length > 200 || words.some((w) => w.length > 60))
        throw new BadSetting({ zh: '最多 200 个词，每个最多 60 个字符', en: 'must hold at most 200 words of at most 60 characters' })
      return words.join(', ')
    },
  },
}
export const SETTING_NAMES = Object.keys(SETTINGS)

/** Where an admin action came from, for the audit log. */
export interface Actor {
  name: string
  via: 'web' | 'cli'
  ip: string
  userAgent: string
}

/** The actor of an admin request (the guard has checked the session). */
export function actorOf(req: FastifyRequest, deps: Deps): Actor {
  const ua = req.headers['user-agent']
  return { name: req.principal?.user.username ?? '?', via: 'web', ip: clientIp(req, deps.config), userAgent: typeof ua === 'string' ? ua : '' }
}

const SETTINGS_CHANNEL = 'settings'

/** The admin service; one per Deps: `deps.services.get(createAdmin)` (its settings cache listens on the bus). */
/** The quotas whose use the accounts list counts, and the usage field that counts each. */
const COUNTED = { files: 'files', kv_keys: 'kv_keys', images: 'images', image_bytes: 'image_bytes', hosted_files: 'hosted_files' } as const

export function createAdmin(deps: Deps) {
  const { db, clock, config, users } = deps
  const store = createAdminStore(db)
  const cache = createInvalidatedCache<'all', Record<string, string>>({ bus: deps.bus, channel: SETTINGS_CHANNEL, maxEntries: 1 })
  const defaults = (): Record<string, string> => ({
    registration: config.registration ? 'open' : 'closed',
    abuse_contact: '',
    security_contact: '',
    brand_words: DEFAULT_BRAND_WORDS,
  })

  const audit = (actor: Actor, action: string, target: string, details: Record<string, unknown> = {}) => {
    const e: AuditEntry = { actor: actor.name, via: actor.via, action, target, details, ip: actor.ip, user_agent: actor.userAgent }
    return writeAudit(db, clock.now(), e)
  }

  const userByName = async (username: string): Promise<User> => {
    const row = await users.byName(username)
    if (!row) throw new AppError('USER_NOT_FOUND')
    return (await users.byId(row.id))!
  }

  /**
   * The changed quotas the account already holds more than (what the accounts list counts):
   * nothing is removed, new items are refused; the console says so to the admin who set it.
   */
  const overLimits = async (u: User, changed: string[]): Promise<Array<{ quota: QuotaName; used: number; limit: number }>> => {
    const counted = changed.filter((q): q is QuotaName & keyof typeof COUNTED => Object.hasOwn(COUNTED, q))
    if (counted.length === 0) return []
    const usage = (await store.usage([u.id])).get(u.id) ?? {}
    return counted
      .map((quota) => ({ quota, used: usage[COUNTED[quota]] ?? 0, limit: quotaOf(u.limits, quota, config.quotaDefaults) }))
      .filter((o) => o.used > o.limit)
  }

  const service = {
    store,
    audit,

    /** Every setting's current value (defaults filled in). */
    async settings(): Promise<Record<string, string>> {
      const hit = cache.get('all')
      if (hit) return hit
      const t = cache.ticket()
      const out = defaults()
      for (const r of await store.settings()) if (Object.hasOwn(SETTINGS, r.name)) out[r.name] = r.value
      cache.set('all', out, t)
      return out
    },
    async registrationMode(): Promise<RegistrationMode> {
      return (await service.settings()).registration as RegistrationMode
    },
    /** Whether an account signed up in mode "pending" still awaits an admin's approval. */
    isPending(userId: string): Promise<boolean> {
      return store.isPending(userId)
    },

    /** Changes settings (all checked first, none written on a bad one), then tells every instance. */
    async setSettings(actor: Actor, patch: Record<string, unknown>): Promise<Record<string, string>> {
      const clean: Record<string, string> = {}
      for (const [name, v] of Object.entries(patch)) {
        // own keys only: `constructor` and its like name no setting
        const d = Object.hasOwn(SETTINGS, name) ? SETTINGS[name] : undefined
        if (!d)
          throw new AppError('SETTING_INVALID', {
            params: {
              detail: {
                zh: `未知设置 "${name}"（已知：${SETTING_NAMES.join('、')}）`,
                en: `unknown setting "${name}" (known: ${SETTING_NAMES.join(', ')})`,
              },
            },
          })
        if (typeof v !== 'string') throw new AppError('SETTING_INVALID', { params: { detail: { zh: `${name} 须为字符串`, en: `${name} must be a string` } } })
        try {
          clean[name] = d.check(v)
        } catch (e) {
          if (!(e instanceof BadSetting)) throw e
          throw new AppError('SETTING_INVALID', { params: { detail: mapText(e.why, (why) => `${name} ${why}`) } })
        }
      }
      const now = clock.now()
      const current = await service.settings()
      // only what changes is written and logged (a form sends every field)
      for (const [name, v] of Object.entries(clean)) {
        if (current[name] === v) continue
        await store.putSetting(name, v, now, actor.name)
        await audit(actor, 'settings.set', name, { value: v })
      }
      await cache.publish('all')
      return service.settings()
    },

    /** One page of accounts with what they hold and their effective quotas. */
    async listUsers(search: string | undefined, limit: number, offset: number) {
      const { total, rows } = await store.users(search, limit, offset)
      const usage = await store.usage(rows.map((r) => r.id))
      return {
        total,
        users: rows.map((r) => {
          let limits: Record<string, number> = {}
          try {
            limits = JSON.parse(r.limits) as Record<string, number>
          } catch {}
          return {
            username: r.username,
            tier: r.tier,
            disabled: !!r.disabled,
            pending: r.pending !== null,
            api_access: !!r.api_access,
            is_admin: !!r.is_admin,
            created_at: Number(r.created_at),
            limits,
            quotas: Object.fromEntries(QUOTA_NAMES.map((q) => [q, quotaOf(limits, q, config.quotaDefaults)])),
            usage: usage.get(r.id) ?? {},
          }
        }),
      }
    },

    /**
     * Changes an account: tier (VIP), disabled, API access, limits. Approving a pending
     * account enables it. An admin cannot disable or demote their own account.
     */
    async updateUser(actor: Actor, username: string, body: { tier?: string; disabled?: boolean; api_access?: boolean; limits?: Record<string, unknown> }) {
      const target = await userByName(username)
      const s: UserSettings = {}
      if (body.tier !== undefined) {
        if (!(TIERS as string[]).includes(body.tier))
          throw new AppError('INVALID_PARAMETER', {
            params: { detail: { zh: `tier 须为以下值之一：${TIERS.join('、')}`, en: `tier must be one of ${TIERS.join(', ')}` } },
          })
        s.tier = body.tier as Tier
      }
      if (body.disabled !== undefined) {
        if (body.disabled && target.username === actor.name)
          throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: '不能禁用你自己的账户', en: 'you cannot disable your own account' } } })
        s.disabled = body.disabled
      }
      if (body.api_access !== undefined) s.api_access = body.api_access
      if (body.limits !== undefined) {
        s.limits = {}
        for (const [k, v] of Object.entries(body.limits)) {
          if (!isQuotaName(k))
            throw new AppError('INVALID_PARAMETER', {
              params: { detail: { zh: `未知限额 "${k}"（已知：${QUOTA_NAMES.join('、')}）`, en: `unknown limit "${k}" (known: ${QUOTA_NAMES.join(', ')})` } },
            })
          if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > QUOTA_MAX))
            throw new AppError('INVALID_PARAMETER', {
              params: {
                detail: {
                  zh: `限额 ${k} 须为 0 到 ${QUOTA_MAX} 的整数，或为 null 以恢复默认值`,
                  en: `limit ${k} must be a whole number from 0 to ${QUOTA_MAX}, or null for the default`,
                },
              },
            })
          s.limits[k] = v
        }
      }
      let u: User
      try {
        u = await users.update(target.username, s)
      } catch (e) {
        // the checks above leave users.update one refusal: the account went away meanwhile
        if (e instanceof UserInputError) throw new AppError('USER_NOT_FOUND')
        throw e
      }
      if (body.disabled === false) await store.removePending(u.id)
      // a disabled account's pages and links go offline at once, on every instance (and come back)
      if (body.disabled !== undefined) await invalidateAccount(deps.bus, u.username)
      await audit(actor, 'user.update', u.username, { ...body })
      return { user: u, over: body.limits === undefined ? [] : await overLimits(u, Object.keys(body.limits)) }
    },

    /** An account's API keys, as its owner's own list shows them (never a key or its hash). */
    async listKeys(username: string) {
      const u = await userByName(username)
      return { username: u.username, keys: await deps.apiKeys.list(u.id) }
    },

    /**
     * Revokes one of the account's keys by deleting it, as its owner's delete does: nothing
     * can bring a deleted key back, where a disabled one could be enabled again from the
     * owner's session. The delete goes through apiKeys.remove, so it names `api_keys` and moves
     * the change stamp the principal resolver's kept rows are checked against (decision 184):
     * the key's next request is refused, on this instance and on every other.
     */
    async revokeKey(actor: Actor, username: string, id: string): Promise<{ id: string; name: string }> {
      const u = await userByName(username)
      // a key of another account is not found here, exactly as an unknown id
      const key = (await deps.apiKeys.list(u.id)).find((k) => k.id === id)
      if (!key || !(await deps.apiKeys.remove(u.id, id))) throw new AppError('RESOURCE_NOT_FOUND')
      await audit(actor, 'key.revoke', u.username, { key_id: key.id, name: key.name })
      return { id: key.id, name: key.name }
    },

    /**
     * Deletes an account and everything it holds (accounts/delete.ts), then drops its public
     * caches on every instance. An admin cannot delete their own account here (another admin or
     * `svc user delete` can), as they cannot disable it.
     */
    async deleteUser(actor: Actor, username: string): Promise<{ username: string; usage: DeletedUsage }> {
      const target = await userByName(username)
      if (target.username === actor.name)
        throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: '不能在此删除你自己的账户', en: 'you cannot delete your own account here' } } })
      const done = await deleteAccount(db, clock.now(), target.id, actor.name)
      // deleted meanwhile by another request: as an unknown name
      if (!done) throw new AppError('USER_NOT_FOUND')
      await dropDeletedAccount(deps.bus, done.username)
      await audit(actor, 'user.delete', done.username, { usage: done.usage })
      return done
    },

    /** A new invitation code (shown once; only its hash is kept). */
    async createInvite(actor: Actor): Promise<string> {
      const code = `INV-${randomString(20)}`
      await store.createInvite(sha256hex(code), clock.now(), actor.name)
      await audit(actor, 'invite.create', `invite ${code.slice(0, 8)}…`)
      return code
    },
  }
  return service
}
export type Admin = ReturnType<typeof createAdmin>
