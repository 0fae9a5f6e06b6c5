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

/** Answers (documented in /openapi.json; every field the service writes, so nothing is dropped). */
const TIME = 'ISO 8601, Beijing time with microseconds (2026-01-15T12:00:05.000000+08:00)'
export const Version = Type.Object({
  version: Type.Integer({ minimum: 1 }),
  size: Type.Integer({ description: 'bytes' }),
  content_type: Type.String(),
  created_at: Type.String({ description: TIME }),
  is_default: Type.Boolean(),
  url: Type.String({ description: 'the pinned public link of this version (?v=N)' }),
})
const fileFields = {
  id: Type.String({ description: 'the file_id of the management URLs' }),
  display_name: Type.String(),
  description: Type.String(),
  content_type: Type.String({ description: "the default version's" }),
  size: Type.Integer({ description: "the default version's, in bytes" }),
  public_url: Type.String({ description: "public link: the default version's bytes" }),
  public_token: Type.String(),
  default_version: Type.Integer({ minimum: 1 }),
  latest_version: Type.Integer({ minimum: 1, description: 'the newest version the file has (what ?v=latest serves)' }),
  version_count: Type.Integer({ minimum: 1 }),
  locked: Type.Boolean({ description: 'set by the operator (svc lock hosted-data); a locked file cannot be deleted' }),
  created_at: Type.String({ description: TIME }),
  updated_at: Type.String({ description: TIME }),
}
export const FileWithVersions = Type.Object({ ...fileFields, versions: Type.Array(Version) })

export const StatusReply = Type.Object({
  success: Type.Boolean(),
  entitled: Type.Boolean(),
  quota: Type.Object({ max_files: Type.Integer(), used_files: Type.Integer(), max_file_bytes: Type.Integer(), max_versions: Type.Integer() }),
})
export const ListReply = Type.Object({
  success: Type.Boolean(),
  files: Type.Array(
    Type.Object({
      ...fileFields,
      quarantined: Type.Optional(
        Type.Literal(true, { description: 'present when the file is held for review (abuse handling); its link answers 451 until an admin acts' }),
      ),
    }),
  ),
  total: Type.Integer(),
})
export const FileReply = Type.Object({ success: Type.Boolean(), file: FileWithVersions })
export const VersionReply = Type.Object({
  success: Type.Boolean(),
  file: FileWithVersions,
  version: Type.Composite([Version], { description: 'the version this request created (beyond the spec)' }),
})
export const DeleteReply = Type.Object({ success: Type.Boolean(), message: Type.String() })

/**
 * The public link's `v`: the route checks it (400 in the link's own format), so the schema
 * documents it and never refuses; given twice it arrives as an array, which the route refuses.
 */
export const PublicQuery = Type.Object({
  v: Type.Optional(
    Type.Union([Type.String(), Type.Array(Type.String())], {
      description: 'a version number (1, 2, ...): that version, cached for a year; latest: the newest version; omitted: the default version',
    }),
  ),
})
