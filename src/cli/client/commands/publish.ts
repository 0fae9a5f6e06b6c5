/** svc deploy (a folder project) and svc page (one HTML file). */
import fsp from 'node:fs/promises'
import path from 'node:path'
import { intOption, parse, sizeOption } from '../args.js'
import { CLIENT_HELP } from '../help.js'
import { CliError, UsageError } from '../errors.js'
import { formatBytes } from '../progress.js'
import type { ApiClient } from '../api.js'
import { flagsOf, need, noMore, multipartBody, readLocal, type Ctx } from './context.js'

/**
 * svc deploy: an archive deploy (two requests: which files are missing, then one tar stream);
 * --batch, --delete and the batch options use the batch uploads of the spec's API instead, as
 * does a server without archive deploys.
 */
type DeployValues = ReturnType<typeof parse<typeof CLIENT_HELP.deploy.flags>>['values']

export async function deployCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.deploy.flags)
  const dir = need(positionals[0], 'the folder to deploy (<dir>)')
  noMore(positionals, 1)
  const api = ctx.api(flagsOf(v))
  // an archive file (site.zip, site.tar.gz) is unpacked into a temporary folder, deployed as a
  // folder is, and removed; its project is the one of the folder it is named after
  // (`my-app/dist.zip` as `my-app/dist/`: the repository's, decision 270)
  const { unpackArchive } = await import('../unpack.js')
  const unpacked = await unpackArchive(dir, () => deployBounds(api))
  if (unpacked === null) return deployFolder(ctx, v, api, dir)
  try {
    const { archiveProjectOf } = await import('../project.js')
    const project = v.project ?? (await archiveProjectOf(api, dir, (line) => ctx.rep.note(line)))
    return await deployFolder(ctx, v, api, unpacked.dir, { label: dir, cache: false, project })
  } finally {
    await unpacked.cleanup()
  }
}

async function deployFolder(
  ctx: Ctx,
  v: DeployValues,
  api: ApiClient,
  dir: string,
  from: { label?: string; cache?: boolean; project?: string } = {},
): Promise<number> {
  // a Jekyll site's source, which GitHub Pages would build, would go live as its templates
  const { bundlerSource, jekyllSource } = await import('../site-links.js')
  const jekyll = await jekyllSource(dir)
  if (jekyll !== null)
    throw new CliError(
      `${from.label ?? dir} is the source of a Jekyll site (${jekyll}): GitHub Pages builds such a folder, svc serves files as they are, so its pages would show their templates. Build it (bundle exec jekyll build) and deploy the build, its _site/ folder, or add an empty .nojekyll file to deploy the folder as it is; nothing was sent`,
    )
  // an app's source (`svc deploy .` in a Vite project) would go live as a blank page
  const bundled = await bundlerSource(dir)
  if (bundled !== null) {
    const kind = bundled.vite ? 'a Vite app' : 'an app a bundler builds'
    // an archive (site.zip) has no build folder beside it to name
    const build = from.label !== undefined ? 'the folder the build writes (dist/ by default)' : `its build: svc deploy ${path.join(dir, 'dist')}`
    const built = from.label === undefined && (await fsp.stat(path.join(dir, 'dist', 'index.html')).catch(() => null))?.isFile() === true
    throw new CliError(
      `${from.label ?? dir} is the source of ${kind} (${bundled.why}): Netlify and GitHub Pages' workflows build such a folder, svc serves files as they are, so its pages would stay blank. ${built ? 'Deploy' : 'Build it (npm run build) and deploy'} ${build}; nothing was sent`,
    )
  }
  // named once (and said once, on stderr) for both ways of deploying
  const project = from.project ?? v.project ?? (await folderProject(ctx, api, dir))
  const batch = v.batch === true || v.delete === true || v['batch-files'] !== undefined || v['batch-bytes'] !== undefined || v.concurrency !== undefined
  // batch uploads write into the project itself: they cannot make a preview, nor record a
  // message (the spec's batch upload and publish take none)
  const archiveOnly = v.preview === true ? '--preview' : v.message !== undefined ? '-m/--message' : undefined
  if (batch && archiveOnly !== undefined)
    throw new CliError(`${archiveOnly} needs the archive deploy: leave out --batch (and --delete, --concurrency, --batch-files, --batch-bytes)`)
  if (!batch) {
    const { archiveDeploy, describeArchive } = await import('../archive.js')
    const r = await archiveDeploy(
      api,
      {
        dir,
        ...from,
        project,
        preview: v.preview === true || v['no-publish'] === true,
        message: v.message,
        dryRun: v['dry-run'] === true,
        dotfiles: v.dotfiles === true,
        gzip: v['no-gzip'] !== true,
      },
      ctx.rep,
    )
    if (r) {
      if (ctx.json) ctx.emit(r)
      else ctx.out(describeArchive(r))
      if (r.success) await siteNotes(ctx, api, dir, from.label ?? dir, r.project, r.published && !r.dry_run, from.label === undefined)
      return r.success ? 0 : 1
    }
    if (v.preview) throw new CliError('this server has no archive deploys, so no previews')
    ctx.rep.note('this server has no archive deploys: uploading in batches')
    // the spec's batch upload and publish take no message: said, not dropped unseen (a message
    // changes nothing that goes live, so the deploy goes ahead, unlike a preview)
    if (v.message !== undefined) ctx.rep.note('warning: the deploy message (-m) is not recorded: batch uploads and their publish take none')
  }
  // loaded here: the ignore matcher and MIME table are only needed by deploy
  const { deploy, describeDeploy } = await import('../deploy.js')
  const r = await deploy(
    api,
    {
      dir,
      ...from,
      project,
      publish: !v['no-publish'],
      delete: v.delete === true,
      dryRun: v['dry-run'] === true,
      dotfiles: v.dotfiles === true,
      concurrency: intOption(v.concurrency, 'concurrency', 2),
      maxBatchFiles: v['batch-files'] !== undefined ? intOption(v['batch-files'], 'batch-files', 1) : undefined,
      maxBatchBytes: sizeOption(v['batch-bytes'], 'batch-bytes'),
    },
    ctx.rep,
  )
  if (ctx.json) ctx.emit(r)
  else ctx.out(describeDeploy(r))
  if (r.success) await siteNotes(ctx, api, dir, from.label ?? dir, r.project, r.published && !r.dry_run, from.label === undefined)
  return r.success ? 0 : 1
}

/**
 * The project a folder deploys to without --project (project.ts folderProjectOf), said on
 * stderr when it is not the folder's own name; undefined for a folder that is not there (the
 * deploy says so).
 */
async function folderProject(ctx: Ctx, api: ApiClient, dir: string): Promise<string | undefined> {
  const real = await fsp.realpath(dir).catch(() => null)
  if (real === null) return undefined
  const { folderProjectOf } = await import('../project.js')
  return folderProjectOf(api, real, (line) => ctx.rep.note(line))
}

/**
 * What a site moved from Netlify or GitHub Pages needs said (on stderr) once its deploy went
 * through: for a `folder` (not an unpacked archive), the netlify.toml rules svc does not read;
 * built for a base other than its project's (`/blog/`, a project site's `/{repository}/`),
 * the project that serves it there; and, once `live`, when its root `CNAME` names a domain
 * that does not serve the project yet, how to add it (one more request, only for such a
 * folder; a failed one says nothing).
 */
async function siteNotes(ctx: Ctx, api: ApiClient, dir: string, label: string, project: string, live: boolean, folder: boolean): Promise<void> {
  const { builtForBase, cnameDomain, cnameNote } = await import('../site-links.js')
  // a Netlify site's netlify.toml rules (its own, or its repository's for a build folder), which
  // apply nowhere here: the _redirects and _headers lines that say the same
  if (folder) {
    const { netlifyNote } = await import('../netlify-toml.js')
    const note = await netlifyNote(dir, label)
    if (note !== null) ctx.rep.note(note)
  }
  const base = await builtForBase(dir)
  if (base !== null && base !== project)
    ctx.rep.note(
      `note: the site loads its files from /${base}/, the base it was built for (as a GitHub Pages project site is served under /{repository}/), so under /${project}/ its pages find none of them. Deploy it as the project ${base}: svc deploy ${label} --project ${base}`,
    )
  if (!live) return
  const domain = await cnameDomain(dir)
  if (domain === null) return
  const r = await api.get('/api/domains').catch(() => null)
  const list = r?.status === 200 ? r.json?.data?.domains : undefined
  if (!Array.isArray(list)) return
  const note = cnameNote(domain, project, list as Array<{ domain: string; project: string }>)
  if (note !== null) ctx.rep.note(note)
}

/** What a deploy may hold (the server's deploy_limits, else its defaults): an archive unpacks no more. */
async function deployBounds(api: ApiClient): Promise<{ maxFiles: number; maxBytes: number }> {
  const r = await api.get('/api/folders/deploy_limits', { okStatuses: [404] }).catch(() => null)
  const d = r?.status === 200 ? r.json?.data : undefined
  const maxFiles = Number(d?.max_files)
  const maxBytes = Number(d?.max_deploy_bytes)
  return { maxFiles: maxFiles > 0 ? maxFiles : 50_000, maxBytes: maxBytes > 0 ? maxBytes : 2 * 1024 ** 3 }
}

/** svc page: the spec's single-file upload (POST /svc_api/upload). */
export async function pageCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.page.flags)
  const file = need(positionals[0], 'the HTML file (<file.html>)')
  noMore(positionals, 1)
  if (!/\.html?$/i.test(file)) throw new UsageError(`${file}: only .html and .htm files can be uploaded as a page (use svc deploy for a folder)`, true)
  // a name the multipart filename cannot carry unchanged (a quote, a backslash, ...) is refused
  // here, as deploy refuses it, instead of reaching the server as another name
  const { badNameReason } = await import('../files.js')
  const bad = badNameReason(path.basename(file).normalize('NFC'))
  if (bad) throw new CliError(`${path.basename(file)}: ${bad}`)
  const data = readLocal(file)
  const api = ctx.api(flagsOf(v))
  const fields: Record<string, string> = {}
  if (v.project !== undefined) fields.project_name = v.project
  if (v.description !== undefined) fields.description = v.description
  const { body, contentType } = multipartBody(fields, [{ name: 'file', filename: path.basename(file), type: 'text/html', data }])
  const r = await api.post('/svc_api/upload', { body, contentType, idempotent: true })
  const d = r.json?.data ?? {}
  // a page that would misbehave went up all the same: the server's warnings, on stderr
  for (const w of Array.isArray(r.json?.warnings) ? r.json.warnings : []) ctx.rep.note(`warning: ${String(w?.message)}`)
  if (ctx.json) ctx.emit(r.json)
  else
    ctx.out(
      `${d.is_update ? 'updated' : 'created'} ${d.file_name} (${formatBytes(Number(d.file_size ?? data.length))}, project ${d.project_name}): ${d.site_url ?? d.url}`,
    )
  return 0
}
