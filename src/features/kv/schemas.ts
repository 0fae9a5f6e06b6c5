import { Type, type Static } from '@sinclair/typebox'
import { notModified, preconditionFailed } from '../../http/conditional-schemas.js'
import { repeatable } from '../../http/pagination.js'

/** Limits of the key-value store that are not per-user quotas (documented in docs/api/kv.md). */
export const KV_LIMITS = {
  keyMaxChars: 100,
  /** Keys read, deleted or renamed from may be legacy keys; longer strings cannot exist. */
  lookupKeyMaxChars: 1024,
  tagsMax: 20,
  tagMaxChars: 32,
  /** Nesting depth of arrays and objects in a value (a scalar has depth 0). */
  maxDepth: 64,
  /** Largest ttl: ten years. */
  ttlMaxSeconds: 10 * 365 * 86400,
  /** Body limit of store and incr; bodies above it answer 1602 (see routes.ts). */
  bodyLimit: 4 * 1024 * 1024,
} as const

/** The rule of a written key (KEY_RE in validate.ts and keyMaxChars), as API and tool descriptions state it. */
export const KEY_RULE = `Starts with an ASCII letter; only a-zA-Z0-9_-; at most ${KV_LIMITS.keyMaxChars} characters`

export const DATA_TYPES = ['json', 'text', 'number'] as const
export type DataType = (typeof DATA_TYPES)[number]

/*
 * Store and incr bodies: validated as written, without coercion (kv/routes.ts uses the strict
 * validator), 400 / 1106 on a failure. These schemas hold the shape rules only (types,
 * presence, enums, ranges); rules with their own codes (key length 1601 and format 1606, entry
 * size 1602) and those JSON Schema cannot state (U+0000, unpaired surrogates, control
 * characters in tags, value against data_type) are the service's (validate.ts), which also
 * re-checks the shape.
 */
const Key = Type.String({ description: `${KEY_RULE} (1601 length, 1606 format)` })
const Ttl = Type.Unsafe<number | null>({
  type: ['integer', 'null'],
  minimum: 1,
  maximum: KV_LIMITS.ttlMaxSeconds,
  description: 'Seconds until the entry expires (beyond the spec). Omitted: the expiry stays as it was (none for a new entry); null: never expires.',
})

const PublicIncr = Type.Boolean({
  description:
    'Beyond the spec: a public counter: anyone may add 1 or -1 to this number entry without a key (POST /svc_api/data/public/{username}/{key}/incr), and reads the new value in the answer. Default false; an update keeps it when omitted.',
})

export const StoreBody = Type.Object(
  {
    key: Key,
    value: Type.Unknown({
      description:
        'Any JSON value for data_type json, a string for text, a finite number for number. At most 64 levels of nesting; no U+0000 and no unpaired surrogate in any string.',
    }),
    data_type: Type.Optional(
      Type.Union(
        DATA_TYPES.map((t) => Type.Literal(t)),
        { description: 'json (default), text or number' },
      ),
    ),
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: KV_LIMITS.tagMaxChars }), {
        maxItems: KV_LIMITS.tagsMax,
        description: 'At most 20 tags of 1-32 characters, no control characters; default []',
      }),
    ),
    is_public: Type.Optional(Type.Boolean({ description: 'Allows public read; default false' })),
    old_key: Type.Optional(Type.String({ description: 'Renames this legacy key (one that breaks the key format) to `key`; 1603 when `key` is taken' })),
    version: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: "Compare-and-swap (beyond the spec): write only if the entry's version is this one (0 = only if absent); else 409 / 1409",
      }),
    ),
    if_updated_at: Type.Optional(
      Type.String({ description: 'Compare-and-swap (beyond the spec): write only if updated_at is still this value, as returned; else 409 / 1409' }),
    ),
    ttl: Type.Optional(Ttl),
    public_incr: Type.Optional(PublicIncr),
  },
  { additionalProperties: true },
)
export type StoreInput = Static<typeof StoreBody>

export const IncrBody = Type.Object({
  key: Key,
  by: Type.Optional(Type.Number({ description: 'Amount to add (finite; may be negative or fractional); default 1' })),
  ttl: Type.Optional(Ttl),
  public_incr: Type.Optional(PublicIncr),
})
export type IncrInput = Static<typeof IncrBody>

/** The conditions of a write (beyond the spec), documented in the OpenAPI document; parsed by validate.ts. */
export const ConditionHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({ description: 'Write only if the entry exists (*) or its version is one of the quoted tags ("3", the ETag of get/store); else 409 / 1409' }),
  ),
  'if-none-match': Type.Optional(
    Type.String({ description: '* = write only if the entry does not exist; a list of tags = only if its version is none of them' }),
  ),
})
export const KeyQuery = Type.Object({ key: Type.Optional(Type.String({ description: "The entry's key" })) })
export const ListQuery = Type.Object({
  page: repeatable('default 1'),
  per_page: repeatable('1 to 100, default 50'),
  prefix: Type.Optional(
    Type.String({
      description:
        'Beyond the spec: only keys that start with this string (exact and case-sensitive, byte by byte; `%` and `_` are plain characters). page, per_page, total and total_pages count the matching keys; usage stays the whole store. Empty: every key.',
    }),
  ),
  after: Type.Optional(
    Type.String({
      description:
        "Beyond the spec: a cursor instead of page: the page holds the per_page keys that follow this one in byte order (it need not exist), so keys written or deleted between requests are neither skipped nor listed twice. Pass the previous answer's next_after. With page: 400 (1106). Empty: from the first key. The answer then adds next_after.",
    }),
  ),
})
export const PublicParams = Type.Object({ username: Type.String(), key: Type.String() })
export const PublicListParams = Type.Object({ username: Type.String({ description: "The owner's username (matched case-insensitively)" }) })
/** The public listing's query (decision 317): the authenticated list's names, paged by cursor only. */
export const PublicListQuery = Type.Object({
  per_page: repeatable('1 to 100, default 50 (as the authenticated list); bad values 400 / 1108'),
  prefix: Type.Optional(
    Type.String({ description: "Only keys that start with this string, byte by byte, as the authenticated list's prefix. Empty: every public key." }),
  ),
  after: Type.Optional(
    Type.String({
      description:
        "The cursor: the page holds the public keys that follow this one in byte order (it need not exist). Pass the previous answer's next_after. Empty or absent: from the first key.",
    }),
  ),
})
export const LegacyParams = Type.Object({ key: Type.String() })

export const Entry = Type.Object({
  key: Type.String(),
  value: Type.Unknown(),
  data_type: Type.String(),
  tags: Type.Array(Type.String()),
  is_public: Type.Boolean(),
  created_at: Type.String({ description: 'ISO 8601, Beijing time, microseconds and offset; kept on update' }),
  updated_at: Type.String({ description: 'ISO 8601, Beijing time; strictly increases at every write' }),
  version: Type.Integer({
    description:
      'Beyond the spec: +1 on every write; a new entry starts above every version a deleted entry of the user had (1 until one is deleted), so a key never repeats a version',
  }),
  expires_at: Type.Union([Type.String(), Type.Null()], { description: 'Beyond the spec: when a ttl makes the entry expire' }),
  size: Type.Integer({ description: "Beyond the spec: bytes of the value's JSON text, counted against kv_entry_bytes" }),
  public_incr: Type.Optional(
    Type.Literal(true, { description: 'Beyond the spec, only on a public counter (absent otherwise): anyone may add 1 or -1 to it without a key' }),
  ),
})
export type EntryOut = Static<typeof Entry>

export const EntryEnvelope = Type.Object({ success: Type.Boolean(), message: Type.String(), data: Entry })
const ETAG = 'The entry\'s version, quoted ("3"): the ETag of get, store and incr'
/** The 304 of a read whose If-None-Match names the entry's current ETag: no body. */
export const NotModified = notModified('Not Modified (beyond the spec): If-None-Match names the current ETag; no body', ETAG)
/** The 412 of a read whose If-Match names no current ETag: no body (routes.ts sendCondition). */
export const PreconditionFailed = preconditionFailed('Precondition Failed (beyond the spec): If-Match names another version; no body', ETAG)
const LIST_ETAG = "A digest of the page's answer, quoted: any write that changes the page changes it"
/** The public listing's 304 and 412 (decision 317). */
export const ListNotModified = notModified('Not Modified: If-None-Match names the current ETag of this page; no body', LIST_ETAG)
export const ListPreconditionFailed = preconditionFailed('Precondition Failed: If-Match names another ETag; no body', LIST_ETAG)
/** The legacy read's 412: it has no ETag, so any If-Match but `*` fails. */
export const LegacyPreconditionFailed = preconditionFailed('Precondition Failed (beyond the spec): If-Match other than *; no body')

/** The conditions of a read (beyond the spec), documented in the OpenAPI document; routes.ts readCondition decides. */
export const ReadConditionHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({ description: "Answer only if the entry's version is one of the quoted tags (strong comparison) or *; else 412 with no body" }),
  ),
  'if-none-match': Type.Optional(Type.String({ description: "Quoted tags or *: 304 with no body when one names the entry's version (weak comparison)" })),
})
/** The public listing's conditions: its ETag names a page's answer (routes.ts readCondition decides). */
export const ListConditionHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({ description: "Answer only if the page's ETag is one of the quoted tags (strong comparison) or *; else 412 with no body" }),
  ),
  'if-none-match': Type.Optional(Type.String({ description: "Quoted tags or *: 304 with no body when one names the page's current ETag (weak comparison)" })),
})
/** The legacy read's: it has no ETag, so only If-Match applies. */
export const LegacyConditionHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: '* passes; any tag answers 412 with no body (the answer has no ETag: the entry may change owner)' })),
})

/** A visitor's increment of a public counter: no field (an empty body) adds 1. */
export const PublicIncrBody = Type.Object(
  {
    delta: Type.Optional(
      Type.Union([Type.Literal(1), Type.Literal(-1)], { description: '1 (default: a like) or -1 (its undo); any other value or field is 400 / 1106' }),
    ),
  },
  { additionalProperties: false },
)

export const GetEnvelope = Type.Object({ success: Type.Boolean(), data: Entry })
/** The public read's fields of an entry (no tags, flags, version or expiry). */
const PublicEntry = Type.Object({ key: Type.String(), value: Type.Unknown(), owner: Type.String(), updated_at: Type.String(), data_type: Type.String() })
export const PublicEnvelope = Type.Object({ success: Type.Boolean(), data: PublicEntry })
export const PublicListEnvelope = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    items: Type.Array(PublicEntry, { description: "The owner's live public entries, by key in byte order, each as the public read answers it" }),
    per_page: Type.Integer(),
    next_after: Type.Union([Type.String(), Type.Null()], {
      description: 'The last key of this page when more public keys follow (pass it as after), else null',
    }),
  }),
})
export const ListEnvelope = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    items: Type.Array(Entry),
    page: Type.Integer(),
    per_page: Type.Integer(),
    total: Type.Integer(),
    total_pages: Type.Integer(),
    next_after: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description: 'Beyond the spec, only when after was given: the last key of this page when more keys follow (the next after), else null',
      }),
    ),
    quota: Type.Object({ max_keys: Type.Integer(), max_entry_bytes: Type.Integer() }),
    usage: Type.Object({ keys: Type.Integer(), bytes: Type.Integer() }),
  }),
})
export const DeleteEnvelope = Type.Object({ success: Type.Boolean(), message: Type.String() })
