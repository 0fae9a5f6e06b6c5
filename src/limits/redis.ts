import type { Redis } from 'ioredis'
import { lazyRequire } from '../util/lazy.js'
import type { WindowRule } from './tiers.js'
import { holdSlots, SLOT_RENEW_MS, type HitResult, type LimitStore } from './store.js'
import { systemClock, type Clock } from '../util/clock.js'
import { AppError } from '../errors/app-error.js'
import { redisFailure } from '../util/redis-cause.js'

/** ioredis, loaded when a Redis client is first made (a server without REDIS_URL never loads it). */
const ioredis = lazyRequire<typeof import('ioredis')>('ioredis')

/**
 * One atomic check for all windows of an identity. KEYS: one per window. ARGV: now (0 = use
 * the Redis server's TIME, so instances with skewed clocks count alike), consume, member,
 * then (kind, ms, limit) per window. Returns allowed, now, then (count, resetAt) per window.
 */
const HIT_LUA = `
local now = tonumber(ARGV[1])
if now == 0 then local t = redis.call('TIME'); now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end
local consume = ARGV[2] == '1'
local member = ARGV[3]
local n = #KEYS
local day = math.floor((now + 28800000) / 86400000)
local midnight = (day + 1) * 86400000 - 28800000
local counts = {}
local allowed = true
for i = 1, n do
  local kind = ARGV[1 + i * 3]
  local ms = tonumber(ARGV[2 + i * 3])
  local limit = tonumber(ARGV[3 + i * 3])
  local c
  if kind == 's' then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - ms)
    c = redis.call('ZCARD', KEYS[i])
  else
    c = tonumber(redis.call('GET', KEYS[i] .. ':' .. day) or '0')
  end
  counts[i] = c
  if c >= limit then allowed = false end
end
local out = { allowed and 1 or 0, now }
for i = 1, n do
  local kind = ARGV[1 + i * 3]
  local ms = tonumber(ARGV[2 + i * 3])
  local limit = tonumber(ARGV[3 + i * 3])
  local c = counts[i]
  local reset
  if kind == 's' then
    if allowed and consume then
      redis.call('ZADD', KEYS[i], now, member)
      redis.call('PEXPIRE', KEYS[i], ms)
      c = c + 1
    end
    if c == 0 then reset = now + ms else
      local rank = c - limit
      if rank < 0 then rank = 0 end
      if rank > c - 1 then rank = c - 1 end
      local r = redis.call('ZRANGE', KEYS[i], rank, rank, 'WITHSCORES')
      reset = tonumber(r[2]) + ms
    end
  else
    if allowed and consume then
      local dk = KEYS[i] .. ':' .. day
      c = redis.call('INCR', dk)
      redis.call('PEXPIRE', dk, midnight - now + 60000)
    end
    reset = midnight
  end
  out[#out + 1] = c
  out[#out + 1] = reset
end
return out
`

const ACQUIRE_LUA = `
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local c = redis.call('ZCARD', KEYS[1])
if c >= tonumber(ARGV[2]) then return { 0, c } end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
return { 1, c + 1 }
`

/**
 * Renews held slots (holdSlots): KEYS, one per slot (a key may repeat); ARGV: now, then
 * (token, ttlMs) per slot. A slot no longer in its set (released, or expired and taken) is not
 * added back (XX); the set's own expiry is pushed out to the slot's TTL.
 */
const RENEW_LUA = `
local now = tonumber(ARGV[1])
for i = 1, #KEYS do
  local ttl = tonumber(ARGV[1 + i * 2])
  redis.call('ZADD', KEYS[i], 'XX', now + ttl, ARGV[i * 2])
  if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
return 0
`
/** Slots renewed per script call: a long batch is several short scripts, not one that blocks Redis. */
const RENEW_CHUNK = 500

export interface RedisLimitOptions {
  /** Use Redis's own clock instead of the caller's `now` (production; tests pass their clock). */
  serverTime: boolean
  prefix?: string
  /** The callers' clock (the `now` they pass), which held slots are renewed by; the system clock by default. */
  clock?: Clock
  /** How often held slots are looked at for renewal (SLOT_RENEW_MS; tests set less). */
  renewMs?: number
}

/**
 * Redis LimitStore shared by every instance. Calls time out after 1 s; a Redis outage makes
 * checks fail with 503 (fail closed) rather than hang or let requests through unlimited.
 */
export function createRedisLimitStore(url: string, opts: RedisLimitOptions): LimitStore {
  const redis = new (ioredis().Redis)(url, {
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: 1000,
    // queued while (re)connecting, but never longer than commandTimeout: fail fast, never hang
    enableOfflineQueue: true,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  })
  redis.on('error', () => {}) // surfaced per call as 503
  const failure = redisFailure(redis)
  const prefix = opts.prefix ?? 'svc:rl:'
  redis.defineCommand('svcHit', { lua: HIT_LUA })
  redis.defineCommand('svcAcquire', { numberOfKeys: 1, lua: ACQUIRE_LUA })
  redis.defineCommand('svcRenew', { lua: RENEW_LUA })
  const r = redis as Redis & {
    svcHit(numKeys: number, ...args: (string | number)[]): Promise<number[]>
    svcAcquire(key: string, ...args: (string | number)[]): Promise<number[]>
    svcRenew(numKeys: number, ...args: (string | number)[]): Promise<number>
  }
  // the 503's log line says why: `... (1504): Redis rate limits: connect ECONNREFUSED ...`
  const down = (err: unknown): never => {
    throw new AppError('DEPENDENCY_UNAVAILABLE', { cause: new Error(`Redis rate limits: ${failure(err).message}`) })
  }
  let seq = 0
  // slots whose release did not reach Redis (its connection dropped, the call was flushed):
  // released again once it is back, or a Redis that outlives the cut with its data (a network
  // partition, a restart with persistence) keeps them taken for their TTL. Bounded: past it,
  // the TTL frees them.
  const unreleased = new Map<string, string>()
  const release = (key: string, token: string) =>
    redis.zrem(key, token).then(
      () => {},
      () => {
        if (unreleased.size < 10_000) unreleased.set(token, key)
      },
    )
  // the slots this instance holds, renewed until released (one mechanism with the memory store)
  const held = holdSlots(opts.clock ?? systemClock, opts.renewMs ?? SLOT_RENEW_MS, async (batch, now) => {
    for (let i = 0; i < batch.length; i += RENEW_CHUNK) {
      const part = batch.slice(i, i + RENEW_CHUNK)
      const args: (string | number)[] = [now]
      for (const h of part) args.push(h.token, h.ttlMs)
      await r.svcRenew(part.length, ...part.map((h) => `${prefix}${h.id}:slots`), ...args)
    }
  })
  redis.on('ready', () => {
    for (const [token, key] of unreleased) {
      unreleased.delete(token)
      void release(key, token)
    }
  })

  return {
    kind: 'redis',
    async hit(id: string, windows: WindowRule[], now: number, consume: boolean): Promise<HitResult> {
      const keys = windows.map((w) => `${prefix}${id}:${w.name}`)
      const args: (string | number)[] = [opts.serverTime ? 0 : now, consume ? '1' : '0', `${now}:${process.pid}:${++seq}:${Math.random()}`]
      for (const w of windows) args.push(w.kind === 'sliding' ? 's' : 'd', w.ms, w.limit)
      const out = await r.svcHit(keys.length, ...keys, ...args).catch(down)
      return {
        allowed: out[0] === 1,
        now: Number(out[1]),
        windows: windows.map((w, i) => ({ rule: w, count: Number(out[2 + i * 2]), resetAt: Number(out[3 + i * 2]) })),
      }
    },
    async acquire(id, max, token, now, ttlMs) {
      const key = `${prefix}${id}:slots`
      const out = await r.svcAcquire(key, now, max, token, ttlMs).catch((err: unknown) => {
        // a timed-out call is still queued or on the wire and may run once Redis answers
        // again, taking a slot for ttlMs that no request holds: give it back behind it (same
        // connection, so Redis runs the two in order)
        void release(key, token)
        return down(err)
      })
      if (out[0] === 1) held.hold(id, token, ttlMs, now)
      return { ok: out[0] === 1, current: Number(out[1]) }
    },
    async release(id, token) {
      held.drop(id, token)
      await release(`${prefix}${id}:slots`, token)
    },
    async inFlight(id, now) {
      return redis.zcount(`${prefix}${id}:slots`, `(${now}`, '+inf').catch(down)
    },
    async ping() {
      await redis.ping().catch((err: unknown) => {
        throw failure(err)
      })
    },
    async close() {
      held.close()
      redis.disconnect()
    },
  }
}
