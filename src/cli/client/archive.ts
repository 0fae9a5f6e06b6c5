import fs from 'node:fs'
import fsp from 'node:fs/promises'
import { PassThrough, type Readable } from 'node:stream'
import { createGzip } from 'node:zlib'
import tar from 'tar-stream'
import { ApiClient, encodePath } from './api.js'
import { ApiError, CliError } from './errors.js'
import { changedReason, checkLeftOut, hashCacheDir, hashFiles, nothingToDeploy, SMALL_FILE, walkFolder, type LocalFile } from './files.js'
import { formatBytes, type Reporter } from './progress.js'
import { nestedIndexHint, type FailedFile } from './deploy.js'
import { checkProjectName, defaultProject } from './project.js'
import { builtForRoot, linkLines } from './site-links.js'
import { MANIFEST_ENTRY, MESSAGE_MAX } from '../../util/deploy-manifest.js'
import { humanSize, sizeText } from '../../util/sizes.js'

/**
 * svc deploy through archive deploys (docs/api/deploys.md): the manifest check says which
 * digests the server lacks for the user, then one tar stream (gzip) carries the manifest and
 * only those files. Two requests whatever the size of the site; the deploy is the folder
 * exactly.
 */

export interface ArchiveOptions {
  dir: string
  /** How messages name the folder (an unpacked archive: the archive's name); default dir. */
  label?: string
  /** false: no hash cache (an unpacked archive's temporary folder is never seen again). */
  cache?: boolean
  project?: string
  preview: boolean
  message?: string
  dryRun: boolean
  dotfiles: boolean
  gzip: boolean
}

export interface ArchiveResult {
  success: boolean
  project: string
  files: number
  bytes: number
  ignored: number
  /** Folders left out by the built-in rules (node_modules/, __MACOSX/), said on stderr too. */
  left_out: string[]
  /** Files the archive carried (or would carry, with --dry-run). */
  uploaded: string[]
  uploaded_bytes: number
  /** Files not sent because another file of this deploy has the same bytes (stored once). */
  copies: number
  unchanged: number
  failed: FailedFile[]
  requests: number
  rate_limit_waits: number
  deploy_id: string | null
  preview: boolean
  published: boolean
  website_url: string | null
  site_url: string | null
  /** The project at the root of its own origin, when the server has one. */
  origin_url: string | null
  /** The folder's index.html or 404.html loads files from / (site-links.ts). */
  built_for_root: boolean
  /** A preview's URL: at the root of its own origin when the site is built for / and it has one. */
  preview_url: string | null
  dry_run: boolean
  duration_ms: number
  /** What the server said of the pages the archive carried (a form sending a file's name alone); also printed on stderr. */
  warnings: Array<{ path: string; message: string }>
}

/** The tar (optionally gzipped) of the manifest and the files to send, made as it is read. */
function archiveStream(manifest: Buffer, files: LocalFile[], gzip: boolean, onBytes: (n: number, fileDone: boolean) => void): Readable {
  const pack = tar.pack()
  const out = gzip ? pack.pipe(createGzip({ level: 1 })) : pack.pipe(new PassThrough())
  const fail = (e: unknown) => out.destroy(e as Error)
  // an entry that fails (a file that shrank) may fail the packer too: the loop reports it
  pack.on('error', () => {})
  void (async () => {
    try {
      await new Promise<void>((resolve, reject) =>
        pack.entry({ name: MANIFEST_ENTRY, size: manifest.length, mode: 0o644 }, manifest, (e) => (e ? reject(e) : resolve())),
      )
      for (const f of files) {
        // a file that changed, shrank or vanished since it was hashed stops the archive with
        // this error (the server then gets a cut stream and keeps the live deploy); bytes that
        // changed at the same size reach the server, which refuses their digest
        const changed = (why: string) => new CliError(`${f.path} changed while deploying (${why}); run svc deploy again`)
        let st: fs.Stats
        try {
          st = fs.statSync(f.abs)
        } catch (e) {
          throw new CliError(`${f.path} ${changedReason(e)}`)
        }
        if (st.isDirectory()) throw changed('it is now a folder')
        if (st.size !== f.size) throw changed(`${f.size} bytes when hashed, ${st.size} now`)
        if (f.size <= SMALL_FILE) {
          // small files: one synchronous read, handed to the packer whole (it calls back once
          // the entry is in its buffer, so the loop still waits for the socket)
          let bytes: Buffer
          try {
            bytes = fs.readFileSync(f.abs)
          } catch (e) {
            throw changed((e as Error).message)
          }
          if (bytes.length !== f.size) throw changed(`${f.size} bytes when hashed, ${bytes.length} now`)
          await new Promise<void>((resolve, reject) =>
            pack.entry({ name: f.path, size: f.size, mode: 0o644, mtime: st.mtime }, bytes, (e) => (e ? reject(e) : resolve())),
          )
          onBytes(bytes.length, true)
          continue
        }
        await new Promise<void>((resolve, reject) => {
          let read = 0
          const entry = pack.entry({ name: f.path, size: f.size, mode: 0o644, mtime: st.mtime }, (e) => (e ? reject(e) : resolve()))
          // never more than the size the entry declares: a file that grew is cut there (and its digest refused)
          const src = fs.createReadStream(f.abs, { end: f.size - 1 })
          const stop = (why: string) => {
            src.destroy()
            // at once: the failed entry also fails the packer, whose pipe would end the body with its own error
            const e = changed(why)
            fail(e)
            reject(e)
          }
          // the packer's entry fails when it gets fewer bytes than declared (the file shrank)
          entry.on('error', () => stop(`${f.size} bytes when hashed, ${read} read`))
          src.on('data', (c) => {
            read += c.length
            onBytes(c.length, false)
          })
          src.on('end', () => onBytes(0, true))
          src.on('error', (e) => stop(e.message))
          src.pipe(entry)
        })
      }
      pack.finalize()
    } catch (e) {
      fail(e)
    }
  })()
  return out
}

/**
 * A tree this large takes a while to read: its counts are checked against the server's limits
 * (GET deploy_limits) before any file is hashed, so a tree the server must refuse (1328) is
 * refused at once. Smaller trees are not asked about: the missing-files check refuses them as
 * cheaply, and a deploy stays two requests.
 */
const ASK_LIMITS_FROM = { files: 10_000, bytes: 1024 ** 3 }

export async function checkDeployLimits(api: ApiClient, files: number, bytes: number, dir: string): Promise<void> {
  if (files <= ASK_LIMITS_FROM.files && bytes <= ASK_LIMITS_FROM.bytes) return
  const r = await api.get('/api/folders/deploy_limits', { okStatuses: [404] })
  const d = r.status === 200 ? r.json?.data : undefined
  const maxFiles = Number(d?.max_files)
  const maxBytes = Number(d?.max_deploy_bytes)
  const over =
    maxFiles > 0 && files > maxFiles
      ? `${files} files; the server takes at most ${maxFiles} per deploy`
      : maxBytes > 0 && bytes > maxBytes
        ? `${humanSize(bytes)} in all; the server takes at most ${sizeText(maxBytes).en} per deploy`
        : null
  if (over)
    throw new CliError(
      `${dir} is too large to deploy: ${over} (error 1328); nothing was read or sent. Leave files out with .svcignore, or deploy parts as projects of their own`,
      {
        files,
        bytes,
        max_files: maxFiles || null,
        max_deploy_bytes: maxBytes || null,
      },
    )
}

/** Runs an archive deploy; null when the server has no archive deploys (the caller falls back to batches). */
export async function archiveDeploy(api: ApiClient, opts: ArchiveOptions, rep: Reporter): Promise<ArchiveResult | null> {
  const started = Date.now()
  // refused by the server only once the archive arrives: said before the folder is read
  if (opts.message !== undefined && opts.message.length > MESSAGE_MAX)
    throw new CliError(
      `the deploy message has ${opts.message.length} characters; the server takes at most ${MESSAGE_MAX} (error 1328); nothing was read or sent`,
    )
  const dirReal = await fsp.realpath(opts.dir).catch(() => {
    throw new CliError(`no such folder: ${opts.dir}`)
  })
  const project = checkProjectName(opts.project ?? defaultProject(dirReal).name)
  const walked = await walkFolder(dirReal, { dotfiles: opts.dotfiles, multipart: false, warn: (m) => rep.note(`warning: ${m}`) })
  const failed: FailedFile[] = walked.invalid.map((s) => ({ path: s.path, reason: s.reason }))
  await checkLeftOut(dirReal, opts.label ?? opts.dir, walked.leftOut, (m) => rep.note(m))
  if (walked.files.length === 0 && failed.length === 0) throw new CliError(nothingToDeploy(opts.label ?? opts.dir, walked.ignoredCount))
  // the deploy is the folder exactly: the server refuses one without a root index.html (1313)
  // at its manifest, so nothing is hashed or sent
  if (!walked.files.some((f) => f.path === 'index.html'))
    throw new CliError(
      `${opts.label ?? opts.dir} has no index.html at its root, and a deploy needs one (error 1313); nothing was sent${nestedIndexHint(opts.dir, walked.files, opts.label !== undefined)}`,
    )
  await checkDeployLimits(
    api,
    walked.files.length,
    walked.files.reduce((a, f) => a + f.size, 0),
    opts.label ?? opts.dir,
  )
  const hashed = await hashFiles(
    walked.files,
    (n) => rep.progress('hashing', n, walked.files.length),
    opts.cache === false ? undefined : { dir: hashCacheDir(), folder: dirReal, startedAt: walked.startedAt },
  )
  rep.clear()
  failed.push(...hashed.unreadable)
  const files = hashed.files
  const result: ArchiveResult = {
    success: false,
    project,
    files: walked.files.length,
    bytes: walked.files.reduce((a, f) => a + f.size, 0),
    ignored: walked.ignoredCount,
    left_out: walked.leftOut,
    uploaded: [],
    uploaded_bytes: 0,
    copies: 0,
    unchanged: 0,
    failed,
    requests: 0,
    rate_limit_waits: 0,
    deploy_id: null,
    preview: opts.preview,
    published: false,
    website_url: null,
    site_url: null,
    origin_url: null,
    built_for_root: false,
    preview_url: null,
    dry_run: opts.dryRun,
    duration_ms: 0,
    warnings: [],
  }
  const finish = () => {
    result.uploaded.sort()
    result.failed.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    result.requests = api.requests
    result.rate_limit_waits = api.rateLimitWaits
    result.duration_ms = Date.now() - started
    return result
  }

  const manifest = { files: Object.fromEntries(files.map((f) => [f.path, f.sha256])) }
  const body = Buffer.from(JSON.stringify({ ...manifest, source: 'cli', preview: opts.preview, ...(opts.message ? { message: opts.message } : {}) }))
  let send: LocalFile[] = []
  let t0 = Date.now()
  let bytes = 0
  let done = 0
  const show = (force = false) => {
    const secs = Math.max(0.001, (Date.now() - t0) / 1000)
    rep.progress(
      'uploading',
      done,
      send.length,
      `${formatBytes(bytes)}/${formatBytes(result.uploaded_bytes)}  ${formatBytes(Math.round(bytes / secs))}/s`,
      force,
    )
  }
  /** The check, then the archive of what it says is missing. */
  const checkAndSend = async () => {
    const check = await api.post(`/api/folders/${encodePath(project)}/deploys/missing`, { json: manifest, okStatuses: [404], idempotent: true })
    if (check.status === 404) {
      if (check.json?.error_code === 1404) return 'no-archives'
      throw ApiError.from(check.status, check.json, check.text, check.headers, check.where)
    }
    const missing = new Set<string>(check.json?.missing ?? [])
    const maxFile = Number(check.json?.limits?.max_file_bytes ?? Infinity)
    // one file per missing digest: the server stores equal bytes once
    send = []
    result.copies = 0
    const sent = new Set<string>()
    for (const f of files) {
      if (!missing.has(f.sha256)) continue
      if (f.size > maxFile) {
        failed.push({
          path: f.path,
          reason: `file too large: ${humanSize(f.size)}; the server takes at most ${sizeText(maxFile).en} per file`,
        })
        continue
      }
      if (sent.has(f.sha256)) {
        result.copies++
        continue
      }
      sent.add(f.sha256)
      send.push(f)
    }
    result.uploaded = send.map((f) => f.path)
    result.uploaded_bytes = send.reduce((a, f) => a + f.size, 0)
    result.unchanged = files.length - files.filter((f) => missing.has(f.sha256)).length
    if (failed.length > 0 || opts.dryRun) return 'not-sent'

    return api.post(`/api/folders/${encodePath(project)}/deploys`, {
      contentType: opts.gzip ? 'application/gzip' : 'application/x-tar',
      // the same tree twice leaves the same files live
      idempotent: true,
      body: () => {
        // a retry (after a rate-limit wait) sends the whole archive again
        t0 = Date.now()
        bytes = 0
        done = 0
        return archiveStream(body, send, opts.gzip, (n, fileDone) => {
          bytes += n
          if (fileDone) done++
          show()
        })
      },
    })
  }
  let r: Awaited<ReturnType<typeof api.post>>
  for (let attempt = 1; ; attempt++) {
    try {
      const outcome = await checkAndSend()
      if (outcome === 'no-archives') return null
      if (outcome === 'not-sent') {
        result.success = failed.length === 0
        return finish()
      }
      r = outcome
      break
    } catch (e) {
      // 1330: bytes the check counted as held went before the archive was stored; a second
      // check asks for them, once
      if (attempt > 1 || !(e instanceof ApiError) || e.code !== 1330) throw e
      rep.clear()
      rep.note(`error 1330: ${e.message}; asking the server again which files it lacks`)
    }
  }
  if (send.length) show(true)
  rep.clear()
  const d = r.json ?? {}
  result.deploy_id = d.deploy?.id ?? null
  result.published = !opts.preview
  result.website_url = d.website_url ?? null
  result.site_url = d.site_url ?? null
  result.origin_url = d.origin_url ?? null
  result.built_for_root = await builtForRoot(dirReal)
  result.preview_url = (result.built_for_root ? d.preview_origin_url : null) ?? d.preview_site_url ?? d.preview_url ?? null
  result.warnings = (Array.isArray(d.warnings) ? d.warnings : []).map((w: { path?: unknown; message?: unknown }) => ({
    path: String(w.path),
    message: String(w.message),
  }))
  for (const w of result.warnings) rep.note(`warning: ${w.message}`)
  result.success = true
  return finish()
}

/** The human summary of an archive deploy. */
export function describeArchive(r: ArchiveResult): string {
  const lines: string[] = []
  lines.push(`${r.project}: ${r.files} file${r.files === 1 ? '' : 's'} (${formatBytes(r.bytes)})${r.ignored ? `, ${r.ignored} ignored` : ''}`)
  lines.push(
    `${r.dry_run || r.failed.length > 0 ? 'would upload' : 'uploaded'} ${r.uploaded.length} file${r.uploaded.length === 1 ? '' : 's'} (${formatBytes(r.uploaded_bytes)})${r.copies ? `, ${r.copies} more with the same bytes as one of those` : ''}, ${r.unchanged} unchanged`,
  )
  if (r.dry_run) for (const p of r.uploaded.slice(0, 200)) lines.push(`  ${p}`)
  if (r.dry_run && r.uploaded.length > 200) lines.push(`  ... and ${r.uploaded.length - 200} more`)
  for (const f of r.failed.slice(0, 20)) lines.push(`  failed: ${f.path}: ${f.reason}${f.error_code !== undefined ? ` (error ${f.error_code})` : ''}`)
  if (r.failed.length > 20) lines.push(`  ... and ${r.failed.length - 20} more`)
  if (r.failed.length) lines.push(`${r.failed.length} file${r.failed.length === 1 ? '' : 's'} failed; nothing deployed`)
  else if (r.deploy_id && r.preview) lines.push(`preview ${r.deploy_id}: ${r.preview_url}\n  make it live: svc promote ${r.deploy_id} --project ${r.project}`)
  else if (r.deploy_id) lines.push(...linkLines(`deploy ${r.deploy_id} is live`, r))
  lines.push(
    `${(r.duration_ms / 1000).toFixed(1)} s, ${r.requests} request${r.requests === 1 ? '' : 's'}${r.rate_limit_waits ? `, ${r.rate_limit_waits} rate-limit wait${r.rate_limit_waits === 1 ? '' : 's'}` : ''}`,
  )
  return lines.join('\n')
}
