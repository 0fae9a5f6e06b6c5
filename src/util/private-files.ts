import fs from 'node:fs'

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
