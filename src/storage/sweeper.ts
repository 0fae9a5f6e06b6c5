import { sql } from 'kysely'
import type { Db } from '../db/kysely.js'
import type { BlobStore } from './blob-store.js'

/** A (table, column) that holds blob digests; the composition root lists every feature's. */
export interface BlobColumn {
  table: string
  column: string
}

/** The set of digests some row of `columns` references. */
export async function referencedDigests(db: Db, columns: readonly BlobColumn[]): Promise<Set<string>> {
  const set = new Set<string>()
  for (const { table, column } of columns) {
    const rows = await sql<{ d: string | null }>`select distinct ${sql.ref(column)} as d from ${sql.table(table)}`.execute(db.k)
    for (const r of rows.rows) if (r.d) set.add(r.d)
  }
  return set
}

/**
 * Deletes blobs that no row of `columns` references and that are older than `graceMs` (longer
 * than any request, so a blob written for a row not yet committed is spared), and stale temp
 * files. `columns` must name every column that holds digests, or referenced blobs go.
 */
export async function sweepBlobs(
  db: Db,
  blobs: BlobStore,
  columns: readonly BlobColumn[],
  graceMs: number,
  now = Date.now(),
): Promise<{ deleted: number; temp: number }> {
  const cutoff = now - graceMs
  const candidates: string[] = []
  for await (const b of blobs.list()) if (b.modifiedMs <= cutoff) candidates.push(b.digest)
  let deleted = 0
  if (candidates.length > 0) {
    // read references after listing: a row committed meanwhile is seen here
    const refs = await referencedDigests(db, columns)
    for (const d of candidates) {
      if (refs.has(d)) continue
      // an upload of the same bytes since the listing refreshed the blob's time and is about
      // to commit its row (after the references were read): look again, right before deleting
      const m = await blobs.modifiedMs(d)
      if (m === null || m > cutoff) continue
      await blobs.delete(d)
      deleted++
    }
  }
  const temp = await blobs.cleanTemp(graceMs)
  return { deleted, temp }
}
