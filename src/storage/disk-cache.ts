import fsp from 'node:fs/promises'
import path from 'node:path'
import crypto from 'node:crypto'
import type { Readable } from 'node:stream'
import { AppError } from '../errors/app-error.js'
import { DIGEST_RE, type BlobStore, type LocalBlobFile } from './blob-store.js'

/** What the cache reports, for metrics (the composition root wires them). */
export interface BlobCacheEvents {
  /** A lookup answered from disk (hit), fetched into the cache (miss), or sent to the store uncached (bypass). */
  lookup?(result: 'hit' | 'miss' | 'bypass'): void
  /** Files removed to stay under the size limit. */
  evicted?(files: number, bytes: number): void
  /** A fetched blob or a file found on disk did not match its digest (never served), or a fill failed. */
  failed?(reason: 'corrupt' | 'error'): void
  /** Bytes and files now held. */
  size?(bytes: number, files: number): void
}

export interface BlobCacheOptions {
  dir: string
  /** Most bytes the folder holds: cached files, downloads in progress and files being removed. */
  maxBytes: number
  /** Largest blob kept (default: a quarter of maxBytes); larger ones stream from the store. */
  maxEntryBytes?: number
  /** An eviction goes down to this share of maxBytes, so that not every fill evicts (0.9). */
  lowWater?: number
  /** How often a hit rewrites the file's time, which orders the LRU after a restart (60 s). */
  touchEveryMs?: number
  events?: BlobCacheEvents
}

/** The store with its disk cache in front; `cache` is for tests and metrics. */
export interface CachedBlobStore extends BlobStore {
  readonly cache: {
    readonly dir: string
    stats(): { bytes: number; files: number; reserved: number; unlinking: number }
  }
}

interface Entry {
  size: number
  /** False for files found at start until their bytes are hashed again (a crash may have torn them). */
  verified: boolean
  touchedMs: number
}

interface Fill {
  /** The entry, and the bytes when small (a read() of a miss needs not read the file back). */
  promise: Promise<{ entry: Entry; body: Buffer | null } | null>
  /** Set by delete(): the fill must not make its file visible. */
  cancelled: boolean
}

/** A fill keeps the bytes of blobs up to this size for the read() that asked for them. */
const KEEP_BYTES = 1024 * 1024

class NoRoom extends Error {}
class TooBig extends Error {}
/** The cache's own disk failed (full, read-only, I/O error): the blob is streamed from the store instead. */
class DiskError extends Error {}
const onDisk = <T>(p: Promise<T>): Promise<T> =>
  p.catch((e: unknown) => {
    throw new DiskError(String(e))
  })

const unavailable = (e: unknown): never => {
  if (e instanceof AppError) throw e
  throw new AppError('STORAGE_UNAVAILABLE', { extra: {} })
}

/**
 * A bounded LRU cache on local disk in front of a remote blob store (S3), so that hot and
 * warm content is read, and sent with sendfile, from local files.
 *
 * Invariants:
 * - A file under its digest's name holds exactly those bytes: a fill writes to `tmp/`, hashes
 *   what it wrote, and renames only when the SHA-256 matches; a file found at start is hashed
 *   again on its first use (a crash may have left it torn, since fills skip fsync).
 * - The folder never holds more than maxBytes of files: bytes are reserved before they are
 *   written, and evicted files count until their unlink has finished. A blob that cannot get
 *   room (larger than maxEntryBytes, or the space is all taken by downloads in progress) is
 *   streamed from the store instead.
 * - Concurrent misses of one digest fetch it once.
 * - delete() removes the cached copy, and a fill in progress for that digest never installs.
 * - Order: least recently used first, in memory; a hit rewrites the file's mtime at most once
 *   a minute, and a restart rebuilds the order from those times.
 *
 * The folder belongs to one process: two sharing it each keep their own limit.
 */
export async function createBlobCache(inner: BlobStore, o: BlobCacheOptions): Promise<CachedBlobStore> {
  const dir = path.resolve(o.dir)
  const tmpDir = path.join(dir, 'tmp')
  const maxBytes = o.maxBytes
  const maxEntryBytes = Math.min(o.maxEntryBytes ?? Math.floor(maxBytes / 4), maxBytes)
  const lowWaterBytes = Math.floor(maxBytes * (o.lowWater ?? 0.9))
  const touchEveryMs = o.touchEveryMs ?? 60_000
  const ev = o.events ?? {}

  /** LRU order: a Map iterates in insertion order, so the first entry is the least recently used. */
  const index = new Map<string, Entry>()
  const inflight = new Map<string, Fill>()
  const verifying = new Map<string, Promise<boolean>>()
  /** Digests found larger than maxEntryBytes: streamed without a fill attempt (bounded). */
  const tooBig = new Set<string>()
  let bytes = 0
  let reserved = 0
  let unlinking = 0
  let unlinks: Promise<void> = Promise.resolve()
  /** Subfolders known to exist. */
  const made = new Set<string>()
  /** Time updates in flight (close waits for them). */
  const touching = new Set<Promise<void>>()

  const fileOf = (digest: string): string => {
    if (!DIGEST_RE.test(digest)) throw new Error('invalid digest')
    return path.join(dir, digest.slice(0, 2), digest)
  }
  const reportSize = () => ev.size?.(bytes, index.size)

  // --- start: clear leftovers of downloads, rebuild the index from the files' times
  await fsp.mkdir(tmpDir, { recursive: true })
  for (const name of await fsp.readdir(tmpDir)) await fsp.rm(path.join(tmpDir, name), { force: true, recursive: true })
  const found: { digest: string; size: number; mtimeMs: number }[] = []
  for (const sub of await fsp.readdir(dir)) {
    if (!/^[0-9a-f]{2}$/.test(sub)) continue
    // (the stats of one subfolder at once: a start with 100,000 files should take seconds, not minutes)
    const names = await fsp.readdir(path.join(dir, sub)).catch(() => [] as string[])
    await Promise.all(
      names.map(async (name) => {
        const p = path.join(dir, sub, name)
        const st = await fsp.stat(p).catch(() => null)
        if (!st?.isFile()) return
        if (!DIGEST_RE.test(name) || name.slice(0, 2) !== sub) return fsp.rm(p, { force: true })
        found.push({ digest: name, size: st.size, mtimeMs: st.mtimeMs })
      }),
    )
  }
  found.sort((a, b) => a.mtimeMs - b.mtimeMs)
  for (const f of found) {
    index.set(f.digest, { size: f.size, verified: false, touchedMs: f.mtimeMs })
    bytes += f.size
  }

  /** Removes an entry and its file; its bytes count until the unlink is done. */
  const drop = (digest: string): Promise<void> => {
    const e = index.get(digest)
    if (e) {
      index.delete(digest)
      bytes -= e.size
      unlinking += e.size
      reportSize()
    }
    const size = e?.size ?? 0
    const done = fsp
      .rm(fileOf(digest), { force: true })
      .catch(() => {})
      .finally(() => {
        unlinking -= size
      })
    unlinks = Promise.all([unlinks, done]).then(() => {})
    return done
  }

  /** Evicts least recently used files until `want` more bytes fit under the low-water mark. */
  const evict = (want: number): Promise<void>[] => {
    const out: Promise<void>[] = []
    let freed = 0
    for (const [digest, e] of index) {
      // (files already being unlinked are as good as gone: reserve() waits for them)
      if (bytes + reserved + want <= lowWaterBytes) break
      freed += e.size
      out.push(drop(digest))
    }
    if (out.length > 0) ev.evicted?.(out.length, freed)
    return out
  }

  if (bytes > maxBytes) await Promise.all(evict(0))
  reportSize()

  /** Reserves n bytes of the folder for a download, evicting as needed; NoRoom if it cannot. */
  const reserve = async (n: number): Promise<void> => {
    for (;;) {
      if (bytes + reserved + unlinking + n <= maxBytes) {
        reserved += n
        return
      }
      const evicted = evict(n)
      if (evicted.length > 0) await Promise.all(evicted)
      else if (unlinking > 0) await unlinks
      else throw new NoRoom()
    }
  }

  const touch = (digest: string, e: Entry) => {
    // most recently used last
    index.delete(digest)
    index.set(digest, e)
    const now = Date.now()
    if (now - e.touchedMs >= touchEveryMs) {
      e.touchedMs = now
      const t = new Date(now)
      const p: Promise<void> = fsp
        .utimes(fileOf(digest), t, t)
        .catch(() => {})
        .finally(() => touching.delete(p))
      touching.add(p)
    }
  }

  /** Hashes a file found at start; a mismatch removes it. */
  const verify = (digest: string): Promise<boolean> => {
    let p = verifying.get(digest)
    if (!p) {
      p = (async () => {
        const hash = crypto.createHash('sha256')
        let ok: boolean
        try {
          const h = await fsp.open(fileOf(digest), 'r')
          try {
            for await (const chunk of h.createReadStream({ autoClose: false })) hash.update(chunk as Buffer)
          } finally {
            await h.close()
          }
          ok = hash.digest('hex') === digest
        } catch {
          ok = false
        }
        const e = index.get(digest)
        if (ok) {
          if (e) e.verified = true
        } else {
          ev.failed?.('corrupt')
          await drop(digest)
        }
        return ok
      })().finally(() => verifying.delete(digest))
      verifying.set(digest, p)
    }
    return p
  }

  /** Fetches a blob into the cache: temp file, SHA-256 checked, renamed into place. */
  const fill = async (digest: string, f: Fill): Promise<{ entry: Entry; body: Buffer | null } | null> => {
    const final = fileOf(digest)
    const tmp = path.join(tmpDir, `${Date.now()}-${crypto.randomBytes(8).toString('hex')}`)
    let written = 0
    /** Whether `written` moved from `reserved` into the file's entry (at the rename). */
    let transferred = false
    let src: Readable | null = null
    // the temp file is made while S3 answers
    const [opened, got] = await Promise.allSettled([fsp.open(tmp, 'wx', 0o640), inner.get(digest)])
    if (opened.status === 'rejected') {
      if (got.status === 'fulfilled') got.value.destroy()
      ev.failed?.('error')
      return null
    }
    const out = opened.value
    let kept: Buffer[] | null = []
    try {
      if (got.status === 'rejected') throw got.reason
      src = got.value
      const hash = crypto.createHash('sha256')
      for await (const c of src) {
        const chunk = c as Buffer
        if (written + chunk.length > maxEntryBytes) throw new TooBig()
        await reserve(chunk.length)
        written += chunk.length
        hash.update(chunk)
        if (kept && written <= KEEP_BYTES) kept.push(chunk)
        else kept = null
        for (let off = 0; off < chunk.length;) off += (await onDisk(out.write(chunk, off, chunk.length - off))).bytesWritten
      }
      await onDisk(out.close())
      if (hash.digest('hex') !== digest) {
        ev.failed?.('corrupt')
        throw new AppError('STORAGE_UNAVAILABLE', { extra: {} })
      }
      const sub = path.dirname(final)
      if (!made.has(sub)) {
        await onDisk(fsp.mkdir(sub, { recursive: true }))
        made.add(sub)
      }
      await onDisk(fsp.rename(tmp, final)).catch((e: unknown) => {
        made.delete(sub) // (removed behind our back: made again by the next fill)
        throw e
      })
      // from here the bytes are the file's: counted in `bytes` or removed by drop()
      reserved -= written
      transferred = true
      const entry: Entry = { size: written, verified: true, touchedMs: Date.now() }
      if (f.cancelled) {
        // deleted while downloading: the copy never becomes visible through the index
        index.set(digest, entry)
        bytes += written
        await drop(digest)
        throw new AppError('STORAGE_UNAVAILABLE', { extra: {} })
      }
      index.set(digest, entry)
      bytes += written
      reportSize()
      return { entry, body: kept ? Buffer.concat(kept, written) : null }
    } catch (e) {
      src?.destroy()
      await out.close().catch(() => {})
      await fsp.rm(tmp, { force: true }).catch(() => {})
      if (!transferred) reserved -= written
      if (e instanceof TooBig) {
        if (tooBig.size >= 10_000) tooBig.clear()
        tooBig.add(digest)
        return null
      }
      if (e instanceof NoRoom) return null
      if (!(e instanceof AppError)) ev.failed?.('error')
      if (e instanceof DiskError) return null
      return unavailable(e)
    }
  }

  /**
   * The verified local file of a blob, fetched on a miss; null when it is streamed instead.
   * `recheck`: the caller found the file gone (removed behind the index's back).
   */
  const acquire = async (digest: string, recheck = false): Promise<(LocalBlobFile & { body?: Buffer }) | null> => {
    const p = fileOf(digest)
    const e = index.get(digest)
    if (e && recheck) {
      await drop(digest)
    } else if (e) {
      if (e.verified || (await verify(digest))) {
        const now = index.get(digest)
        if (now) {
          touch(digest, now)
          ev.lookup?.('hit')
          return { path: p, size: now.size }
        }
      }
    }
    if (tooBig.has(digest)) {
      ev.lookup?.('bypass')
      return null
    }
    let f = inflight.get(digest)
    if (!f) {
      const fresh: Fill = { cancelled: false, promise: Promise.resolve(null) }
      fresh.promise = fill(digest, fresh).finally(() => {
        if (inflight.get(digest) === fresh) inflight.delete(digest)
      })
      inflight.set(digest, fresh)
      f = fresh
    }
    const r = await f.promise
    ev.lookup?.(r ? 'miss' : 'bypass')
    // (a copy: every waiter of the fill gets its own buffer)
    return r ? { path: p, size: r.entry.size, body: r.body ? Buffer.from(r.body) : undefined } : null
  }

  const isGone = (e: unknown) => (e as NodeJS.ErrnoException)?.code === 'ENOENT'

  /** Runs `use` on the cached file; a file removed behind the index is fetched once more. */
  const withFile = async <T>(digest: string, use: (f: LocalBlobFile & { body?: Buffer }) => Promise<T>, bypass: () => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      const f = await acquire(digest, attempt > 0)
      if (f === null) return bypass()
      try {
        return await use(f)
      } catch (e) {
        // a file gone behind the index is fetched again; a local read that fails otherwise
        // (I/O error) is answered from the store
        if (!isGone(e)) return bypass()
        if (attempt > 0) return unavailable(e)
      }
    }
  }

  return {
    kind: inner.kind,
    cache: {
      dir,
      stats: () => ({ bytes, files: index.size, reserved, unlinking }),
    },
    put: (body, opts) => inner.put(body, opts),
    async get(digest, range) {
      return withFile(
        digest,
        async (f) => {
          const h = await fsp.open(f.path, 'r')
          return h.createReadStream(range ? { start: range.start, end: range.end } : {})
        },
        () => inner.get(digest, range),
      )
    },
    async localFile(digest) {
      return withFile(
        digest,
        async (f) => {
          // removed behind the index (another process, an operator): fetch again
          await fsp.access(f.path)
          return { path: f.path, size: f.size }
        },
        async () => null,
      )
    },
    async read(digest) {
      return withFile(
        digest,
        async (f) => f.body ?? fsp.readFile(f.path),
        () => inner.read(digest),
      )
    },
    exists: (digest) => inner.exists(digest),
    modifiedMs: (digest) => inner.modifiedMs(digest),
    async delete(digest, ifNotModifiedAfter) {
      fileOf(digest)
      // a fill started before the store's delete could still bring the old bytes: cancel it,
      // and any fill that started while the delete was in flight
      const before = inflight.get(digest)
      if (before) before.cancelled = true
      const deleted = await inner.delete(digest, ifNotModifiedAfter)
      const during = inflight.get(digest)
      if (during) during.cancelled = true
      tooBig.delete(digest)
      await drop(digest)
      return deleted
    },
    list: () => inner.list(),
    cleanTemp: (ms) => inner.cleanTemp(ms),
    ping: () => inner.ping(),
    async close() {
      await Promise.allSettled([...inflight.values()].map((f) => f.promise))
      await Promise.all([unlinks, ...touching])
      await inner.close()
    },
  }
}

/**
 * For operator commands that run beside a server (svc sweep): a deleted blob's cached copy is
 * removed from the cache folder too, without opening the cache (which belongs to the server).
 */
export function removingCachedCopies(inner: BlobStore, dir: string): BlobStore {
  return {
    ...inner,
    async delete(digest, ifNotModifiedAfter) {
      const deleted = await inner.delete(digest, ifNotModifiedAfter)
      if (deleted) await fsp.rm(path.join(dir, digest.slice(0, 2), digest), { force: true })
      return deleted
    },
  }
}
