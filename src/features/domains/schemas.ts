import { Type } from '@sinclair/typebox'

/*
 * TypeBox schemas of custom domains and visitor access. Request schemas document the API in
 * /openapi.json; the rules (with their own codes and messages) live in the service, so the
 * routes compile request schemas with a pass-through validator. Response schemas are the
 * allow-list of output fields.
 */

export const Domain = Type.Object({
  domain: Type.String({ description: 'lowercased; internationalised names in punycode' }),
  project: Type.String({ description: 'the folder project served on this host' }),
  verified: Type.Boolean(),
  verified_at: Type.Union([Type.String(), Type.Null()], { description: 'ISO 8601, UTC' }),
  created_at: Type.String({ description: 'ISO 8601, UTC' }),
  site_url: Type.Union([Type.String(), Type.Null()], { description: 'https://{domain}/ once verified' }),
  primary: Type.Boolean({
    description: "the project's primary domain: browsers opening the project's other URLs (its user's origin, its own origin, its other domains) are sent here",
  }),
  lost_at: Type.Union([Type.String(), Type.Null()], {
    description: 'ISO 8601, UTC: when another account proved control of the domain (its own TXT record) and took it; verify again to take it back',
  }),
  verification: Type.Object(
    { type: Type.Literal('TXT'), name: Type.String(), value: Type.String() },
    { description: 'the DNS record that proves control of the domain: create it, then verify' },
  ),
})

export const AddDomainBody = Type.Object({
  domain: Type.String({ description: 'a host name such as www.example.com (no scheme, port or path)' }),
  project: Type.String({ description: 'one of your folder projects' }),
})

export const DomainParams = Type.Object({ domain: Type.String() })
export const NameParams = Type.Object({ name: Type.String({ description: 'a folder project or single page name' }) })

export const DomainEnvelope = Type.Object({ success: Type.Boolean(), message: Type.String(), data: Domain })
export const DomainList = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({ domains: Type.Array(Domain), limit: Type.Integer({ description: 'domains one account may add (DOMAINS_PER_USER)' }) }),
})

export const Access = Type.Object({
  name: Type.String(),
  password: Type.Boolean({ description: 'whether visitors need a password' }),
  expires_at: Type.Union([Type.String(), Type.Null()], { description: 'ISO 8601, UTC: from then on the name answers 410' }),
  expired: Type.Boolean(),
  updated_at: Type.String(),
})

export const SetAccessBody = Type.Object({
  password: Type.Optional(
    Type.Union([Type.String({ minLength: 4, maxLength: 1024 }), Type.Null()], { description: 'sets the visitor password; null removes it; absent keeps it' }),
  ),
  expires_at: Type.Optional(
    Type.Union([Type.String({ format: 'date-time' }), Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'ISO 8601 with a zone, or epoch milliseconds; null removes it; absent keeps it',
    }),
  ),
})

export const AccessEnvelope = Type.Object({ success: Type.Boolean(), message: Type.String(), data: Access })
export const AccessList = Type.Object({ success: Type.Boolean(), data: Type.Object({ access: Type.Array(Access) }) })
export const Ok = Type.Object({ success: Type.Boolean(), message: Type.String() })
