import type { Kysely, Migration } from 'kysely'

/** API key settings beyond the core table. */
export const accountMigrations: Record<string, Migration> = {
  // a read-only key may call GET/HEAD routes and the read-only MCP tools only (1440)
  '0730-api-keys-read-only': {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('api_keys')
        .addColumn('read_only', 'integer', (c) => c.notNull().defaultTo(0))
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('api_keys').dropColumn('read_only').execute()
    },
  },
}
