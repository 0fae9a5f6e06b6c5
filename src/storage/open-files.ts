import fs from 'node:fs'
import { oldestKey } from '../util/oldest.js'
import { OPEN_FILE_LIMIT } from '../util/open-file-limit.js'

/** One open blob file: a read-only descriptor and the blob's size. */
export interface OpenBlobFile {
  readonly digest: string
  readonly fd: number
  readonly size: number
  /** Second-chance bit for eviction (set on every hit). */
  hot: boolean
  /** The inactivity sweep's tick at the last open or hit. */
  seen: number
  /** Set when the descriptor was closed: a holder must not use `fd` any more. */
  closed: boolean
}

export interface OpenFilesOptions {
  /** Descriptors kept open at most (least recently used closed first). */
  max?: number
  /**
   * A descriptor neither opened nor hit for this long (and at most twice this long) is closed,
   * as nginx's `open_file_cache inactive=`: the disk space of a deleted blob is then given back
   * even when no new file pushes it out. Default 60 s; 0 never.
   */
  inactiveMs?: number
}

/**
 * The cache's default size for an open-file limit: half of it, at most 65,536, and never more
 * than leaves 4,096 descriptors (or three quarters of a smaller limit) for connections, the
 * database and the blob store, so the cache never keeps the server from accepting connections.
 */
export function defaultOpenFilesMax(limit: number): number {
  if (!Number.isFinite(limit)) return 65536
  return Math.max(1, Math.min(65536, Math.floor(limit / 2), Math.max(Math.floor(limit / 4), limit - 4096)))
}

/**
 * An open-file cache of blob files, as nginx's open_file_cache: digest -> descriptor, at most
 * `max` open (default `defaultOpenFilesMax` of the process's limit), evicted by second chance and closed on
 * eviction. Keyed by digest: a blob's bytes never change, so a descriptor always reads exactly
 * the bytes its digest names, even after the file was unlinked (swept, evicted from the disk
 * cache); a replaced file has a new digest and so a new entry. Callers use a descriptor only
 * synchronously (read, sendfile) within one turn of the event loop, so closing on eviction
 * never pulls a descriptor from under a read in flight. `forget` closes a deleted blob's; one
 * deleted elsewhere (the sweeper, another instance, the disk cache's eviction) is closed once
 * inactive, so an unlinked file's space is held for at most twice `inactiveMs`.
 */
export function createOpenFiles(o: OpenFilesOptions = {}) {
  const max = Math.max(1, o.max ?? defaultOpenFilesMax(OPEN_FILE_LIMIT))
  const files = new Map<string, OpenBlobFile>()
  const stats = { opened: 0, hits: 0, evicted: 0, inactive: 0 }
  const inactiveMs = o.inactiveMs ?? 60_000
  // moved by the sweep every `inactiveMs`: an entry last seen two ticks ago was idle at least that long
  let tick = 0
  let sweeper: NodeJS.Timeout | null = null

  const close = (f: OpenBlobFile) => {
    if (f.closed) return
    f.closed = true
    try {
      fs.closeSync(f.fd)
    } catch {
      /* already closed: nothing to release */
    }
  }

  const trim = () => {
    let guard = files.size * 2
    while (files.size > max && guard-- > 0) {
      const d = oldestKey(files)
      if (d === undefined) break
      const f = files.get(d)!
      files.delete(d)
      if (f.hot) {
        f.hot = false
        files.set(d, f)
        continue
      }
      stats.evicted++
      close(f)
    }
  }

  const sweep = () => {
    tick++
    for (const [d, f] of files) {
      if (f.seen >= tick - 1) continue
      files.delete(d)
      stats.inactive++
      close(f)
    }
    if (files.size === 0 && sweeper !== null) {
      clearInterval(sweeper)
      sweeper = null
    }
  }

  return {
    stats,
    /** The open file of a digest, or undefined. */
    get(digest: string): OpenBlobFile | undefined {
      const f = files.get(digest)
      if (f !== undefined) {
        f.hot = true
        f.seen = tick
        stats.hits++
      }
      return f
    },
    /**
     * Opens the local file of a blob (synchronously: a stat-free open of a local path, as nginx
     * does) and keeps it; null when the file is gone (evicted, swept: ask the store again).
     */
    openSync(digest: string, path: string, size: number): OpenBlobFile | null {
      const had = files.get(digest)
      if (had !== undefined) {
        had.seen = tick
        return had
      }
      let fd: number
      try {
        fd = fs.openSync(path, 'r')
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
        throw e
      }
      const f: OpenBlobFile = { digest, fd, size, hot: false, seen: tick, closed: false }
      stats.opened++
      files.set(digest, f)
      trim()
      if (sweeper === null && inactiveMs > 0) {
        sweeper = setInterval(sweep, inactiveMs)
        sweeper.unref()
      }
      return f
    },
    /** Closes a digest's descriptor (the blob was deleted). */
    forget(digest: string): void {
      const f = files.get(digest)
      if (f === undefined) return
      files.delete(digest)
      close(f)
    },
    /** Descriptors open now. */
    size: () => files.size,
    max,
    closeAll(): void {
      if (sweeper !== null) clearInterval(sweeper)
      sweeper = null
      for (const f of files.values()) close(f)
      files.clear()
    },
  }
}
export type OpenFiles = ReturnType<typeof createOpenFiles>
