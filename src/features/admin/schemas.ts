import { Type } from '@sinclair/typebox'
import { QUOTA_NAMES } from '../../limits/quotas.js'

export const TAGS = ['admin']

export const UsersQuery = Type.Object({
  search: Type.Optional(Type.String({ maxLength: 64, description: 'A part of the username' })),
  // bounded as every list's page is (http/pagination.ts): a larger one made an OFFSET past
  // 2^63, a float the database refuses (500)
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 999_999_999, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
})

export const UsernameParams = Type.Object({ username: Type.String({ minLength: 1, maxLength: 64 }) })

export const KeyParams = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 64 }),
  id: Type.String({ minLength: 1, maxLength: 64, description: "The key's id, from the account's key list" }),
})

export const UserPatch = Type.Object(
  {
    tier: Type.Optional(Type.Union([Type.Literal('authenticated'), Type.Literal('vip'), Type.Literal('default')], { description: 'vip: the VIP tier' })),
    disabled: Type.Optional(Type.Boolean({ description: 'true disables the account (its sessions end); false enables it (and approves a pending one)' })),
    api_access: Type.Optional(Type.Boolean()),
    limits: Type.Optional(
      Type.Record(Type.String(), Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]), {
        description: `Per-account quota overrides (null: back to the default). Names: ${QUOTA_NAMES.join(', ')}`,
      }),
    ),
  },
  { additionalProperties: false },
)

export const ContentQuery = Type.Object({
  user: Type.Optional(Type.String({ maxLength: 64, description: "The owner's username" })),
  url: Type.Optional(Type.String({ maxLength: 2000, description: 'A page, image or data URL of this service' })),
  name: Type.Optional(Type.String({ maxLength: 200, description: 'A part of a file, project, image or data name' })),
  hash: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'SHA-256 of the bytes (hex)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
})

export const SettingsBody = Type.Record(Type.String(), Type.String({ maxLength: 5000 }), { description: 'Settings to change, by name' })

export const AuditQuery = Type.Object({
  format: Type.Optional(
    Type.Union([Type.Literal('json'), Type.Literal('csv')], { description: 'Set: a download of every entry (newest first, at most 100,000)' }),
  ),
  before: Type.Optional(Type.String({ maxLength: 100, description: 'The id of the last entry of the previous page' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  action: Type.Optional(Type.String({ maxLength: 64 })),
  actor: Type.Optional(Type.String({ maxLength: 200 })),
})
