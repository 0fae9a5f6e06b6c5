import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely'
import type { Db } from './kysely.js'
import { coreMigrations } from './migrations/core.js'

/** Migrations of one part of the service (a feature), named NNNN-... */
export interface MigrationSet {
  name: string
  migrations?: Record<string, Migration>
}

/**
 * All migrations: the core's and those of `sets` (every feature's, gathered by the composition
 * root), ordered by their NNNN- name prefix. Names must be unique across sets.
 */
export function allMigrations(sets: readonly MigrationSet[]): Record<string, Migration> {
  const all: Record<string, Migration> = { ...coreMigrations }
  for (const f of sets) {
    for (const [name, m] of Object.entries(f.migrations ?? {})) {
      if (name in all) throw new Error(`duplicate migration name ${name}`)
      all[name] = m
    }
  }
  return all
}

function migrator(db: Db, sets: readonly MigrationSet[]): Migrator {
  const provider: MigrationProvider = { getMigrations: async () => allMigrations(sets) }
  // name the schema: Kysely otherwise looks for its tables by name across every schema
  return new Migrator({ db: db.k, provider, ...(db.schema ? { migrationTableSchema: db.schema } : {}) })
}

/**
 * Migrations this code knows that the database has not run (for MIGRATE_ON_START=0, where
 * `svc migrate` is a separate deploy step). Migrations the database ran that this code does
 * not know (a newer release migrated first) are tolerated: migrations are additive.
 */
export async function pendingMigrations(db: Db, sets: readonly MigrationSet[]): Promise<string[]> {
  const infos = await migrator(db, sets).getMigrations()
  return infos.filter((m) => m.executedAt === undefined).map((m) => m.name)
}

/**
 * Migrations the database ran that this code does not know: a newer release migrated it, and
 * may keep blobs in columns this release's sweeper and backups do not read (empty: none).
 */
export async function newerMigrations(db: Db, sets: readonly MigrationSet[]): Promise<string[]> {
  const known = allMigrations(sets)
  const rows = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db.k)
  return rows.rows.map((r) => r.name).filter((n) => !(n in known))
}

export interface MigrateOptions {
  /**
   * Runs once before the first pending migration of a database that already has a schema
   * (not for a new, empty one); returns a hint added to the error if a migration then fails.
   */
  before?(pending: string[]): Promise<string | undefined>
}

/** Brings the schema up to date; runs at every start (unless MIGRATE_ON_START=0) and from `svc migrate`. */
export async function migrateToLatest(db: Db, sets: readonly MigrationSet[], opts: MigrateOptions = {}): Promise<string[]> {
  let hint: string | undefined
  if (opts.before) {
    const infos = await migrator(db, sets).getMigrations()
    const pending = infos.filter((m) => m.executedAt === undefined).map((m) => m.name)
    if (pending.length > 0 && pending.length < infos.length) hint = await opts.before(pending)
  }
  try {
    return await migrate(db, sets)
  } catch (e) {
    if (hint === undefined) throw e
    throw new Error(`migration failed: ${(e as Error).message}; ${hint}`, { cause: e })
  }
}

/** Kysely's refusal of a database that ran a migration this code does not know. */
const UNKNOWN_MIGRATION = /^corrupted migrations: previously executed migration (\S+) is missing$/

async function migrate(db: Db, sets: readonly MigrationSet[]): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator(db, sets).migrateToLatest()
    if (!error) return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
    // a newer release migrated this database first: say so, and what does start on it
    const unknown = error instanceof Error ? UNKNOWN_MIGRATION.exec(error.message) : null
    if (unknown) {
      throw new Error(
        `this database was migrated by a newer release (migration ${unknown[1]} is unknown to this one): run that release or a later one, or start this one with MIGRATE_ON_START=0 (docs/operations/scale-out.md)`,
        { cause: error },
      )
    }
    // PostgreSQL with ?schema=: the schema itself may have been dropped under us (3F000);
    // create it again and retry. (The frequent 3F000 was another schema dropped during
    // Kysely's introspection: ScopedPostgresDialect in kysely.ts.)
    if (db.schema && (error as { code?: string }).code === '3F000' && attempt < 3) {
      await sql`create schema if not exists ${sql.id(db.schema)}`.execute(db.k)
      continue
    }
    throw error instanceof Error ? error : new Error('migration failed', { cause: error })
  }
}
