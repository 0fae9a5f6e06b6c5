import { Type } from '@sinclair/typebox'
import { CATEGORIES, REPORT_STATUSES } from './vocabulary.js'

export const ReportBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2000, description: 'The address of the content (a page, image or data link of this service)' }),
  category: Type.Union(
    CATEGORIES.map((c) => Type.Literal(c)),
    { description: CATEGORIES.join(', ') },
  ),
  details: Type.Optional(Type.String({ maxLength: 5000 })),
  contact: Type.Optional(Type.String({ maxLength: 300, description: 'Optional: how to reach the reporter' })),
})

export const ReportsQuery = Type.Object({
  status: Type.Optional(Type.Union(REPORT_STATUSES.map((s) => Type.Literal(s)))),
  // bounded as every list's page is (http/pagination.ts): a larger one made an OFFSET past
  // 2^63, a float the database refuses (500)
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 999_999_999, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
})

export const ReportParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) })
export const EvidenceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }), digest: Type.String({ pattern: '^[0-9a-f]{64}$' }) })
export const TakedownBody = Type.Object({ disable_account: Type.Optional(Type.Boolean({ description: "Also disable the owner's account" })) })
