import { sql, type Kysely, type Migration } from 'kysely'
import { backfillUsage } from '../../db/usage.js'

/** Image hosting's table. */
export const imageMigrations: Record<string, Migration> = {
  '0400-images': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('images')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('public_token', 'text', (c) => c.notNull().unique())
        .addColumn('file_name', 'text', (c) => c.notNull())
        .addColumn('remark', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('width', 'integer')
        .addColumn('height', 'integer')
        .addColumn('locked', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('images_user_created').on('images').columns(['user_id', 'created_at']).execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('images').execute()
    },
  },
  // the image count and bytes quotas read the usage counters (db/usage.ts), filled here from the rows
  '0752-images-usage': {
    async up(db: Kysely<any>) {
      await backfillUsage(
        db,
        sql`select user_id, 'images' as kind, count(*) as n from images group by user_id union all select user_id, 'image_bytes' as kind, sum(size) as n from images group by user_id`,
      )
    },
    async down(db: Kysely<any>) {
      await sql`delete from usage where kind in ('images', 'image_bytes')`.execute(db)
    },
  },
}
