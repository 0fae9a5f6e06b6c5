import { sql } from 'kysely'
import type { Db } from '../../db/kysely.js'
import { newId } from '../../auth/tokens.js'
import { truncate } from '../../util/unicode.js'

/** One run-time setting (see service.ts SETTINGS for names and values). */
export interface SettingsTable {
  name: string
  value: string
  updated_at: number
  updated_by: string
}

/** One administrative action, from the web console or the operator CLI. */
export interface AuditLogTable {
  id: string
  at: number
  /** The admin's username, or `cli:<os user>` for operator commands. */
  actor: string
  via: string
  action: string
  target: string
  /** JSON object: the action's parameters (never a password). */
  details: string
  ip: string
  user_agent: string
}

/** Invitation codes (registration mode "invite"): only the SHA-256 of a code is kept. */
export interface InvitesTable {
  code_hash: string
  created_at: number
  created_by: string
  used_by: string | null
  used_at: number | null
}

/** Accounts created in registration mode "pending": disabled until an admin approves them. */
export interface PendingAccountsTable {
  user_id: string
  created_at: number
}

declare module '../../db/schema.js' {
  interface Database {
    settings: SettingsTable
    audit_log: AuditLogTable
    invites: InvitesTable
    pending_accounts: PendingAccountsTable
  }
}

export type AuditEntry = Omit<AuditLogTable, 'id' | 'at' | 'details'> & { details?: Record<string, unknown> }
export const AUDIT_COLUMNS = ['id', 'at', 'actor', 'via', 'action', 'target', 'details', 'ip', 'user_agent'] as const

/**
 * Appends an audit entry. Shared by the web console and the operator CLI (src/cli/admin.ts),
 * so an action is logged the same way whichever door it came through.
 */
export async function writeAudit(db: Db, now: number, e: AuditEntry): Promise<void> {
  await db.k
    .insertInto('audit_log')
    .values({
      id: `${now.toString(36).padStart(9, '0')}-${newId()}`,
      at: now,
      actor: truncate(e.actor, 200),
      via: e.via,
      action: e.action,
      target: truncate(e.target, 2000),
      details: JSON.stringify(e.details ?? {}),
      ip: truncate(e.ip, 100),
      user_agent: truncate(e.user_agent, 500),
    })
    .execute()
}

/** Kysely queries of the admin tables and the read-only views of other features' tables. */
export function createAdminStore(db: Db) {
  const k = db.k
  const like = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  return {
    settings: () => k.selectFrom('settings').select(['name', 'value', 'updated_at', 'updated_by']).execute(),
    async putSetting(name: string, value: string, now: number, by: string): Promise<void> {
      await k
        .insertInto('settings')
        .values({ name, value, updated_at: now, updated_by: by })
        .onConflict((oc) => oc.column('name').doUpdateSet({ value, updated_at: now, updated_by: by }))
        .execute()
    },

    /** Audit entries, newest first; `before` is the id of the last entry of the previous page. */
    audit(f: { limit: number; before?: string; action?: string; actor?: string }) {
      let q = k.selectFrom('audit_log').select(AUDIT_COLUMNS)
      if (f.before) q = q.where('id', '<', f.before)
      if (f.action) q = q.where('action', '=', f.action)
      if (f.actor) q = q.where('actor', '=', f.actor)
      return q.orderBy('id', 'desc').limit(f.limit).execute()
    },

    /** Accounts, by name; `search` matches a part of the username. */
    async users(search: string | undefined, limit: number, offset: number) {
      let q = k.selectFrom('users')
      if (search) q = q.where(sql<boolean>`username like ${like(search.toLowerCase())} escape '\\'`)
      const total = Number((await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
      const rows = await q
        .leftJoin('pending_accounts', 'pending_accounts.user_id', 'users.id')
        .select(['users.id', 'username', 'tier', 'disabled', 'api_access', 'is_admin', 'limits', 'users.created_at', 'pending_accounts.user_id as pending'])
        .orderBy('username')
        .limit(limit)
        .offset(offset)
        .execute()
      return { total, rows }
    },

    /** What each of these accounts holds: counts and bytes per part. */
    async usage(ids: string[]) {
      const out = new Map<string, Record<string, number>>()
      if (ids.length === 0) return out
      for (const id of ids) out.set(id, { files: 0, file_bytes: 0, folders: 0, folder_bytes: 0, kv_keys: 0, images: 0, image_bytes: 0, hosted_files: 0 })
      const add = (rows: Array<{ user_id: string; n: unknown; b?: unknown }>, n: string, b?: string) => {
        for (const r of rows) {
          const u = out.get(r.user_id)!
          u[n] = Number(r.n)
          if (b) u[b] = Number(r.b ?? 0)
        }
      }
      const count = sql<number>`count(*)`
      add(
        await k
          .selectFrom('files')
          .select(['user_id', count.as('n'), sql<number>`coalesce(sum(size), 0)`.as('b')])
          .where('user_id', 'in', ids)
          .groupBy('user_id')
          .execute(),
        'files',
        'file_bytes',
      )
      add(
        await k
          .selectFrom('folders')
          .select(['user_id', count.as('n')])
          .where('user_id', 'in', ids)
          .groupBy('user_id')
          .execute(),
        'folders',
      )
      for (const r of await k
        .selectFrom('folder_files')
        .innerJoin('folders', 'folders.id', 'folder_files.folder_id')
        .select(['folders.user_id', sql<number>`coalesce(sum(folder_files.size), 0)`.as('b')])
        .where('folders.user_id', 'in', ids)
        .groupBy('folders.user_id')
        .execute())
        out.get(r.user_id)!.folder_bytes = Number(r.b)
      add(
        await k
          .selectFrom('kv_entries')
          .select(['user_id', count.as('n')])
          .where('user_id', 'in', ids)
          .groupBy('user_id')
          .execute(),
        'kv_keys',
      )
      add(
        await k
          .selectFrom('images')
          .select(['user_id', count.as('n'), sql<number>`coalesce(sum(size), 0)`.as('b')])
          .where('user_id', 'in', ids)
          .groupBy('user_id')
          .execute(),
        'images',
        'image_bytes',
      )
      add(
        await k
          .selectFrom('hosted_files')
          .select(['user_id', count.as('n')])
          .where('user_id', 'in', ids)
          .groupBy('user_id')
          .execute(),
        'hosted_files',
      )
      return out
    },

    /**
     * Content search across single files, folder projects' files, images and hosted data: by
     * owner (exact username), by a part of the name, or by the SHA-256 of the bytes.
     */
    async content(f: { user?: string; name?: string; exactName?: string; token?: string; digest?: string }, limit: number) {
      const user = f.user?.toLowerCase()
      const pattern = f.name ? like(f.name.toLowerCase()) : undefined
      // a page name (single file or folder project) or a public link's token: only those kinds
      const sites = f.token === undefined
      const links = f.exactName === undefined
      const files = k
        .selectFrom('files')
        .innerJoin('users', 'users.id', 'files.user_id')
        .select([
          sql<string>`'file'`.as('kind'),
          'users.username',
          'files.file_name as name',
          sql<string>`''`.as('path'),
          'files.digest',
          'files.size',
          'files.content_type',
          sql<number>`coalesce(files.updated_at, files.created_at)`.as('updated_at'),
        ])
        .$if(!!user, (q) => q.where('users.username', '=', user!))
        .$if(!!pattern, (q) => q.where(sql<boolean>`lower(files.file_name) like ${pattern} escape '\\'`))
        .$if(!!f.digest, (q) => q.where('files.digest', '=', f.digest!))
        .$if(f.exactName !== undefined, (q) => q.where('files.file_name', '=', f.exactName!))
        .$if(!sites, (q) => q.where(sql<boolean>`1 = 0`))
      const folderFiles = k
        .selectFrom('folder_files')
        .innerJoin('folders', 'folders.id', 'folder_files.folder_id')
        .innerJoin('users', 'users.id', 'folders.user_id')
        .select([
          sql<string>`'folder'`.as('kind'),
          'users.username',
          'folders.name as name',
          'folder_files.path as path',
          'folder_files.digest',
          'folder_files.size',
          'folder_files.content_type',
          'folder_files.updated_at',
        ])
        .$if(!!user, (q) => q.where('users.username', '=', user!))
        .$if(!!pattern, (q) => q.where(sql<boolean>`lower(folders.name || '/' || folder_files.path) like ${pattern} escape '\\'`))
        .$if(!!f.digest, (q) => q.where('folder_files.digest', '=', f.digest!))
        .$if(f.exactName !== undefined, (q) => q.where('folders.name', '=', f.exactName!))
        .$if(!sites, (q) => q.where(sql<boolean>`1 = 0`))
      const images = k
        .selectFrom('images')
        .innerJoin('users', 'users.id', 'images.user_id')
        .select([
          sql<string>`'image'`.as('kind'),
          'users.username',
          'images.public_token as name',
          'images.file_name as path',
          'images.digest',
          'images.size',
          'images.content_type',
          'images.updated_at',
        ])
        .$if(!!user, (q) => q.where('users.username', '=', user!))
        .$if(!!pattern, (q) => q.where(sql<boolean>`lower(images.file_name) like ${pattern} escape '\\'`))
        .$if(!!f.digest, (q) => q.where('images.digest', '=', f.digest!))
        .$if(f.token !== undefined, (q) => q.where('images.public_token', '=', f.token!))
        .$if(!links, (q) => q.where(sql<boolean>`1 = 0`))
      const data = k
        .selectFrom('hosted_versions')
        .innerJoin('hosted_files', 'hosted_files.id', 'hosted_versions.file_id')
        .innerJoin('users', 'users.id', 'hosted_files.user_id')
        .select([
          sql<string>`'data'`.as('kind'),
          'users.username',
          'hosted_files.public_token as name',
          'hosted_files.display_name as path',
          'hosted_versions.digest',
          'hosted_versions.size',
          'hosted_versions.content_type',
          'hosted_versions.created_at as updated_at',
        ])
        .$if(!!user, (q) => q.where('users.username', '=', user!))
        .$if(!!pattern, (q) => q.where(sql<boolean>`lower(hosted_files.display_name) like ${pattern} escape '\\'`))
        .$if(!!f.digest, (q) => q.where('hosted_versions.digest', '=', f.digest!))
        .$if(f.token !== undefined, (q) => q.where('hosted_files.public_token', '=', f.token!))
        .$if(!links, (q) => q.where(sql<boolean>`1 = 0`))
      const rows = await files.unionAll(folderFiles).unionAll(images).unionAll(data).orderBy('updated_at', 'desc').limit(limit).execute()
      return rows.map((r) => ({ ...r, size: Number(r.size), updated_at: Number(r.updated_at) }))
    },

    async createInvite(codeHash: string, now: number, by: string): Promise<void> {
      await k.insertInto('invites').values({ code_hash: codeHash, created_at: now, created_by: by, used_by: null, used_at: null }).execute()
    },
    /** Marks a code used by `by` if it is unused (or held by `holder`); false otherwise. */
    async useInvite(codeHash: string, by: string, now: number, holder?: string): Promise<boolean> {
      const r = await k
        .updateTable('invites')
        .set({ used_by: by, used_at: now })
        .where('code_hash', '=', codeHash)
        .where((eb) => (holder === undefined ? eb('used_by', 'is', null) : eb('used_by', '=', holder)))
        .executeTakeFirst()
      return Number(r.numUpdatedRows) > 0
    },
    releaseInvite: (codeHash: string) => k.updateTable('invites').set({ used_by: null, used_at: null }).where('code_hash', '=', codeHash).execute(),
    inviteUnused: async (codeHash: string) =>
      !!(await k.selectFrom('invites').select('code_hash').where('code_hash', '=', codeHash).where('used_by', 'is', null).executeTakeFirst()),
    addPending: (userId: string, now: number) => k.insertInto('pending_accounts').values({ user_id: userId, created_at: now }).execute(),
    removePending: async (userId: string) =>
      Number((await k.deleteFrom('pending_accounts').where('user_id', '=', userId).executeTakeFirst()).numDeletedRows) > 0,
    isPending: async (userId: string) => !!(await k.selectFrom('pending_accounts').select('user_id').where('user_id', '=', userId).executeTakeFirst()),
  }
}
export type AdminStore = ReturnType<typeof createAdminStore>
