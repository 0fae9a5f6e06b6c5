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

/** An answer described by `description`, with one body schema per media type (each a copy: routes may share them). */
export function mediaAnswer(description: string, media: Record<string, TSchema | typeof TEXT_BODY | typeof BYTES_BODY>): TSchema {
  return Type.Unsafe({ description, content: Object.fromEntries(Object.entries(media).map(([type, schema]) => [type, { schema: { ...schema } }])) })
}
