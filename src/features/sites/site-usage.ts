import { sql } from 'kysely'
import type { Trx } from '../../db/kysely.js'
import type { User } from '../../auth/users.js'
import { AppError } from '../../errors/app-error.js'
import { quotaOf } from '../../limits/quotas.js'
import { sizeText } from '../../util/sizes.js'

/**
 * The `site_bytes` quota (decision 241): the bytes a user's folder projects hold, as the disk
 * holds them: each distinct blob of their working sets and kept deploys (history and previews
 * included) counted once. Read in the write's transaction under the user's lock, so two
 * writes of one account never pass it together. Far from the limit a bound settles it (the
 * working sets' and kept deploys' byte sums, no scan of every row); near it, the write's
 * blobs the account already holds are looked up and the distinct bytes summed.
 */

/** The rows of every folder project of a user: digest and size (working sets and kept deploys). */
const userRows = (q: Trx, userId: string) =>
  q
    .selectFrom('folder_files')
    .innerJoin('folders', 'folders.id', 'folder_files.folder_id')
    .select(['folder_files.digest as digest', 'folder_files.size as size'])
    .where('folders.user_id', '=', userId)
    .unionAll(
      q
        .selectFrom('deploy_files')
        .innerJoin('deploys', 'deploys.id', 'deploy_files.deploy_id')
        .innerJoin('folders', 'folders.id', 'deploys.folder_id')
        .select(['deploy_files.digest as digest', 'deploy_files.size as size'])
        .where('folders.user_id', '=', userId),
    )

/** The bytes the user's folder projects hold, each distinct blob once. */
export async function siteBytes(q: Trx, userId: string): Promise<number> {
  const r = await q
    .selectFrom(
      q
        .selectFrom(userRows(q, userId).as('r'))
        .select(['r.digest', sql<number>`max(r.size)`.as('size')])
        .groupBy('r.digest')
        .as('d'),
    )
    .select(sql<number>`coalesce(sum(d.size), 0)`.as('b'))
    .executeTakeFirstOrThrow()
  return Number(r.b)
}

/**
 * A bound the site bytes never exceed, read without the distinct scan: the working sets' bytes
 * plus every kept deploy's `bytes` (the sum of its files, set when it is made), each blob
 * counted as often as it appears.
 */
async function siteBytesAtMost(q: Trx, userId: string): Promise<number> {
  const [working, kept] = await Promise.all([
    q
      .selectFrom('folder_files')
      .innerJoin('folders', 'folders.id', 'folder_files.folder_id')
      .select(sql<number>`coalesce(sum(folder_files.size), 0)`.as('b'))
      .where('folders.user_id', '=', userId)
      .executeTakeFirstOrThrow(),
    q
      .selectFrom('deploys')
      .innerJoin('folders', 'folders.id', 'deploys.folder_id')
      .select(sql<number>`coalesce(sum(deploys.bytes), 0)`.as('b'))
      .where('folders.user_id', '=', userId)
      .executeTakeFirstOrThrow(),
  ])
  return Number(working.b) + Number(kept.b)
}

/** Of these digests, the ones one of the user's folder projects already holds. */
async function heldDigests(q: Trx, userId: string, digests: string[]): Promise<Set<string>> {
  const held = new Set<string>()
  for (let i = 0; i < digests.length; i += 500) {
    const some = digests.slice(i, i + 500)
    const rows = await q.selectFrom(userRows(q, userId).as('r')).select('r.digest').where('r.digest', 'in', some).distinct().execute()
    for (const r of rows) held.add(r.digest)
  }
  return held
}

/**
 * Refuses (400 / 1208, nothing written) a write of these blobs (digest -> size) into the
 * user's folder projects when the bytes new to the account would take its site bytes past
 * its `site_bytes` quota. Call it in the write's transaction, after the user's lock.
 */
export async function checkSiteBytes(q: Trx, user: Pick<User, 'id' | 'limits'>, incoming: ReadonlyMap<string, number>): Promise<void> {
  if (incoming.size === 0) return
  const limit = quotaOf(user.limits, 'site_bytes')
  // far from the limit (the common case) the bound settles it: no scan of the account's rows
  let all = 0
  for (const size of incoming.values()) all += size
  if (all <= limit && (await siteBytesAtMost(q, user.id)) + all <= limit) return
  const held = await heldDigests(q, user.id, [...incoming.keys()])
  let added = 0
  for (const [digest, size] of incoming) if (!held.has(digest)) added += size
  if (added === 0) return
  const used = await siteBytes(q, user.id)
  if (used + added <= limit) return
  throw new AppError('QUOTA_EXCEEDED', {
    params: {
      detail: {
        zh: `站点存储 ${used} + ${added} 字节，上限 ${sizeText(limit).zh}（site_bytes）`,
        en: `site storage ${used} + ${added} bytes, at most ${sizeText(limit).en} (site_bytes)`,
      },
    },
    extra: { details: { quota: 'site_bytes', used, adding: added, limit } },
  })
}
