import { sql } from 'kysely'
import type { Db, Trx } from '../../db/kysely.js'
import { addUsage, claimUsage, usageOf } from '../../db/usage.js'

/** Single hosted HTML files: one row per (user, file name); the bytes are a blob (digest). */
export interface FilesTable {
  id: string
  user_id: string
  file_name: string
  project_name: string
  description: string
  digest: string
  size: number
  content_type: string
  is_featured: number
  created_at: number
  updated_at: number | null
}

declare module '../../db/schema.js' {
  interface Database {
    files: FilesTable
  }
}

export const FILE_COLUMNS = ['id', 'user_id', 'file_name', 'project_name', 'digest', 'size', 'content_type', 'is_featured', 'created_at', 'updated_at'] as const
export type FileRow = Pick<FilesTable, (typeof FILE_COLUMNS)[number]>

export interface ListFilter {
  search?: string
  featured?: boolean
}

/** What the public host needs of a file to answer it (hosting/resolver.ts). */
export function hostedFile(db: Db, userId: string, fileName: string) {
  return db.k
    .selectFrom('files')
    .select(['digest', 'size', 'content_type', 'created_at', 'updated_at'])
    .where('user_id', '=', userId)
    .where('file_name', '=', fileName)
    .executeTakeFirst()
}

/** Kysely queries of the files table; no rules here. */
export function createFilesStore(db: Db) {
  const k = db.k
  // case-insensitive on ASCII letters only, identically on both engines (SQLite's lower()
  // folds ASCII only; PostgreSQL's does the same under the "C" collation)
  const lowerCol = (col: 'file_name' | 'project_name') => (db.engine === 'postgres' ? sql`lower(${sql.ref(col)} collate "C")` : sql`lower(${sql.ref(col)})`)
  const lowerVal = (v: string) => (db.engine === 'postgres' ? sql`lower(${v} collate "C")` : sql`lower(${v})`)

  const filtered = (userId: string, f: ListFilter) => {
    let q = k.selectFrom('files').where('user_id', '=', userId)
    if (f.featured !== undefined) q = q.where('is_featured', '=', f.featured ? 1 : 0)
    if (f.search) {
      const pattern = `%${f.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
      q = q.where((eb) =>
        eb.or([
          eb(lowerCol('file_name'), 'like', sql`${lowerVal(pattern)} escape '\\'`),
          eb(lowerCol('project_name'), 'like', sql`${lowerVal(pattern)} escape '\\'`),
        ]),
      )
    }
    return q
  }

  return {
    byName: (trx: Trx | Db['k'], userId: string, fileName: string) =>
      trx.selectFrom('files').select(FILE_COLUMNS).where('user_id', '=', userId).where('file_name', '=', fileName).executeTakeFirst(),
    /** The user's file count: the usage counter, O(1). */
    count: (q: Trx | Db['k'], userId: string): Promise<number> => usageOf(q, userId, 'files'),
    /**
     * Inserts a file if the user's count stays within `limit` (counted in the same
     * transaction); returns null when inserted, else the count that refused it.
     */
    async insert(trx: Trx, row: FilesTable, limit: number): Promise<number | null> {
      const full = await claimUsage(trx, row.user_id, 'files', 1, limit)
      if (full === null) await trx.insertInto('files').values(row).execute()
      return full
    },
    updateContent: (trx: Trx, id: string, v: { digest: string; size: number; content_type: string; updated_at: number }) =>
      trx.updateTable('files').set(v).where('id', '=', id).execute(),
    async list(userId: string, f: ListFilter, limit: number, offset: number): Promise<{ total: number; rows: FileRow[] }> {
      const t = await filtered(userId, f)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
      const rows = await filtered(userId, f)
        .select(FILE_COLUMNS)
        .orderBy('created_at', 'desc')
        .orderBy('file_name', 'asc')
        .limit(limit)
        .offset(offset)
        .execute()
      return { total: Number(t.n), rows }
    },
    /** Deletes a file and uncounts it (one transaction). */
    remove: (userId: string, fileName: string): Promise<boolean> =>
      k.transaction().execute(async (trx) => {
        const r = await trx.deleteFrom('files').where('user_id', '=', userId).where('file_name', '=', fileName).executeTakeFirst()
        const n = Number(r.numDeletedRows)
        await addUsage(trx, userId, 'files', -n)
        return n > 0
      }),
  }
}
export type FilesStore = ReturnType<typeof createFilesStore>
