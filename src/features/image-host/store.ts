import { sql, type Kysely, type Migration } from 'kysely'
import type { DB, Db, Trx } from '../../db/kysely.js'

/** One hosted image. `digest` points to the blob; `locked` is set by `svc lock image`. */
export interface ImagesTable {
  id: string
  user_id: string
  public_token: string
  file_name: string
  remark: string
  content_type: string
  size: number
  digest: string
  width: number | null
  height: number | null
  locked: number
  created_at: number
  updated_at: number
}

declare module '../../db/schema.js' {
  interface Database {
    images: ImagesTable
  }
}

export const imageMigrations: Record<string, Migration> = {
  '0400-images': {
    async up(db: Kysely<any>) {
      await db.schema.createTable('images')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('public_token', 'text', (c) => c.notNull().unique())
        .addColumn('file_name', 'text', (c) => c.notNull())
        .addColumn('remark', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('width', 'integer')
        .addColumn('height', 'integer')
        .addColumn('locked', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('images_user_created').on('images').columns(['user_id', 'created_at']).execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('images').execute()
    },
  },
}

const COLUMNS = ['id', 'user_id', 'public_token', 'file_name', 'remark', 'content_type', 'size', 'digest', 'width', 'height', 'locked', 'created_at', 'updated_at'] as const
export type ImageRow = ImagesTable

/** What the public link needs, by token. */
export interface PublicImage {
  digest: string
  content_type: string
  size: number
}

const toRow = (r: ImagesTable): ImageRow => ({
  ...r, size: Number(r.size), locked: Number(r.locked), created_at: Number(r.created_at), updated_at: Number(r.updated_at),
  width: r.width === null ? null : Number(r.width), height: r.height === null ? null : Number(r.height),
})

/** Kysely queries of the image host (named columns only). */
export function createImageStore(db: Db) {
  const k = db.k
  return {
    /** Image count and total bytes of a user (inside a transaction when `q` is one). */
    async usage(userId: string, q: DB | Trx = k): Promise<{ count: number; bytes: number }> {
      const r = await q.selectFrom('images')
        .select([sql<number>`count(*)`.as('n'), sql<number>`coalesce(sum(size), 0)`.as('b')])
        .where('user_id', '=', userId).executeTakeFirstOrThrow()
      return { count: Number(r.n), bytes: Number(r.b) }
    },
    /** The user's quota overrides (JSON text), read in the write transaction. */
    async userLimits(trx: Trx, userId: string): Promise<string> {
      const r = await trx.selectFrom('users').select('limits').where('id', '=', userId).executeTakeFirst()
      return r?.limits ?? '{}'
    },
    async hasEntitlement(userId: string, feature: string): Promise<boolean> {
      const r = await k.selectFrom('entitlements').select('feature').where('user_id', '=', userId).where('feature', '=', feature).executeTakeFirst()
      return !!r
    },
    async insert(trx: Trx, rows: ImageRow[]): Promise<void> {
      if (rows.length > 0) await trx.insertInto('images').values(rows).execute()
    },
    async list(userId: string, offset: number, limit: number): Promise<ImageRow[]> {
      const rows = await k.selectFrom('images').select(COLUMNS).where('user_id', '=', userId)
        .orderBy('created_at', 'desc').orderBy('id', 'desc').offset(offset).limit(limit).execute()
      return rows.map(toRow)
    },
    async get(userId: string, token: string, q: DB | Trx = k): Promise<ImageRow | undefined> {
      const r = await q.selectFrom('images').select(COLUMNS).where('user_id', '=', userId).where('public_token', '=', token).executeTakeFirst()
      return r && toRow(r)
    },
    async publicGet(token: string): Promise<PublicImage | undefined> {
      const r = await k.selectFrom('images').select(['digest', 'content_type', 'size']).where('public_token', '=', token).executeTakeFirst()
      return r && { digest: r.digest, content_type: r.content_type, size: Number(r.size) }
    },
    async updateMeta(userId: string, token: string, set: { remark?: string; file_name?: string }, now: number): Promise<boolean> {
      const r = await k.updateTable('images').set({ ...set, updated_at: now })
        .where('user_id', '=', userId).where('public_token', '=', token).executeTakeFirst()
      return Number(r.numUpdatedRows) === 1
    },
    async replaceContent(trx: Trx, id: string, set: Pick<ImageRow, 'digest' | 'size' | 'content_type' | 'width' | 'height' | 'file_name' | 'updated_at'>): Promise<void> {
      await trx.updateTable('images').set(set).where('id', '=', id).execute()
    },
    /** Deletes an unlocked image; 'locked' or 'missing' otherwise. */
    async remove(userId: string, token: string): Promise<'deleted' | 'locked' | 'missing'> {
      return k.transaction().execute(async (trx) => {
        const r = await trx.selectFrom('images').select(['id', 'locked']).where('user_id', '=', userId).where('public_token', '=', token).executeTakeFirst()
        if (!r) return 'missing'
        if (Number(r.locked)) return 'locked'
        const d = await trx.deleteFrom('images').where('id', '=', r.id).where('locked', '=', 0).executeTakeFirst()
        return Number(d.numDeletedRows) === 1 ? 'deleted' : 'locked'
      })
    },
  }
}

export type ImageStore = ReturnType<typeof createImageStore>
