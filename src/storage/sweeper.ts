import { sql } from 'kysely'
import type { DB, Db } from '../db/kysely.js'
import type { BlobStore } from './blob-store.js'
import { leaseCutoff, type BlobLeaseRow } from './leases.js'

/** A (table, column) that holds blob digests; the composition root lists every feature's. */
export interface BlobColumn {
  table: string
  column: string
}

/**
 * The set of digests some row of `columns` references, read in one snapshot (a row moved from
 * one table to another meanwhile is seen in exactly one of them, never in neither).
 */
export async function referencedDigests(db: Db, columns: readonly BlobColumn[]): Promise<Set<string>> {
  return (await sweepView(db, columns)).refs
}

/**
 * The references and the long writes' leases (storage/leases.ts), read in one snapshot: a
 * write that commits its rows and then removes its lease is seen by one or the other.
 */
async function sweepView(db: Db, columns: readonly BlobColumn[]): Promise<{ refs: Set<string>; leases: BlobLeaseRow[] }> {
  const refs = new Set<string>()
  let leases: BlobLeaseRow[] = []
  await inOneSnapshot(db, async (k) => {
    for (const { table, column } of columns) {
      const rows = await sql<{ d: string | null }>`select distinct ${sql.ref(column)} as d from ${sql.table(table)}`.execute(k)
      for (const r of rows.rows) if (r.d) refs.add(r.d)
    }
    leases = await k.selectFrom('blob_leases').select(['id', 'started_at', 'renewed_at', 'max_ms']).execute()
  })
  return { refs, leases }
}

/**
 * Runs the reads of `fn` in one snapshot: a REPEATABLE READ, read-only transaction on
 * PostgreSQL; on SQLite a read transaction on the one connection (no statement of this process
 * runs meanwhile, and another process's commits after its first read are not seen).
 */
async function inOneSnapshot(db: Db, fn: (k: DB) => Promise<void>): Promise<void> {
  if (db.engine === 'postgres') return db.k.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(fn)
  await db.k.connection().execute(async (c) => {
    await sql`begin`.execute(c)
    try {
      await fn(c)
    } finally {
      await sql`commit`.execute(c)
    }
  })
}

export interface SweepResult {
  /** True when another sweep (another instance, `svc sweep`, this one's last) was running: nothing was done. */
  skipped: boolean
  deleted: number
  temp: number
}

/**
 * Deletes blobs that no row of `columns` references and that are older than `graceMs` (longer
 * than most requests, so a blob written for a row not yet committed is spared) and than the
 * start of the oldest live lease (a longer write's: storage/leases.ts), and stale temp files.
 * `columns` must name every column that holds digests, or referenced blobs go. One sweep at a
 * time per database (Db.tryLock): a second one returns `skipped` at once.
 */
export async function sweepBlobs(db: Db, blobs: BlobStore, columns: readonly BlobColumn[], graceMs: number, now = Date.now()): Promise<SweepResult> {
  const r = await db.tryLock('sweep', () => sweepOnce(db, blobs, columns, graceMs, now))
  return r.held ? { skipped: false, ...r.value } : { skipped: true, deleted: 0, temp: 0 }
}

async function sweepOnce(db: Db, blobs: BlobStore, columns: readonly BlobColumn[], graceMs: number, now: number): Promise<{ deleted: number; temp: number }> {
  const listed: Array<{ digest: string; modifiedMs: number }> = []
  for await (const b of blobs.list()) if (b.modifiedMs <= now - graceMs) listed.push(b)
  let deleted = 0
  if (listed.length > 0) {
    // read references after listing: a row committed meanwhile is seen here
    const { refs, leases } = await sweepView(db, columns)
    // a lease taken after the listing puts its blobs after it: their listed times are older
    // than the put's, which the delete below looks at again
    const cutoff = await leaseCutoff(db, leases, now - graceMs, now)
    for (const { digest: d, modifiedMs } of listed) {
      if (refs.has(d) || modifiedMs > cutoff) continue
      // an upload of the same bytes since the listing refreshed the blob's time and is about
      // to commit its row (after the references were read): the delete looks at the time again,
      // in one step with the delete where the store can (BlobStore.delete)
      if (await blobs.delete(d, cutoff)) deleted++
    }
  }
  const temp = await blobs.cleanTemp(graceMs)
  return { deleted, temp }
}
