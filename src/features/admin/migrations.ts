import type { Kysely, Migration } from 'kysely'

/** Run-time settings, the audit log, invitation codes and accounts waiting for review. */
export const adminMigrations: Record<string, Migration> = {
  '0740-admin': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('settings')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_by', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('audit_log')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('via', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('target', 'text', (c) => c.notNull())
        .addColumn('details', 'text', (c) => c.notNull())
        .addColumn('ip', 'text', (c) => c.notNull())
        .addColumn('user_agent', 'text', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('audit_log_at').on('audit_log').columns(['at', 'id']).execute()
      await db.schema
        .createTable('invites')
        .addColumn('code_hash', 'text', (c) => c.primaryKey())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('used_by', 'text')
        .addColumn('used_at', 'bigint')
        .execute()
      await db.schema
        .createTable('pending_accounts')
        .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
    },
    async down(db: Kysely<any>) {
      for (const t of ['pending_accounts', 'invites', 'audit_log', 'settings']) await db.schema.dropTable(t).execute()
    },
  },
}
