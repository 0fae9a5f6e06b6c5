import type { FastifyRequest } from 'fastify'
import type { Multipart } from '@fastify/multipart'
import { PassThrough, type Readable, type Transform } from 'node:stream'
import { AppError } from '../errors/app-error.js'
import type { Text } from '../errors/text.js'

/**
 * The one way every multipart route reads its body. Invariants:
 * - an error of the parser or of the client (malformed, truncated, aborted body) always
 *   reaches the handler as a client error (400, INVALID_PARAMETER), never as a 5xx;
 * - a file stream handed to a consumer always has an error listener, and ends or fails even
 *   when the parser gave up on it before the consumer came (no uncaught 'error', no hang);
 * - once the handler fails, the rest of the request body is read and dropped, so the answer
 *   gets through; a client that has gone only gets its socket closed.
 */

type PartsOptions = Parameters<FastifyRequest['parts']>[0]

/**
 * Messages of the parser's own errors (busboy and dicer), which all mean a malformed body,
 * each with what it means in Chinese (the English is the parser's message).
 */
const PARSER_ERRORS: Array<[RegExp, string]> = [
  [/^Multipart: Boundary not found$/, '找不到分隔边界'],
  [/^Boundary required$/, '缺少分隔边界'],
  [/^Unexpected end of multipart data$/, '数据意外结束'],
  [/^\w+ terminated early due to unexpected end of multipart data$/, '数据意外结束，某个部分不完整'],
  [/^The needle cannot .*$/, '分隔边界无效'],
  [/^Malformed .*$/, '格式错误'],
]

const malformed = (detail: Text) =>
  new AppError('INVALID_PARAMETER', { params: { detail: { zh: `多部分表单请求体无效：${detail.zh}`, en: `malformed multipart body: ${detail.en}` } } })

/** The request stream ended (the client went) before the body's end. */
export const CUT_SHORT: Text = { zh: '请求在请求体完整之前就结束了', en: 'the request ended before the body was complete' }

/** The client error behind an error of the multipart parser or the request stream; null for any other error. */
export function multipartClientError(e: unknown): AppError | null {
  if (e instanceof AppError || typeof e !== 'object' || e === null) return null
  const { code, message } = e as { code?: string; message?: string }
  switch (code) {
    case 'FST_MP_PREMATURE_CLOSE':
    case 'ERR_STREAM_PREMATURE_CLOSE':
    case 'ECONNRESET':
    case 'ECONNABORTED':
      return malformed(CUT_SHORT)
    case 'FST_PROTO_VIOLATION':
      // the parser refuses names of Object.prototype's members (`__proto__`, `constructor`, ...)
      return new AppError('INVALID_PARAMETER', {
        params: {
          detail: {
            zh: '某个部分的名称与内置对象属性相同（__proto__、constructor、toString 等），不允许使用',
            en: 'a part is named like a built-in object property (__proto__, constructor, toString, ...), which is not allowed',
          },
        },
      })
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return malformed({ zh: '声明为 JSON 的部分不是有效的 JSON', en: 'a part declared as JSON is not valid JSON' })
    default:
      break // other codes, and the parser's errors without one: below
  }
  const zh = code === undefined && typeof message === 'string' ? PARSER_ERRORS.find(([re]) => re.test(message))?.[1] : undefined
  if (zh !== undefined)
    return malformed({
      zh,
      en: String(message)
        .replace(/^Multipart: /, '')
        .toLowerCase(),
    })
  if (message === 'aborted') return malformed(CUT_SHORT)
  return null
}

/** Rethrows `e` as the client error it stands for, or unchanged. */
export function asClientError(e: unknown): unknown {
  return multipartClientError(e) ?? e
}

/**
 * The parts of a multipart request, as `req.parts()` yields them, with parser errors turned
 * into client errors. Errors thrown by the consumer's own loop body pass through unchanged.
 * When iteration stops early (an error, a break), the rest of the body is drained.
 */
export async function* multipartParts(req: FastifyRequest, options?: PartsOptions): AsyncGenerator<Multipart> {
  let complete = false
  try {
    const parts = req.parts(options)
    for (;;) {
      let r: IteratorResult<Multipart>
      try {
        r = await parts.next()
      } catch (e) {
        throw asClientError(e)
      }
      if (r.done) break
      yield r.value
    }
    complete = true
  } finally {
    if (!complete) drainRequest(req)
  }
}

/**
 * A file part's stream made safe to consume after any number of awaits: the returned stream
 * (the `through` transform when given, else a PassThrough) carries the source's bytes, and
 * is destroyed with the client error when the source fails or closes before its end,
 * including when that already happened. It always has an error listener of its own, so an
 * early failure waits, unthrown, for whoever reads it (a blob store's pipeline, an iterator).
 */
export function guardUpload(source: Readable, through?: Transform): Readable {
  const out: Transform = through ?? new PassThrough()
  out.on('error', () => {
    /* read by the consumer; this listener only keeps it from being uncaught */
  })
  const fail = (e: unknown) => {
    if (!out.destroyed) out.destroy((multipartClientError(e) ?? e ?? malformed(CUT_SHORT)) as Error)
  }
  if (source.errored || (source.destroyed && !source.readableEnded)) {
    fail(source.errored)
    return out
  }
  source.on('error', fail)
  source.on('close', () => {
    if (!source.readableEnded) fail(source.errored)
  })
  source.pipe(out)
  return out
}

/** Reads a file part whole, refusing it with `tooLarge` past `maxBytes` (nothing kept). */
export async function readUpload(source: Readable & { truncated?: boolean }, maxBytes: number, tooLarge: () => AppError): Promise<Buffer> {
  const chunks: Buffer[] = []
  let n = 0
  try {
    for await (const c of guardUpload(source) as AsyncIterable<Buffer>) {
      n += c.length
      if (n > maxBytes) throw tooLarge()
      chunks.push(c)
    }
  } catch (e) {
    source.resume()
    if ((e as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge()
    throw e
  }
  if (source.truncated) throw tooLarge()
  return Buffer.concat(chunks, n)
}

/** Drops a file part that will not be kept and returns how many bytes it held; its errors are the parts iterator's to report. */
export async function discardUpload(source: Readable): Promise<number> {
  let n = 0
  try {
    for await (const c of guardUpload(source) as AsyncIterable<Buffer>) n += c.length
  } catch {
    /* the parts iterator throws the same error next */
  }
  return n
}

/** Drops whatever is left of a request body after the handler failed, so the answer gets through. */
export function drainRequest(req: FastifyRequest): void {
  req.raw.unpipe()
  req.raw.resume()
}

/** The schema key that carries a multipart body's form for the OpenAPI document only. */
export const MULTIPART_FORM_KEY = 'x-multipart-form'

/**
 * A route's multipart body, for the OpenAPI document only: `consumes` plus the form's fields,
 * which the docs transform turns into the operation's `multipart/form-data` request body.
 * Nothing validates it (the parts are read by hand), so a route answers its own errors.
 */
export function multipartForm(fields: Record<string, unknown>, required: string[]): Record<string, unknown> {
  return { consumes: ['multipart/form-data'], [MULTIPART_FORM_KEY]: { type: 'object', required, properties: fields } }
}

/** A file part of a documented multipart form. */
export const FILE_PART = (description: string) => ({ type: 'string', format: 'binary', description })
