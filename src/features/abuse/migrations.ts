import type { Kysely, Migration } from 'kysely'

/**
 * Abuse handling: reports (public or from the upload heuristics), holds on content
 * (quarantined or taken down), the evidence kept for a report (blob digests, so the sweeper
 * keeps them), and the blocklist of digests refused at upload.
 */
export const abuseMigrations: Record<string, Migration> = {
  '0745-abuse': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('abuse_reports')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('category', 'text', (c) => c.notNull())
        .addColumn('details', 'text', (c) => c.notNull())
        .addColumn('contact', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('reporter_ip', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('target', 'text')
        .addColumn('target_user_id', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('resolved_by', 'text')
        .execute()
      await db.schema.createIndex('abuse_reports_status').on('abuse_reports').columns(['status', 'created_at']).execute()
      await db.schema
        .createTable('content_holds')
        .addColumn('target', 'text', (c) => c.primaryKey())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('report_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('abuse_evidence')
        .addColumn('report_id', 'text', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('abuse_evidence_pk', ['report_id', 'path'])
        .execute()
      await db.schema
        .createTable('blocked_digests')
        .addColumn('digest', 'text', (c) => c.primaryKey())
        .addColumn('report_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.notNull())
        .execute()
    },
    async down(db: Kysely<any>) {
      for (const t of ['blocked_digests', 'abuse_evidence', 'content_holds', 'abuse_reports']) await db.schema.dropTable(t).execute()
    },
  },
}
