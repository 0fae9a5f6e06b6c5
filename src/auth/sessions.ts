import type { Db } from '../db/kysely.js'
import type { Clock } from '../util/clock.js'
import { newSessionId, randomString, sha256hex } from './tokens.js'

/** Server-side sessions: the cookie holds 256 random bits; the table holds only their hash. */
export function createSessions(db: Db, clock: Clock, ttlSeconds: number) {
  return {
    async create(userId: string): Promise<{ id: string; csrf: string; expiresAt: number }> {
      const id = newSessionId()
      const now = clock.now()
      const csrf = randomString(32)
      const expiresAt = now + ttlSeconds * 1000
      await db.k
        .insertInto('sessions')
        .values({
          id_hash: sha256hex(id),
          user_id: userId,
          csrf_token: csrf,
          created_at: now,
          expires_at: expiresAt,
          last_seen_at: now,
        })
        .execute()
      return { id, csrf, expiresAt }
    },
    async destroy(id: string): Promise<void> {
      await db.k.deleteFrom('sessions').where('id_hash', '=', sha256hex(id)).execute()
    },
    /** Removes expired sessions (called by the periodic sweeper). */
    async purgeExpired(): Promise<number> {
      const r = await db.k.deleteFrom('sessions').where('expires_at', '<=', clock.now()).executeTakeFirst()
      return Number(r.numDeletedRows)
    },
  }
}
export type Sessions = ReturnType<typeof createSessions>
