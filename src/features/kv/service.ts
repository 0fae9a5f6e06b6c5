import crypto from 'node:crypto'
import { isUniqueViolation, type Db } from '../../db/kysely.js'
import type { Clock } from '../../util/clock.js'
import { toUser, type User } from '../../auth/users.js'
import { AppError } from '../../errors/app-error.js'
import { quotaOf } from '../../limits/quotas.js'
import { pageInfo, parsePage } from '../../http/pagination.js'
import { isoMicros } from '../../util/time.js'
import type { Bus } from '../../infra/bus.js'
import { createKvStore, type KvRow, type Overwrite } from './store.js'
import { DurabilityError } from '../../db/durability.js'
import { rounds } from '../../util/rounds.js'
import { createKvPublicCache, type Cached } from './public-cache.js'
import { KV_LIMITS, type DataType, type EntryOut } from './schemas.js'
import {
  KEY_RE,
  checkIncrInput,
  checkKey,
  checkPublicIncrInput,
  checkStoreInput,
  checkTags,
  checkType,
  invalid,
  listBound,
  lookupKey,
  parseIsoMs,
  valueText,
  type VersionCheck,
} from './validate.js'

/** The entry as the API shows it. */
export function toEntry(r: KvRow): EntryOut {
  return {
    key: r.key,
    value: JSON.parse(r.value),
    data_type: r.data_type,
    tags: JSON.parse(r.tags),
    is_public: !!r.is_public,
    created_at: isoMicros(Number(r.created_at)),
    updated_at: isoMicros(Number(r.updated_at)),
    version: Number(r.version),
    expires_at: r.expires_at === null ? null : isoMicros(Number(r.expires_at)),
    size: Number(r.size),
    // only on a public counter: answers of every other entry keep exactly their fields
    ...(Number(r.public_incr) ? { public_incr: true as const } : {}),
  }
}

/**
 * An entry's ETag: its version, quoted (decision 139). Every answer that names an entry (get,
 * store, incr, the owner's public read) sends this one, so any of them can be sent back.
 */
export const entityTag = (version: number | string): string => `"${Number(version)}"`

/** A public read's answer: the serialised body, and its ETag (null: the legacy read, which sends none). */
export interface PublicAnswer {
  body: Buffer
  etag: string | null
}

type PublicFields = { key: string; value: string; data_type: string; updated_at: number; username: string }

/** An entry as public answers show it, serialised by hand: the stored JSON text is spliced in as it is. */
const publicItemJson = (r: PublicFields): string =>
  `{"key":${JSON.stringify(r.key)},"value":${r.value},"owner":${JSON.stringify(r.username)},"updated_at":"${isoMicros(Number(r.updated_at))}","data_type":${JSON.stringify(r.data_type)}}`

/** A public read's answer. */
export function publicJson(r: PublicFields): string {
  return `{"success":true,"data":${publicItemJson(r)}}`
}

/**
 * The ETag of a public listing's page: a digest of its answer. A page has no one version, and
 * any write that shows in it (a value, a key, a flag, an expiry) changes its bytes.
 */
const listTag = (body: Buffer): string => `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`

/** An optional boolean flag of a write body as its column holds it (undefined: not sent, kept). */
const flagOf = (v: boolean | undefined): number | undefined => (v === undefined ? undefined : v ? 1 : 0)

export interface KvDeps {
  db: Db
  clock: Clock
  /** Tells other instances which keys changed (their public-read caches drop them). */
  bus?: Bus
  /** Life of a public-read cache line without a write (default 1 s: out-of-band edits show within it). */
  publicCacheTtlMs?: number
}

/** Users remembered as being at their key quota (a hint for refuseAtQuota); the set starts over beyond this. */
const AT_QUOTA_MAX = 10_000

/**
 * The key-value store's rules and codes (1601-1606, 1409), without HTTP. Every write runs in
 * one transaction that first takes the user's lock (db.lockUser), purges the user's expired
 * entries, then checks the key-count quota, so concurrent writers never pass it together.
 */
export function createKvService({ db, clock, bus, publicCacheTtlMs }: KvDeps) {
  const store = createKvStore(db)
  // the bus's FLUSH_ALL drops every line: invalidations may have been lost (Redis subscription dropped)
  const cache = createKvPublicCache(clock, { ttlMs: publicCacheTtlMs, bus })
  /**
   * After a write commits and before it is answered: this instance's cache at once, the
   * others through the bus, which resolves once they have dropped the lines (a read on any
   * instance after the answer sees the write). A failed publish is the bus's to count.
   */
  const changed = async (user: User, ...keys: string[]): Promise<void> => {
    await Promise.all(keys.map((key) => cache.changed(user.username, key).catch(() => {})))
  }

  /** `version` only from the owner's read: the legacy read's entry can change owner, so it has no tag. */
  type PublicRow = (Parameters<typeof publicJson>[0] & { expires_at: number | null; version?: number }) | undefined
  /** The database read behind a public line: one owner's entry, or the legacy winner of a key. */
  const publicReader = (username: string | undefined, key: string) => (): Promise<PublicRow> =>
    username === undefined ? store.getLegacyPublic(key, clock.now()) : store.getPublic(username, key, clock.now())

  /**
   * Database reads of public lines in flight, with the cache epoch they started in: readers
   * of a line share one read (a hot key that expires does not send every waiting reader to
   * the database), but only while no write happened since it started, since it could
   * return what the write replaced.
   */
  type Filled = { body: Buffer | null; etag: string | null }
  const filling = new Map<string, { epoch: number; body: Promise<Filled> }>()
  function fill(line: string, read: () => Promise<PublicRow>): Promise<Filled> {
    const seen = cache.epoch()
    const running = filling.get(line)
    if (running && running.epoch === seen) return running.body
    const body: Promise<Filled> = read()
      .then((row) => {
        const out = { body: row ? Buffer.from(publicJson(row)) : null, etag: row?.version === undefined ? null : entityTag(row.version) }
        cache.set(line, out.body, out.etag, row?.expires_at === null || row?.expires_at === undefined ? null : Number(row.expires_at), seen)
        return out
      })
      .finally(() => {
        if (filling.get(line)?.body === body) filling.delete(line)
      })
    filling.set(line, { epoch: seen, body })
    return body
  }

  /** A line in use that is due for a refresh is read again in the background. */
  function refreshIfDue(line: string, hit: Cached, read: () => Promise<PublicRow>): void {
    if (cache.refreshDue(hit) && !filling.has(line)) fill(line, read).catch(() => {})
  }

  /** Public reads go through the cache; misses (1604) are cached too. */
  async function cachedPublic(line: string, read: () => Promise<PublicRow>): Promise<PublicAnswer> {
    const hit = cache.get(line)
    if (hit) refreshIfDue(line, hit, read)
    const { body, etag } = hit ?? (await fill(line, read))
    if (body === null) throw new AppError('KV_KEY_NOT_FOUND')
    return { body, etag }
  }

  /**
   * Increments of one key that arrive while one is running are merged: the next round adds
   * their sum in one statement, so a hot row is written once per round, not once per request
   * (on PostgreSQL each UPDATE of a row waits for the commit of the one before). Each caller
   * gets the value, version and time it would have got had the round's increments run one
   * after another in arrival order, and is answered after the round's commit. A round holds
   * increments of one sign only, so every intermediate value lies between the stored one and
   * the result, and the statement's range check covers them all. Undefined: the entry is not
   * a live integer (or the sum would leave the range); each caller takes its own transaction.
   */
  const ROUND_MAX = 256
  /** `publicOnly`: an anonymous increment, which only a public counter takes (its own line). */
  type Incr = { user: User; key: string; by: number; publicOnly: boolean }
  const incrRound = rounds<Incr, KvRow | undefined>(
    async (round) => {
      const { user, key, publicOnly } = round[0]
      const total = round.reduce((a, c) => a + c.by, 0)
      const row = await store.incrInPlace(user.id, key, total, clock.now(), { count: round.length, publicOnly })
      if (!row) return round.map(() => undefined)
      await changed(user, key)
      let value = Number(row.value) - total
      return round.map((c, i) => {
        value += c.by
        const text = String(value)
        const later = round.length - 1 - i
        return { ...row, value: text, size: text.length, version: Number(row.version) - later, updated_at: Number(row.updated_at) - later }
      })
    },
    // the waiting increments of the first one's sign, in order, up to ROUND_MAX
    (waiting) => {
      const up = waiting[0].by >= 0
      let sum = 0
      const picked: number[] = []
      waiting.forEach((c, i) => {
        if (c.by >= 0 === up && picked.length < ROUND_MAX && Number.isSafeInteger(sum + c.by)) {
          picked.push(i)
          sum += c.by
        }
      })
      return picked
    },
  )
  const incrMerged = (user: User, key: string, by: number, publicOnly = false) =>
    incrRound(`${publicOnly ? 'public' : 'owner'}\n${user.id}\n${key}`, { user, key, by, publicOnly })

  /**
   * Overwrites of live entries that arrive while a round of them runs wait; the next round
   * writes them together in one statement (store.updateManyInPlace): group commit across
   * keys, as increments of one key merge above. A round holds each entry at most once, in
   * arrival order: a later write of an entry in the round waits for the next one. A round the
   * database refused as a whole (on PostgreSQL, a deadlock with another instance's round)
   * rolled back, and its writes run one by one; a failed sync (DurabilityError) is every
   * caller's answer, as it is when writes run alone.
   */
  const entryOf = (f: Overwrite) => `${f.userId}\n${f.key}`
  const overwriteRound = rounds<Overwrite, KvRow | undefined>(
    async (round) => {
      if (round.length === 1) return [await store.updateInPlace(round[0])]
      try {
        const rows = await store.updateManyInPlace(round)
        const byEntry = new Map(rows.map((r) => [`${r.user_id}\n${r.key}`, r]))
        return round.map((f) => byEntry.get(entryOf(f)))
      } catch (e) {
        if (e instanceof DurabilityError) throw e
        return Promise.all(round.map((f) => store.updateInPlace(f).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))))
      }
    },
    (waiting) => {
      const seen = new Set<string>()
      const picked: number[] = []
      waiting.forEach((f, i) => {
        const entry = entryOf(f)
        if (picked.length < ROUND_MAX && !seen.has(entry)) picked.push(i)
        seen.add(entry)
      })
      return picked
    },
  )
  /** Every overwrite is on one line: a round writes entries of any users and keys. */
  const overwrite = (f: Overwrite) => overwriteRound('', f)

  /**
   * The row written after `prev`: updated_at strictly increases, version counts writes. A new
   * entry's version (no `prev`) is one above the user's retired ones (checkCount), set later.
   */
  const nextStamp = (prev: KvRow | undefined, now: number) => ({
    updated_at: prev ? Math.max(now, Number(prev.updated_at) + 1) : now,
    version: prev ? Number(prev.version) + 1 : 0,
  })

  /**
   * The key-count quota from the user's counter (O(1)). The counter includes expired rows not
   * yet purged: only when it says the quota is reached are they purged and the count read
   * again, so a refusal names the live count, as when every write purged first. Returns the
   * version a new entry takes: one above every version a deleted entry of the user had.
   */
  async function checkCount(trx: Parameters<typeof store.insert>[0], user: User, now: number): Promise<number> {
    const limit = quotaOf(user.limits, 'kv_keys')
    let c = await store.keyCount(trx, user.id)
    if (c.keys < limit) return c.retired + 1
    await store.purgeUserExpired(trx, user.id, now)
    c = await store.keyCount(trx, user.id)
    if (c.keys >= limit) throw quotaReached(user, c.keys, limit)
    return c.retired + 1
  }

  /**
   * Users whose last create was refused for the key count (bounded). A hint only: their next
   * create of a missing key first asks one read (refuseAtQuota), which decides; a user absent
   * from it, or on another instance, takes the write path, which decides the same.
   */
  const atQuota = new Set<string>()
  const quotaReached = (user: User, current: number, limit: number) => {
    if (atQuota.size >= AT_QUOTA_MAX) atQuota.clear()
    atQuota.add(user.id)
    return new AppError('KV_KEY_QUOTA', { params: { current, limit } })
  }
  /**
   * For a user at the key quota, a create of `key` is refused from one read, as the write
   * path would refuse it: the count is at the limit, none of the user's rows has expired (a
   * purge would free none) and no row holds the key. The read is one snapshot, so the refusal
   * is what a write at that instant would have met. Otherwise the caller goes on.
   */
  async function refuseAtQuota(user: User, key: string, now: number): Promise<void> {
    if (!atQuota.has(user.id)) return
    const limit = quotaOf(user.limits, 'kv_keys')
    const q = await store.quotaState(user.id, key, now)
    if (q.taken) return
    if (q.keys >= limit && !q.expired) throw quotaReached(user, q.keys, limit)
    atQuota.delete(user.id)
  }

  /**
   * The create without the transaction path's purge and lookups; undefined when that path
   * must decide: the counter says the quota is reached, or a row (expired, or created
   * meanwhile) holds the key.
   */
  async function createFast(user: User, row: Omit<KvRow, 'version'>): Promise<KvRow | undefined> {
    try {
      return await store.create(row, quotaOf(user.limits, 'kv_keys'))
    } catch (e) {
      if (isUniqueViolation(e)) return undefined
      throw e
    }
  }

  function checkSize(text: string, user: User): number {
    const size = Buffer.byteLength(text, 'utf8')
    const limit = quotaOf(user.limits, 'kv_entry_bytes')
    if (size > limit) throw new AppError('KV_ENTRY_TOO_LARGE', { params: { limit } })
    return size
  }

  const conflict = (row: KvRow | undefined) =>
    new AppError('VERSION_CONFLICT', {
      params: { current: row ? Number(row.version) : 0 },
      extra: { details: { current_version: row ? Number(row.version) : 0, current_updated_at: row ? isoMicros(Number(row.updated_at)) : null } },
    })

  /**
   * The increment in a transaction under the user's lock: every case the in-place statement
   * leaves (a missing entry, a fractional number, a condition, a sum out of range). A missing
   * entry starts at 0, unless `publicOnly` (a visitor's increment): then anything but a live
   * number entry marked public_incr is 1604, and nothing is created.
   */
  async function incrInTransaction(
    user: User,
    key: string,
    by: number,
    now: number,
    o: { check?: VersionCheck; expiresAt?: number | null; publicIncr?: number; publicOnly?: boolean },
  ): Promise<{ created: boolean; row: KvRow }> {
    return store.transaction(async (trx) => {
      await db.lockUser(trx, user.id)
      await store.purgeExpiredKeys(trx, user.id, [key], now)
      const prev = await store.get(trx, user.id, key, now)
      if (o.publicOnly && (!prev || prev.data_type !== 'number' || !Number(prev.public_incr))) throw new AppError('KV_KEY_NOT_FOUND')
      if (o.check && !o.check(prev ? Number(prev.version) : 0)) throw conflict(prev)
      if (prev && prev.data_type !== 'number') {
        throw invalid({
          zh: `条目 "${key}" 的 data_type 为 ${prev.data_type}；incr 只能累加 number 类型的条目`,
          en: `entry "${key}" has data_type ${prev.data_type}; incr only adds to number entries`,
        })
      }
      const base = prev ? Number(JSON.parse(prev.value)) : 0
      const value = base + by
      // a sum a double cannot hold is refused, never answered as done: beyond ±(2^53 - 1)
      // integers are no longer exact (the in-place statement has the same bound), and a `by`
      // too small to change the stored number would be lost
      if (!(Math.abs(value) <= Number.MAX_SAFE_INTEGER) || (by !== 0 && value === base)) {
        throw invalid({
          zh: `结果超出范围：累加后须为 ±${Number.MAX_SAFE_INTEGER} 以内且不同于 ${base} 的数字`,
          en: `the result is out of range: an increment must give a number within ±${Number.MAX_SAFE_INTEGER} that differs from ${base}`,
        })
      }
      const text = JSON.stringify(value)
      const size = checkSize(text, user)
      const expires_at = o.expiresAt === undefined ? (prev?.expires_at ?? null) : o.expiresAt
      if (prev) {
        const fields = {
          key: prev.key,
          value: text,
          data_type: 'number',
          tags: prev.tags,
          is_public: prev.is_public,
          size,
          expires_at,
          public_incr: o.publicIncr ?? prev.public_incr,
          ...nextStamp(prev, now),
        }
        await store.update(trx, user.id, prev.key, fields)
        return { created: false, row: { ...fields, user_id: user.id, created_at: prev.created_at } }
      }
      const version = await checkCount(trx, user, now)
      const row: KvRow = {
        user_id: user.id,
        key,
        value: text,
        data_type: 'number',
        tags: '[]',
        is_public: 0,
        size,
        expires_at,
        created_at: now,
        updated_at: now,
        version,
        public_incr: o.publicIncr ?? 0,
      }
      await store.insert(trx, row)
      return { created: true, row }
    })
  }

  return {
    store,
    cache,

    /**
     * POST /svc_api/data/store: create, update, rename a legacy key; optional CAS and ttl.
     * `check`: the request's If-Match / If-None-Match, met with the body's `version` and
     * `if_updated_at` on the entry the write reads (409 / 1409 when not).
     */
    async put(user: User, body: unknown, check?: VersionCheck): Promise<{ created: boolean; entry: EntryOut }> {
      const now = clock.now()
      const input = checkStoreInput(body)
      checkKey(input.key)
      if (check && input.version !== undefined && !check(input.version)) {
        throw invalid({
          zh: 'version 与 If-Match / If-None-Match 请求头相互矛盾：没有条目能同时满足',
          en: 'version and the If-Match / If-None-Match header disagree: no entry could meet both',
        })
      }
      const tags = input.tags === undefined ? undefined : checkTags(input.tags)
      let oldKey: string | undefined
      if (input.old_key !== undefined) {
        oldKey = lookupKey(input.old_key, 'old_key')
        if (oldKey.length <= KV_LIMITS.keyMaxChars && KEY_RE.test(oldKey)) {
          throw invalid({ zh: 'old_key 只能指定不符合键名格式的旧键', en: 'old_key can only name a legacy key that breaks the key format' })
        }
      }
      let ifUpdatedAt: number | undefined
      if (input.if_updated_at !== undefined) {
        const t = parseIsoMs(input.if_updated_at)
        if (t === null)
          throw invalid({
            zh: 'if_updated_at 须为 ISO 8601 时间戳，格式同 updated_at 的返回值',
            en: 'if_updated_at must be an ISO 8601 timestamp as returned in updated_at',
          })
        ifUpdatedAt = t
      }
      // size and shape are checked before the database is touched; an update without
      // data_type keeps the entry's own type, known only inside the transaction
      const text = valueText(input.value, input.data_type ?? 'json')
      const size = checkSize(text, user)

      // an overwrite of a live entry, with no condition: one statement, no user lock
      if (oldKey === undefined && input.version === undefined && ifUpdatedAt === undefined && check === undefined) {
        // a user refused at the key quota is asked first, so a refusal costs one read and no write
        await refuseAtQuota(user, input.key, now)
        const row = await overwrite({
          userId: user.id,
          key: input.key,
          now,
          value: text,
          size,
          data_type: input.data_type ?? 'json',
          // without data_type the value was checked as json: an entry of another type takes the transaction path
          requireJson: input.data_type === undefined,
          tags: tags ? JSON.stringify(tags) : undefined,
          is_public: input.is_public === undefined ? undefined : input.is_public ? 1 : 0,
          expires_at: input.ttl === undefined ? undefined : input.ttl === null ? null : now + input.ttl * 1000,
          public_incr: flagOf(input.public_incr),
        })
        if (row) {
          await changed(user, input.key)
          return { created: false, entry: toEntry(row) }
        }
        // no live entry: a create in one statement, while under the quota and no row holds the key
        const created = await createFast(user, {
          user_id: user.id,
          key: input.key,
          value: text,
          data_type: input.data_type ?? 'json',
          tags: tags ? JSON.stringify(tags) : '[]',
          is_public: input.is_public ? 1 : 0,
          size,
          expires_at: input.ttl === undefined || input.ttl === null ? null : now + input.ttl * 1000,
          created_at: now,
          updated_at: now,
          public_incr: flagOf(input.public_incr) ?? 0,
        })
        if (created) {
          await changed(user, input.key)
          return { created: true, entry: toEntry(created) }
        }
      }

      const result = await store.transaction(async (trx) => {
        await db.lockUser(trx, user.id)
        // an expired row still holds its key until purged
        await store.purgeExpiredKeys(trx, user.id, oldKey === undefined ? [input.key] : [input.key, oldKey], now)
        const source = await store.get(trx, user.id, oldKey ?? input.key, now)
        if (oldKey !== undefined && !source) throw new AppError('KV_KEY_NOT_FOUND')
        if (input.version !== undefined && (source ? Number(source.version) : 0) !== input.version) throw conflict(source)
        if (ifUpdatedAt !== undefined && (!source || Number(source.updated_at) !== ifUpdatedAt)) throw conflict(source)
        if (check && !check(source ? Number(source.version) : 0)) throw conflict(source)
        if (oldKey !== undefined && (await store.get(trx, user.id, input.key, now))) throw new AppError('KV_KEY_EXISTS')

        const dataType = input.data_type ?? (source?.data_type as DataType | undefined) ?? 'json'
        if (dataType !== (input.data_type ?? 'json')) {
          try {
            checkType(input.value, dataType)
          } catch (e) {
            // checkType's 1106 says what is wrong in both languages; this names the type it checked
            const detail = e instanceof AppError ? e.options.params?.detail : undefined
            if (typeof detail !== 'object') throw e
            throw invalid({
              zh: `${detail.zh}（这是该条目当前的类型；要改类型请发送 data_type）`,
              en: `${detail.en} (the entry's current type; send data_type to change it)`,
            })
          }
        }
        const fields = {
          key: input.key,
          value: text,
          data_type: dataType,
          tags: tags ? JSON.stringify(tags) : (source?.tags ?? '[]'),
          is_public: input.is_public === undefined ? (source ? Number(source.is_public) : 0) : input.is_public ? 1 : 0,
          size,
          expires_at: input.ttl === undefined ? (source?.expires_at ?? null) : input.ttl === null ? null : now + input.ttl * 1000,
          public_incr: flagOf(input.public_incr) ?? (source ? Number(source.public_incr) : 0),
          ...nextStamp(source, now),
        }
        if (source && oldKey !== undefined) {
          // a rename starts a life of `key`: above every version a deleted entry had (the
          // legacy entry's own history goes with it)
          fields.version = Math.max(Number(source.version), (await store.keyCount(trx, user.id)).retired) + 1
        }
        if (source) {
          await store.update(trx, user.id, source.key, fields)
          return { created: false, entry: toEntry({ ...fields, user_id: user.id, created_at: source.created_at }) }
        }
        const row: KvRow = { ...fields, version: await checkCount(trx, user, now), user_id: user.id, created_at: now }
        await store.insert(trx, row)
        return { created: true, entry: toEntry(row) }
      })
      if (oldKey !== undefined) await changed(user, oldKey, input.key)
      else await changed(user, input.key)
      return result
    },

    /**
     * POST /svc_api/data/incr: atomic add; a missing entry starts at 0 (data_type number).
     * `check` as for put; `public_incr`, when sent, marks or unmarks the entry as a public counter.
     */
    async incr(user: User, body: unknown, check?: VersionCheck): Promise<{ created: boolean; entry: EntryOut }> {
      const now = clock.now()
      const input = checkIncrInput(body)
      checkKey(input.key)
      const by = input.by ?? 1
      const expiresAt = input.ttl === undefined ? undefined : input.ttl === null ? null : now + input.ttl * 1000
      const publicIncr = flagOf(input.public_incr)
      // a live integer entry: one statement (an integer of at most 16 digits fits any entry size limit above 16 bytes)
      if (check === undefined && Number.isSafeInteger(by) && quotaOf(user.limits, 'kv_entry_bytes') > 16) {
        const alone = expiresAt !== undefined || publicIncr !== undefined
        const row = alone ? await store.incrInPlace(user.id, input.key, by, now, { expiresAt, publicIncr }) : await incrMerged(user, input.key, by)
        if (row) {
          if (alone) await changed(user, input.key)
          return { created: false, entry: toEntry(row) }
        }
        // no live integer entry: a missing key's start (0 + by, within the entry size) can only meet the quota
        await refuseAtQuota(user, input.key, now)
      }
      const { created, row } = await incrInTransaction(user, input.key, by, now, { check, expiresAt, publicIncr })
      await changed(user, input.key)
      return { created, entry: toEntry(row) }
    },

    /**
     * POST /svc_api/data/public/{username}/{key}/incr, without a key: adds `delta` (1 or -1,
     * default 1) to a live number entry its owner marked `public_incr`, of an enabled account,
     * through the owner's increment (the same rounds, cache invalidation and version). Anything
     * else (no such user or entry, a disabled account, expired, not a number, not marked) is
     * the public read's 1604, so a visitor cannot tell them apart; nothing is ever created and
     * nothing but the value, version and updated_at changes.
     */
    async publicIncr(username: string, key: string, body: unknown): Promise<PublicAnswer> {
      const { delta } = checkPublicIncrInput(body)
      const k = lookupKey(key)
      if (username.length > 64) throw new AppError('KV_KEY_NOT_FOUND')
      const owner = await store.enabledOwner(username.toLowerCase())
      if (!owner) throw new AppError('KV_KEY_NOT_FOUND')
      const user = toUser(owner)
      let row = quotaOf(user.limits, 'kv_entry_bytes') > 16 ? await incrMerged(user, k, delta, true) : undefined
      if (!row) {
        // not a live integer counter: a miss is answered from one read, without the user's lock;
        // a fractional counter (or one a race changed) is the transaction's to decide
        const now = clock.now()
        const cur = await store.read(user.id, k, now)
        if (!cur || cur.data_type !== 'number' || !Number(cur.public_incr)) throw new AppError('KV_KEY_NOT_FOUND')
        row = (await incrInTransaction(user, k, delta, now, { publicOnly: true })).row
        await changed(user, k)
      }
      return { body: Buffer.from(publicJson({ ...row, username: user.username })), etag: entityTag(row.version) }
    },

    /** GET /svc_api/data/get: the caller's own entry (public or not). */
    async get(user: User, key: unknown): Promise<EntryOut> {
      const row = await store.read(user.id, lookupKey(key), clock.now())
      if (!row) throw new AppError('KV_KEY_NOT_FOUND')
      return toEntry(row)
    },

    /**
     * The cached answer of a public read (owner and key; owner undefined: the legacy read by
     * key), when this instance has a fresh one; for the fast path, which takes names that need
     * no decoding and that publicRead would look up unchanged.
     */
    peekPublic(username: string | undefined, key: string): Cached | undefined {
      const name = username?.toLowerCase()
      const line = name === undefined ? cache.legacyLine(key) : cache.userLine(name, key)
      const hit = cache.get(line)
      if (hit) refreshIfDue(line, hit, publicReader(name, key))
      return hit
    },

    /** GET /svc_api/data/public/{username}/{key}: serialised JSON and the entry's ETag, or 1604. */
    async publicRead(username: string, key: string): Promise<PublicAnswer> {
      const k = lookupKey(key)
      if (username.length > 64) throw new AppError('KV_KEY_NOT_FOUND')
      const name = username.toLowerCase()
      return cachedPublic(cache.userLine(name, k), publicReader(name, k))
    },

    /**
     * GET /svc_api/data/public-list/{username} (decision 317): a page of the owner's
     * live public entries, each as the public read answers it, by key after `after`, only keys
     * starting with `prefix`; `next_after` the page's last key when more follow (one row more
     * is read to know), else null. A missing or disabled account is the public read's 1604.
     * Read from the database every time: nothing to drop when a write changes the page.
     */
    async publicList(username: string, query: Record<string, unknown>): Promise<PublicAnswer> {
      if (query.page !== undefined) {
        throw invalid({
          zh: '公开列表不接受 page：请用 after 翻页（上一页的 next_after）',
          en: "page is not taken here: this list pages by after (the previous page's next_after)",
        })
      }
      const p = parsePage(query, { perPage: 50, maxPerPage: 100 })
      const prefix = listBound(query.prefix, 'prefix')
      const after = listBound(query.after, 'after')
      if (username.length > 64) throw new AppError('KV_KEY_NOT_FOUND')
      const owner = await store.enabledOwner(username.toLowerCase())
      if (!owner) throw new AppError('KV_KEY_NOT_FOUND')
      const rows = await store.listPublic(owner.id, clock.now(), p.perPage + 1, prefix, after)
      const items = rows.slice(0, p.perPage)
      const next = rows.length > p.perPage ? JSON.stringify(items[items.length - 1].key) : 'null'
      const body = Buffer.from(
        `{"success":true,"data":{"items":[${items.map((r) => publicItemJson({ ...r, username: owner.username })).join(',')}],"per_page":${p.perPage},"next_after":${next}}}`,
      )
      return { body, etag: listTag(body) }
    },

    /** GET /svc_api/data/public/{key} (legacy): oldest public entry wins, then username order. */
    async legacyPublicRead(key: string): Promise<PublicAnswer> {
      const k = lookupKey(key)
      return cachedPublic(cache.legacyLine(k), publicReader(undefined, k))
    },

    /**
     * GET /svc_api/data/list: a page of entries by key, with quota and usage; with `prefix`,
     * only keys starting with it (page and total count those), usage staying the whole store's.
     * With `after` (instead of `page`; empty: from the first key), the page starts past that
     * key: a cursor that keys written or deleted between pages cannot shift, and the answer
     * adds `next_after`, the last key of the page when more follow (one row more is read to
     * know), else null. Without it the answer has exactly the spec's fields.
     */
    async list(user: User, query: Record<string, unknown>) {
      const p = parsePage(query, { perPage: 50, maxPerPage: 100 })
      const prefix = listBound(query.prefix, 'prefix')
      const cursor = query.after !== undefined
      const after = listBound(query.after, 'after')
      if (cursor && query.page !== undefined) {
        throw invalid({
          zh: 'page 与 after 不能同时给出：after 已指定该页从哪里开始',
          en: 'page and after cannot be given together: after says where the page starts',
        })
      }
      const now = clock.now()
      const usage = await store.usage(db.k, user.id, now)
      const rows = await store.list(user.id, now, cursor ? 0 : p.offset, cursor ? p.perPage + 1 : p.perPage, prefix, after)
      const items = rows.slice(0, p.perPage)
      const total = prefix === undefined ? usage.keys : await store.countPrefix(user.id, now, prefix)
      return {
        items: items.map(toEntry),
        ...pageInfo(p, total),
        ...(cursor ? { next_after: rows.length > p.perPage ? items[items.length - 1].key : null } : {}),
        quota: { max_keys: quotaOf(user.limits, 'kv_keys'), max_entry_bytes: quotaOf(user.limits, 'kv_entry_bytes') },
        usage,
      }
    },

    /**
     * DELETE /svc_api/data/delete: 1604 when there is no such (live) entry, condition or not;
     * 409 / 1409 when the entry does not meet `check` (If-Match / If-None-Match).
     */
    async remove(user: User, key: unknown, check?: VersionCheck): Promise<void> {
      const k = lookupKey(key)
      const meets =
        check &&
        ((row: KvRow) => {
          if (!check(Number(row.version))) throw conflict(row)
        })
      if (!(await store.remove(user.id, k, clock.now(), meets))) throw new AppError('KV_KEY_NOT_FOUND')
      await changed(user, k)
    },

    /** Deletes every expired entry (the periodic job; reads already ignore them). */
    purgeExpired: () => store.purgeExpired(clock.now()),
  }
}
export type KvService = ReturnType<typeof createKvService>
