import type { FastifyInstance } from 'fastify'
import { FILE_PART, multipartForm } from '../../http/multipart.js'
import { Type } from '@sinclair/typebox'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { langOf } from '../../errors/render.js'
import { caller } from '../../http/guard.js'
import { multipartParts } from '../../http/multipart.js'
import { siteOriginFor, siteUrl } from '../../http/site-origin.js'
import { contentOrigin } from '../../http/origin.js'
import { lastValue, pageInfo, parsePage, repeatable } from '../../http/pagination.js'
import { createFilesService, type StagedUpload } from './files-service.js'
import { WarningsField, warningsIn } from './page-warnings.js'

const SingleFileRecord = Type.Object({
  file_name: Type.String(),
  project_name: Type.String(),
  file_size: Type.Integer(),
  url: Type.String({ description: 'absolute URL /{username}/{file_name} (CONTENT_ORIGIN when set)' }),
  site_url: Type.Union([Type.String(), Type.Null()], {
    description:
      "the same page on the user's own origin ({username}.{CONTENT_DOMAIN}), where the full web platform works; null when the service has no content domain",
  }),
  created_at: Type.String({ description: 'Beijing time YYYY-MM-DD HH:MM:SS' }),
  updated_at: Type.Union([Type.String(), Type.Null()]),
  is_update: Type.Boolean(),
})

const FileListItem = Type.Object({
  created_at: Type.String({ description: 'ISO 8601 with microseconds and offset' }),
  updated_at: Type.Union([Type.String(), Type.Null()]),
  file_name: Type.String(),
  file_size: Type.Integer(),
  is_featured: Type.Boolean(),
  project_name: Type.String(),
  url: Type.String(),
  site_url: Type.Union([Type.String(), Type.Null()], {
    description:
      "the same page on the user's own origin ({username}.{CONTENT_DOMAIN}), where the full web platform works; null when the service has no content domain",
  }),
  quarantined: Type.Optional(
    Type.Literal(true, { description: 'present when the page is held for review (abuse handling): it answers 451 until an admin acts' }),
  ),
})

const UploadConfig = Type.Object({
  max_file_size: Type.Integer(),
  max_file_size_mb: Type.Number(),
  max_files_per_user: Type.Integer(),
  current_file_count: Type.Integer(),
  remaining_quota: Type.Integer(),
  allowed_extensions: Type.Array(Type.String()),
  api_version: Type.String(),
})

const ListQuery = Type.Object({
  page: repeatable('default 1; >= 1'),
  per_page: repeatable('1 to 100; default 20'),
  search: repeatable('fuzzy match on project_name and file_name (case-insensitive for ASCII)'),
  is_featured: repeatable('true or 1: featured only; false or 0: non-featured only'),
})

const MESSAGES = {
  created: { zh: '文件上传成功', en: 'File uploaded' },
  updated: { zh: '文件已更新', en: 'File updated' },
  deleted: { zh: '文件已删除', en: 'File deleted' },
}

function parseFeatured(v: unknown): boolean | undefined {
  const s = lastValue(v)
  if (s === undefined || s === '') return undefined
  if (typeof s === 'string') {
    const l = s.toLowerCase()
    if (l === 'true' || l === '1') return true
    if (l === 'false' || l === '0') return false
  }
  throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: 'is_featured 须为 true、false、1 或 0', en: 'is_featured must be true, false, 1 or 0' } } })
}

/** POST /svc_api/upload, GET /svc_api/upload/info, GET /svc_api/files, DELETE /svc_api/files/{file_name}. */
export function filesApi(app: FastifyInstance, deps: Deps): void {
  const svc = deps.services.get(createFilesService)
  const max = deps.config.maxUploadBytes

  app.post(
    '/svc_api/upload',
    {
      config: { auth: 'any', errorFormat: 'B' },
      schema: {
        tags: ['single file'],
        summary: 'Upload one .html/.htm file (create, or update the file of the same name)',
        description:
          'multipart/form-data with parts `file` (required), `project_name`, `description`. Errors in format B (NO_FILE, VALIDATION_FAILED, EMPTY_FILE, API_PERMISSION_DENIED); other codes (1104, 1201, ...) in format A.',
        ...multipartForm({ file: FILE_PART('the page: .html or .htm'), project_name: { type: 'string' }, description: { type: 'string' } }, ['file']),
        response: {
          200: Type.Object({ success: Type.Boolean(), message: Type.String(), data: SingleFileRecord, warnings: WarningsField('the page (beyond the spec)') }),
        },
      },
    },
    async (req) => {
      const p = caller(req)
      if (!req.isMultipart()) throw new AppError('NO_FILE')
      let staged: StagedUpload | null = null
      let fileName: string | null = null
      let pending: AppError | null = null
      const fields: Record<string, string> = {}
      try {
        const parts = multipartParts(req, { preservePath: true, limits: { fileSize: max + 1, files: 1, parts: 10, fields: 8, fieldSize: 64 * 1024 } })
        for await (const part of parts) {
          if (part.type === 'field') {
            if (typeof part.value === 'string' && (part.fieldname === 'project_name' || part.fieldname === 'description')) fields[part.fieldname] = part.value
            continue
          }
          if (part.fieldname !== 'file' || staged || pending || part.filename === '') {
            await svc.discard(part.file)
            continue
          }
          try {
            fileName = svc.checkFileName(part.filename)
          } catch (e) {
            pending = e as AppError
            await svc.discard(part.file)
            continue
          }
          staged = await svc.stage(part.file)
        }
      } catch (e) {
        const code = (e as { code?: string }).code
        if (code === 'FST_REQ_FILE_TOO_LARGE') throw new AppError('FILE_TOO_LARGE', { params: { limit: max } })
        if (code === 'FST_FILES_LIMIT')
          throw new AppError('TOO_MANY_PARTS', { params: { detail: { zh: '每个请求只能发送一个文件', en: 'send one file per request' } } })
        throw e
      }
      if (pending) throw pending
      if (!staged || !fileName) throw new AppError('NO_FILE')
      const { record: data, warnings } = await svc.commit(
        p.user,
        { fileName, staged, projectName: fields.project_name, description: fields.description },
        contentOrigin(req, deps.config),
      )
      const lang = langOf(req)
      const site = siteUrl(siteOriginFor(req, deps.config, p.user.username), `/${encodeURIComponent(data.file_name)}`)
      return {
        success: true,
        message: MESSAGES[data.is_update ? 'updated' : 'created'][lang],
        data: { ...data, site_url: site },
        warnings: warningsIn(warnings, lang),
      }
    },
  )

  app.get(
    '/svc_api/upload/info',
    {
      config: { auth: 'any' },
      schema: {
        tags: ['single file'],
        summary: "Upload configuration and the caller's quota",
        response: { 200: Type.Object({ success: Type.Boolean(), data: UploadConfig }) },
      },
    },
    async (req) => ({ success: true, data: await svc.info(caller(req).user) }),
  )

  app.get(
    '/svc_api/files',
    {
      config: { auth: 'any' },
      schema: {
        tags: ['single file'],
        summary: "The caller's files, newest first",
        querystring: ListQuery,
        response: {
          200: Type.Object({
            success: Type.Boolean(),
            data: Type.Object({
              page: Type.Integer(),
              per_page: Type.Integer(),
              total: Type.Integer(),
              total_pages: Type.Integer(),
              files: Type.Array(FileListItem),
            }),
          }),
        },
      },
    },
    async (req) => {
      const p = caller(req)
      const q = req.query as Record<string, unknown>
      const page = parsePage(q, { perPage: 20, maxPerPage: 100 })
      const featured = parseFeatured(q.is_featured)
      const s = lastValue(q.search)
      const search = typeof s === 'string' && s !== '' ? s : undefined
      const { total, files } = await svc.list(p.user, { search, featured }, page.perPage, page.offset, contentOrigin(req, deps.config))
      const site = siteOriginFor(req, deps.config, p.user.username)
      return {
        success: true,
        data: { ...pageInfo(page, total), files: files.map((f) => ({ ...f, site_url: siteUrl(site, `/${encodeURIComponent(f.file_name)}`) })) },
      }
    },
  )

  app.delete(
    '/svc_api/files/:file_name',
    {
      config: { auth: 'any' },
      schema: {
        tags: ['single file'],
        summary: "Delete one of the caller's files (beyond the spec)",
        params: Type.Object({ file_name: Type.String() }),
        response: { 200: Type.Object({ success: Type.Boolean(), message: Type.String() }) },
      },
    },
    async (req) => {
      const p = caller(req)
      await svc.remove(p.user, (req.params as { file_name: string }).file_name)
      return { success: true, message: MESSAGES.deleted[langOf(req)] }
    },
  )
}
