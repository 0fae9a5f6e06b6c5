import { Type, type TSchema } from '@sinclair/typebox'
import { BYTES_BODY } from './answer-schemas.js'

/**
 * Route schemas of conditional and partial reads, for the OpenAPI document: the request headers
 * that decide a 206, 304, 412 or 416 and those answers, with the headers a route sends on them
 * (`headers` of a response schema becomes the answer's headers in the document). The handlers
 * send no payload with a 304, 412 or 416 and bytes with a 206, so these schemas never
 * serialize anything.
 */

/** The ETag header of an answer: `description` says what it names. */
const etagHeader = (description: string) => ({ ETag: { type: 'string', description } })

/** A 304: If-None-Match (or If-Modified-Since) matched; no body, the current ETag. */
export const notModified = (description: string, etag: string) => Type.Null({ description, headers: etagHeader(etag) })

/** A 412: a precondition failed; no body, and the current ETag when the route has one. */
export const preconditionFailed = (description: string, etag?: string) =>
  Type.Null({ description, ...(etag === undefined ? {} : { headers: etagHeader(etag) }) })

/** The conditional and range request headers of a public link (src/http/representation.ts decides). */
export const LinkConditionHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'Answer only if the ETag is one of the quoted tags (strong comparison) or *; else 412 with no body' })),
  'if-unmodified-since': Type.Optional(Type.String({ description: 'An HTTP date; without If-Match, 412 with no body when the content changed after it' })),
  'if-none-match': Type.Optional(Type.String({ description: 'Quoted tags or *: 304 with no body when one names the content (weak comparison)' })),
  'if-modified-since': Type.Optional(
    Type.String({ description: 'An HTTP date; without If-None-Match, 304 with no body when the content did not change after it' }),
  ),
  range: Type.Optional(
    Type.String({
      description:
        'One bytes range (`bytes=first-last`, `bytes=first-`, `bytes=-suffix`): 206 with those bytes, clamped to the size; 416 when it starts past the end (or `bytes=-0`). Several ranges, a malformed or reversed one, or another unit: the whole body (200)',
    }),
  ),
  'if-range': Type.Optional(
    Type.String({ description: 'The current strong ETag or exact Last-Modified date: Range applies only then, else the whole body (200)' }),
  ),
})

/** The bytes of a link's answer, as `media` names their types. */
const bytesOf = (media: string) => ({ [media]: { schema: { ...BYTES_BODY } } })

const ACCEPT_RANGES = { 'Accept-Ranges': { type: 'string', const: 'bytes', description: 'Range takes one bytes range' } }

/**
 * The answers of a public link besides its errors: 200 with the bytes (`media` names their
 * types), 206 with one range of them, 304, 412 and 416 with no body; every one carries the
 * ETag `etag` describes (representation.ts replyRange sets it before deciding).
 */
export function linkResponses(o: {
  media: string
  bytes: string
  etag: string
  /** Headers the link sends on each of these answers besides its validators (hosted data's X-Data-Version). */
  headers?: Record<string, { type: string; description: string }>
}): Record<string, TSchema> {
  const own = o.headers ?? {}
  const withOwn = (s: TSchema): TSchema => (o.headers === undefined ? s : { ...s, headers: { ...(s.headers as object), ...own } })
  return {
    200: Type.Unsafe({ description: o.bytes, headers: { ...etagHeader(o.etag), ...ACCEPT_RANGES, ...own }, content: bytesOf(o.media) }),
    206: Type.Unsafe({
      description: 'Partial Content: the one range Range asked for (If-Range, when sent, named the current ETag or date), always of the identity bytes',
      headers: {
        'Content-Range': { type: 'string', description: '`bytes first-last/size`: the bytes sent (inclusive) and the whole size' },
        ...etagHeader(o.etag),
        ...ACCEPT_RANGES,
        ...own,
      },
      content: bytesOf(o.media),
    }),
    304: withOwn(notModified('Not Modified: If-None-Match or If-Modified-Since matched; no body', o.etag)),
    412: withOwn(preconditionFailed('Precondition Failed: If-Match or If-Unmodified-Since did not hold; no body, never kept by a shared cache', o.etag)),
    416: Type.Null({
      description: 'Range Not Satisfiable: the range starts past the end (or is `bytes=-0`); no body',
      headers: { 'Content-Range': { type: 'string', description: '`bytes */size`: the whole size' }, ...etagHeader(o.etag), ...own },
    }),
  }
}
