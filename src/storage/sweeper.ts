import { sql } from 'kysely'
import type { Db } from '../db/kysely.js'
import type { BlobStore } from './blob-store.js'
import { FEATURES } from '../features/index.js'

/** Every (table, column) that holds a blob digest, gathered from the features. */
export function blobColumns(): Array<{ table: string; column: string }> {
  return FEATURES.flatMap((f) => f.blobColumns ?? [])
}

/** The set of digests some row references. */
export async function referencedDigests(db: Db): Promise<Set<string>> {
  const set = new Set<string>()
  for (const { table, column } of blobColumns()) {
    const rows = await sql<{ d: string | null }>`select distinct ${sql.ref(column)} as d from ${sql.table(table)}`.execute(db.k)
    for (const r of rows.rows) if (r.d) set.add(r.d)
  }
  return set
}

/**
 * Deletes blobs that no row references and that are older than `graceMs` (longer than any
 * request, so a blob written for a row not yet committed is spared), and stale temp files.
 */
export async function sweepBlobs(db: Db, blobs: BlobStore, graceMs: number, now = Date.now()): Promise<{ deleted: number; temp: number }> {
  const cutoff = now - graceMs
  const candidates: string[] = []
  for await (const b of blobs.list()) if (b.modifiedMs <= cutoff) candidates.push(b.digest)
  let deleted = 0
  if (candidates.length > 0) {
    // read references after listing: a row committed meanwhile is seen here
    const refs = await referencedDigests(db)
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
