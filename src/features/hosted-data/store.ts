import type { DB, Trx } from '../../db/kysely.js'
import { addUsage, claimUsage, dropUsage, usageOf, versionsKind } from '../../db/usage.js'

/** Tables of hosted data: one row per file, one per version (the bytes live in the blob store). */
export interface HostedFilesTable {
  id: string
  user_id: string
  public_token: string
  display_name: string
  description: string
  default_version: number
  latest_version: number
  locked: number
  created_at: number
  updated_at: number
}

export interface HostedVersionsTable {
  file_id: string
  version: number
  digest: string
  size: number
  content_type: string
  created_at: number
}

declare module '../../db/schema.js' {
  interface Database {
    hosted_files: HostedFilesTable
    hosted_versions: HostedVersionsTable
  }
}

const FILE_COLUMNS = [
  'f.id',
  'f.public_token',
  'f.display_name',
  'f.description',
  'f.default_version',
  'f.latest_version',
  'f.locked',
  'f.created_at',
  'f.updated_at',
] as const

/**
 * A file with its default version's type and size, its version count and its newest
 * existing version. `latest_version` is the numbering counter (the highest number ever
 * given, so deleted numbers are never reused); `newest_version` is the highest that exists.
 */
export interface FileRow extends Omit<HostedFilesTable, 'user_id'> {
  content_type: string
  size: number
  version_count: number
  newest_version: number
}

export type VersionRow = Omit<HostedVersionsTable, 'file_id'>

/** Which version a public link serves: the default (null), the newest existing one, or one number. */
export type VersionPick = number | null | 'latest'

/** What the public link needs to serve one version. */
export interface PublicEntry {
  version: number
  digest: string
  size: number
  content_type: string
  /** When the version was made (ms). */
  created_at: number
  /** The file's last change (ms): a version added, the default switched, a version deleted, its meta edited. */
  file_updated_at: number
}

type Q = DB | Trx

/** Deletes a file with its versions and their counters (in the caller's transaction; abuse takedowns too). */
export async function deleteHostedFile(trx: Trx, userId: string, fileId: string): Promise<void> {
  await trx.deleteFrom('hosted_versions').where('file_id', '=', fileId).execute()
  const r = await trx.deleteFrom('hosted_files').where('id', '=', fileId).where('user_id', '=', userId).executeTakeFirst()
  await dropUsage(trx, userId, versionsKind(fileId))
  await addUsage(trx, userId, 'hosted_files', -Number(r.numDeletedRows))
}

/** Kysely queries of hosted data; every owner-facing read is scoped to the user. */
export function createHostedStore(k: DB) {
  const filesQuery = (q: Q, userId: string) =>
    q
      .selectFrom('hosted_files as f')
      .innerJoin('hosted_versions as d', (j) => j.onRef('d.file_id', '=', 'f.id').onRef('d.version', '=', 'f.default_version'))
      .select(FILE_COLUMNS)
      .select(['d.content_type', 'd.size'])
      .select((eb) =>
        eb
          .selectFrom('hosted_versions as v')
          .whereRef('v.file_id', '=', 'f.id')
          .select((e2) => e2.fn.countAll<number>().as('n'))
          .as('version_count'),
      )
      .select((eb) =>
        eb
          .selectFrom('hosted_versions as n')
          .whereRef('n.file_id', '=', 'f.id')
          .select((e2) => e2.fn.max<number>('n.version').as('m'))
          .as('newest_version'),
      )
      .where('f.user_id', '=', userId)

  const norm = (r: FileRow): FileRow => ({
    ...r,
    size: Number(r.size),
    version_count: Number(r.version_count),
    newest_version: Number(r.newest_version),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  })

  return {
    async list(userId: string): Promise<FileRow[]> {
      const rows = await filesQuery(k, userId).orderBy('f.updated_at', 'desc').orderBy('f.id').execute()
      return rows.map((r) => norm(r as FileRow))
    },
    async file(userId: string, fileId: string, q: Q = k): Promise<FileRow | undefined> {
      const r = await filesQuery(q, userId).where('f.id', '=', fileId).executeTakeFirst()
      return r ? norm(r as FileRow) : undefined
    },
    async versions(fileId: string, q: Q = k): Promise<VersionRow[]> {
      const rows = await q
        .selectFrom('hosted_versions')
        .select(['version', 'digest', 'size', 'content_type', 'created_at'])
        .where('file_id', '=', fileId)
        .orderBy('version')
        .execute()
      return rows.map((r) => ({ ...r, size: Number(r.size), created_at: Number(r.created_at) }))
    },
    /** The user's file count: the usage counter, O(1). */
    countFiles: (q: Q, userId: string): Promise<number> => usageOf(q, userId, 'hosted_files'),
    /** A file's version count: the usage counter, O(1). */
    countVersions: (q: Q, userId: string, fileId: string): Promise<number> => usageOf(q, userId, versionsKind(fileId)),
    /** Inserts a file if the user's file count stays within `max`; null when inserted, else the count that refused it. */
    async insertFile(trx: Trx, row: HostedFilesTable, max: number): Promise<number | null> {
      const full = await claimUsage(trx, row.user_id, 'hosted_files', 1, max)
      if (full === null) await trx.insertInto('hosted_files').values(row).execute()
      return full
    },
    /**
     * Inserts a version if the file's version count stays within `max` (null: the first
     * version, always counted); returns null when inserted, else the count that refused it.
     */
    async insertVersion(trx: Trx, userId: string, row: HostedVersionsTable, max: number | null): Promise<number | null> {
      const kind = versionsKind(row.file_id)
      const full = max === null ? (await addUsage(trx, userId, kind, 1), null) : await claimUsage(trx, userId, kind, 1, max)
      if (full === null) await trx.insertInto('hosted_versions').values(row).execute()
      return full
    },
    async updateFile(
      trx: Trx,
      fileId: string,
      patch: Partial<Pick<HostedFilesTable, 'display_name' | 'description' | 'default_version' | 'latest_version' | 'updated_at'>>,
    ): Promise<void> {
      await trx.updateTable('hosted_files').set(patch).where('id', '=', fileId).execute()
    },
    /** The digest of one version of a user's file, or undefined when there is no such version. */
    async versionDigest(q: Q, userId: string, fileId: string, version: number): Promise<string | undefined> {
      const r = await q
        .selectFrom('hosted_versions as v')
        .innerJoin('hosted_files as f', 'f.id', 'v.file_id')
        .select('v.digest')
        .where('f.id', '=', fileId)
        .where('f.user_id', '=', userId)
        .where('v.version', '=', version)
        .executeTakeFirst()
      return r?.digest
    },
    async hasVersion(trx: Trx, fileId: string, version: number): Promise<boolean> {
      const r = await trx.selectFrom('hosted_versions').select('version').where('file_id', '=', fileId).where('version', '=', version).executeTakeFirst()
      return r !== undefined
    },
    async deleteVersion(trx: Trx, userId: string, fileId: string, version: number): Promise<void> {
      const r = await trx.deleteFrom('hosted_versions').where('file_id', '=', fileId).where('version', '=', version).executeTakeFirst()
      await addUsage(trx, userId, versionsKind(fileId), -Number(r.numDeletedRows))
    },
    deleteFile: (trx: Trx, userId: string, fileId: string) => deleteHostedFile(trx, userId, fileId),
    /**
     * The version a public link serves, in one statement (file row and version row read
     * together), so a reader during a default-version switch sees the old or the new one;
     * `latest`: the highest version number the file still has.
     * Files of a disabled account are not served.
     */
    async publicEntry(token: string, version: VersionPick): Promise<PublicEntry | undefined> {
      let q = k
        .selectFrom('hosted_files as f')
        .innerJoin('hosted_versions as v', 'v.file_id', 'f.id')
        .innerJoin('users as u', 'u.id', 'f.user_id')
        .select(['v.version', 'v.digest', 'v.size', 'v.content_type', 'v.created_at', 'f.updated_at as file_updated_at'])
        .where('f.public_token', '=', token)
        .where('u.disabled', '=', 0)
      if (version === null) q = q.whereRef('v.version', '=', 'f.default_version')
      else if (version === 'latest') q = q.orderBy('v.version', 'desc').limit(1)
      else q = q.where('v.version', '=', version)
      const r = await q.executeTakeFirst()
      return r ? { ...r, size: Number(r.size), created_at: Number(r.created_at), file_updated_at: Number(r.file_updated_at) } : undefined
    },
  }
}

export type HostedStore = ReturnType<typeof createHostedStore>
