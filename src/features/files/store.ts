import { sql, type Kysely, type Migration } from 'kysely'
import type { Db, Trx } from '../../db/kysely.js'

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

export const filesMigrations: Record<string, Migration> = {
  '0100-files': {
    async up(db: Kysely<any>) {
      await db.schema.createTable('files')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('file_name', 'text', (c) => c.notNull())
        .addColumn('project_name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('is_featured', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint')
        .addUniqueConstraint('files_user_name', ['user_id', 'file_name'])
        .execute()
      await db.schema.createIndex('files_user_created').on('files').columns(['user_id', 'created_at']).execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('files').execute()
    },
  },
}

export const FILE_COLUMNS = ['id', 'user_id', 'file_name', 'project_name', 'digest', 'size', 'content_type', 'is_featured', 'created_at', 'updated_at'] as const
export type FileRow = Pick<FilesTable, (typeof FILE_COLUMNS)[number]>

export interface ListFilter {
  search?: string
  featured?: boolean
}

/** Kysely queries of the files table; no rules here. */
export function createFilesStore(db: Db) {
  const k = db.k
  // case-insensitive on ASCII letters only, identically on both engines (SQLite's lower()
  // folds ASCII only; PostgreSQL's does the same under the "C" collation)
  const lowerCol = (col: 'file_name' | 'project_name') =>
    db.engine === 'postgres' ? sql`lower(${sql.ref(col)} collate "C")` : sql`lower(${sql.ref(col)})`
  const lowerVal = (v: string) => (db.engine === 'postgres' ? sql`lower(${v} collate "C")` : sql`lower(${v})`)

  const filtered = (userId: string, f: ListFilter) => {
    let q = k.selectFrom('files').where('user_id', '=', userId)
    if (f.featured !== undefined) q = q.where('is_featured', '=', f.featured ? 1 : 0)
    if (f.search) {
      const pattern = `%${f.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
      q = q.where((eb) => eb.or([
        eb(lowerCol('file_name'), 'like', sql`${lowerVal(pattern)} escape '\\'`),
        eb(lowerCol('project_name'), 'like', sql`${lowerVal(pattern)} escape '\\'`),
      ]))
    }
    return q
  }

  return {
    byName: (trx: Trx | Db['k'], userId: string, fileName: string) =>
      trx.selectFrom('files').select(FILE_COLUMNS).where('user_id', '=', userId).where('file_name', '=', fileName).executeTakeFirst(),
    count: async (trx: Trx | Db['k'], userId: string): Promise<number> => {
      const r = await trx.selectFrom('files').select((eb) => eb.fn.countAll<number>().as('n')).where('user_id', '=', userId).executeTakeFirstOrThrow()
      return Number(r.n)
    },
    insert: (trx: Trx, row: FilesTable) => trx.insertInto('files').values(row).execute(),
    updateContent: (trx: Trx, id: string, v: { digest: string; size: number; content_type: string; updated_at: number }) =>
      trx.updateTable('files').set(v).where('id', '=', id).execute(),
    async list(userId: string, f: ListFilter, limit: number, offset: number): Promise<{ total: number; rows: FileRow[] }> {
      const t = await filtered(userId, f).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
      const rows = await filtered(userId, f).select(FILE_COLUMNS)
        .orderBy('created_at', 'desc').orderBy('file_name', 'asc').limit(limit).offset(offset).execute()
      return { total: Number(t.n), rows }
    },
    async remove(userId: string, fileName: string): Promise<boolean> {
      const r = await k.deleteFrom('files').where('user_id', '=', userId).where('file_name', '=', fileName).executeTakeFirst()
      return Number(r.numDeletedRows) > 0
    },
  }
}
export type FilesStore = ReturnType<typeof createFilesStore>
