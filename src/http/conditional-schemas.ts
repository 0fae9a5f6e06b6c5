import { Type, type TSchema } from '@sinclair/typebox'

/**
 * Route schemas of conditional reads, for the OpenAPI document: the request headers that
 * decide a 304 or 412 and those bodiless answers, with the `ETag` header a route sends on them
 * (`headers` of a response schema becomes the answer's headers in the document). The handlers
 * send no payload with a 304 or 412, so these schemas never serialize anything.
 */

/** The ETag header of an answer: `description` says what it names. */
const etagHeader = (description: string) => ({ ETag: { type: 'string', description } })

/** A 304: If-None-Match (or If-Modified-Since) matched; no body, the current ETag. */
export const notModified = (description: string, etag: string) => Type.Null({ description, headers: etagHeader(etag) })

/** A 412: a precondition failed; no body, and the current ETag when the route has one. */
export const preconditionFailed = (description: string, etag?: string) =>
  Type.Null({ description, ...(etag === undefined ? {} : { headers: etagHeader(etag) }) })

/** The conditional request headers of a public link (src/http/representation.ts decides). */
export const LinkConditionHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'Answer only if the ETag is one of the quoted tags (strong comparison) or *; else 412 with no body' })),
  'if-unmodified-since': Type.Optional(Type.String({ description: 'An HTTP date; without If-Match, 412 with no body when the content changed after it' })),
  'if-none-match': Type.Optional(Type.String({ description: 'Quoted tags or *: 304 with no body when one names the content (weak comparison)' })),
  'if-modified-since': Type.Optional(
    Type.String({ description: 'An HTTP date; without If-None-Match, 304 with no body when the content did not change after it' }),
  ),
})

/**
 * The answers of a public link besides its errors: 200 with the bytes (`media` names their
 * types), 304 and 412 with no body; every one carries the ETag `etag` describes.
 */
export function linkResponses(o: { media: string; bytes: string; etag: string }): Record<string, TSchema> {
  return {
    200: Type.Unsafe({ description: o.bytes, headers: etagHeader(o.etag), content: { [o.media]: { schema: { type: 'string', format: 'binary' } } } }),
    304: notModified('Not Modified: If-None-Match or If-Modified-Since matched; no body', o.etag),
    412: preconditionFailed('Precondition Failed: If-Match or If-Unmodified-Since did not hold; no body, never kept by a shared cache', o.etag),
  }
}
