import { sql, type ExpressionBuilder, type Kysely, type Migration } from 'kysely'
import type { Database } from '../../db/schema.js'
import type { Db, DB, Trx } from '../../db/kysely.js'

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
  /** 1 on creation, +1 on every write (compare-and-swap token). */
  version: number
  size: number
  created_at: number
  /** Strictly increasing per entry (max(now, previous + 1)), so it is a CAS token too. */
  updated_at: number
  /** Epoch ms after which the entry is gone; null = never. */
  expires_at: number | null
}

declare module '../../db/schema.js' {
  interface Database {
    kv_entries: KvEntriesTable
  }
}

export type KvRow = KvEntriesTable

/** The columns every read selects (all of them, named). */
export const KV_COLUMNS = [
  'user_id', 'key', 'value', 'data_type', 'tags', 'is_public', 'version', 'size', 'created_at', 'updated_at', 'expires_at',
] as const

export const kvMigrations: Record<string, Migration> = {
  '0200-kv-entries': {
    async up(db: Kysely<any>) {
      await db.schema.createTable('kv_entries')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('data_type', 'text', (c) => c.notNull())
        .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('is_public', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('version', 'bigint', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addPrimaryKeyConstraint('kv_entries_pk', ['user_id', 'key'])
        .execute()
      // legacy public read by key across users
      await db.schema.createIndex('kv_entries_key').on('kv_entries').column('key').execute()
      // expiry purge
      await db.schema.createIndex('kv_entries_expires').on('kv_entries').column('expires_at').execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('kv_entries').execute()
    },
  },
}

type Ex = DB | Trx

/** Live = not expired at `now`. */
const live = (now: number) => (eb: ExpressionBuilder<Database, 'kv_entries'>) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])

/**
 * Kysely queries of the key-value store; no rules here. Every read takes `now` and ignores
 * expired rows, so an expired entry is missing everywhere even before it is purged.
 */
export function createKvStore(db: Db) {
  const k = db.k
  /** Byte order on both engines (PostgreSQL's collation could otherwise differ from SQLite's). */
  const keyOrder = db.engine === 'postgres' ? sql`${sql.ref('key')} collate "C"` : sql`${sql.ref('key')}`

  return {
    transaction: <T>(fn: (trx: Trx) => Promise<T>) => k.transaction().execute(fn),

    /** The caller's live entry under `key`. */
    get: (ex: Ex, userId: string, key: string, now: number): Promise<KvRow | undefined> =>
      ex.selectFrom('kv_entries').select(KV_COLUMNS)
        .where('user_id', '=', userId).where('key', '=', key).where(live(now))
        .executeTakeFirst(),

    /** A live public entry of an enabled account, by owner name and key. */
    getPublic: (username: string, key: string, now: number) =>
      k.selectFrom('kv_entries').innerJoin('users', 'users.id', 'kv_entries.user_id')
        .select(['kv_entries.key', 'kv_entries.value', 'kv_entries.data_type', 'kv_entries.updated_at', 'kv_entries.expires_at', 'users.username'])
        .where('users.username', '=', username).where('kv_entries.key', '=', key)
        .where('kv_entries.is_public', '=', 1).where('users.disabled', '=', 0)
        .where((eb) => eb.or([eb('kv_entries.expires_at', 'is', null), eb('kv_entries.expires_at', '>', now)]))
        .executeTakeFirst(),

    /**
     * Legacy public read by key across users: the live public entry created first wins; on a
     * tie of created_at, the owner whose username sorts first (byte order).
     */
    getLegacyPublic: (key: string, now: number) =>
      k.selectFrom('kv_entries').innerJoin('users', 'users.id', 'kv_entries.user_id')
        .select(['kv_entries.key', 'kv_entries.value', 'kv_entries.data_type', 'kv_entries.updated_at', 'kv_entries.expires_at', 'users.username'])
        .where('kv_entries.key', '=', key)
        .where('kv_entries.is_public', '=', 1).where('users.disabled', '=', 0)
        .where((eb) => eb.or([eb('kv_entries.expires_at', 'is', null), eb('kv_entries.expires_at', '>', now)]))
        .orderBy('kv_entries.created_at', 'asc')
        .orderBy(db.engine === 'postgres' ? sql`${sql.ref('users.username')} collate "C"` : sql`${sql.ref('users.username')}`)
        .limit(1)
        .executeTakeFirst(),

    /** Live keys and their bytes. */
    async usage(ex: Ex, userId: string, now: number): Promise<{ keys: number; bytes: number }> {
      const r = await ex.selectFrom('kv_entries')
        .select((eb) => [eb.fn.countAll<number | string>().as('keys'), eb.fn.coalesce(eb.fn.sum<number | string>('size'), sql<number>`0`).as('bytes')])
        .where('user_id', '=', userId).where(live(now))
        .executeTakeFirstOrThrow()
      return { keys: Number(r.keys), bytes: Number(r.bytes) }
    },

    /** A page of the caller's live entries, by key in byte order. */
    list: (userId: string, now: number, offset: number, limit: number): Promise<KvRow[]> =>
      k.selectFrom('kv_entries').select(KV_COLUMNS)
        .where('user_id', '=', userId).where(live(now))
        .orderBy(keyOrder).limit(limit).offset(offset)
        .execute(),

    insert: async (ex: Ex, row: KvRow): Promise<void> => {
      await ex.insertInto('kv_entries').values(row).execute()
    },

    /** Replaces the fields of an existing entry (and optionally its key, for a rename). */
    update: async (ex: Ex, userId: string, key: string, set: Omit<KvRow, 'user_id' | 'created_at'>): Promise<void> => {
      await ex.updateTable('kv_entries').set(set).where('user_id', '=', userId).where('key', '=', key).execute()
    },

    /** Deletes a live entry; true when one was deleted. */
    async remove(ex: Ex, userId: string, key: string, now: number): Promise<boolean> {
      const r = await ex.deleteFrom('kv_entries').where('user_id', '=', userId).where('key', '=', key).where(live(now)).executeTakeFirst()
      return Number(r.numDeletedRows) > 0
    },

    /** Deletes a user's expired entries (lazy purge inside a write transaction). */
    async purgeUserExpired(ex: Ex, userId: string, now: number): Promise<void> {
      await ex.deleteFrom('kv_entries').where('user_id', '=', userId).where('expires_at', '<=', now).execute()
    },

    /** Deletes every expired entry (periodic job); returns how many. */
    async purgeExpired(now: number): Promise<number> {
      const r = await k.deleteFrom('kv_entries').where('expires_at', '<=', now).executeTakeFirst()
      return Number(r.numDeletedRows)
    },
  }
}
export type KvStore = ReturnType<typeof createKvStore>
