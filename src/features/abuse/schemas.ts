import { Type } from '@sinclair/typebox'
import { BYTES_BODY, mediaAnswer, Nullable } from '../../http/answer-schemas.js'
import { CATEGORIES, REPORT_STATUSES } from './vocabulary.js'

const Category = Type.Union(
  CATEGORIES.map((c) => Type.Literal(c)),
  { description: CATEGORIES.join(', ') },
)
const Status = Type.Union(
  REPORT_STATUSES.map((s) => Type.Literal(s)),
  { description: REPORT_STATUSES.join(', ') },
)

export const ReportBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2000, description: 'The address of the content (a page, image or data link of this service)' }),
  category: Category,
  details: Type.Optional(Type.String({ maxLength: 5000 })),
  contact: Type.Optional(Type.String({ maxLength: 300, description: 'Optional: how to reach the reporter' })),
})

export const ReportsQuery = Type.Object({
  status: Type.Optional(Status),
  // bounded as every list's page is (http/pagination.ts): a larger one made an OFFSET past
  // 2^63, a float the database refuses (500)
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 999_999_999, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
})

export const ReportParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) })
export const EvidenceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }), digest: Type.String({ pattern: '^[0-9a-f]{64}$' }) })
export const TakedownBody = Type.Object({ disable_account: Type.Optional(Type.Boolean({ description: "Also disable the owner's account" })) })

/** Answers of the abuse routes (documented in /openapi.json; every field the routes write). */
const MS = 'milliseconds since 1970-01-01 UTC'

export const ReportedReply = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  data: Type.Object({ id: Type.String({ description: "the report's id" }) }),
})

const reportFields = {
  id: Type.String(),
  url: Type.String(),
  category: Category,
  details: Type.String({ description: "the reporter's text; a heuristic report's reasons" }),
  contact: Type.String(),
  source: Type.String({ description: 'public (the report form or API), admin (a case an admin opened) or heuristic (flagged at upload)' }),
  reporter_ip: Type.String({ description: 'empty for a heuristic report' }),
  status: Status,
  target: Nullable(Type.String(), {
    description: 'the content it is about: site:{user}/{name}, image:{token} or data:{token}; null while the URL names none',
  }),
  target_user_id: Nullable(Type.String(), { description: "the content's owner; null while unknown" }),
  created_at: Type.Integer({ description: MS }),
  updated_at: Type.Integer({ description: MS }),
  resolved_by: Nullable(Type.String(), { description: 'the admin who last acted on it (or opened it)' }),
}

const ReportDetail = Type.Object({
  ...reportFields,
  evidence: Type.Array(
    Type.Object({
      report_id: Type.String(),
      path: Type.String({ description: "what the bytes were: a page's name, a project's name/path, an image's file name, a data version's v{N}" }),
      digest: Type.String({ description: 'SHA-256 of the bytes (hex): the evidence download names it' }),
      size: Type.Integer({ description: 'bytes' }),
      content_type: Type.String(),
      created_at: Type.Integer({ description: MS }),
    }),
    { description: 'The bytes kept while the content is quarantined or taken down, by path' },
  ),
})

export const ReportReply = Type.Object({ success: Type.Boolean(), data: ReportDetail })

export const ReportsReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    total: Type.Integer({ description: 'reports of this status' }),
    page: Type.Integer(),
    per_page: Type.Integer(),
    reports: Type.Array(
      Type.Object({
        ...reportFields,
        owner: Nullable(Type.String(), { description: "the content's owner's username; null when none is known" }),
        hold: Nullable(Type.String({ description: 'quarantined | removed' }), { description: "the hold on the report's content now; null: none" }),
      }),
    ),
  }),
})

export const EvidenceAnswer = mediaAnswer('The bytes kept, as an inert download (Content-Disposition: attachment)', { 'application/octet-stream': BYTES_BODY })

export const BlocklistReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    digests: Type.Array(
      Type.Object({
        digest: Type.String({ description: 'SHA-256 (hex) refused at upload' }),
        report_id: Type.String({ description: 'the takedown that blocked it' }),
        created_at: Type.Integer({ description: MS }),
        created_by: Type.String(),
      }),
      { description: 'Newest first, at most 1000' },
    ),
  }),
})
