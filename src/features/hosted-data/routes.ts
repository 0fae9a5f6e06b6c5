import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Transform, type Readable } from 'node:stream'
import type { Deps } from '../../deps.js'
import type { User } from '../../auth/users.js'
import { AppError } from '../../errors/app-error.js'
import { say } from '../../web/short-page.js'
import { caller } from '../../http/guard.js'
import { FILE_PART, multipartForm, multipartParts, readUpload } from '../../http/multipart.js'
import { contentOrigin } from '../../http/origin.js'
import { createHostedData, maxFileBytes, tooLarge, type Upload } from './service.js'
import { JsonSize, bad, checkDescription, checkDisplayName, encodeText, fileDisplayName, isJsonType, normalizeContentType, typeFromName } from './content.js'
import {
  CreateBody,
  DefaultVersionBody,
  DeleteReply,
  FileParams,
  FileReply,
  ListReply,
  MULTIPART_DOC,
  MetaBody,
  StatusReply,
  VersionBody,
  VersionParams,
  VersionReply,
  jsonOrMultipart,
} from './schemas.js'

const FILE_ID_RE = /^[A-Za-z0-9-]{1,64}$/

interface Parsed {
  fields: Record<string, unknown>
  /** Bytes of the multipart file part, or undefined for JSON (content is in fields). */
  file?: { bytes: Buffer; filename?: string; mimetype?: string }
}

/** JSON body allowance, counted as stored (JsonSize): the content limit plus room for the other fields. */
const jsonBodyLimit = (user: User) => maxFileBytes(user) + 64 * 1024
/** Raw bytes of a JSON body within that allowance: 6 per counted byte (`\u0001`) at most, whitespace aside. */
const JSON_RAW_FACTOR = 6

/**
 * Reads a JSON or multipart body. Multipart: one file part, counted while it streams and
 * refused with 413 as soon as it passes the user's per-version limit (nothing is stored).
 */
async function readBody(req: FastifyRequest, user: User): Promise<Parsed> {
  if (req.isMultipart()) {
    const limit = maxFileBytes(user)
    const fields: Record<string, unknown> = {}
    let file: Parsed['file']
    for await (const part of multipartParts(req, { limits: { fileSize: limit + 1, fieldSize: 16 * 1024, files: 1, fields: 20, parts: 24 } })) {
      if (part.type === 'file') {
        file = { bytes: await readUpload(part.file, limit, () => tooLarge(limit)), filename: part.filename, mimetype: part.mimetype }
      } else {
        // busboy cuts a long field silently: refuse it rather than keep a cut value
        if (part.valueTruncated) throw bad({ zh: `字段 ${part.fieldname} 过长`, en: `field ${part.fieldname} is too long` })
        fields[part.fieldname] = typeof part.value === 'string' ? part.value : String(part.value)
      }
    }
    // content comes only as a file part: busboy decodes text fields leniently (U+FFFD), which
    // would defeat the strict UTF-8 check
    if (!file)
      throw bad({
        zh: '缺少文件部分：内容须作为 multipart/form-data 的一个文件部分（UTF-8 文本）发送，可选字段 display_name、description、content_type、set_default',
        en: `no file part (send the content as a file part); ${MULTIPART_DOC}`,
      })
    return { fields, file }
  }
  const ct = String(req.headers['content-type'] ?? '').toLowerCase()
  if (!ct.startsWith('application/json')) throw new AppError('UNSUPPORTED_MEDIA_TYPE', { params: { expected: 'application/json or multipart/form-data' } })
  if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body)) throw new AppError('INVALID_JSON')
  return { fields: req.body as Record<string, unknown> }
}

/** The declared type, if any (content_type field), normalised; 400 for anything off the list. */
const declaredType = (fields: Record<string, unknown>): string | undefined => {
  const v = fields.content_type
  if (v === undefined || v === null || v === '') return undefined
  if (typeof v !== 'string') throw bad({ zh: 'content_type 须为字符串', en: 'content_type must be a string' })
  return normalizeContentType(v)
}

/** A number the body parser read as Infinity (`1e309`): JSON.stringify would store null for it. */
const finiteOnly = (_key: string, v: unknown): unknown => {
  if (typeof v === 'number' && !Number.isFinite(v))
    throw bad({ zh: 'content 含有超出范围的数字（数字须为有限的双精度数）', en: 'content holds a number out of range (numbers must be finite doubles)' })
  return v
}

/**
 * An object or array of content as compact JSON. The body parser reads any depth, but
 * JSON.stringify recurses and throws RangeError past the stack's depth (thousands of levels):
 * that content is refused as bad input, not answered 500; so is a number out of range, which
 * would be stored as null.
 */
function jsonText(c: object): string {
  try {
    return JSON.stringify(c, finiteOnly)
  } catch (e) {
    if (!(e instanceof RangeError)) throw e
    throw bad({ zh: 'content 嵌套过深，无法存为 JSON；请以字符串发送', en: 'content nests too deeply to store as JSON; send it as a string' })
  }
}

/** Content bytes from a parsed body, given the type they will be stored as. */
function contentBytes(p: Parsed, type: string): Buffer {
  if (p.file) return p.file.bytes
  const c = p.fields.content
  if (typeof c === 'string') return encodeText(c)
  if (c !== null && typeof c === 'object' && isJsonType(type)) return Buffer.from(jsonText(c), 'utf8')
  if (c === undefined || c === null) throw bad({ zh: '缺少 content', en: 'content is required' })
  throw bad({ zh: 'content 须为字符串（只有 JSON 类型可为对象或数组）', en: 'content must be a string (an object or array only for JSON types)' })
}

/** The type of a new file: declared, else from the uploaded file's name or part type, else from the display name. */
function createType(p: Parsed, displayName: string): string {
  const declared = declaredType(p.fields)
  if (declared) return declared
  const fromFile = typeFromName(p.file?.filename)
  if (fromFile) return fromFile
  const part = p.file?.mimetype?.split(';')[0].trim().toLowerCase()
  if (part && part !== 'application/octet-stream') {
    try {
      return normalizeContentType(part)
    } catch {
      // an unknown part type falls through to the name or text/plain
    }
  }
  if (!p.file && p.fields.content !== null && typeof p.fields.content === 'object') return 'application/json'
  return typeFromName(displayName) ?? 'text/plain'
}

function flag(v: unknown): boolean {
  if (v === undefined || v === null || v === '' || v === false) return false
  if (v === true) return true
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a form or query flag: a scalar, whatever its type
  const s = String(v).toLowerCase()
  if (['true', '1', 'yes', 'on'].includes(s)) return true
  if (['false', '0', 'no', 'off'].includes(s)) return false
  throw bad({ zh: 'set_default 须为 true 或 false', en: 'set_default must be true or false' })
}

const fileId = (req: FastifyRequest): string => {
  const id = (req.params as { file_id: string }).file_id
  if (!FILE_ID_RE.test(id)) throw new AppError('RESOURCE_NOT_FOUND')
  return id
}

/**
 * Management API of hosted data: session only (an API key gets 403), and the hosted-data
 * entitlement (403 without) except on status, which answers entitled:false instead.
 */
export function hostedDataApi(app: FastifyInstance, deps: Deps): void {
  const svc = deps.services.get(createHostedData)
  const managed = { auth: 'session' as const, errorFormat: 'plain' as const, entitlement: 'hosted-data' }
  const origin = (req: FastifyRequest) => contentOrigin(req, deps.config)
  const tags = ['hosted-data']

  /**
   * JSON bodies are capped per user, counted as they arrive: their size as stored (escapes
   * decoded, so the limit is the one a multipart file gets), and their raw size at 6 times that.
   */
  const limitJson = async (req: FastifyRequest, _reply: unknown, payload: Readable) => {
    // (isMultipart() is only known after parsing; the header decides here)
    if (
      String(req.headers['content-type'] ?? '')
        .toLowerCase()
        .startsWith('multipart/')
    )
      return payload
    const limit = jsonBodyLimit(caller(req).user)
    const rawLimit = JSON_RAW_FACTOR * limit
    const err = () => tooLarge(maxFileBytes(caller(req).user))
    if (Number(req.headers['content-length'] ?? 0) > rawLimit) throw err()
    let n = 0
    const size = new JsonSize()
    const counter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        n += chunk.length
        if (n <= rawLimit && size.add(chunk) <= limit) return cb(null, chunk)
        // discard the rest of the body so the client can read the 413
        payload.unpipe(counter)
        payload.resume()
        cb(err())
      },
    })
    return payload.pipe(counter)
  }
  const bigBody = { bodyLimit: 1024 * 1024 * 1024, preParsing: limitJson }

  app.get(
    '/api/hosted-data/status',
    {
      config: { auth: 'session', errorFormat: 'plain' },
      schema: { tags, summary: 'Entitlement status and quotas (200 with entitled:false before an entitlement)', response: { 200: StatusReply } },
    },
    async (req) => svc.status(caller(req).user),
  )

  app.get(
    '/api/hosted-data/files',
    {
      config: managed,
      schema: {
        tags,
        summary: 'List files with public_url and a version summary, most recently updated first',
        description: 'A file held for review (abuse handling) carries quarantined: true; its link answers 451 until an admin acts.',
        response: { 200: ListReply },
      },
    },
    async (req) => svc.list(caller(req).user, origin(req)),
  )

  app.get(
    '/api/hosted-data/files/:file_id',
    {
      config: managed,
      schema: { tags, summary: 'File details and all versions', params: FileParams, response: { 200: FileReply } },
    },
    async (req) => svc.details(caller(req).user, fileId(req), origin(req)),
  )

  app.post(
    '/api/hosted-data/files',
    {
      config: managed,
      ...bigBody,
      schema: {
        tags,
        summary: `Create a file: JSON {display_name, content, content_type?, description?}, or ${MULTIPART_DOC}`,
        body: jsonOrMultipart(CreateBody),
        ...multipartForm(
          {
            file: FILE_PART('the content: UTF-8 text'),
            display_name: { type: 'string', description: "default: the file's name" },
            description: { type: 'string' },
            content_type: { type: 'string' },
          },
          ['file'],
        ),
        response: { 200: FileReply },
      },
    },
    async (req) => {
      const user = caller(req).user
      const p = await readBody(req, user)
      const displayName = checkDisplayName(p.fields.display_name ?? fileDisplayName(p.file?.filename))
      const description = checkDescription(p.fields.description)
      const contentType = createType(p, displayName)
      const upload: Upload = { bytes: contentBytes(p, contentType), contentType }
      return svc.create(user, { displayName, description, upload }, origin(req))
    },
  )

  app.post(
    '/api/hosted-data/files/:file_id/versions',
    {
      config: managed,
      ...bigBody,
      schema: {
        tags,
        summary: `Upload a new version: JSON {content, set_default?, content_type?}, or ${MULTIPART_DOC}`,
        params: FileParams,
        body: jsonOrMultipart(VersionBody),
        ...multipartForm(
          { file: FILE_PART('the content: UTF-8 text'), set_default: { type: 'string', enum: ['true', 'false'] }, content_type: { type: 'string' } },
          ['file'],
        ),
        response: { 200: VersionReply },
      },
    },
    async (req) => {
      const user = caller(req).user
      const id = fileId(req)
      const p = await readBody(req, user)
      const setDefault = flag(p.fields.set_default)
      const contentType = declaredType(p.fields) ?? (await svc.currentType(user, id))
      return svc.addVersion(user, id, { upload: { bytes: contentBytes(p, contentType), contentType }, setDefault }, origin(req))
    },
  )

  app.post(
    '/api/hosted-data/files/:file_id/default-version',
    {
      config: managed,
      schema: { tags, summary: 'Switch the version the public link serves', params: FileParams, body: DefaultVersionBody, response: { 200: FileReply } },
    },
    async (req) => {
      const { version } = req.body as { version: number }
      return svc.setDefault(caller(req).user, fileId(req), version, origin(req))
    },
  )

  app.put(
    '/api/hosted-data/files/:file_id/meta',
    {
      config: managed,
      schema: { tags, summary: 'Update display_name and/or description', params: FileParams, body: MetaBody, response: { 200: FileReply } },
    },
    async (req) => {
      const body = (req.body ?? {}) as { display_name?: unknown; description?: unknown }
      if (body.display_name === undefined && body.description === undefined)
        throw bad({ zh: '请发送 display_name 或 description', en: 'send display_name and/or description' })
      const patch = {
        displayName: body.display_name === undefined ? undefined : checkDisplayName(body.display_name),
        description: body.description === undefined ? undefined : checkDescription(body.description),
      }
      return svc.updateMeta(caller(req).user, fileId(req), patch, origin(req))
    },
  )

  app.delete(
    '/api/hosted-data/files/:file_id',
    {
      config: managed,
      schema: { tags, summary: 'Delete a file and all its versions (423 when locked)', params: FileParams, response: { 200: DeleteReply } },
    },
    async (req) => {
      await svc.remove(caller(req).user, fileId(req))
      return { success: true, message: say(req, '已删除', 'Deleted') }
    },
  )

  app.delete(
    '/api/hosted-data/files/:file_id/versions/:version',
    {
      config: managed,
      schema: {
        tags,
        summary: 'Delete one non-default version (beyond the spec; 423 when locked)',
        params: VersionParams,
        response: { 200: FileReply },
      },
    },
    async (req) => {
      const v = (req.params as { version: string }).version
      if (!/^[1-9]\d{0,9}$/.test(v)) throw new AppError('RESOURCE_NOT_FOUND')
      return svc.removeVersion(caller(req).user, fileId(req), Number(v), origin(req))
    },
  )
}
