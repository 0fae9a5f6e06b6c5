import fs from 'node:fs'
import fsp from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'

const openFd = promisify(fs.open)

/**
 * Thrown to a writer whose commit may not be on disk (the fsync that covered it failed).
 * `code` lets the HTTP layer answer 503 without importing this module.
 */
export class DurabilityError extends Error {
  readonly code = 'SVC_NOT_DURABLE'
  constructor(cause: unknown) {
    super(`the write could not be made durable: ${(cause as Error)?.message ?? String(cause)}`, { cause })
  }
}

/** Makes every commit up to now durable (fdatasync of the WAL); the barrier calls one at a time. */
export type SyncFn = () => Promise<void>

/**
 * Group commit for a connection that commits with synchronous=NORMAL (WAL frames reach the
 * OS, not the disk). Each commit takes a sequence number after it ran; `wait(seq)` resolves
 * once a sync that started after that commit has finished. At most one sync runs at a time,
 * so every commit made while one runs shares the next one.
 *
 * Invariants: `durable` only grows, and only to a `committed` value read before a sync that
 * then succeeded. A failed sync rejects exactly the waiters it was meant to cover, and the
 * next sync first runs `recover` (which must leave every earlier commit on disk: a full
 * checkpoint), so a commit after a failure is never acknowledged on top of lost frames.
 */
export class DurabilityBarrier {
  private committed = 0
  private durable = 0
  private running = false
  private failed = false
  private waiters: Array<{ seq: number; resolve: () => void; reject: (e: Error) => void }> = []

  constructor(
    private sync: SyncFn,
    private recover: SyncFn = sync,
  ) {}

  private onCommit: (() => void) | null = null

  /** Called right after a write committed; returns the number `wait` takes. */
  commit(): number {
    this.onCommit?.()
    return ++this.committed
  }

  /** Calls `fn` on every commit (the checkpoint schedule arms its timer there). */
  watchCommits(fn: () => void): void {
    this.onCommit = fn
  }

  /** Resolves when commit `seq` is on disk; rejects with DurabilityError when that is not known. */
  wait(seq: number): Promise<void> {
    if (seq <= this.durable) return Promise.resolve()
    return new Promise((resolve, reject) => {
      this.waiters.push({ seq, resolve, reject })
      if (!this.running) void this.loop()
    })
  }

  /** Commits not yet known durable (for /metrics and tests). */
  pending(): number {
    return this.committed - this.durable
  }

  /** How many commits were counted so far. */
  commits(): number {
    return this.committed
  }

  /** Resolves when no sync is running (before the descriptor is closed). */
  async drain(): Promise<void> {
    while (this.running) await new Promise((r) => setTimeout(r, 5))
  }

  /** For tests: replaces the sync step (e.g. with one that fails). */
  setSync(sync: SyncFn): void {
    this.sync = sync
  }

  private async loop(): Promise<void> {
    this.running = true
    try {
      while (this.waiters.some((w) => w.seq > this.durable)) {
        const target = this.committed
        try {
          if (this.failed) await this.recover()
          await this.sync()
          this.failed = false
          this.durable = target
          this.settle(
            (w) => w.seq <= target,
            (w) => w.resolve(),
          )
        } catch (e) {
          this.failed = true
          const err = new DurabilityError(e)
          this.settle(
            (w) => w.seq <= target,
            (w) => w.reject(err),
          )
        }
      }
    } finally {
      this.running = false
    }
  }

  private settle(which: (w: (typeof this.waiters)[number]) => boolean, act: (w: (typeof this.waiters)[number]) => void): void {
    const done = this.waiters.filter(which)
    this.waiters = this.waiters.filter((w) => !which(w))
    for (const w of done) act(w)
  }
}

/**
 * The fdatasync of DATA_DIR/svc.db-wal, on libuv's thread pool. The descriptor stays open;
 * it is reopened (and the directory synced, so the file's name is durable too) when the
 * path names another file than the one open. The path is checked with a synchronous stat:
 * a metadata lookup of a file the last commit wrote, which saves each sync a second trip
 * through the thread pool. Only a missing file means "nothing to sync"; any other error
 * fails the sync, so it is never skipped on a guess.
 */
export function walSyncer(dbFile: string): { sync: SyncFn; close(): void } {
  const wal = `${dbFile}-wal`
  let fd: number | null = null
  let ino = -1
  const open = async () => {
    const st = fs.statSync(wal, { throwIfNoEntry: false })
    if (st === undefined) return false
    if (fd !== null && st.ino === ino) return true
    if (fd !== null) fs.close(fd, () => {})
    fd = await openFd(wal, 'r')
    ino = st.ino
    const dir = await fsp.open(path.dirname(wal), 'r')
    try {
      await dir.sync()
    } finally {
      await dir.close()
    }
    return true
  }
  return {
    async sync() {
      // no WAL file: nothing was written since the last checkpoint removed it
      if (!(await open())) return
      await new Promise<void>((resolve, reject) => fs.fdatasync(fd!, (e) => (e ? reject(e) : resolve())))
    },
    close() {
      if (fd !== null) fs.closeSync(fd)
      fd = null
    },
  }
}
