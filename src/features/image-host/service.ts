import type { Deps } from '../../deps.js'
import type { User } from '../../auth/users.js'
import { AppError } from '../../errors/app-error.js'
import { newId, newPublicToken } from '../../auth/tokens.js'
import { quotaOf } from '../../limits/quotas.js'
import { beijingTime } from '../../util/time.js'
import { isWellFormed, stripInvisible } from '../../util/unicode.js'
import type { Page } from '../../http/pagination.js'
import { prepareImage } from './inspect.js'
import { createImageStore, type ImageRow, type PublicImage } from './store.js'
import { createInvalidatedCache } from '../../infra/invalidated-cache.js'
import { createAbuse, targetKey } from '../abuse/service.js'
import { takenDown } from '../abuse/public.js'
import { refuseBlocked, refuseHeld } from '../abuse/store.js'
import { BUS_CHANNEL } from './channel.js'
import { withBlobLease } from '../../storage/leases.js'
import { sizeText } from '../../util/sizes.js'

export const FEATURE = 'image-host'
/** Files one upload request may carry. */
export const MAX_FILES_PER_UPLOAD = 20
/** Public tokens: URL-safe, 16 to 64 characters (ours are 22). */
export const TOKEN_RE = /^[A-Za-z0-9_-]{16,64}$/
const CACHE_ENTRIES = 10_000
const CACHE_TTL_MS = 5_000
const REMARK_MAX = 500
const NAME_MAX = 255

/** An uploaded file as the routes hand it over: read() refuses more than maxBytes. */
export interface IncomingFile {
  fileName: string
  read(maxBytes: number): Promise<Buffer>
}

export interface UploadOptions {
  remark?: string
  keepMetadata: boolean
}

/** The JSON form of an image (decisions.md fields, plus width, height, updated_at, versioned_url). */
export function imageView(r: ImageRow, origin: string) {
  const publicUrl = `${origin}/svc-img/pub/${r.public_token}`
  return {
    public_token: r.public_token,
    public_url: publicUrl,
    versioned_url: `${publicUrl}?v=${versionOf(r.digest)}`,
    file_name: r.file_name,
    size: r.size,
    content_type: r.content_type,
    width: r.width,
    height: r.height,
    remark: r.remark,
    locked: r.locked === 1,
    created_at: beijingTime(r.created_at),
    updated_at: beijingTime(r.updated_at),
  }
}
export type ImageView = ReturnType<typeof imageView>

/** The content version named in versioned URLs (?v=): a prefix of the blob digest. */
export const versionOf = (digest: string) => digest.slice(0, 16)

/**
 * File names are metadata only: no directories, at most 255 characters, and none of the
 * characters site paths refuse (C0/C1 controls, bidi overrides, zero-width: stripInvisible),
 * so a name shown in the dashboard or a listing reads as what it is.
 */
export function cleanFileName(name: string | undefined): string {
  const base = (name ?? '').normalize('NFC').split(/[\\/]/).pop() ?? ''
  const clean = stripInvisible(base)
    .trim()
    .slice(0, NAME_MAX)
    // a cut through a surrogate pair would leave a lone high surrogate: drop it
    .replace(/[\uD800-\uDBFF]$/, '')
  return clean || 'image'
}

function checkText(value: string, field: string, max: number): string {
  if (value.includes('\u0000'))
    throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: `${field} 不能包含 NUL 字符`, en: `${field} must not contain NUL characters` } } })
  if (!isWellFormed(value))
    throw new AppError('INVALID_PARAMETER', {
      params: { detail: { zh: `${field} 不能包含孤立的 UTF-16 代理项`, en: `${field} must not contain a lone UTF-16 surrogate` } },
    })
  if (value.length > max)
    throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: `${field} 超过 ${max} 个字符`, en: `${field} is longer than ${max} characters` } } })
  return value
}

function quotas(limits: string | Record<string, number>) {
  return {
    maxImages: quotaOf(limits, 'images'),
    maxTotalBytes: quotaOf(limits, 'image_bytes'),
    maxImageBytes: quotaOf(limits, 'image_max_bytes'),
  }
}

const tooLarge = (limit: number) => new AppError('FILE_TOO_LARGE', { params: { limit }, status: 413 })
const countQuota = (used: number, limit: number) =>
  new AppError('QUOTA_EXCEEDED', {
    params: { detail: { zh: `图片数量已达上限（已有 ${used} 张，上限 ${limit} 张）`, en: `image count limit reached (${used} of ${limit} images)` } },
  })
const bytesQuota = (used: number, adding: number, limit: number) =>
  new AppError('QUOTA_EXCEEDED', {
    params: {
      detail: {
        zh: `图片总大小超过上限 ${sizeText(limit).zh}（已用 ${used} 字节，本次 ${adding} 字节）`,
        en: `total image size limit of ${sizeText(limit).en} reached (${used} bytes used, ${adding} bytes more)`,
      },
    },
  })

/**
 * The image host's rules: entitlement status, quotas (read from the usage counters before
 * the blobs are written, and taken in the write transaction), blob-first writes, and the public token -> blob cache
 * that replace and delete invalidate on every instance through the bus.
 */
export function createImageHost(deps: Deps) {
  const { db, blobs, bus, clock } = deps
  const store = createImageStore(db)

  // token -> (digest, type, size), dropped on every instance by a replace or delete (a message
  // is the token); a lookup that raced with one never caches what it read before the change.
  // Entries live CACHE_TTL_MS: the bound on what a change made elsewhere takes to show (an
  // account disabled from the admin console or the CLI), as the hosted-data links' cache does
  const cache = createInvalidatedCache<string, ServedImage & { at: number }>({
    bus,
    channel: BUS_CHANNEL,
    maxEntries: CACHE_ENTRIES,
    isFresh: (e) => {
      const age = clock.now() - e.at
      return age <= CACHE_TTL_MS && age >= 0
    },
  })
  const invalidate = (token: string): Promise<void> => cache.publish(token)

  const notFound = () => new AppError('RESOURCE_NOT_FOUND')

  /** Reads, checks and stores (blob only) one file; the row is written by the caller. */
  async function ingest(file: IncomingFile, maxImageBytes: number, keepMetadata: boolean) {
    const raw = await file.read(maxImageBytes)
    const prepared = await prepareImage(raw, keepMetadata)
    if (prepared.bytes.length > maxImageBytes) throw tooLarge(maxImageBytes)
    // put refuses taken-down bytes; bytes kept with their metadata are refused too when their
    // metadata-free form was taken down (the form the same upload would store without it)
    if (prepared.plainDigest) await blobs.admit?.([prepared.plainDigest])
    return prepared
  }

  return {
    store,

    async status(user: User) {
      const entitled = await store.hasEntitlement(user.id, FEATURE)
      const q = quotas(user.limits)
      const used = await store.usage(user.id)
      return {
        success: true as const,
        entitled,
        quota: { max_images: q.maxImages, used_images: used.count, max_total_bytes: q.maxTotalBytes, used_bytes: used.bytes, max_image_bytes: q.maxImageBytes },
      }
    },

    /**
     * Stores every file of one request, or none: a refused file (type, size, quota) fails the
     * whole request and no row is written. Quotas are checked before each blob is written
     * (so a refused upload normally writes nothing) and again in the transaction.
     */
    async upload(user: User, files: AsyncIterable<IncomingFile>, opts: () => UploadOptions, origin: string): Promise<ImageView[]> {
      // the lease spares the images stored as the body arrives until the rows commit
      // (a slow body of many files can outlast the sweeper's grace: 313)
      return withBlobLease(db, async (lease) => {
        const q = quotas(user.limits)
        const before = await store.usage(user.id)
        const now = clock.now()
        const rows: ImageRow[] = []
        const checked: string[] = []
        let adding = 0
        for await (const file of files) {
          if (rows.length >= MAX_FILES_PER_UPLOAD)
            throw new AppError('TOO_MANY_PARTS', {
              params: { detail: { zh: `每次上传最多 ${MAX_FILES_PER_UPLOAD} 个文件`, en: `at most ${MAX_FILES_PER_UPLOAD} files per upload` } },
            })
          const o = opts()
          const remark = checkText(o.remark ?? '', 'remark', REMARK_MAX)
          const fileName = cleanFileName(file.fileName)
          const p = await ingest(file, q.maxImageBytes, o.keepMetadata)
          if (before.count + rows.length + 1 > q.maxImages) throw countQuota(before.count + rows.length, q.maxImages)
          if (before.bytes + adding + p.bytes.length > q.maxTotalBytes) throw bytesQuota(before.bytes + adding, p.bytes.length, q.maxTotalBytes)
          await lease.take()
          const blob = await blobs.put(p.bytes)
          // the digests put and admit asked the blocklist about, asked again under the lock
          checked.push(blob.digest, ...(p.plainDigest ? [p.plainDigest] : []))
          adding += blob.size
          rows.push({
            id: newId(),
            user_id: user.id,
            public_token: newPublicToken(),
            file_name: fileName,
            remark,
            content_type: p.contentType,
            size: blob.size,
            digest: blob.digest,
            width: p.width,
            height: p.height,
            locked: 0,
            created_at: now + rows.length,
            updated_at: now + rows.length,
          })
        }
        if (rows.length === 0) throw new AppError('NO_FILE')
        lease.check()
        await db.k.transaction().execute(async (trx) => {
          await db.lockUser(trx, user.id)
          await refuseBlocked(trx, checked)
          const fresh = quotas(await store.userLimits(trx, user.id))
          for (const r of rows) if (r.size > fresh.maxImageBytes) throw tooLarge(fresh.maxImageBytes)
          const over = await store.insert(trx, user.id, rows, { images: fresh.maxImages, bytes: fresh.maxTotalBytes })
          if (over?.over === 'count') throw countQuota(over.used, fresh.maxImages)
          if (over?.over === 'bytes') throw bytesQuota(over.used, adding, fresh.maxTotalBytes)
        })
        return rows.map((r) => imageView(r, origin))
      })
    },

    async list(user: User, page: Page, origin: string) {
      const [rows, used, held] = await Promise.all([
        store.list(user.id, page.offset, page.perPage),
        store.usage(user.id),
        deps.services.get(createAbuse).quarantinedLinks('image'),
      ])
      return { images: rows.map((r) => ({ ...imageView(r, origin), ...(held(r.public_token) ? { quarantined: true as const } : {}) })), total: used.count }
    },

    async get(user: User, token: string): Promise<ImageRow> {
      const row = TOKEN_RE.test(token) ? await store.get(user.id, token) : undefined
      if (!row) throw notFound()
      return row
    },

    async update(user: User, token: string, body: { remark?: string; file_name?: string }, origin: string): Promise<ImageView> {
      const set: { remark?: string; file_name?: string } = {}
      if (body.remark !== undefined) set.remark = checkText(body.remark, 'remark', REMARK_MAX)
      if (body.file_name !== undefined) {
        checkText(body.file_name, 'file_name', NAME_MAX)
        set.file_name = cleanFileName(body.file_name)
      }
      if (Object.keys(set).length === 0)
        throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: '请发送 remark 或 file_name', en: 'send remark and/or file_name' } } })
      if (!TOKEN_RE.test(token) || !(await store.updateMeta(user.id, token, set, clock.now()))) throw notFound()
      return imageView(await this.get(user, token), origin)
    },

    /** New bytes behind the same token; the public link serves them on the next request, on every instance. */
    async replace(user: User, token: string, files: AsyncIterable<IncomingFile>, opts: () => UploadOptions, origin: string): Promise<ImageView> {
      const existing = await this.get(user, token)
      const q = quotas(user.limits)
      let prepared: Awaited<ReturnType<typeof ingest>> | null = null
      let fileName = ''
      for await (const file of files) {
        if (prepared) throw new AppError('TOO_MANY_PARTS', { params: { detail: { zh: '替换只接受一个文件', en: 'replace takes exactly one file' } } })
        fileName = cleanFileName(file.fileName)
        prepared = await ingest(file, q.maxImageBytes, opts().keepMetadata)
        const used = await store.usage(user.id)
        if (used.bytes - existing.size + prepared.bytes.length > q.maxTotalBytes)
          throw bytesQuota(used.bytes - existing.size, prepared.bytes.length, q.maxTotalBytes)
      }
      if (!prepared) throw new AppError('NO_FILE')
      const blob = await blobs.put(prepared.bytes)
      const p = prepared
      const row = await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        await refuseBlocked(trx, [blob.digest, ...(p.plainDigest ? [p.plainDigest] : [])])
        const current = await store.get(user.id, token, trx)
        if (!current) throw notFound()
        // a link held for review keeps the bytes the admin holds (decision 168)
        await refuseHeld(trx, targetKey({ kind: 'image', token }))
        const fresh = quotas(await store.userLimits(trx, user.id))
        if (blob.size > fresh.maxImageBytes) throw tooLarge(fresh.maxImageBytes)
        const used = await store.resize(trx, user.id, blob.size - current.size, fresh.maxTotalBytes)
        if (used !== null) throw bytesQuota(used - current.size, blob.size, fresh.maxTotalBytes)
        const set = {
          digest: blob.digest,
          size: blob.size,
          content_type: p.contentType,
          width: p.width,
          height: p.height,
          file_name: fileName,
          updated_at: Math.max(clock.now(), current.updated_at + 1),
        }
        await store.replaceContent(trx, current.id, set)
        return { ...current, ...set }
      })
      await invalidate(token)
      return imageView(row, origin)
    },

    async remove(user: User, token: string): Promise<void> {
      const r = TOKEN_RE.test(token) ? await store.remove(user.id, token) : 'missing'
      if (r === 'missing') throw notFound()
      if (r === 'locked') throw new AppError('LOCKED')
      // the blob stays until the sweeper finds no row pointing to it (another image may share it)
      await invalidate(token)
    },

    /** Public link lookup from memory only (the hot path); undefined: not cached, ask lookup. */
    peek: (token: string): ServedImage | undefined => cache.get(token),

    /**
     * Public link lookup: memory first, then one indexed query; `blocked` when the bytes were
     * taken down, whatever image they were taken down as (a takedown or lift drops every
     * cached link: abuse/service.ts).
     */
    async lookup(token: string): Promise<ServedImage | undefined> {
      const hit = cache.get(token)
      if (hit) return hit
      const seen = cache.ticket()
      const row = await store.publicGet(token)
      if (!row) return undefined
      const img = { ...row, blocked: await takenDown(deps, row.digest) }
      cache.set(token, { ...img, at: clock.now() }, seen)
      return img
    },
  }
}

export type ImageHost = ReturnType<typeof createImageHost>

/** What a public link serves; `blocked`: its bytes were taken down, the link answers 451. */
export interface ServedImage extends PublicImage {
  blocked: boolean
}

/** Strong ETag of an original: its content digest. */
export const originalEtag = (digest: string) => `"${digest}"`
