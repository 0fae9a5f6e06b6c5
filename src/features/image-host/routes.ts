import type { Readable } from 'node:stream'
import { FILE_PART, multipartForm } from '../../http/multipart.js'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { caller } from '../../http/guard.js'
import { multipartParts, readUpload } from '../../http/multipart.js'
import { contentOrigin } from '../../http/origin.js'
import { parsePage } from '../../http/pagination.js'
import { quotaOf } from '../../limits/quotas.js'
import { imageView, type ImageHost, type IncomingFile, type UploadOptions } from './service.js'
import { DeleteReply, ERROR_DOC, ImageReply, ImagesReply, ListQuery, ListReply, PatchBody, StatusReply, TokenParams, UploadQuery } from './schemas.js'

const MANAGE = { auth: 'session' as const, errorFormat: 'plain' as const, entitlement: 'image-host' }
const tags = ['image-host']

const tooLarge = (maxBytes: number) => new AppError('FILE_TOO_LARGE', { params: { limit: maxBytes }, status: 413 })

/** Reads a file stream into memory, refusing (413) as soon as it passes maxBytes. */
function readCapped(stream: Readable & { truncated?: boolean }, maxBytes: number): Promise<Buffer> {
  return readUpload(stream, maxBytes, () => tooLarge(maxBytes))
}

const FLAG_TRUE = new Set(['1', 'true', 'yes', 'on'])
const FLAG_FALSE = new Set(['', '0', 'false', 'no', 'off'])
function flag(v: string | undefined, name: string): boolean {
  if (v === undefined) return false
  const s = v.trim().toLowerCase()
  if (FLAG_TRUE.has(s)) return true
  if (FLAG_FALSE.has(s)) return false
  throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: `${name} 须为 true 或 false`, en: `${name} must be true or false` } } })
}

/**
 * The multipart files of a request (field `file`, several allowed), one at a time; text
 * fields (remark, keep_metadata) are collected as they come, so they must precede the files
 * they apply to (or be sent in the query string).
 */
function multipartFiles(req: FastifyRequest, maxBytes: number): { files: AsyncIterable<IncomingFile>; options: () => UploadOptions } {
  const fields: Record<string, string> = {}
  const query = req.query as { keep_metadata?: string; remark?: string }
  async function* files(): AsyncGenerator<IncomingFile> {
    for await (const part of multipartParts(req, { limits: { fileSize: maxBytes + 1 }, throwFileSizeLimit: false } as Parameters<FastifyRequest['parts']>[0])) {
      if (part.type === 'field') {
        fields[part.fieldname] = String(part.value)
        continue
      }
      if (part.fieldname !== 'file')
        throw new AppError('INVALID_PARAMETER', {
          params: {
            detail: {
              zh: `不接受文件字段 "${part.fieldname}"，图片请放在字段 "file" 中`,
              en: `unexpected file field "${part.fieldname}"; send images in the field "file"`,
            },
          },
        })
      if (part.filename === '') {
        // a file input left empty: browsers send a part without a file name or bytes, which is
        // no file at all; a nameless part with bytes is an image like any other
        const bytes = await readCapped(part.file, maxBytes)
        if (bytes.length > 0) yield { fileName: '', read: async (max) => (bytes.length > max ? Promise.reject(tooLarge(max)) : bytes) }
        continue
      }
      yield { fileName: part.filename, read: (max) => readCapped(part.file, max) }
    }
  }
  const options = (): UploadOptions => ({
    remark: fields.remark ?? query.remark,
    keepMetadata: flag(fields.keep_metadata ?? query.keep_metadata, 'keep_metadata'),
  })
  return { files: files(), options }
}

/** Image hosting management: session only, entitlement required (status answers without it). */
export function imageHostApi(app: FastifyInstance, deps: Deps, host: ImageHost): void {
  const origin = (req: FastifyRequest) => contentOrigin(req, deps.config)
  const maxImageBytes = (req: FastifyRequest) => quotaOf(caller(req).user.limits, 'image_max_bytes')

  app.get(
    '/api/image-host/status',
    {
      config: { auth: 'session', errorFormat: 'plain' },
      schema: {
        tags,
        summary: 'Entitlement and quotas (200 with entitled:false before an entitlement)',
        description: ERROR_DOC,
        response: { 200: StatusReply },
      },
    },
    async (req) => host.status(caller(req).user),
  )

  app.post(
    '/api/image-host/upload',
    {
      config: MANAGE,
      schema: {
        tags,
        summary: 'Upload one or several images (multipart field "file")',
        description: `Type from the bytes; EXIF/GPS removed unless keep_metadata=true. All files are stored or none. ${ERROR_DOC}`,
        ...multipartForm(
          {
            remark: { type: 'string', description: 'for every file (a form field before the files)' },
            keep_metadata: { type: 'string', enum: ['true', 'false'] },
            file: { type: 'array', items: FILE_PART('an image'), description: '1-20 parts' },
          },
          ['file'],
        ),
        querystring: UploadQuery,
        response: { 200: ImagesReply },
      },
    },
    async (req) => {
      const { files, options } = multipartFiles(req, maxImageBytes(req))
      const images = await host.upload(caller(req).user, files, options, origin(req))
      return { success: true, images }
    },
  )

  app.get(
    '/api/image-host/images',
    {
      config: MANAGE,
      schema: { tags, summary: "The caller's images, newest first", description: ERROR_DOC, querystring: ListQuery, response: { 200: ListReply } },
    },
    async (req) => {
      const page = parsePage(req.query as Record<string, unknown>, { perPage: 50, maxPerPage: 100 })
      return { success: true, ...(await host.list(caller(req).user, page, origin(req))) }
    },
  )

  app.get(
    '/api/image-host/images/:public_token',
    {
      config: MANAGE,
      schema: { tags, summary: "One of the caller's images (beyond the spec)", description: ERROR_DOC, params: TokenParams, response: { 200: ImageReply } },
    },
    async (req) => {
      const { public_token } = req.params as { public_token: string }
      return { success: true, image: imageView(await host.get(caller(req).user, public_token), origin(req)) }
    },
  )

  app.patch(
    '/api/image-host/images/:public_token',
    {
      config: MANAGE,
      schema: { tags, summary: 'Update remark and file name', description: ERROR_DOC, params: TokenParams, body: PatchBody, response: { 200: ImageReply } },
    },
    async (req) => {
      const { public_token } = req.params as { public_token: string }
      const image = await host.update(caller(req).user, public_token, req.body as { remark?: string; file_name?: string }, origin(req))
      return { success: true, image }
    },
  )

  app.post(
    '/api/image-host/images/:public_token/replace',
    {
      config: MANAGE,
      schema: {
        tags,
        summary: 'Replace the bytes; same token and URL, served at once',
        description: ERROR_DOC,
        ...multipartForm({ file: FILE_PART('the new image') }, ['file']),
        params: TokenParams,
        querystring: UploadQuery,
        response: { 200: ImageReply },
      },
    },
    async (req) => {
      const { public_token } = req.params as { public_token: string }
      const { files, options } = multipartFiles(req, maxImageBytes(req))
      const image = await host.replace(caller(req).user, public_token, files, options, origin(req))
      return { success: true, image }
    },
  )

  app.delete(
    '/api/image-host/images/:public_token',
    {
      config: MANAGE,
      schema: { tags, summary: 'Delete an image (423 when locked)', description: ERROR_DOC, params: TokenParams, response: { 200: DeleteReply } },
    },
    async (req) => {
      const { public_token } = req.params as { public_token: string }
      await host.remove(caller(req).user, public_token)
      return { success: true }
    },
  )
}
