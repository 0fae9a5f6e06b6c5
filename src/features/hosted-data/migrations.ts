import { sql, type Kysely, type Migration } from 'kysely'
import { backfillUsage } from '../../db/usage.js'

/** Hosted data's tables. */
export const hostedDataMigrations: Record<string, Migration> = {
  '0500-hosted-data': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('hosted_files')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('public_token', 'text', (c) => c.notNull().unique())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('default_version', 'integer', (c) => c.notNull())
        .addColumn('latest_version', 'integer', (c) => c.notNull())
        .addColumn('locked', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('hosted_files_user').on('hosted_files').columns(['user_id', 'updated_at']).execute()
      await db.schema
        .createTable('hosted_versions')
        .addColumn('file_id', 'text', (c) => c.notNull().references('hosted_files.id').onDelete('cascade'))
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('hosted_versions_pk', ['file_id', 'version'])
        .execute()
      await db.schema.createIndex('hosted_versions_digest').on('hosted_versions').column('digest').execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('hosted_versions').execute()
      await db.schema.dropTable('hosted_files').execute()
    },
  },
  // the file and version count quotas read the usage counters (db/usage.ts), filled here from the rows
  '0753-hosted-data-usage': {
    async up(db: Kysely<any>) {
      await backfillUsage(
        db,
        sql`select user_id, 'hosted_files' as kind, count(*) as n from hosted_files group by user_id union all select f.user_id, 'hosted_versions:' || f.id as kind, count(*) as n from hosted_versions v join hosted_files f on f.id = v.file_id group by f.user_id, f.id`,
      )
    },
    async down(db: Kysely<any>) {
      await sql`delete from usage where kind = 'hosted_files' or kind like 'hosted_versions:%'`.execute(db)
    },
  },
}
