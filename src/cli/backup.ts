import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import crypto from 'node:crypto'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'
import SQLite from 'better-sqlite3'
import type { BlobStore } from '../storage/blob-store.js'
import { DIGEST_RE } from '../storage/blob-store.js'
import { legacyBlobRel, localBlobRel } from '../storage/local.js'
import type { BlobColumn } from '../storage/sweeper.js'
import { copySqlite } from '../db/snapshot.js'

/**
 * Operators' backup and restore of one SQLite instance (docs/operations/backups.md).
 *
 * Layout of a backup folder DIR:
 *   DIR/<timestamp>/svc.db          the database, taken with SQLite's online backup API
 *   DIR/<timestamp>/manifest.json   what the snapshot holds, with checksums
 *   DIR/blobs/ab/cd/<sha256>        blobs, shared by every snapshot (content-addressed, immutable)
 * A snapshot folder appears under its final name only once its database, its blobs and its
 * manifest are all in place (it is built as DIR/<timestamp>.partial and renamed).
 */

export const MANIFEST_FORMAT = 1
const SNAPSHOT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/
const LOCK = '.backup.lock'

export interface Manifest {
  format: number
  created_at: string
  service_version: string
  engine: 'sqlite'
  migrations: string[]
  database: { file: 'svc.db'; sha256: string; size: number }
  /** Every blob some row of the snapshot references, stored in ../blobs. */
  blobs: Array<{ digest: string; size: number }>
}

/** A failure to report to the operator as is (exit 1), no stack. */
export class BackupError extends Error {}

/** A blob in a snapshot folder: DIR/blobs/ab/cd/<sha256> (the snapshot format, whatever the store's layout). */
const blobRel = (digest: string) => path.join(digest.slice(0, 2), digest.slice(2, 4), digest)

async function sha256File(file: string): Promise<{ sha256: string; size: number }> {
  const hash = crypto.createHash('sha256')
  let size = 0
  for await (const chunk of fs.createReadStream(file) as AsyncIterable<Buffer>) {
    hash.update(chunk)
    size += chunk.length
  }
  return { sha256: hash.digest('hex'), size }
}

async function fsyncPath(p: string): Promise<void> {
  const h = await fsp.open(p, 'r')
  try {
    await h.sync()
  } finally {
    await h.close()
  }
}

/**
 * Streams `source` into `target` through a temp file in `tmpDir` (fsync, rename, fsync of the
 * directory): `target` holds either nothing or all the bytes. The bytes are hashed on the way
 * and must hash to `expect` (a blob's name), or nothing is renamed and the error names it.
 */
async function atomicCopy(source: NodeJS.ReadableStream, target: string, tmpDir: string, expect: string | null, what: string): Promise<number> {
  await fsp.mkdir(tmpDir, { recursive: true })
  const tmp = path.join(tmpDir, `${Date.now()}-${crypto.randomBytes(8).toString('hex')}`)
  const hash = crypto.createHash('sha256')
  let size = 0
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk)
      size += chunk.length
      cb(null, chunk)
    },
  })
  try {
    await pipeline(source, tap, fs.createWriteStream(tmp, { flags: 'wx', mode: 0o640 }))
    const got = hash.digest('hex')
    if (expect !== null && got !== expect) throw new BackupError(`${what}: content does not match (sha256 ${got})`)
    await fsyncPath(tmp)
    await fsp.mkdir(path.dirname(target), { recursive: true })
    await fsp.rename(tmp, target)
    await fsyncPath(path.dirname(target))
    return size
  } catch (e) {
    await fsp.unlink(tmp).catch(() => {})
    throw e
  }
}

/** The service version (package.json of the checkout or install this code runs from). */
function serviceVersion(): string {
  let dir = path.dirname(new URL(import.meta.url).pathname)
  for (let i = 0; i < 5; i++) {
    const p = path.join(dir, 'package.json')
    if (fs.existsSync(p)) {
      const pkg = JSON.parse(fs.readFileSync(p, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'svc' && pkg.version) return pkg.version
    }
    dir = path.dirname(dir)
  }
  return 'unknown'
}

/** One backup at a time per DIR: retention must not delete blobs another run just counted as present. */
async function withLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(dir, LOCK)
  try {
    await fsp.writeFile(lock, String(process.pid), { flag: 'wx' })
  } catch {
    const pid = Number(await fsp.readFile(lock, 'utf8').catch(() => ''))
    let alive = false
    try {
      if (pid > 0) alive = process.kill(pid, 0)
    } catch {}
    if (alive) throw new BackupError(`another backup (pid ${pid}) is writing to ${dir}`)
    // left by a backup that died: take it over
    await fsp.writeFile(lock, String(process.pid))
  }
  try {
    return await fn()
  } finally {
    await fsp.unlink(lock).catch(() => {})
  }
}

export interface BackupOptions {
  /** DATA_DIR: its svc.db is the database backed up. */
  dataDir: string
  /** The live blob store (local): referenced blobs are copied from it. */
  blobs: BlobStore
  blobColumns: readonly BlobColumn[]
  dest: string
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

/**
 * Takes a snapshot while the server runs. Order (the invariant that makes it consistent): the
 * database first, in one read transaction of the online backup API; then every blob the
 * snapshot's rows reference, read from the snapshot itself. Writers store a blob before the
 * row that points to it, so each such blob was in the live store when the snapshot was taken;
 * the sweeper spares it for its grace period, so it is normally still there. One that is not
 * (its row deleted since and the sweeper ran) fails the backup with its digest.
 */
export async function backupSqlite(o: BackupOptions): Promise<BackupResult> {
  const live = path.join(o.dataDir, 'svc.db')
  if (!fs.existsSync(live)) throw new BackupError(`no database at ${live}`)
  await fsp.mkdir(o.dest, { recursive: true })
  return withLock(o.dest, async () => {
    const now = o.now ?? new Date()
    const name = now.toISOString().replace(/[:.]/g, '-')
    const final = path.join(o.dest, name)
    if (fs.existsSync(final)) throw new BackupError(`snapshot ${final} already exists`)
    const partial = `${final}.partial`
    await fsp.rm(partial, { recursive: true, force: true })
    await fsp.mkdir(partial)
    try {
      // 1. the database, as a standalone copy
      const dbFile = path.join(partial, 'svc.db')
      await copySqlite(live, dbFile)
      const snap = new SQLite(dbFile, { fileMustExist: true })
      let migrations: string[]
      const digests = new Set<string>()
      try {
        const check = snap.pragma('integrity_check', { simple: true })
        if (check !== 'ok') throw new BackupError(`the database copy fails its integrity check: ${String(check)}`)
        migrations = (snap.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>).map((r) => r.name)
        // 2. the blobs the snapshot references: the sweeper's own column list
        for (const { table, column } of o.blobColumns) {
          const q = `select distinct "${column.replace(/"/g, '""')}" as d from "${table.replace(/"/g, '""')}"`
          for (const r of snap.prepare(q).all() as Array<{ d: string | null }>) if (r.d) digests.add(r.d)
        }
      } finally {
        snap.close()
      }
      const db = await sha256File(dbFile)

      const blobRoot = path.join(o.dest, 'blobs')
      const tmpDir = path.join(blobRoot, 'tmp')
      const list: Manifest['blobs'] = []
      let copied = 0
      let copiedBytes = 0
      for (const digest of [...digests].sort()) {
        if (!DIGEST_RE.test(digest)) throw new BackupError(`the database references a malformed blob digest "${digest}"`)
        const target = path.join(blobRoot, blobRel(digest))
        const st = await fsp.stat(target).catch(() => null)
        if (st) {
          // already in the backup: blobs are immutable and renamed into place whole
          list.push({ digest, size: st.size })
          continue
        }
        if (!(await o.blobs.exists(digest))) throw new BackupError(`blob ${digest} is referenced by the database but missing from the live store`)
        const size = await atomicCopy(await o.blobs.get(digest), target, tmpDir, digest, `blob ${digest} in the live store`)
        list.push({ digest, size })
        copied++
        copiedBytes += size
      }

      // 3. the manifest, then the folder under its final name
      const manifest: Manifest = {
        format: MANIFEST_FORMAT,
        created_at: now.toISOString(),
        service_version: serviceVersion(),
        engine: 'sqlite',
        migrations,
        database: { file: 'svc.db', sha256: db.sha256, size: db.size },
        blobs: list,
      }
      await fsp.writeFile(path.join(partial, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`)
      await fsyncPath(path.join(partial, 'manifest.json'))
      await fsyncPath(dbFile)
      await fsp.rename(partial, final)
      await fsyncPath(o.dest)

      const { removedSnapshots, removedBlobs } = o.keep !== undefined ? await retain(o.dest, o.keep) : { removedSnapshots: [], removedBlobs: 0 }
      return { snapshot: final, manifest, copied, copiedBytes, removedSnapshots, removedBlobs }
    } catch (e) {
      await fsp.rm(partial, { recursive: true, force: true }).catch(() => {})
      throw e
    }
  })
}

/** Complete snapshot folders of DIR, oldest first (their names sort by time). */
async function snapshots(dest: string): Promise<string[]> {
  const names = await fsp.readdir(dest).catch(() => [] as string[])
  return names.filter((n) => SNAPSHOT_RE.test(n) && fs.existsSync(path.join(dest, n, 'manifest.json'))).sort()
}

/**
 * Retention: deletes all but the newest `keep` snapshots, then the blobs of DIR/blobs that no
 * kept snapshot's manifest lists. Runs under the DIR lock, after the new snapshot is complete.
 */
async function retain(dest: string, keep: number): Promise<{ removedSnapshots: string[]; removedBlobs: number }> {
  const all = await snapshots(dest)
  const drop = all.slice(0, Math.max(0, all.length - keep))
  for (const n of drop) await fsp.rm(path.join(dest, n), { recursive: true, force: true })
  const kept = new Set<string>()
  for (const n of all.slice(drop.length)) {
    const m = JSON.parse(await fsp.readFile(path.join(dest, n, 'manifest.json'), 'utf8')) as Manifest
    for (const b of m.blobs) kept.add(b.digest)
  }
  let removedBlobs = 0
  const root = path.join(dest, 'blobs')
  for (const a of await fsp.readdir(root).catch(() => [] as string[])) {
    if (!/^[0-9a-f]{2}$/.test(a)) continue
    for (const b of await fsp.readdir(path.join(root, a)).catch(() => [] as string[])) {
      for (const name of await fsp.readdir(path.join(root, a, b)).catch(() => [] as string[])) {
        if (!DIGEST_RE.test(name) || kept.has(name)) continue
        await fsp.unlink(path.join(root, a, b, name))
        removedBlobs++
      }
    }
  }
  return { removedSnapshots: drop, removedBlobs }
}

export interface RestoreOptions {
  snapshot: string
  /** Folder that receives svc.db. */
  dataDir: string
  /** Folder that receives the blobs (DATA_DIR/blobs, or STORAGE_URL's file:// path). */
  blobRoot: string
  /** The tables and columns holding blob digests: every one the database holds must be in the snapshot. */
  blobColumns: readonly BlobColumn[]
  force?: boolean
}

/**
 * Restores a snapshot. Verification comes first and writes nothing: the manifest, the
 * database file's SHA-256 and size, every blob the database references listed by the
 * manifest, and each blob's SHA-256 recomputed from its bytes. Then
 * the blobs, then svc.db last (each temp + rename), so the database never points to a blob
 * that is not there yet.
 */
export async function restoreSqlite(o: RestoreOptions): Promise<{ manifest: Manifest; blobs: number; written: number }> {
  const manifestFile = path.join(o.snapshot, 'manifest.json')
  let manifest: Manifest
  try {
    manifest = JSON.parse(await fsp.readFile(manifestFile, 'utf8')) as Manifest
  } catch (e) {
    throw new BackupError(`cannot read ${manifestFile}: ${(e as Error).message}`)
  }
  if (manifest.format !== MANIFEST_FORMAT || manifest.engine !== 'sqlite' || !manifest.database || !Array.isArray(manifest.blobs)) {
    throw new BackupError(`${manifestFile}: not a format ${MANIFEST_FORMAT} SQLite snapshot manifest`)
  }
  const target = path.join(o.dataDir, 'svc.db')
  if (fs.existsSync(target) && !o.force) throw new BackupError(`${target} exists; restore into an empty data dir, or pass --force to replace it`)

  const problems: string[] = []
  const dbFile = path.join(o.snapshot, 'svc.db')
  const db = await sha256File(dbFile).catch(() => null)
  if (!db) problems.push(`svc.db: missing from ${o.snapshot}`)
  else if (db.sha256 !== manifest.database.sha256 || db.size !== manifest.database.size) {
    problems.push(`svc.db: sha256 ${db.sha256} (${db.size} bytes) does not match the manifest's ${manifest.database.sha256} (${manifest.database.size} bytes)`)
  }
  // the manifest cannot be trusted to list what the database needs: a blob the database
  // references and the manifest omits would be a restored row pointing at nothing
  if (db && db.sha256 === manifest.database.sha256) {
    const listed = new Set(manifest.blobs.map((b) => b.digest))
    let snap: SQLite.Database | null = null
    try {
      snap = new SQLite(dbFile, { readonly: true, fileMustExist: true })
      for (const { table, column } of o.blobColumns) {
        const q = `select distinct "${column.replace(/"/g, '""')}" as d from "${table.replace(/"/g, '""')}"`
        for (const r of snap.prepare(q).all() as Array<{ d: string | null }>) {
          if (r.d && !listed.has(r.d)) problems.push(`blob ${r.d}: referenced by svc.db (${table}.${column}) but not in the manifest`)
        }
      }
    } catch (e) {
      problems.push(`svc.db: cannot be read (${(e as Error).message})`)
    } finally {
      snap?.close()
    }
  }
  const blobRoot = path.join(o.snapshot, '..', 'blobs')
  for (const b of manifest.blobs) {
    if (!DIGEST_RE.test(b.digest)) {
      problems.push(`blob "${b.digest}": not a digest`)
      continue
    }
    const got = await sha256File(path.join(blobRoot, blobRel(b.digest))).catch(() => null)
    if (!got) problems.push(`blob ${b.digest}: missing from ${blobRoot}`)
    else if (got.sha256 !== b.digest) problems.push(`blob ${b.digest}: content does not match its name (sha256 ${got.sha256})`)
    else if (got.size !== b.size) problems.push(`blob ${b.digest}: ${got.size} bytes, the manifest says ${b.size}`)
  }
  if (problems.length > 0) throw new BackupError(`snapshot ${o.snapshot} does not verify, nothing restored:\n  ${problems.join('\n  ')}`)

  // verified: write the blobs (each hashed again on the way), then the database
  let written = 0
  const tmpDir = path.join(o.blobRoot, 'tmp')
  for (const b of manifest.blobs) {
    // into the disk store's own layout; a blob it holds in either layout is kept
    const dst = path.join(o.blobRoot, localBlobRel(b.digest))
    if (fs.existsSync(dst) || fs.existsSync(path.join(o.blobRoot, legacyBlobRel(b.digest)))) continue
    await atomicCopy(fs.createReadStream(path.join(blobRoot, blobRel(b.digest))), dst, tmpDir, b.digest, `blob ${b.digest}`)
    written++
  }
  await fsp.mkdir(o.dataDir, { recursive: true })
  // a WAL or shared-memory file of a replaced database would be replayed onto the restored one
  for (const side of ['svc.db-wal', 'svc.db-shm']) await fsp.rm(path.join(o.dataDir, side), { force: true })
  await atomicCopy(fs.createReadStream(dbFile), target, o.dataDir, manifest.database.sha256, 'svc.db')
  return { manifest, blobs: manifest.blobs.length, written }
}
