import type { Generated } from 'kysely'

/**
 * Database types for Kysely. Core tables are declared here; each feature adds its own tables
 * by module augmentation of `Database` next to its store (features/<part>/store.ts), so the
 * schema of a part lives with the part.
 *
 * Portable column conventions (identical on SQLite and PostgreSQL):
 * ids are text, times are bigint epoch milliseconds, flags are integer 0/1, JSON is text.
 */
export interface Database {
  users: UsersTable
  api_keys: ApiKeysTable
  sessions: SessionsTable
  entitlements: EntitlementsTable
  redeem_codes: RedeemCodesTable
  usage: UsageTable
  retired_usernames: RetiredUsernamesTable
  blob_leases: BlobLeasesTable
}

/**
 * A long write's hold on the blob sweeper (storage/leases.ts, migration 0807): blobs written
 * after `started_at` are spared while `renewed_at` is recent, for `max_ms` from the start at
 * most (migration 0808; a day for rows an older release writes without it).
 */
export interface BlobLeasesTable {
  id: string
  started_at: number
  renewed_at: number
  max_ms: Generated<number>
}

/** The name of a deleted account, held from new accounts (migration 0801). */
export interface RetiredUsernamesTable {
  username: string
  deleted_at: number
  /** who deleted it: the account itself, an admin's username, or `cli:<os user>` */
  deleted_by: string
}

/** Usage counters read by quotas (db/usage.ts). */
export interface UsageTable {
  user_id: string
  /** What is counted: a UsageKind (db/usage.ts). */
  kind: string
  n: number
}

export interface UsersTable {
  id: string
  username: string
  password_hash: string
  tier: string
  disabled: number
  api_access: number
  is_admin: number
  limits: string
  created_at: number
  updated_at: number
}

export interface ApiKeysTable {
  id: string
  user_id: string
  name: string
  key_hash: string
  hint: string
  enabled: number
  expires_at: number | null
  created_at: number
  last_used_at: number | null
  /** 1: GET/HEAD routes and read-only MCP tools only (migration 0730). */
  read_only: number
}

export interface SessionsTable {
  id_hash: string
  user_id: string
  csrf_token: string
  created_at: number
  expires_at: number
  last_seen_at: number
}

export interface EntitlementsTable {
  user_id: string
  feature: string
  source: string
  created_at: number
}

export interface RedeemCodesTable {
  code_hash: string
  feature: string
  created_at: number
  redeemed_by: string | null
  redeemed_at: number | null
}
