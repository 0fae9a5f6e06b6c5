import { Type } from '@sinclair/typebox'
import { TIERS } from '../../auth/account-rules.js'

/** Answers of the account routes (documented in /openapi.json; every field the routes write). */
const MS = 'milliseconds since 1970-01-01 UTC'

export const Done = Type.Object({ success: Type.Boolean(), message: Type.String() })

export const TierSchema = Type.Union(
  TIERS.map((t) => Type.Literal(t)),
  { description: 'rate-limit tier' },
)

export const MeReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    username: Type.String(),
    tier: TierSchema,
    via: Type.Union([Type.Literal('key'), Type.Literal('session')], { description: 'how the caller signed in' }),
    is_admin: Type.Boolean(),
    read_only: Type.Boolean({ description: 'a read-only API key: GET routes only (1440 on writes)' }),
  }),
})

const keyFields = {
  id: Type.String(),
  name: Type.String(),
  hint: Type.String({ description: "the key's last 4 characters" }),
  enabled: Type.Boolean(),
  read_only: Type.Boolean(),
  expires_at: Type.Union([Type.Integer(), Type.Null()], { description: `${MS}; null: never expires` }),
  created_at: Type.Integer({ description: MS }),
  last_used_at: Type.Union([Type.Integer(), Type.Null()], { description: `${MS}; null: never used` }),
}

/** An API key as a list shows it: never the key itself or its hash. */
export const KeyInfo = Type.Object(keyFields)

export const KeyListReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({ keys: Type.Array(KeyInfo), limit: Type.Integer({ description: 'keys an account may hold' }) }),
})

export const KeyCreatedReply = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  data: Type.Object({ key: Type.String({ description: 'the key itself (svc_ + 60 characters), shown this once' }), ...keyFields }),
})

export const RedeemReply = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  feature: Type.String({ description: 'the entitlement turned on: image-host or hosted-data' }),
})
