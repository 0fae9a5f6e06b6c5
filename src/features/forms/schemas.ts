import { Type } from '@sinclair/typebox'
import { mediaAnswer, Nullable, TEXT_BODY } from '../../http/answer-schemas.js'
import { repeatable } from '../../http/pagination.js'
import { FIELD_TYPES } from './fields.js'

/*
 * TypeBox schemas of the forms part. Request schemas document the API in /openapi.json; the
 * rules themselves (with their own codes and messages naming the field) live in the service,
 * so the routes compile these request schemas with a pass-through validator. Response
 * schemas are the allow-list of output fields.
 */

export const FieldDefSchema = Type.Object({
  name: Type.String({ description: '1-64 letters (any script), digits, "_", "." or "-"; starts with a letter or digit' }),
  label: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  type: Type.Optional(
    Type.Union(
      FIELD_TYPES.map((t) => Type.Literal(t)),
      { default: 'text' },
    ),
  ),
  required: Type.Optional(Type.Boolean({ default: false })),
  options: Type.Optional(Type.Array(Type.String(), { description: 'required for select; for checkbox, a multiple choice' })),
})

const formInputProps = {
  form_name: Type.String({ minLength: 1, maxLength: 100 }),
  form_slug: Type.String({ pattern: '^[A-Za-z0-9_-]{3,64}$', description: 'unique across the service; generated when omitted' }),
  fields_config: Type.Array(FieldDefSchema, { maxItems: 50, description: 'empty = accept any field names' }),
  allowed_origins: Type.Array(Type.String(), { maxItems: 20, description: '"null" or http(s) origins; empty = any origin' }),
  redirect_url: Nullable(Type.String({ description: 'http(s) URL a browser form post is sent to (303) after submitting' })),
  is_active: Type.Boolean({ default: true }),
  honeypot_field: Nullable(Type.String({ default: '_gotcha', description: 'a filled-in honeypot flags the submission as spam; null disables' })),
  min_fill_seconds: Type.Integer({ minimum: 0, maximum: 3600, default: 0, description: 'submissions whose _ts is younger are flagged as spam; 0 disables' }),
}

export const CreateBody = Type.Object({
  ...formInputProps,
  form_slug: Type.Optional(formInputProps.form_slug),
  fields_config: Type.Optional(formInputProps.fields_config),
  allowed_origins: Type.Optional(formInputProps.allowed_origins),
  redirect_url: Type.Optional(formInputProps.redirect_url),
  is_active: Type.Optional(formInputProps.is_active),
  honeypot_field: Type.Optional(formInputProps.honeypot_field),
  min_fill_seconds: Type.Optional(formInputProps.min_fill_seconds),
})

export const UpdateBody = Type.Partial(Type.Object(formInputProps))

export const MarkReadBody = Type.Object({
  is_read: Type.Optional(Type.Boolean({ default: true })),
  is_spam: Type.Optional(Type.Boolean({ description: 'beyond the spec: flag or unflag as spam' })),
})

export const FormIdParams = Type.Object({ form_id: Type.String() })
export const SlugParams = Type.Object({ form_slug: Type.String() })
export const SubmissionIdParams = Type.Object({ submission_id: Type.String() })
export const FileIdParams = Type.Object({ file_id: Type.String() })

const BoolQuery = Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')])
export const DataQuery = Type.Object({
  page: repeatable('default 1'),
  per_page: repeatable('1-100, default 20'),
  is_read: Type.Optional(BoolQuery),
  is_spam: Type.Optional(BoolQuery),
})
export const ExportQuery = Type.Object({
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')])),
  is_read: Type.Optional(BoolQuery),
  is_spam: Type.Optional(BoolQuery),
})

export const FormSchema = Type.Object({
  id: Type.String(),
  form_name: Type.String(),
  form_slug: Type.String(),
  fields_config: Type.Array(FieldDefSchema),
  allowed_origins: Type.Array(Type.String()),
  redirect_url: Nullable(Type.String()),
  is_active: Type.Boolean(),
  honeypot_field: Nullable(Type.String()),
  min_fill_seconds: Type.Integer(),
  submit_url: Type.String(),
  created_at: Type.String({ description: 'Beijing time YYYY-MM-DD HH:MM:SS' }),
  updated_at: Type.String(),
})

const FormEnvelope = Type.Object({ success: Type.Boolean(), message: Type.String(), data: FormSchema })

export const FormListItem = Type.Composite([
  FormSchema,
  Type.Object({
    submission_count: Type.Integer(),
    unread_count: Type.Integer(),
    spam_count: Type.Integer(),
    last_submission_at: Nullable(Type.String()),
  }),
])

const Used = Type.Object({ used: Type.Integer(), limit: Type.Integer() })
export const ListResponse = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    forms: Type.Array(FormListItem),
    quota: Type.Object({
      forms: Used,
      submissions_month: Type.Composite([Used, Type.Object({ month: Type.String({ description: 'YYYY-MM, calendar month in Beijing time' }) })]),
      export_rows: Type.Object({ limit: Type.Integer() }),
      file_bytes: Type.Composite([Used], { description: "bytes of the files the account's submissions keep (form_file_bytes)" }),
    }),
  }),
})

export const SubmissionSchema = Type.Object({
  id: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown()),
  is_read: Type.Boolean(),
  is_spam: Type.Boolean(),
  spam_reason: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  ip_prefix: Nullable(Type.String({ description: 'client network: IPv4 /24 or IPv6 /48' })),
  created_at: Type.String(),
  files: Type.Array(
    Type.Object({
      id: Type.String(),
      field: Type.String({ description: 'the field it was sent in' }),
      filename: Type.String({ description: 'the name the browser sent, cleaned for display' }),
      content_type: Type.String({ description: 'read from the bytes, not the type the sender named' }),
      size: Type.Integer(),
      url: Type.String({ description: "the owner's download URL (GET, authenticated)" }),
    }),
    { description: 'files sent with the submission (multipart parts with a file name); spam keeps none' },
  ),
})

export const DataResponse = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    form_id: Type.String(),
    page: Type.Integer(),
    per_page: Type.Integer(),
    total: Type.Integer(),
    total_pages: Type.Integer(),
    submissions: Type.Array(SubmissionSchema),
  }),
})

export const ExportResponse = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    form: FormSchema,
    submissions: Type.Array(SubmissionSchema),
    exported_count: Type.Integer({ description: 'submissions in this export' }),
    total_count: Type.Integer({ description: 'submissions that match the filters' }),
    truncated: Type.Boolean({ description: 'true when total_count is past export_limit' }),
    export_limit: Type.Integer({ description: "the account's form_export_rows quota" }),
  }),
})

/** The export: streamed, so never serialized by this schema (it documents what export.ts writes). */
export const ExportAnswer = mediaAnswer(
  'The submissions, newest first, at most export_limit of them (X-Total-Count: all that match; X-Exported-Count: those sent): JSON, or with ?format=csv a CSV download (UTF-8 with a byte-order mark)',
  { 'application/json': ExportResponse, 'text/csv': TEXT_BODY },
)

export const SubmitResponse = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  data: Type.Object({ submission_id: Type.String() }),
})

export const MarkReadResponse = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  data: Type.Object({ id: Type.String(), form_id: Type.String(), is_read: Type.Boolean(), is_spam: Type.Boolean() }),
})

export const Ok = Type.Object({ success: Type.Boolean(), message: Type.String() })

export const DeleteSubmissionResponse = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  data: Type.Object({ id: Type.String(), form_id: Type.String() }),
})

export const responses = { FormEnvelope }
