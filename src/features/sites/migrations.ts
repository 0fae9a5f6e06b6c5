import { sql, type Kysely, type Migration } from 'kysely'
import { backfillUsage } from '../../db/usage.js'

/** Single files' table. */
export const filesMigrations: Record<string, Migration> = {
  '0100-files': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('files')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('file_name', 'text', (c) => c.notNull())
        .addColumn('project_name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('is_featured', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint')
        .addUniqueConstraint('files_user_name', ['user_id', 'file_name'])
        .execute()
      await db.schema.createIndex('files_user_created').on('files').columns(['user_id', 'created_at']).execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('files').execute()
    },
  },
  // the file count quotas read the usage counters (db/usage.ts), filled here from the rows
  '0751-files-usage': {
    async up(db: Kysely<any>) {
      await backfillUsage(db, sql`select user_id, 'files' as kind, count(*) as n from files group by user_id`)
    },
    async down(db: Kysely<any>) {
      await sql`delete from usage where kind = 'files'`.execute(db)
    },
  },
}

/** Folder projects' tables. */
export const foldersMigrations: Record<string, Migration> = {
  '0110-folders': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('folders')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('is_published', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('published_at', 'bigint')
        .addUniqueConstraint('folders_user_name', ['user_id', 'name'])
        .execute()
      await db.schema
        .createTable('folder_files')
        .addColumn('folder_id', 'text', (c) => c.notNull().references('folders.id').onDelete('cascade'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('folder_files_pk', ['folder_id', 'path'])
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('folder_files').execute()
      await db.schema.dropTable('folders').execute()
    },
  },
  '0600-folders-site-rules': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('folders').addColumn('site_rules', 'text').execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('folders').dropColumn('site_rules').execute()
    },
  },
  // the project a user chose as their user site (served at their origin's root): at most one
  // per user, which the partial unique index holds whatever a write races
  '0804-root-user-site': {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('folders')
        .addColumn('user_site', 'integer', (c) => c.notNull().defaultTo(0))
        .execute()
      await db.schema.createIndex('folders_user_site').on('folders').column('user_id').unique().where(sql.ref('user_site'), '=', 1).execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('folders_user_site').execute()
      await db.schema.alterTable('folders').dropColumn('user_site').execute()
    },
  },
}

/**
 * Deploys: immutable versions of a folder project (deploys + deploy_files), and the live
 * pointer (folders.live_deploy_id) that the public host follows. A project published before
 * this migration gets one deploy holding its files, made live, so it keeps answering.
 */
export const deploysMigrations: Record<string, Migration> = {
  '0710-deploys': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('deploys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('folder_id', 'text', (c) => c.notNull().references('folders.id').onDelete('cascade'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('file_count', 'integer', (c) => c.notNull())
        .addColumn('bytes', 'bigint', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('is_preview', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('site_rules', 'text')
        .execute()
      await db.schema.createIndex('deploys_folder_seq').on('deploys').columns(['folder_id', 'seq']).unique().execute()
      await db.schema
        .createTable('deploy_files')
        .addColumn('deploy_id', 'text', (c) => c.notNull().references('deploys.id').onDelete('cascade'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('deploy_files_pk', ['deploy_id', 'path'])
        .execute()
      await db.schema.alterTable('folders').addColumn('live_deploy_id', 'text').execute()
      // published projects: one deploy of their current files (id: 'm' + 11 hex digits of the folder's uuid)
      const idOf = sql`'m' || substr(replace(folders.id, '-', ''), 1, 11)`
      await sql`INSERT INTO deploys (id, folder_id, seq, created_at, file_count, bytes, message, source, is_preview, site_rules)
        SELECT ${idOf}, folders.id, 1, COALESCE(folders.published_at, folders.updated_at),
          (SELECT COUNT(*) FROM folder_files f WHERE f.folder_id = folders.id),
          (SELECT COALESCE(SUM(f.size), 0) FROM folder_files f WHERE f.folder_id = folders.id),
          '', 'api', 0, folders.site_rules
        FROM folders WHERE folders.is_published = 1`.execute(db)
      await sql`INSERT INTO deploy_files (deploy_id, path, digest, size, content_type, updated_at)
        SELECT ${idOf}, f.path, f.digest, f.size, f.content_type, f.updated_at
        FROM folder_files f JOIN folders ON folders.id = f.folder_id WHERE folders.is_published = 1`.execute(db)
      await sql`UPDATE folders SET live_deploy_id = ${idOf} WHERE is_published = 1`.execute(db)
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('folders').dropColumn('live_deploy_id').execute()
      await db.schema.dropTable('deploy_files').execute()
      await db.schema.dropTable('deploys').execute()
    },
  },
  // when a preview first went live (promote or rollback to it): a plain rollback may go back to
  // it, as to any deploy visitors had (decision 154); a preview live now was promoted
  '0799-deploys-promoted': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('deploys').addColumn('promoted_at', 'bigint').execute()
      await sql`UPDATE deploys SET promoted_at = created_at
        WHERE is_preview = 1 AND id IN (SELECT live_deploy_id FROM folders WHERE live_deploy_id IS NOT NULL)`.execute(db)
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('deploys').dropColumn('promoted_at').execute()
    },
  },
  // a deploy made by a write through the file API (batch upload, delete) to a live project:
  // a run of them shares one deploy, and a plain rollback skips it (decision 159)
  '0800-deploys-partial': {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('deploys')
        .addColumn('is_partial', 'integer', (c) => c.notNull().defaultTo(0))
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('deploys').dropColumn('is_partial').execute()
    },
  },
}
