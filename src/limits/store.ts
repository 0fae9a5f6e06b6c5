import { beijingDay, nextBeijingMidnight } from '../util/time.js'
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
  /** Takes a concurrency slot (expires after ttlMs, in case its holder dies); false when full. */
  acquire(id: string, max: number, token: string, now: number, ttlMs: number): Promise<{ ok: boolean; current: number }>
  release(id: string, token: string): Promise<void>
  /** Slots in use (for tests and metrics). */
  inFlight(id: string, now: number): Promise<number>
  close(): Promise<void>
}

/** Reset time of a sliding window holding `log[from..]` (ascending times) with `limit`. */
export function slidingReset(log: number[], limit: number, ms: number, now: number, from = 0): number {
  const n = log.length - from
  if (n <= 0) return now + ms
  const rank = Math.max(0, n - limit)
  return log[from + Math.min(rank, n - 1)] + ms
}

/**
 * A sliding window's request times, oldest first, from `head` on: aged-out times are skipped
 * by moving `head` (O(1)) and the array is compacted once the dead prefix is half of it, so a
 * window holding millions of requests (an operator's very high limit) costs the same per
 * request as a small one. (`splice(0, n)` here moved the whole array on every request.)
 */
interface SlidingLog {
  times: number[]
  head: number
}

const liveCount = (log: SlidingLog) => log.times.length - log.head

function ageOut(log: SlidingLog, cutoff: number): void {
  const t = log.times
  let h = log.head
  while (h < t.length && t[h] <= cutoff) h++
  if (h > 1024 && h * 2 > t.length) {
    log.times = t.slice(h)
    log.head = 0
  } else if (h === t.length) {
    log.times = []
    log.head = 0
  } else {
    log.head = h
  }
}

interface Entry {
  logs: Map<string, SlidingLog>
  days: Map<string, { day: number; count: number }>
  slots: Map<string, number>
  touched: number
}

/** In-process LimitStore. */
export function createMemoryLimitStore(): LimitStore {
  const entries = new Map<string, Entry>()
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
    const cutoff = Date.now() - 26 * 3600_000
    for (const [id, e] of entries) if (e.touched < cutoff && e.slots.size === 0) entries.delete(id)
  }, 600_000)
  timer.unref()

  return {
    kind: 'memory',
    async hit(id, windows, now, consume) {
      const e = entry(id, now)
      const counts = windows.map((w) => {
        if (w.kind === 'sliding') {
          let log = e.logs.get(w.name)
          if (!log) e.logs.set(w.name, (log = { times: [], head: 0 }))
          ageOut(log, now - w.ms)
          return liveCount(log)
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
          if (w.kind === 'sliding') e.logs.get(w.name)!.times.push(now)
          else e.days.get(w.name)!.count++
        })
      }
      return {
        allowed: allowed,
        now,
        windows: windows.map((w) => {
          if (w.kind !== 'sliding') return { rule: w, count: e.days.get(w.name)!.count, resetAt: nextBeijingMidnight(now) }
          const log = e.logs.get(w.name)!
          return { rule: w, count: liveCount(log), resetAt: slidingReset(log.times, w.limit, w.ms, now, log.head) }
        }),
      }
    },
    async acquire(id, max, token, now, ttlMs) {
      const e = entry(id, now)
      for (const [t, exp] of e.slots) if (exp <= now) e.slots.delete(t)
      if (e.slots.size >= max) return { ok: false, current: e.slots.size }
      e.slots.set(token, now + ttlMs)
      return { ok: true, current: e.slots.size }
    },
    async release(id, token) {
      entries.get(id)?.slots.delete(token)
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
    },
  }
}
