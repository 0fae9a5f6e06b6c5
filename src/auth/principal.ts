import type { Db } from '../db/kysely.js'
import { prepared } from '../db/prepared.js'
import { rounds } from '../util/rounds.js'
import { dropOldest } from '../util/oldest.js'
import type { Clock } from '../util/clock.js'
import type { ErrorKey } from '../errors/codes.js'
import { USER_COLUMNS, toUser, type User } from './users.js'
import { API_KEY_RE, SESSION_BIND_COOKIE, SESSION_ID_RE, sessionBind, sha256hex } from './tokens.js'

/** Who is calling, and how they proved it. */
export interface Principal {
  user: User
  via: 'key' | 'session'
  keyId?: string
  /** The API key may only read (GET/HEAD routes, read-only MCP tools). */
  readOnly?: boolean
  sessionId?: string
  csrfToken?: string
}

export type Resolution = { kind: 'none' } | { kind: 'ok'; principal: Principal } | { kind: 'error'; error: ErrorKey }

/** Every value of the `session` cookie in a Cookie header (duplicates are an attack sign). */
export function sessionCookies(cookieHeader: string | undefined): string[] {
  if (!cookieHeader) return []
  const out: string[] = []
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    if (part.slice(0, eq).trim() === 'session') out.push(part.slice(eq + 1).trim())
  }
  return out
}

/**
 * Whether a Cookie header carries the session's binding cookie (SESSION_BIND_COOKIE) for `sid`:
 * false for a `session` cookie a sibling host tossed, which comes without it.
 */
export function sessionBound(cookieHeader: string | undefined, sid: string): boolean {
  if (!cookieHeader) return false
  const want = sessionBind(sid)
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_BIND_COOKIE && part.slice(eq + 1).trim() === want) return true
  }
  return false
}

const LAST_USED_EVERY_MS = 60_000
/** An Authorization header that names no key: empty, or the Bearer scheme alone. */
const NO_KEY_RE = /^\s*(?:bearer)?\s*$/i

/** Key and session rows kept between requests (SQLite only; see createPrincipalResolver). */
const KEPT_ROWS = 4096

/**
 * Resolves the caller from `Authorization: Bearer <key>` or the `session` cookie. Keys in the
 * query string are ignored. Every lookup reads the account, so tier changes, disabling and
 * logout take effect on the next request on every instance. Lookups of one key or session
 * that arrive while one runs share the next read (util/rounds.ts): it starts after they
 * arrived, so it sees what they would have seen alone. On SQLite a row found is kept and
 * served again while the database's change stamp for the users, api_keys and sessions tables
 * is the one read before it (db.changeStamp: any write of this process naming them, or any
 * commit of another process, changes it), which gives the same answers as reading again.
 */
export function createPrincipalResolver(db: Db, clock: Clock) {
  const keyRow = prepared(db, 1, (keyHash: string) =>
    db.k
      .selectFrom('api_keys')
      .innerJoin('users', 'users.id', 'api_keys.user_id')
      .select([
        'api_keys.id as key_id',
        'api_keys.enabled',
        'api_keys.read_only',
        'api_keys.expires_at',
        'api_keys.last_used_at',
        ...USER_COLUMNS.map((c) => `users.${c}` as const),
      ])
      .where('api_keys.key_hash', '=', keyHash),
  )
  const sessionRow = prepared(db, 1, (idHash: string) =>
    db.k
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select(['sessions.expires_at', 'sessions.csrf_token', ...USER_COLUMNS.map((c) => `users.${c}` as const)])
      .where('sessions.id_hash', '=', idHash),
  )
  const stamp = db.changeStamp?.(['users', 'api_keys', 'sessions'])
  /**
   * One read per round of callers of the same hash; every caller gets the row. With a change
   * stamp, a found row is kept (at most KEPT_ROWS, the oldest dropped) until the stamp moves.
   */
  const shared = <Row>(read: (hash: string) => Promise<Row[]>) => {
    const round = rounds<string, Row | undefined>(async (hashes) => {
      const [row] = await read(hashes[0])
      return hashes.map(() => row)
    })
    if (stamp === undefined) return (hash: string) => round(hash, hash)
    const kept = new Map<string, { row: Row; at: number }>()
    return async (hash: string) => {
      const at = stamp()
      const hit = kept.get(hash)
      if (hit !== undefined && hit.at === at) return hit.row
      const row = await round(hash, hash)
      kept.delete(hash)
      if (row !== undefined) {
        if (kept.size >= KEPT_ROWS) dropOldest(kept)
        kept.set(hash, { row, at })
      }
      return row
    }
  }
  const keyLookup = shared(keyRow)
  const sessionLookup = shared(sessionRow)
  // a row served again (kept, or shared by a round) gives the same User object, frozen: no
  // request may change what another one reads
  const users = new WeakMap<object, User>()
  const userOf = (row: Parameters<typeof toUser>[0]): User => {
    let u = users.get(row)
    if (u === undefined) {
      u = toUser(row)
      Object.freeze(u.limits)
      users.set(row, Object.freeze(u))
    }
    return u
  }
  /**
   * `fetchMetadata`: the request carries Sec-Fetch-Site, so it comes from a browser, whose
   * session cookie counts only beside its binding cookie (sessionBound); clients that send no
   * fetch metadata (curl, scripts) present the cookie alone.
   */
  return async function resolve(authorization: string | undefined, cookieHeader: string | undefined, fetchMetadata = false): Promise<Resolution> {
    // a header that carries no key (empty, or `Bearer` and nothing: a script's unset variable)
    // is a missing key, as no header is (1001, or the session cookie), not an invalid one
    if (authorization !== undefined && !NO_KEY_RE.test(authorization)) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
      if (!m || !API_KEY_RE.test(m[1])) return { kind: 'error', error: 'AUTH_INVALID' }
      const row = await keyLookup(sha256hex(m[1]))
      const now = clock.now()
      if (!row || !row.enabled || (row.expires_at !== null && Number(row.expires_at) <= now)) return { kind: 'error', error: 'AUTH_INVALID' }
      const user = userOf(row)
      if (user.disabled) return { kind: 'error', error: 'ACCOUNT_DISABLED' }
      if (!user.api_access) return { kind: 'error', error: 'API_ACCESS_DISABLED' }
      if (row.last_used_at === null || now - Number(row.last_used_at) > LAST_USED_EVERY_MS) {
        await db.k.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', row.key_id).execute()
      }
      return { kind: 'ok', principal: { user, via: 'key', keyId: row.key_id, readOnly: !!row.read_only } }
    }
    const cookies = sessionCookies(cookieHeader)
    if (cookies.length === 0) return { kind: 'none' }
    if (cookies.length > 1) return { kind: 'error', error: 'AUTH_AMBIGUOUS' }
    const sid = cookies[0]
    if (!SESSION_ID_RE.test(sid)) return { kind: 'error', error: 'SESSION_ENDED' }
    // a browser's lone session cookie without its binding one was tossed by a sibling host
    // (or predates the binding): never the session of whoever set it
    if (fetchMetadata && !sessionBound(cookieHeader, sid)) return { kind: 'error', error: 'SESSION_ENDED' }
    const row = await sessionLookup(sha256hex(sid))
    if (!row || Number(row.expires_at) <= clock.now()) return { kind: 'error', error: 'SESSION_ENDED' }
    const user = userOf(row)
    if (user.disabled) return { kind: 'error', error: 'ACCOUNT_DISABLED' }
    return { kind: 'ok', principal: { user, via: 'session', sessionId: sid, csrfToken: row.csrf_token } }
  }
}
export type PrincipalResolver = ReturnType<typeof createPrincipalResolver>
