import { sql, type Kysely, type Migration, type RawBuilder } from 'kysely'
import type { DB, Trx } from './kysely.js'

/*
 * Per-user usage counters that quotas read instead of counting rows on every write
 * (docs/decisions.md: one usage table for every counted resource; the table is declared in
 * schema.ts). One row per (user, kind); a missing row means 0. A counter changes only in the
 * transaction that inserts or deletes the rows it counts, by the number of rows (or bytes)
 * that statement inserted or deleted, so it always equals what it counts.
 */

/** The kinds counted per user. */
export const USAGE_KINDS = ['files', 'images', 'image_bytes', 'hosted_files', 'forms', 'domains', 'api_keys'] as const
export type UsageKind = (typeof USAGE_KINDS)[number] | `hosted_versions:${string}`

/** The versions of one hosted-data file (removed with the file). */
export const versionsKind = (fileId: string): UsageKind => `hosted_versions:${fileId}`

type Ex = DB | Trx

/** The counter's value (0 when it has no row). */
export async function usageOf(ex: Ex, userId: string, kind: UsageKind): Promise<number> {
  const r = await ex.selectFrom('usage').select('n').where('user_id', '=', userId).where('kind', '=', kind).executeTakeFirst()
  return r ? Number(r.n) : 0
}

/** Several counters of a user in one read (0 for those without a row). */
export async function usagesOf<K extends UsageKind>(ex: Ex, userId: string, kinds: readonly K[]): Promise<Record<K, number>> {
  const rows = await ex.selectFrom('usage').select(['kind', 'n']).where('user_id', '=', userId).where('kind', 'in', kinds).execute()
  const out = Object.fromEntries(kinds.map((k) => [k, 0])) as Record<K, number>
  for (const r of rows) out[r.kind as K] = Number(r.n)
  return out
}

/** Adds `delta` (negative for deletes), creating the row when needed; in the caller's transaction. */
export async function addUsage(ex: Ex, userId: string, kind: UsageKind, delta: number): Promise<void> {
  if (delta === 0) return
  await ex
    .insertInto('usage')
    .values({ user_id: userId, kind, n: delta })
    .onConflict((oc) => oc.columns(['user_id', 'kind']).doUpdateSet({ n: sql<number>`usage.n + excluded.n` }))
    .execute()
}

/**
 * Adds `by` (> 0) only if the counter stays at or under `limit`: one conditional statement
 * (`INSERT ... ON CONFLICT DO UPDATE ... WHERE n + by <= limit RETURNING n`), exact under
 * concurrency on both engines (PostgreSQL re-checks the condition on the locked row; SQLite
 * has one writer). Returns null when taken, else the counter's current value, for the error.
 * Call it in the transaction that inserts the counted rows, so a later failure gives it back.
 */
export async function claimUsage(trx: Trx, userId: string, kind: UsageKind, by: number, limit: number): Promise<number | null> {
  if (by <= 0) return null
  // counts are integers: n + by <= limit exactly when n + by <= floor(limit) (a bigint parameter)
  const max = Math.floor(limit)
  if (by > max) return usageOf(trx, userId, kind)
  const r = await trx
    .insertInto('usage')
    .values({ user_id: userId, kind, n: by })
    .onConflict((oc) =>
      oc
        .columns(['user_id', 'kind'])
        .doUpdateSet({ n: sql<number>`usage.n + excluded.n` })
        .where(sql<boolean>`usage.n + excluded.n <= ${max}`),
    )
    .returning('n')
    .executeTakeFirst()
  return r ? null : usageOf(trx, userId, kind)
}

/** Drops a counter whose rows are all gone (the versions of a deleted hosted-data file). */
export async function dropUsage(ex: Ex, userId: string, kind: UsageKind): Promise<void> {
  await ex.deleteFrom('usage').where('user_id', '=', userId).where('kind', '=', kind).execute()
}

/**
 * The table; each feature's own migration fills in the kinds it counts from its rows
 * (`backfillUsage`), so the counters start equal to what they count.
 */
export const usageMigrations: Record<string, Migration> = {
  '0750-usage': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('usage')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('n', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('usage_pk', ['user_id', 'kind'])
        .execute()
      await backfillUsage(db, sql`select user_id, 'api_keys' as kind, count(*) as n from api_keys group by user_id`)
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('usage').execute()
    },
  },
}

/**
 * Migration helper: sets the counters `select` computes from the rows; `select` returns
 * columns user_id, kind, n (e.g. `select user_id, 'files' as kind, count(*) as n from files group by user_id`).
 */
export async function backfillUsage(db: Kysely<any>, select: RawBuilder<unknown>): Promise<void> {
  await sql`insert into usage (user_id, kind, n) select s.user_id, s.kind, s.n from (${select}) s where s.n <> 0`.execute(db)
}
