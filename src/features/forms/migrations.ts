import { sql, type Kysely, type Migration } from 'kysely'
import { backfillUsage } from '../../db/usage.js'

/** Forms, their submissions, and the per-user monthly submission counter. */
export const formMigrations: Record<string, Migration> = {
  '0300-forms': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('forms')
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

      await db.schema
        .createTable('form_submissions')
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

      await db.schema
        .createTable('form_usage')
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
  // form notifications: a webhook and an e-mail setting per form, the owner's verified
  // addresses, and the outbox of deliveries (written in the submission's transaction)
  '0731-form-notifications': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('form_webhooks')
        .addColumn('form_id', 'text', (c) => c.primaryKey().references('forms.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('url', 'text', (c) => c.notNull())
        // kept in clear: signing needs it; shown to the owner only when created or rotated
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('form_email_settings')
        .addColumn('form_id', 'text', (c) => c.primaryKey().references('forms.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('notify_addresses')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text')
        .addColumn('verified_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('notify_addresses_user').on('notify_addresses').columns(['user_id', 'address']).unique().execute()
      await db.schema
        .createTable('notify_deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('form_id', 'text', (c) => c.notNull().references('forms.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('submission_id', 'text', (c) => c.notNull())
        // webhook | email | digest
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('target', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        // pending | delivered | failed
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('tries', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_at', 'bigint', (c) => c.notNull())
        .addColumn('deadline_at', 'bigint', (c) => c.notNull())
        .addColumn('claimed_by', 'text')
        .addColumn('claimed_until', 'bigint')
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('delivered_at', 'bigint')
        .execute()
      await db.schema.createIndex('notify_deliveries_due').on('notify_deliveries').columns(['status', 'next_at']).execute()
      await db.schema.createIndex('notify_deliveries_form').on('notify_deliveries').columns(['form_id', 'created_at']).execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('notify_deliveries').execute()
      await db.schema.dropTable('notify_addresses').execute()
      await db.schema.dropTable('form_email_settings').execute()
      await db.schema.dropTable('form_webhooks').execute()
    },
  },
  // the form count quotas read the usage counters (db/usage.ts), filled here from the rows
  '0754-forms-usage': {
    async up(db: Kysely<any>) {
      await backfillUsage(db, sql`select user_id, 'forms' as kind, count(*) as n from forms group by user_id`)
    },
    async down(db: Kysely<any>) {
      await sql`delete from usage where kind = 'forms'`.execute(db)
    },
  },
  // spam stored in the month, counted apart from the monthly quota it no longer takes
  // (decision 252); earlier months' spam stays in `submissions`, as counted then
  '0801-form-usage-spam': {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('form_usage')
        .addColumn('spam', 'integer', (c) => c.notNull().defaultTo(0))
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('form_usage').dropColumn('spam').execute()
    },
  },
  // slugs of deleted or renamed forms, held for their account (decision 264)
  '0803-form-slugs-held': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('form_slugs_held')
        .addColumn('slug_key', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('username', 'text', (c) => c.notNull())
        .addColumn('held_at', 'bigint', (c) => c.notNull())
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('form_slugs_held').execute()
    },
  },
  // files sent with a submission (multipart parts with a file name): the bytes are a blob,
  // the row says whose, which field and what; it goes with its submission, form and account
  '0805-attach-form-files': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('form_files')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('submission_id', 'text', (c) => c.notNull().references('form_submissions.id').onDelete('cascade'))
        .addColumn('form_id', 'text', (c) => c.notNull().references('forms.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('field', 'text', (c) => c.notNull())
        .addColumn('filename', 'text', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('form_files_submission').on('form_files').column('submission_id').execute()
      await db.schema.createIndex('form_files_user').on('form_files').column('user_id').execute()
      await db.schema.createIndex('form_files_digest').on('form_files').column('digest').execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('form_files').execute()
    },
  },
}
