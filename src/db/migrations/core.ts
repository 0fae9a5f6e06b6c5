import type { Kysely, Migration } from 'kysely'
import { usageMigrations } from '../usage.js'

/** Core tables: accounts, API keys, sessions, entitlements, redeem codes. */
export const coreMigrations: Record<string, Migration> = {
  '0001-core': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('username', 'text', (c) => c.notNull().unique())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('tier', 'text', (c) => c.notNull().defaultTo('authenticated'))
        .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('api_access', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('is_admin', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('limits', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('hint', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('expires_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_used_at', 'bigint')
        .execute()
      await db.schema.createIndex('api_keys_user').on('api_keys').column('user_id').execute()
      await db.schema
        .createTable('sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('csrf_token', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute()
      await db.schema
        .createTable('entitlements')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('feature', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('entitlements_pk', ['user_id', 'feature'])
        .execute()
      await db.schema
        .createTable('redeem_codes')
        .addColumn('code_hash', 'text', (c) => c.primaryKey())
        .addColumn('feature', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('redeemed_by', 'text')
        .addColumn('redeemed_at', 'bigint')
        .execute()
    },
    async down(db: Kysely<any>) {
      for (const t of ['redeem_codes', 'entitlements', 'sessions', 'api_keys', 'users']) await db.schema.dropTable(t).execute()
    },
  },
  // the usage counters every quota reads (db/usage.ts)
  ...usageMigrations,
  // the names of deleted accounts: held from new accounts (users.create), since holds, abuse
  // records and visitors' storage on the user's origin are still keyed by the name
  '0802-retired-usernames': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('retired_usernames')
        .addColumn('username', 'text', (c) => c.primaryKey())
        .addColumn('deleted_at', 'bigint', (c) => c.notNull())
        .addColumn('deleted_by', 'text', (c) => c.notNull())
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('retired_usernames').execute()
    },
  },
  // long writes' leases on the blob sweeper (storage/leases.ts): a handful of rows at a time
  '0807-blob-leases': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('blob_leases')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('renewed_at', 'bigint', (c) => c.notNull())
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('blob_leases').execute()
    },
  },
  // how long a sweep honours a lease from its start, renewed or not: a visitor's form post
  // gets an hour (storage/leases.ts ANONYMOUS_LEASE_MAX_MS); the default, a day, is what a
  // release before this one meant by every lease, and is what its inserts still get
  '0808-blob-lease-max-age': {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('blob_leases')
        .addColumn('max_ms', 'bigint', (c) => c.notNull().defaultTo(24 * 3600_000))
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('blob_leases').dropColumn('max_ms').execute()
    },
  },
}
