import type { Db } from '../../db/kysely.js'
import { addUsage, claimUsage, usageOf } from '../../db/usage.js'

export interface DomainsTable {
  id: string
  user_id: string
  name: string
  project: string
  token: string
  verified_at: number | null
  created_at: number
  /** 1: the project's primary domain (at most one per project, verified), 0 otherwise. */
  is_primary: number
  /** When another account proved control of the name and took it from this row (epoch ms); null otherwise. */
  lost_at: number | null
}

export interface SiteAccessTable {
  id: string
  user_id: string
  name: string
  password_hash: string | null
  expires_at: number | null
  secret: string
  created_at: number
  updated_at: number
}

/** A user's verification token for a name, kept after the domain is removed (decision 112). */
export interface DomainTokensTable {
  user_id: string
  name: string
  token: string
}

declare module '../../db/schema.js' {
  interface Database {
    domains: DomainsTable
    site_access: SiteAccessTable
    domain_tokens: DomainTokensTable
  }
}

export type DomainRow = DomainsTable
export type AccessRow = SiteAccessTable

/** Rolls a claim back when its row was removed meanwhile. */
class RowGone extends Error {}

/** Kysely queries of domains and site_access; no rules here. */
export function createDomainsStore(db: Db) {
  const k = db.k
  return {
    domains: (userId: string) => k.selectFrom('domains').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('name').execute(),
    domain: (userId: string, name: string) => k.selectFrom('domains').selectAll().where('user_id', '=', userId).where('name', '=', name).executeTakeFirst(),
    /** The user's domain count: the usage counter, O(1). */
    count: (userId: string) => usageOf(k, userId, 'domains'),
    /** Inserts a domain if the user's count stays within `limit`, counted in the same transaction; null when inserted, else the count. */
    insert: (row: DomainsTable, limit: number): Promise<number | null> =>
      k.transaction().execute(async (trx) => {
        const full = await claimUsage(trx, row.user_id, 'domains', 1, limit)
        if (full === null) await trx.insertInto('domains').values(row).execute()
        return full
      }),
    /**
     * The user's token for a name: the one it had before (a removed domain added again), else
     * `fresh`, kept from now on. Concurrent calls get the same token.
     */
    tokenFor: async (userId: string, name: string, fresh: string): Promise<string> => {
      await k
        .insertInto('domain_tokens')
        .values({ user_id: userId, name, token: fresh })
        .onConflict((oc) => oc.columns(['user_id', 'name']).doNothing())
        .execute()
      const row = await k.selectFrom('domain_tokens').select('token').where('user_id', '=', userId).where('name', '=', name).executeTakeFirstOrThrow()
      return row.token
    },
    /** Whether another user holds the name verified. */
    heldByOther: async (userId: string, name: string) =>
      (await k
        .selectFrom('domains')
        .select('id')
        .where('name', '=', name)
        .where('verified_at', 'is not', null)
        .where('user_id', '!=', userId)
        .executeTakeFirst()) !== undefined,
    /**
     * Verifies a row and takes the name from every other account's verified row of it (they
     * stay, unverified, not primary, with lost_at), in one transaction; the rows taken, with
     * their owners' names and whether they were primary. The partial unique index refuses a
     * concurrent claim of the same name (the caller answers it). Null: the row is gone, nothing changed.
     */
    claim: (d: Pick<DomainsTable, 'id' | 'user_id' | 'name'>, at: number) =>
      k
        .transaction()
        .execute(async (trx) => {
          const lost = await trx
            .selectFrom('domains')
            .innerJoin('users', 'users.id', 'domains.user_id')
            .select(['domains.id', 'users.username', 'domains.project', 'domains.is_primary'])
            .where('domains.name', '=', d.name)
            .where('domains.verified_at', 'is not', null)
            .where('domains.user_id', '!=', d.user_id)
            .execute()
          const ids = lost.map((r) => r.id)
          if (ids.length > 0) {
            await trx
              .updateTable('domains')
              .set({ verified_at: null, is_primary: 0, lost_at: at })
              .where('id', 'in', ids)
              .where('verified_at', 'is not', null)
              .execute()
          }
          const mine = await trx.updateTable('domains').set({ verified_at: at, lost_at: null }).where('id', '=', d.id).executeTakeFirst()
          // removed meanwhile: roll back, so nobody takes the name and the holder keeps it
          if (Number(mine.numUpdatedRows) === 0) throw new RowGone()
          return lost
        })
        .catch((e: unknown) => {
          if (e instanceof RowGone) return null
          throw e
        }),
    /** Makes a domain its project's primary one (the project's other domains stop being), or not. */
    setPrimary: (d: Pick<DomainsTable, 'id' | 'user_id' | 'project'>, primary: boolean): Promise<void> =>
      k.transaction().execute(async (trx) => {
        if (primary) await trx.updateTable('domains').set({ is_primary: 0 }).where('user_id', '=', d.user_id).where('project', '=', d.project).execute()
        await trx
          .updateTable('domains')
          .set({ is_primary: primary ? 1 : 0 })
          .where('id', '=', d.id)
          .execute()
      }),
    /** The verified primary domain of a user's project (enabled accounts only), if any. */
    primaryOf: async (username: string, project: string): Promise<string | null> =>
      (
        await k
          .selectFrom('domains')
          .innerJoin('users', 'users.id', 'domains.user_id')
          .select('domains.name')
          .where('users.username', '=', username)
          .where('domains.project', '=', project)
          .where('domains.is_primary', '=', 1)
          .where('domains.verified_at', 'is not', null)
          .where('users.disabled', '=', 0)
          .executeTakeFirst()
      )?.name ?? null,
    /** Deletes a domain and uncounts it (one transaction). */
    remove: (userId: string, name: string): Promise<boolean> =>
      k.transaction().execute(async (trx) => {
        const n = Number((await trx.deleteFrom('domains').where('user_id', '=', userId).where('name', '=', name).executeTakeFirst()).numDeletedRows)
        await addUsage(trx, userId, 'domains', -n)
        return n > 0
      }),
    /**
     * The verified domain's project and its owner's name, disabled accounts too: their domain
     * stays a public host, where the site answers 404 as on the owner's origin (the resolver),
     * never the service's own pages; the TLS ask checks the account itself.
     */
    target: (name: string) =>
      k
        .selectFrom('domains')
        .innerJoin('users', 'users.id', 'domains.user_id')
        .select(['users.username', 'domains.project'])
        .where('domains.name', '=', name)
        .where('domains.verified_at', 'is not', null)
        .executeTakeFirst(),

    accessList: (userId: string) => k.selectFrom('site_access').selectAll().where('user_id', '=', userId).orderBy('name').execute(),
    access: (userId: string, name: string) => k.selectFrom('site_access').selectAll().where('user_id', '=', userId).where('name', '=', name).executeTakeFirst(),
    /** Every access rule of a user, by username (the public host's view). */
    accessOf: (username: string) =>
      k
        .selectFrom('site_access')
        .innerJoin('users', 'users.id', 'site_access.user_id')
        .select(['site_access.id', 'site_access.name', 'site_access.password_hash', 'site_access.expires_at', 'site_access.secret'])
        .where('users.username', '=', username)
        .execute(),
    insertAccess: (row: SiteAccessTable) => k.insertInto('site_access').values(row).execute(),
    updateAccess: (id: string, v: Partial<Pick<SiteAccessTable, 'password_hash' | 'expires_at' | 'secret' | 'updated_at'>>) =>
      k.updateTable('site_access').set(v).where('id', '=', id).execute(),
    removeAccess: async (userId: string, name: string) =>
      Number((await k.deleteFrom('site_access').where('user_id', '=', userId).where('name', '=', name).executeTakeFirst()).numDeletedRows) > 0,

    /** Whether the user has a folder project (any state) or a single page of this name. */
    projectExists: async (userId: string, name: string) =>
      (await k.selectFrom('folders').select('id').where('user_id', '=', userId).where('name', '=', name).executeTakeFirst()) !== undefined,
    pageExists: async (userId: string, name: string) =>
      (await k.selectFrom('files').select('id').where('user_id', '=', userId).where('file_name', '=', name).executeTakeFirst()) !== undefined,
  }
}
export type DomainsStore = ReturnType<typeof createDomainsStore>
