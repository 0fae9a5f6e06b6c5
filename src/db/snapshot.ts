import fs from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'

/** How many automatic pre-migration copies are kept in DATA_DIR/backups. */
export const PRE_MIGRATION_KEEP = 3

/**
 * Copies the SQLite database (DATA_DIR/svc.db) with SQLite's online backup API into
 * DATA_DIR/backups/pre-migrate-<time>/svc.db, before migrations run, and returns that file.
 * Blobs are content-addressed and never changed by a migration, so the database is all a
 * rollback needs. Older automatic copies beyond PRE_MIGRATION_KEEP are removed.
 */
export async function snapshotBeforeMigration(dataDir: string, now = new Date()): Promise<string> {
  const source = path.join(dataDir, 'svc.db')
  const root = path.join(dataDir, 'backups')
  const dir = path.join(root, `pre-migrate-${now.toISOString().replace(/[:.]/g, '-')}`)
  fs.mkdirSync(dir, { recursive: true })
  const target = path.join(dir, 'svc.db')
  await copySqlite(source, target)
  const old = fs
    .readdirSync(root)
    .filter((n) => n.startsWith('pre-migrate-'))
    .sort()
  for (const n of old.slice(0, Math.max(0, old.length - PRE_MIGRATION_KEEP))) fs.rmSync(path.join(root, n), { recursive: true, force: true })
  return target
}

/**
 * Copies a live SQLite database with the online backup API: after a first step, all remaining
 * pages in one step, so a write by the server between steps (which restarts the copy) cannot
 * starve it. The copy uses a rollback journal: a standalone file with no -wal/-shm beside it.
 */
export async function copySqlite(source: string, target: string): Promise<void> {
  // the copy holds what the database does (password hashes, webhook and visitor-access
  // secrets, form submissions): created empty, owner and group only (as restored databases
  // and blobs are), before SQLite writes a page; SQLite's own default is world-readable
  fs.writeFileSync(target, '')
  fs.chmodSync(target, 0o640)
  const src = new SQLite(source, { fileMustExist: true })
  try {
    src.pragma('busy_timeout = 10000')
    await src.backup(target, { progress: () => 0x7fffffff })
  } finally {
    src.close()
  }
  const copy = new SQLite(target, { fileMustExist: true })
  try {
    copy.pragma('journal_mode = DELETE')
  } finally {
    copy.close()
  }
}

/** The operator's way back after a failed migration, for the error message. */
export function rollbackHint(dataDir: string, copy: string): string {
  return (
    `a copy of the database taken before this migration is ${copy}; to go back to the previous release: stop svc, ` +
    `copy it over ${path.join(dataDir, 'svc.db')}, delete svc.db-wal and svc.db-shm there, and start the previous release`
  )
}

/**
 * Migration options that snapshot a SQLite database first (PostgreSQL: none; see
 * docs/operations/backups.md). `taken` hears the copy's path, when one was made.
 */
export function snapshotFirst(
  o: { databaseUrl: string | null; dataDir: string },
  taken?: (copy: string) => void,
): { before?(pending: string[]): Promise<string | undefined> } {
  if (o.databaseUrl) return {}
  return {
    async before() {
      const copy = await snapshotBeforeMigration(o.dataDir)
      taken?.(copy)
      return rollbackHint(o.dataDir, copy)
    },
  }
}
