import { sql, type Kysely, type Migration } from 'kysely'
import { backfillUsage } from '../../db/usage.js'

/** Custom domains (one project each) and visitor access rules (a password, an expiry) per name. */
export const domainMigrations: Record<string, Migration> = {
  '0720-domains': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('domains')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        // lowercased ASCII (IDNs in punycode), no trailing dot
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('project', 'text', (c) => c.notNull())
        // the TXT record _svc-challenge.{name} must hold svc-verify={token}
        .addColumn('token', 'text', (c) => c.notNull())
        .addColumn('verified_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      // a user adds a name once; several users may claim it, but only one can hold it verified
      await db.schema.createIndex('domains_user_name').on('domains').columns(['user_id', 'name']).unique().execute()
      await db.schema.createIndex('domains_verified_name').on('domains').column('name').unique().where(sql.ref('verified_at'), 'is not', null).execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('domains').execute()
    },
  },
  '0721-site-access': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('site_access')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        // a project or single page name: the first path segment after the user
        .addColumn('name', 'text', (c) => c.notNull())
        // Argon2id PHC string (auth/passwords.ts); null: no password
        .addColumn('password_hash', 'text')
        // epoch ms after which the name answers 410; null: never
        .addColumn('expires_at', 'bigint')
        // HMAC key of the visitor cookies; replaced with every password change (old cookies die)
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('site_access_user_name').on('site_access').columns(['user_id', 'name']).unique().execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('site_access').execute()
    },
  },
  // the domain count quotas read the usage counters (db/usage.ts), filled here from the rows
  '0755-domains-usage': {
    async up(db: Kysely<any>) {
      await backfillUsage(db, sql`select user_id, 'domains' as kind, count(*) as n from domains group by user_id`)
    },
    async down(db: Kysely<any>) {
      await sql`delete from usage where kind = 'domains'`.execute(db)
    },
  },
  // the primary domain of a project: browsers opening its other URLs are sent there (at most one per project)
  '0757-domains-primary': {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('domains')
        .addColumn('is_primary', 'integer', (c) => c.notNull().defaultTo(0))
        .execute()
      await db.schema
        .createIndex('domains_primary_project')
        .on('domains')
        .columns(['user_id', 'project'])
        .unique()
        .where(sql.ref('is_primary'), '=', 1)
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('domains_primary_project').execute()
      await db.schema.alterTable('domains').dropColumn('is_primary').execute()
    },
  },
  // when another account proved control of a verified domain and took it (decision 90): the row stays, unverified
  '0790-domains-lost': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('domains').addColumn('lost_at', 'bigint').execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('domains').dropColumn('lost_at').execute()
    },
  },
  // a user's verification token per name, kept when the domain is removed: added again, the
  // name gets the same token, so a TXT record set up once keeps proving it (decision 112)
  '0792-domain-tokens': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('domain_tokens')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('token', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('domain_tokens_pk', ['user_id', 'name'])
        .execute()
      await sql`insert into domain_tokens (user_id, name, token) select user_id, name, token from domains`.execute(db)
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('domain_tokens').execute()
    },
  },
}
