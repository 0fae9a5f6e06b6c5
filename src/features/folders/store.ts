import type { Kysely, Migration } from 'kysely'
import type { Db, Trx } from '../../db/kysely.js'

/** A folder project: created by the first batch upload, published explicitly. */
export interface FoldersTable {
  id: string
  user_id: string
  name: string
  is_published: number
  created_at: number
  updated_at: number
  published_at: number | null
}

/** One file of a folder project at a relative path; the bytes are a blob (digest). */
export interface FolderFilesTable {
  folder_id: string
  path: string
  digest: string
  size: number
  content_type: string
  created_at: number
  updated_at: number
}

declare module '../../db/schema.js' {
  interface Database {
    folders: FoldersTable
    folder_files: FolderFilesTable
  }
}

export const foldersMigrations: Record<string, Migration> = {
  '0110-folders': {
    async up(db: Kysely<any>) {
      await db.schema.createTable('folders')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('is_published', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('published_at', 'bigint')
        .addUniqueConstraint('folders_user_name', ['user_id', 'name'])
        .execute()
      await db.schema.createTable('folder_files')
        .addColumn('folder_id', 'text', (c) => c.notNull().references('folders.id').onDelete('cascade'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('folder_files_pk', ['folder_id', 'path'])
        .execute()
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('folder_files').execute()
      await db.schema.dropTable('folders').execute()
    },
  },
}

export const FOLDER_COLUMNS = ['id', 'user_id', 'name', 'is_published', 'created_at', 'updated_at', 'published_at'] as const
export const FOLDER_FILE_COLUMNS = ['folder_id', 'path', 'digest', 'size', 'content_type', 'created_at', 'updated_at'] as const
export type FolderRow = Pick<FoldersTable, (typeof FOLDER_COLUMNS)[number]>
export type FolderFileRow = Pick<FolderFilesTable, (typeof FOLDER_FILE_COLUMNS)[number]>

type Q = Trx | Db['k']

/** Kysely queries of folders and folder_files; no rules here. */
export function createFoldersStore(db: Db) {
  const k = db.k
  return {
    folder: (q: Q, userId: string, name: string) =>
      q.selectFrom('folders').select(FOLDER_COLUMNS).where('user_id', '=', userId).where('name', '=', name).executeTakeFirst(),
    insertFolder: (trx: Trx, row: FoldersTable) => trx.insertInto('folders').values(row).execute(),
    touchFolder: (trx: Trx, id: string, now: number) => trx.updateTable('folders').set({ updated_at: now }).where('id', '=', id).execute(),
    setPublished: async (q: Q, id: string, published: boolean, now: number): Promise<boolean> => {
      const r = await q.updateTable('folders').set({ is_published: published ? 1 : 0, published_at: published ? now : null, updated_at: now })
        .where('id', '=', id).where('is_published', '=', published ? 0 : 1).executeTakeFirst()
      return Number(r.numUpdatedRows) > 0
    },
    /** Which of these paths the folder already holds. */
    async existing(q: Q, folderId: string, paths: string[]): Promise<Map<string, FolderFileRow>> {
      const out = new Map<string, FolderFileRow>()
      for (let i = 0; i < paths.length; i += 200) {
        const chunk = paths.slice(i, i + 200)
        if (chunk.length === 0) continue
        const rows = await q.selectFrom('folder_files').select(FOLDER_FILE_COLUMNS).where('folder_id', '=', folderId).where('path', 'in', chunk).execute()
        for (const r of rows) out.set(r.path, r)
      }
      return out
    },
    insertFile: (trx: Trx, row: FolderFilesTable) => trx.insertInto('folder_files').values(row).execute(),
    updateFile: (trx: Trx, folderId: string, path: string, v: { digest: string; size: number; content_type: string; updated_at: number }) =>
      trx.updateTable('folder_files').set(v).where('folder_id', '=', folderId).where('path', '=', path).execute(),
    file: (q: Q, folderId: string, path: string) =>
      q.selectFrom('folder_files').select(FOLDER_FILE_COLUMNS).where('folder_id', '=', folderId).where('path', '=', path).executeTakeFirst(),
    files: (folderId: string) =>
      k.selectFrom('folder_files').select(FOLDER_FILE_COLUMNS).where('folder_id', '=', folderId).execute(),
    /** The user's projects with their file counts, most recently changed first. */
    projects: (userId: string) =>
      k.selectFrom('folders').leftJoin('folder_files', 'folder_files.folder_id', 'folders.id')
        .select(['folders.name', 'folders.is_published', 'folders.updated_at', (eb) => eb.fn.count<number>('folder_files.path').as('file_count')])
        .where('folders.user_id', '=', userId)
        .groupBy(['folders.id', 'folders.name', 'folders.is_published', 'folders.updated_at'])
        .orderBy('folders.updated_at', 'desc').orderBy('folders.name')
        .execute(),
    async removeFile(folderId: string, path: string): Promise<boolean> {
      const r = await k.deleteFrom('folder_files').where('folder_id', '=', folderId).where('path', '=', path).executeTakeFirst()
      return Number(r.numDeletedRows) > 0
    },
  }
}
export type FoldersStore = ReturnType<typeof createFoldersStore>
