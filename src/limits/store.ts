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

/** Reset time of a sliding window holding `log` (ascending times) with `limit`. */
export function slidingReset(log: number[], limit: number, ms: number, now: number): number {
  if (log.length === 0) return now + ms
  const rank = Math.max(0, log.length - limit)
  return log[Math.min(rank, log.length - 1)] + ms
}

interface Entry {
  logs: Map<string, number[]>
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
          const log = e.logs.get(w.name) ?? []
          let drop = 0
          while (drop < log.length && log[drop] <= now - w.ms) drop++
          if (drop) log.splice(0, drop)
          e.logs.set(w.name, log)
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
        windows: windows.map((w) => w.kind === 'sliding'
          ? { rule: w, count: e.logs.get(w.name)!.length, resetAt: slidingReset(e.logs.get(w.name)!, w.limit, w.ms, now) }
          : { rule: w, count: e.days.get(w.name)!.count, resetAt: nextBeijingMidnight(now) }),
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
