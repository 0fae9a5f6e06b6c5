import { sql } from 'kysely'
import type { Db, Trx } from '../../db/kysely.js'
import { AppError } from '../../errors/app-error.js'
import { addUsage } from '../../db/usage.js'
import { uncountImage } from '../image-host/store.js'
import { deleteHostedFile } from '../hosted-data/store.js'

/** A report: from the public form (source "public") or from the upload heuristics ("heuristic"). */
export interface AbuseReportsTable {
  id: string
  url: string
  category: string
  details: string
  contact: string
  source: string
  reporter_ip: string
  /** open, quarantined, restored, taken_down, lifted, dismissed. */
  status: string
  /** The content it is about (service.ts targetKey), once known: site:{user}/{name}, image:{token}, data:{token}. */
  target: string | null
  target_user_id: string | null
  created_at: number
  updated_at: number
  resolved_by: string | null
}

/** Content that answers 451: quarantined (kept, hidden) or removed (taken down). */
export interface ContentHoldsTable {
  target: string
  state: string
  user_id: string
  report_id: string
  created_at: number
  created_by: string
}

/** The bytes a report is about, kept as evidence (the sweeper keeps these blobs). */
export interface AbuseEvidenceTable {
  report_id: string
  path: string
  digest: string
  size: number
  content_type: string
  created_at: number
}

/** Digests refused at upload (content taken down). */
export interface BlockedDigestsTable {
  digest: string
  report_id: string
  created_at: number
  created_by: string
}

declare module '../../db/schema.js' {
  interface Database {
    abuse_reports: AbuseReportsTable
    content_holds: ContentHoldsTable
    abuse_evidence: AbuseEvidenceTable
    blocked_digests: BlockedDigestsTable
  }
}

export type ReportRow = AbuseReportsTable

type Q = Trx | Db['k']

/**
 * Every account's page and project file: its digest, when its row got those bytes (a page's
 * last change), whose it is and under which name; grouped by digest, the earliest time.
 */
const earliest = (q: Q) =>
  q
    .selectFrom(
      q
        .selectFrom('files')
        .select(['digest', sql<number>`coalesce(updated_at, created_at)`.as('at'), 'user_id', 'file_name as name'])
        .unionAll(
          q
            .selectFrom('folder_files')
            .innerJoin('folders', 'folders.id', 'folder_files.folder_id')
            .select(['folder_files.digest as digest', sql<number>`folder_files.updated_at`.as('at'), 'folders.user_id as user_id', 'folders.name as name']),
        )
        .as('r'),
    )
    .select(['r.digest', sql<number>`min(r.at)`.as('at')])
    .groupBy('r.digest')

/**
 * Which of these digests are blocked (at most `limit` of them): uploads and new references of
 * their bytes are refused (the blob store's put and admit checks, wired in compose.ts).
 */
export async function blockedDigests(q: Q, digests: Iterable<string>, limit = Infinity): Promise<Set<string>> {
  const all = [...new Set(digests)]
  const out = new Set<string>()
  for (let i = 0; i < all.length && out.size < limit; i += 500) {
    let query = q
      .selectFrom('blocked_digests')
      .select('digest')
      .where('digest', 'in', all.slice(i, i + 500))
    if (Number.isFinite(limit)) query = query.limit(limit - out.size)
    for (const r of await query.execute()) out.add(r.digest)
  }
  return out
}

/** Whether any of these digests is blocked (blockedDigests). */
export async function anyBlockedDigest(q: Q, digests: Iterable<string>): Promise<boolean> {
  return (await blockedDigests(q, digests, 1)).size > 0
}

/**
 * The blob store's check asked again inside a writer's transaction, right after it took the
 * user's lock: a takedown takes that lock too, so it either committed before (its digests are
 * seen here: 451 / 1701) or waits and then finds the rows this transaction writes. Without
 * it, bytes checked by put or admit before a takedown would be committed after it.
 */
export async function refuseBlocked(trx: Trx, digests: Iterable<string>): Promise<void> {
  if (await anyBlockedDigest(trx, digests)) throw new AppError('CONTENT_BLOCKED')
}

/** The hold key of a user's page name (a single file's or a folder project's), as the public host resolves it: lower-case user, NFC name. */
export const siteHoldKey = (username: string, name: string): string => `site:${username.toLowerCase()}/${name.normalize('NFC')}`

/**
 * A writer's check, under the user's lock, that what it changes is not held for review: a page
 * name (siteHoldKey), an image link (`image:{token}`) or a data link (`data:{token}`), keyed as
 * service.ts targetKey. A quarantine takes that lock too, so it either committed before (refused
 * here: 451 / 1710) or runs after and keeps what this write committed as its evidence. Without
 * it, bytes no admin saw would go live behind the hold (decisions 165, 168). A takedown's hold
 * refuses nothing here: its rows are gone and its bytes blocked (refuseBlocked).
 */
export async function refuseHeld(trx: Trx, target: string): Promise<void> {
  const h = await trx.selectFrom('content_holds').select('state').where('target', '=', target).executeTakeFirst()
  if (h?.state === 'quarantined') throw new AppError('CONTENT_HELD')
}

/**
 * The hold state (quarantined, removed) of each of `targets` that is held, read in `trx`: a
 * reader's fresh look under the owner's lock, which a quarantine and a takedown take too, so
 * a hold either committed before and is seen here, or is placed after this transaction.
 */
export async function holdStates(trx: Trx, targets: readonly string[]): Promise<Map<string, string>> {
  if (targets.length === 0) return new Map()
  const rows = await trx
    .selectFrom('content_holds')
    .select(['target', 'state'])
    .where('target', 'in', [...new Set(targets)])
    .execute()
  return new Map(rows.map((r) => [r.target, r.state]))
}

/** Kysely queries of the abuse tables, and the deletions of a takedown in other features' tables. */
export function createAbuseStore(db: Db) {
  const k = db.k
  return {
    insertReport: (row: AbuseReportsTable) => k.insertInto('abuse_reports').values(row).execute(),
    report: (id: string, q: Q = k) => q.selectFrom('abuse_reports').selectAll().where('id', '=', id).executeTakeFirst(),
    openHeuristic: (target: string) =>
      k.selectFrom('abuse_reports').select('id').where('target', '=', target).where('source', '=', 'heuristic').where('status', '=', 'open').executeTakeFirst(),
    /** A page of reports, newest first, each with its content's owner's username (`owner`, null when none). */
    async reports(status: string | undefined, limit: number, offset: number) {
      let q = k.selectFrom('abuse_reports')
      if (status) q = q.where('abuse_reports.status', '=', status)
      const total = Number((await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
      const rows = await q
        .leftJoin('users', 'users.id', 'abuse_reports.target_user_id')
        .selectAll('abuse_reports')
        .select('users.username as owner')
        .orderBy('abuse_reports.created_at', 'desc')
        .orderBy('abuse_reports.id')
        .limit(limit)
        .offset(offset)
        .execute()
      return { total, rows }
    },
    setReport: (q: Q, id: string, v: Partial<Pick<AbuseReportsTable, 'status' | 'target' | 'target_user_id' | 'updated_at' | 'resolved_by'>>) =>
      q.updateTable('abuse_reports').set(v).where('id', '=', id).execute(),
    /**
     * Moves a report on only while its status is one of `from`: the check and the change are one
     * statement (on PostgreSQL the row stays locked to the end of the transaction, and a second
     * mover waits, then finds the status changed). Whether it moved.
     */
    async moveReport(q: Q, id: string, from: readonly string[], v: Pick<AbuseReportsTable, 'status' | 'updated_at' | 'resolved_by'>): Promise<boolean> {
      const r = await q.updateTable('abuse_reports').set(v).where('id', '=', id).where('status', 'in', from).executeTakeFirst()
      return Number(r.numUpdatedRows) > 0
    },

    holds: () => k.selectFrom('content_holds').select(['target', 'state']).execute(),
    /** One owner's holds, newest first, each with its report's category (for the owner's dashboard). */
    ownerHolds: (userId: string, limit: number) =>
      k
        .selectFrom('content_holds')
        .leftJoin('abuse_reports', 'abuse_reports.id', 'content_holds.report_id')
        .select(['content_holds.target', 'content_holds.state', 'content_holds.created_at', 'abuse_reports.category'])
        .where('content_holds.user_id', '=', userId)
        .orderBy('content_holds.created_at', 'desc')
        .limit(limit)
        .execute(),
    hold: (q: Q, target: string) => q.selectFrom('content_holds').selectAll().where('target', '=', target).executeTakeFirst(),
    putHold: (q: Q, row: ContentHoldsTable) =>
      q
        .insertInto('content_holds')
        .values(row)
        .onConflict((oc) =>
          oc.column('target').doUpdateSet({ state: row.state, report_id: row.report_id, created_at: row.created_at, created_by: row.created_by }),
        )
        .execute(),
    dropHold: (q: Q, target: string) => q.deleteFrom('content_holds').where('target', '=', target).execute(),

    evidence: (reportId: string, q: Q = k) => q.selectFrom('abuse_evidence').selectAll().where('report_id', '=', reportId).orderBy('path').execute(),
    async addEvidence(q: Q, rows: AbuseEvidenceTable[]): Promise<void> {
      for (const r of rows)
        await q
          .insertInto('abuse_evidence')
          .values(r)
          .onConflict((oc) => oc.columns(['report_id', 'path']).doNothing())
          .execute()
    },
    dropEvidence: (q: Q, reportId: string) => q.deleteFrom('abuse_evidence').where('report_id', '=', reportId).execute(),

    async block(q: Q, digests: string[], reportId: string, now: number, by: string): Promise<void> {
      for (const d of new Set(digests))
        await q
          .insertInto('blocked_digests')
          .values({ digest: d, report_id: reportId, created_at: now, created_by: by })
          .onConflict((oc) => oc.column('digest').doNothing())
          .execute()
    },
    unblock: (q: Q, reportId: string) => q.deleteFrom('blocked_digests').where('report_id', '=', reportId).execute(),
    blocked: (limit: number) => k.selectFrom('blocked_digests').selectAll().orderBy('created_at', 'desc').limit(limit).execute(),
    /** Which of `digests` are on the blocklist. */
    async blockedAmong(digests: readonly string[]): Promise<Set<string>> {
      if (digests.length === 0) return new Set()
      const rows = await k
        .selectFrom('blocked_digests')
        .select('digest')
        .where('digest', 'in', [...new Set(digests)])
        .execute()
      return new Set(rows.map((r) => r.digest))
    },

    // what a target is, read from the features that own the content
    userByName: (username: string) => k.selectFrom('users').select(['id', 'username']).where('username', '=', username).executeTakeFirst(),
    userById: (id: string) => k.selectFrom('users').select(['id', 'username']).where('id', '=', id).executeTakeFirst(),
    siteFile: (q: Q, userId: string, name: string) =>
      q.selectFrom('files').select(['id', 'digest', 'size', 'content_type']).where('user_id', '=', userId).where('file_name', '=', name).executeTakeFirst(),
    siteFolder: (q: Q, userId: string, name: string) =>
      q.selectFrom('folders').select(['id']).where('user_id', '=', userId).where('name', '=', name).executeTakeFirst(),
    /**
     * When a site target (a user's page and/or project of one name) got each of its digests: the
     * earliest of its rows, the project's kept deploys (previews, history) included.
     */
    async siteDigestTimes(q: Q, userId: string, name: string): Promise<Map<string, number>> {
      const rows = await earliest(q).where('r.user_id', '=', userId).where('r.name', '=', name).execute()
      const out = new Map(rows.map((r) => [r.digest, Number(r.at)]))
      const kept = await q
        .selectFrom('deploy_files')
        .innerJoin('deploys', 'deploys.id', 'deploy_files.deploy_id')
        .innerJoin('folders', 'folders.id', 'deploys.folder_id')
        .select(['deploy_files.digest as digest', sql<number>`min(deploy_files.updated_at)`.as('at')])
        .where('folders.user_id', '=', userId)
        .where('folders.name', '=', name)
        .groupBy('deploy_files.digest')
        .execute()
      for (const r of kept) {
        const at = Number(r.at)
        if (at < (out.get(r.digest) ?? Infinity)) out.set(r.digest, at)
      }
      return out
    },
    /**
     * Which of `first` (digest -> when the content being taken down got those bytes) another
     * account's page or project file already held before then: its owner's bytes, which the
     * abusive content copied, not the other way round.
     */
    async heldEarlierByOthers(q: Q, userId: string, first: Map<string, number>): Promise<Set<string>> {
      const out = new Set<string>()
      const digests = [...first.keys()]
      for (let i = 0; i < digests.length; i += 500) {
        const rows = await earliest(q)
          .where('r.digest', 'in', digests.slice(i, i + 500))
          .where('r.user_id', '!=', userId)
          .execute()
        for (const r of rows) if (Number(r.at) < first.get(r.digest)!) out.add(r.digest)
      }
      return out
    },
    folderFiles: (q: Q, folderId: string) =>
      q.selectFrom('folder_files').select(['path', 'digest', 'size', 'content_type']).where('folder_id', '=', folderId).execute(),
    /** The files of a project's kept deploys (previews and history), oldest deploy first. */
    deployFiles: (q: Q, folderId: string) =>
      q
        .selectFrom('deploy_files')
        .innerJoin('deploys', 'deploys.id', 'deploy_files.deploy_id')
        .select(['deploys.id as deploy_id', 'deploy_files.path', 'deploy_files.digest', 'deploy_files.size', 'deploy_files.content_type'])
        .where('deploys.folder_id', '=', folderId)
        .orderBy('deploys.seq')
        .orderBy('deploy_files.path')
        .execute(),
    image: (q: Q, token: string) =>
      q.selectFrom('images').select(['id', 'user_id', 'digest', 'size', 'content_type', 'file_name']).where('public_token', '=', token).executeTakeFirst(),
    dataFile: (q: Q, token: string) => q.selectFrom('hosted_files').select(['id', 'user_id']).where('public_token', '=', token).executeTakeFirst(),
    dataVersions: (q: Q, fileId: string) =>
      q.selectFrom('hosted_versions').select(['version', 'digest', 'size', 'content_type']).where('file_id', '=', fileId).orderBy('version').execute(),
    // takedowns delete rows that quotas count: each uncounts exactly what it deleted
    async deleteFile(q: Q, userId: string, id: string): Promise<void> {
      const r = await q.deleteFrom('files').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
      await addUsage(q, userId, 'files', -Number(r.numDeletedRows))
    },
    async deleteFolder(q: Q, id: string): Promise<void> {
      await q.deleteFrom('folder_files').where('folder_id', '=', id).execute()
      await q.deleteFrom('folders').where('id', '=', id).execute()
    },
    async deleteImage(q: Trx, userId: string, id: string): Promise<void> {
      const d = await q.deleteFrom('images').where('id', '=', id).where('user_id', '=', userId).returning('size').executeTakeFirst()
      if (d) await uncountImage(q, userId, Number(d.size))
    },
    deleteData: (q: Trx, userId: string, id: string) => deleteHostedFile(q, userId, id),
  }
}
export type AbuseStore = ReturnType<typeof createAbuseStore>
