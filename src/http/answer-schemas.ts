import { Type, type SchemaOptions, type TSchema } from '@sinclair/typebox'

/**
 * Route answers in media types other than JSON, for the OpenAPI document: `content` of a
 * response schema names each media type's body. Fastify serializes a payload by the schema of
 * the media type the reply carries (application/json here), so a JSON part is still the
 * allow-list of its fields; a string, Buffer or stream payload is sent as it is.
 */

/** A value or null (`options` describe the union: what null means). */
export const Nullable = <T extends TSchema>(t: T, options: SchemaOptions = {}) => Type.Union([t, Type.Null()], options)

/** A text body (an HTML page, CSV). */
export const TEXT_BODY = { type: 'string' } as const
/** Bytes of any kind (a download, an archive). */
export const BYTES_BODY = { type: 'string', format: 'binary' } as const

/** The schema key that carries a raw body's media types for the OpenAPI document only. */
export const RAW_BODY_KEY = 'x-raw-body'

/**
 * A route's request body read as a stream (an archive), for the OpenAPI document only:
 * `consumes` plus each media type's description; the route's content-type parser takes it.
 */
export function rawBody(media: Record<string, string>) {
  return {
    consumes: Object.keys(media),
    [RAW_BODY_KEY]: Object.fromEntries(Object.entries(media).map(([type, description]) => [type, { schema: { ...BYTES_BODY, description } }])),
  }
}

/** An answer described by `description`, with one body schema per media type (each a copy: routes may share them). */
export function mediaAnswer(description: string, media: Record<string, TSchema | typeof TEXT_BODY | typeof BYTES_BODY>): TSchema {
  return Type.Unsafe({ description, content: Object.fromEntries(Object.entries(media).map(([type, schema]) => [type, { schema: { ...schema } }])) })
}

/**
 * The error body of every API route, in the route's format: A (numeric `error_code` with type,
 * solution and doc_link; the default), B (string `error_code`, single-file upload) or plain
 * (`success` and `message` only). Only `success` and `message` are always present.
 */
export const ERROR_SCHEMA = {
  type: 'object',
  description:
    'An error answer. Format A (most routes): numeric error_code with error_type, solution and doc_link (see /docs/errors). Format B (POST /svc_api/upload): string error_code. Plain (image host, hosted data, redeem): success and message only. Rate limits add retry_after and details.',
  required: ['success', 'message'],
  properties: {
    success: { type: 'boolean', const: false },
    message: { type: 'string' },
    error_code: { type: ['integer', 'string'], description: 'A number from the error table (format A), or a string code (format B)' },
    error_type: { type: 'string' },
    solution: { type: 'string' },
    doc_link: { type: 'string', description: 'Where the code is explained: /docs/errors#<code>' },
    retry_after: { type: 'integer', description: 'Seconds to wait (rate limits)' },
    details: { type: 'object', additionalProperties: true },
  },
  additionalProperties: true,
} as const

/**
 * The `4XX` of a route that answers a browser (Accept: text/html) with a short page: the
 * service's JSON error, or that page. Uppercase: Fastify serializes by `4xx`, so the key
 * documents and never serializes.
 */
export const ERROR_OR_PAGE = mediaAnswer("The service's JSON error; for a browser (Accept: text/html), a short page in its language saying why", {
  'application/json': Type.Unsafe(ERROR_SCHEMA),
  'text/html': TEXT_BODY,
})
