/** svc deploys, svc rollback, svc promote: a project's kept deploys and its live pointer. */
import fs from 'node:fs'
import { encodePath } from '../api.js'
import { parse } from '../args.js'
import { CLIENT_HELP } from '../help.js'
import { formatBytes } from '../progress.js'
import { defaultProject } from '../project.js'
import { ApiError, UsageError } from '../errors.js'
import { flagsOf, localTime, need, noMore, table, type Ctx } from './context.js'

/** --project, else the name of the current folder (as svc deploy . would name it). */
const projectOf = (v: { project?: string }): string => v.project ?? defaultProject(fs.realpathSync('.'))

/** svc deploys [list] [PROJECT] [--project NAME]: the project named either way, else the current folder's. */
export async function deploysCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.deploys.flags)
  const rest = positionals[0] === 'list' ? positionals.slice(1) : positionals
  noMore(rest, 1)
  const named = rest[0]
  if (named !== undefined && v.project !== undefined && named !== v.project) {
    throw new UsageError(`two projects named: "${named}" and --project "${v.project}"`, true)
  }
  const project = named ?? projectOf(v)
  const r = await ctx.api(flagsOf(v)).get(`/api/folders/${encodePath(project)}/deploys`)
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
  const project = projectOf(v)
  const r = await ctx
    .api(flagsOf(v))
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

export async function promoteCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.promote.flags)
  const id = need(positionals[0], 'the deploy to make live (ID)')
  noMore(positionals, 1)
  const project = projectOf(v)
  const r = await ctx.api(flagsOf(v)).post(`/api/folders/${encodePath(project)}/deploys/${encodeURIComponent(id)}/promote`, { idempotent: true })
  if (ctx.json) ctx.emit({ success: true, project, live_deploy_id: r.json?.live_deploy_id })
  else ctx.out(`${project}: deploy ${r.json?.live_deploy_id} is live`)
  return 0
}
