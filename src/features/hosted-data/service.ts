import type { Deps } from '../../deps.js'
import type { User } from '../../auth/users.js'
import type { Trx } from '../../db/kysely.js'
import { AppError } from '../../errors/app-error.js'
import type { Text } from '../../errors/text.js'
import { newId, newPublicToken, sha256hex } from '../../auth/tokens.js'
import { quotaOf } from '../../limits/quotas.js'
import { isoMicros } from '../../util/time.js'
import { createHostedStore, type FileRow, type VersionPick, type VersionRow } from './store.js'
import { createHostedDataCache, type ServedEntry } from './cache.js'
import { checkContent } from './content.js'
import { collectKeyTokens, keyLeaks } from '../../auth/key-leaks.js'
import { createAbuse, targetKey } from '../abuse/service.js'
import { takenDown } from '../abuse/public.js'
import { refuseBlocked, refuseHeld } from '../abuse/store.js'

/** One version's content, already read (bounded by the per-version limit) and typed. */
export interface Upload {
  bytes: Buffer
  contentType: string
}

export const PUBLIC_PREFIX = '/svc-data/pub/'
export const PUBLIC_TOKEN_RE = /^[A-Za-z0-9]{16,64}$/

const notFound = () => new AppError('RESOURCE_NOT_FOUND')
const quotaFull = (detail: Text) => new AppError('QUOTA_EXCEEDED', { params: { detail } })
/** Versions are SQL `integer` columns: a larger number names no version (and PostgreSQL refuses it). */
export const MAX_VERSION = 2 ** 31 - 1
/** The refusal of a version number the file does not have (400, or 404 where the URL names it). */
const noVersion = (version: number, status?: number) =>
  new AppError('INVALID_PARAMETER', { params: { detail: { zh: `版本 ${version} 不存在`, en: `version ${version} does not exist` } }, status })

/** Per-version size limit of a user (quota hosted_file_bytes). */
export const maxFileBytes = (user: User): number => quotaOf(user.limits, 'hosted_file_bytes')

/** The 413 refusal of content over the per-version limit. */
export const tooLarge = (limit: number) => new AppError('FILE_TOO_LARGE', { params: { limit }, status: 413 })

const etagOf = (digest: string, contentType: string) => `"${digest.slice(0, 48)}.${sha256hex(contentType).slice(0, 8)}"`

/**
 * Hosted data rules: entitlement status and quotas, files with numbered versions, a default
 * version served by the file's public link, locking, and the public link's cached lookup.
 * No Fastify here; routes parse requests into these calls. One per Deps:
 * `deps.services.get(createHostedData)` (its public-link cache listens on the bus).
 */
export function createHostedData(deps: Deps) {
  const { db, blobs, clock } = deps
  const store = createHostedStore(db.k)
  const cache = createHostedDataCache(deps.bus, clock)

  const present = (f: FileRow, origin: string) => ({
    id: f.id,
    display_name: f.display_name,
    description: f.description,
    content_type: f.content_type,
    size: f.size,
    public_url: `${origin}${PUBLIC_PREFIX}${f.public_token}`,
    public_token: f.public_token,
    default_version: f.default_version,
    // the newest version that exists, so `?v=latest_version` always answers (not the counter)
    latest_version: f.newest_version,
    version_count: f.version_count,
    locked: f.locked === 1,
    created_at: isoMicros(f.created_at),
    updated_at: isoMicros(f.updated_at),
  })

  const presentVersion = (v: Omit<VersionRow, 'digest'>, f: Pick<FileRow, 'default_version' | 'public_token'>, origin: string) => ({
    version: v.version,
    size: v.size,
    content_type: v.content_type,
    created_at: isoMicros(v.created_at),
    is_default: v.version === f.default_version,
    url: `${origin}${PUBLIC_PREFIX}${f.public_token}?v=${v.version}`,
  })

  /**
   * Stores the bytes (content-addressed, fsynced) before any row points to them. Bytes holding
   * a live API key that can write are refused first (1444): the public link would show it to
   * anyone, as a site's page would (decision 223). `name`: the file's, for the refusal.
   */
  const putBlob = async (user: User, u: Upload, name: string) => {
    const limit = maxFileBytes(user)
    if (u.bytes.length > limit) throw tooLarge(limit)
    checkContent(u.bytes, u.contentType)
    const keyTokens = new Set<string>()
    collectKeyTokens(u.bytes, keyTokens)
    const leak = (await keyLeaks(deps.apiKeys, user.id, [{ name, keyTokens }])).get(name)
    if (leak) throw leak
    return blobs.put(u.bytes, { maxBytes: limit, tooLarge })
  }

  const details = async (user: User, fileId: string, origin: string) => {
    const f = await store.file(user.id, fileId)
    if (!f) throw notFound()
    const versions = await store.versions(f.id)
    return { ...present(f, origin), versions: versions.map((v) => presentVersion(v, f, origin)) }
  }

  /**
   * The hold key of a file's public link: a link held for review refuses the writes that change
   * what it serves (a new version, a default switch), under the user's lock (decision 168).
   */
  const heldKey = (f: FileRow) => targetKey({ kind: 'data', token: f.public_token })

  /** Runs a write on one of the user's files inside a transaction holding the user's lock. */
  const onFile = async <T>(user: User, fileId: string, fn: (trx: Trx, f: FileRow) => Promise<T>) => {
    const out = await db.k.transaction().execute(async (trx) => {
      await db.lockUser(trx, user.id)
      const f = await store.file(user.id, fileId, trx)
      if (!f) throw notFound()
      return { f, r: await fn(trx, f) }
    })
    await cache.invalidate(out.f.public_token)
    return out.r
  }

  return {
    cache,

    async status(user: User) {
      const ent = await db.k.selectFrom('entitlements').select('feature').where('user_id', '=', user.id).where('feature', '=', 'hosted-data').executeTakeFirst()
      return {
        success: true,
        entitled: ent !== undefined,
        quota: {
          max_files: quotaOf(user.limits, 'hosted_files'),
          used_files: await store.countFiles(db.k, user.id),
          max_file_bytes: maxFileBytes(user),
          max_versions: quotaOf(user.limits, 'hosted_versions'),
        },
      }
    },

    async list(user: User, origin: string) {
      const [rows, held] = await Promise.all([store.list(user.id), deps.services.get(createAbuse).quarantinedLinks('data')])
      return {
        success: true,
        files: rows.map((f) => ({ ...present(f, origin), ...(held(f.public_token) ? { quarantined: true as const } : {}) })),
        total: rows.length,
      }
    },

    async details(user: User, fileId: string, origin: string) {
      return { success: true, file: await details(user, fileId, origin) }
    },

    async create(user: User, input: { displayName: string; description: string; upload: Upload }, origin: string) {
      const max = quotaOf(user.limits, 'hosted_files')
      const full = (used: number) => quotaFull({ zh: `托管数据文件数已达上限（${used}/${max}）`, en: `hosted data files ${used}/${max}` })
      // read before the bytes are stored (a refused upload stores nothing), and taken,
      // authoritatively, in the transaction that inserts the file
      const used = await store.countFiles(db.k, user.id)
      if (used >= max) throw full(used)
      const blob = await putBlob(user, input.upload, input.displayName)
      const now = clock.now()
      const id = newId()
      await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        // put's check asked again under the lock: bytes taken down meanwhile are not stored
        await refuseBlocked(trx, [blob.digest])
        const refused = await store.insertFile(
          trx,
          {
            id,
            user_id: user.id,
            public_token: newPublicToken(),
            display_name: input.displayName,
            description: input.description,
            default_version: 1,
            latest_version: 1,
            locked: 0,
            created_at: now,
            updated_at: now,
          },
          max,
        )
        if (refused !== null) throw full(refused)
        await store.insertVersion(
          trx,
          user.id,
          {
            file_id: id,
            version: 1,
            digest: blob.digest,
            size: blob.size,
            content_type: input.upload.contentType,
            created_at: now,
          },
          null,
        )
      })
      return { success: true, file: await details(user, id, origin) }
    },

    /** The type of a file's default version (a new version keeps it unless it declares one). */
    async currentType(user: User, fileId: string): Promise<string> {
      const f = await store.file(user.id, fileId)
      if (!f) throw notFound()
      return f.content_type
    },

    async addVersion(user: User, fileId: string, input: { upload: Upload; setDefault: boolean }, origin: string) {
      const max = quotaOf(user.limits, 'hosted_versions')
      const full = (used: number) =>
        quotaFull({ zh: `此文件的版本数已达上限（${used}/${max}），请先删除旧版本`, en: `versions of this file ${used}/${max}; delete an old version first` })
      // a missing file or a full version quota is refused before the bytes are stored
      const existing = await store.file(user.id, fileId)
      if (!existing) throw notFound()
      const used = await store.countVersions(db.k, user.id, existing.id)
      if (used >= max) throw full(used)
      const blob = await putBlob(user, input.upload, existing.display_name)
      const now = clock.now()
      const version = await onFile(user, fileId, async (trx, f) => {
        await refuseBlocked(trx, [blob.digest])
        await refuseHeld(trx, heldKey(f))
        const version = f.latest_version + 1
        const refused = await store.insertVersion(
          trx,
          user.id,
          { file_id: f.id, version, digest: blob.digest, size: blob.size, content_type: input.upload.contentType, created_at: now },
          max,
        )
        if (refused !== null) throw full(refused)
        await store.updateFile(trx, f.id, { latest_version: version, updated_at: now, ...(input.setDefault ? { default_version: version } : {}) })
        return version
      })
      // `version` is the one this request created: the file's latest_version may already be
      // another request's (concurrent pushes), and a script pins what it pushed with ?v=N
      const file = await details(user, fileId, origin)
      const created = { version, size: blob.size, content_type: input.upload.contentType, created_at: now }
      return { success: true, file, version: presentVersion(created, file, origin) }
    },

    async setDefault(user: User, fileId: string, version: number, origin: string) {
      // a version whose bytes were taken down is never made the default (451 / 1701): asked
      // before, and again under the user's lock (a takedown in between)
      const digest = await store.versionDigest(db.k, user.id, fileId, version)
      if (digest !== undefined) await blobs.admit?.([digest])
      await onFile(user, fileId, async (trx, f) => {
        if (digest !== undefined) await refuseBlocked(trx, [digest])
        await refuseHeld(trx, heldKey(f))
        if (!(await store.hasVersion(trx, f.id, version))) throw noVersion(version)
        if (f.default_version !== version) await store.updateFile(trx, f.id, { default_version: version, updated_at: clock.now() })
      })
      return { success: true, file: await details(user, fileId, origin) }
    },

    async updateMeta(user: User, fileId: string, patch: { displayName?: string; description?: string }, origin: string) {
      await onFile(user, fileId, async (trx, f) => {
        await store.updateFile(trx, f.id, {
          ...(patch.displayName !== undefined ? { display_name: patch.displayName } : {}),
          ...(patch.description !== undefined ? { description: patch.description } : {}),
          updated_at: clock.now(),
        })
      })
      return { success: true, file: await details(user, fileId, origin) }
    },

    async remove(user: User, fileId: string) {
      await onFile(user, fileId, async (trx, f) => {
        if (f.locked) throw new AppError('LOCKED')
        await store.deleteFile(trx, user.id, f.id)
      })
    },

    async removeVersion(user: User, fileId: string, version: number, origin: string) {
      await onFile(user, fileId, async (trx, f) => {
        if (f.locked) throw new AppError('LOCKED')
        if (version > MAX_VERSION || !(await store.hasVersion(trx, f.id, version))) throw noVersion(version, 404)
        if (version === f.default_version)
          throw new AppError('INVALID_PARAMETER', {
            params: { detail: { zh: '不能删除默认版本，请先切换默认版本', en: 'the default version cannot be deleted; switch the default first' } },
            status: 409,
          })
        await store.deleteVersion(trx, user.id, f.id, version)
        await store.updateFile(trx, f.id, { updated_at: clock.now() })
      })
      return { success: true, file: await details(user, fileId, origin) }
    },

    /**
     * The version a public link serves (default, ?v=latest, or pinned with ?v=N), from the cache when
     * possible; `blocked` when its bytes were taken down, whatever file they were taken down in
     * (a takedown or lift drops every cached link: abuse/service.ts).
     */
    async resolve(token: string, version: VersionPick): Promise<ServedEntry | undefined> {
      const hit = cache.get(token, version)
      if (hit) return hit
      const gen = cache.generation()
      const e = await store.publicEntry(token, version)
      if (!e) return undefined
      // a link whose version can change (default, latest) dates from the file's last change too
      const modified = typeof version === 'number' ? e.created_at : Math.max(e.created_at, e.file_updated_at)
      const entry: ServedEntry = {
        ...e,
        etag: etagOf(e.digest, e.content_type),
        lastModifiedSec: Math.floor(modified / 1000),
        blocked: await takenDown(deps, e.digest),
      }
      cache.set(gen, token, version, entry)
      return entry
    },
  }
}

export type HostedData = ReturnType<typeof createHostedData>
