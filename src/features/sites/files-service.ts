import type { Readable } from 'node:stream'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import type { Text } from '../../errors/text.js'
import { discardUpload, guardUpload } from '../../http/multipart.js'
import { newId } from '../../auth/tokens.js'
import { quotaOf } from '../../limits/quotas.js'
import type { User } from '../../auth/users.js'
import { isoMicros, beijingTime } from '../../util/time.js'
import { isWellFormed } from '../../util/unicode.js'
import { checkName, PAGE_EXTENSIONS } from './paths.js'
import { invalidateHosting } from './invalidate.js'
import { ContentWatcher, detectNonHtml } from './sniff.js'
import { keyLeaks } from '../../auth/key-leaks.js'
import { createFilesStore, type FileRow } from './files-store.js'
import { createAbuse } from '../abuse/service.js'
import { refuseBlocked, refuseHeld, siteHoldKey } from '../abuse/store.js'
import { scanAndWarn, type PageWarning } from './page-warnings.js'

export const API_VERSION = '1.1.2'
export const ALLOWED_EXTENSIONS = PAGE_EXTENSIONS
const PROJECT_NAME_MAX = 255
/** What FILE_TYPE_UNSUPPORTED names for a file name without a dot. */
const NO_EXTENSION: Text = { zh: '（无扩展名）', en: '(no extension)' }
const DESCRIPTION_MAX = 10_000

/** A file body already in the blob store, with what was seen on the way. */
export interface StagedUpload {
  digest: string
  size: number
  hasNul: boolean
  validUtf8: boolean
  head: Buffer
  /** Tokens shaped like an API key, for keyLeaks(). */
  keyTokens: string[]
}

export interface UploadInput {
  fileName: string
  staged: StagedUpload
  projectName?: string
  description?: string
}

export interface SingleFileRecord {
  file_name: string
  project_name: string
  file_size: number
  url: string
  created_at: string
  updated_at: string | null
  is_update: boolean
}

const hasExtension = (name: string) => ALLOWED_EXTENSIONS.some((e) => name.toLowerCase().endsWith(e))

/** Text fields: trimmed of nothing, refused with a clear 400 when they carry control characters (PostgreSQL refuses NUL). */
function checkText(name: string, v: string | undefined, max: number, allowNewlines: boolean): string | undefined {
  if (v === undefined) return undefined
  const bad = allowNewlines ? /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/ : /[\u0000-\u001f\u007f]/
  if (bad.test(v) || !isWellFormed(v))
    throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: `${name} 包含控制字符`, en: `${name} contains control characters` } } })
  if (v.length > max)
    throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: `${name} 超过 ${max} 个字符`, en: `${name} longer than ${max} characters` } } })
  return v
}

/** Single-file hosting rules: upload (create or update), configuration, list, delete. */
export function createFilesService(deps: Deps) {
  const { db, blobs, clock, config } = deps
  const store = createFilesStore(db)

  const urlOf = (origin: string, username: string, fileName: string) => `${origin}/${username}/${encodeURIComponent(fileName)}`

  return {
    store,

    /** Checks a file name before its bytes are stored; throws the error to answer. */
    checkFileName(fileName: string): string {
      const r = checkName(fileName)
      if (!r.ok) throw new AppError('INVALID_PATH', { params: { detail: r.reason } })
      if (!hasExtension(r.path)) {
        const dot = r.path.lastIndexOf('.')
        throw new AppError('FILE_TYPE_UNSUPPORTED', {
          params: { detected: dot > 0 ? r.path.slice(dot) : NO_EXTENSION, allowed: ALLOWED_EXTENSIONS.join(', ') },
        })
      }
      return r.path
    },

    /** Streams an upload into the blob store (bounded by MAX_UPLOAD_BYTES, checked while streaming). */
    async stage(stream: Readable): Promise<StagedUpload> {
      const max = config.maxUploadBytes
      const watcher = new ContentWatcher()
      const tooLarge = () => new AppError('FILE_TOO_LARGE', { params: { limit: max } })
      try {
        // a parser size-limit or malformed-body error reaches put() through the guarded stream
        const stored = await blobs.put(guardUpload(stream, watcher), { maxBytes: max, tooLarge })
        return { ...stored, hasNul: watcher.hasNul, validUtf8: watcher.validUtf8, head: watcher.head(), keyTokens: [...watcher.keyTokens] }
      } catch (e) {
        stream.resume()
        if ((e as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge()
        throw e
      }
    },

    /** Drains an upload that will not be stored. */
    discard: discardUpload,

    /**
     * Creates or updates the caller's file of that name, after the checks the spec asks for.
     * The blob is already stored; the row is committed in a transaction that also takes its
     * place in the file-count counter, so concurrent uploads cannot pass the limit together.
     * With the record, the owner's warnings of the page (page-warnings.ts).
     */
    async commit(user: User, input: UploadInput, origin: string): Promise<{ record: SingleFileRecord; warnings: PageWarning[] }> {
      const { staged } = input
      if (staged.size === 0) throw new AppError('EMPTY_FILE')
      const detected = await detectNonHtml(staged.head, staged.hasNul)
      if (detected) throw new AppError('FILE_TYPE_UNSUPPORTED', { params: { detected, allowed: ALLOWED_EXTENSIONS.join(', ') } })
      const projectName = checkText('project_name', input.projectName?.trim() || undefined, PROJECT_NAME_MAX, false)
      const description = checkText('description', input.description, DESCRIPTION_MAX, true)
      const contentType = staged.validUtf8 ? 'text/html; charset=utf-8' : 'text/html'
      const leak = (await keyLeaks(deps.apiKeys, user.id, [{ name: input.fileName, keyTokens: staged.keyTokens }])).get(input.fileName)
      if (leak) throw leak
      const now = clock.now()
      const limit = quotaOf(user.limits, 'files')

      // a new file past the quota is refused after two reads, before any transaction
      if ((await store.count(db.k, user.id)) >= limit && !(await store.byName(db.k, user.id, input.fileName))) {
        throw new AppError('FILE_COUNT_LIMIT', { params: { limit } })
      }
      const out = await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        await refuseBlocked(trx, [staged.digest])
        await refuseHeld(trx, siteHoldKey(user.username, input.fileName))
        const existing = await store.byName(trx, user.id, input.fileName)
        if (existing) {
          // an update replaces the content only: URL, project name and description are kept
          await store.updateContent(trx, existing.id, { digest: staged.digest, size: staged.size, content_type: contentType, updated_at: now })
          return { row: { ...existing, size: staged.size, updated_at: now }, isUpdate: true }
        }
        const row = {
          id: newId(),
          user_id: user.id,
          file_name: input.fileName,
          project_name: projectName ?? input.fileName,
          description: description ?? '',
          digest: staged.digest,
          size: staged.size,
          content_type: contentType,
          is_featured: 0,
          created_at: now,
          updated_at: null,
        }
        if ((await store.insert(trx, row, limit)) !== null) throw new AppError('FILE_COUNT_LIMIT', { params: { limit } })
        return { row, isUpdate: false }
      })
      await invalidateHosting(deps.bus, user.username)
      const r = out.row
      // upload heuristics: a phishing-like page opens a report for review (never blocks); the
      // same read gives the owner's warnings of the page
      const warnings = await scanAndWarn(
        deps.services.get(createAbuse),
        user,
        [{ name: r.file_name, path: '', digest: staged.digest, size: staged.size, contentType }],
        { origin },
      )
      const record: SingleFileRecord = {
        file_name: r.file_name,
        project_name: r.project_name,
        file_size: Number(r.size),
        url: urlOf(origin, user.username, r.file_name),
        created_at: beijingTime(Number(r.created_at)),
        updated_at: r.updated_at === null ? null : beijingTime(Number(r.updated_at)),
        is_update: out.isUpdate,
      }
      return { record, warnings }
    },

    /** The upload configuration of a user (GET /svc_api/upload/info). */
    async info(user: User) {
      const max = quotaOf(user.limits, 'files')
      const current = await store.count(db.k, user.id)
      return {
        max_file_size: config.maxUploadBytes,
        max_file_size_mb: Math.round((config.maxUploadBytes / 1048576) * 100) / 100,
        max_files_per_user: max,
        current_file_count: current,
        remaining_quota: Math.max(0, max - current),
        allowed_extensions: ALLOWED_EXTENSIONS,
        api_version: API_VERSION,
      }
    },

    async list(user: User, q: { search?: string; featured?: boolean }, limit: number, offset: number, origin: string) {
      // names are stored in NFC (uploads normalise them): a search spelled in NFD finds them too
      const search = checkText('search', q.search, 200, false)?.normalize('NFC')
      const { total, rows } = await store.list(user.id, { search, featured: q.featured }, limit, offset)
      const held = await deps.services.get(createAbuse).quarantinedSites(user.username)
      return { total, files: rows.map((r) => ({ ...listItem(r, origin, user.username), ...(held(r.file_name) ? { quarantined: true } : {}) })) }
    },

    /** One single file by its exact name, as list() gives it; null when the user has none. */
    async one(user: User, fileName: string, origin: string) {
      const r = checkName(fileName)
      const row = r.ok ? await store.byName(db.k, user.id, r.path) : undefined
      if (!row) return null
      const held = await deps.services.get(createAbuse).quarantinedSites(user.username)
      return { ...listItem(row, origin, user.username), ...(held(row.file_name) ? { quarantined: true } : {}) }
    },

    async remove(user: User, fileName: string): Promise<void> {
      const r = checkName(fileName)
      if (!r.ok) throw new AppError('FILE_NOT_FOUND')
      if (!(await store.remove(user.id, r.path))) throw new AppError('FILE_NOT_FOUND')
      await invalidateHosting(deps.bus, user.username)
    },
  }

  function listItem(r: FileRow, origin: string, username: string) {
    return {
      created_at: isoMicros(Number(r.created_at)),
      updated_at: r.updated_at === null ? null : isoMicros(Number(r.updated_at)),
      file_name: r.file_name,
      file_size: Number(r.size),
      is_featured: Number(r.is_featured) === 1,
      project_name: r.project_name,
      url: urlOf(origin, username, r.file_name),
    }
  }
}
export type FilesService = ReturnType<typeof createFilesService>
