import type { Db, Trx } from '../../db/kysely.js'
import { PREVIEW_SEGMENT } from './paths.js'

/** A folder project: created by the first batch upload, published explicitly. */
export interface FoldersTable {
  id: string
  user_id: string
  name: string
  is_published: number
  created_at: number
  updated_at: number
  published_at: number | null
  /** The project's parsed _redirects and _headers (JSON), taken at its last publish; null: none. */
  site_rules: string | null
  /** The deploy the public host serves while the project is published (deploys-store.ts). */
  live_deploy_id: string | null
  /** 1: the user's user site, served at the root of their origin (at most one per user). */
  user_site: number
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

export const FOLDER_COLUMNS = ['id', 'user_id', 'name', 'is_published', 'created_at', 'updated_at', 'published_at'] as const
export const FOLDER_FILE_COLUMNS = ['folder_id', 'path', 'digest', 'size', 'content_type', 'created_at', 'updated_at'] as const
export type FolderRow = Pick<FoldersTable, (typeof FOLDER_COLUMNS)[number]>
export type FolderFileRow = Pick<FolderFilesTable, (typeof FOLDER_FILE_COLUMNS)[number]>

type Q = Trx | Db['k']

/**
 * What the public host serves for a project segment (hosting/resolver.ts): the deploy that is
 * live for a published project, or for `{project}@{deploy}` that kept deploy of the user's
 * project (a preview, live or not). `id` is the deploy's id; its files and site rules never
 * change, so a switch of the live pointer is one row update and visitors see either deploy whole.
 * `live_since`: when the live deploy went live (the folder's published_at); null for a kept
 * deploy's own URL, whose answers never change.
 */
export async function publishedFolder(
  db: Db,
  userId: string,
  name: string,
): Promise<{ id: string; site_rules: string | null; preview: boolean; live_since: number | null } | undefined> {
  const m = PREVIEW_SEGMENT.exec(name)
  if (m) {
    const d = await db.k
      .selectFrom('deploys')
      .innerJoin('folders', 'folders.id', 'deploys.folder_id')
      .select(['deploys.id', 'deploys.site_rules'])
      .where('deploys.id', '=', m[2])
      .where('folders.user_id', '=', userId)
      .where('folders.name', '=', m[1])
      .executeTakeFirst()
    if (d) return { id: d.id, site_rules: d.site_rules, preview: true, live_since: null }
  }
  const live = await db.k
    .selectFrom('folders')
    .innerJoin('deploys', 'deploys.id', 'folders.live_deploy_id')
    .select(['deploys.id', 'deploys.site_rules', 'folders.published_at'])
    .where('folders.user_id', '=', userId)
    .where('folders.name', '=', name)
    .where('folders.is_published', '=', 1)
    .executeTakeFirst()
  return live && { id: live.id, site_rules: live.site_rules, preview: false, live_since: live.published_at === null ? null : Number(live.published_at) }
}

/**
 * The name of the project a user chose as their user site, while it is published; undefined: none, or not published (the user's origin root is a 404 then).
 */
export async function publishedUserSite(db: Db, userId: string): Promise<string | undefined> {
  const r = await db.k
    .selectFrom('folders')
    .select('name')
    .where('user_id', '=', userId)
    .where('user_site', '=', 1)
    .where('is_published', '=', 1)
    .executeTakeFirst()
  return r?.name
}

/** What the public host needs of a deploy's file to answer it (hosting/resolver.ts). */
export function hostedFolderFile(db: Db, deployId: string, path: string) {
  return db.k
    .selectFrom('deploy_files')
    .select(['digest', 'size', 'content_type', 'updated_at'])
    .where('deploy_id', '=', deployId)
    .where('path', '=', path)
    .executeTakeFirst()
}

/** Kysely queries of folders and folder_files; no rules here. */
export function createFoldersStore(db: Db) {
  const k = db.k
  return {
    folder: (q: Q, userId: string, name: string) =>
      q.selectFrom('folders').select(FOLDER_COLUMNS).where('user_id', '=', userId).where('name', '=', name).executeTakeFirst(),
    insertFolder: (trx: Trx, row: Omit<FoldersTable, 'site_rules' | 'live_deploy_id' | 'user_site'>) =>
      trx
        .insertInto('folders')
        .values({ ...row, site_rules: null, live_deploy_id: null, user_site: 0 })
        .execute(),
    touchFolder: (trx: Trx, id: string, now: number) => trx.updateTable('folders').set({ updated_at: now }).where('id', '=', id).execute(),
    setPublished: async (q: Q, id: string, published: boolean, now: number): Promise<boolean> => {
      const r = await q
        .updateTable('folders')
        .set({ is_published: published ? 1 : 0, published_at: published ? now : null, updated_at: now })
        .where('id', '=', id)
        .where('is_published', '=', published ? 0 : 1)
        .executeTakeFirst()
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
    /** Every path the folder holds. */
    paths: async (q: Q, folderId: string): Promise<string[]> =>
      (await q.selectFrom('folder_files').select('path').where('folder_id', '=', folderId).execute()).map((r) => r.path),
    insertFile: (trx: Trx, row: FolderFilesTable) => trx.insertInto('folder_files').values(row).execute(),
    updateFile: (trx: Trx, folderId: string, path: string, v: { digest: string; size: number; content_type: string; updated_at: number }) =>
      trx.updateTable('folder_files').set(v).where('folder_id', '=', folderId).where('path', '=', path).execute(),
    file: (q: Q, folderId: string, path: string) =>
      q.selectFrom('folder_files').select(FOLDER_FILE_COLUMNS).where('folder_id', '=', folderId).where('path', '=', path).executeTakeFirst(),
    filesOf: (q: Q, folderId: string) => q.selectFrom('folder_files').select(FOLDER_FILE_COLUMNS).where('folder_id', '=', folderId).execute(),
    files: (folderId: string) => k.selectFrom('folder_files').select(FOLDER_FILE_COLUMNS).where('folder_id', '=', folderId).execute(),
    /** The user's projects with their file counts, most recently changed first. */
    projects: (userId: string) =>
      k
        .selectFrom('folders')
        .leftJoin('folder_files', 'folder_files.folder_id', 'folders.id')
        .select([
          'folders.name',
          'folders.is_published',
          'folders.updated_at',
          'folders.user_site',
          (eb) => eb.fn.count<number>('folder_files.path').as('file_count'),
        ])
        .where('folders.user_id', '=', userId)
        .groupBy(['folders.id', 'folders.name', 'folders.is_published', 'folders.updated_at', 'folders.user_site'])
        .orderBy('folders.updated_at', 'desc')
        .orderBy('folders.name')
        .execute(),
    /**
     * Makes `folderId` the user's user site (null: none), the one before it losing the role;
     * true when that changed which project it is.
     */
    async setUserSite(q: Q, userId: string, folderId: string | null): Promise<boolean> {
      const before = await q.selectFrom('folders').select('id').where('user_id', '=', userId).where('user_site', '=', 1).executeTakeFirst()
      if ((before?.id ?? null) === folderId) return false
      if (before) await q.updateTable('folders').set({ user_site: 0 }).where('id', '=', before.id).execute()
      if (folderId !== null) await q.updateTable('folders').set({ user_site: 1 }).where('id', '=', folderId).execute()
      return true
    },
    /** Deletes a project with its files, kept deploys and their files (foreign keys cascade). */
    async removeFolder(q: Q, folderId: string): Promise<void> {
      await q.deleteFrom('folders').where('id', '=', folderId).execute()
    },
    async removeFile(q: Q, folderId: string, path: string): Promise<boolean> {
      const r = await q.deleteFrom('folder_files').where('folder_id', '=', folderId).where('path', '=', path).executeTakeFirst()
      return Number(r.numDeletedRows) > 0
    },
  }
}
export type FoldersStore = ReturnType<typeof createFoldersStore>
