import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../errors/app-error.js'
import { ERRORS, type ErrorKey } from '../errors/codes.js'
import { pickLang, renderError, type ErrorFormat } from '../errors/render.js'
import type { Config } from '../config.js'
import { serviceOrigin } from './origin.js'

/** The error format of the route that answers this request. */
export function routeErrorFormat(req: FastifyRequest): ErrorFormat {
  return req.routeOptions?.config?.errorFormat ?? 'A'
}

/**
 * The raw answer to a request Node's HTTP parser refused before any route saw it (a malformed
 * or cut-short request, a client that half-closed mid-body, headers over the limit, a client
 * too slow): error 1106 in format A, with the status the HTTP layer chose (400, 408, 431).
 * The connection closes after it.
 */
export function clientErrorAnswer(code: string | undefined, docBase: string): string {
  const [status, detail] =
    code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'the request was not received in time']
      : code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'the request headers are too large']
        : [400, 'malformed HTTP request']
  const body = JSON.stringify(renderError('INVALID_PARAMETER', 'A', 'zh', { params: { detail } }, docBase))
  const reason = status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
}

/** Answers a refused request on its socket (clientErrorAnswer) and closes it; a reset connection has no one to answer. */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, docBase: string): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  if (socket.writable) socket.write(clientErrorAnswer(err.code, docBase))
  socket.destroy(err)
}

/** Sends an AppError in the route's format. */
export function sendAppError(req: FastifyRequest, reply: FastifyReply, err: AppError, config: Config, format?: ErrorFormat): FastifyReply {
  const lang = pickLang(req.headers['accept-language'], req.routeOptions?.config?.lang)
  const body = renderError(err.key, format ?? routeErrorFormat(req), lang, err.options, serviceOrigin(req, config))
  for (const [k, v] of Object.entries(err.options.headers ?? {})) reply.header(k, v)
  return reply.code(err.status).type('application/json; charset=utf-8').send(body)
}

/**
 * Maps Fastify's own errors (parsing, limits, validation) to rows of the table. `bodyLimit`:
 * the route's body limit, `fileLimit`: a multipart file's (the numbers a 413 names).
 */
function fromFastifyError(e: FastifyError, bodyLimit: number, fileLimit: number): AppError | null {
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('BODY_TOO_LARGE', { params: { limit: bodyLimit } })
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError('BODY_TOO_LARGE', { params: { limit: fileLimit } })
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', { params: { expected: 'application/json' } })
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('INVALID_JSON')
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new AppError('TOO_MANY_PARTS', { params: { detail: e.message } })
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', { params: { expected: 'multipart/form-data' } })
    case 'FST_ERR_VALIDATION':
      return new AppError('INVALID_PARAMETER', { params: { detail: e.message } })
  }
  // PostgreSQL: text the database cannot hold (NUL, invalid encoding) is the client's input
  const pgCode = (e as { code?: string }).code
  if (pgCode === '22021' || pgCode === '22P05' || pgCode === '22P02') {
    return new AppError('INVALID_PARAMETER', { params: { detail: 'a value contains characters that cannot be stored' } })
  }
  // SQLite: the fsync that covered this write failed, so the write may not survive a crash
  if (pgCode === 'SVC_NOT_DURABLE') {
    return new AppError('STORAGE_UNAVAILABLE', { extra: { details: { reason: 'the write could not be made durable and may not have been saved' } } })
  }
  // the database pool could not hand out a connection in time, the server went away, or a
  // query went unanswered past DATABASE_QUERY_TIMEOUT
  if (/timeout exceeded when trying to connect|Connection terminated|ECONNREFUSED|Query read timeout/.test(e.message ?? '')) {
    return new AppError('DEPENDENCY_UNAVAILABLE')
  }
  if (e instanceof SyntaxError || (/JSON/.test(e.message ?? '') && e.statusCode === 400)) return new AppError('INVALID_JSON')
  if (e.statusCode === 413) return new AppError('BODY_TOO_LARGE', { params: { limit: bodyLimit } })
  if (e.statusCode === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', { params: { expected: 'application/json' } })
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return new AppError('INVALID_PARAMETER', { params: { detail: e.message }, status: e.statusCode })
  }
  return null
}

/** Installs the single error handler and the not-found handler of the service. */
export function installErrorHandling(app: FastifyInstance, config: Config): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const mediaTypeError = err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? req.routeOptions.config?.mediaTypeError : undefined
    const bodyLimit = req.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024
    const bodyTooLarge = err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? req.routeOptions.config?.bodyTooLarge : undefined
    let appErr =
      err instanceof AppError
        ? err
        : mediaTypeError
          ? new AppError(mediaTypeError)
          : bodyTooLarge
            ? bodyTooLarge(bodyLimit)
            : fromFastifyError(err, bodyLimit, config.maxUploadBytes)
    if (!appErr) {
      req.log.error({ err }, 'unexpected error')
      appErr = new AppError('INTERNAL', { params: { request_id: String(req.id) } })
    } else if (appErr.status >= 500) {
      req.log.warn({ err, code: ERRORS[appErr.key].code }, 'service unavailable')
    }
    return sendAppError(req, reply, appErr, config)
  })
}

/** Throws the error behind a table key (helper for handlers). */
export const fail = (key: ErrorKey, options?: ConstructorParameters<typeof AppError>[1]): never => {
  throw new AppError(key, options)
}
