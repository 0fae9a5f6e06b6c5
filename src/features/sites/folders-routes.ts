import type { FastifyInstance, FastifyRequest } from 'fastify'
import { FILE_PART, multipartForm } from '../../http/multipart.js'
import { Type } from '@sinclair/typebox'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { langOf, type Lang } from '../../errors/render.js'
import { caller } from '../../http/guard.js'
import { discardUpload, drainRequest, multipartParts } from '../../http/multipart.js'
import { contentOrigin } from '../../http/origin.js'
import { originUrl, siteOriginFor, siteUrl } from '../../http/site-origin.js'
import { createFoldersService, MAX_FILES_PER_REQUEST, MAX_REQUEST_BYTES, type FileFailure, type FolderRef, type StagedFile } from './folders-service.js'
import { WarningsField, warningsIn } from './page-warnings.js'
import { withBlobLease } from '../../storage/leases.js'

const FailureItem = Type.Object({ type: Type.String(), error_code: Type.Integer(), message: Type.String(), file: Type.String() })
const BatchResult = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  uploaded_count: Type.Integer(),
  failed_count: Type.Integer(),
  failed_files: Type.Array(Type.String()),
  errors: Type.Array(FailureItem),
  warnings: WarningsField('the pages the request stored (beyond the spec)'),
})
const FolderFileEntry = Type.Object({
  type: Type.Literal('file'),
  name: Type.String(),
  path: Type.String({ description: 'relative path inside the project' }),
  size: Type.Integer(),
  modified: Type.String({ description: 'ISO 8601 local (Beijing) time without offset' }),
  url: Type.String({ description: '/{username}/{folder}/{path} (prefixed with CONTENT_ORIGIN when set)' }),
})
/** The origin_url field of a project (src/http/site-origin.ts projectOrigin). */
export const ORIGIN_URL = Type.Union([Type.String(), Type.Null()], {
  description:
    'the project at the root of its own origin ({project}.{username}.{CONTENT_DOMAIN}), for sites built to live at / ; null without a content domain, or when the name is not a lowercase host label',
})
const PublishResult = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  website_url: Type.String(),
  site_url: Type.Union([Type.String(), Type.Null()], {
    description:
      "the same page on the user's own origin ({username}.{CONTENT_DOMAIN}), where the full web platform works; null when the service has no content domain",
  }),
  origin_url: ORIGIN_URL,
  is_published: Type.Boolean(),
  already_published: Type.Boolean(),
  access_control_type: Type.String(),
})
const Ok = Type.Object({ success: Type.Boolean(), message: Type.String() })
const FOLDER_PATH_DOC =
  "{folder_path} is a project name, or {username}/{project} (literal or %2F) with the caller's own username. Names are NFC-normalised and case-sensitive."

const MSG = {
  uploaded: { zh: '上传完成', en: 'Upload finished' },
  conflict: { zh: '所有文件都已存在', en: 'Every file already exists' },
  none: { zh: '没有文件能够保存', en: 'No file could be stored' },
  published: { zh: '发布成功', en: 'Published' },
  already: { zh: '项目已发布', en: 'Already published' },
  unpublished: { zh: '已取消发布', en: 'Unpublished' },
  deleted: { zh: '文件已删除', en: 'File deleted' },
  projectDeleted: { zh: '项目已删除', en: 'Project deleted' },
  userSite: { zh: '已设为用户站点', en: 'Project is now the user site' },
  notUserSite: { zh: '已不是用户站点', en: 'Project is not the user site' },
}

/** The raw path segments after /api/folders/ (before any decoding), query string removed. */
function rawSegments(req: FastifyRequest): string[] {
  const url = req.raw.url ?? ''
  const q = url.indexOf('?')
  return (q < 0 ? url : url.slice(0, q)).split('/').slice(3)
}

/** Folder project endpoints; each route exists as /api/folders/{project}/... and /api/folders/{username}/{project}/... */
export function foldersApi(app: FastifyInstance, deps: Deps): void {
  const svc = deps.services.get(createFoldersService)
  const cfg = { auth: 'any' as const }

  app.get(
    '/api/folders/limits',
    {
      config: cfg,
      schema: {
        tags: ['folder projects'],
        summary: 'Per-request limits of batch uploads (beyond the spec)',
        response: {
          200: Type.Object({
            success: Type.Boolean(),
            data: Type.Object({ max_files_per_request: Type.Integer(), max_request_bytes: Type.Integer(), max_file_bytes: Type.Integer() }),
          }),
        },
      },
    },
    async () => ({ success: true, data: svc.limits() }),
  )

  app.get(
    '/api/folders',
    {
      config: cfg,
      schema: {
        tags: ['folder projects'],
        summary: "The caller's folder projects (beyond the spec)",
        response: {
          200: Type.Object({
            success: Type.Boolean(),
            folders: Type.Array(
              Type.Object({
                name: Type.String(),
                is_published: Type.Boolean(),
                file_count: Type.Integer(),
                updated_at: Type.String({ description: 'ISO 8601 with microseconds and offset (Beijing time)' }),
                website_url: Type.String({ description: 'where the project is (or would be) published' }),
                site_url: Type.Union([Type.String(), Type.Null()], {
                  description:
                    "the same page on the user's own origin ({username}.{CONTENT_DOMAIN}), where the full web platform works; null when the service has no content domain",
                }),
                origin_url: ORIGIN_URL,
                user_site: Type.Boolean({ description: "the caller's user site: served at the root of their own origin (PUT .../user_site)" }),
                quarantined: Type.Optional(
                  Type.Literal(true, { description: 'present when the project is held for review (abuse handling): it answers 451 until an admin acts' }),
                ),
              }),
            ),
          }),
        },
      },
    },
    async (req) => {
      const user = caller(req).user
      const site = siteOriginFor(req, deps.config, user.username)
      const folders = await svc.projects(user, contentOrigin(req, deps.config))
      return {
        success: true,
        folders: folders.map((f) => ({ ...f, site_url: siteUrl(site, `/${encodeURIComponent(f.name)}/`), origin_url: originUrl(site, f.name) })),
      }
    },
  )

  for (const [prefix, n, params] of [
    ['/api/folders/:folder_path', 1, Type.Object({ folder_path: Type.String({ description: FOLDER_PATH_DOC }) })],
    ['/api/folders/:username/:project', 2, Type.Object({ username: Type.String(), project: Type.String() })],
  ] as const) {
    const ref = (req: FastifyRequest): FolderRef => svc.folderRef(caller(req).user, rawSegments(req).slice(0, n))
    const tail = (req: FastifyRequest): string =>
      rawSegments(req)
        .slice(n + 1)
        .join('/')
    const hide = n === 2

    app.post(
      `${prefix}/batch_upload`,
      {
        config: cfg,
        schema: {
          hide,
          tags: ['folder projects'],
          params,
          ...multipartForm(
            {
              'files[]': { type: 'array', items: FILE_PART('a file; its filename is its path in the project'), description: 'one part per file' },
              overwrite_files: { type: 'string', enum: ['true', 'false', '1', '0'] },
            },
            ['files[]'],
          ),
          summary: 'Upload files into a project (created if absent); file names may carry relative paths',
          description: `multipart/form-data: repeated \`files[]\` parts whose filename is the relative path, and \`overwrite_files\` (true|false, default false). At most ${MAX_FILES_PER_REQUEST} files and ${MAX_REQUEST_BYTES} bytes per request, each file at most MAX_UPLOAD_BYTES; over a limit: 413 (400 / 1104 for one file over MAX_UPLOAD_BYTES) and nothing stored. Every file conflicting: 400 with errors[] of type duplicate (1312). Some failing: 200 with failed_count.`,
          response: { 200: BatchResult },
        },
      },
      async (req) => {
        const user = caller(req).user
        let folder: FolderRef
        try {
          folder = ref(req)
        } catch (e) {
          drainRequest(req)
          throw e
        }
        if (!req.isMultipart()) throw new AppError('NO_FILE')
        // the lease spares the files stored as they arrive until the batch commits (313)
        return withBlobLease(deps.db, async (lease) => {
          const staged: StagedFile[] = []
          const failures: FileFailure[] = []
          const seen = new Set<string>()
          let overwriteRaw: string | undefined
          let total = 0
          let filesSeen = 0
          try {
            const parts = multipartParts(req, {
              preservePath: true,
              limits: {
                files: MAX_FILES_PER_REQUEST,
                fileSize: deps.config.maxUploadBytes + 1,
                parts: MAX_FILES_PER_REQUEST + 20,
                fields: 20,
                fieldSize: 64 * 1024,
                headerPairs: 50,
              },
            })
            for await (const part of parts) {
              if (part.type === 'field') {
                if (part.fieldname === 'overwrite_files' && typeof part.value === 'string') overwriteRaw = part.value
                continue
              }
              const name = part.filename
              // a file input left empty: browsers send a part without a file name or bytes, which
              // is no file at all; a nameless part with bytes is a failed file (invalid path)
              if (name === '' && (await discardUpload(part.file)) === 0) continue
              filesSeen++
              const checked = svc.checkUploadName(name)
              if ('failure' in checked) {
                failures.push(checked.failure)
                if (name !== '') await discardUpload(part.file) // (a nameless part is drained above)
                continue
              }
              if (seen.has(checked.path)) {
                failures.push({
                  type: 'duplicate',
                  error_code: 1312,
                  message: { zh: `请求中 ${checked.path} 出现了两次`, en: `the request carries ${checked.path} twice` },
                  file: name,
                })
                await discardUpload(part.file)
                continue
              }
              seen.add(checked.path)
              const f = await svc.stage(part.file, name, checked.path, MAX_REQUEST_BYTES - total, lease)
              total += f.size
              staged.push(f)
            }
          } catch (e) {
            const code = (e as { code?: string }).code
            if (code === 'FST_REQ_FILE_TOO_LARGE') throw new AppError('FILE_TOO_LARGE', { params: { limit: deps.config.maxUploadBytes } })
            if (code === 'FST_FILES_LIMIT')
              throw new AppError('TOO_MANY_PARTS', {
                params: { detail: { zh: `每个请求最多 ${MAX_FILES_PER_REQUEST} 个文件`, en: `at most ${MAX_FILES_PER_REQUEST} files per request` } },
              })
            throw e
          }
          if (filesSeen === 0) throw new AppError('NO_FILE')
          const overwrite = svc.parseOverwrite(overwriteRaw)
          const {
            uploaded,
            failures: conflicts,
            warnings,
          } = await svc.commitBatch(user, folder, staged, overwrite, false, contentOrigin(req, deps.config), lease)
          failures.push(...conflicts)
          // each file's reason in the answer's language (errors[] is the spec's {type, error_code, message, file})
          const lang = langOf(req)
          const body = {
            uploaded_count: uploaded,
            failed_count: failures.length,
            failed_files: failures.map((f) => f.file),
            errors: failures.map((f) => ({ type: f.type, error_code: f.error_code, message: f.message[lang], file: f.file })),
          }
          if (uploaded === 0) {
            const more = failures.length > 5 ? ', ...' : ''
            if (failures.every((f) => f.exists)) {
              throw new AppError('FILE_DUPLICATE', { params: { file: body.failed_files.slice(0, 5).join(', ') + more }, extra: body })
            }
            // conflicts of other kinds (a file where a folder is, twice in the request): each one's reason
            if (failures.every((f) => f.type === 'duplicate')) {
              const list = (l: Lang) => [...failures.slice(0, 5).map((f) => f.message[l]), ...(more ? ['...'] : [])].join(l === 'zh' ? '；' : '; ')
              throw new AppError('FILE_CONFLICTS', { params: { detail: { zh: list('zh'), en: list('en') } }, extra: body })
            }
            const leak = failures.find((f) => f.params)
            if (leak?.params && failures.every((f) => f.type === 'key_in_content')) throw new AppError('KEY_IN_CONTENT', { params: leak.params, extra: body })
            throw new AppError('INVALID_PATH', { params: { detail: MSG.none }, extra: body })
          }
          return { success: true, message: MSG.uploaded[lang], ...body, warnings: warningsIn(warnings, lang) }
        })
      },
    )

    app.get(
      `${prefix}/files`,
      {
        config: cfg,
        schema: {
          hide,
          tags: ['folder projects'],
          params,
          summary: "Recursive list of a project's files",
          response: {
            200: Type.Object({
              success: Type.Boolean(),
              files: Type.Array(FolderFileEntry),
              total_files: Type.Integer(),
              folder_path: Type.String(),
              recursive: Type.Boolean(),
            }),
          },
        },
      },
      async (req) => {
        const folder = ref(req)
        const files = await svc.list(caller(req).user, folder, deps.config.contentOrigin)
        return { success: true, files, total_files: files.length, folder_path: folder.display, recursive: true }
      },
    )

    app.get(
      `${prefix}/file/*`,
      {
        config: cfg,
        schema: {
          hide,
          tags: ['folder projects'],
          summary: 'Read one file; content omitted over 5 MB, null for binary',
          response: {
            200: Type.Object({
              success: Type.Boolean(),
              name: Type.String(),
              path: Type.String(),
              content: Type.Optional(Type.Union([Type.String(), Type.Null()])),
              size: Type.Integer(),
              modified: Type.Number({ description: 'Unix seconds, fractional' }),
              folder_path: Type.String(),
            }),
          },
        },
      },
      async (req) => {
        const folder = ref(req)
        const data = await svc.read(caller(req).user, folder, svc.filePath(tail(req)))
        return { success: true, ...data }
      },
    )

    app.delete(
      `${prefix}/file/*`,
      {
        config: cfg,
        schema: { hide, tags: ['folder projects'], summary: 'Delete one file of a project (beyond the spec)', response: { 200: Ok } },
      },
      async (req) => {
        const folder = ref(req)
        await svc.removeFile(caller(req).user, folder, svc.filePath(tail(req)))
        return { success: true, message: MSG.deleted[langOf(req)] }
      },
    )

    app.post(
      `${prefix}/publish`,
      {
        config: cfg,
        schema: {
          hide,
          tags: ['folder projects'],
          params,
          summary: 'Publish a project at /{username}/{project}/ (needs a root index.html; idempotent)',
          response: { 200: PublishResult },
        },
      },
      async (req) => {
        const folder = ref(req)
        const user = caller(req).user
        const r = await svc.publish(user, folder, contentOrigin(req, deps.config))
        const site = siteOriginFor(req, deps.config, user.username)
        return {
          success: true,
          message: (r.already_published ? MSG.already : MSG.published)[langOf(req)],
          website_url: r.website_url,
          site_url: siteUrl(site, `/${encodeURIComponent(folder.name)}/`),
          origin_url: originUrl(site, folder.name),
          is_published: true,
          already_published: r.already_published,
          access_control_type: 'public',
        }
      },
    )

    app.post(
      `${prefix}/unpublish`,
      {
        config: cfg,
        schema: {
          hide,
          tags: ['folder projects'],
          params,
          summary: 'Unpublish a project (beyond the spec; idempotent)',
          response: { 200: Type.Object({ success: Type.Boolean(), message: Type.String(), is_published: Type.Boolean(), was_published: Type.Boolean() }) },
        },
      },
      async (req) => {
        const r = await svc.unpublish(caller(req).user, ref(req))
        return { success: true, message: MSG.unpublished[langOf(req)], is_published: false, was_published: r.was_published }
      },
    )

    for (const [method, on] of [
      ['PUT', true],
      ['DELETE', false],
    ] as const)
      app.route({
        method,
        url: `${prefix}/user_site`,
        config: cfg,
        schema: {
          hide,
          tags: ['folder projects'],
          params,
          summary: on
            ? "Make a project the caller's user site, served at the root of their own origin (beyond the spec; idempotent)"
            : 'Stop a project being the user site: the root of the origin is a 404 again (beyond the spec; idempotent)',
          description:
            "At most one project is the user site: setting one replaces the one before. While it is published it answers the origin's root and every path there whose first segment names none of the caller's projects or pages.",
          response: {
            200: Type.Object({
              success: Type.Boolean(),
              message: Type.String(),
              user_site: Type.Boolean(),
              user_site_url: Type.Union([Type.String(), Type.Null()], {
                description: "the root of the caller's own origin, where the user site answers; null when the service has no content domain",
              }),
            }),
          },
        },
        handler: async (req) => {
          const user = caller(req).user
          const r = await svc.setUserSite(user, ref(req), on)
          return {
            success: true,
            message: (on ? MSG.userSite : MSG.notUserSite)[langOf(req)],
            user_site: r.user_site,
            user_site_url: siteUrl(siteOriginFor(req, deps.config, user.username), '/'),
          }
        },
      })

    // the one-segment form only ({username}%2F{project} for the long one): a DELETE of
    // /api/folders/{a}/{b} would read every two-segment path, /api/folders/x/publish too
    if (n === 1)
      app.delete(
        prefix,
        {
          config: cfg,
          schema: {
            hide,
            tags: ['folder projects'],
            params,
            summary: 'Delete a project: its files, kept deploys and preview URLs, offline at once (beyond the spec; cannot be undone)',
            response: { 200: Type.Object({ success: Type.Boolean(), message: Type.String(), deleted_files: Type.Integer() }) },
          },
        },
        async (req) => {
          const r = await svc.remove(caller(req).user, ref(req))
          return { success: true, message: MSG.projectDeleted[langOf(req)], deleted_files: r.files }
        },
      )

    app.post(
      `${prefix}/diff`,
      {
        config: cfg,
        bodyLimit: 4 * 1024 * 1024,
        schema: {
          hide,
          tags: ['folder projects'],
          params,
          summary: 'Compare local files (path -> sha256) with the project (beyond the spec, for deploy clients)',
          description:
            'upload: paths whose content the project does not hold at that path (new or changed); unchanged: same content; extra: project paths not in the request. A missing project puts every path in upload.',
          body: Type.Object({ files: Type.Record(Type.String(), Type.String({ description: 'sha256 hex of the local file' })) }),
          response: {
            200: Type.Object({
              success: Type.Boolean(),
              data: Type.Object({ upload: Type.Array(Type.String()), unchanged: Type.Array(Type.String()), extra: Type.Array(Type.String()) }),
            }),
          },
        },
      },
      async (req) => {
        const folder = ref(req)
        const data = await svc.diff(caller(req).user, folder, (req.body as { files?: unknown } | undefined)?.files)
        return { success: true, data }
      },
    )
  }
}
