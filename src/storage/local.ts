import fs from 'node:fs'
import { execFile } from 'node:child_process'
import fsp from 'node:fs/promises'
import path from 'node:path'
import crypto from 'node:crypto'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { AppError } from '../errors/app-error.js'
import { DIGEST_RE, type BlobStore, type PutOptions, type StoredBlob } from './blob-store.js'

/** Where the disk driver writes a blob, below its root: `ab/<sha256>` (256 folders in all). */
export const localBlobRel = (digest: string): string => path.join(digest.slice(0, 2), digest)
/**
 * Where stores made before 2026-11-27 wrote blobs: `ab/cd/<sha256>`. Still read, listed and
 * deleted there, never written: a first deploy of 20,000 files made 17,000 folders.
 */
export const legacyBlobRel = (digest: string): string => path.join(digest.slice(0, 2), digest.slice(2, 4), digest)

/**
 * Batches that write up to this many new blobs (those already stored are not written) are made
 * durable file by file (an fdatasync per new file, an fsync per folder, on the thread pool)
 * rather than with two syncfs(2) through `sync -f`, whose fork/exec runs on the event loop;
 * larger ones keep syncfs, which beats thousands of fsyncs
 * (docs/benchmarks/2026-12-05-small-batch-sync.md).
 */
export const SMALL_BATCH = 64
/** Syncs of a small batch in flight at once: half the thread pool's default four threads. */
const SYNC_CONCURRENCY = 2

export interface LocalBlobStoreOptions {
  /** syncfs(2) of the filesystem holding `dir`; false when not available. Default: `sync -f`. */
  syncFs?: (dir: string) => Promise<boolean>
  /** fdatasync of a new blob's file, or fsync of a folder, on the thread pool. */
  syncFd?: (fd: number, what: 'file' | 'dir') => Promise<void>
}

const spawnSyncFs = (dir: string): Promise<boolean> => new Promise((resolve) => execFile('sync', ['-f', dir], (err) => resolve(!err)))

const syncFdDefault = (fd: number, what: 'file' | 'dir'): Promise<void> =>
  new Promise((resolve, reject) => (what === 'file' ? fs.fdatasync : fs.fsync)(fd, (e) => (e ? reject(e) : resolve())))

/** Runs fn on every item, at most `n` at a time; rejects with the first failure once all ended. */
async function eachBounded<T>(items: readonly T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failed = false
  const results = await Promise.allSettled(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (!failed && next < items.length)
        await fn(items[next++]).catch((e: unknown) => {
          failed = true
          throw e
        })
    }),
  )
  for (const r of results) if (r.status === 'rejected') throw r.reason
}

/**
 * Local-disk driver: blobs at ROOT/ab/<sha256> (or the legacy ROOT/ab/cd/<sha256>). A write
 * goes to ROOT/tmp, is fsynced, renamed into place and the directory fsynced, so a crash
 * leaves either no blob or the whole blob, never a torn one. A blob is in one layout only: a
 * put of a blob that either holds keeps that file. A put or batch is acknowledged only once
 * its bytes and names (the blob's, and a new folder's) are on disk.
 */
export function createLocalBlobStore(root: string, opts: LocalBlobStoreOptions = {}): BlobStore {
  const tmpDir = path.join(root, 'tmp')
  fs.mkdirSync(tmpDir, { recursive: true })

  // joined by hand: the public host asks for a blob's path on every open-file cache miss
  const base = path.resolve(root) + path.sep
  const blobPath = (digest: string): string => {
    if (!DIGEST_RE.test(digest)) throw new Error('invalid digest')
    return `${base}${digest.slice(0, 2)}${path.sep}${digest}`
  }
  const legacyPath = (digest: string): string => path.join(root, legacyBlobRel(digest))
  /** The blob's file and its stat, in the current layout first; null when neither holds it. */
  const statOf = async (digest: string): Promise<{ path: string; st: fs.Stats } | null> => {
    for (const p of [blobPath(digest), legacyPath(digest)]) {
      try {
        return { path: p, st: await fsp.stat(p) }
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
      }
    }
    return null
  }
  const fileOf = async (digest: string): Promise<string> => {
    const found = await statOf(digest).catch(() => null)
    return found ? found.path : storageError(new Error('missing blob'))
  }
  // the 256 folders of the layout, made once each per process (nothing removes them)
  const madeDirs = new Set<string>()
  // folders made, and how many of them an fsync of the root that began after them covered:
  // a folder's name (so a blob's name in it) is on disk only then
  let foldersMade = 0
  let foldersSynced = 0
  const ensureDir = (dir: string): void => {
    if (madeDirs.has(dir)) return
    if (fs.mkdirSync(dir, { recursive: true }) !== undefined) foldersMade++
    madeDirs.add(dir)
  }

  const syncFd = opts.syncFd ?? syncFdDefault
  /** fsync of a folder through syncFd: its names (renames, new folders) reach the disk. */
  const syncDir = async (dir: string): Promise<void> => {
    const fd = fs.openSync(dir, 'r')
    try {
      await syncFd(fd, 'dir')
    } finally {
      fs.closeSync(fd)
    }
  }

  /** fsyncs these folders, and the root while a folder made is not known to be on disk. */
  const syncNames = async (dirs: Iterable<string>): Promise<void> => {
    const made = foldersMade
    await eachBounded(made > foldersSynced ? [...dirs, root] : [...dirs], SYNC_CONCURRENCY, syncDir)
    foldersSynced = Math.max(foldersSynced, made)
  }

  const fsyncDir = async (dir: string) => {
    const h = await fsp.open(dir, 'r')
    try {
      await h.sync()
    } finally {
      await h.close()
    }
  }

  // syncfs(2) of the store's filesystem through coreutils' `sync -f`; false once it failed or
  // is not there (not Linux, old coreutils): large batches then fall back to one put (and its
  // fsyncs) per blob
  const runSyncFs = opts.syncFs ?? spawnSyncFs
  let syncfsOk: boolean | null = null
  const syncFs = async (): Promise<boolean> => {
    if (syncfsOk === false) return false
    syncfsOk = await runSyncFs(tmpDir).catch(() => false)
    return syncfsOk
  }

  /** Refreshes a stored blob's time; false when its file is gone (a sweep took it aside). */
  const touch = async (p: string): Promise<boolean> => {
    const now = new Date()
    return fsp.utimes(p, now, now).then(
      () => true,
      (e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? false : Promise.reject(e)),
    )
  }
  const touchSync = (p: string, now: Date): boolean => {
    try {
      fs.utimesSync(p, now, now)
      return true
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false
      throw e
    }
  }
  const SWEPT = /^swept-([0-9a-f]{64})-/

  const storageError = (e: unknown): never => {
    if (e instanceof AppError) throw e
    throw new AppError('STORAGE_UNAVAILABLE', { extra: {} })
  }

  return {
    kind: 'local',
    async put(body: Readable | Buffer, opts: PutOptions = {}): Promise<StoredBlob> {
      const tmp = path.join(tmpDir, `${Date.now()}-${crypto.randomBytes(8).toString('hex')}`)
      const hash = crypto.createHash('sha256')
      let size = 0
      const max = opts.maxBytes ?? Infinity
      // (set in a callback: the cast keeps TypeScript from narrowing it to null for good)
      let limitError = null as Error | null
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          size += chunk.length
          if (size > max) {
            limitError = opts.tooLarge ? opts.tooLarge(max) : new AppError('FILE_TOO_LARGE', { params: { limit: max } })
            cb(limitError)
            return
          }
          hash.update(chunk)
          cb(null, chunk)
        },
      })
      try {
        const source = Buffer.isBuffer(body) ? Readable.from([body]) : body
        // the temp file exists before any byte flows, so the unlink below always finds it (CI
        // once found a temp file left after a refused oversized body; the cause is not known:
        // a standalone test of the old code, 300 refused pipelines, left none)
        const out = await fsp.open(tmp, 'wx', 0o640)
        await pipeline(source, counter, out.createWriteStream())
        // the bytes reach the disk before the rename makes them visible under their digest
        const h = await fsp.open(tmp, 'r')
        try {
          await h.sync()
        } finally {
          await h.close()
        }
        const digest = hash.digest('hex')
        const target = blobPath(digest)
        // already stored: keep the old one, refresh its time so a sweep in progress spares it;
        // a sweep that took the file aside meanwhile (ENOENT) gets this put's own copy
        const held = await statOf(digest)
        if (held && (await touch(held.path))) {
          await fsp.unlink(tmp)
        } else {
          ensureDir(path.dirname(target))
          await fsp.rename(tmp, target)
          await syncNames([path.dirname(target)])
        }
        return { digest, size }
      } catch (e) {
        await fsp.unlink(tmp).catch(() => {})
        if (Buffer.isBuffer(body) === false) body.resume?.()
        // the caller's own error for an oversized body is thrown as given (PutOptions.tooLarge)
        if (limitError) throw limitError
        return storageError(e)
      }
    },
    async putBatch(bodies) {
      // temp files first, their bytes made durable, renames, then the names: a crash anywhere
      // leaves temp files (cleanTemp) or whole blobs, never a torn one, and the batch is
      // acknowledged only once bytes and names are on disk. A batch of at most SMALL_BATCH new
      // blobs syncs each new file and each folder it touched (no process spawned); one with
      // more takes one filesystem sync (`sync -f`) for the bytes and one for the names. A blob
      // already stored is not written again, nor counted: its time is refreshed (so a sweep in
      // progress spares it), as put does. Small files take synchronous calls, in slices with a
      // yield between: a threadpool round trip per call costs more than the call itself.
      const out: StoredBlob[] = []
      const staged: Array<{ tmp: string; digest: string; fd: number | null }> = []
      // new blobs keep their descriptors open for their fdatasync until one more than
      // SMALL_BATCH is staged: then all are closed and the batch takes syncfs
      let small = true
      const slices = async (n: number, fn: (i: number) => void) => {
        for (let i = 0; i < n; i++) {
          fn(i)
          if (i % 64 === 63) await new Promise((r) => setImmediate(r))
        }
      }
      const heldPath = (digest: string) => {
        const target = blobPath(digest)
        return fs.existsSync(target) ? target : fs.existsSync(legacyPath(digest)) ? legacyPath(digest) : null
      }
      const closeAll = () => {
        for (const t of staged)
          if (t.fd !== null) {
            fs.closeSync(t.fd)
            t.fd = null
          }
      }
      try {
        const now = new Date()
        await slices(bodies.length, (i) => {
          const b = bodies[i]
          const digest = crypto.createHash('sha256').update(b).digest('hex')
          out.push({ digest, size: b.length })
          const held = heldPath(digest)
          if (held && touchSync(held, now)) return
          const tmp = path.join(tmpDir, `${Date.now()}-${crypto.randomBytes(8).toString('hex')}`)
          // a small batch keeps the descriptor open for its fdatasync
          const fd = fs.openSync(tmp, 'wx', 0o640)
          staged.push({ tmp, digest, fd })
          fs.writeFileSync(fd, b)
          if (small && staged.length > SMALL_BATCH) {
            small = false
            closeAll()
          } else if (!small) {
            fs.closeSync(fd)
            staged[staged.length - 1].fd = null
          }
        })
        if (staged.length === 0) return out
        if (small) {
          await eachBounded(staged, SYNC_CONCURRENCY, (t) => syncFd(t.fd!, 'file'))
          closeAll()
          // the folders whose names changed: each blob's, and the root while a folder made
          // (by this batch or another) is not known to be on disk
          const dirs = new Set<string>()
          for (const t of staged) {
            const target = blobPath(t.digest)
            ensureDir(path.dirname(target))
            fs.renameSync(t.tmp, target)
            dirs.add(path.dirname(target))
          }
          await syncNames(dirs)
          return out
        }
        if (!(await syncFs())) {
          await Promise.all(staged.map((t) => fsp.unlink(t.tmp).catch(() => {})))
          const each: StoredBlob[] = []
          for (const b of bodies) each.push(await this.put(b))
          return each
        }
        await slices(staged.length, (i) => {
          // a request that stored the same blob meanwhile wrote the same bytes: replacing its
          // file (one atomic rename) changes nothing a reader can see
          const target = blobPath(staged[i].digest)
          ensureDir(path.dirname(target))
          fs.renameSync(staged[i].tmp, target)
        })
        if (!(await syncFs())) throw new Error('sync -f failed')
        return out
      } catch (e) {
        closeAll()
        await Promise.all(staged.map((t) => fsp.unlink(t.tmp).catch(() => {})))
        return storageError(e)
      }
    },
    async get(digest, range) {
      const p = await fileOf(digest)
      return fs.createReadStream(p, range ? { start: range.start, end: range.end } : {})
    },
    localPathNow: blobPath,
    async localFile(digest) {
      const found = await statOf(digest).catch(() => null)
      return found ? { path: found.path, size: found.st.size } : storageError(new Error('missing blob'))
    },
    async read(digest) {
      return fsp.readFile(await fileOf(digest)).catch(storageError)
    },
    async exists(digest) {
      blobPath(digest) // an invalid digest is refused, not reported missing
      return (await statOf(digest).catch(() => null)) !== null
    },
    async modifiedMs(digest) {
      return statOf(digest).then((found) => (found ? found.st.mtimeMs : null), storageError)
    },
    async delete(digest, ifNotModifiedAfter) {
      let deleted = false
      for (const p of [blobPath(digest), legacyPath(digest)]) {
        if (ifNotModifiedAfter === undefined) {
          await fsp.unlink(p).then(
            () => (deleted = true),
            (e: NodeJS.ErrnoException) => {
              if (e.code !== 'ENOENT') throw e
            },
          )
          continue
        }
        // the file is taken aside (one rename) before its time is read: a put of the same bytes
        // touched it before (its time is recent: it goes back) or finds no file and stores its
        // own. A crash in between leaves tmp/swept-*, which cleanTemp puts back.
        const aside = path.join(tmpDir, `swept-${digest}-${crypto.randomBytes(6).toString('hex')}`)
        try {
          await fsp.rename(p, aside)
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue
          throw e
        }
        if ((await fsp.stat(aside)).mtimeMs > ifNotModifiedAfter) {
          // (a put meanwhile stored the same bytes there: replacing them changes nothing)
          await fsp.rename(aside, p)
          await fsyncDir(path.dirname(p))
        } else {
          await fsp.unlink(aside)
          deleted = true
        }
      }
      return deleted
    },
    async *list() {
      for (const a of await fsp.readdir(root).catch(() => [] as string[])) {
        if (!/^[0-9a-f]{2}$/.test(a)) continue
        for (const name of await fsp.readdir(path.join(root, a)).catch(() => [] as string[])) {
          // ab/<sha256>, or a legacy ab/cd/ folder of blobs
          const files = DIGEST_RE.test(name)
            ? [[name, path.join(root, a, name)]]
            : /^[0-9a-f]{2}$/.test(name)
              ? (await fsp.readdir(path.join(root, a, name)).catch(() => [] as string[]))
                  .filter((n) => DIGEST_RE.test(n))
                  .map((n) => [n, path.join(root, a, name, n)])
              : []
          for (const [digest, p] of files) {
            const st = await fsp.stat(p).catch(() => null)
            if (st) yield { digest, modifiedMs: st.mtimeMs }
          }
        }
      }
    },
    async cleanTemp(olderThanMs) {
      let n = 0
      const cutoff = Date.now() - olderThanMs
      for (const name of await fsp.readdir(tmpDir).catch(() => [] as string[])) {
        const p = path.join(tmpDir, name)
        // a blob a sweep took aside and did not finish with (a crash): back in place, the
        // next sweep decides again
        const swept = SWEPT.exec(name)
        if (swept) {
          const target = blobPath(swept[1])
          ensureDir(path.dirname(target))
          await fsp.rename(p, target).then(
            () => fsyncDir(path.dirname(target)),
            () => {},
          )
          continue
        }
        const st = await fsp.stat(p).catch(() => null)
        if (st && st.mtimeMs <= cutoff) {
          await fsp.unlink(p).catch(() => {})
          n++
        }
      }
      return n
    },
    async ping() {
      await fsp.access(tmpDir, fs.constants.W_OK)
    },
    async close() {},
  }
}
