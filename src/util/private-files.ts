import fs from 'node:fs'
import path from 'node:path'

/** DATA_DIR's mode when the service creates it: its owner only (it holds every account's data). */
export const DATA_DIR_MODE = 0o700
/** The database files' mode, as backups and blobs have: owner and group, nothing for other users. */
export const DATA_FILE_MODE = 0o640

/** Creates DATA_DIR (and missing parents) for its owner only; a folder that exists keeps its mode (the operator's choice). */
export function ensureDataDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: DATA_DIR_MODE })
}

/**
 * Makes a SQLite database private before it is opened: created empty with DATA_FILE_MODE when
 * missing (SQLite gives the -wal and -shm it creates the database file's mode), and the file
 * and its -wal and -shm, when they exist, lose any access for other users (older versions made
 * them world-readable). Group bits are kept. A file this process may not chmod is left as is.
 */
export function privateDatabaseFile(file: string): void {
  fs.closeSync(fs.openSync(file, 'a', DATA_FILE_MODE))
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      const mode = fs.statSync(f).mode & 0o777
      if ((mode & 0o007) !== 0) fs.chmodSync(f, mode & 0o770)
    } catch {
      // missing (-wal, -shm) or not ours: nothing to do
    }
  }
}

/** The file `svc serve` holds a lock on while it runs on a SQLite data folder (cli/data-dir.ts holdDataDir). */
export const SERVE_LOCK = 'serve.lock'

/** The files the service keeps at the top of DATA_DIR (its database, lock and certificate). */
export const DATA_DIR_FILES = ['svc.db', 'svc.db-wal', 'svc.db-shm', SERVE_LOCK, 'tls-cert.pem', 'tls-key.pem']

/**
 * Whether a path an operator names as a destination is the data folder's own: the folder
 * itself, one of DATA_DIR_FILES, or anything inside the blob store's folder (`blobRoot`), whose
 * files the store reads, lists and sweeps. Writing there replaces the live database or mixes
 * files into the live store; the rest of DATA_DIR (DATA_DIR/backups) is the operator's.
 */
export function ownedByDataDir(p: string, dataDir: string, blobRoot: string): boolean {
  const d = path.resolve(p)
  const data = path.resolve(dataDir)
  const blobs = path.resolve(blobRoot)
  return d === data || d === blobs || d.startsWith(blobs + path.sep) || DATA_DIR_FILES.some((f) => d === path.join(data, f))
}
