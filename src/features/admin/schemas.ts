import { Type } from '@sinclair/typebox'
import { mediaAnswer, Nullable, TEXT_BODY } from '../../http/answer-schemas.js'
import { QUOTA_MAX, QUOTA_NAMES } from '../../limits/quotas.js'
import { KeyInfo, TierSchema } from '../accounts/schemas.js'

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
      Type.Record(Type.String(), Type.Union([Type.Integer({ minimum: 0, maximum: QUOTA_MAX }), Type.Null()]), {
        description: `Per-account quota overrides, 0 to ${QUOTA_MAX} (null: back to the default). Names: ${QUOTA_NAMES.join(', ')}`,
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

/** Answers of the admin routes (documented in /openapi.json; every field the routes write). */
const MS = 'milliseconds since 1970-01-01 UTC'
const Limits = Type.Record(Type.String(), Type.Integer({ minimum: 0 }), {
  description: `Per-account quota overrides, by name (${QUOTA_NAMES.join(', ')}); a name not set takes the default`,
})
const userFields = {
  username: Type.String(),
  tier: TierSchema,
  disabled: Type.Boolean(),
  api_access: Type.Boolean(),
  limits: Limits,
}

export const UsersReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    total: Type.Integer({ description: 'accounts that match the search' }),
    page: Type.Integer(),
    per_page: Type.Integer(),
    users: Type.Array(
      Type.Object({
        ...userFields,
        pending: Type.Boolean({ description: 'signed up in registration mode "pending" and not approved yet (disabled until then)' }),
        is_admin: Type.Boolean(),
        created_at: Type.Integer({ description: MS }),
        quotas: Type.Record(Type.String(), Type.Integer(), { description: 'Every quota in effect, by name: the override or the default' }),
        usage: Type.Object(
          {
            files: Type.Integer({ description: 'single-file pages' }),
            file_bytes: Type.Integer(),
            folders: Type.Integer({ description: 'folder projects' }),
            folder_bytes: Type.Integer(),
            kv_keys: Type.Integer(),
            images: Type.Integer(),
            image_bytes: Type.Integer(),
            hosted_files: Type.Integer({ description: 'hosted data files' }),
          },
          { description: 'What the account holds' },
        ),
      }),
    ),
  }),
})

export const UserReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object(
    {
      ...userFields,
      over: Type.Array(Type.Object({ quota: Type.String(), used: Type.Integer(), limit: Type.Integer() }), {
        description:
          'The quotas this change set that the account already holds more than (files, kv_keys, images, image_bytes, hosted_files): nothing is removed, new items are refused',
      }),
    },
    { description: 'The account as changed' },
  ),
})

/** What a deleted account held (the accounts list's usage fields), and its name. */
export const DeletedAccount = Type.Object(
  {
    username: Type.String(),
    usage: Type.Record(Type.String(), Type.Integer(), {
      description: 'What the account held when it was deleted: files, file_bytes, folders, folder_bytes, kv_keys, images, image_bytes, hosted_files',
    }),
  },
  { description: 'The account deleted; its name stays held from new accounts' },
)

export const UserDeletedReply = Type.Object({ success: Type.Boolean(), data: DeletedAccount })

export const UserKeysReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({ username: Type.String(), keys: Type.Array(KeyInfo) }),
})

export const KeyRevokedReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({ id: Type.String(), name: Type.String() }, { description: 'The key deleted' }),
})

export const InviteReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({ code: Type.String({ description: 'INV- and 20 characters; shown this once (only its hash is kept)' }) }),
})

export const ContentReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    items: Type.Array(
      Type.Object({
        kind: Type.Union([Type.Literal('file'), Type.Literal('folder'), Type.Literal('image'), Type.Literal('data')], {
          description: 'file: a single-file page; folder: a file of a folder project; image; data: a hosted data version',
        }),
        username: Type.String({ description: 'the owner' }),
        name: Type.String({ description: "a page's or project's name; an image's or data file's public token" }),
        path: Type.String({ description: "the file's path in its project, the image's file name, the data file's display name; empty for a page" }),
        digest: Type.String({ description: 'SHA-256 of the bytes (hex)' }),
        size: Type.Integer({ description: 'bytes' }),
        content_type: Type.String(),
        updated_at: Type.Integer({ description: MS }),
        hold: Nullable(Type.String({ description: 'quarantined | removed' }), { description: 'the hold on its page name or link; null: none' }),
        blocked: Type.Boolean({ description: 'its digest is on the upload blocklist (taken down elsewhere)' }),
      }),
      { description: 'Newest first, at most `limit`' },
    ),
  }),
})

export const SettingsReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    settings: Type.Array(Type.Object({ name: Type.String(), value: Type.String(), description: Type.String() })),
  }),
})

export const SettingsSetReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    settings: Type.Record(Type.String(), Type.String(), { description: "Every setting's value after the change, by name" }),
  }),
})

const AuditEntry = Type.Object({
  id: Type.String({ description: 'sorts by time; the `before` of the next page' }),
  at: Type.String({ description: 'ISO 8601, UTC' }),
  actor: Type.String({ description: 'the admin, or cli:<os user> for operator commands' }),
  via: Type.String({ description: 'web | cli' }),
  action: Type.String(),
  target: Type.String(),
  details: Type.Object({}, { additionalProperties: true, description: "The action's parameters: their names depend on the action (never a password)" }),
  ip: Type.String(),
  user_agent: Type.String(),
})

export const AuditAnswer = mediaAnswer('The audit log, newest first: a page of it, or with ?format=json|csv a download of every entry', {
  'application/json': Type.Union([
    Type.Object({
      success: Type.Boolean(),
      data: Type.Object({
        entries: Type.Array(AuditEntry),
        next: Nullable(Type.String(), { description: 'the `before` of the next page; null: this is the last' }),
      }),
    }),
    Type.Array(AuditEntry, { description: '?format=json: every entry (at most 100,000), as a download' }),
  ]),
  'text/csv': TEXT_BODY,
})

const ISO = 'ISO 8601, UTC'
export const HealthReply = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('unavailable')], {
      description: 'as /readyz: degraded when a check that is only reported fails, unavailable when a required one does',
    }),
    checks: Type.Array(
      Type.Object({
        name: Type.String(),
        result: Type.String({ description: 'ok, timeout or "error: <message>" (the full message)' }),
        required: Type.Boolean(),
      }),
    ),
    checked_at: Type.String({ description: ISO }),
    version: Type.String({ description: "the service's version" }),
    api_version: Type.String(),
    node: Type.String({ description: 'the Node.js version' }),
    pid: Type.Integer(),
    started_at: Type.String({ description: ISO }),
    uptime_seconds: Type.Integer(),
    database: Type.Object({
      engine: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]),
      pending_commits: Nullable(Type.Integer(), { description: "writes waiting for SQLite's group commit; null on PostgreSQL" }),
    }),
    storage: Type.Object({ kind: Type.String({ description: 'the blob store: local or s3' }) }),
    memory: Type.Object({ rss_bytes: Type.Integer(), heap_used_bytes: Type.Integer(), heap_total_bytes: Type.Integer() }),
    disks: Type.Array(
      Type.Object({
        what: Type.Union([Type.Literal('data_dir'), Type.Literal('blobs')], {
          description: "data_dir: DATA_DIR; blobs: a local blob store's folder outside it",
        }),
        path: Type.String(),
        free_bytes: Nullable(Type.Integer(), { description: 'what this process may still write; null when the folder cannot be read' }),
        total_bytes: Nullable(Type.Integer()),
        error: Nullable(Type.String(), { description: 'why the figures are missing' }),
      }),
    ),
    backups: Type.Object({
      scheduled: Type.Boolean(),
      destination: Nullable(Type.String(), { description: 'BACKUP_DIR, credentials redacted; null: none' }),
      every_seconds: Type.Integer(),
      keep: Type.Integer(),
      last_at: Nullable(Type.String(), { description: `${ISO}: the newest snapshot of a backup folder (a bucket is not listed); null: none` }),
    }),
  }),
})
