import type { Readable } from 'node:stream'
import { isUtf8 } from 'node:buffer'
import type { Deps } from '../../deps.js'
import type { Trx } from '../../db/kysely.js'
import { AppError } from '../../errors/app-error.js'
import { errorText, mapText, type Lang, type Text } from '../../errors/render.js'
import type { User } from '../../auth/users.js'
import { createAbuse } from '../abuse/service.js'
import { refuseBlocked, refuseHeld, siteHoldKey } from '../abuse/store.js'
import { newId } from '../../auth/tokens.js'
import { isoLocal, isoMicros } from '../../util/time.js'
import { guardUpload } from '../../http/multipart.js'
import { ContentWatcher } from './sniff.js'
import { keyLeaks } from '../../auth/key-leaks.js'
import { contentTypeFor } from '../../util/content-types.js'
import { invalidateHosting } from './invalidate.js'
import { checkName, checkRelativePath, decodeApiFilePath, decodeSegment, encodePath, PathTree } from './paths.js'
import { createFoldersStore, type FolderFileRow, type FolderRow } from './folders-store.js'
import { createDeploysStore } from './deploys-store.js'
import { parseHeaders, parseRedirects, RULE_FILES, ruleText, RuleSyntaxError } from './site-rules.js'
import { checkSiteBytes } from './site-usage.js'
import { scanAndWarn, type PageWarning } from './page-warnings.js'
import type { BlobLease } from '../../storage/leases.js'
import { sizeText } from '../../util/sizes.js'
const RULE_FILE_MAX = 1024 * 1024

/** Per-request limits of a batch upload (defaults; the per-file limit is MAX_UPLOAD_BYTES). */
export const MAX_FILES_PER_REQUEST = 200
export const MAX_REQUEST_BYTES = 64 * 1024 * 1024
/** File reads return the content up to this size; above it only metadata. */
export const READ_CONTENT_MAX = 5 * 1024 * 1024
const DIFF_MAX_ENTRIES = 10_000

/**
 * One failed file of a batch upload, as the spec's errors[] items; `message` in both
 * languages until the answer picks its own. `file`: the file's name as the request sent it.
 */
export interface FileFailure {
  type: 'duplicate' | 'invalid_path' | 'key_in_content'
  error_code: number
  message: Text
  file: string
  /** key_in_content: the refusal's parameters, for a batch refused whole by it */
  params?: { file: string; key: string }
  /** The path exists as a file (no overwrite asked): not sent, it only words a batch's message. */
  exists?: true
}

/** A batch file already in the blob store, waiting for the commit. */
export interface StagedFile {
  name: string
  path: string
  digest: string
  size: number
  contentType: string
  /** Tokens shaped like an API key, for keyLeaks() (none: not scanned, e.g. already stored). */
  keyTokens?: string[]
}

/** The project a {folder_path} names: the caller's own, by name. */
export interface FolderRef {
  name: string
  display: string
}

/** Folder projects: batch upload, list, read, publish, unpublish, diff, delete. */
export function createFoldersService(deps: Deps) {
  const { db, blobs, clock, config } = deps
  const store = createFoldersStore(db)
  const deploys = createDeploysStore()
  /**
   * A write through the spec's file API to a live project goes live as a partial deploy (same
   * rules as the live one; decisions 159, 178). `whole`: the write is one complete change (an
   * atomic batch), so its deploy is whole, with the rules as the write leaves them (decision
   * 212). The new deploy's id, or null when the project is not live.
   */
  const redeploy = async (trx: Trx, folderId: string, now: number, whole = false): Promise<string | null> => {
    const live = await trx
      .selectFrom('folders')
      .leftJoin('deploys', 'deploys.id', 'folders.live_deploy_id')
      .select(['folders.is_published', 'deploys.site_rules'])
      .where('folders.id', '=', folderId)
      .executeTakeFirstOrThrow()
    if (!live.is_published) return null
    const siteRules = whole ? await siteRulesOf(folderId, undefined, trx) : live.site_rules
    return deploys.deployWorkingSet(trx, folderId, { source: 'api', siteRules, now, keep: config.deploysKeep, partial: !whole })
  }

  const noAccess = (name: string) =>
    new AppError('FOLDER_PERMISSION', {
      extra: {
        details: {
          info: { zh: `文件夹项目 "${name}" 不存在或不属于当前用户`, en: `folder project "${name}" does not exist or does not belong to the caller` },
        },
      },
    })

  async function ownFolder(user: User, ref: FolderRef): Promise<FolderRow> {
    const f = await store.folder(db.k, user.id, ref.name)
    if (!f) throw noAccess(ref.display)
    return f
  }

  /**
   * The parsed rule files of a project as stored JSON, or null when it has none. `incoming`
   * (path -> bytes, files not stored yet) stands in for the stored file of the same path, so
   * the rules a batch would leave can be checked before it is stored. `q`: the transaction
   * the rules must agree with (a publish reads them under the user's lock).
   */
  async function siteRulesOf(folderId: string | null, incoming?: ReadonlyMap<string, Buffer>, q: Trx | Deps['db']['k'] = db.k): Promise<string | null> {
    const stored = async (f: string) => (folderId === null || incoming?.has(f) ? undefined : store.file(q, folderId, f))
    const [redirects, headers] = await Promise.all(RULE_FILES.map(stored))
    if (!redirects && !headers && !RULE_FILES.some((f) => incoming?.has(f))) return null
    const text = async (f: FolderFileRow | undefined, name: string): Promise<string> => {
      const given = incoming?.get(name)
      const size = given?.length ?? (f ? Number(f.size) : 0)
      if (size > RULE_FILE_MAX)
        throw new AppError('SITE_RULES_INVALID', {
          params: { detail: { zh: `${name} 超过 ${sizeText(RULE_FILE_MAX).zh}`, en: `${name} is larger than ${sizeText(RULE_FILE_MAX).en}` } },
        })
      if (given) return ruleText(given)
      return f ? ruleText(await blobs.read(f.digest)) : ''
    }
    try {
      return JSON.stringify({
        redirects: parseRedirects(await text(redirects, '_redirects')),
        headers: parseHeaders(await text(headers, '_headers')),
      })
    } catch (e) {
      if (e instanceof RuleSyntaxError) throw new AppError('SITE_RULES_INVALID', { params: { detail: e.text } })
      throw e
    }
  }

  const siteUrl = (origin: string, user: User, name: string) => `${origin}/${user.username}/${encodeURIComponent(name)}/`

  return {
    store,

    /**
     * Resolves {folder_path} from its raw URL segments: `project`, `user/project`, or
     * `user%2Fproject`. Another user's prefix is 403 / 1312; a bad name is 400 / 1110.
     */
    folderRef(user: User, rawSegments: string[]): FolderRef {
      const decoded: string[] = []
      for (const raw of rawSegments) {
        let d: string
        try {
          d = decodeURIComponent(raw)
        } catch {
          throw new AppError('INVALID_PATH', { params: { detail: { zh: 'folder_path 的百分号编码有误', en: 'malformed percent-encoding in folder_path' } } })
        }
        decoded.push(...d.split('/'))
      }
      const display = decoded.join('/')
      if (decoded.length === 2) {
        if (decoded[0].toLowerCase() !== user.username) throw noAccess(display)
        decoded.shift()
      }
      if (decoded.length !== 1)
        throw new AppError('INVALID_PATH', {
          params: { detail: { zh: 'folder_path 须为项目名或 {username}/{project}', en: 'folder_path must be a project name or {username}/{project}' } },
        })
      const r = checkName(decoded[0])
      if (!r.ok) throw new AppError('INVALID_PATH', { params: { detail: mapText(r.reason, (why) => `folder_path: ${why}`) } })
      return { name: r.path, display }
    },

    /** A file path from a raw URL tail (decoded once, strictly). */
    filePath(rawTail: string): string {
      const r = decodeApiFilePath(rawTail)
      if (!r.ok) throw new AppError('INVALID_PATH', { params: { detail: r.reason } })
      return r.path
    },

    /** Checks a multipart file name; returns the stored path or the failure to report. */
    checkUploadName(name: string): { path: string } | { failure: FileFailure } {
      const r = checkRelativePath(name)
      if (r.ok) return { path: r.path }
      return { failure: { type: 'invalid_path', error_code: 1110, message: errorText('INVALID_PATH', { detail: r.reason }), file: name } }
    },

    /**
     * Streams one batch file into the blob store. `remaining` is what is left of the request's
     * total budget: passing it is 413 / 1109, passing MAX_UPLOAD_BYTES is 400 / 1104 (the spec's
     * status for 1104, as a single upload answers).
     */
    async stage(stream: Readable, name: string, path: string, remaining: number, lease?: BlobLease): Promise<StagedFile> {
      const perFile = config.maxUploadBytes
      const max = Math.min(perFile, remaining)
      const tooLarge = () =>
        max < perFile
          ? new AppError('BODY_TOO_LARGE', { params: { limit: MAX_REQUEST_BYTES } })
          : new AppError('FILE_TOO_LARGE', { params: { limit: perFile }, extra: { file: name } })
      const watcher = new ContentWatcher(0)
      try {
        await lease?.take()
        const stored = await blobs.put(guardUpload(stream, watcher), { maxBytes: max, tooLarge })
        return {
          name,
          path,
          digest: stored.digest,
          size: stored.size,
          contentType: contentTypeFor(path, watcher.validUtf8),
          keyTokens: [...watcher.keyTokens],
        }
      } catch (e) {
        stream.resume()
        if ((e as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge()
        throw e
      }
    },

    /**
     * Commits a batch: creates the project if absent, writes every staged file that does not
     * conflict (or overwrites when asked), in one transaction; then invalidates the host cache.
     * `atomic`: any failure refuses the whole batch (400, the failures named) and writes nothing;
     * on a live project it is one whole deploy, and none when it changes no file (decision 212).
     * `origin`: where the batch's pages are served, for the URL of a report the heuristics open.
     * `deploy_id`: the live deploy the batch made, else null. `lease`: the one `stage` took,
     * when the files were read from a request's body.
     */
    async commitBatch(user: User, ref: FolderRef, staged: StagedFile[], overwrite: boolean, atomic = false, origin?: string, lease?: BlobLease) {
      const failures: FileFailure[] = []
      let uploaded = 0
      let changed = 0
      let deployId: string | null = null
      let warnings: PageWarning[] = []
      if (staged.length > 0) {
        // a batch's first files were put as they arrived, maybe longer ago than the sweeper's
        // grace over a slow link: the request's lease kept every sweep off them, and a lapsed
        // one fails the batch (503, sent again by clients) (decisions 109, 313)
        lease?.check()
        // a file that would publish a live write key is a failed file (decision 223)
        const leaks = await keyLeaks(
          deps.apiKeys,
          user.id,
          staged.map((f) => ({ name: f.path, keyTokens: f.keyTokens ?? [] })),
        )
        const now = clock.now()
        deployId = await db.k.transaction().execute(async (trx) => {
          await db.lockUser(trx, user.id)
          await refuseBlocked(
            trx,
            staged.map((f) => f.digest),
          )
          await refuseHeld(trx, siteHoldKey(user.username, ref.name))
          // the whole batch's bytes, before any row: a batch past site_bytes stores nothing
          await checkSiteBytes(trx, user, new Map(staged.map((f) => [f.digest, f.size])))
          let folder = await store.folder(trx, user.id, ref.name)
          const existing = folder
            ? await store.existing(
                trx,
                folder.id,
                staged.map((f) => f.path),
              )
            : new Map<string, FolderFileRow>()
          // a new path must not be a folder of a file, nor a file's folder (PathTree); the
          // project's paths are read only when the batch brings a new one
          const tree = staged.some((f) => !existing.has(f.path)) ? new PathTree(folder ? await store.paths(trx, folder.id) : []) : null
          for (const f of staged) {
            const leak = leaks.get(f.path)
            if (leak) {
              const params = leak.options.params as { file: string; key: string }
              failures.push({ type: 'key_in_content', error_code: 1444, message: errorText('KEY_IN_CONTENT', params), file: f.name, params })
              continue
            }
            const old = existing.get(f.path)
            if (old && !overwrite) {
              failures.push({ type: 'duplicate', error_code: 1312, message: errorText('FILE_DUPLICATE', { file: f.path }), file: f.name, exists: true })
              continue
            }
            const clash = old ? null : tree?.add(f.path)
            if (clash) {
              failures.push({ type: 'duplicate', error_code: 1312, message: clash, file: f.name })
              continue
            }
            if (!folder) {
              folder = { id: newId(), user_id: user.id, name: ref.name, is_published: 0, created_at: now, updated_at: now, published_at: null }
              await store.insertFolder(trx, folder)
            }
            if (!old || old.digest !== f.digest || old.content_type !== f.contentType) changed++
            if (old) await store.updateFile(trx, folder.id, f.path, { digest: f.digest, size: f.size, content_type: f.contentType, updated_at: now })
            else
              await store.insertFile(trx, {
                folder_id: folder.id,
                path: f.path,
                digest: f.digest,
                size: f.size,
                content_type: f.contentType,
                created_at: now,
                updated_at: now,
              })
            uploaded++
          }
          if (atomic && failures.length > 0) {
            // a live key in a file outweighs the rest: its own 1444 and advice (remove it, or a read-only key)
            const leaked = staged.find((f) => leaks.has(f.path))
            if (leaked) throw leaks.get(leaked.path)!
            const list = (lang: Lang) => failures.map((x) => `${x.file}: ${x.message[lang]}`).join('; ')
            throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: list('zh'), en: list('en') } } })
          }
          if (!folder || uploaded === 0 || (atomic && changed === 0)) return null
          await store.touchFolder(trx, folder.id, now)
          return redeploy(trx, folder.id, now, atomic)
        })
        if (uploaded > 0) {
          await invalidateHosting(deps.bus, user.username)
          // upload heuristics on the batch's pages: a report for review, never a refusal; the
          // same read gives the owner's warnings of the pages the batch stored
          const failed = new Set(failures.map((f) => f.file))
          warnings = await scanAndWarn(
            deps.services.get(createAbuse),
            user,
            staged.map((f) => ({ name: ref.name, path: f.path, digest: f.digest, size: f.size, contentType: f.contentType })),
            { origin, warnFor: new Set(staged.filter((f) => !failed.has(f.name)).map((f) => f.path)) },
          )
        }
      }
      return { uploaded, changed, failures, deploy_id: deployId, warnings }
    },

    /** The caller's projects (beyond the spec: the spec has no project list). */
    async projects(user: User, origin: string) {
      const rows = await store.projects(user.id)
      const held = await deps.services.get(createAbuse).quarantinedSites(user.username)
      return rows.map((r) => ({
        name: r.name,
        is_published: !!r.is_published,
        user_site: !!r.user_site,
        file_count: Number(r.file_count),
        updated_at: isoMicros(Number(r.updated_at)),
        website_url: siteUrl(origin, user, r.name),
        // held for review (abuse handling): it answers 451 until an admin acts
        ...(held(r.name) ? { quarantined: true } : {}),
      }))
    },

    async list(user: User, ref: FolderRef, origin: string | null) {
      const folder = await ownFolder(user, ref)
      const rows = (await store.files(folder.id)).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
      const base = `${origin ?? ''}/${user.username}/${encodeURIComponent(folder.name)}/`
      return rows.map((r) => ({
        type: 'file' as const,
        name: r.path.slice(r.path.lastIndexOf('/') + 1),
        path: r.path,
        size: Number(r.size),
        modified: isoLocal(Number(r.updated_at)),
        url: base + encodePath(r.path),
      }))
    },

    async read(user: User, ref: FolderRef, path: string) {
      const folder = await ownFolder(user, ref)
      const f = await store.file(db.k, folder.id, path)
      if (!f) throw new AppError('FILE_NOT_FOUND')
      const size = Number(f.size)
      const out: { name: string; path: string; content?: string | null; size: number; modified: number; folder_path: string } = {
        name: f.path.slice(f.path.lastIndexOf('/') + 1),
        path: f.path,
        size,
        modified: Number(f.updated_at) / 1000,
        folder_path: ref.display,
      }
      if (size <= READ_CONTENT_MAX) {
        // taken-down bytes go to no one, their owner included (451 / 1701), as a download of a deploy holding them
        await blobs.admit?.([f.digest])
        const buf = await blobs.read(f.digest)
        out.content = buf.includes(0) || !isUtf8(buf) ? null : buf.toString('utf8')
      }
      return out
    },

    /**
     * Publishes a project, taking its site rules (_redirects, _headers) as they are now; a
     * project already live takes its current rules again. A rule file with a bad line is
     * refused (1314, file and line named) and nothing changes.
     */
    async publish(user: User, ref: FolderRef, origin: string) {
      const folder = await ownFolder(user, ref)
      const website_url = siteUrl(origin, user, folder.name)
      if (!folder.is_published && !(await store.file(db.k, folder.id, 'index.html'))) throw new AppError('PUBLISH_NO_INDEX')
      // files stored before their bytes were taken down do not go live (451 / 1701)
      await blobs.admit?.((await deploys.working(db.k, folder.id)).map((r) => r.digest))
      // every publish is a new deploy of the project's files (source api), made live at once.
      // The project, its index.html and its rules are read under the user's lock, with the
      // files the deploy takes: a rollback, upload or delete between would otherwise leave a
      // deploy of one version's files with another's rules (or of a project deleted meanwhile)
      const already = await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        const current = await store.folder(trx, user.id, ref.name)
        if (!current || current.id !== folder.id) throw noAccess(ref.display)
        await refuseHeld(trx, siteHoldKey(user.username, ref.name))
        await refuseBlocked(
          trx,
          (await deploys.working(trx, folder.id)).map((r) => r.digest),
        )
        const was = !!current.is_published
        if (!was && !(await store.file(trx, folder.id, 'index.html'))) throw new AppError('PUBLISH_NO_INDEX')
        const rules = await siteRulesOf(folder.id, undefined, trx)
        const id = await deploys.deployWorkingSet(trx, folder.id, { source: 'api', siteRules: rules, now: clock.now(), keep: config.deploysKeep })
        return { was, id }
      })
      await invalidateHosting(deps.bus, user.username)
      return { website_url, already_published: already.was, deploy_id: already.id }
    },

    /**
     * Refuses, before anything of it is stored, a batch (path -> bytes) that publish would then
     * refuse: no root index.html on a project not live (1313), or a bad _redirects/_headers
     * line in the rule files as the batch would leave them (1314). For callers that upload
     * and publish as one step (MCP's deploy_files), which must store nothing when it fails.
     */
    async checkPublishable(user: User, ref: FolderRef, incoming: ReadonlyMap<string, Buffer>) {
      const folder = await store.folder(db.k, user.id, ref.name)
      const live = !!folder?.is_published
      if (!live && !incoming.has('index.html') && !(folder && (await store.file(db.k, folder.id, 'index.html')))) throw new AppError('PUBLISH_NO_INDEX')
      await siteRulesOf(folder?.id ?? null, incoming)
    },

    async unpublish(user: User, ref: FolderRef) {
      const folder = await ownFolder(user, ref)
      // under the user's lock, as every write that redeploys a live project: a file upload or
      // delete that read the project as live must not set it live again after this answered
      const changed = await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        return store.setPublished(trx, folder.id, false, clock.now())
      })
      if (changed) await invalidateHosting(deps.bus, user.username)
      return { was_published: changed }
    },

    /**
     * Makes the project the caller's user site (`on`), served at the root of their origin
     * and at every path there that names none of their projects or pages,
     * or stops it being one; a project unpublished keeps the role and serves again when
     * published. Every instance's public host drops the user's paths at once.
     */
    async setUserSite(user: User, ref: FolderRef, on: boolean): Promise<{ user_site: boolean; changed: boolean }> {
      const folder = await ownFolder(user, ref)
      const changed = await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        const current = await store.folder(trx, user.id, ref.name)
        if (!current || current.id !== folder.id) throw noAccess(ref.display)
        const now = await trx.selectFrom('folders').select('user_site').where('id', '=', folder.id).executeTakeFirstOrThrow()
        if (!!now.user_site === on) return false
        return store.setUserSite(trx, user.id, on ? folder.id : null)
      })
      if (changed) await invalidateHosting(deps.bus, user.username)
      return { user_site: on, changed }
    },

    /**
     * Deletes a project whole: its files, every kept deploy (so no preview URL answers any
     * more) and the project itself; returns how many files it held. Its bytes go with the
     * sweeper once nothing references them.
     */
    async remove(user: User, ref: FolderRef): Promise<{ files: number }> {
      const folder = await ownFolder(user, ref)
      const files = (await store.files(folder.id)).length
      await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        await store.removeFolder(trx, folder.id)
      })
      await invalidateHosting(deps.bus, user.username)
      return { files }
    },

    async removeFile(user: User, ref: FolderRef, path: string) {
      const folder = await ownFolder(user, ref)
      await db.k.transaction().execute(async (trx) => {
        await db.lockUser(trx, user.id)
        if (!(await store.removeFile(trx, folder.id, path))) throw new AppError('FILE_NOT_FOUND')
        // a delete changes the project as an upload does, live or not (the project list's order)
        const now = clock.now()
        await store.touchFolder(trx, folder.id, now)
        await redeploy(trx, folder.id, now)
      })
      await invalidateHosting(deps.bus, user.username)
    },

    /** Which local files a deploy must upload, which are unchanged, which the project has extra. */
    async diff(user: User, ref: FolderRef, files: unknown) {
      if (typeof files !== 'object' || files === null || Array.isArray(files)) {
        throw new AppError('INVALID_PARAMETER', {
          params: { detail: { zh: 'files 须为对象 {"相对路径": "<sha256 十六进制>"}', en: 'files must be an object {"relative/path": "<sha256 hex>"}' } },
        })
      }
      const entries = Object.entries(files as Record<string, unknown>)
      if (entries.length > DIFF_MAX_ENTRIES)
        throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: `最多 ${DIFF_MAX_ENTRIES} 个文件`, en: `at most ${DIFF_MAX_ENTRIES} files` } } })
      const wanted = new Map<string, { key: string; digest: string }>()
      for (const [key, digest] of entries) {
        const r = checkRelativePath(key)
        if (!r.ok) throw new AppError('INVALID_PATH', { params: { detail: mapText(r.reason, (why) => `${JSON.stringify(key)}: ${why}`) } })
        if (typeof digest !== 'string' || !/^[0-9a-fA-F]{64}$/.test(digest)) {
          throw new AppError('INVALID_PARAMETER', {
            params: { detail: { zh: `${JSON.stringify(key)}：值须为 sha256 十六进制摘要`, en: `${JSON.stringify(key)}: value must be a sha256 hex digest` } },
          })
        }
        if (wanted.has(r.path))
          throw new AppError('INVALID_PARAMETER', {
            params: {
              detail: { zh: `${JSON.stringify(key)} 出现了两次（NFC 规范化后）`, en: `${JSON.stringify(key)} appears twice (after NFC normalisation)` },
            },
          })
        wanted.set(r.path, { key, digest: digest.toLowerCase() })
      }
      const folder = await store.folder(db.k, user.id, ref.name)
      const held = new Map((folder ? await store.files(folder.id) : []).map((r) => [r.path, r.digest]))
      const upload: string[] = []
      const unchanged: string[] = []
      for (const [p, w] of wanted) (held.get(p) === w.digest ? unchanged : upload).push(w.key)
      const extra = [...held.keys()].filter((p) => !wanted.has(p)).sort()
      return { upload, unchanged, extra }
    },

    limits() {
      return { max_files_per_request: MAX_FILES_PER_REQUEST, max_request_bytes: MAX_REQUEST_BYTES, max_file_bytes: config.maxUploadBytes }
    },

    /** Parses the overwrite_files field: true/1 overwrite, false/0/absent report conflicts. */
    parseOverwrite(v: string | undefined): boolean {
      if (v === undefined) return false
      const l = v.trim().toLowerCase()
      if (l === 'true' || l === '1') return true
      if (l === 'false' || l === '0' || l === '') return false
      throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: 'overwrite_files 须为 true 或 false', en: 'overwrite_files must be true or false' } } })
    },

    decodeSegment,
  }
}
export type FoldersService = ReturnType<typeof createFoldersService>
