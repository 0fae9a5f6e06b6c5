import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely'
import type { Db } from './kysely.js'
import { coreMigrations } from './migrations/core.js'
import { FEATURES } from '../features/index.js'

/** All migrations: the core's and every feature's, ordered by their NNNN- name prefix. */
export function allMigrations(): Record<string, Migration> {
  const all: Record<string, Migration> = { ...coreMigrations }
  for (const f of FEATURES) {
    for (const [name, m] of Object.entries(f.migrations ?? {})) {
      if (name in all) throw new Error(`duplicate migration name ${name}`)
      all[name] = m
    }
  }
  return all
}

function migrator(db: Db): Migrator {
  const provider: MigrationProvider = { getMigrations: async () => allMigrations() }
  // name the schema: Kysely otherwise looks for its tables by name across every schema
  return new Migrator({ db: db.k, provider, ...(db.schema ? { migrationTableSchema: db.schema } : {}) })
}

/**
 * Migrations this code knows that the database has not run (for MIGRATE_ON_START=0, where
 * `svc migrate` is a separate deploy step). Migrations the database ran that this code does
 * not know (a newer release migrated first) are tolerated: migrations are additive.
 */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const infos = await migrator(db).getMigrations()
  return infos.filter((m) => m.executedAt === undefined).map((m) => m.name)
}

/** Brings the schema up to date; runs at every start (unless MIGRATE_ON_START=0) and from `svc migrate`. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator(db).migrateToLatest()
    if (!error) return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
    // PostgreSQL with ?schema=: the schema itself may have been dropped under us (3F000);
    // create it again and retry. (The frequent 3F000 was another schema dropped during
    // Kysely's introspection: ScopedPostgresDialect in kysely.ts.)
    if (db.schema && (error as { code?: string }).code === '3F000' && attempt < 3) {
      await sql`create schema if not exists ${sql.id(db.schema)}`.execute(db.k)
      continue
    }
    throw error
  }
}
