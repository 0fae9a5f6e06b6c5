import type { Db } from '../../db/kysely.js'
import type { Bus } from '../../infra/bus.js'
import { createAdminStore } from '../admin/store.js'
import { formStore } from '../forms/store.js'
import { invalidateAccount } from './invalidate.js'

/** What a deleted account held, as the admin console's accounts list counts it. */
export type DeletedUsage = Record<string, number>

/**
 * Deletes an account and everything it holds, in one transaction (both engines): the name goes
 * to `retired_usernames` (held from new accounts), its forms' slugs to `form_slugs_held`
 * (decision 264), the invitations it made go, and the `users`
 * row goes, which removes every row of the account in every feature through their foreign keys
 * (`references('users.id').onDelete('cascade')`; SQLite runs with foreign_keys on): keys,
 * sessions, entitlements, usage counters, KV, forms with their submissions, webhooks,
 * notification settings, addresses and queued deliveries, images, hosted data, files, folder
 * projects with their deploys, custom domains with their tokens, visitor passwords, a pending
 * approval. Kept on purpose: the audit log, abuse reports, their evidence, holds and blocked
 * digests (records of what the account did), and redeem codes it used (still used). Blobs are
 * left to the sweeper, which removes only those no row references any more: content-addressed
 * bytes another account (or abuse evidence) still holds stay. Returns null when there is no such
 * account. The caller drops the caches (dropDeletedAccount) after this returns.
 */
export async function deleteAccount(db: Db, now: number, userId: string, deletedBy: string): Promise<{ username: string; usage: DeletedUsage } | null> {
  const usage = (await createAdminStore(db).usage([userId])).get(userId) ?? {}
  return db.k.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('users').select(['username']).where('id', '=', userId).executeTakeFirst()
    if (!row) return null
    await trx
      .insertInto('retired_usernames')
      .values({ username: row.username, deleted_at: now, deleted_by: deletedBy })
      .onConflict((oc) => oc.column('username').doUpdateSet({ deleted_at: now, deleted_by: deletedBy }))
      .execute()
    await trx.deleteFrom('invites').where('created_by', '=', row.username).execute()
    // its forms' slugs stay held, as its name does: pages that still post to them reach no one
    await formStore.holdAllSlugs(trx, { id: userId, username: row.username }, now)
    const r = await trx.deleteFrom('users').where('id', '=', userId).executeTakeFirst()
    if (Number(r.numDeletedRows) !== 1) return null
    return { username: row.username, usage }
  })
}

/**
 * After a delete: every public cache that answered for the account drops it, here and on every
 * instance, as a disable does (decision 100). Sessions and keys need nothing: they are read from
 * the database (on SQLite a kept row is checked against the `users` table's change stamp).
 */
export function dropDeletedAccount(bus: Bus, username: string): Promise<void> {
  return invalidateAccount(bus, username)
}
