import crypto from 'node:crypto'
import fs from 'node:fs'
import { isUtf8 } from 'node:buffer'
import { pipeline, Transform, type Readable, type TransformCallback, type Writable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import tar from 'tar-stream'
import type { Deps } from '../../deps.js'
import type { Trx } from '../../db/kysely.js'
import { AppError } from '../../errors/app-error.js'
import { unknownField } from '../../http/unknown-fields.js'
import { checkSiteBytes } from './site-usage.js'
import { mapText, type Param, type Text } from '../../errors/render.js'
import type { User } from '../../auth/users.js'
import { newId } from '../../auth/tokens.js'
import { isoMicros } from '../../util/time.js'
import { ContentWatcher } from './sniff.js'
import { collectKeyTokens, keyLeaks } from '../../auth/key-leaks.js'
import { invalidateHosting } from './invalidate.js'
import { checkRelativePath, PathTree } from './paths.js'
import { entryPath, refuseType, ROOT_DIR, undotted } from './archive-entries.js'
import { createFoldersStore, type FolderRow } from './folders-store.js'
import { createDeploysStore, type DeployFileRow, type DeployRow } from './deploys-store.js'
import type { FolderRef } from './folders-service.js'
import { isStaleType } from './content-types.js'
import { contentTypeFor } from '../../util/content-types.js'
import { MANIFEST_ENTRY, MESSAGE_MAX } from '../../util/deploy-manifest.js'
import { tarWriter } from '../../util/archive-writer.js'
import { parseHeaders, parseRedirects, RULE_FILES, ruleText, RuleSyntaxError } from './site-rules.js'
import { refuseBlocked, refuseHeld, siteHoldKey } from '../abuse/store.js'
import { scanAndWarn } from './page-warnings.js'
import { createAbuse } from '../abuse/service.js'
import { createBlobBatch } from '../../storage/batch.js'
import { withBlobLease, type BlobLease } from '../../storage/leases.js'
import { readZip, spoolZip, zipBodyLimit, type ZipFileEntry } from './deploy-zip.js'
import { sizeText } from '../../util/sizes.js'

/** Limits of one deploy (docs/limits.md). */
export const DEPLOY_MAX_FILES = 50_000
export const MANIFEST_MAX_BYTES = 16 * 1024 * 1024
/** Entries of a zip deploy, folders and left-out files included: twice the files a deploy holds. */
export const ZIP_MAX_ENTRIES = 2 * DEPLOY_MAX_FILES
const RULE_FILE_MAX = 1024 * 1024
/**
 * Bytes an archive may hold outside its manifest's and files' data: per entry (its header, a
 * pax or GNU long-name header, the padding to 512 bytes), and once (the end blocks, a record's
 * padding, what the reader holds ahead of the entry being read). The reader skips empty blocks
 * and a folder entry's data without a limit of its own, so without this bound a small gzip of
 * zeros inflated for as long as the sender liked (decision 230).
 */
const FRAMING_PER_ENTRY = 4096
const FRAMING_SLACK = 1024 * 1024
/** Entries up to this size are read whole and stored in batches (one durability step per batch). */
const SMALL_ENTRY = 1024 * 1024
const SOURCES = new Set(['cli', 'api'])

export type DeploySource = 'cli' | 'api' | 'dashboard'

/** A parsed manifest: every path of the deploy with its SHA-256. */
export interface Manifest {
  files: Map<string, string>
  message: string
  preview: boolean
  source: DeploySource
}

/** What an uploaded entry gave: its size and whether it is valid UTF-8 (for the charset). */
interface Uploaded {
  size: number
  utf8: boolean
  /** Tokens shaped like an API key (sniff.ts), for keyLeaks() */
  keyTokens: ReadonlySet<string>
}

const MANIFEST_FIELDS = ['files', 'message', 'preview', 'source'] as const

/** Checks a manifest object; throws MANIFEST_INVALID / MANIFEST_TOO_LARGE naming the entry. */
export function parseManifest(body: unknown, defaults: { source?: DeploySource } = {}): Manifest {
  const invalid = (detail: Param) => new AppError('MANIFEST_INVALID', { params: { detail } })
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalid({ zh: '须为 JSON 对象 {"files": {...}}', en: 'expected a JSON object {"files": {...}}' })
  const o = body as Record<string, unknown>
  // a field the service does not know would be ignored, and Netlify's {"draft": true} would
  // then go live: refused, naming it
  const unknown = unknownField(o, MANIFEST_FIELDS)
  if (unknown) throw invalid(unknown.detail)
  const files = o.files
  if (typeof files !== 'object' || files === null || Array.isArray(files))
    throw invalid({ zh: 'files 须为对象 {"相对路径": "<sha256 十六进制>"}', en: 'files must be an object {"relative/path": "<sha256 hex>"}' })
  const entries = Object.entries(files as Record<string, unknown>)
  if (entries.length > DEPLOY_MAX_FILES)
    throw new AppError('MANIFEST_TOO_LARGE', {
      params: { detail: { zh: `${entries.length} 个文件，最多 ${DEPLOY_MAX_FILES} 个`, en: `${entries.length} files, at most ${DEPLOY_MAX_FILES}` } },
    })
  if (entries.length === 0) throw invalid({ zh: 'files 为空', en: 'files is empty' })
  const out = new Map<string, string>()
  for (const [key, digest] of entries) {
    const r = checkRelativePath(key)
    if (!r.ok) throw invalid(mapText(r.reason, (why) => `${JSON.stringify(key)}: ${why}`))
    if (typeof digest !== 'string' || !/^[0-9a-fA-F]{64}$/.test(digest))
      throw invalid({ zh: `${JSON.stringify(key)}：值须为十六进制的 SHA-256 摘要`, en: `${JSON.stringify(key)}: value must be a sha256 hex digest` })
    if (out.has(r.path))
      throw invalid({ zh: `${JSON.stringify(key)} 出现两次（NFC 规范化之后）`, en: `${JSON.stringify(key)} appears twice (after NFC normalisation)` })
    out.set(r.path, digest.toLowerCase())
  }
  const tree = new PathTree()
  for (const path of out.keys()) {
    const clash = tree.add(path)
    if (clash) throw invalid(clash)
  }
  const message = o.message ?? ''
  if (typeof message !== 'string') throw invalid({ zh: 'message 须为字符串', en: 'message must be a string' })
  if (message.length > MESSAGE_MAX)
    throw new AppError('MANIFEST_TOO_LARGE', {
      params: { detail: { zh: `message 超过 ${MESSAGE_MAX} 个字符`, en: `message longer than ${MESSAGE_MAX} characters` } },
    })
  const preview = o.preview ?? false
  if (typeof preview !== 'boolean') throw invalid({ zh: 'preview 须为 true 或 false', en: 'preview must be true or false' })
  const source = o.source ?? defaults.source ?? 'api'
  if (typeof source !== 'string' || !SOURCES.has(source)) throw invalid({ zh: 'source 须为 "cli" 或 "api"', en: 'source must be "cli" or "api"' })
  // the manifest is the whole deploy: without a root index.html it can never go live or be
  // previewed, so the check and the archive refuse it before any file is sent or stored
  if (!out.has('index.html')) throw new AppError('PUBLISH_NO_INDEX')
  return { files: out, message, preview, source: source as DeploySource }
}

/**
 * An error of the tar or gzip reader (or of the request stream): the archive is truncated or
 * unreadable. The English names the reader's own words; the Chinese says what they mean.
 */
function archiveError(e: unknown): AppError {
  if (e instanceof AppError) return e
  const { code, message } = (e ?? {}) as { code?: string; message?: string }
  const words = message ?? 'unreadable'
  let detail: Text = { zh: '无法读取归档数据', en: words }
  if (code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || message === 'aborted')
    detail = { zh: '请求在归档完整之前就结束了', en: 'the request ended before the archive was complete' }
  else if (code === 'Z_BUF_ERROR' || /unexpected end/i.test(words)) detail = { zh: '数据意外结束', en: `unexpected end of data (${words})` }
  return new AppError('ARCHIVE_TRUNCATED', { params: { detail } })
}

/** Passes an archive's bytes through, failing once there are more than `allowed()` (read at each chunk). */
class ArchiveMeter extends Transform {
  private total = 0
  constructor(private readonly allowed: () => number) {
    super()
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.total += chunk.length
    if (this.total <= this.allowed()) return cb(null, chunk)
    cb(
      new AppError('MANIFEST_TOO_LARGE', {
        params: {
          detail: {
            zh: `归档中不属于任何文件的数据超过每个条目 ${FRAMING_PER_ENTRY} 字节（空块或目录条目的数据）`,
            en: `the archive holds more than ${FRAMING_PER_ENTRY} bytes per entry that belong to no file (empty blocks, or a folder entry's data)`,
          },
        },
      }),
    )
  }
}

/** Passes bytes through, refusing at the end when their SHA-256 is not `expected` (the blob store then keeps nothing). */
class DigestCheck extends Transform {
  private readonly hash = crypto.createHash('sha256')
  failure: AppError | null = null
  constructor(
    private readonly expected: string,
    private readonly path: string,
  ) {
    super()
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.hash.update(chunk)
    cb(null, chunk)
  }
  override _flush(cb: TransformCallback): void {
    if (this.hash.digest('hex') === this.expected) return cb()
    this.failure = new AppError('ARCHIVE_HASH_MISMATCH', { params: { path: this.path } })
    cb(this.failure)
  }
}

/** Deploys of folder projects: archive deploys, list, rollback, promote, previews, retention. */
/** A kept deploy's download: its project, id, message, time and files (path order). */
export interface DeployDownload {
  project: string
  id: string
  message: string
  createdAt: number
  files: Array<Pick<DeployFileRow, 'path' | 'digest' | 'size'>>
}

export function createDeploysService(deps: Deps) {
  const { db, blobs, clock, config } = deps
  const folders = createFoldersStore(db)
  const store = createDeploysStore()

  const noAccess = (name: string) =>
    new AppError('FOLDER_PERMISSION', {
      extra: {
        details: {
          info: { zh: `文件夹项目 "${name}" 不存在或不属于当前用户`, en: `folder project "${name}" does not exist or does not belong to the caller` },
        },
      },
    })

  async function ownFolder(user: User, ref: FolderRef): Promise<FolderRow & { live_deploy_id: string | null }> {
    const f = await db.k
      .selectFrom('folders')
      .select(['id', 'user_id', 'name', 'is_published', 'created_at', 'updated_at', 'published_at', 'live_deploy_id'])
      .where('user_id', '=', user.id)
      .where('name', '=', ref.name)
      .executeTakeFirst()
    if (!f) throw noAccess(ref.display)
    return f
  }

  /** The parsed rule files of a deploy, as stored JSON (null: none); a bad line is 1314 with file and line. */
  async function siteRules(files: Map<string, { digest: string; size: number }>): Promise<string | null> {
    const [redirects, headers] = RULE_FILES.map((f) => files.get(f))
    if (!redirects && !headers) return null
    const text = async (f: { digest: string; size: number } | undefined, name: string): Promise<string> => {
      if (!f) return ''
      if (Number(f.size) > RULE_FILE_MAX)
        throw new AppError('SITE_RULES_INVALID', {
          params: { detail: { zh: `${name} 超过 ${sizeText(RULE_FILE_MAX).zh}`, en: `${name} is larger than ${sizeText(RULE_FILE_MAX).en}` } },
        })
      return ruleText(await blobs.read(f.digest))
    }
    try {
      return JSON.stringify({ redirects: parseRedirects(await text(redirects, '_redirects')), headers: parseHeaders(await text(headers, '_headers')) })
    } catch (e) {
      if (e instanceof RuleSyntaxError) throw new AppError('SITE_RULES_INVALID', { params: { detail: e.text } })
      throw e
    }
  }

  /** Whether stored bytes are valid UTF-8, from a row that holds them, else from the bytes. */
  async function utf8Of(row: DeployFileRow): Promise<boolean> {
    if (/;\s*charset=/i.test(row.content_type)) return true
    // a type the current table gives a charset, stored without one: the bytes were not UTF-8
    // (unless an older table made the type, decision 145: then the bytes decide)
    if (/;\s*charset=/i.test(contentTypeFor(row.path, true)) && !isStaleType(row.content_type)) return false
    if (Number(row.size) > 8 * 1024 * 1024) return false
    return isUtf8(await blobs.read(row.digest))
  }

  /**
   * False when the blob store surely lacks a digest (a local store without its file): no
   * deploy or project can hold it then. A miss of a blob in the older layout only costs its
   * upload again. Other stores: true (the lookups decide).
   */
  const mayHold = (digest: string): boolean => {
    const local = blobs.localPathNow?.(digest)
    return local === undefined || fs.existsSync(local)
  }

  const view = (d: DeployRow, liveId: string | null) => ({
    id: d.id,
    created_at: isoMicros(Number(d.created_at)),
    file_count: Number(d.file_count),
    bytes: Number(d.bytes),
    message: d.message,
    source: d.source,
    is_preview: !!d.is_preview,
    promoted_at: d.promoted_at === null ? null : isoMicros(Number(d.promoted_at)),
    is_partial: !!d.is_partial,
    is_live: d.id === liveId,
  })

  /**
   * Makes a kept deploy live: in one transaction, the pointer (one row update) and the working
   * set the spec's file API lists; then every instance drops its cached pages.
   */
  /**
   * The plain rollback's target: the newest kept deploy older than `liveId` that visitors had
   * whole, not a preview (or a preview promoted since, decision 154) and not partial; 409 / 1334
   * when there is none.
   */
  async function previousLive(q: Trx | Deps['db']['k'], folderId: string, liveId: string | null): Promise<string> {
    const all = await store.list(q, folderId)
    const at = all.findIndex((d) => d.id === liveId)
    const target = (at < 0 ? undefined : all.slice(at + 1).find(store.wentLive))?.id
    if (target === undefined) throw new AppError('NO_PREVIOUS_DEPLOY')
    return target
  }

  /**
   * `ifUnpublished`: the refusal when the project is unpublished under the lock (a rollback);
   * none: it is published (a promote). `previous`: `deployId` is a plain rollback's target, read
   * again under the lock from the live pointer then (a deploy or promote may have moved it).
   * Returns the deploy made live.
   */
  async function makeLive(
    user: User,
    folder: { id: string; name: string },
    deployId: string,
    ifUnpublished?: () => AppError,
    previous = false,
  ): Promise<string> {
    // bytes taken down since the deploy was made do not go live again (451 / 1701)
    const digests = (await store.files(db.k, deployId)).map((r) => r.digest)
    await blobs.admit?.(digests)
    const target = await db.k.transaction().execute(async (trx) => {
      await db.lockUser(trx, user.id)
      await refuseHeld(trx, siteHoldKey(user.username, folder.name))
      const f = await trx.selectFrom('folders').select(['is_published', 'live_deploy_id']).where('id', '=', folder.id).executeTakeFirst()
      if (ifUnpublished && !f?.is_published) throw ifUnpublished()
      const target = previous ? await previousLive(trx, folder.id, f?.live_deploy_id ?? null) : deployId
      await refuseBlocked(trx, target === deployId ? digests : (await store.files(trx, target)).map((r) => r.digest))
      if (!(await store.get(trx, folder.id, target))) throw new AppError('DEPLOY_NOT_FOUND', { params: { id: target } })
      const now = clock.now()
      await store.setLive(trx, folder.id, target, now)
      await store.markPromoted(trx, target, now)
      await store.syncWorkingSet(trx, folder.id, target)
      return target
    })
    await invalidateHosting(deps.bus, user.username)
    return target
  }

  /**
   * The end of every whole deploy, once its files are in the blob store: every path with its
   * SHA-256 (`m`) and what this request stored (`uploaded`). Checks key leaks, the files not
   * carried, limits and quota, then writes the deploy in one transaction and (unless a preview)
   * makes it live; then the hosting caches and the upload heuristics.
   */
  async function commit(user: User, ref: FolderRef, m: Manifest, uploaded: Map<string, Uploaded>, origin: string, lease: BlobLease) {
    // the archive's blobs were put as they arrived, maybe longer ago than the sweeper's grace
    // (a large archive over a slow link): the request's lease kept every sweep off them, and
    // a lapsed one refuses the deploy (503). Files not carried are read from rows under the
    // user's lock below: a sweep sees that row or this deploy's (docs/decisions.md 109, 313)
    lease.check()

    // a file that would publish a live write key refuses the deploy (decision 223)
    const carrying = [...m.files].filter(([, d]) => (uploaded.get(d)?.keyTokens.size ?? 0) > 0).sort(([a], [b]) => (a < b ? -1 : 1))
    const leaks = await keyLeaks(
      deps.apiKeys,
      user.id,
      carrying.map(([path, d]) => ({ name: path, keyTokens: uploaded.get(d)!.keyTokens })),
    )
    const leak = carrying.find(([path]) => leaks.has(path))
    if (leak) throw leaks.get(leak[0])!

    const now = clock.now()
    const result = await db.k.transaction().execute(async (trx) => {
      await db.lockUser(trx, user.id)
      await refuseBlocked(trx, m.files.values())
      await refuseHeld(trx, siteHoldKey(user.username, ref.name))
      let folder = await folders.folder(trx, user.id, ref.name)
      if (!folder) {
        folder = { id: newId(), user_id: user.id, name: ref.name, is_published: 0, created_at: now, updated_at: now, published_at: null }
        await folders.insertFolder(trx, folder)
      }
      // files not carried by the archive must be held by the user, checked under the user's lock
      const notSent = new Set([...m.files.values()].filter((d) => !uploaded.has(d)))
      const workingRows = await store.working(trx, folder.id)
      const known = await store.known(trx, folder, notSent, workingRows)
      const working = new Map(workingRows.map((r) => [r.path, r]))
      const rows: DeployFileRow[] = []
      let bytes = 0
      for (const [path, digest] of m.files) {
        const up = uploaded.get(digest)
        const same = working.get(path)
        let row: DeployFileRow
        if (same && same.digest === digest)
          row = { path, digest, size: Number(same.size), content_type: same.content_type, updated_at: Number(same.updated_at) }
        else if (up) row = { path, digest, size: up.size, content_type: contentTypeFor(path, up.utf8), updated_at: now }
        else {
          const k = known.get(digest)
          if (!k) throw new AppError('ARCHIVE_MISSING', { params: { path: JSON.stringify(path), digest } })
          row = { path, digest, size: Number(k.size), content_type: contentTypeFor(path, await utf8Of(k)), updated_at: now }
        }
        bytes += row.size
        rows.push(row)
      }
      if (bytes > config.deployMaxBytes)
        throw new AppError('MANIFEST_TOO_LARGE', {
          params: {
            detail: {
              zh: `总计 ${bytes} 字节，最多 ${sizeText(config.deployMaxBytes).zh}`,
              en: `${bytes} bytes in all, at most ${sizeText(config.deployMaxBytes).en}`,
            },
          },
        })
      // bytes the project's files do not hold already may be new to the account (site_bytes)
      await checkSiteBytes(trx, user, new Map(rows.filter((r) => working.get(r.path)?.digest !== r.digest).map((r) => [r.digest, r.size])))
      const rules = await siteRules(new Map(rows.filter((r) => (RULE_FILES as readonly string[]).includes(r.path)).map((r) => [r.path, r])))
      const id = await store.newDeploy(trx, folder.id, { source: m.source, message: m.message, preview: m.preview, siteRules: rules, now })
      let liveId = (await trx.selectFrom('folders').select('live_deploy_id').where('id', '=', folder.id).executeTakeFirstOrThrow()).live_deploy_id
      if (m.preview) await store.insertFiles(trx, id, rows)
      else {
        // the project's files become the deploy's (only differing rows written), then the
        // deploy is a copy of them in SQL: a one-file change writes two rows, not a whole site
        const changed = rows.filter((r) => {
          const w = working.get(r.path)
          return !w || w.digest !== r.digest || w.content_type !== r.content_type
        })
        const gone = [...working.keys()].filter((p) => !m.files.has(p))
        await store.replaceWorking(trx, folder.id, changed, gone, now)
        await store.snapshotWorkingSet(trx, id, folder.id)
        await store.setLive(trx, folder.id, id, now)
        liveId = id
      }
      await store.setCounts(trx, id, rows.length, bytes)
      await store.prune(trx, folder.id, config.deploysKeep, liveId)
      return { id, file_count: rows.length, bytes, carried: rows.filter((r) => uploaded.has(r.digest)) }
    })
    await invalidateHosting(deps.bus, user.username)
    // upload heuristics on the pages the archive carried, as on a folder batch's (a preview's
    // too: it is served): a report for review, never a refusal. Bytes taken from the user's
    // other projects were scanned when they were uploaded. The same read gives the owner's
    // warnings (page-warnings.ts), in the answer
    const warnings = await scanAndWarn(
      deps.services.get(createAbuse),
      user,
      result.carried.map((r) => ({ name: ref.name, path: r.path, digest: r.digest, size: r.size, contentType: r.content_type })),
      { origin },
    )
    const base = `${origin}/${user.username}/`
    return {
      deploy: { id: result.id, file_count: result.file_count, bytes: result.bytes, is_preview: m.preview, is_live: !m.preview },
      uploaded_files: uploaded.size,
      website_url: `${base}${encodeURIComponent(ref.name)}/`,
      preview_url: `${base}${encodeURIComponent(ref.name)}@${result.id}/`,
      warnings,
    }
  }

  const limits = () => ({
    max_files: DEPLOY_MAX_FILES,
    max_manifest_bytes: MANIFEST_MAX_BYTES,
    max_deploy_bytes: config.deployMaxBytes,
    max_file_bytes: config.maxUploadBytes,
    keep: config.deploysKeep,
  })

  return {
    store,

    /**
     * Which of a manifest's digests the user holds nowhere (the files an archive must carry).
     * A manifest that names blocked bytes is refused here (451 / 1701), as the deploy would.
     */
    async missing(user: User, ref: FolderRef, body: unknown) {
      const m = parseManifest(body)
      const digests = new Set(m.files.values())
      await blobs.admit?.(digests)
      // a project not made yet holds nothing itself (no row has the id ''): the user's others may
      const project = (await folders.folder(db.k, user.id, ref.name)) ?? { id: '', user_id: user.id }
      const known = await store.held(db.k, project, digests, mayHold)
      const missing = [...digests].filter((d) => !known.has(d))
      return { missing, file_count: m.files.size, known_count: digests.size - missing.length, limits: limits() }
    },

    /**
     * An archive deploy: a tar (or gzipped tar) whose first entry is the manifest
     * (svc-deploy.json) and whose other entries are the files the check asked for. Entries stream
     * into the blob store, each checked against its manifest digest; nothing is recorded unless
     * the whole archive is good. Then, in one transaction, the deploy and its files are written
     * and, unless it is a preview, the live pointer moves to it. Blobs stored before a refusal
     * are referenced by no row and go with the sweeper.
     */
    async deployArchive(user: User, ref: FolderRef, body: Readable, gzip: boolean, origin: string) {
      // the lease spares the blobs put below until the commit, however long the body takes
      return withBlobLease(db, async (lease) => {
        const extract = tar.extract()
        const source: Readable = gzip ? body.pipe(createGunzip()) : body
        // the data of the manifest and file entries seen so far, and their number: what the
        // stream may carry besides is bounded (FRAMING_PER_ENTRY), checked before the reader
        let declared = 0
        let entries = 0
        const meter = new ArchiveMeter(() => declared + FRAMING_PER_ENTRY * entries + FRAMING_SLACK)
        let streamError: unknown = null
        const fail = (e: unknown) => {
          streamError ??= e
          extract.destroy(archiveError(e))
        }
        body.on('error', fail)
        body.on('close', () => {
          if (!body.readableEnded) fail(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
        })
        if (gzip) source.on('error', fail)
        meter.on('error', fail)
        source.pipe(meter).pipe(extract)

        let manifest: Manifest | null = null
        const uploaded = new Map<string, Uploaded>()
        const seen = new Set<string>()
        // small entries wait here and are stored together (storage/batch.ts)
        const batch = createBlobBatch(blobs)
        // bytes of the entries so far, by their headers, before any is read: a deploy's total can
        // only be larger, so past the limit the archive is refused before it fills the disk
        let carried = 0
        try {
          for await (const entry of extract) {
            const h = entry.header
            entries++
            if (h.type === 'file' || h.type === 'contiguous-file') declared += h.size ?? 0
            if (manifest === null) {
              // named as the other entries may be: "./svc-deploy.json" too
              if (undotted(h.name) !== MANIFEST_ENTRY || h.type !== 'file')
                throw new AppError('MANIFEST_INVALID', {
                  params: { detail: { zh: `归档的第一个条目须为文件 ${MANIFEST_ENTRY}`, en: `the archive's first entry must be the file ${MANIFEST_ENTRY}` } },
                })
              if ((h.size ?? 0) > MANIFEST_MAX_BYTES)
                throw new AppError('MANIFEST_TOO_LARGE', {
                  params: {
                    detail: {
                      zh: `${MANIFEST_ENTRY} 超过 ${sizeText(MANIFEST_MAX_BYTES).zh}`,
                      en: `${MANIFEST_ENTRY} is larger than ${sizeText(MANIFEST_MAX_BYTES).en}`,
                    },
                  },
                })
              const chunks: Buffer[] = []
              for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c)
              let parsed: unknown
              try {
                parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'))
              } catch {
                throw new AppError('MANIFEST_INVALID', {
                  params: { detail: { zh: `${MANIFEST_ENTRY} 不是有效的 JSON`, en: `${MANIFEST_ENTRY} is not valid JSON` } },
                })
              }
              manifest = parseManifest(parsed)
              // every file of the deploy, carried or taken from what the user holds: blocked
              // bytes are refused before any entry is read (451 / 1701), as an upload of them is
              await blobs.admit?.(manifest.files.values())
              continue
            }
            const refused = refuseType(h.type ?? 'file', JSON.stringify(h.name))
            if (refused) throw refused
            // a folder entry makes nothing and is skipped, the archive's root ("./") too; other
            // names are still checked (".." 1320, absolute 1321). A file named "" or "." stays 1332
            if (h.type === 'directory') {
              if (!ROOT_DIR.test(h.name)) entryPath(h.name)
              entry.resume()
              continue
            }
            const path = entryPath(h.name)
            const digest = manifest.files.get(path)
            if (digest === undefined)
              throw new AppError('ARCHIVE_UNEXPECTED', { params: { path: JSON.stringify(path), detail: { zh: '不在清单中', en: 'not in the manifest' } } })
            if (seen.has(path))
              throw new AppError('ARCHIVE_UNEXPECTED', {
                params: { path: JSON.stringify(path), detail: { zh: '在归档中出现了两次', en: 'appears twice in the archive' } },
              })
            seen.add(path)
            const size = h.size ?? 0
            if (size > config.maxUploadBytes)
              throw new AppError('ARCHIVE_FILE_TOO_LARGE', { params: { path: JSON.stringify(path), limit: config.maxUploadBytes } })
            carried += size
            if (carried > config.deployMaxBytes)
              throw new AppError('MANIFEST_TOO_LARGE', {
                params: { detail: { zh: `总计超过 ${sizeText(config.deployMaxBytes).zh}`, en: `over ${sizeText(config.deployMaxBytes).en} in all` } },
              })
            if (uploaded.has(digest)) {
              // the same bytes under a second path: checked, not stored twice
              const hash = crypto.createHash('sha256')
              for await (const c of entry as AsyncIterable<Buffer>) hash.update(c)
              if (hash.digest('hex') !== digest) throw new AppError('ARCHIVE_HASH_MISMATCH', { params: { path: JSON.stringify(path) } })
              continue
            }
            if (size <= SMALL_ENTRY) {
              const chunks: Buffer[] = []
              for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c)
              const bytes = Buffer.concat(chunks)
              if (crypto.createHash('sha256').update(bytes).digest('hex') !== digest)
                throw new AppError('ARCHIVE_HASH_MISMATCH', { params: { path: JSON.stringify(path) } })
              const keyTokens = new Set<string>()
              collectKeyTokens(bytes, keyTokens)
              uploaded.set(digest, { size: bytes.length, utf8: isUtf8(bytes), keyTokens })
              await lease.take()
              await batch.add(bytes)
              continue
            }
            const watcher = new ContentWatcher(0)
            const check = new DigestCheck(digest, JSON.stringify(path))
            // an error of the archive (the tar reader's: cut inside this entry) is 1326; one seen
            // after the store gave up on the chain is that failure come back, not the archive's
            let readerError: unknown = null
            entry.once('error', (err) => {
              if (!check.destroyed) readerError = err
            })
            // pipeline, not .pipe(): an error or early close anywhere destroys the whole chain,
            // so the store's put always ends (and removes its temp file) instead of waiting forever
            const chain = pipeline(entry, watcher, check, () => {})
            try {
              await lease.take()
              await blobs.put(chain, { maxBytes: config.maxUploadBytes })
            } catch (e) {
              throw check.failure ?? streamError ?? readerError ?? e
            }
            uploaded.set(digest, { size: watcher.size, utf8: watcher.validUtf8, keyTokens: watcher.keyTokens })
          }
          if (streamError) throw archiveError(streamError)
          await batch.flush()
        } catch (e) {
          extract.destroy()
          throw archiveError(streamError ?? e)
        }
        if (manifest === null)
          throw new AppError('ARCHIVE_TRUNCATED', {
            params: { detail: { zh: `归档为空（第一个条目须为 ${MANIFEST_ENTRY}）`, en: `the archive is empty (its first entry must be ${MANIFEST_ENTRY})` } },
          })
        return commit(user, ref, manifest, uploaded, origin, lease)
      })
    },

    /**
     * A zip deploy: the zip's files are the whole deploy (no manifest). The body is spooled to
     * a temporary file and checked whole (deploy-zip.ts: each file inflated once, into a staging
     * file) before any byte is stored; both files are always removed. Then each distinct file
     * is stored from the staging file and the deploy committed as an archive's is.
     */
    async deployZip(user: User, ref: FolderRef, body: Readable, opts: { preview: boolean; message: string; source: DeploySource }, origin: string) {
      const file = await spoolZip(body, config.dataDir, zipBodyLimit(config.deployMaxBytes))
      try {
        const site = await readZip(file, {
          maxFiles: DEPLOY_MAX_FILES,
          maxEntries: ZIP_MAX_ENTRIES,
          maxDeployBytes: config.deployMaxBytes,
          maxFileBytes: config.maxUploadBytes,
        })
        try {
          return await withBlobLease(db, async (lease) => {
            const m: Manifest = { files: new Map(site.files.map((f) => [f.path, f.digest])), ...opts }
            // bytes taken down are refused before any is stored (451 / 1701), as in an archive
            await blobs.admit?.(m.files.values())
            const uploaded = new Map<string, Uploaded>()
            // the store hashes what it stores: each digest it gives back must be the one the
            // inflate gave (the staging file is the service's own; a mismatch is its fault, 500)
            const batched: ZipFileEntry[] = []
            const same = (f: ZipFileEntry, digest: string) => {
              if (digest !== f.digest) throw new Error(`zip deploy: ${JSON.stringify(f.path)} was staged as ${f.digest}, stored as ${digest}`)
            }
            let checked = 0
            const batch = createBlobBatch(blobs, (b) => same(batched[checked++], b.digest))
            for (const f of site.files) {
              if (uploaded.has(f.digest)) continue
              await lease.take()
              if (f.size <= SMALL_ENTRY) {
                batched.push(f)
                await batch.add(await site.read(f))
              } else same(f, (await blobs.put(site.open(f), { maxBytes: config.maxUploadBytes })).digest)
              uploaded.set(f.digest, { size: f.size, utf8: f.utf8, keyTokens: f.keyTokens })
            }
            await batch.flush()
            return await commit(user, ref, m, uploaded, origin, lease)
          })
        } finally {
          await site.close()
        }
      } finally {
        await fs.promises.rm(file, { force: true })
      }
    },

    /** A project's kept deploys, newest first, with the live one marked. */
    async list(user: User, ref: FolderRef) {
      const folder = await ownFolder(user, ref)
      const liveId = folder.is_published ? folder.live_deploy_id : null
      return { live_deploy_id: liveId, deploys: (await store.list(db.k, folder.id)).map((d) => view(d, liveId)) }
    },

    /**
     * A kept deploy's files for its download, checked before any byte is sent: the deploy
     * (404 / 1331) and bytes taken down since it was made (451 / 1701, as a promote of it).
     */
    async download(user: User, ref: FolderRef, deployId: string): Promise<DeployDownload> {
      const folder = await ownFolder(user, ref)
      const deploy = await store.get(db.k, folder.id, deployId)
      if (!deploy) throw new AppError('DEPLOY_NOT_FOUND', { params: { id: deployId } })
      const files = (await store.files(db.k, deployId)).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
      await blobs.admit?.(files.map((f) => f.digest))
      return { project: folder.name, id: deploy.id, message: deploy.message, createdAt: Number(deploy.created_at), files }
    },

    /**
     * Writes a download to `out` as a gzip'd tar that an archive deploy takes back whole: its
     * manifest (every path with its SHA-256, and the deploy's message) first, then each file.
     */
    async writeDownload(d: DeployDownload, out: Writable): Promise<void> {
      const manifest = { files: Object.fromEntries(d.files.map((f) => [f.path, f.digest])), message: d.message }
      const w = tarWriter(out, new Date(d.createdAt))
      try {
        await w.add(MANIFEST_ENTRY, Buffer.from(JSON.stringify(manifest)))
        for (const f of d.files) await w.add(f.path, { size: Number(f.size), open: () => blobs.get(f.digest) })
      } catch (e) {
        w.abort(e as Error)
      }
      await w.finish()
    },

    /** Makes a kept deploy live (rollback or promote: the same pointer switch). */
    async promote(user: User, ref: FolderRef, deployId: string) {
      const folder = await ownFolder(user, ref)
      await makeLive(user, folder, deployId)
      return { live_deploy_id: deployId }
    },

    /**
     * Rolls back to `deployId`, or by default to the newest kept deploy older than the live one
     * that visitors had: not a preview, or a preview promoted since (decision 154), as the live
     * pointer is under the user's lock (a deploy or promote that went live meanwhile is the one
     * rolled back). An unpublished project is refused (409 / 1336).
     */
    async rollback(user: User, ref: FolderRef, deployId: string | undefined) {
      const folder = await ownFolder(user, ref)
      // an unpublished project's pointer is hidden (the list shows null): a rollback neither
      // reads it nor publishes the project again (decision 158); promote is the explicit way.
      // Checked again under the lock, so an unpublish racing it wins
      const unpublished = () => new AppError('ROLLBACK_UNPUBLISHED', { params: { name: JSON.stringify(ref.display) } })
      if (!folder.is_published) throw unpublished()
      const target = deployId ?? (await previousLive(db.k, folder.id, folder.live_deploy_id))
      return { live_deploy_id: await makeLive(user, folder, target, unpublished, deployId === undefined) }
    },

    limits,
  }
}
export type DeploysService = ReturnType<typeof createDeploysService>
