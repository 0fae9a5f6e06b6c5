import type { Db } from '../../db/kysely.js'
import type { Clock } from '../../util/clock.js'
import type { User } from '../../auth/users.js'
import { AppError } from '../../errors/app-error.js'
import { quotaOf } from '../../limits/quotas.js'
import { pageInfo, parsePage } from '../../http/pagination.js'
import { isoMicros } from '../../util/time.js'
import type { Bus } from '../../util/bus.js'
import { createKvStore, type KvRow } from './store.js'
import { createPublicCache } from './public-cache.js'
import { DATA_TYPES, KV_LIMITS, type DataType, type EntryOut, type IncrInput, type StoreInput } from './schemas.js'

export const KEY_RE = /^[A-Za-z][A-Za-z0-9_-]*$/
// C0 and C1 control characters (U+0000 included): never in tags
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/

// an unpaired UTF-16 surrogate (String.prototype.isWellFormed is ES2024)
const LONE_SURROGATE_RE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const isWellFormed = (s: string) => !LONE_SURROGATE_RE.test(s)

const invalid = (detail: string) => new AppError('INVALID_PARAMETER', { params: { detail } })

/** 1601 (length, checked first) and 1606 (format) for a key being written. */
export function checkKey(key: string): void {
  if (key.length > KV_LIMITS.keyMaxChars) throw new AppError('KV_KEY_TOO_LONG')
  if (!KEY_RE.test(key)) throw new AppError('KV_KEY_FORMAT')
}

/**
 * A key to look up (get, delete, public reads, old_key): legacy keys that break today's
 * format stay reachable, but a string that no entry can have (too long, U+0000, unpaired
 * surrogate) answers 1604 without reaching the database.
 */
function lookupKey(key: unknown, name = 'key'): string {
  if (Array.isArray(key)) throw invalid(`${name} must be given once`)
  if (typeof key !== 'string' || key === '') throw invalid(`${name} is required`)
  if (key.length > KV_LIMITS.lookupKeyMaxChars || key.includes('\u0000') || !isWellFormed(key)) throw new AppError('KV_KEY_NOT_FOUND')
  return key
}

function checkString(s: string, where: string): void {
  if (s.includes('\u0000')) throw invalid(`${where} contains U+0000, which the store cannot keep`)
  if (!isWellFormed(s)) throw invalid(`${where} contains an unpaired UTF-16 surrogate, which is not valid Unicode`)
}

/**
 * Checks a JSON value without recursion: nesting depth, finite numbers, and strings (values
 * and member names) free of U+0000 and unpaired surrogates. Same answer on both engines.
 */
export function checkJsonValue(value: unknown): void {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (typeof v === 'string') checkString(v, 'value')
    else if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw invalid('value holds a number out of range (numbers must be finite doubles)')
    } else if (v !== null && typeof v === 'object') {
      if (depth + 1 > KV_LIMITS.maxDepth) throw invalid(`value nests deeper than ${KV_LIMITS.maxDepth} levels`)
      if (Array.isArray(v)) for (const item of v) stack.push([item, depth + 1])
      else {
        for (const [name, item] of Object.entries(v)) {
          checkString(name, 'value (a member name)')
          stack.push([item, depth + 1])
        }
      }
    } else if (typeof v !== 'boolean' && v !== null) {
      throw invalid('value is not a JSON value')
    }
  }
}

/** Validates a value against its data_type. */
export function checkType(value: unknown, dataType: DataType): void {
  if (value === undefined) throw invalid('value is required')
  if (dataType === 'number') {
    if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid('value must be a finite number for data_type number')
  } else if (dataType === 'text') {
    if (typeof value !== 'string') throw invalid('value must be a string for data_type text')
    checkString(value, 'value')
  } else {
    checkJsonValue(value)
  }
}

/** Validates a value against its data_type; returns the JSON text that is stored. */
export function valueText(value: unknown, dataType: DataType): string {
  checkType(value, dataType)
  return JSON.stringify(value)
}

function checkTags(tags: unknown): string[] {
  if (!Array.isArray(tags)) throw invalid('tags must be an array of strings')
  if (tags.length > KV_LIMITS.tagsMax) throw invalid(`at most ${KV_LIMITS.tagsMax} tags`)
  for (const t of tags) {
    if (typeof t !== 'string' || t.length === 0 || [...t].length > KV_LIMITS.tagMaxChars) {
      throw invalid(`each tag must be a string of 1 to ${KV_LIMITS.tagMaxChars} characters`)
    }
    if (CONTROL_RE.test(t)) throw invalid('tags cannot contain control characters')
    checkString(t, 'a tag')
  }
  return tags as string[]
}

function checkTtl(ttl: unknown): void {
  if (ttl === undefined || ttl === null) return
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > KV_LIMITS.ttlMaxSeconds) {
    throw invalid(`ttl must be an integer from 1 to ${KV_LIMITS.ttlMaxSeconds} seconds, or null`)
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function checkKeyField(v: Record<string, unknown>): string {
  if (v.key === undefined || v.key === null) throw invalid('key is required')
  if (typeof v.key !== 'string') throw invalid('key must be a string')
  return v.key
}

/**
 * The store body, type by type and without coercion (the routes turn off the schema
 * validator's coercion, so `"1"` is never a number and `0` never null). Rules with their own
 * codes (key length and format, sizes) are checked after this.
 */
export function checkStoreInput(body: unknown): StoreInput {
  if (!isObject(body)) throw invalid('the body must be a JSON object')
  const key = checkKeyField(body)
  if (!('value' in body) || body.value === undefined) throw invalid('value is required')
  const { data_type, is_public, old_key, version, if_updated_at, ttl, tags } = body
  if (data_type !== undefined && !(DATA_TYPES as readonly unknown[]).includes(data_type)) {
    throw invalid(`data_type must be one of ${DATA_TYPES.join(', ')}`)
  }
  if (is_public !== undefined && typeof is_public !== 'boolean') throw invalid('is_public must be true or false')
  if (old_key !== undefined && typeof old_key !== 'string') throw invalid('old_key must be a string')
  if (version !== undefined && (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0)) {
    throw invalid('version must be an integer >= 0')
  }
  if (if_updated_at !== undefined && typeof if_updated_at !== 'string') throw invalid('if_updated_at must be a string as returned in updated_at')
  checkTtl(ttl)
  return { key, value: body.value, data_type: data_type as DataType | undefined, tags: tags as string[] | undefined, is_public, old_key, version, if_updated_at, ttl: ttl as number | null | undefined }
}

/** The incr body, without coercion. */
export function checkIncrInput(body: unknown): IncrInput {
  if (!isObject(body)) throw invalid('the body must be a JSON object')
  const key = checkKeyField(body)
  if (body.by !== undefined && (typeof body.by !== 'number' || !Number.isFinite(body.by))) throw invalid('by must be a finite number')
  checkTtl(body.ttl)
  return { key, by: body.by as number | undefined, ttl: body.ttl as number | null | undefined }
}

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/

/** Parses an ISO 8601 timestamp (as the API returns them) to epoch ms; null if malformed. */
export function parseIsoMs(s: string): number | null {
  const m = ISO_RE.exec(s)
  if (!m) return null
  const [, y, mo, d, h, mi, se, frac, off] = m
  const ms = Number((frac ?? '').padEnd(3, '0').slice(0, 3))
  let t = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(se), ms)
  if (off !== 'Z') {
    const sign = off[0] === '-' ? -1 : 1
    t -= sign * (Number(off.slice(1, 3)) * 60 + Number(off.slice(4, 6))) * 60_000
  }
  return Number.isFinite(t) ? t : null
}

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
  }
}

/** A public read, serialised by hand: the stored JSON text is spliced in as it is. */
export function publicJson(r: { key: string; value: string; data_type: string; updated_at: number; username: string }): string {
  return `{"success":true,"data":{"key":${JSON.stringify(r.key)},"value":${r.value},"owner":${JSON.stringify(r.username)},"updated_at":"${isoMicros(Number(r.updated_at))}","data_type":${JSON.stringify(r.data_type)}}}`
}

export interface KvDeps {
  db: Db
  clock: Clock
  /** Tells other instances which keys changed (their public-read caches drop them). */
  bus?: Bus
}

const BUS_CHANNEL = 'kv:changed'

/**
 * The key-value store's rules and codes (1601-1606, 1409), without HTTP. Every write runs in
 * one transaction that first takes the user's lock (db.lockUser), purges the user's expired
 * entries, then checks the key-count quota, so concurrent writers never pass it together.
 */
export function createKvService({ db, clock, bus }: KvDeps) {
  const store = createKvStore(db)
  const cache = createPublicCache(clock)
  bus?.subscribe(BUS_CHANNEL, (m) => {
    try {
      const [username, key] = JSON.parse(m) as [string, string]
      cache.invalidate(username, key)
    } catch {}
  })
  /** After a write commits: this instance's cache at once, the others through the bus. */
  const changed = (user: User, ...keys: string[]) => {
    for (const key of keys) {
      cache.invalidate(user.username, key)
      void bus?.publish(BUS_CHANNEL, JSON.stringify([user.username, key])).catch(() => {})
    }
  }

  /** Public reads go through the cache; misses (1604) are cached too. */
  async function cachedPublic(line: string, read: () => Promise<(Parameters<typeof publicJson>[0] & { expires_at: number | null }) | undefined>): Promise<string> {
    const hit = cache.get(line)
    if (hit) {
      if (hit.body === null) throw new AppError('KV_KEY_NOT_FOUND')
      return hit.body
    }
    const seen = cache.epoch()
    const row = await read()
    const body = row ? publicJson(row) : null
    cache.set(line, body, row?.expires_at === null || row?.expires_at === undefined ? null : Number(row.expires_at), seen)
    if (body === null) throw new AppError('KV_KEY_NOT_FOUND')
    return body
  }

  /** The row written after `prev`: updated_at strictly increases, version counts writes. */
  const nextStamp = (prev: KvRow | undefined, now: number) => ({
    updated_at: prev ? Math.max(now, Number(prev.updated_at) + 1) : now,
    version: prev ? Number(prev.version) + 1 : 1,
  })

  async function checkCount(trx: Parameters<typeof store.insert>[0], user: User, now: number): Promise<void> {
    const limit = quotaOf(user.limits, 'kv_keys')
    const { keys } = await store.usage(trx, user.id, now)
    if (keys >= limit) throw new AppError('KV_KEY_QUOTA', { params: { current: keys, limit } })
  }

  function checkSize(text: string, user: User): number {
    const size = Buffer.byteLength(text, 'utf8')
    const limit = quotaOf(user.limits, 'kv_entry_bytes')
    if (size > limit) throw new AppError('KV_ENTRY_TOO_LARGE', { params: { limit } })
    return size
  }

  const conflict = (row: KvRow | undefined) => new AppError('VERSION_CONFLICT', {
    params: { current: row ? Number(row.version) : 0 },
    extra: { details: { current_version: row ? Number(row.version) : 0, current_updated_at: row ? isoMicros(Number(row.updated_at)) : null } },
  })

  return {
    store,
    cache,

    /** POST /svc_api/data/store: create, update, rename a legacy key; optional CAS and ttl. */
    async put(user: User, body: unknown): Promise<{ created: boolean; entry: EntryOut }> {
      const now = clock.now()
      const input = checkStoreInput(body)
      checkKey(input.key)
      const tags = input.tags === undefined ? undefined : checkTags(input.tags)
      let oldKey: string | undefined
      if (input.old_key !== undefined) {
        oldKey = lookupKey(input.old_key, 'old_key')
        if (oldKey.length <= KV_LIMITS.keyMaxChars && KEY_RE.test(oldKey)) {
          throw invalid('old_key can only name a legacy key that breaks the key format')
        }
      }
      let ifUpdatedAt: number | undefined
      if (input.if_updated_at !== undefined) {
        const t = parseIsoMs(input.if_updated_at)
        if (t === null) throw invalid('if_updated_at must be an ISO 8601 timestamp as returned in updated_at')
        ifUpdatedAt = t
      }
      // size and shape are checked before the database is touched; an update without
      // data_type keeps the entry's own type, known only inside the transaction
      const text = valueText(input.value, input.data_type ?? 'json')
      const size = checkSize(text, user)

      const result = await store.transaction(async (trx) => {
        await db.lockUser(trx, user.id)
        await store.purgeUserExpired(trx, user.id, now)
        const source = await store.get(trx, user.id, oldKey ?? input.key, now)
        if (oldKey !== undefined && !source) throw new AppError('KV_KEY_NOT_FOUND')
        if (input.version !== undefined && (source ? Number(source.version) : 0) !== input.version) throw conflict(source)
        if (ifUpdatedAt !== undefined && (!source || Number(source.updated_at) !== ifUpdatedAt)) throw conflict(source)
        if (oldKey !== undefined && (await store.get(trx, user.id, input.key, now))) throw new AppError('KV_KEY_EXISTS')

        const dataType = (input.data_type ?? (source?.data_type as DataType | undefined) ?? 'json')
        if (dataType !== (input.data_type ?? 'json')) {
          try {
            checkType(input.value, dataType)
          } catch (e) {
            const detail = e instanceof AppError ? e.options.params?.detail : String(e)
            throw invalid(`${detail} (the entry's current type; send data_type to change it)`)
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
          ...nextStamp(source, now),
        }
        if (source) {
          await store.update(trx, user.id, source.key, fields)
          return { created: false, entry: toEntry({ ...fields, user_id: user.id, created_at: source.created_at }) }
        }
        await checkCount(trx, user, now)
        const row: KvRow = { ...fields, user_id: user.id, created_at: now }
        await store.insert(trx, row)
        return { created: true, entry: toEntry(row) }
      })
      if (oldKey !== undefined) changed(user, oldKey, input.key)
      else changed(user, input.key)
      return result
    },

    /** POST /svc_api/data/incr: atomic add; a missing entry starts at 0 (data_type number). */
    async incr(user: User, body: unknown): Promise<{ created: boolean; entry: EntryOut }> {
      const now = clock.now()
      const input = checkIncrInput(body)
      checkKey(input.key)
      const by = input.by ?? 1
      const result = await store.transaction(async (trx) => {
        await db.lockUser(trx, user.id)
        await store.purgeUserExpired(trx, user.id, now)
        const prev = await store.get(trx, user.id, input.key, now)
        if (prev && prev.data_type !== 'number') {
          throw invalid(`entry "${input.key}" has data_type ${prev.data_type}; incr only adds to number entries`)
        }
        const value = (prev ? Number(JSON.parse(prev.value)) : 0) + by
        if (!Number.isFinite(value)) throw invalid('the result is out of range')
        const text = JSON.stringify(value)
        const size = checkSize(text, user)
        const expires_at = input.ttl === undefined ? (prev?.expires_at ?? null) : input.ttl === null ? null : now + input.ttl * 1000
        if (prev) {
          const fields = { key: prev.key, value: text, data_type: 'number', tags: prev.tags, is_public: prev.is_public, size, expires_at, ...nextStamp(prev, now) }
          await store.update(trx, user.id, prev.key, fields)
          return { created: false, entry: toEntry({ ...fields, user_id: user.id, created_at: prev.created_at }) }
        }
        await checkCount(trx, user, now)
        const row: KvRow = { user_id: user.id, key: input.key, value: text, data_type: 'number', tags: '[]', is_public: 0, size, expires_at, created_at: now, ...nextStamp(undefined, now) }
        await store.insert(trx, row)
        return { created: true, entry: toEntry(row) }
      })
      changed(user, input.key)
      return result
    },

    /** GET /svc_api/data/get: the caller's own entry (public or not). */
    async get(user: User, key: unknown): Promise<EntryOut> {
      const row = await store.get(db.k, user.id, lookupKey(key), clock.now())
      if (!row) throw new AppError('KV_KEY_NOT_FOUND')
      return toEntry(row)
    },

    /** GET /svc_api/data/public/{username}/{key}: serialised JSON, or 1604. */
    async publicRead(username: string, key: string): Promise<string> {
      const k = lookupKey(key)
      if (username.length > 64) throw new AppError('KV_KEY_NOT_FOUND')
      const name = username.toLowerCase()
      return cachedPublic(cache.userLine(name, k), () => store.getPublic(name, k, clock.now()))
    },

    /** GET /svc_api/data/public/{key} (legacy): oldest public entry wins, then username order. */
    async legacyPublicRead(key: string): Promise<string> {
      const k = lookupKey(key)
      return cachedPublic(cache.legacyLine(k), () => store.getLegacyPublic(k, clock.now()))
    },

    /** GET /svc_api/data/list: a page of entries by key, with quota and usage. */
    async list(user: User, query: Record<string, unknown>) {
      const p = parsePage(query, { perPage: 50, maxPerPage: 100 })
      const now = clock.now()
      const usage = await store.usage(db.k, user.id, now)
      const rows = await store.list(user.id, now, p.offset, p.perPage)
      return {
        items: rows.map(toEntry),
        ...pageInfo(p, usage.keys),
        quota: { max_keys: quotaOf(user.limits, 'kv_keys'), max_entry_bytes: quotaOf(user.limits, 'kv_entry_bytes') },
        usage,
      }
    },

    /** DELETE /svc_api/data/delete: 1604 when there is no such (live) entry. */
    async remove(user: User, key: unknown): Promise<void> {
      const k = lookupKey(key)
      if (!(await store.remove(db.k, user.id, k, clock.now()))) throw new AppError('KV_KEY_NOT_FOUND')
      changed(user, k)
    },

    /** Deletes every expired entry (the periodic job; reads already ignore them). */
    purgeExpired: () => store.purgeExpired(clock.now()),
  }
}
export type KvService = ReturnType<typeof createKvService>
