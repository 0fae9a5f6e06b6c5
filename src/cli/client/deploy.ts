import crypto from 'node:crypto'
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { ApiClient, encodePath } from './api.js'
import { ApiError, CliError } from './errors.js'
import { changedReason, checkLeftOut, hashCacheDir, hashFiles, mapLimit, nothingToDeploy, walkFolder, type LocalFile, type SkippedFile } from './files.js'
import { formatBytes, type Reporter } from './progress.js'
import { builtForRoot, linkLines } from './site-links.js'
import { contentTypeFor } from '../../util/content-types.js'
import { checkProjectName, defaultProject } from './project.js'
import { humanSize, sizeText } from '../../util/sizes.js'

/** Per-request limits of the server (GET /api/folders/limits). */
export interface FolderLimits {
  max_files_per_request: number
  max_request_bytes: number
  /** null when the server does not say (then a file is only limited by max_request_bytes). */
  max_file_bytes: number | null
}

/** Used when the server has no limits endpoint (e.g. the reference service). */
export const FALLBACK_LIMITS: FolderLimits = { max_files_per_request: 50, max_request_bytes: 10 * 1024 * 1024, max_file_bytes: null }

export interface DeployOptions {
  dir: string
  /** How messages name the folder (an unpacked archive: the archive's name); default dir. */
  label?: string
  /** false: no hash cache (an unpacked archive's temporary folder is never seen again). */
  cache?: boolean
  project?: string
  publish: boolean
  delete: boolean
  dryRun: boolean
  dotfiles: boolean
  concurrency: number
  /** Lower the server's limits (never raise them): benchmarks, tests, slow links. */
  maxBatchFiles?: number
  maxBatchBytes?: number
}

export interface FailedFile {
  path: string
  reason: string
  error_code?: number | string
}

export interface DeployResult {
  success: boolean
  project: string
  files: number
  bytes: number
  ignored: number
  /** Folders left out by the built-in rules (node_modules/, __MACOSX/), said on stderr too. */
  left_out: string[]
  uploaded: string[]
  uploaded_bytes: number
  unchanged: number
  deleted: string[]
  /** Files on the server that are not in the folder (deleted only with --delete). */
  extra: string[]
  failed: FailedFile[]
  upload_requests: number
  requests: number
  rate_limit_waits: number
  diff_supported: boolean
  published: boolean
  already_published: boolean | null
  website_url: string | null
  /** The site on the user's own origin, when the server has one. */
  site_url: string | null
  /** The project at the root of its own origin, when the server has one. */
  origin_url: string | null
  /** The folder's index.html or 404.html loads files from / (site-links.ts). */
  built_for_root: boolean
  dry_run: boolean
  duration_ms: number
  /** The server's warnings of the pages the batches stored (decision 281), in path order. */
  warnings: Array<{ path: string; message: string }>
}

const FIELD_OVERWRITE = 'overwrite_files'

/**
 * Bytes of one file part's header in the multipart body, labelled with the type the server
 * gives the file (without a charset: the bytes are not read for it). Its length depends only
 * on the path, which multipartSize relies on.
 */
function partHeader(boundary: string, file: { path: string }): Buffer {
  const type = contentTypeFor(file.path, false)
  return Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="files[]"; filename="${file.path}"\r\nContent-Type: ${type}\r\n\r\n`, 'utf8')
}

function fieldPart(boundary: string, name: string, value: string): Buffer {
  return Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`, 'utf8')
}

/** A boundary of fixed length, so sizes can be planned before it is chosen. */
const newBoundary = () => `----svc-deploy-${crypto.randomBytes(16).toString('hex')}`
const BOUNDARY_LEN = newBoundary().length

/** Size of the multipart body that carries these files (exact; see buildBody). */
export function multipartSize(files: Array<{ path: string; size: number }>): number {
  const b = 'x'.repeat(BOUNDARY_LEN)
  let n = fieldPart(b, FIELD_OVERWRITE, 'true').length + Buffer.byteLength(`--${b}--\r\n`)
  for (const f of files) n += partSize(b, f)
  return n
}

function partSize(boundary: string, f: { path: string; size: number }): number {
  return partHeader(boundary, f).length + f.size + 2
}

export interface BatchPlan {
  batches: LocalFile[][]
  /** Files that can never be sent under these limits. */
  tooLarge: FailedFile[]
}

/**
 * Splits files into upload requests that respect the limits: at most max_files_per_request
 * parts and max_request_bytes of multipart body each (headers and boundaries counted). Files
 * over max_file_bytes, or too large for a request on their own, are reported instead.
 */
export function planBatches(files: LocalFile[], limits: FolderLimits): BatchPlan {
  const b = 'x'.repeat(BOUNDARY_LEN)
  const base = multipartSize([])
  const batches: LocalFile[][] = []
  const tooLarge: FailedFile[] = []
  let cur: LocalFile[] = []
  let curBytes = base
  for (const f of files) {
    if (limits.max_file_bytes !== null && f.size > limits.max_file_bytes) {
      tooLarge.push({
        path: f.path,
        reason: `file too large: ${humanSize(f.size)}; the server takes at most ${sizeText(limits.max_file_bytes).en} per file`,
      })
      continue
    }
    const size = partSize(b, f)
    if (base + size > limits.max_request_bytes) {
      tooLarge.push({
        path: f.path,
        reason: `file too large: ${humanSize(f.size)} does not fit in one request of at most ${sizeText(limits.max_request_bytes).en}`,
      })
      continue
    }
    if (cur.length >= limits.max_files_per_request || curBytes + size > limits.max_request_bytes) {
      batches.push(cur)
      cur = []
      curBytes = base
    }
    cur.push(f)
    curBytes += size
  }
  if (cur.length) batches.push(cur)
  return { batches, tooLarge }
}

/** Reads a batch's files and checks each still has the size and hash it was planned with. */
async function readBatch(batch: LocalFile[]): Promise<{ ok: Array<LocalFile & { data: Buffer }>; changed: FailedFile[] }> {
  const ok: Array<LocalFile & { data: Buffer }> = []
  const changed: FailedFile[] = []
  for (const f of batch) {
    let data: Buffer
    try {
      data = await fsp.readFile(f.abs)
    } catch (e) {
      changed.push({ path: f.path, reason: changedReason(e) })
      continue
    }
    if (data.length !== f.size || crypto.createHash('sha256').update(data).digest('hex') !== f.sha256) {
      changed.push({ path: f.path, reason: 'changed while deploying (other bytes than when hashed); run svc deploy again' })
      continue
    }
    ok.push({ ...f, data })
  }
  return { ok, changed }
}

/** The multipart body as chunks (64 KiB at most), counting the file bytes handed to the socket. */
function bodyChunks(boundary: string, files: Array<{ path: string; data: Buffer }>, onBytes: (n: number) => void): () => AsyncIterable<Buffer> {
  const pieces: Array<{ buf: Buffer; data: boolean }> = [{ buf: fieldPart(boundary, FIELD_OVERWRITE, 'true'), data: false }]
  for (const f of files) pieces.push({ buf: partHeader(boundary, f), data: false }, { buf: f.data, data: true }, { buf: Buffer.from('\r\n'), data: false })
  pieces.push({ buf: Buffer.from(`--${boundary}--\r\n`), data: false })
  return async function* () {
    for (const p of pieces) {
      for (let i = 0; i < p.buf.length; i += 65536) {
        const c = p.buf.subarray(i, i + 65536)
        if (p.data) onBytes(c.length)
        yield c
      }
    }
  }
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0

/** GET /api/folders/limits; the fallback when the server has no such endpoint. */
export async function fetchLimits(api: ApiClient, note: (m: string) => void): Promise<FolderLimits> {
  const r = await api.get('/api/folders/limits', { okStatuses: [404] })
  const d = r.json?.data
  if (r.status === 404 || !d || !isNum(d.max_files_per_request) || !isNum(d.max_request_bytes)) {
    note(
      `the server publishes no folder upload limits; using ${FALLBACK_LIMITS.max_files_per_request} files and ${humanSize(FALLBACK_LIMITS.max_request_bytes)} per request`,
    )
    return FALLBACK_LIMITS
  }
  return {
    max_files_per_request: Math.floor(d.max_files_per_request),
    max_request_bytes: Math.floor(d.max_request_bytes),
    max_file_bytes: isNum(d.max_file_bytes) ? Math.floor(d.max_file_bytes) : null,
  }
}

/** Largest JSON body of one diff request (the server's default JSON limit is 1 MiB). */
const DIFF_CHUNK_BYTES = 512 * 1024

/**
 * POST /api/folders/{folder}/diff: which files the server lacks or holds with another hash, and
 * which server files are not local. A large folder is asked about in several requests of at
 * most 512 KiB each (every answer's `extra` lists all server files outside that request, so
 * one of them filtered by the whole local list is exact). Without the endpoint (404) every
 * file is uploaded.
 */
async function fetchDiff(
  api: ApiClient,
  folder: string,
  files: LocalFile[],
  note: (m: string) => void,
): Promise<{ upload: Set<string>; extra: string[]; supported: boolean }> {
  const chunks: Array<Record<string, string>> = [{}]
  let size = 0
  for (const f of files) {
    const entry = Buffer.byteLength(JSON.stringify(f.path)) + 68
    if (size + entry > DIFF_CHUNK_BYTES && Object.keys(chunks[chunks.length - 1]).length) {
      chunks.push({})
      size = 0
    }
    chunks[chunks.length - 1][f.path] = f.sha256
    size += entry
  }
  const known = new Set(files.map((f) => f.path))
  const upload = new Set<string>()
  let extra: string[] = []
  for (let i = 0; i < chunks.length; i++) {
    const r = await api.post(`/api/folders/${encodePath(folder)}/diff`, { json: { files: chunks[i] }, okStatuses: [403, 404], idempotent: true })
    // a project that does not exist yet (1312, as its listing answers): everything is new
    if (r.status === 403 && r.json?.error_code === 1312) return { upload: new Set(known), extra: [], supported: true }
    if (r.status === 403) throw ApiError.from(r.status, r.json, r.text, r.headers, r.where)
    if (r.status === 404) {
      note('the server cannot compare file hashes (no diff endpoint); uploading every file')
      return { upload: new Set(known), extra: [], supported: false }
    }
    const d = r.json?.data ?? {}
    for (const p of Array.isArray(d.upload) ? d.upload : []) if (typeof p === 'string' && p in chunks[i]) upload.add(p)
    if (i === 0) extra = (Array.isArray(d.extra) ? d.extra : []).filter((p: unknown): p is string => typeof p === 'string' && !known.has(p))
  }
  return { upload, extra, supported: true }
}

/** Per-file failures of a batch answer ({failed_files, errors[{file, message, error_code}]}). */
function batchFailures(body: any, batch: Array<{ path: string }>, fallback: string): FailedFile[] {
  const out: FailedFile[] = []
  const seen = new Set<string>()
  const errors: any[] = Array.isArray(body?.errors) ? body.errors : []
  for (const e of errors) {
    const p = typeof e?.file === 'string' ? e.file : undefined
    if (!p || seen.has(p)) continue
    seen.add(p)
    out.push({ path: p, reason: typeof e.message === 'string' ? e.message : fallback, error_code: e.error_code })
  }
  for (const p of Array.isArray(body?.failed_files) ? body.failed_files : []) {
    if (typeof p === 'string' && !seen.has(p)) {
      seen.add(p)
      out.push({ path: p, reason: fallback })
    }
  }
  // a failed count without names: blame the whole batch rather than hide it
  if (out.length === 0 && Number(body?.failed_count) > 0) for (const f of batch) out.push({ path: f.path, reason: fallback })
  return out
}

/**
 * The hint for a folder without a root index.html: the shallowest index.html further down (a
 * build folder sent from its parent: dist/index.html) and the command that deploys its folder.
 */
export function nestedIndexHint(dir: string, files: ReadonlyArray<{ path: string }>, archive = false): string {
  const depth = (p: string) => p.split('/').length
  const nested = files
    .map((f) => f.path)
    .filter((p) => p.endsWith('/index.html'))
    .sort((a, b) => depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0))[0]
  if (nested === undefined) return ''
  // an unpacked archive's folder is temporary: name the folder inside the archive instead
  if (archive) return `; ${nested} is in it: make the archive of ${path.dirname(nested)}/ alone`
  return `; ${nested} is in it: deploy that folder, svc deploy ${path.join(dir, path.dirname(nested))}`
}

/**
 * svc deploy: walk, hash, diff, upload what changed in batches within the server's limits,
 * optionally delete what is gone, publish. Failures of single files are collected; when any
 * file failed, nothing is deleted or published and the result says success: false.
 */
export async function deploy(api: ApiClient, opts: DeployOptions, rep: Reporter): Promise<DeployResult> {
  const started = Date.now()
  const dirReal = await fsp.realpath(opts.dir).catch(() => {
    throw new CliError(`no such folder: ${opts.dir}`)
  })
  const project = checkProjectName(opts.project ?? defaultProject(dirReal).name)

  const walked = await walkFolder(dirReal, { dotfiles: opts.dotfiles, warn: (m) => rep.note(`warning: ${m}`) })
  const failed: FailedFile[] = walked.invalid.map((s: SkippedFile) => ({ path: s.path, reason: s.reason }))
  const totalBytes = walked.files.reduce((a, f) => a + f.size, 0)
  await checkLeftOut(dirReal, opts.label ?? opts.dir, walked.leftOut, (m) => rep.note(m))
  if (walked.files.length === 0 && failed.length === 0) throw new CliError(nothingToDeploy(opts.label ?? opts.dir, walked.ignoredCount))

  const hashed = await hashFiles(
    walked.files,
    (n) => rep.progress('hashing', n, walked.files.length),
    opts.cache === false ? undefined : { dir: hashCacheDir(), folder: dirReal, startedAt: walked.startedAt },
  )
  rep.clear()
  const files = hashed.files
  failed.push(...hashed.unreadable)

  let limits = await fetchLimits(api, (m) => rep.note(m))
  limits = {
    max_files_per_request: Math.max(1, Math.min(limits.max_files_per_request, opts.maxBatchFiles ?? Infinity)),
    max_request_bytes: Math.min(limits.max_request_bytes, opts.maxBatchBytes ?? Infinity),
    max_file_bytes: limits.max_file_bytes,
  }
  const diff = await fetchDiff(api, project, files, (m) => rep.note(m)).catch((e) => {
    if (e instanceof ApiError && e.code === 1110) rep.note('the server refuses a file name (below); rename the file, or list it in .svcignore to leave it out')
    throw e
  })
  // the server publishes a project that is not live only with a root index.html (1313): without
  // one here or kept on the server, the publish would fail after every upload, leaving the
  // project's files changed, so nothing is sent
  if (opts.publish && !walked.files.some((f) => f.path === 'index.html') && (opts.delete || !diff.extra.includes('index.html'))) {
    const list = await api.get('/api/folders', { okStatuses: [404] })
    const live = ((list.json?.folders ?? []) as Array<{ name: string; is_published?: boolean }>).some((f) => f.name === project && f.is_published)
    if (!live)
      throw new CliError(
        `${opts.label ?? opts.dir} has no index.html at its root, and a project is published only with one (error 1313); nothing was uploaded. Add it, or deploy with --no-publish${nestedIndexHint(opts.dir, walked.files, opts.label !== undefined)}`,
      )
  }
  const toUpload = files.filter((f) => diff.upload.has(f.path))
  const plan = planBatches(toUpload, limits)
  failed.push(...plan.tooLarge)
  const planned = plan.batches.flat()
  const plannedBytes = planned.reduce((a, f) => a + f.size, 0)

  const result: DeployResult = {
    success: false,
    project,
    files: walked.files.length,
    bytes: totalBytes,
    ignored: walked.ignoredCount,
    left_out: walked.leftOut,
    uploaded: [],
    uploaded_bytes: 0,
    unchanged: files.length - toUpload.length,
    deleted: [],
    extra: diff.extra,
    failed,
    upload_requests: 0,
    requests: 0,
    rate_limit_waits: 0,
    diff_supported: diff.supported,
    published: false,
    already_published: null,
    website_url: null,
    site_url: null,
    origin_url: null,
    built_for_root: false,
    dry_run: opts.dryRun,
    duration_ms: 0,
    warnings: [],
  }

  if (opts.dryRun) {
    result.uploaded = planned.map((f) => f.path)
    result.uploaded_bytes = plannedBytes
    if (opts.delete) result.deleted = diff.extra
    result.success = failed.length === 0
    return finish(result, api, started)
  }

  // uploads to a live project go live file by file: --no-publish cannot hold them back, so it
  // is refused before anything is sent (an archive deploy, without --batch, makes a preview)
  if (!opts.publish) {
    const list = await api.get('/api/folders', { okStatuses: [404] })
    const live = ((list.json?.folders ?? []) as Array<{ name: string; is_published?: boolean }>).some((f) => f.name === project && f.is_published)
    if (live)
      throw new CliError(
        `${project} is live: batch uploads to it go live file by file, so --no-publish cannot hold them back. Deploy without --batch for a preview (svc deploy ${opts.label ?? opts.dir} --project ${project} --preview), or unpublish the project first`,
      )
  }

  // a file gone or changed since it was hashed fails the deploy (decision 114): looked for in
  // every file before the first batch, since batches to a live project go live one by one
  const gone: FailedFile[] = []
  for (const f of planned) {
    let why: string | null = null
    try {
      const st = fs.statSync(f.abs)
      if (st.isDirectory()) why = 'changed while deploying (it is now a folder); run svc deploy again'
      else if (st.size !== f.size) why = `changed while deploying (${f.size} bytes when hashed, ${st.size} now); run svc deploy again`
    } catch (e) {
      why = changedReason(e)
    }
    if (why) gone.push({ path: f.path, reason: why })
  }
  if (gone.length > 0) {
    failed.push(...gone)
    return finish(result, api, started)
  }

  // upload
  let sentDone = 0
  const inFlight = new Map<number, number>()
  const show = () => {
    let sent = sentDone
    for (const v of inFlight.values()) sent += v
    rep.progress('uploading', result.uploaded.length, planned.length, `${formatBytes(Math.min(sent, plannedBytes))}/${formatBytes(plannedBytes)}`)
  }
  if (planned.length) show()
  await mapLimit(plan.batches, Math.max(1, opts.concurrency), async (batch, i) => {
    const { ok, changed } = await readBatch(batch)
    failed.push(...changed)
    if (ok.length === 0) return
    const boundary = newBoundary()
    const length = multipartSize(ok)
    const batchBytes = ok.reduce((a, f) => a + f.size, 0)
    const body = bodyChunks(boundary, ok, (n) => {
      inFlight.set(i, Math.min((inFlight.get(i) ?? 0) + n, batchBytes))
      show()
    })
    let answer: any
    try {
      result.upload_requests++
      const r = await api.post(`/api/folders/${encodePath(project)}/batch_upload`, {
        idempotent: true,
        body: () => {
          inFlight.set(i, 0)
          return body()
        },
        contentType: `multipart/form-data; boundary=${boundary}`,
        contentLength: length,
      })
      answer = r.json
    } catch (e) {
      inFlight.delete(i)
      // an answer that names the files that failed (all duplicates, ...) is per file; anything else stops the deploy
      if (e instanceof ApiError && (Array.isArray((e.body as any)?.failed_files) || Array.isArray((e.body as any)?.errors))) {
        failed.push(...batchFailures(e.body, ok, e.message))
        return
      }
      throw e
    }
    inFlight.delete(i)
    const bad = batchFailures(answer, ok, typeof answer?.message === 'string' ? answer.message : 'upload failed')
    const badSet = new Set(bad.map((b) => b.path))
    failed.push(...bad)
    // a page that would misbehave goes up all the same: the server says why, printed as it comes
    for (const w of Array.isArray(answer?.warnings) ? answer.warnings : []) {
      const warning = { path: String(w?.path), message: String(w?.message) }
      result.warnings.push(warning)
      rep.note(`warning: ${warning.message}`)
    }
    for (const f of ok) {
      if (!badSet.has(f.path)) {
        result.uploaded.push(f.path)
        result.uploaded_bytes += f.size
      }
    }
    sentDone += batchBytes
    show()
  })
  rep.clear()

  if (failed.length > 0) {
    result.success = false
    return finish(result, api, started)
  }

  // delete files that are gone locally
  if (opts.delete && diff.extra.length) {
    let done = 0
    await mapLimit(diff.extra, Math.max(1, opts.concurrency), async (p) => {
      try {
        await api.delete(`/api/folders/${encodePath(project)}/file/${encodePath(p)}`)
        result.deleted.push(p)
      } catch (e) {
        if (!(e instanceof ApiError) || e.status >= 500 || e.status === 401 || e.status === 429) throw e
        failed.push({ path: p, reason: `delete failed: ${e.message}`, error_code: e.code })
      }
      rep.progress('deleting', ++done, diff.extra.length)
    })
    rep.clear()
    if (failed.length > 0) return finish(result, api, started)
  }

  if (opts.publish) {
    const r = await api.post(`/api/folders/${encodePath(project)}/publish`, { idempotent: true })
    result.published = r.json?.is_published !== false
    result.already_published = typeof r.json?.already_published === 'boolean' ? r.json.already_published : null
    result.website_url = typeof r.json?.website_url === 'string' ? r.json.website_url : null
    result.site_url = typeof r.json?.site_url === 'string' ? r.json.site_url : null
    result.origin_url = typeof r.json?.origin_url === 'string' ? r.json.origin_url : null
    result.built_for_root = await builtForRoot(dirReal)
  }
  result.success = true
  return finish(result, api, started)
}

function finish(r: DeployResult, api: ApiClient, started: number): DeployResult {
  r.uploaded.sort()
  r.deleted.sort()
  r.failed.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  r.warnings.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  r.requests = api.requests
  r.rate_limit_waits = api.rateLimitWaits
  r.duration_ms = Date.now() - started
  return r
}

/** Paths a --dry-run summary names, per list. */
const DRY_RUN_LIST = 200

/** The human summary of a deploy. */
export function describeDeploy(r: DeployResult): string {
  const lines: string[] = []
  const verb = r.dry_run ? 'would upload' : 'uploaded'
  lines.push(`${r.project}: ${r.files} file${r.files === 1 ? '' : 's'} (${formatBytes(r.bytes)})${r.ignored ? `, ${r.ignored} ignored` : ''}`)
  lines.push(
    `${verb} ${r.uploaded.length} file${r.uploaded.length === 1 ? '' : 's'} (${formatBytes(r.uploaded_bytes)})${r.dry_run ? '' : ` in ${r.upload_requests} request${r.upload_requests === 1 ? '' : 's'}`}, ${r.unchanged} unchanged`,
  )
  // --dry-run names what would change, as the archive deploy's does: a --delete must be seen before it is run
  const list = (paths: string[], mark: string) => {
    for (const p of paths.slice(0, DRY_RUN_LIST)) lines.push(`  ${mark}${p}`)
    if (paths.length > DRY_RUN_LIST) lines.push(`  ... and ${paths.length - DRY_RUN_LIST} more`)
  }
  if (r.dry_run) list(r.uploaded, '')
  if (r.extra.length) {
    if (r.deleted.length) lines.push(`${r.dry_run ? 'would delete' : 'deleted'} ${r.deleted.length} file${r.deleted.length === 1 ? '' : 's'} not in the folder`)
    else
      lines.push(
        `${r.extra.length} file${r.extra.length === 1 ? '' : 's'} on the server ${r.extra.length === 1 ? 'is' : 'are'} not in the folder (kept; --delete removes them)`,
      )
    if (r.dry_run && r.deleted.length) list(r.deleted, 'delete ')
  }
  for (const f of r.failed.slice(0, 20)) lines.push(`  failed: ${f.path}: ${f.reason}${f.error_code !== undefined ? ` (error ${f.error_code})` : ''}`)
  if (r.failed.length > 20) lines.push(`  ... and ${r.failed.length - 20} more`)
  if (r.failed.length) lines.push(`${r.failed.length} file${r.failed.length === 1 ? '' : 's'} failed; not ${r.dry_run ? 'deploying' : 'published'}`)
  else if (r.published) lines.push(...linkLines(`published${r.already_published ? ' (already published)' : ''}`, r))
  else if (!r.dry_run) lines.push('not published (--no-publish)')
  lines.push(
    `${(r.duration_ms / 1000).toFixed(1)} s, ${r.requests} request${r.requests === 1 ? '' : 's'}${r.rate_limit_waits ? `, ${r.rate_limit_waits} rate-limit wait${r.rate_limit_waits === 1 ? '' : 's'}` : ''}`,
  )
  return lines.join('\n')
}
