import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import crypto from 'node:crypto'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'
import { DIGEST_RE } from '../storage/blob-store.js'
import { folderSnapshots } from '../util/snapshot-names.js'

/**
 * Where backups keep their snapshots (docs/operations/backups.md): a folder DIR, or a bucket
 * prefix s3://bucket/prefix (snapshot-s3.ts). Both hold the same layout:
 *   <name>/svc.db          the database, taken with SQLite's online backup API
 *   <name>/manifest.json   what the snapshot holds, with checksums; written last
 *   blobs/ab/cd/<sha256>   blobs, shared by every snapshot (content-addressed, immutable)
 * A snapshot is complete once its manifest is there. backup.ts takes, verifies and retains
 * snapshots through this interface only, so a folder and a bucket follow the same code.
 */
export interface SnapshotTarget {
  /** The root, or snapshot `name` in it, as printed (never credentials). */
  where(name?: string): string
  /** Runs `fn` as the one backup writing here: retention must not delete blobs another run counted as present. */
  locked<T>(fn: () => Promise<T>): Promise<T>
  /** Names of the complete snapshots, oldest first (their names sort by time). */
  snapshots(): Promise<string[]>
  /** An empty local folder in which snapshot `name` is built (its svc.db is copied there). */
  stage(name: string): Promise<string>
  /** Publishes the staged snapshot with this manifest: the database first, the manifest last. */
  commit(name: string, manifest: Manifest): Promise<void>
  /** Removes what stage() and a failed commit() left of snapshot `name`. */
  discard(name: string): Promise<void>
  deleteSnapshot(name: string): Promise<void>
  /** Every blob held under blobs/, with its size (temp files left out). */
  listBlobs(): AsyncIterable<{ digest: string; size: number }>
  /**
   * Stores the blob `digest` from `body`, hashing it on the way: the whole blob lands under
   * its name, or (bytes that do not hash to `digest`, a failure) nothing does and the error
   * names `what`. Returns its size.
   */
  putBlob(digest: string, body: NodeJS.ReadableStream, what: string): Promise<number>
  deleteBlob(digest: string): Promise<void>
  /** The text of snapshot `name`'s manifest; a BackupError naming it when it cannot be read. */
  readManifest(name: string): Promise<string>
  /**
   * Snapshot `name`'s svc.db as a local file (a folder's own; a bucket's downloaded into a
   * temp folder, which `release` removes), or null when the snapshot has none.
   */
  localDatabase(name: string): Promise<{ file: string; release(): Promise<void> } | null>
  /** A blob's bytes, or null when the target does not hold it. */
  openBlob(digest: string): Promise<NodeJS.ReadableStream | null>
  close(): Promise<void>
}

export const MANIFEST_FORMAT = 1
export const LOCK = '.backup.lock'

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

/** A blob under a target's blobs/: ab/cd/<sha256> (the snapshot format, whatever the live store's layout). */
export const blobRel = (digest: string) => path.join(digest.slice(0, 2), digest.slice(2, 4), digest)

export async function hashStream(source: NodeJS.ReadableStream): Promise<{ sha256: string; size: number }> {
  const hash = crypto.createHash('sha256')
  let size = 0
  for await (const chunk of source as AsyncIterable<Buffer>) {
    hash.update(chunk)
    size += chunk.length
  }
  return { sha256: hash.digest('hex'), size }
}

export const sha256File = (file: string) => hashStream(fs.createReadStream(file))

export async function fsyncPath(p: string): Promise<void> {
  const h = await fsp.open(p, 'r')
  try {
    await h.sync()
  } finally {
    await h.close()
  }
}

/** Whether a process of this machine runs (EPERM: it does, as another user). */
export function pidAlive(pid: number): boolean {
  if (!(pid > 0)) return false
  try {
    return process.kill(pid, 0)
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Streams `source` into `target` through a temp file in `tmpDir` (fsync, rename, fsync of the
 * directory): `target` holds either nothing or all the bytes. The bytes are hashed on the way
 * and must hash to `expect` (a blob's name), or nothing is renamed and the error names it.
 */
export async function atomicCopy(source: NodeJS.ReadableStream, target: string, tmpDir: string, expect: string | null, what: string): Promise<number> {
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

/** One backup at a time per DIR (a lock file holding the pid; one left by a dead process is taken over). */
async function withLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(dir, LOCK)
  try {
    await fsp.writeFile(lock, String(process.pid), { flag: 'wx' })
  } catch {
    const pid = Number(await fsp.readFile(lock, 'utf8').catch(() => ''))
    if (pidAlive(pid)) throw new BackupError(`another backup (pid ${pid}) is writing to ${dir}`)
    // left by a backup that died: take it over
    await fsp.writeFile(lock, String(process.pid))
  }
  try {
    return await fn()
  } finally {
    await fsp.unlink(lock).catch(() => {})
  }
}

/**
 * A folder target. A snapshot is built in DIR/<name>.partial and renamed to DIR/<name> once
 * its database and manifest are written and synced; blobs are renamed into DIR/blobs whole.
 */
export function folderTarget(dir: string): SnapshotTarget {
  const blobRoot = path.join(dir, 'blobs')
  const partial = (name: string) => path.join(dir, `${name}.partial`)
  return {
    where: (name) => (name === undefined ? dir : path.join(dir, name)),

    async locked(fn) {
      await fsp.mkdir(dir, { recursive: true })
      return withLock(dir, fn)
    },

    snapshots: () => folderSnapshots(dir),

    async stage(name) {
      await fsp.rm(partial(name), { recursive: true, force: true })
      await fsp.mkdir(partial(name), { recursive: true })
      return partial(name)
    },

    async commit(name, manifest) {
      const p = partial(name)
      await fsp.writeFile(path.join(p, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`)
      await fsyncPath(path.join(p, 'manifest.json'))
      await fsyncPath(path.join(p, 'svc.db'))
      await fsp.rename(p, path.join(dir, name))
      await fsyncPath(dir)
    },

    async discard(name) {
      await fsp.rm(partial(name), { recursive: true, force: true })
    },

    async deleteSnapshot(name) {
      await fsp.rm(path.join(dir, name), { recursive: true, force: true })
    },

    async *listBlobs() {
      for (const a of await fsp.readdir(blobRoot).catch(() => [] as string[])) {
        if (!/^[0-9a-f]{2}$/.test(a)) continue
        for (const b of await fsp.readdir(path.join(blobRoot, a)).catch(() => [] as string[])) {
          for (const name of await fsp.readdir(path.join(blobRoot, a, b)).catch(() => [] as string[])) {
            if (!DIGEST_RE.test(name) || name.slice(0, 2) !== a || name.slice(2, 4) !== b) continue
            const st = await fsp.stat(path.join(blobRoot, a, b, name)).catch(() => null)
            if (st?.isFile()) yield { digest: name, size: st.size }
          }
        }
      }
    },

    putBlob: (digest, body, what) => atomicCopy(body, path.join(blobRoot, blobRel(digest)), path.join(blobRoot, 'tmp'), digest, what),

    async deleteBlob(digest) {
      await fsp.unlink(path.join(blobRoot, blobRel(digest))).catch(() => {})
    },

    async readManifest(name) {
      const file = path.join(dir, name, 'manifest.json')
      try {
        return await fsp.readFile(file, 'utf8')
      } catch (e) {
        throw new BackupError(`cannot read ${file}: ${(e as Error).message}`)
      }
    },

    async localDatabase(name) {
      const file = path.join(dir, name, 'svc.db')
      return fs.existsSync(file) ? { file, release: async () => {} } : null
    },

    async openBlob(digest) {
      const h = await fsp.open(path.join(blobRoot, blobRel(digest)), 'r').catch(() => null)
      return h ? h.createReadStream() : null
    },

    async close() {},
  }
}
