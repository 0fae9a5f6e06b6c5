import type { DB, Db, Trx } from '../../db/kysely.js'
import { addUsage, claimUsage, usagesOf } from '../../db/usage.js'

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

const COLUMNS = [
  'id',
  'user_id',
  'public_token',
  'file_name',
  'remark',
  'content_type',
  'size',
  'digest',
  'width',
  'height',
  'locked',
  'created_at',
  'updated_at',
] as const
export type ImageRow = ImagesTable

/** What the public link needs, by token. */
export interface PublicImage {
  digest: string
  content_type: string
  size: number
  /** The image's last change (ms): moved forward by every replace, so Last-Modified never goes back. */
  updated_at: number
}

const toRow = (r: ImagesTable): ImageRow => ({
  ...r,
  size: Number(r.size),
  locked: Number(r.locked),
  created_at: Number(r.created_at),
  updated_at: Number(r.updated_at),
  width: r.width === null ? null : Number(r.width),
  height: r.height === null ? null : Number(r.height),
})

/** Takes a deleted image out of its owner's counters (in the deleting transaction). */
export async function uncountImage(trx: Trx, userId: string, size: number): Promise<void> {
  await addUsage(trx, userId, 'images', -1)
  await addUsage(trx, userId, 'image_bytes', -size)
}

/** Kysely queries of the image host (named columns only). */
export function createImageStore(db: Db) {
  const k = db.k
  return {
    /** Image count and total bytes of a user: the usage counters, O(1). */
    async usage(userId: string, q: DB | Trx = k): Promise<{ count: number; bytes: number }> {
      const u = await usagesOf(q, userId, ['images', 'image_bytes'] as const)
      return { count: u.images, bytes: u.image_bytes }
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
    /**
     * Inserts the rows if the user's image count and bytes stay within the limits, counting
     * them in the same transaction. Returns null when inserted, else which counter refused
     * and its value.
     */
    async insert(
      trx: Trx,
      userId: string,
      rows: ImageRow[],
      max: { images: number; bytes: number },
    ): Promise<{ over: 'count' | 'bytes'; used: number } | null> {
      if (rows.length === 0) return null
      const n = await claimUsage(trx, userId, 'images', rows.length, max.images)
      if (n !== null) return { over: 'count', used: n }
      const b = await claimUsage(
        trx,
        userId,
        'image_bytes',
        rows.reduce((a, r) => a + r.size, 0),
        max.bytes,
      )
      if (b !== null) return { over: 'bytes', used: b }
      await trx.insertInto('images').values(rows).execute()
      return null
    },
    async list(userId: string, offset: number, limit: number): Promise<ImageRow[]> {
      const rows = await k
        .selectFrom('images')
        .select(COLUMNS)
        .where('user_id', '=', userId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .offset(offset)
        .limit(limit)
        .execute()
      return rows.map(toRow)
    },
    async get(userId: string, token: string, q: DB | Trx = k): Promise<ImageRow | undefined> {
      const r = await q.selectFrom('images').select(COLUMNS).where('user_id', '=', userId).where('public_token', '=', token).executeTakeFirst()
      return r && toRow(r)
    },
    /** What a public link serves; images of a disabled account are not served. */
    async publicGet(token: string): Promise<PublicImage | undefined> {
      const r = await k
        .selectFrom('images as i')
        .innerJoin('users as u', 'u.id', 'i.user_id')
        .select(['i.digest', 'i.content_type', 'i.size', 'i.updated_at'])
        .where('i.public_token', '=', token)
        .where('u.disabled', '=', 0)
        .executeTakeFirst()
      return r && { digest: r.digest, content_type: r.content_type, size: Number(r.size), updated_at: Number(r.updated_at) }
    },
    async updateMeta(userId: string, token: string, set: { remark?: string; file_name?: string }, now: number): Promise<boolean> {
      const r = await k
        .updateTable('images')
        .set({ ...set, updated_at: now })
        .where('user_id', '=', userId)
        .where('public_token', '=', token)
        .executeTakeFirst()
      return Number(r.numUpdatedRows) === 1
    },
    async replaceContent(
      trx: Trx,
      id: string,
      set: Pick<ImageRow, 'digest' | 'size' | 'content_type' | 'width' | 'height' | 'file_name' | 'updated_at'>,
    ): Promise<void> {
      await trx.updateTable('images').set(set).where('id', '=', id).execute()
    },
    /**
     * Moves the user's byte counter by a replacement's size change (the caller holds the user's
     * lock, so `delta` is from the row as it is); returns null when done, else the counter
     * that refused a growth past `max`.
     */
    async resize(trx: Trx, userId: string, delta: number, max: number): Promise<number | null> {
      if (delta > 0) return claimUsage(trx, userId, 'image_bytes', delta, max)
      await addUsage(trx, userId, 'image_bytes', delta)
      return null
    },
    /** Deletes an unlocked image; 'locked' or 'missing' otherwise. */
    async remove(userId: string, token: string): Promise<'deleted' | 'locked' | 'missing'> {
      return k.transaction().execute(async (trx) => {
        // under the user's lock, as a replace: its size change is counted from the row as it
        // is, so the row must not go between its read and its update
        await db.lockUser(trx, userId)
        const r = await trx.selectFrom('images').select(['id', 'locked']).where('user_id', '=', userId).where('public_token', '=', token).executeTakeFirst()
        if (!r) return 'missing'
        if (Number(r.locked)) return 'locked'
        // the size as deleted (not as read before), so the byte counter loses exactly it
        const d = await trx.deleteFrom('images').where('id', '=', r.id).where('locked', '=', 0).returning('size').executeTakeFirst()
        if (!d) return 'locked'
        await uncountImage(trx, userId, Number(d.size))
        return 'deleted'
      })
    },
  }
}

export type ImageStore = ReturnType<typeof createImageStore>
