import { Type } from '@sinclair/typebox'
import { ALLOWED_CONTENT_TYPES } from './content.js'

/** Request shapes of the hosted data endpoints (JSON variants; multipart is read by hand). */

const contentTypeDoc = `One of ${ALLOWED_CONTENT_TYPES.join(', ')}; optional "; charset=utf-8". Served as "<type>; charset=utf-8".`

// ids are checked in the handlers (anything malformed is a 404, like a missing file)
export const FileParams = Type.Object({ file_id: Type.String() })
export const VersionParams = Type.Object({ file_id: Type.String(), version: Type.String() })

export const CreateBody = Type.Object({
  display_name: Type.String({ maxLength: 1024, description: '1-255 characters, no control characters' }),
  // checked in the handler: a schema union would coerce a number into a string
  content: Type.Unknown({ description: 'UTF-8 text (a string); for JSON types an object or array is also accepted and stored as compact JSON' }),
  content_type: Type.Optional(Type.String({ maxLength: 200, description: `${contentTypeDoc} Default: from the display name's extension, else text/plain.` })),
  description: Type.Optional(Type.String({ maxLength: 8000 })),
})

export const VersionBody = Type.Object({
  content: Type.Unknown({ description: 'as on create' }),
  set_default: Type.Optional(Type.Boolean({ description: 'make the new version the one the public link serves (default false)' })),
  content_type: Type.Optional(Type.String({ maxLength: 200, description: `${contentTypeDoc} Default: the file's current type.` })),
})

export const DefaultVersionBody = Type.Object({
  version: Type.Integer({ minimum: 1, maximum: 2_000_000_000 }),
})

export const MetaBody = Type.Object({
  display_name: Type.Optional(Type.String({ maxLength: 1024 })),
  description: Type.Optional(Type.String({ maxLength: 8000 })),
})

/** Multipart form fields accepted next to the one file part. */
export const MULTIPART_DOC = 'multipart/form-data: one file part (UTF-8 text), optional fields display_name, description, content_type, set_default.'

/** JSON or multipart: only the JSON variant is validated by schema (multipart has no parsed body). */
export const jsonOrMultipart = <T>(schema: T) => ({
  content: { 'application/json': { schema } },
})
