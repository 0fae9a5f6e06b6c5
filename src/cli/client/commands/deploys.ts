/**
 * svc deploys, svc rollback, svc promote, svc delete, svc user-site: a project's kept deploys,
 * its live pointer, the project itself, its place at the root of the user's origin.
 */
import fs from 'node:fs'
import type http from 'node:http'
import path from 'node:path'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'
import { encodePath, type ApiClient } from '../api.js'
import { parse } from '../args.js'
import { CLIENT_HELP } from '../help.js'
import { formatBytes } from '../progress.js'
import { folderProjectOf } from '../project.js'
import { ApiError, CliError, UsageError } from '../errors.js'
import { flagsOf, localTime, need, noMore, table, type Ctx } from './context.js'

/**
 * --project, else the current folder's project as svc deploy . names it (project.ts
 * folderProjectOf: a build folder's is the folder above it's, said on stderr as the deploy says it).
 */
/** The project a command's positional argument names, which --project may repeat but not contradict. */
function oneProject(named: string | undefined, flag: string | undefined): string | undefined {
  if (named !== undefined && flag !== undefined && named !== flag) {
    throw new UsageError(`two projects named: "${named}" and --project "${flag}"`, true)
  }
  return named
}

async function projectOf(ctx: Ctx, api: ApiClient, v: { project?: string }): Promise<string> {
  if (v.project !== undefined) return v.project
  return folderProjectOf(api, fs.realpathSync('.'), (line) => ctx.rep.note(line))
}

/**
 * svc deploys [list] [PROJECT] [--project NAME]: the project named either way, else the current
 * folder's; svc deploys download ID: one kept deploy saved as its archive.
 */
export async function deploysCommand(ctx: Ctx, args: string[]): Promise<number> {
  if (args[0] === 'download') return downloadCommand(ctx, args.slice(1))
  const { values: v, positionals } = parse(args[0] === 'list' ? args.slice(1) : args, CLIENT_HELP.deploys.subs.list)
  noMore(positionals, 1)
  const named = oneProject(positionals[0], v.project)
  const api = ctx.api(flagsOf(v))
  const project = named ?? (await projectOf(ctx, api, v))
  const r = await api.get(`/api/folders/${encodePath(project)}/deploys`)
  const deploys: Array<Record<string, any>> = r.json?.deploys ?? []
  if (ctx.json) {
    ctx.emit({ success: true, project, live_deploy_id: r.json?.live_deploy_id ?? null, deploys })
    return 0
  }
  if (deploys.length === 0) {
    ctx.out(`${project}: no deploys yet`)
    return 0
  }
  ctx.out(
    table(
      ['', 'ID', 'CREATED', 'FILES', 'SIZE', 'SOURCE', 'MESSAGE'],
      deploys.map((d) => [
        // a preview once promoted was live: a plain rollback may go back to it; a partial one
        // (file-API writes) it skips
        d.is_live ? 'live' : d.is_preview ? (d.promoted_at ? 'promoted' : 'preview') : d.is_partial ? 'partial' : '',
        String(d.id),
        localTime(d.created_at),
        String(d.file_count),
        formatBytes(Number(d.bytes)),
        String(d.source),
        String(d.message ?? ''),
      ]),
    ),
  )
  return 0
}

export async function rollbackCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.rollback.flags)
  noMore(positionals, 1)
  const api = ctx.api(flagsOf(v))
  const project = await projectOf(ctx, api, v)
  const r = await api
    .post(`/api/folders/${encodePath(project)}/rollback`, {
      json: positionals[0] ? { deploy_id: positionals[0] } : {},
      // to a named deploy: twice is once; to "the one before": twice goes back two deploys
      idempotent: positionals[0] !== undefined,
    })
    .catch((e: unknown) => {
      // `svc rollback site` from a folder of another name: the ID went to this folder's project
      if (e instanceof ApiError && e.code === 1312 && positionals[0] !== undefined && v.project === undefined) {
        const hint = `no project "${project}" (this folder's name) to roll back; for project "${positionals[0]}": svc rollback --project ${positionals[0]}`
        throw new ApiError(e.status, e.code, e.type, e.message, hint, e.body, e.retryAfter)
      }
      throw e
    })
  if (ctx.json) ctx.emit({ success: true, project, live_deploy_id: r.json?.live_deploy_id })
  else ctx.out(`${project}: deploy ${r.json?.live_deploy_id} is live`)
  return 0
}

/** svc delete PROJECT --force: the project whole, named on the line (never the current folder's). */
export async function deleteCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.delete.flags)
  const project = need(positionals[0], 'the project to delete (PROJECT)')
  noMore(positionals, 1)
  // as svc user delete: a mistyped line must not take a site and its history
  if (v.force !== true) throw new UsageError(`svc delete removes project ${project} with its files, kept deploys and previews for good: add --force to do it`)
  const r = await ctx.api(flagsOf(v)).delete(`/api/folders/${encodePath(project)}`)
  const files = Number(r.json?.deleted_files ?? 0)
  if (ctx.json) ctx.emit({ success: true, project, deleted_files: files })
  else ctx.out(`deleted project ${project} (${files} files, with its kept deploys)`)
  return 0
}

export async function promoteCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.promote.flags)
  const id = need(positionals[0], 'the deploy to make live (ID)')
  noMore(positionals, 1)
  const api = ctx.api(flagsOf(v))
  const project = await projectOf(ctx, api, v)
  const r = await api.post(`/api/folders/${encodePath(project)}/deploys/${encodeURIComponent(id)}/promote`, { idempotent: true })
  if (ctx.json) ctx.emit({ success: true, project, live_deploy_id: r.json?.live_deploy_id })
  else ctx.out(`${project}: deploy ${r.json?.live_deploy_id} is live`)
  return 0
}

/**
 * svc deploys download ID [--project NAME] [-o FILE] [--force]: the deploy's archive
 * (GET .../deploys/{id}/archive) saved to FILE. The bytes go to a temporary file beside it,
 * which is checked to be a whole gzip stream and only then renamed to FILE: an error, a cut
 * connection, Ctrl-C or SIGTERM leaves no file, partial or not. An existing FILE is kept
 * unless --force.
 */
async function downloadCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.deploys.subs.download)
  const id = need(positionals[0], 'the deploy to download (ID)')
  noMore(positionals, 1)
  if (v.output === '') throw new UsageError('-o takes a file or folder name, not an empty one', true)
  const api = ctx.api(flagsOf(v))
  const project = await projectOf(ctx, api, v)
  const own = `${project}-${id}.tar.gz`.replace(/[^\w.-]/g, '_')
  let dest = v.output ?? own
  if (v.output !== undefined && isDirectory(v.output)) dest = path.join(v.output, own)
  const force = v.force === true
  if (!force && fs.existsSync(dest)) throw new CliError(`${dest} exists; --force replaces it`)
  const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.${process.pid}.partial`)
  const removeTmp = () => fs.rmSync(tmp, { force: true })
  // Ctrl-C or a SIGTERM removes the partial file, then ends the process as the signal would have
  const onSignal = (signal: NodeJS.Signals) => {
    removeTmp()
    process.kill(process.pid, signal)
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  let bytes = 0
  try {
    await api.get(`/api/folders/${encodePath(project)}/deploys/${encodeURIComponent(id)}/archive`, {
      sink: async (res) => {
        bytes = await saveGzip(res, tmp)
      },
    })
    place(tmp, dest, force)
  } catch (e) {
    removeTmp()
    throw e
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
  if (ctx.json) ctx.emit({ success: true, project, deploy_id: id, file: dest, bytes })
  else ctx.out(`${project}: deploy ${id} saved to ${dest} (${formatBytes(bytes)})`)
  return 0
}

const isDirectory = (p: string): boolean => fs.statSync(p, { throwIfNoEntry: false })?.isDirectory() === true

/**
 * Writes the body to `file` (from its start: a retry writes it again) while a gunzip reads it
 * along, and syncs it; a body that is no whole gzip stream (cut short, or some other page) is
 * refused. Returns the bytes written.
 */
async function saveGzip(res: http.IncomingMessage, file: string): Promise<number> {
  let bytes = 0
  let local: Error | undefined
  const out = fs.createWriteStream(file, { flags: 'w' })
  out.on('error', (e) => (local ??= e))
  const gunzip = zlib.createGunzip()
  gunzip.resume()
  const notGzip = () => new CliError("the server's answer is not a whole gzip archive (cut short?); nothing was saved")
  const check = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      bytes += chunk.length
      if (gunzip.write(chunk)) cb(null, chunk)
      else gunzip.once('drain', () => cb(null, chunk))
    },
    flush(cb) {
      gunzip.once('end', () => cb())
      gunzip.end()
    },
  })
  gunzip.on('error', () => check.destroy(notGzip()))
  try {
    await pipeline(res, check, out)
    const fd = fs.openSync(file, 'r')
    try {
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
  } catch (e) {
    if (local) throw new CliError(`cannot write ${file}: ${local.message}`)
    throw e
  } finally {
    gunzip.destroy()
  }
  return bytes
}

/** Renames the finished file to `dest`: over an existing one only with `force` (a link refuses an existing name atomically). */
function place(tmp: string, dest: string, force: boolean) {
  if (force) return fs.renameSync(tmp, dest)
  try {
    fs.linkSync(tmp, dest)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'EEXIST') throw new CliError(`${dest} exists; --force replaces it`)
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV') throw e
    // a file system without hard links
    if (fs.existsSync(dest)) throw new CliError(`${dest} exists; --force replaces it`)
    return fs.renameSync(tmp, dest)
  }
  fs.rmSync(tmp, { force: true })
}

/** svc user-site [PROJECT] [--project NAME] [--off]: the project (default: the current folder's) made the user site, or no longer. */
export async function userSiteCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP['user-site'].flags)
  noMore(positionals, 1)
  const named = oneProject(positionals[0], v.project)
  const api = ctx.api(flagsOf(v))
  const project = named ?? (await projectOf(ctx, api, v))
  const r = await api.call(v.off ? 'DELETE' : 'PUT', `/api/folders/${encodePath(project)}/user_site`)
  if (ctx.json) ctx.emit(r.json)
  else {
    const at = (r.json.user_site_url as string | null) ?? 'your own origin (the server has no content domain)'
    if (r.json.user_site) ctx.out(`${project} is your user site: it answers ${at} while it is published`)
    else ctx.out(`${project} is not your user site${r.json.user_site_url ? `: ${at} answers 404 unless another project is` : ''}`)
  }
  return 0
}
