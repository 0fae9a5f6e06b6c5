import { Migrator, type Migration, type MigrationProvider } from 'kysely'
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

/** Brings the schema up to date; runs at every start and from `svc migrate`. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => allMigrations() }
  // name the schema: Kysely otherwise looks for its tables by name across every schema
  const migrator = new Migrator({ db: db.k, provider, ...(db.schema ? { migrationTableSchema: db.schema } : {}) })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
