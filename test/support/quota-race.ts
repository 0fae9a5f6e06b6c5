import assert from 'node:assert/strict'
import { sql, type Kysely } from 'kysely'
import type { Database } from '../../src/db/schema.js'
import type { Res, TestServer } from './server.js'

const ok = (r: Res) => r.status >= 200 && r.status < 300

/** A usage counter of db/usage.ts (0 when it has no row). */
export async function usageCounter(s: TestServer, userId: string, kind: string): Promise<number> {
  const r = await s.deps.db.k.selectFrom('usage').select('n').where('user_id', '=', userId).where('kind', '=', kind).executeTakeFirst()
  return r ? Number(r.n) : 0
}

export interface QuotaRace {
  /** The quota: quota - 1 places are taken first, one by one, then `parallel` writes race for the last. */
  quota: number
  /** One counted write; `i` makes each distinct (setup writes get i < 0, racing ones i >= 0). */
  write(i: number): Promise<Res>
  /** Asserts one refusal: the quota error in the route's format. */
  refused(r: Res): void
  /** The counter and the rows it counts, compared after the race. */
  counted(): Promise<{ counter: number; rows: number }>
  /** Racing writes (default 20). */
  parallel?: number
  /** Places taken before (e.g. a hosted-data file's first version); the setup writes fill the rest. */
  existing?: number
}

/**
 * The quota race of issue 22: at quota - 1, `parallel` concurrent writes give exactly one
 * success and quota errors for the rest, and the counter equals the rows afterwards.
 */
export async function raceAtQuota(o: QuotaRace): Promise<void> {
  for (let i = 1 + (o.existing ?? 0); i < o.quota; i++) {
    const r = await o.write(-i)
    assert.ok(ok(r), `setup write ${i}: ${r.status} ${r.text.slice(0, 300)}`)
  }
  assert.deepEqual(await o.counted(), { counter: o.quota - 1, rows: o.quota - 1 }, 'before the race')
  const rs = await Promise.all(Array.from({ length: o.parallel ?? 20 }, (_, i) => o.write(i)))
  assert.equal(rs.filter(ok).length, 1, rs.map((r) => r.status).join(','))
  for (const r of rs.filter((x) => !ok(x))) o.refused(r)
  assert.deepEqual(await o.counted(), { counter: o.quota, rows: o.quota }, 'after the race')
}

/** Every counter of a user as its rows say it should be (kinds with 0 left out), kv_usage as `kv`. */
export async function usageFromRows(db: Kysely<Database>, userId: string): Promise<Record<string, number>> {
  const q = await sql<{ kind: string; n: number | string }>`
    select 'files' as kind, count(*) as n from files where user_id = ${userId}
    union all select 'images', count(*) from images where user_id = ${userId}
    union all select 'image_bytes', coalesce(sum(size), 0) from images where user_id = ${userId}
    union all select 'hosted_files', count(*) from hosted_files where user_id = ${userId}
    union all select 'forms', count(*) from forms where user_id = ${userId}
    union all select 'domains', count(*) from domains where user_id = ${userId}
    union all select 'api_keys', count(*) from api_keys where user_id = ${userId}
    union all select 'kv', count(*) from kv_entries where user_id = ${userId}
    union all select 'hosted_versions:' || f.id, count(*) from hosted_versions v join hosted_files f on f.id = v.file_id
      where f.user_id = ${userId} group by f.id`.execute(db)
  return Object.fromEntries(q.rows.filter((r) => Number(r.n) !== 0).map((r) => [r.kind, Number(r.n)]))
}

/** The user's counters as stored (usage rows with n = 0 left out), kv_usage as `kv`. */
export async function usageStored(db: Kysely<Database>, userId: string): Promise<Record<string, number>> {
  const rows = await db.selectFrom('usage').select(['kind', 'n']).where('user_id', '=', userId).execute()
  const kv = await db.selectFrom('kv_usage').select('keys').where('user_id', '=', userId).executeTakeFirst()
  const out = Object.fromEntries(rows.filter((r) => Number(r.n) !== 0).map((r) => [r.kind, Number(r.n)]))
  if (kv && Number(kv.keys) !== 0) out.kv = Number(kv.keys)
  return out
}

/** Asserts that every counter of the user equals its rows. */
export async function assertUsageExact(db: Kysely<Database>, userId: string, what = 'usage'): Promise<void> {
  assert.deepEqual(await usageStored(db, userId), await usageFromRows(db, userId), what)
}
