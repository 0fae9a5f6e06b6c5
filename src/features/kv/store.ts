import { sql, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { Db, DB, Trx } from '../../db/kysely.js'
import { prepared } from '../../db/prepared.js'
import { USER_COLUMNS } from '../../auth/users.js'

/** One row of kv_entries: a user's entry. The value is kept as its JSON text. */
export interface KvEntriesTable {
  user_id: string
  key: string
  /** JSON.stringify of the value (its byte length is `size`). */
  value: string
  data_type: string
  /** JSON array of strings. */
  tags: string
  is_public: number
  /**
   * +1 on every write (compare-and-swap token, the ETag); on creation one above the user's
   * retired_version, so a key never has a version again that it had before a delete.
   */
  version: number
  size: number
  created_at: number
  /** Strictly increasing per entry (max(now, previous + 1)), so it is a CAS token too. */
  updated_at: number
  /** Epoch ms after which the entry is gone; null = never. */
  expires_at: number | null
  /**
   * 1: a public counter. Anyone may add 1 or -1 to it without a key while it is a number
   * (POST /svc_api/data/public/{username}/{key}/incr); only its owner sets it.
   */
  public_incr: number
}

/** One row per user with entries: how many rows kv_entries holds for them (expired ones included). */
export interface KvUsageTable {
  user_id: string
  keys: number
  /**
   * The highest version any of the user's deleted (or expired and purged) entries had; 0 when
   * none. Only grows; a new entry starts one above it, so versions never repeat for a key.
   */
  retired_version: number
}

declare module '../../db/schema.js' {
  interface Database {
    kv_entries: KvEntriesTable
    kv_usage: KvUsageTable
  }
}

export type KvRow = KvEntriesTable

/** One overwrite of a live entry: the fields written; an optional one left undefined keeps its value. */
export interface Overwrite {
  userId: string
  key: string
  now: number
  value: string
  size: number
  data_type: string
  /** Only an entry of type json is written (the value was checked as json). */
  requireJson: boolean
  tags?: string
  is_public?: number
  expires_at?: number | null
  public_incr?: number
}

/** The columns every read selects (all of them, named). */
export const KV_COLUMNS = [
  'user_id',
  'key',
  'value',
  'data_type',
  'tags',
  'is_public',
  'version',
  'size',
  'created_at',
  'updated_at',
  'expires_at',
  'public_incr',
] as const

type Ex = DB | Trx

/**
 * The least string above every string that starts with `prefix`, in byte order of UTF-8 (the
 * order of code points): the prefix with its last code point raised by one, dropping trailing
 * U+10FFFF first (and skipping the surrogate range, which no stored key holds). Undefined: no
 * upper bound (the prefix is U+10FFFF only). Keys starting with `prefix` are exactly those in
 * [prefix, prefixEnd(prefix)), a range an index on the key in byte order answers.
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = Array.from(prefix, (c) => c.codePointAt(0)!)
  while (points.length > 0 && points[points.length - 1] === 0x10ffff) points.pop()
  if (points.length === 0) return undefined
  const last = points.pop()! + 1
  points.push(last === 0xd800 ? 0xe000 : last)
  return String.fromCodePoint(...points)
}

/** Live = not expired at `now`. */
const live = (now: number) => (eb: ExpressionBuilder<Database, 'kv_entries'>) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])

/**
 * Kysely queries of the key-value store; no rules here. Every read takes `now` and ignores
 * expired rows, so an expired entry is missing everywhere even before it is purged.
 */
export function createKvStore(db: Db) {
  const greatest = sql.raw(db.engine === 'postgres' ? 'greatest' : 'max')
  /**
   * Adds `delta` to the user's row count (creating the counter row on the first entry) and, for
   * rows deleted, raises retired_version to `retired` (the highest version among them).
   */
  async function addKeys(ex: Ex, userId: string, delta: number, retired = 0): Promise<void> {
    await ex
      .insertInto('kv_usage')
      .values({ user_id: userId, keys: delta, retired_version: retired })
      .onConflict((oc) =>
        oc.column('user_id').doUpdateSet({
          keys: sql<number>`kv_usage.keys + cast(${delta} as bigint)`,
          retired_version: sql<number>`${greatest}(kv_usage.retired_version, cast(${retired} as bigint))`,
        }),
      )
      .execute()
  }

  /** Uncounts deleted rows (their versions as RETURNING gave them), per user, retiring their versions. */
  async function uncount(ex: Ex, gone: ReadonlyArray<{ user_id: string; version: number | string }>): Promise<void> {
    const per = new Map<string, { n: number; top: number }>()
    for (const g of gone) {
      const p = per.get(g.user_id) ?? { n: 0, top: 0 }
      p.n += 1
      p.top = Math.max(p.top, Number(g.version))
      per.set(g.user_id, p)
    }
    for (const [userId, p] of per) await addKeys(ex, userId, -p.n, p.top)
  }
  /**
   * The in-place increment, prepared (db/prepared.ts) per shape: with or without a new expiry
   * and a new public_incr (those values follow the six fixed arguments, in this order), and
   * whether only a public counter is written (the anonymous increment). Adds `by` when the
   * entry is a live integer and the sum stays within 2^53; `nowLast` and `count` are those of
   * merged increments (nowLast = now + count - 1).
   */
  const incrQuery = (withExpiry: boolean, withFlag: boolean, publicOnly: boolean) =>
    prepared(
      db,
      6 + Number(withExpiry) + Number(withFlag),
      (userId: string, key: string, by: number, now: number, nowLast: number, count: number, ...rest: unknown[]) => {
        const values = [...rest]
        const optional = {
          ...(withExpiry ? { expires_at: values.shift() as number | null } : {}),
          ...(withFlag ? { public_incr: values.shift() as number } : {}),
        }
        const pg = db.engine === 'postgres'
        const isInt = pg
          ? sql<boolean>`case when value ~ '^-?[0-9]{1,15}$' then abs(value::bigint + ${by}::bigint) <= 9007199254740991 else false end`
          : sql<boolean>`value = cast(cast(value as integer) as text) and length(value) <= 16 and abs(cast(value as integer) + cast(${by} as integer)) <= 9007199254740991`
        return db.k
          .updateTable('kv_entries')
          .set({
            value: pg ? sql<string>`(value::bigint + ${by}::bigint)::text` : sql<string>`cast(cast(value as integer) + cast(${by} as integer) as text)`,
            size: pg
              ? sql<number>`length((value::bigint + ${by}::bigint)::text)`
              : sql<number>`length(cast(cast(value as integer) + cast(${by} as integer) as text))`,
            version: sql<number>`version + cast(${count} as integer)`,
            updated_at: sql<number>`${greatest}(cast(${nowLast} as bigint), updated_at + cast(${count} as integer))`,
            ...optional,
          })
          .where('user_id', '=', userId)
          .where('key', '=', key)
          .where(live(now))
          .where('data_type', '=', 'number')
          .where(isInt)
          .$if(publicOnly, (q) => q.where('public_incr', '=', 1))
          .returning(KV_COLUMNS)
      },
    )
  const incrQueries = new Map<string, ReturnType<typeof incrQuery>>()
  /** The in-place overwrite, prepared per shape: which optional fields it sets, and whether the entry must be json. */
  const updateQuery = (has: [tags: boolean, isPublic: boolean, expiresAt: boolean, publicIncr: boolean], requireJson: boolean) =>
    prepared(db, 6 + has.filter(Boolean).length, (...a: unknown[]) => {
      const [userId, key, now, value, size, dataType, ...rest] = a as [string, string, number, string, number, string, ...unknown[]]
      // the optional fields present, in this order, follow the six fixed arguments
      const values = [...rest]
      const optional = {
        ...(has[0] ? { tags: values.shift() as string } : {}),
        ...(has[1] ? { is_public: values.shift() as number } : {}),
        ...(has[2] ? { expires_at: values.shift() as number | null } : {}),
        ...(has[3] ? { public_incr: values.shift() as number } : {}),
      }
      let q = db.k
        .updateTable('kv_entries')
        .set({
          value,
          size,
          data_type: dataType,
          ...optional,
          version: sql<number>`version + 1`,
          updated_at: sql<number>`${greatest}(cast(${now} as bigint), updated_at + 1)`,
        })
        .where('user_id', '=', userId)
        .where('key', '=', key)
        .where(live(now))
      if (requireJson) q = q.where('data_type', '=', 'json')
      return q.returning(KV_COLUMNS)
    })
  const updateQueries = new Map<string, ReturnType<typeof updateQuery>>()
  /**
   * PostgreSQL's create in one statement, prepared: the user's row lock (as db.lockUser takes
   * it, so it orders with every KV transaction), the counter raised only while under the
   * limit, then the entry, at the version above the user's retired ones. No row back: the
   * quota is reached; a row under the key (an expired one not purged yet) fails the whole
   * statement with a unique violation.
   */
  const pgCreate = prepared(db, 12, (userId: string, limit: number, ...v: unknown[]) => {
    const [key, value, dataType, tags, isPublic, size, createdAt, updatedAt, expiresAt, publicIncr] = v
    return db.k
      .with('u', (q) => q.selectFrom('users').select('id').where('id', '=', userId).forUpdate())
      .with('c', (q) =>
        q
          .insertInto('kv_usage')
          .columns(['user_id', 'keys'])
          .expression((eb) => eb.selectFrom('u').select(['u.id', sql<number>`1`.as('keys')]))
          .onConflict((oc) =>
            oc
              .column('user_id')
              .doUpdateSet({ keys: sql<number>`kv_usage.keys + 1` })
              .where('kv_usage.keys', '<', limit),
          )
          .returning(['user_id', 'retired_version']),
      )
      .insertInto('kv_entries')
      .columns([...KV_COLUMNS])
      .expression((eb) =>
        eb
          .selectFrom('c')
          .select([
            'c.user_id',
            sql<string>`cast(${key} as text)`.as('key'),
            sql<string>`cast(${value} as text)`.as('value'),
            sql<string>`cast(${dataType} as text)`.as('data_type'),
            sql<string>`cast(${tags} as text)`.as('tags'),
            sql<number>`cast(${isPublic} as integer)`.as('is_public'),
            sql<number>`c.retired_version + 1`.as('version'),
            sql<number>`cast(${size} as bigint)`.as('size'),
            sql<number>`cast(${createdAt} as bigint)`.as('created_at'),
            sql<number>`cast(${updatedAt} as bigint)`.as('updated_at'),
            sql<number | null>`cast(${expiresAt} as bigint)`.as('expires_at'),
            sql<number>`cast(${publicIncr} as integer)`.as('public_incr'),
          ]),
      )
      .returning(KV_COLUMNS)
  })
  /**
   * The batch overwrite: `v` is the items, one row each, read from the JSON parameter (keys of
   * updateManyInPlace); the same SET and liveness rules as updateQuery.
   */
  const overwriteMany = (json: string) =>
    db.engine === 'postgres'
      ? sql<KvRow>`update kv_entries as e set value = v.v, size = v.s, data_type = v.d,
          tags = coalesce(v.t, e.tags), is_public = coalesce(v.p, e.is_public), public_incr = coalesce(v.q, e.public_incr),
          expires_at = case when v.x = 1 then v.e else e.expires_at end,
          version = e.version + 1, updated_at = greatest(v.n, e.updated_at + 1)
        from jsonb_to_recordset(cast(${json} as jsonb))
          as v(u text, k text, n bigint, v text, s bigint, d text, j integer, t text, p integer, q integer, x integer, e bigint)
        where e.user_id = v.u and e.key = v.k and (e.expires_at is null or e.expires_at > v.n)
          and (v.j = 0 or e.data_type = 'json')
        returning ${sql.join(KV_COLUMNS.map((c) => sql.ref(`e.${c}`)))}`
      : sql<KvRow>`update kv_entries set value = v.v, size = v.s, data_type = v.d,
          tags = coalesce(v.t, kv_entries.tags), is_public = coalesce(v.p, kv_entries.is_public),
          public_incr = coalesce(v.q, kv_entries.public_incr),
          expires_at = case when v.x = 1 then v.e else kv_entries.expires_at end,
          version = kv_entries.version + 1, updated_at = max(v.n, kv_entries.updated_at + 1)
        from (select i.value ->> 'u' as u, i.value ->> 'k' as k, i.value ->> 'n' as n, i.value ->> 'v' as v,
            i.value ->> 's' as s, i.value ->> 'd' as d, i.value ->> 'j' as j, i.value ->> 't' as t,
            i.value ->> 'p' as p, i.value ->> 'q' as q, i.value ->> 'x' as x, i.value ->> 'e' as e from json_each(${json}) as i) as v
        where kv_entries.user_id = v.u and kv_entries.key = v.k
          and (kv_entries.expires_at is null or kv_entries.expires_at > v.n)
          and (v.j = 0 or kv_entries.data_type = 'json')
        returning ${sql.join(KV_COLUMNS.map((c) => sql.ref(c)))}`
  const k = db.k
  // the read of GET /svc_api/data/get, outside any transaction: built once (db/prepared.ts)
  const liveRow = prepared(db, 3, (userId: string, key: string, now: number) =>
    k.selectFrom('kv_entries').select(KV_COLUMNS).where('user_id', '=', userId).where('key', '=', key).where(live(now)),
  )
  /**
   * In one read: the user's row count, whether one of their rows has expired (a purge would
   * free it), whether a row (live or not) holds `key`. Built once (db/prepared.ts).
   */
  const quotaRow = prepared(db, 3, (userId: string, key: string, now: number) =>
    k.selectNoFrom((eb) => [
      eb.selectFrom('kv_usage').select('keys').where('user_id', '=', userId).as('keys'),
      eb
        .exists(eb.selectFrom('kv_entries').select('key').where('user_id', '=', userId).where('expires_at', 'is not', null).where('expires_at', '<=', now))
        .as('expired'),
      eb.exists(eb.selectFrom('kv_entries').select('key').where('user_id', '=', userId).where('key', '=', key)).as('taken'),
    ]),
  )
  /** Byte order on both engines (PostgreSQL's collation could otherwise differ from SQLite's). */
  const keyOrder = db.engine === 'postgres' ? sql`${sql.ref('key')} collate "C"` : sql`${sql.ref('key')}`
  /**
   * Keys starting with `prefix`, as a range in byte order (no LIKE, so `%` and `_` are plain
   * characters): on SQLite the primary key's BINARY order, on PostgreSQL the "C" index of
   * migration 0797; either way an index range, whatever the database's collation.
   */
  const keyRange = <Q extends SelectQueryBuilder<Database, 'kv_entries', any>>(q: Q, prefix: string | undefined): Q => {
    if (prefix === undefined || prefix === '') return q
    const end = prefixEnd(prefix)
    let r = q.where(sql<boolean>`${keyOrder} >= ${prefix}`)
    if (end !== undefined) r = r.where(sql<boolean>`${keyOrder} < ${end}`)
    return r as Q
  }

  const store = {
    transaction: <T>(fn: (trx: Trx) => Promise<T>) => k.transaction().execute(fn),

    /** Counts `delta` more rows and raises retired_version to at least `retired` (an import's counter). */
    addKeys,

    /**
     * The caller's live entry under `key`, read in a write's transaction (`read` outside one).
     * On PostgreSQL the row stays locked until the commit: the in-place writes take no user
     * lock, so without it one could commit between this read and the caller's write, which
     * would then check a compare-and-swap against a stale version and write over it.
     */
    get: (ex: Ex, userId: string, key: string, now: number): Promise<KvRow | undefined> => {
      const q = ex.selectFrom('kv_entries').select(KV_COLUMNS).where('user_id', '=', userId).where('key', '=', key).where(live(now))
      return (db.engine === 'postgres' ? q.forUpdate() : q).executeTakeFirst()
    },

    /** The user's key count and what a create of `key` would meet; outside any transaction (one read). */
    quotaState: async (userId: string, key: string, now: number): Promise<{ keys: number; expired: boolean; taken: boolean }> => {
      const [r] = await quotaRow(userId, key, now)
      // PostgreSQL answers booleans and bigint text, SQLite 0/1 and numbers
      return { keys: Number(r?.keys ?? 0), expired: Boolean(Number(r?.expired)), taken: Boolean(Number(r?.taken)) }
    },

    /** `get` outside a transaction, with the query built once. */
    read: async (userId: string, key: string, now: number): Promise<KvRow | undefined> => (await liveRow(userId, key, now))[0],

    /** The account named `username` (lower case), unless it is disabled: the owner of a public counter. */
    enabledOwner: (username: string) =>
      k.selectFrom('users').select(USER_COLUMNS).where('username', '=', username).where('disabled', '=', 0).executeTakeFirst(),

    /** A live public entry of an enabled account, by owner name and key. */
    getPublic: (username: string, key: string, now: number) =>
      k
        .selectFrom('kv_entries')
        .innerJoin('users', 'users.id', 'kv_entries.user_id')
        .select([
          'kv_entries.key',
          'kv_entries.value',
          'kv_entries.data_type',
          'kv_entries.updated_at',
          'kv_entries.expires_at',
          'kv_entries.version',
          'users.username',
        ])
        .where('users.username', '=', username)
        .where('kv_entries.key', '=', key)
        .where('kv_entries.is_public', '=', 1)
        .where('users.disabled', '=', 0)
        .where((eb) => eb.or([eb('kv_entries.expires_at', 'is', null), eb('kv_entries.expires_at', '>', now)]))
        .executeTakeFirst(),

    /**
     * Legacy public read by key across users: the live public entry created first wins; on a
     * tie of created_at, the owner whose username sorts first (byte order).
     */
    getLegacyPublic: (key: string, now: number) =>
      k
        .selectFrom('kv_entries')
        .innerJoin('users', 'users.id', 'kv_entries.user_id')
        .select(['kv_entries.key', 'kv_entries.value', 'kv_entries.data_type', 'kv_entries.updated_at', 'kv_entries.expires_at', 'users.username'])
        .where('kv_entries.key', '=', key)
        .where('kv_entries.is_public', '=', 1)
        .where('users.disabled', '=', 0)
        .where((eb) => eb.or([eb('kv_entries.expires_at', 'is', null), eb('kv_entries.expires_at', '>', now)]))
        .orderBy('kv_entries.created_at', 'asc')
        .orderBy(db.engine === 'postgres' ? sql`${sql.ref('users.username')} collate "C"` : sql`${sql.ref('users.username')}`)
        .limit(1)
        .executeTakeFirst(),

    /** Live keys starting with `prefix` (exact, byte-wise): the same range as `list`. */
    async countPrefix(userId: string, now: number, prefix: string): Promise<number> {
      const r = await keyRange(
        k.selectFrom('kv_entries').select((eb) => eb.fn.countAll<number | string>().as('n')),
        prefix,
      )
        .where('user_id', '=', userId)
        .where(live(now))
        .executeTakeFirstOrThrow()
      return Number(r.n)
    },

    /** Live keys and their bytes. */
    async usage(ex: Ex, userId: string, now: number): Promise<{ keys: number; bytes: number }> {
      const r = await ex
        .selectFrom('kv_entries')
        .select((eb) => [eb.fn.countAll<number | string>().as('keys'), eb.fn.coalesce(eb.fn.sum<number | string>('size'), sql<number>`0`).as('bytes')])
        .where('user_id', '=', userId)
        .where(live(now))
        .executeTakeFirstOrThrow()
      return { keys: Number(r.keys), bytes: Number(r.bytes) }
    },

    /**
     * A page of the caller's live entries, by key in byte order; only keys starting with
     * `prefix` when given, and only keys after `after` (the same index range, its lower bound raised).
     */
    list: (userId: string, now: number, offset: number, limit: number, prefix?: string, after?: string): Promise<KvRow[]> =>
      keyRange(k.selectFrom('kv_entries').select(KV_COLUMNS), prefix)
        .$if(after !== undefined, (q) => q.where(sql<boolean>`${keyOrder} > ${after}`))
        .where('user_id', '=', userId)
        .where(live(now))
        .orderBy(keyOrder)
        .limit(limit)
        .offset(offset)
        .execute(),

    /**
     * A page of the user's live public entries (the public listing), by key in byte order,
     * after `after` and starting with `prefix`: the same index range as `list`, private rows
     * filtered out of it. Only the public read's columns.
     */
    listPublic: (userId: string, now: number, limit: number, prefix?: string, after?: string) =>
      keyRange(k.selectFrom('kv_entries').select(['key', 'value', 'data_type', 'updated_at']), prefix)
        .$if(after !== undefined, (q) => q.where(sql<boolean>`${keyOrder} > ${after}`))
        .where('user_id', '=', userId)
        .where('is_public', '=', 1)
        .where(live(now))
        .orderBy(keyOrder)
        .limit(limit)
        .execute(),

    /**
     * Rows of the user (live or expired but not purged yet): the counter, O(1); and the
     * highest version of their deleted entries (a new entry's version is one above it).
     */
    async keyCount(ex: Ex, userId: string): Promise<{ keys: number; retired: number }> {
      const r = await ex.selectFrom('kv_usage').select(['keys', 'retired_version']).where('user_id', '=', userId).executeTakeFirst()
      return { keys: r ? Number(r.keys) : 0, retired: r ? Number(r.retired_version) : 0 }
    },

    /** Inserts a new entry and counts it, in the caller's transaction (public_incr defaults to 0). */
    insert: async (ex: Ex, row: Omit<KvRow, 'public_incr'> & Partial<Pick<KvRow, 'public_incr'>>): Promise<void> => {
      await ex
        .insertInto('kv_entries')
        .values({ ...row, public_incr: row.public_incr ?? 0 })
        .execute()
      await addKeys(ex, row.user_id, 1)
    },

    /**
     * Creates an entry with no user lock held by the caller and counts it, in one statement on
     * PostgreSQL and one short transaction on SQLite; its version is one above the user's
     * retired_version, read from the counter's row as it is raised. Undefined when the user's
     * counter is at `limit` (expired rows count until purged: the caller's transaction purges
     * and decides); a unique violation when a row holds the key. Exact under concurrency: the
     * counter's conditional upsert runs under its row lock.
     */
    async create(row: Omit<KvRow, 'version'>, limit: number): Promise<KvRow | undefined> {
      if (limit < 1) return undefined
      if (db.engine === 'postgres') {
        const cols = KV_COLUMNS.filter((c) => c !== 'user_id' && c !== 'version')
        return (await pgCreate(row.user_id, limit, ...cols.map((c) => row[c])))[0]
      }
      return k.transaction().execute(async (trx) => {
        const counted = await trx
          .insertInto('kv_usage')
          .values({ user_id: row.user_id, keys: 1, retired_version: 0 })
          .onConflict((oc) =>
            oc
              .column('user_id')
              .doUpdateSet({ keys: sql<number>`kv_usage.keys + 1` })
              .where('kv_usage.keys', '<', limit),
          )
          .returning(['keys', 'retired_version'])
          .executeTakeFirst()
        if (!counted) return undefined
        const created: KvRow = { ...row, version: Number(counted.retired_version) + 1 }
        await trx.insertInto('kv_entries').values(created).execute()
        return created
      })
    },

    /** Replaces the fields of an existing entry (and optionally its key, for a rename). */
    update: async (ex: Ex, userId: string, key: string, set: Omit<KvRow, 'user_id' | 'created_at'>): Promise<void> => {
      await ex.updateTable('kv_entries').set(set).where('user_id', '=', userId).where('key', '=', key).execute()
    },

    /**
     * One statement: adds `by` to a live integer entry and returns the row, or undefined when
     * the entry is missing, expired, not a number, not an integer or would leave 2^53 (the
     * caller then takes the transaction path), or, with `publicOnly`, not a public counter.
     * Integers print the same in SQL and in JS. `count`: how many increments `by` sums
     * (merged writes): version moves by `count` and updated_at by at least `count`, so each of
     * them can be given its own. `expiresAt` and `publicIncr`, when given, are written too.
     */
    incrInPlace: async (
      userId: string,
      key: string,
      by: number,
      now: number,
      o: { expiresAt?: number | null; publicIncr?: number; publicOnly?: boolean; count?: number } = {},
    ): Promise<KvRow | undefined> => {
      const count = o.count ?? 1
      const shape = `${o.expiresAt === undefined ? 0 : 1}${o.publicIncr === undefined ? 0 : 1}${o.publicOnly ? 1 : 0}`
      let run = incrQueries.get(shape)
      if (run === undefined) incrQueries.set(shape, (run = incrQuery(o.expiresAt !== undefined, o.publicIncr !== undefined, o.publicOnly === true)))
      const optional = [o.expiresAt, o.publicIncr].filter((v) => v !== undefined)
      return (await run(userId, key, by, now, now + count - 1, count, ...optional))[0]
    },

    /**
     * One statement: overwrites a live entry and returns it, or undefined when there is no
     * live entry (or `requireJson` and its type is not json). Unset fields keep their values.
     */
    updateInPlace: async (f: Overwrite): Promise<KvRow | undefined> => {
      const optional = [f.tags, f.is_public, f.expires_at, f.public_incr]
      const shape = `${optional.map((v) => (v === undefined ? 0 : 1)).join('')}${f.requireJson ? 1 : 0}`
      let run = updateQueries.get(shape)
      if (run === undefined)
        updateQueries.set(shape, (run = updateQuery(optional.map((v) => v !== undefined) as [boolean, boolean, boolean, boolean], f.requireJson)))
      const rows = await run(f.userId, f.key, f.now, f.value, f.size, f.data_type, ...optional.filter((v) => v !== undefined))
      return rows[0]
    },

    /**
     * Several overwrites of live entries in one statement (one transaction): each item as
     * updateInPlace would write it, given as one JSON parameter. Returns the rows written;
     * an item with no row back had no live entry (or not a json one when `requireJson`).
     * Invariant: no two items name the same entry (one UPDATE writes a row once).
     */
    updateManyInPlace: async (items: readonly Overwrite[]): Promise<KvRow[]> => {
      const json = JSON.stringify(
        items.map((f) => ({
          u: f.userId,
          k: f.key,
          n: f.now,
          v: f.value,
          s: f.size,
          d: f.data_type,
          j: f.requireJson ? 1 : 0,
          t: f.tags ?? null,
          p: f.is_public ?? null,
          q: f.public_incr ?? null,
          x: f.expires_at === undefined ? 0 : 1,
          e: f.expires_at ?? null,
        })),
      )
      return (await overwriteMany(json).execute(k)).rows
    },

    /**
     * Deletes a live entry and uncounts it (one transaction, under the user's lock as every
     * KV write: the same lock order as create); true when one was deleted. `check` sees the
     * live entry first and throws to keep it (a conditional delete).
     */
    remove: (userId: string, key: string, now: number, check?: (row: KvRow) => void): Promise<boolean> =>
      k.transaction().execute(async (trx) => {
        await db.lockUser(trx, userId)
        if (check) {
          const row = await store.get(trx, userId, key, now)
          if (!row) return false
          check(row)
        }
        const gone = await trx
          .deleteFrom('kv_entries')
          .where('user_id', '=', userId)
          .where('key', '=', key)
          .where(live(now))
          .returning(['user_id', 'version'])
          .execute()
        await uncount(trx, gone)
        return gone.length > 0
      }),

    /** Deletes the user's expired rows under these keys (so a new entry can take the key). */
    async purgeExpiredKeys(ex: Ex, userId: string, keys: string[], now: number): Promise<void> {
      const gone = await ex
        .deleteFrom('kv_entries')
        .where('user_id', '=', userId)
        .where('key', 'in', keys)
        .where('expires_at', '<=', now)
        .returning(['user_id', 'version'])
        .execute()
      await uncount(ex, gone)
    },

    /** Deletes all of a user's expired entries (when the counter says the quota is reached). */
    async purgeUserExpired(ex: Ex, userId: string, now: number): Promise<void> {
      const gone = await ex.deleteFrom('kv_entries').where('user_id', '=', userId).where('expires_at', '<=', now).returning(['user_id', 'version']).execute()
      await uncount(ex, gone)
    },

    /**
     * Deletes every expired entry (periodic job) and uncounts exactly the rows deleted; returns
     * how many. On PostgreSQL the owners' rows are locked first, in id order, as KV writes do.
     */
    async purgeExpired(now: number): Promise<number> {
      return k.transaction().execute(async (trx) => {
        if (db.engine === 'postgres') {
          await trx
            .selectFrom('users')
            .select('id')
            .where('id', 'in', trx.selectFrom('kv_entries').select('user_id').where('expires_at', '<=', now))
            .orderBy('id')
            .forUpdate()
            .execute()
        }
        const gone = await trx.deleteFrom('kv_entries').where('expires_at', '<=', now).returning(['user_id', 'version']).execute()
        await uncount(trx, gone)
        return gone.length
      })
    },
  }
  return store
}
export type KvStore = ReturnType<typeof createKvStore>
