import type { FastifyInstance, FastifyRequest } from 'fastify'
import { PassThrough, type Readable } from 'node:stream'
import { Type } from '@sinclair/typebox'
import { BYTES_BODY, mediaAnswer, rawBody } from '../../http/answer-schemas.js'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { unknownField } from '../../http/unknown-fields.js'
import { caller } from '../../http/guard.js'
import { drainRequest } from '../../http/multipart.js'
import { contentOrigin } from '../../http/origin.js'
import { originUrl, previewOriginUrl, siteOriginFor, siteUrl } from '../../http/site-origin.js'
import { ORIGIN_URL } from './folders-routes.js'
import { createFoldersService, type FolderRef } from './folders-service.js'
import { createDeploysService, MANIFEST_MAX_BYTES } from './deploys-service.js'
import { MANIFEST_ENTRY, MESSAGE_MAX } from '../../util/deploy-manifest.js'
import { ZIP_TYPES } from './deploy-zip.js'
import { say } from '../../web/short-page.js'
import { langOf } from '../../errors/render.js'
import { WarningsField, warningsIn } from './page-warnings.js'
import { sizeText } from '../../util/sizes.js'

const TAR_TYPES = ['application/x-tar', 'application/tar', 'application/gzip', 'application/x-gzip']
/** The query parameters of a zip deploy (a tar's manifest says the same). */
const ZIP_QUERY = ['preview', 'message'] as const

/**
 * A zip deploy's preview and message from its query string; the tar form takes none (its
 * manifest says them), so a parameter there is refused rather than ignored.
 */
function deployQuery(query: unknown, zip: boolean): { preview: boolean; message: string } {
  const q = (query ?? {}) as Record<string, unknown>
  const invalid = (field: string, en: string, zh: string) => new AppError('INVALID_PARAMETER', { params: { detail: { en, zh } }, extra: { field } })
  const names = Object.keys(q)
  if (!zip && names.length > 0)
    throw invalid(
      names[0],
      `a tar deploy takes no query parameter (${names[0]}): preview and message go in ${MANIFEST_ENTRY}`,
      `tar 部署不接受查询参数（${names[0]}）：preview 和 message 写在 ${MANIFEST_ENTRY} 中`,
    )
  const unknown = unknownField(q, ZIP_QUERY)
  if (unknown) throw new AppError('INVALID_PARAMETER', { params: { detail: unknown.detail }, extra: { field: unknown.field } })
  const { preview = 'false', message = '' } = q
  if (preview !== 'true' && preview !== 'false') throw invalid('preview', 'preview must be true or false', 'preview 须为 true 或 false')
  if (typeof message !== 'string') throw invalid('message', 'message must be given once', 'message 只能给一次')
  if (message.length > MESSAGE_MAX) throw invalid('message', `message longer than ${MESSAGE_MAX} characters`, `message 超过 ${MESSAGE_MAX} 个字符`)
  return { preview: preview === 'true', message }
}

const Deploy = Type.Object({
  id: Type.String({ description: '12 characters [0-9a-z]' }),
  created_at: Type.String({ description: 'ISO 8601 with microseconds and offset (Beijing time)' }),
  file_count: Type.Integer(),
  bytes: Type.Integer(),
  message: Type.String(),
  source: Type.String({ description: 'cli, api or dashboard' }),
  is_preview: Type.Boolean({ description: 'made without going live (it may have been promoted since)' }),
  promoted_at: Type.Union([Type.String(), Type.Null()], {
    description: 'when a preview first went live (promote, or rollback to it); null otherwise. A plain rollback may go back to it',
  }),
  is_partial: Type.Boolean({
    description: 'made by writes through the file API to the live project (one deploy per run of them); a plain rollback skips it',
  }),
  is_live: Type.Boolean(),
  preview_origin_url: Type.Union([Type.String(), Type.Null()], { description: 'this deploy at the root of its own origin (see the deploy answer)' }),
})
const Manifest = Type.Object({
  files: Type.Record(Type.String(), Type.String({ description: 'sha256 hex' }), { description: 'every path of the deploy with its SHA-256' }),
})
const Limits = Type.Object({
  max_files: Type.Integer(),
  max_manifest_bytes: Type.Integer(),
  max_deploy_bytes: Type.Integer(),
  max_file_bytes: Type.Integer(),
  keep: Type.Integer({ description: 'deploys each project keeps (DEPLOYS_KEEP)' }),
})
const Switched = Type.Object({ success: Type.Boolean(), message: Type.String(), live_deploy_id: Type.String() })
const FOLDER_PATH_DOC =
  "{folder_path} is a project name, or {username}/{project} (literal or %2F) with the caller's own username. Names are NFC-normalised and case-sensitive."

/** The raw path segments after /api/folders/ (before any decoding), query string removed. */
function rawSegments(req: FastifyRequest): string[] {
  const url = req.raw.url ?? ''
  const q = url.indexOf('?')
  return (q < 0 ? url : url.slice(0, q)).split('/').slice(3)
}

/**
 * Deploys of folder projects (beyond the spec, docs/api/deploys.md): the manifest check, the
 * archive deploy, the list, rollback and promote. Each route exists as
 * /api/folders/{project}/... and /api/folders/{username}/{project}/...
 */
export function deploysApi(app: FastifyInstance, deps: Deps): void {
  const folders = deps.services.get(createFoldersService)
  const svc = deps.services.get(createDeploysService)
  const cfg = { auth: 'any' as const }
  // the archive is read as a stream by its route: never buffered, never limited by bodyLimit
  app.addContentTypeParser([...TAR_TYPES, ...ZIP_TYPES], (_req, payload, done) => done(null, payload))

  app.get(
    '/api/folders/deploy_limits',
    {
      config: cfg,
      schema: {
        tags: ['deploys'],
        summary: 'Limits of one archive deploy, and how many deploys a project keeps',
        response: {
          200: Type.Object({
            success: Type.Boolean(),
            data: Limits,
          }),
        },
      },
    },
    async () => ({ success: true, data: svc.limits() }),
  )

  for (const [prefix, n, params] of [
    ['/api/folders/:folder_path', 1, Type.Object({ folder_path: Type.String({ description: FOLDER_PATH_DOC }) })],
    ['/api/folders/:username/:project', 2, Type.Object({ username: Type.String(), project: Type.String() })],
  ] as const) {
    const ref = (req: FastifyRequest): FolderRef => folders.folderRef(caller(req).user, rawSegments(req).slice(0, n))
    const hide = n === 2

    app.post(
      `${prefix}/deploys/missing`,
      {
        // a manifest over the limit is 1328, as in an archive (not the generic 1109)
        config: {
          ...cfg,
          bodyTooLarge: (limit: number) =>
            new AppError('MANIFEST_TOO_LARGE', {
              params: { detail: { zh: `清单超过 ${sizeText(limit).zh}`, en: `the manifest is larger than ${sizeText(limit).en}` } },
            }),
        },
        bodyLimit: MANIFEST_MAX_BYTES,
        schema: {
          hide,
          tags: ['deploys'],
          params,
          summary: 'Which files of a deploy the server lacks',
          description:
            "The first step of an archive deploy: send every path with its SHA-256; the answer lists the digests the archive must carry. The others are held by the caller: the project's files or kept deploys, or the files of the caller's other projects.",
          body: Manifest,
          response: {
            200: Type.Object({
              success: Type.Boolean(),
              missing: Type.Array(Type.String()),
              file_count: Type.Integer(),
              known_count: Type.Integer(),
              limits: Limits,
            }),
          },
        },
      },
      async (req) => ({ success: true, ...(await svc.missing(caller(req).user, ref(req), req.body)) }),
    )

    app.post(
      `${prefix}/deploys`,
      {
        config: { ...cfg, mediaTypeError: 'ARCHIVE_CONTENT_TYPE' },
        schema: {
          hide,
          tags: ['deploys'],
          params,
          summary: 'Deploy a project from one tar stream (optionally gzip), or from a zip of the whole site',
          description: `Body: a tar (Content-Type application/x-tar) or gzipped tar (application/gzip). Its first entry is ${MANIFEST_ENTRY}: {"files": {"path": "<sha256>"}, "message"?: string, "preview"?: boolean, "source"?: "cli" | "api"}, listing every file of the new deploy; the other entries are the files the check asks for (POST .../deploys/missing). Regular files and directories only. Or a zip (application/zip): its files are the whole deploy, no manifest; ?preview=true and ?message= say what the manifest would (the tar form takes no query parameter). A zip whose root holds no index.html but one folder deploys that folder; dot-names (but .well-known/) and __MACOSX/ are left out. The deploy goes live at once unless preview is true; a preview answers at /{username}/{project}@{deploy id}/ until it is promoted.`,
          ...rawBody({
            ...Object.fromEntries(TAR_TYPES.map((t) => [t, `a tar${t.endsWith('gzip') ? ', gzipped,' : ''} whose first entry is ${MANIFEST_ENTRY}`])),
            ...Object.fromEntries(ZIP_TYPES.map((t) => [t, 'a zip of the whole site (no manifest)'])),
          }),
          querystring: Type.Object({
            preview: Type.Optional(Type.String({ enum: ['true', 'false'], description: 'zip only: true makes a preview' })),
            message: Type.Optional(Type.String({ maxLength: MESSAGE_MAX, description: 'zip only: the deploy message' })),
          }),
          response: {
            201: Type.Object({
              success: Type.Boolean(),
              message: Type.String(),
              deploy: Type.Object({
                id: Type.String(),
                file_count: Type.Integer(),
                bytes: Type.Integer(),
                is_preview: Type.Boolean(),
                is_live: Type.Boolean(),
              }),
              uploaded_files: Type.Integer({ description: 'files the archive carried (a zip: its distinct files)' }),
              website_url: Type.String(),
              preview_url: Type.String({ description: "this deploy's own URL, live or not (path form)" }),
              site_url: Type.Union([Type.String(), Type.Null()], { description: "the project on the user's own origin; null without a content domain" }),
              preview_site_url: Type.Union([Type.String(), Type.Null()], { description: "this deploy's own URL on the user's own origin" }),
              origin_url: ORIGIN_URL,
              preview_origin_url: Type.Union([Type.String(), Type.Null()], {
                description:
                  'this deploy at the root of its own origin, {deploy id}--{project}.{username}.{content domain}; null without a content domain, or when the project has no origin or the label would pass 63 characters',
              }),
              warnings: WarningsField('the pages the archive carried'),
            }),
          },
        },
      },
      async (req, reply) => {
        const user = caller(req).user
        try {
          const ct = String(req.headers['content-type'] ?? '')
            .split(';')[0]
            .trim()
            .toLowerCase()
          const zip = ZIP_TYPES.includes(ct)
          if (!zip && !TAR_TYPES.includes(ct)) throw new AppError('ARCHIVE_CONTENT_TYPE')
          const query = deployQuery(req.query, zip)
          const folder = ref(req)
          const origin = contentOrigin(req, deps.config)
          const source = caller(req).via === 'session' ? 'dashboard' : 'api'
          const r = zip
            ? await svc.deployZip(user, folder, req.body as Readable, { ...query, source }, origin)
            : await svc.deployArchive(user, folder, req.body as Readable, ct.endsWith('gzip'), origin)
          const site = siteOriginFor(req, deps.config, user.username)
          const name = encodeURIComponent(folder.name)
          reply.code(201)
          return {
            success: true,
            message: r.deploy.is_preview ? say(req, '预览已部署', 'Preview deployed') : say(req, '部署成功', 'Deployed'),
            ...r,
            warnings: warningsIn(r.warnings, langOf(req)),
            site_url: siteUrl(site, `/${name}/`),
            preview_site_url: siteUrl(site, `/${name}@${r.deploy.id}/`),
            origin_url: originUrl(site, folder.name),
            preview_origin_url: previewOriginUrl(site, folder.name, r.deploy.id),
          }
        } catch (e) {
          drainRequest(req)
          throw e
        }
      },
    )

    app.get(
      `${prefix}/deploys`,
      {
        config: cfg,
        schema: {
          hide,
          tags: ['deploys'],
          params,
          summary: "A project's kept deploys, newest first",
          response: { 200: Type.Object({ success: Type.Boolean(), live_deploy_id: Type.Union([Type.String(), Type.Null()]), deploys: Type.Array(Deploy) }) },
        },
      },
      async (req) => {
        const user = caller(req).user
        const folder = ref(req)
        const r = await svc.list(user, folder)
        const site = siteOriginFor(req, deps.config, user.username)
        return { success: true, ...r, deploys: r.deploys.map((d) => ({ ...d, preview_origin_url: previewOriginUrl(site, folder.name, d.id) })) }
      },
    )

    app.get(
      `${prefix}/deploys/:deploy_id/archive`,
      {
        config: cfg,
        schema: {
          hide,
          tags: ['deploys'],
          params: Type.Composite([params, Type.Object({ deploy_id: Type.String() })]),
          summary: "Download a kept deploy's files as a gzip'd tar",
          description: `The deploy whole, as an archive deploy takes it: ${MANIFEST_ENTRY} ({"files": {"path": "<sha256>"}, "message"}) first, then every file in path order. POST it back to .../deploys (Content-Type application/gzip) to deploy the same files again, to this project or another. 404 / 1331 for a deploy the project does not keep; 451 / 1701 when some of its bytes were taken down since.`,
          response: { 200: mediaAnswer("The deploy's files, a gzip'd tar (Content-Disposition: attachment)", { 'application/gzip': BYTES_BODY }) },
        },
      },
      async (req, reply) => {
        const id = (req.params as { deploy_id: string }).deploy_id
        const d = await svc.download(caller(req).user, ref(req), id)
        const body = new PassThrough()
        svc.writeDownload(d, body).catch((err: unknown) => {
          req.log.warn({ err }, 'deploy download failed')
          body.destroy(err as Error)
        })
        const name = `${d.project}-${d.id}.tar.gz`
        return reply
          .header('Content-Type', 'application/gzip')
          .header('Content-Disposition', `attachment; filename="${d.id}.tar.gz"; filename*=UTF-8''${encodeURIComponent(name)}`)
          .header('Cache-Control', 'no-store')
          .send(body)
      },
    )

    app.post(
      `${prefix}/deploys/:deploy_id/promote`,
      {
        config: cfg,
        schema: {
          hide,
          tags: ['deploys'],
          params: Type.Composite([params, Type.Object({ deploy_id: Type.String() })]),
          summary: 'Make a kept deploy (a preview, or any other) live',
          response: { 200: Switched },
        },
      },
      async (req) => {
        const id = (req.params as { deploy_id: string }).deploy_id
        const r = await svc.promote(caller(req).user, ref(req), id)
        return { success: true, message: say(req, '该版本已上线', 'Promoted'), ...r }
      },
    )

    app.post(
      `${prefix}/rollback`,
      {
        config: cfg,
        schema: {
          hide,
          tags: ['deploys'],
          params,
          summary: 'Make an earlier deploy live again (by default the one before the live one)',
          description:
            'Body (optional): {"deploy_id": "..."}; without it, the newest kept deploy older than the live one that was live: not a preview, or a preview promoted since. Any other body or field is refused (400 / 1106).',
          response: { 200: Switched },
        },
      },
      async (req) => {
        // a body that is not {"deploy_id"} would otherwise roll back to the deploy before the
        // live one, not the one the caller meant ({"id": ...}, {"deployId": ...}): refused
        const raw: unknown = req.body === '' ? undefined : req.body
        if (raw !== undefined && raw !== null && (typeof raw !== 'object' || Array.isArray(raw)))
          throw new AppError('INVALID_PARAMETER', {
            params: {
              detail: { zh: '请求体须为 JSON 对象 {"deploy_id": "..."}，或为空', en: 'the body must be a JSON object, {"deploy_id": "..."}, or empty' },
            },
          })
        const body = (raw ?? {}) as Record<string, unknown>
        const unknown = unknownField(body, ['deploy_id'])
        if (unknown) throw new AppError('INVALID_PARAMETER', { params: { detail: unknown.detail }, extra: { field: unknown.field } })
        const id = body.deploy_id
        if (id !== undefined && typeof id !== 'string')
          throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: 'deploy_id 须为字符串', en: 'deploy_id must be a string' } } })
        const r = await svc.rollback(caller(req).user, ref(req), id)
        return { success: true, message: say(req, '已回滚', 'Rolled back'), ...r }
      },
    )
  }
}
