import crypto from 'node:crypto'
import { sql } from 'kysely'
import type { Db, Trx } from '../../db/kysely.js'

/** One immutable version of a folder project. Its files are deploy_files rows; nothing updates either. */
export interface DeploysTable {
  id: string
  folder_id: string
  /** 1, 2, 3... per project: the order of deploys (times can tie). */
  seq: number
  created_at: number
  file_count: number
  bytes: number
  message: string
  /** Who made it: cli (svc deploy), api (the spec's publish and writes, or an archive deploy), dashboard. */
  source: string
  /** Made without going live (svc deploy --preview); it can be promoted later. */
  is_preview: number
  /** The parsed _redirects and _headers (JSON) of this deploy; null: none. */
  site_rules: string | null
  /** When a preview first went live (promote or rollback to it); null: never, or not a preview. */
  promoted_at: number | null
  /** Made by a write through the file API to a live project (decision 159); kept apart from whole deploys (178). */
  is_partial: number
}

export interface DeployFilesTable {
  deploy_id: string
  path: string
  digest: string
  size: number
  content_type: string
  updated_at: number
}

declare module '../../db/schema.js' {
  interface Database {
    deploys: DeploysTable
    deploy_files: DeployFilesTable
  }
}

export type DeployRow = DeploysTable
export type DeployFileRow = Omit<DeployFilesTable, 'deploy_id'>

type Q = Trx | Db['k']
const CHUNK = 500
const FILE_COLUMNS = ['path', 'digest', 'size', 'content_type', 'updated_at'] as const

/** The working-set rows of a user's projects other than `project` (a query to select from). */
const otherProjects = (q: Q, project: { id: string; user_id: string }) =>
  q
    .selectFrom('folder_files')
    .innerJoin('folders', 'folders.id', 'folder_files.folder_id')
    .where('folders.user_id', '=', project.user_id)
    .where('folders.id', '!=', project.id)

/** Kysely queries of deploys and deploy_files; no rules here. */
export function createDeploysStore() {
  const store = {
    /** Creates a deploy row with a fresh id (12 characters of [0-9a-z]); its files follow in the same transaction. */
    async newDeploy(
      trx: Trx,
      folderId: string,
      v: { source: string; message: string; preview: boolean; siteRules: string | null; now: number; partial?: boolean },
    ): Promise<string> {
      const id = crypto.randomBytes(8).readBigUInt64BE().toString(36).padStart(13, '0').slice(-12)
      // under the user's lock (the caller's transaction): no two deploys of a project get one number
      const last = await trx
        .selectFrom('deploys')
        .select((eb) => eb.fn.max<number>('seq').as('m'))
        .where('folder_id', '=', folderId)
        .executeTakeFirst()
      await trx
        .insertInto('deploys')
        .values({
          id,
          folder_id: folderId,
          seq: Number(last?.m ?? 0) + 1,
          created_at: v.now,
          file_count: 0,
          bytes: 0,
          message: v.message,
          source: v.source,
          is_preview: v.preview ? 1 : 0,
          site_rules: v.siteRules,
          promoted_at: null,
          is_partial: v.partial ? 1 : 0,
        })
        .execute()
      return id
    },

    async insertFiles(trx: Trx, deployId: string, rows: DeployFileRow[]): Promise<void> {
      for (let i = 0; i < rows.length; i += CHUNK) {
        await trx
          .insertInto('deploy_files')
          .values(rows.slice(i, i + CHUNK).map((r) => ({ deploy_id: deployId, ...r })))
          .execute()
      }
    },

    /** Copies the project's working set (folder_files) into a new deploy. */
    async snapshotWorkingSet(trx: Trx, deployId: string, folderId: string): Promise<void> {
      await sql`INSERT INTO deploy_files (deploy_id, path, digest, size, content_type, updated_at)
        SELECT ${deployId}, path, digest, size, content_type, updated_at FROM folder_files WHERE folder_id = ${folderId}`.execute(trx)
    },

    /** A deploy's file count and bytes, from its rows. */
    async countFiles(trx: Trx, deployId: string): Promise<{ count: number; bytes: number }> {
      const r = await trx
        .selectFrom('deploy_files')
        .select([(eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.sum<number>('size').as('b')])
        .where('deploy_id', '=', deployId)
        .executeTakeFirstOrThrow()
      return { count: Number(r.n), bytes: Number(r.b ?? 0) }
    },

    setCounts: (trx: Trx, id: string, count: number, bytes: number) =>
      trx.updateTable('deploys').set({ file_count: count, bytes }).where('id', '=', id).execute(),

    /** The live pointer: one row update (in the caller's transaction). */
    setLive: (trx: Trx, folderId: string, deployId: string, now: number) =>
      trx.updateTable('folders').set({ live_deploy_id: deployId, is_published: 1, published_at: now, updated_at: now }).where('id', '=', folderId).execute(),

    /** Marks a preview as having gone live (its first promote or rollback); other deploys are left alone. */
    markPromoted: (trx: Trx, deployId: string, now: number) =>
      trx.updateTable('deploys').set({ promoted_at: now }).where('id', '=', deployId).where('is_preview', '=', 1).where('promoted_at', 'is', null).execute(),

    /**
     * A plain rollback's targets: deploys visitors had whole (made live, or a preview promoted
     * since), not a partial state file-API writes left (decision 159).
     */
    wentLive: (d: Pick<DeployRow, 'is_preview' | 'promoted_at' | 'is_partial'>): boolean => !d.is_partial && (!d.is_preview || d.promoted_at !== null),

    get: (q: Q, folderId: string, id: string) => q.selectFrom('deploys').selectAll().where('folder_id', '=', folderId).where('id', '=', id).executeTakeFirst(),

    /** A project's deploys, newest first. */
    list: (q: Q, folderId: string) => q.selectFrom('deploys').selectAll().where('folder_id', '=', folderId).orderBy('seq', 'desc').execute(),

    /** A project's working set, the columns a deploy's rows take. */
    working: (q: Q, folderId: string): Promise<DeployFileRow[]> =>
      q.selectFrom('folder_files').select(FILE_COLUMNS).where('folder_id', '=', folderId).execute(),

    files: (q: Q, deployId: string) =>
      q.selectFrom('deploy_files').select(['path', 'digest', 'size', 'content_type', 'updated_at']).where('deploy_id', '=', deployId).execute(),

    /**
     * Deletes the deploys past the newest `keep`, never the live one; their files go with them
     * (cascade). Partial deploys (file-API writes) are counted apart, `keep` of each kind, so a
     * run of writes pushes out only older writes, never a whole deploy (decision 178).
     */
    async prune(trx: Trx, folderId: string, keep: number, liveId: string | null): Promise<number> {
      const all = await trx.selectFrom('deploys').select(['id', 'is_partial']).where('folder_id', '=', folderId).orderBy('seq', 'desc').execute()
      const gone = [0, 1].flatMap((partial) =>
        all
          .filter((d) => Number(d.is_partial) === partial)
          .slice(keep)
          .map((d) => d.id)
          .filter((id) => id !== liveId),
      )
      for (let i = 0; i < gone.length; i += CHUNK) {
        const ids = gone.slice(i, i + CHUNK)
        // explicit: SQLite's cascade needs foreign_keys on, and the order matters on neither engine
        await trx.deleteFrom('deploy_files').where('deploy_id', 'in', ids).execute()
        await trx.deleteFrom('deploys').where('id', 'in', ids).execute()
      }
      return gone.length
    },

    /**
     * Files the user holds for some digests, for a deploy of one project: the project's working
     * set first (the usual case: a file unchanged since the last deploy), then its kept deploys,
     * then the working sets of the user's other projects (a copy of a site sends nothing again).
     * `working`: the project's working set when the caller has read it already; `others`
     * false: not the other projects.
     * Scoped to the user, so a deploy never learns whether another user stored some bytes.
     */
    async known(
      q: Q,
      project: { id: string; user_id: string },
      digests: Set<string>,
      working?: readonly DeployFileRow[],
      others = true,
    ): Promise<Map<string, DeployFileRow>> {
      const out = new Map<string, DeployFileRow>()
      if (digests.size === 0) return out
      const rows = working ?? (await store.working(q, project.id))
      for (const r of rows) if (digests.has(r.digest) && !out.has(r.digest)) out.set(r.digest, r)
      if (out.size === digests.size) return out
      // the kept deploys hold every file of each: only the rows of the digests still missing
      // leave the database (a one-file redeploy asked for one, and once read them all)
      const rest = [...digests].filter((d) => !out.has(d))
      for (let i = 0; i < rest.length; i += CHUNK) {
        const more = await q
          .selectFrom('deploy_files')
          .innerJoin('deploys', 'deploys.id', 'deploy_files.deploy_id')
          .select(['deploy_files.path', 'deploy_files.digest', 'deploy_files.size', 'deploy_files.content_type', 'deploy_files.updated_at'])
          .where('deploys.folder_id', '=', project.id)
          .where('deploy_files.digest', 'in', rest.slice(i, i + CHUNK))
          .orderBy('deploys.seq', 'desc')
          .execute()
        for (const r of more) if (!out.has(r.digest)) out.set(r.digest, r)
      }
      if (out.size === digests.size || !others) return out
      const theirs = await otherProjects(q, project)
        .select(FILE_COLUMNS.map((c) => `folder_files.${c}` as const))
        .execute()
      for (const r of theirs) if (digests.has(r.digest) && !out.has(r.digest)) out.set(r.digest, r)
      return out
    },

    /**
     * Which of some digests the user holds for a deploy of one project (as known; the working
     * sets are read as digests only). Past the project's working set, only digests `mayHold`
     * lets through are looked up: a new file's bytes, stored nowhere, need no search of the
     * deploys and projects.
     */
    async held(q: Q, project: { id: string; user_id: string }, digests: Set<string>, mayHold: (digest: string) => boolean = () => true): Promise<Set<string>> {
      const out = new Set<string>()
      if (digests.size === 0) return out
      const working = await q.selectFrom('folder_files').select('digest').where('folder_id', '=', project.id).execute()
      for (const r of working) if (digests.has(r.digest)) out.add(r.digest)
      const rest = new Set([...digests].filter((d) => !out.has(d) && mayHold(d)))
      if (rest.size === 0) return out
      for (const d of (await store.known(q, project, rest, [], false)).keys()) {
        out.add(d)
        rest.delete(d)
      }
      if (rest.size === 0) return out
      for (const r of await otherProjects(q, project).select('folder_files.digest').execute()) if (rest.has(r.digest)) out.add(r.digest)
      return out
    },

    /** Writes files into the working set (replacing those at the same paths) and removes others. */
    async replaceWorking(trx: Trx, folderId: string, rows: DeployFileRow[], gone: string[], now: number): Promise<void> {
      const drop = [...gone, ...rows.map((r) => r.path)]
      for (let i = 0; i < drop.length; i += CHUNK) {
        await trx
          .deleteFrom('folder_files')
          .where('folder_id', '=', folderId)
          .where('path', 'in', drop.slice(i, i + CHUNK))
          .execute()
      }
      for (let i = 0; i < rows.length; i += CHUNK) {
        await trx
          .insertInto('folder_files')
          .values(rows.slice(i, i + CHUNK).map((r) => ({ folder_id: folderId, ...r, created_at: now })))
          .execute()
      }
    },

    /** Makes the working set equal to a deploy's files (two statements, only differing rows change). */
    async syncWorkingSet(trx: Trx, folderId: string, deployId: string): Promise<void> {
      await sql`DELETE FROM folder_files WHERE folder_id = ${folderId} AND NOT EXISTS (
        SELECT 1 FROM deploy_files d WHERE d.deploy_id = ${deployId} AND d.path = folder_files.path
          AND d.digest = folder_files.digest AND d.content_type = folder_files.content_type)`.execute(trx)
      await sql`INSERT INTO folder_files (folder_id, path, digest, size, content_type, created_at, updated_at)
        SELECT ${folderId}, d.path, d.digest, d.size, d.content_type, d.updated_at, d.updated_at FROM deploy_files d
        WHERE d.deploy_id = ${deployId} AND NOT EXISTS (SELECT 1 FROM folder_files f WHERE f.folder_id = ${folderId} AND f.path = d.path)`.execute(trx)
    },

    /**
     * A live deploy of the working set, in the caller's transaction: the spec's publish, and
     * the spec's writes to a live project (so every write still shows at once), which are
     * marked `partial`. A deploy is never replaced: each keeps its preview, with its own
     * files, until retention prunes it (decision 178, refining 159).
     */
    async deployWorkingSet(
      trx: Trx,
      folderId: string,
      v: { source: string; siteRules: string | null; now: number; keep: number; partial?: boolean },
    ): Promise<string> {
      const id = await store.newDeploy(trx, folderId, { source: v.source, message: '', preview: false, siteRules: v.siteRules, now: v.now, partial: v.partial })
      await store.snapshotWorkingSet(trx, id, folderId)
      const { count, bytes } = await store.countFiles(trx, id)
      await store.setCounts(trx, id, count, bytes)
      await store.setLive(trx, folderId, id, v.now)
      await store.prune(trx, folderId, v.keep, id)
      return id
    },
  }
  return store
}
export type DeploysStore = ReturnType<typeof createDeploysStore>
