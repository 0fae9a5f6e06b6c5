import type { Kysely, Migration } from 'kysely'

/** Forms, their submissions, and the per-user monthly submission counter. */
export const formMigrations: Record<string, Migration> = {
  '0300-forms': {
    async up(db: Kysely<any>) {
      await db.schema.createTable('forms')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('form_name', 'text', (c) => c.notNull())
        .addColumn('form_slug', 'text', (c) => c.notNull())
        // lower-cased slug: unique across the whole service, and the key public submits look up
        .addColumn('slug_key', 'text', (c) => c.notNull().unique())
        .addColumn('fields_config', 'text', (c) => c.notNull())
        .addColumn('allowed_origins', 'text', (c) => c.notNull())
        .addColumn('redirect_url', 'text')
        .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('honeypot_field', 'text')
        .addColumn('min_fill_seconds', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('forms_user').on('forms').columns(['user_id', 'created_at']).execute()

      await db.schema.createTable('form_submissions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('form_id', 'text', (c) => c.notNull().references('forms.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        // per-form sequence, assigned under the owner's lock: a stable newest-first order
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('is_read', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('is_spam', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('spam_reason', 'text')
        .addColumn('user_agent', 'text')
        .addColumn('ip_prefix', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('form_submissions_seq').on('form_submissions').columns(['form_id', 'seq']).unique().execute()
      await db.schema.createIndex('form_submissions_user').on('form_submissions').column('user_id').execute()

      await db.schema.createTable('form_usage')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('month', 'text', (c) => c.notNull())
        .addColumn('submissions', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('form_usage_pk', ['user_id', 'month'])
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('form_usage').execute()
      await db.schema.dropTable('form_submissions').execute()
      await db.schema.dropTable('forms').execute()
    },
  },
}
