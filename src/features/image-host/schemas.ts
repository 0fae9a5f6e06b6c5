import { Type } from '@sinclair/typebox'
import { repeatable } from '../../http/pagination.js'

/** TypeBox schemas of the image host (documented in /openapi.json). */
export const Image = Type.Object({
  public_token: Type.String({ description: 'URL-safe, 22 characters; fixed for the life of the image' }),
  public_url: Type.String({ description: 'stable public link (revalidated on every use, so a replace shows at once)' }),
  versioned_url: Type.String({ description: 'link to exactly this content (?v=digest prefix), cacheable for a year' }),
  file_name: Type.String(),
  size: Type.Integer({ description: 'bytes stored (after metadata removal)' }),
  content_type: Type.String({ description: 'from the bytes: image/png, image/jpeg, image/gif, image/webp, image/avif or image/svg+xml' }),
  width: Type.Union([Type.Integer(), Type.Null()], { description: 'as displayed (after the EXIF orientation); null for SVG' }),
  height: Type.Union([Type.Integer(), Type.Null()], { description: 'as displayed (after the EXIF orientation); null for SVG' }),
  remark: Type.String(),
  locked: Type.Boolean({ description: 'set by the operator (svc lock image); a locked image cannot be deleted' }),
  created_at: Type.String({ description: 'Beijing time, YYYY-MM-DD HH:MM:SS' }),
  updated_at: Type.String({ description: 'Beijing time, YYYY-MM-DD HH:MM:SS' }),
  quarantined: Type.Optional(
    Type.Literal(true, { description: 'in listings: present when the image is held for review (abuse handling); its link answers 451 until an admin acts' }),
  ),
})

export const StatusReply = Type.Object({
  success: Type.Boolean(),
  entitled: Type.Boolean(),
  quota: Type.Object({
    max_images: Type.Integer(),
    used_images: Type.Integer(),
    max_total_bytes: Type.Integer(),
    used_bytes: Type.Integer(),
    max_image_bytes: Type.Integer(),
  }),
})

export const ImagesReply = Type.Object({ success: Type.Boolean(), images: Type.Array(Image) })
export const ListReply = Type.Object({ success: Type.Boolean(), images: Type.Array(Image), total: Type.Integer() })
export const ImageReply = Type.Object({ success: Type.Boolean(), image: Image })
export const DeleteReply = Type.Object({ success: Type.Boolean() })

export const TokenParams = Type.Object({ public_token: Type.String() })

export const ListQuery = Type.Object({
  page: repeatable('page number, from 1'),
  per_page: repeatable('1 to 100, default 50'),
})

export const UploadQuery = Type.Object({
  keep_metadata: Type.Optional(Type.String({ description: 'true keeps EXIF/GPS/XMP as uploaded (default: removed)' })),
  remark: Type.Optional(Type.String({ description: 'remark for every uploaded file (also accepted as a form field)' })),
})

export const PatchBody = Type.Object({
  remark: Type.Optional(Type.String({ maxLength: 500 })),
  file_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
})

/**
 * A public link's query parameter: a name given twice arrives as an array, whose last value
 * counts. The schema documents the names and never refuses: the route checks the values
 * itself, so every answer of the link, errors included, is inert and `{success, message}`.
 */
const linkParam = (description: string) => Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description }))

export const PublicQuery = Type.Object({
  w: linkParam('variant width, 1 to 4096 (never enlarged)'),
  h: linkParam('variant height, 1 to 4096 (never enlarged)'),
  format: linkParam('variant format: webp, avif, png or jpeg'),
  v: linkParam('content version from versioned_url: served as immutable when current'),
})

export const ERROR_DOC =
  "Errors: {success:false, message}. 401 not logged in; 403 API key (session only) or no image-host entitlement; 404 missing or another user's image; 400 bad type or parameter; 413 over the per-image size; 400 over the count or total-size quota; 423 locked."
