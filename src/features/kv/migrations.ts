import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely'

/** The key-value store's table. */
export const kvMigrations: Record<string, Migration> = {
  '0200-kv-entries': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('kv_entries')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('data_type', 'text', (c) => c.notNull())
        .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('is_public', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('version', 'bigint', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addPrimaryKeyConstraint('kv_entries_pk', ['user_id', 'key'])
        .execute()
      // legacy public read by key across users
      await db.schema.createIndex('kv_entries_key').on('kv_entries').column('key').execute()
      // expiry purge
      await db.schema.createIndex('kv_entries_expires').on('kv_entries').column('expires_at').execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('kv_entries').execute()
    },
  },
  // the key-count quota reads this row instead of counting the user's entries on every write
  '0700-kv-usage': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('kv_usage')
        .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
        // rows in kv_entries, expired ones not yet purged included
        .addColumn('keys', 'bigint', (c) => c.notNull())
        .execute()
      await sql`insert into kv_usage (user_id, keys) select user_id, count(*) from kv_entries group by user_id`.execute(db)
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('kv_usage').execute()
    },
  },
  // a refused create asks whether any of the user's entries has expired (kvStore.quotaState):
  // only entries with an expiry are in this index, so the question costs one index probe
  '0756-kv-expiring': {
    async up(db: Kysely<any>) {
      await db.schema
        .createIndex('kv_entries_user_expiring')
        .on('kv_entries')
        .columns(['user_id', 'expires_at'])
        .where(sql.ref('expires_at'), 'is not', null)
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('kv_entries_user_expiring').execute()
    },
  },
  // PostgreSQL: lists (and their prefix ranges) go by key in byte order, `collate "C"`; the
  // primary key has the database's collation, which orders otherwise unless it is C. SQLite's
  // primary key is in byte order (BINARY) already.
  '0797-kv-key-bytes': {
    async up(db: Kysely<any>) {
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return
      await sql`create index kv_entries_user_key_c on kv_entries (user_id, key collate "C")`.execute(db)
    },
    async down(db: Kysely<any>) {
      await sql`drop index if exists kv_entries_user_key_c`.execute(db)
    },
  },
  // the highest version of the user's deleted entries: a new entry starts above it, so a key's
  // version (its ETag) never repeats across a delete and a re-create. Deletes made before this
  // migration are not known: those users start from 0.
  '0798-kv-retired-version': {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('kv_usage')
        .addColumn('retired_version', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('kv_usage').dropColumn('retired_version').execute()
    },
  },
  // a number entry its owner marked as a public counter: anyone may add 1 or take 1 away
  // without a key (POST /svc_api/data/public/{username}/{key}/incr); 0 for every entry before
  '0806-counter-kv-public-incr': {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('kv_entries')
        .addColumn('public_incr', 'integer', (c) => c.notNull().defaultTo(0))
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('kv_entries').dropColumn('public_incr').execute()
    },
  },
}
