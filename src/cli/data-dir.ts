import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import type { Config } from '../config.js'
import { ensureDataDir, SERVE_LOCK } from '../util/private-files.js'

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
  const file = config.databaseUrl ? null : notAFolder(config.dataDir)
  if (file !== null) return file
  const state = databaseState(config)
  if (state === 'present' || state === 'elsewhere') return null
  const what =
    state === 'no-folder'
      ? `DATA_DIR ${config.dataDir} does not exist: there is no service database (svc.db) to act on`
      : `DATA_DIR ${config.dataDir} holds no svc.db: there is no service database to act on`
  return `${what}; nothing was done (set DATA_DIR to the data folder svc serve uses)`
}

/** The nearest path above a missing `dir` that exists: where making `dir` would start. */
function nearestAbove(dir: string): string {
  let above = path.dirname(path.resolve(dir))
  while (!fs.existsSync(above) && above !== path.dirname(above)) above = path.dirname(above)
  return above
}

/** Why DATA_DIR cannot be a folder (it, or the nearest existing path above it, is a file), or null. */
function notAFolder(dir: string): string | null {
  const then = '; nothing was done (set DATA_DIR to the data folder svc serve uses)'
  if (fs.existsSync(dir)) return fs.statSync(dir).isDirectory() ? null : `DATA_DIR ${dir} is a file, not a folder${then}`
  const above = nearestAbove(dir)
  return fs.existsSync(above) && !fs.statSync(above).isDirectory() ? `DATA_DIR ${dir} cannot be made: ${above} is a file, not a folder${then}` : null
}

/** missingDatabase and unusableDataDir as an error, for a command that checks them among its own refusals (backup). */
export function assertDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'storageUrl'>): void {
  const missing = missingDatabase(config) ?? unusableDataDir(config)
  if (missing !== null) throw new MissingDatabaseError(missing)
}

/** A user's name from the passwd file, or null (no such entry, or no file). */
function userName(uid: number): string | null {
  try {
    for (const line of fs.readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':')
      if (f.length > 2 && Number(f[2]) === uid && f[2] !== '') return f[0] ?? null
    }
  } catch {
    // no passwd file (a container without one): the number alone
  }
  return null
}

/**
 * Why this process cannot use DATA_DIR, or null (SQLite; with DATABASE_URL the folder holds
 * only the certificate and caches). The folder (or, when missing, the one it would be made
 * in) and each file the service opens there must allow this user what the service does with
 * them. Asked before anything is opened, so a folder owned by another account or mounted
 * read-only is named with the user, the owner and the way out instead of a bare EACCES or
 * "unable to open database file" (decision 207). Root passes every permission check but a
 * read-only file system.
 */
export function unusableDataDir(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'storageUrl'>): string | null {
  if (config.databaseUrl) return null
  const dir = config.dataDir
  const file = notAFolder(dir)
  if (file !== null) return file
  const rw = fs.constants.R_OK | fs.constants.W_OK
  const checks: Array<{ file: string; what: string; mode: number; need: string }> = []
  if (fs.existsSync(dir)) {
    checks.push({ file: dir, what: 'the folder', mode: rw | fs.constants.X_OK, need: 'read and written' })
    const entries: Array<[string, number, string]> = [
      ['svc.db', rw, 'read and written'],
      ['svc.db-wal', rw, 'read and written'],
      ['svc.db-shm', rw, 'read and written'],
      [SERVE_LOCK, rw, 'read and written'],
      ['tls-key.pem', fs.constants.R_OK, 'read'],
      ['tls-cert.pem', fs.constants.R_OK, 'read'],
    ]
    if (!config.storageUrl) entries.push(['blobs', rw | fs.constants.X_OK, 'read and written'])
    for (const [name, mode, need] of entries) {
      const file = path.join(dir, name)
      if (fs.existsSync(file)) checks.push({ file, what: name, mode, need })
    }
  } else {
    const parent = nearestAbove(dir)
    checks.push({ file: parent, what: `the folder it would be made in (${parent})`, mode: fs.constants.W_OK | fs.constants.X_OK, need: 'written' })
  }
  for (const c of checks) {
    try {
      fs.accessSync(c.file, c.mode)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if (code === 'EROFS') {
        return `DATA_DIR ${dir} is on a read-only file system: svc writes its database and blobs there. Remount it read-write, or restore a backup into a writable folder; nothing was done`
      }
      if (code !== 'EACCES' && code !== 'EPERM') return `DATA_DIR ${dir}: ${c.what} cannot be used (${(e as Error).message}); nothing was done`
      const uid = process.getuid?.() ?? -1
      const me = userName(uid) ?? (uid === os.userInfo().uid ? os.userInfo().username : null)
      const st = fs.statSync(c.file)
      const owner = userName(st.uid)
      const who = me ?? String(uid)
      const fix = fs.existsSync(dir)
        ? `Run svc as the data folder's owner, or give the folder to this user (chown -R ${who} ${dir})`
        : `Make the folder for this user first (install -d -o ${who} -m 0700 ${dir})`
      return (
        `DATA_DIR ${dir}: ${c.what} cannot be ${c.need} by this user (uid ${uid}${me === null ? '' : `, ${me}`}); ` +
        `it belongs to uid ${st.uid}${owner === null ? '' : ` (${owner})`}, mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}. ${fix}; nothing was done`
      )
    }
  }
  return null
}

/** The note `svc serve` and `svc migrate` add when they create the database (state before they opened it). */
export function newDatabaseNote(state: DatabaseState): string | null {
  if (state === 'no-folder') return 'in a new data folder'
  if (state === 'no-database') return 'DATA_DIR held none'
  return null
}

/**
 * Takes the data folder for this `svc serve` (SQLite only), or throws MissingDatabaseError when
 * another one runs on it: each server keeps caches, holds and limits of its own, told of
 * changes only by its own writes (or Redis, with PostgreSQL), so a second one on the same file
 * serves pages replaced or taken down through the first (decision 206). The lock is SQLite's
 * own on `serve.lock` (an open write transaction, a POSIX lock): the kernel drops it when the
 * process ends, however it ends, so a crash leaves nothing to clean up. Operator commands do
 * not take it and keep working beside the server. Returns the release (kept open till exit).
 */
export function holdDataDir(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'storageUrl'>): () => void {
  if (config.databaseUrl) return () => {}
  const unusable = unusableDataDir(config)
  if (unusable !== null) throw new MissingDatabaseError(unusable)
  ensureDataDir(config.dataDir)
  const file = path.join(config.dataDir, SERVE_LOCK)
  const lock = new SQLite(file, { timeout: 0 })
  const refuse = (): never => {
    let pid = ''
    try {
      const row = lock.prepare('select pid from holder').get() as { pid: number } | undefined
      if (row !== undefined) pid = ` (pid ${row.pid})`
    } catch {
      // not written yet by a server starting at this moment
    }
    lock.close()
    throw new MissingDatabaseError(
      `DATA_DIR ${config.dataDir} is in use by another svc serve${pid}: one server per SQLite data folder; stop it first, or run more instances on PostgreSQL (docs/operations/scale-out.md)`,
    )
  }
  const busy = (e: unknown) => ['SQLITE_BUSY', 'SQLITE_LOCKED'].includes(String((e as { code?: unknown }).code))
  try {
    fs.chmodSync(file, 0o600)
    lock.exec('create table if not exists holder (pid integer not null)')
    // the pid is committed for a refused server to name, then the write lock is taken again
    // and held; one that took it in between is the holder, and this one is refused
    lock.exec('begin immediate')
    lock.prepare('delete from holder').run()
    lock.prepare('insert into holder (pid) values (?)').run(process.pid)
    lock.exec('commit')
    lock.exec('begin immediate')
  } catch (e) {
    if (busy(e)) refuse()
    lock.close()
    throw e
  }
  return () => lock.close()
}
