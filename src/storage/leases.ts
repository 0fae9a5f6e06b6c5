import crypto from 'node:crypto'
import type { Db } from '../db/kysely.js'
import { AppError } from '../errors/app-error.js'

/**
 * Leases of long writes on the blob sweeper (docs/decisions.md 313). A request that
 * puts blobs long before it commits the rows naming them (an archive deploy, a batch upload,
 * a form submission's or an image upload's files) registers a row in `blob_leases` before its
 * first put, renews it while it runs and removes it when it ends. The sweeper spares every
 * blob written after the start of the oldest live lease (less LEASE_SKEW_MS), on any store:
 * a file's mtime and an S3 object's LastModified are both the put's time.
 *
 * Times are wall-clock milliseconds (Date.now(), not the injected clock): they are compared
 * with the blob store's times and with other processes' leases.
 */
export interface LeaseTiming {
  /** How often a held lease's `renewed_at` is written. */
  renewMs: number
  /**
   * How long the holder counts its lease as held after its last successful renewal: under
   * LEASE_EXPIRY_MS - LEASE_SKEW_MS, so whatever is left covers the commit.
   */
  holdMs: number
  /**
   * How long after its start the holder may still commit: LEASE_MAX_MS less LEASE_EXPIRY_MS,
   * so a sweep drops the lease for its age only once no commit can rely on it any more.
   */
  lifeMs: number
  /**
   * How long after its start a sweep honours the lease, however recently renewed (written
   * with it: `max_ms`): LEASE_MAX_MS, or ANONYMOUS_LEASE_MAX_MS for a request no account made.
   */
  maxMs: number
}

/** A lease not renewed for this long is dead (its process crashed): the sweeper ignores and removes it. */
export const LEASE_EXPIRY_MS = 10 * 60_000
/** The clock difference allowed between instances and the blob store (mtime, LastModified). */
export const LEASE_SKEW_MS = 2 * 60_000
/**
 * The longest a lease is honoured, renewed or not: a body trickled for days (a form post needs
 * no account) must not keep every sweep from the garbage written since it began.
 */
export const LEASE_MAX_MS = 24 * 3600_000
/**
 * The longest a lease of an unauthenticated request (a visitor's form post) is honoured: the
 * sweeper's own grace, so the leases any visitor can start hold the server's sweep back by the
 * skew at most, while a submission's files (8 MiB by default) still arrive within the 50
 * minutes its holder may commit in at under 3 KB/s.
 */
export const ANONYMOUS_LEASE_MAX_MS = 60 * 60_000
export const LEASE_TIMING: Readonly<LeaseTiming> = { renewMs: 60_000, holdMs: 5 * 60_000, lifeMs: LEASE_MAX_MS - LEASE_EXPIRY_MS, maxMs: LEASE_MAX_MS }
/** A visitor's lease (no account): the same renewals, honoured for ANONYMOUS_LEASE_MAX_MS. */
export const ANONYMOUS_LEASE_TIMING: Readonly<LeaseTiming> = {
  ...LEASE_TIMING,
  lifeMs: ANONYMOUS_LEASE_MAX_MS - LEASE_EXPIRY_MS,
  maxMs: ANONYMOUS_LEASE_MAX_MS,
}

export interface BlobLeaseRow {
  id: string
  started_at: number
  renewed_at: number
  max_ms: number
}

export interface BlobLease {
  /**
   * Registers the lease (the first call: one insert, and the renewal timer starts); later
   * calls wait for that one. Call it before each put: a request that puts nothing writes none.
   */
  take(): Promise<void>
  /**
   * Right before the commit of the rows: throws 503 / 1503 (send it again) when the lease
   * lapsed (renewals failed or stalled for `holdMs`, a sweep removed it as dead, or it is
   * older than `lifeMs`), since a sweep may then have taken the request's blobs. Nothing to
   * check when none was taken.
   */
  check(): void
  /** Whether check() would throw. */
  lapsed(): boolean
}

/**
 * Runs `fn` with a lease it takes when it first puts (BlobLease.take), and always removes the
 * lease when `fn` ends, committed or failed. A failed removal is left to expire. A request
 * anyone may send without an account passes ANONYMOUS_LEASE_TIMING.
 */
export async function withBlobLease<T>(db: Db, fn: (lease: BlobLease) => Promise<T>, timing: LeaseTiming = LEASE_TIMING): Promise<T> {
  const k = db.k
  const id = crypto.randomUUID()
  let taken: Promise<void> | null = null
  let timer: NodeJS.Timeout | null = null
  // the wall time the last successful insert or renewal was sent; lost: a renewal found no row
  let renewedAt = 0
  let startedAt = 0
  let lost = false
  const renew = async () => {
    const at = Date.now()
    try {
      const r = await k.updateTable('blob_leases').set({ renewed_at: at }).where('id', '=', id).executeTakeFirst()
      if (Number(r.numUpdatedRows) === 0) lost = true
      else if (at - renewedAt <= timing.holdMs) renewedAt = at
      // a renewal after a longer gap comes too late: a sweep may have counted the lease dead
      else lost = true
    } catch {
      // the next tick tries again; past holdMs the lease counts as lapsed (check)
    }
    if (lost && timer) clearInterval(timer)
  }
  const lease: BlobLease = {
    take() {
      taken ??= (async () => {
        const at = Date.now()
        await k.insertInto('blob_leases').values({ id, started_at: at, renewed_at: at, max_ms: timing.maxMs }).execute()
        renewedAt = startedAt = at
        timer = setInterval(() => void renew(), timing.renewMs)
        timer.unref()
      })()
      return taken
    },
    lapsed() {
      const now = Date.now()
      return taken !== null && (lost || now - renewedAt > timing.holdMs || now - startedAt > timing.lifeMs)
    },
    check() {
      if (lease.lapsed()) throw leaseLapsed()
    },
  }
  try {
    return await fn(lease)
  } finally {
    // (assigned in take: not narrowed to null)
    const insert = taken as Promise<void> | null
    if (timer) clearInterval(timer)
    if (insert !== null && (await insert.then(() => true).catch(() => false)))
      await k
        .deleteFrom('blob_leases')
        .where('id', '=', id)
        .execute()
        .catch(() => {})
  }
}

/** The refusal of a write whose lease lapsed before its commit: its stored bytes may be gone. */
export const leaseLapsed = () =>
  new AppError('STORAGE_UNAVAILABLE', {
    extra: {
      details: {
        reason: {
          zh: '请求读取期间未能保住已存储的内容（存储租约已失效）：请重新发送',
          en: 'the bytes stored while the request was read could not be kept (their lease lapsed): send it again',
        },
      },
    },
  })

/**
 * The sweeper's cutoff with the leases it read in its snapshot: `cutoff` (now - grace), or
 * earlier than the start of the oldest live lease by LEASE_SKEW_MS. A lease not renewed within
 * LEASE_EXPIRY_MS is dead and removed, on the condition that it is still as read: one renewed
 * (or removed by its holder) since counts as live, and one removed here makes its holder's
 * next renewal find no row, so it refuses its commit (check). One older than its `max_ms`
 * (LEASE_MAX_MS, a visitor's ANONYMOUS_LEASE_MAX_MS) is removed whatever its renewals: its
 * holder refuses its commit by then anyway (lifeMs).
 */
export async function leaseCutoff(db: Db, leases: readonly BlobLeaseRow[], cutoff: number, now: number): Promise<number> {
  const k = db.k
  let oldest = Infinity
  for (const l of leases) {
    const started = Number(l.started_at)
    const renewed = Number(l.renewed_at)
    if (started <= now - Number(l.max_ms)) {
      await k.deleteFrom('blob_leases').where('id', '=', l.id).execute()
      continue
    }
    if (renewed <= now - LEASE_EXPIRY_MS) {
      const r = await k.deleteFrom('blob_leases').where('id', '=', l.id).where('renewed_at', '=', renewed).executeTakeFirst()
      if (Number(r.numDeletedRows) > 0) continue
    }
    oldest = Math.min(oldest, started)
  }
  return Math.min(cutoff, oldest - LEASE_SKEW_MS)
}
