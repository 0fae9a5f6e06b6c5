import crypto from 'node:crypto'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { unknownField } from '../../http/unknown-fields.js'
import type { Text } from '../../errors/text.js'
import { hashPassword } from '../../auth/passwords.js'
import { MAX_PASSWORD_BYTES } from '../../auth/account-rules.js'
import { hostName } from '../../http/site-origin.js'
import { unstorable } from '../../http/errors.js'
import { createDomainsStore, type AccessRow, type DomainRow } from './store.js'
import { challengeName, challengeValue, parseDomain } from './names.js'
import type { TxtLookup } from './dns.js'

/** Cross-instance drops, applied here at once and on every instance through the bus. */
export interface Invalidations {
  domain(name: string): Promise<void>
  access(username: string): Promise<void>
  primary(username: string, project: string): Promise<void>
}

export interface DomainView {
  domain: string
  project: string
  verified: boolean
  verified_at: string | null
  created_at: string
  primary: boolean
  lost_at: string | null
  verification: { type: 'TXT'; name: string; value: string }
  /** https://{domain}/ once verified, else null. */
  site_url: string | null
}

export const domainView = (d: DomainRow): DomainView => ({
  domain: d.name,
  project: d.project,
  verified: d.verified_at !== null,
  verified_at: d.verified_at === null ? null : new Date(Number(d.verified_at)).toISOString(),
  created_at: new Date(Number(d.created_at)).toISOString(),
  primary: Number(d.is_primary) === 1,
  lost_at: d.lost_at === null ? null : new Date(Number(d.lost_at)).toISOString(),
  verification: { type: 'TXT', name: challengeName(d.name), value: challengeValue(d.token) },
  site_url: d.verified_at === null ? null : `https://${d.name}/`,
})

export interface AccessView {
  name: string
  password: boolean
  expires_at: string | null
  expired: boolean
  updated_at: string
}

export const accessView = (a: AccessRow, now: number): AccessView => ({
  name: a.name,
  password: a.password_hash !== null,
  expires_at: a.expires_at === null ? null : new Date(Number(a.expires_at)).toISOString(),
  expired: a.expires_at !== null && Number(a.expires_at) <= now,
  updated_at: new Date(Number(a.updated_at)).toISOString(),
})

interface Owner {
  id: string
  username: string
}

const NAME_MAX = 255
/** What SITE_TARGET_NOT_FOUND's {what} names, in both languages. */
const PROJECT: Text = { zh: '项目', en: 'project' }
const PROJECT_OR_PAGE: Text = { zh: '项目或页面', en: 'project or page' }

/** Custom domains and visitor access of a user's projects and pages. */
export function createDomainService(deps: Deps, txt: TxtLookup, inv: Invalidations) {
  const store = createDomainsStore(deps.db)
  const { config, clock } = deps
  const ownHosts = [config.publicUrl ? hostName(new URL(config.publicUrl).host) : null].filter((h): h is string => h !== null)

  const domainName = (input: unknown): string => {
    const p = parseDomain(input)
    if (!p.ok) throw new AppError('DOMAIN_INVALID', { params: { detail: p.reason } })
    return p.name
  }
  const nameParam = (input: unknown, what: string): string => {
    if (typeof input !== 'string' || input === '' || Buffer.byteLength(input) > NAME_MAX || input.includes('/')) {
      throw new AppError('ACCESS_INVALID', {
        params: { detail: { zh: `${what} 须为项目或页面的名称`, en: `${what} must be a project or page name` }, field: what },
      })
    }
    return input.normalize('NFC')
  }
  const mine = async (user: Owner, name: string) => {
    const d = await store.domain(user.id, name)
    if (!d) throw new AppError('DOMAIN_NOT_FOUND')
    return d
  }

  return {
    store,
    /** Domains one account may add (DOMAINS_PER_USER). */
    limit: config.domainsPerUser,
    list: (user: Owner) => store.domains(user.id),

    /**
     * Attaches a domain, unverified, with this account's own token for the name (the same one
     * every time this account adds it; another account's is another). A name another account
     * holds verified can be added too: verifying it with this token takes it (decision 90).
     */
    async add(user: Owner, body: { domain?: unknown; project?: unknown }): Promise<{ row: DomainRow; heldByOther: boolean }> {
      const name = domainName(body.domain)
      const cd = config.contentDomain ?? (config.contentDomainAuto ? 'localhost' : null)
      if (ownHosts.includes(name) || (cd !== null && (name === cd || name.endsWith(`.${cd}`))) || name === 'localhost' || name.endsWith('.localhost')) {
        throw new AppError('DOMAIN_INVALID', { params: { detail: { zh: `${name} 属于本服务`, en: `${name} belongs to this service` } } })
      }
      if (typeof body.project !== 'string' || body.project === '') {
        throw new AppError('DOMAIN_INVALID', {
          params: { detail: { zh: '缺少 project，须为你的一个文件夹项目的名称', en: 'send "project", the name of one of your folder projects' } },
        })
      }
      // U+0000 cannot be stored, nor looked up on PostgreSQL: one 1106 on both engines
      if (body.project.includes('\u0000')) throw unstorable()
      const project = body.project.normalize('NFC')
      if (!(await store.projectExists(user.id, project))) throw new AppError('SITE_TARGET_NOT_FOUND', { params: { name: project, what: PROJECT } })
      const existing = await store.domain(user.id, name)
      if (existing) throw new AppError('DOMAIN_EXISTS', { params: { project: existing.project } })
      if ((await store.count(user.id)) >= config.domainsPerUser) throw new AppError('DOMAIN_LIMIT', { params: { limit: config.domainsPerUser } })
      const row: DomainRow = {
        id: crypto.randomUUID(),
        user_id: user.id,
        name,
        project,
        // the same name added again by this account keeps its token (DNS set up once keeps working)
        token: await store.tokenFor(user.id, name, crypto.randomBytes(16).toString('hex')),
        verified_at: null,
        created_at: clock.now(),
        is_primary: 0,
        lost_at: null,
      }
      try {
        // the count read above refuses cheaply; this takes the place exactly (concurrent adds)
        if ((await store.insert(row, config.domainsPerUser)) !== null) throw new AppError('DOMAIN_LIMIT', { params: { limit: config.domainsPerUser } })
      } catch (e) {
        if (e instanceof AppError) throw e
        // a concurrent add of the same name by this user
        if ((await store.domain(user.id, name)) !== undefined) throw new AppError('DOMAIN_EXISTS', { params: { project } })
        throw e
      }
      return { row, heldByOther: await store.heldByOther(user.id, name) }
    },

    /**
     * Looks the TXT record up now; verified rows stay verified (a second call re-checks
     * nothing). This account's own token proves control of the name now: if another account
     * held it verified, it moves here (theirs stays, unverified, lost_at set, not primary),
     * and every cache of the host and of that account's primary domain is dropped on every
     * instance before this returns (decision 90).
     */
    async verify(user: Owner, input: unknown): Promise<DomainRow> {
      const d = await mine(user, domainName(input))
      if (d.verified_at !== null) return d
      const record = `${challengeName(d.name)} TXT "${challengeValue(d.token)}"`
      const answer = await txt(challengeName(d.name))
      if (!answer.ok) throw new AppError('DOMAIN_NOT_VERIFIED', { params: { detail: answer.reason, record } })
      if (!answer.values.includes(challengeValue(d.token))) {
        const where = challengeName(d.name)
        const detail: Text =
          answer.values.length === 0
            ? { zh: `${where} 处没有找到 TXT 记录`, en: `no TXT record found at ${where}` }
            : { zh: `${where} 处有 TXT 记录，但不是 ${challengeValue(d.token)}`, en: `TXT found, but not ${challengeValue(d.token)} at ${where}` }
        throw new AppError('DOMAIN_NOT_VERIFIED', { params: { detail, record } })
      }
      const at = clock.now()
      let lost: Awaited<ReturnType<typeof store.claim>>
      try {
        lost = await store.claim(d, at)
      } catch (e) {
        // the partial unique index: another account verified it in the same moment
        if (await store.heldByOther(user.id, d.name)) throw new AppError('DOMAIN_TAKEN')
        throw e
      }
      if (lost === null) throw new AppError('DOMAIN_NOT_FOUND')
      await inv.domain(d.name)
      for (const l of lost) if (Number(l.is_primary) === 1) await inv.primary(l.username, l.project)
      return { ...d, verified_at: at, lost_at: null }
    },

    /**
     * Makes a verified domain its project's primary one (the project's other domains stop
     * being primary), or stops it being primary: browsers opening the project's other URLs
     * are sent to its primary domain (decision 76).
     */
    async setPrimary(user: Owner & { username: string }, input: unknown, primary: boolean): Promise<DomainRow> {
      const d = await mine(user, domainName(input))
      if (primary && d.verified_at === null) {
        throw new AppError('DOMAIN_NOT_VERIFIED', {
          params: {
            detail: { zh: `${d.name} 尚未验证，不能设为主域名`, en: `${d.name} is not verified yet, so it cannot be primary` },
            record: `${challengeName(d.name)} TXT "${challengeValue(d.token)}"`,
          },
        })
      }
      await store.setPrimary(d, primary)
      await inv.primary(user.username, d.project)
      return { ...d, is_primary: primary ? 1 : 0 }
    },

    async remove(user: Owner, input: unknown): Promise<void> {
      const name = domainName(input)
      const d = await store.domain(user.id, name)
      if (!(await store.remove(user.id, name))) throw new AppError('DOMAIN_NOT_FOUND')
      await inv.domain(name)
      if (d !== undefined && Number(d.is_primary) === 1) await inv.primary(user.username, d.project)
    },

    listAccess: (user: Owner) => store.accessList(user.id),
    /** A setting as the API answers it, `expired` by the service's clock (never its hash). */
    accessView: (a: AccessRow): AccessView => accessView(a, clock.now()),

    /**
     * Sets a name's visitor access: `password` (a string sets it, null clears it, absent
     * keeps it) and `expires_at` (ISO 8601 or epoch ms; null clears; absent keeps).
     */
    async setAccess(user: Owner, rawName: unknown, body: Record<string, unknown>): Promise<AccessRow> {
      const name = nameParam(rawName, 'name')
      const unknown = unknownField(body, ['password', 'expires_at'])
      if (unknown) throw new AppError('ACCESS_INVALID', { params: { detail: unknown.detail, field: unknown.field } })
      // a setting that names neither would protect nothing (and change nothing): refused, as the CLI does
      if (body.password === undefined && body.expires_at === undefined) {
        throw new AppError('ACCESS_INVALID', {
          params: {
            detail: { zh: '请提供 password、expires_at 或两者（null 表示删除该项）', en: 'send password, expires_at or both (null removes one)' },
            field: 'password or expires_at',
          },
        })
      }
      let hash: string | null | undefined
      if (body.password === null) hash = null
      else if (body.password !== undefined) {
        const pw = body.password
        if (typeof pw !== 'string' || pw.length < 4 || Buffer.byteLength(pw) > MAX_PASSWORD_BYTES) {
          throw new AppError('ACCESS_INVALID', {
            params: {
              detail: {
                zh: `password 须为 4 个字符到 ${MAX_PASSWORD_BYTES} 字节的字符串，或为 null 以删除密码`,
                en: `password must be a string of 4 characters to ${MAX_PASSWORD_BYTES} bytes, or null to remove it`,
              },
              field: 'password',
            },
          })
        }
        hash = await hashPassword(pw)
      }
      let expires: number | null | undefined
      if (body.expires_at === null) expires = null
      else if (body.expires_at !== undefined) {
        const v = body.expires_at
        const t = typeof v === 'number' ? v : typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(v) ? Date.parse(v) : NaN
        if (!Number.isSafeInteger(t) || t < 0 || t > 253402300799000) {
          throw new AppError('ACCESS_INVALID', {
            params: {
              detail: {
                zh: 'expires_at 须为带时区的 ISO 8601 时间（如 2026-12-31T23:00:00Z）、毫秒时间戳，或为 null',
                en: 'expires_at must be an ISO 8601 time with a zone (2026-12-31T23:00:00Z), epoch milliseconds, or null',
              },
              field: 'expires_at',
            },
          })
        }
        expires = t
      }
      if (!(await store.projectExists(user.id, name)) && !(await store.pageExists(user.id, name))) {
        throw new AppError('SITE_TARGET_NOT_FOUND', { params: { name, what: PROJECT_OR_PAGE } })
      }
      const now = clock.now()
      const cur = await store.access(user.id, name)
      let row: AccessRow
      if (!cur) {
        row = {
          id: crypto.randomUUID(),
          user_id: user.id,
          name,
          password_hash: hash ?? null,
          expires_at: expires ?? null,
          secret: crypto.randomBytes(32).toString('base64url'),
          created_at: now,
          updated_at: now,
        }
        try {
          await store.insertAccess(row)
        } catch (e) {
          if (!(await store.access(user.id, name))) throw e
          return this.setAccess(user, name, body)
        }
      } else {
        const v: Partial<AccessRow> = { updated_at: now }
        if (hash !== undefined) {
          v.password_hash = hash
          v.secret = crypto.randomBytes(32).toString('base64url')
        }
        if (expires !== undefined) v.expires_at = expires
        await store.updateAccess(cur.id, v)
        row = { ...cur, ...v }
      }
      await inv.access(user.username)
      return row
    },

    async removeAccess(user: Owner, rawName: unknown): Promise<void> {
      const name = nameParam(rawName, 'name')
      if (!(await store.removeAccess(user.id, name))) throw new AppError('ACCESS_NOT_FOUND', { params: { name } })
      await inv.access(user.username)
    },
  }
}
export type DomainService = ReturnType<typeof createDomainService>
