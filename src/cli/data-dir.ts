import fs from 'node:fs'
import path from 'node:path'
import type { Config } from '../config.js'

/**
 * What DATA_DIR holds of the service's SQLite database: `present` (svc.db is there),
 * `no-folder`, `no-database` (the folder without svc.db), or `elsewhere` (DATABASE_URL).
 */
export type DatabaseState = 'present' | 'no-folder' | 'no-database' | 'elsewhere'

export function databaseState(config: Pick<Config, 'databaseUrl' | 'dataDir'>): DatabaseState {
  if (config.databaseUrl) return 'elsewhere'
  if (fs.existsSync(path.join(config.dataDir, 'svc.db'))) return 'present'
  return fs.existsSync(config.dataDir) ? 'no-database' : 'no-folder'
}

/** A DATA_DIR an operator command refuses (exit 78, as a bad configuration). */
export class MissingDatabaseError extends Error {}

/**
 * Why an operator command must not act on DATA_DIR, or null when it holds the service's
 * database (or DATABASE_URL names it): a command that reads or changes the service's data never
 * creates an empty one in a mistyped folder.
 */
export function missingDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string | null {
  const state = databaseState(config)
  if (state === 'present' || state === 'elsewhere') return null
  const what =
    state === 'no-folder'
      ? `DATA_DIR ${config.dataDir} does not exist: there is no service database (svc.db) to act on`
      : `DATA_DIR ${config.dataDir} holds no svc.db: there is no service database to act on`
  return `${what}; nothing was done (set DATA_DIR to the data folder svc serve uses)`
}

/** missingDatabase as an error, for a command that checks it among its own refusals (backup). */
export function assertDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): void {
  const missing = missingDatabase(config)
  if (missing !== null) throw new MissingDatabaseError(missing)
}

/** The note `svc serve` and `svc migrate` add when they create the database (state before they opened it). */
export function newDatabaseNote(state: DatabaseState): string | null {
  if (state === 'no-folder') return 'in a new data folder'
  if (state === 'no-database') return 'DATA_DIR held none'
  return null
}
