import fs from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import type { BlobStore } from '../storage/blob-store.js'
import { DIGEST_RE } from '../storage/blob-store.js'
import { legacyBlobRel, localBlobRel } from '../storage/local.js'
import type { BlobColumn } from '../storage/sweeper.js'
import { copySqlite } from '../db/snapshot.js'
import { ensureDataDir } from '../util/private-files.js'
import { serviceVersion } from '../util/version.js'
import { ioFailure, isSystemError } from '../util/io-failure.js'
import { atomicCopy, BackupError, folderTarget, hashStream, MANIFEST_FORMAT, sha256File, type Manifest, type SnapshotTarget } from './snapshot-target.js'

/**
 * Operators' backup and restore of one SQLite instance (docs/operations/backups.md), into and
 * from a folder or a bucket: the layout and the guarantees are those of SnapshotTarget
 * (snapshot-target.ts); this file holds what is the same for both.
 */

export { BackupError, type Manifest } from './snapshot-target.js'

/**
 * The target a backup destination names: s3://bucket[/prefix][?endpoint=...] (the S3 client is
 * loaded only then) or a folder.
 */
export async function openSnapshotTarget(dest: string): Promise<SnapshotTarget> {
  if (!dest.startsWith('s3://')) return folderTarget(dest)
  // a literal specifier: the bundle makes it a chunk of its own, as storage/open.ts does
  const { s3Target } = await import('./snapshot-s3.js')
  return s3Target(dest)
}

/** The target holding one snapshot, and its name: DIR/<name> or s3://bucket[/prefix]/<name>[?...]. */
export async function openSnapshot(location: string): Promise<{ target: SnapshotTarget; name: string }> {
  if (!location.startsWith('s3://')) return { target: folderTarget(path.dirname(location)), name: path.basename(location) }
  const { s3Snapshot } = await import('./snapshot-s3.js')
  return s3Snapshot(location)
}

export interface BackupOptions {
  /** DATA_DIR: its svc.db is the database backed up. */
  dataDir: string
  /** The live blob store (local): referenced blobs are copied from it. */
  blobs: BlobStore
  blobColumns: readonly BlobColumn[]
  /**
   * The migrations this release knows: a database that ran another was migrated by a newer
   * release, whose blobs may sit in columns `blobColumns` lacks, so it is refused (nothing kept).
   */
  knownMigrations?: readonly string[]
  /** Where the snapshot goes (openSnapshotTarget). */
  target: SnapshotTarget
  /** Keep this many newest snapshots (the new one included); the others and their unshared blobs go. */
  keep?: number
  now?: Date
}

export interface BackupResult {
  snapshot: string
  manifest: Manifest
  copied: number
  copiedBytes: number
  removedSnapshots: string[]
  removedBlobs: number
}

const quoteId = (s: string) => `"${s.replace(/"/g, '""')}"`

/** Every blob digest the rows of a database file reference (the sweeper's column list). */
export function referencedDigests(db: SQLite.Database, blobColumns: readonly BlobColumn[]): Array<{ digest: string; table: string; column: string }> {
  const out: Array<{ digest: string; table: string; column: string }> = []
  for (const { table, column } of blobColumns) {
    for (const r of db.prepare(`select distinct ${quoteId(column)} as d from ${quoteId(table)}`).all() as Array<{ d: string | null }>) {
      if (r.d) out.push({ digest: r.d, table, column })
    }
  }
  return out
}

/**
 * Takes a snapshot while the server runs. Order (the invariant that makes it consistent): the
 * database first, in one read transaction of the online backup API; then every blob the
 * snapshot's rows reference, read from the snapshot itself. Writers store a blob before the
 * row that points to it, so each such blob was in the live store when the snapshot was taken;
 * the sweeper spares it for its grace period, so it is normally still there. One that is not
 * (its row deleted since and the sweeper ran) fails the backup with its digest. A blob the
 * target holds already is not copied again: blobs are immutable and named by their content.
 */
export async function backupSqlite(o: BackupOptions): Promise<BackupResult> {
  const live = path.join(o.dataDir, 'svc.db')
  if (!fs.existsSync(live)) throw new BackupError(`no database at ${live}`)
  const t = o.target
  return t.locked(async () => {
    const now = o.now ?? new Date()
    const name = now.toISOString().replace(/[:.]/g, '-')
    if ((await t.snapshots()).includes(name)) throw new BackupError(`snapshot ${t.where(name)} already exists`)
    let manifest: Manifest
    let copied = 0
    let copiedBytes = 0
    try {
      const staged = await t.stage(name)
      // 1. the database, as a standalone copy
      const dbFile = path.join(staged, 'svc.db')
      await copySqlite(live, dbFile)
      const snap = new SQLite(dbFile, { fileMustExist: true })
      let migrations: string[]
      const digests = new Set<string>()
      try {
        const check = snap.pragma('integrity_check', { simple: true })
        if (check !== 'ok') throw new BackupError(`the database copy fails its integrity check: ${String(check)}`)
        migrations = (snap.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>).map((r) => r.name)
        const known = o.knownMigrations && new Set(o.knownMigrations)
        const newer = known ? migrations.filter((m) => !known.has(m)) : []
        if (newer.length > 0) {
          throw new BackupError(
            `the database was migrated by a newer release: it ran migrations this release (svc ${serviceVersion()}) does not know (${newer.join(', ')}), and a snapshot by this release could miss blobs only that release knows of; back up with that release or a later one. Nothing kept`,
          )
        }
        // 2. the blobs the snapshot references
        for (const r of referencedDigests(snap, o.blobColumns)) digests.add(r.digest)
      } finally {
        snap.close()
      }
      const db = await sha256File(dbFile)

      const present = new Map<string, number>()
      for await (const b of t.listBlobs()) present.set(b.digest, b.size)
      const list: Manifest['blobs'] = []
      for (const digest of [...digests].sort()) {
        if (!DIGEST_RE.test(digest)) throw new BackupError(`the database references a malformed blob digest "${digest}"`)
        const have = present.get(digest)
        if (have !== undefined) {
          list.push({ digest, size: have })
          continue
        }
        if (!(await o.blobs.exists(digest))) throw new BackupError(`blob ${digest} is referenced by the database but missing from the live store`)
        const size = await t.putBlob(digest, await o.blobs.get(digest), `blob ${digest} in the live store`)
        list.push({ digest, size })
        copied++
        copiedBytes += size
      }

      // 3. the manifest, last: the snapshot is complete once it is there
      manifest = {
        format: MANIFEST_FORMAT,
        created_at: now.toISOString(),
        service_version: serviceVersion(),
        engine: 'sqlite',
        migrations,
        database: { file: 'svc.db', sha256: db.sha256, size: db.size },
        blobs: list,
      }
      await t.commit(name, manifest)
    } catch (e) {
      await t.discard(name).catch(() => {})
      if (e instanceof BackupError) throw e
      // a full disk, a write refused: the destination and the cause, not the bare errno
      throw new BackupError(`backup into ${t.where()} failed: ${ioFailure(e)}; the incomplete snapshot was removed`)
    }
    const { removedSnapshots, removedBlobs } = o.keep !== undefined ? await retain(t, o.keep) : { removedSnapshots: [], removedBlobs: 0 }
    return { snapshot: t.where(name), manifest, copied, copiedBytes, removedSnapshots, removedBlobs }
  })
}

/**
 * Retention: deletes all but the newest `keep` snapshots, then the blobs that no kept
 * snapshot's manifest lists. Runs under the target's lock, after the new snapshot is complete.
 */
async function retain(t: SnapshotTarget, keep: number): Promise<{ removedSnapshots: string[]; removedBlobs: number }> {
  const all = await t.snapshots()
  const drop = all.slice(0, Math.max(0, all.length - keep))
  for (const n of drop) await t.deleteSnapshot(n)
  const kept = new Set<string>()
  for (const n of all.slice(drop.length)) {
    const m = JSON.parse(await t.readManifest(n)) as Manifest
    for (const b of m.blobs) kept.add(b.digest)
  }
  const unused: string[] = []
  for await (const b of t.listBlobs()) if (!kept.has(b.digest)) unused.push(b.digest)
  for (const d of unused) await t.deleteBlob(d)
  return { removedSnapshots: drop, removedBlobs: unused.length }
}

export interface RestoreOptions {
  /** The target holding the snapshot, and the snapshot's name (openSnapshot). */
  source: SnapshotTarget
  name: string
  /** Folder that receives svc.db. */
  dataDir: string
  /** Folder that receives the blobs (DATA_DIR/blobs, or STORAGE_URL's file:// path). */
  blobRoot: string
  /** The tables and columns holding blob digests: every one the database holds must be in the snapshot. */
  blobColumns: readonly BlobColumn[]
  /**
   * The migrations this release knows: a snapshot whose database ran another one was taken by
   * a newer release, which this one cannot start on, so it is refused before anything is written.
   */
  knownMigrations: readonly string[]
  force?: boolean
}

/**
 * Whether another process has this SQLite database open: every connection to a WAL database
 * holds a shared lock on it for as long as it is open, so an exclusive one is refused at once.
 * A file SQLite cannot read as a database is not in use (--force replaces it).
 */
export function sqliteInUse(file: string): boolean {
  let db: SQLite.Database | null = null
  try {
    db = new SQLite(file, { fileMustExist: true, timeout: 0 })
    db.pragma('locking_mode = EXCLUSIVE')
    db.exec('BEGIN EXCLUSIVE; COMMIT')
    return false
  } catch (e) {
    const code = (e as { code?: unknown }).code
    return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED'
  } finally {
    db?.close()
  }
}

/** True when `file` exists and its bytes hash to `digest`. */
async function holdsIntact(file: string, digest: string): Promise<boolean> {
  const got = await sha256File(file).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return null
    throw e
  })
  return got !== null && got.sha256 === digest
}

/**
 * Restores a snapshot. Verification comes first and writes nothing: the manifest, the
 * database file's SHA-256 and size, every blob the database references listed by the
 * manifest, and each blob's SHA-256 recomputed from its bytes. Then the blobs (each hashed
 * again on the way: from a bucket they are read a second time), then svc.db last (each temp +
 * rename), so the database never points to a blob that is not there yet.
 */
export async function restoreSqlite(o: RestoreOptions): Promise<{ manifest: Manifest; blobs: number; written: number }> {
  const where = o.source.where(o.name)
  const text = await o.source.readManifest(o.name)
  let manifest: Manifest
  try {
    manifest = JSON.parse(text) as Manifest
  } catch (e) {
    throw new BackupError(`cannot read ${where}/manifest.json: ${(e as Error).message}`)
  }
  if (manifest?.format !== MANIFEST_FORMAT || manifest.engine !== 'sqlite' || !manifest.database || !Array.isArray(manifest.blobs)) {
    throw new BackupError(`${where}/manifest.json: not a format ${MANIFEST_FORMAT} SQLite snapshot manifest`)
  }
  const target = path.join(o.dataDir, 'svc.db')
  if (fs.existsSync(target) && !o.force) throw new BackupError(`${target} exists; restore into an empty data dir, or pass --force to replace it`)
  // a running server keeps its open (then unlinked) database: it would serve the old data,
  // lose every write made after the restore, and its sweeper would delete the restored blobs
  if (fs.existsSync(target) && sqliteInUse(target)) throw new BackupError(`${target} is in use (a running svc serve?): stop it, then restore`)

  const local = await o.source.localDatabase(o.name)
  try {
    const problems: string[] = []
    const db = local ? await sha256File(local.file) : null
    if (!db) problems.push(`svc.db: missing from ${where}`)
    else if (db.sha256 !== manifest.database.sha256 || db.size !== manifest.database.size) {
      problems.push(
        `svc.db: sha256 ${db.sha256} (${db.size} bytes) does not match the manifest's ${manifest.database.sha256} (${manifest.database.size} bytes)`,
      )
    }
    // the manifest cannot be trusted to list what the database needs: a blob the database
    // references and the manifest omits would be a restored row pointing at nothing
    let unknown: string[] = []
    if (local && db && db.sha256 === manifest.database.sha256) {
      const listed = new Set(manifest.blobs.map((b) => b.digest))
      let snap: SQLite.Database | null = null
      try {
        snap = new SQLite(local.file, { readonly: true, fileMustExist: true })
        // the database's own list, not the manifest's: it is what the migrator will find
        const known = new Set(o.knownMigrations)
        unknown = (snap.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>)
          .map((r) => r.name)
          .filter((n) => !known.has(n))
        for (const r of referencedDigests(snap, o.blobColumns)) {
          if (!listed.has(r.digest)) problems.push(`blob ${r.digest}: referenced by svc.db (${r.table}.${r.column}) but not in the manifest`)
        }
      } catch (e) {
        problems.push(`svc.db: cannot be read (${(e as Error).message})`)
      } finally {
        snap?.close()
      }
    }
    if (unknown.length > 0) {
      throw new BackupError(
        `snapshot ${where} was taken by a newer release (svc ${String(manifest.service_version)}): its database ran migrations this release (svc ${serviceVersion()}) does not know (${unknown.join(', ')}), so it could not start on it; restore it with that release or a later one. Nothing restored`,
      )
    }
    for (const b of manifest.blobs) {
      if (!DIGEST_RE.test(b.digest)) {
        problems.push(`blob "${b.digest}": not a digest`)
        continue
      }
      const body = await o.source.openBlob(b.digest)
      const got = body ? await hashStream(body).catch((e: Error) => e) : null
      if (!got) problems.push(`blob ${b.digest}: missing from ${o.source.where()}`)
      else if (got instanceof Error) problems.push(`blob ${b.digest}: cannot be read (${got.message})`)
      else if (got.sha256 !== b.digest) problems.push(`blob ${b.digest}: content does not match its name (sha256 ${got.sha256})`)
      else if (got.size !== b.size) problems.push(`blob ${b.digest}: ${got.size} bytes, the manifest says ${b.size}`)
    }
    if (problems.length > 0 || !local) throw new BackupError(`snapshot ${where} does not verify, nothing restored:\n  ${problems.join('\n  ')}`)

    // verified: write the blobs (each hashed again on the way), then the database
    let written = 0
    try {
      // the data folder first, for its owner only (as svc serve makes it): the blobs' folders
      // would otherwise make it, with the umask's mode
      ensureDataDir(o.dataDir)
      const tmpDir = path.join(o.blobRoot, 'tmp')
      for (const b of manifest.blobs) {
        // into the disk store's own layout; a blob it already holds in either layout is kept
        // only when its bytes hash to its name: a damaged one is replaced (the current layout
        // is read first) and a damaged legacy copy removed
        const dst = path.join(o.blobRoot, localBlobRel(b.digest))
        const legacy = path.join(o.blobRoot, legacyBlobRel(b.digest))
        if (await holdsIntact(dst, b.digest)) continue
        if (!fs.existsSync(dst) && (await holdsIntact(legacy, b.digest))) continue
        await fs.promises.rm(legacy, { force: true })
        const body = await o.source.openBlob(b.digest)
        if (!body) throw new BackupError(`blob ${b.digest}: gone from ${o.source.where()} during the restore; svc.db not restored`)
        await atomicCopy(body, dst, tmpDir, b.digest, `blob ${b.digest}`)
        written++
      }
      // a WAL or shared-memory file of a replaced database would be replayed onto the restored one
      for (const side of ['svc.db-wal', 'svc.db-shm']) await fs.promises.rm(path.join(o.dataDir, side), { force: true })
      await atomicCopy(fs.createReadStream(local.file), target, o.dataDir, manifest.database.sha256, 'svc.db')
    } catch (e) {
      if (e instanceof BackupError || !isSystemError(e)) throw e
      // a full disk, a folder it may not make: where and why, and that the database is the old one
      throw new BackupError(`restore into ${o.dataDir} failed: ${ioFailure(e)}; svc.db was not restored`)
    }
    return { manifest, blobs: manifest.blobs.length, written }
  } finally {
    await local?.release()
  }
}
