import { beijingDay, nextBeijingMidnight } from '../util/time.js'
import { systemClock, type Clock } from '../util/clock.js'
import type { WindowRule } from './tiers.js'

/** State of one window after a check: requests counted in it and when a slot frees up. */
export interface WindowState {
  rule: WindowRule
  count: number
  /** Epoch ms at which the count next drops (sliding) or resets (day). */
  resetAt: number
}

export interface HitResult {
  allowed: boolean
  now: number
  windows: WindowState[]
}

/**
 * Counter storage for rate limits, login throttling and other per-identity limits.
 * `memory` keeps counts in this process; `redis` shares them between instances, each check
 * one atomic Lua script.
 */
export interface LimitStore {
  readonly kind: 'memory' | 'redis'
  /**
   * Counts one request against every window if all have room (refused requests are not
   * counted). With consume=false it only reports.
   */
  hit(id: string, windows: WindowRule[], now: number, consume: boolean): Promise<HitResult>
  /**
   * Takes a concurrency slot, held until `release` (false when full): this store renews it
   * while it is held (`holdSlots`), so it expires only `ttlMs` after its holder stopped
   * renewing it (an instance that died without releasing).
   */
  acquire(id: string, max: number, token: string, now: number, ttlMs: number): Promise<{ ok: boolean; current: number }>
  /** Gives a slot back (and stops renewing it); nothing for a slot not held. */
  release(id: string, token: string): Promise<void>
  /** Slots in use (for tests and metrics). */
  inFlight(id: string, now: number): Promise<number>
  /** Resolves when the store answers (readiness checks); the in-process store always does. */
  ping?(): Promise<void>
  close(): Promise<void>
  /**
   * The same checks answered at once, for a store that keeps its counts in this process
   * (memory): hot paths then count a request without promises. Absent on Redis.
   */
  readonly sync?: SyncLimits
}

export interface SyncLimits {
  hit(id: string, windows: WindowRule[], now: number, consume: boolean): HitResult
  acquire(id: string, max: number, token: string, now: number, ttlMs: number): { ok: boolean; current: number }
  release(id: string, token: string): void
}

/**
 * How often a store looks for the slots it holds that are due for renewal: at most a third of
 * the shortest slot TTL taken (the outcome limits' 60 s), so a slot is renewed before two
 * thirds of its TTL have passed.
 */
export const SLOT_RENEW_MS = 20_000

/** A slot this store instance holds, as its renewal sees it. */
export interface HeldSlot {
  id: string
  token: string
  ttlMs: number
}

export interface HeldSlots {
  hold(id: string, token: string, ttlMs: number, now: number): void
  drop(id: string, token: string): void
  close(): void
}

/**
 * The concurrency slots a store instance holds, renewed until released: the one mechanism by
 * which a running request keeps its slot however long it runs, for both stores. Every
 * `renewMs` (on the store's clock, the callers' `now`), the slots held for a third of their
 * TTL since their last renewal are written to expire `ttlMs` from now, in one batch (`write`:
 * the memory map, or one Redis script). A holder that stops renewing (its process was killed)
 * frees its slots `ttlMs` after the last renewal: that is all the TTL is for. A failed write
 * is tried again at the next tick; a slot that expired meanwhile and was taken by another
 * request is not brought back (the request runs on without one).
 */
export function holdSlots(clock: Clock, renewMs: number, write: (batch: HeldSlot[], now: number) => void | Promise<void>): HeldSlots {
  // id -> token -> the time of its last renewal (the same token may be held under several ids)
  const held = new Map<string, Map<string, { ttlMs: number; renewedAt: number }>>()
  let busy = false
  const tick = async () => {
    if (busy || held.size === 0) return
    const now = clock.now()
    const due: HeldSlot[] = []
    for (const [id, slots] of held) for (const [token, s] of slots) if (now - s.renewedAt >= s.ttlMs / 3) due.push({ id, token, ttlMs: s.ttlMs })
    if (due.length === 0) return
    busy = true
    try {
      await write(due, now)
      for (const d of due) {
        const s = held.get(d.id)?.get(d.token)
        if (s !== undefined) s.renewedAt = now
      }
    } catch {
      // the next tick tries again: a slot lapses only if its renewals fail for about two thirds of its TTL
    } finally {
      busy = false
    }
  }
  const timer = setInterval(() => void tick(), renewMs)
  timer.unref()
  return {
    hold(id, token, ttlMs, now) {
      let slots = held.get(id)
      if (slots === undefined) held.set(id, (slots = new Map()))
      slots.set(token, { ttlMs, renewedAt: now })
    },
    drop(id, token) {
      const slots = held.get(id)
      if (slots?.delete(token) && slots.size === 0) held.delete(id)
    },
    close() {
      clearInterval(timer)
    },
  }
}

/** Reset time of a sliding window holding `log` (ascending times) with `limit`. */
export function slidingReset(log: { length: number; at(i: number): number }, limit: number, ms: number, now: number): number {
  const n = log.length
  if (n === 0) return now + ms
  const rank = Math.max(0, n - limit)
  return log.at(Math.min(rank, n - 1)) + ms
}

const CHUNK = 4096
/** Slots of a new log's only chunk: most identities (a visitor, a form's client) send a few requests. */
const FIRST = 8

/**
 * A sliding window's request times, oldest first, in chunks: a push fills the last chunk,
 * aging out moves a head index and drops whole chunks. A log starts with one chunk of 8
 * slots that doubles (one copy) while it is the only one, up to 4,096; later chunks have
 * 4,096. Every operation is O(1) amortised and a big log is never copied whole, so a window
 * holding millions of requests (an operator's very high limit) costs the same per request
 * as a small one, without the pauses of copying one big array (`splice(0, n)` here once
 * moved the whole log on every request), and an identity with a few requests costs bytes,
 * not the 32 KB of a full chunk per window (10,000 client addresses once took 625 MiB).
 */
export class TimeLog {
  private chunks: Float64Array[] = []
  /** Index of the oldest live time in chunks[0]. */
  private head = 0
  /** Used slots of the last chunk. */
  private fill = 0
  length = 0

  push(t: number): void {
    let last = this.chunks[this.chunks.length - 1]
    if (last === undefined) {
      this.chunks.push((last = new Float64Array(FIRST)))
      this.fill = 0
    } else if (this.fill === last.length) {
      if (this.chunks.length === 1 && last.length < CHUNK) {
        // the only chunk is small: double it in place of itself (indices stay the same)
        const bigger = new Float64Array(Math.min(CHUNK, last.length * 2))
        bigger.set(last)
        this.chunks[0] = last = bigger
      } else {
        this.chunks.push((last = new Float64Array(CHUNK)))
        this.fill = 0
      }
    }
    last[this.fill++] = t
    this.length++
  }

  /** The i-th live time, oldest first. */
  at(i: number): number {
    const j = this.head + i
    return this.chunks[Math.floor(j / CHUNK)][j % CHUNK]
  }

  /** Drops the times at or before `cutoff`; an emptied log holds no chunk. */
  ageOut(cutoff: number): void {
    while (this.length > 0) {
      const first = this.chunks[0]
      // a chunk before the last is full (only the first can be smaller, and only while alone)
      const end = this.chunks.length === 1 ? this.fill : first.length
      if (first[end - 1] <= cutoff) {
        this.length -= end - this.head
        this.chunks.shift()
        this.head = 0
        if (this.chunks.length === 0) this.fill = 0
        continue
      }
      while (first[this.head] <= cutoff) {
        this.head++
        this.length--
      }
      return
    }
  }
}

interface Entry {
  logs: Map<string, TimeLog>
  days: Map<string, { day: number; count: number }>
  slots: Map<string, number>
  touched: number
}

/**
 * In-process LimitStore; `clock` (the service clock, as the callers' `now`) ages out idle
 * identities and renews held slots (every `renewMs`, SLOT_RENEW_MS unless a test sets it).
 */
export function createMemoryLimitStore(clock: Clock = systemClock, opts: { renewMs?: number } = {}): LimitStore {
  const entries = new Map<string, Entry>()
  const held = holdSlots(clock, opts.renewMs ?? SLOT_RENEW_MS, (batch, now) => {
    for (const { id, token, ttlMs } of batch) {
      const slots = entries.get(id)?.slots
      if (slots?.has(token)) slots.set(token, now + ttlMs)
    }
  })
  const entry = (id: string, now: number): Entry => {
    let e = entries.get(id)
    if (!e) {
      e = { logs: new Map(), days: new Map(), slots: new Map(), touched: now }
      entries.set(id, e)
    }
    e.touched = now
    return e
  }
  // forget identities idle for more than a day and a bit
  const timer = setInterval(() => {
    const cutoff = clock.now() - 26 * 3600_000
    for (const [id, e] of entries) if (e.touched < cutoff && e.slots.size === 0) entries.delete(id)
  }, 600_000)
  timer.unref()

  const sync: SyncLimits = {
    hit(id, windows, now, consume) {
      const e = entry(id, now)
      const counts = windows.map((w) => {
        if (w.kind === 'sliding') {
          let log = e.logs.get(w.name)
          if (!log) e.logs.set(w.name, (log = new TimeLog()))
          log.ageOut(now - w.ms)
          return log.length
        }
        const d = e.days.get(w.name)
        const today = beijingDay(now)
        if (!d || d.day !== today) {
          e.days.set(w.name, { day: today, count: 0 })
          return 0
        }
        return d.count
      })
      const allowed = windows.every((w, i) => counts[i] < w.limit)
      if (allowed && consume) {
        windows.forEach((w) => {
          if (w.kind === 'sliding') e.logs.get(w.name)!.push(now)
          else e.days.get(w.name)!.count++
        })
      }
      return {
        allowed: allowed,
        now,
        windows: windows.map((w) => {
          if (w.kind !== 'sliding') return { rule: w, count: e.days.get(w.name)!.count, resetAt: nextBeijingMidnight(now) }
          const log = e.logs.get(w.name)!
          return { rule: w, count: log.length, resetAt: slidingReset(log, w.limit, w.ms, now) }
        }),
      }
    },
    acquire(id, max, token, now, ttlMs) {
      const e = entry(id, now)
      if (e.slots.size >= max) {
        // only a full set needs its expired slots (holders that never released) cleared
        for (const [t, exp] of e.slots) if (exp <= now) e.slots.delete(t)
        if (e.slots.size >= max) return { ok: false, current: e.slots.size }
      }
      e.slots.set(token, now + ttlMs)
      held.hold(id, token, ttlMs, now)
      return { ok: true, current: e.slots.size }
    },
    release(id, token) {
      held.drop(id, token)
      entries.get(id)?.slots.delete(token)
    },
  }

  return {
    kind: 'memory',
    sync,
    async hit(id, windows, now, consume) {
      return sync.hit(id, windows, now, consume)
    },
    async acquire(id, max, token, now, ttlMs) {
      return sync.acquire(id, max, token, now, ttlMs)
    },
    async release(id, token) {
      sync.release(id, token)
    },
    async inFlight(id, now) {
      const e = entries.get(id)
      if (!e) return 0
      let n = 0
      for (const exp of e.slots.values()) if (exp > now) n++
      return n
    },
    async close() {
      clearInterval(timer)
      held.close()
    },
  }
}
