import type { Clock } from '../util/clock.js'
import type { HitResult, LimitStore } from './store.js'
import type { WindowRule } from './tiers.js'

/** An attempt admitted by an outcome limit: counted (`count`) or not (`leave`), once. */
export interface Attempt {
  /** Counts the attempt in every window of its limits, then ends it. */
  count(): Promise<void>
  /** Ends the attempt without counting it; does nothing once it has ended. */
  leave(): void
}

/**
 * Limits on an outcome known only after a slow step (a login's failure, a sign-up's success,
 * both after a password hash). Checking the windows before the step and counting after it
 * would let a burst sent at once pass the check together, each request before the first was
 * counted; so an admitted attempt counts as if it will be counted until it ends, and a new
 * one is refused while the counted ones plus those in flight reach a limit. The in-flight
 * counts live in this process: with several instances a burst spread over them gets at most
 * the limit on each before the counted attempts stop it everywhere.
 */
export function createOutcomeLimits(limits: LimitStore, clock: Clock) {
  const inFlight = new Map<string, number>()
  const change = (ids: readonly string[], by: number) => {
    for (const id of ids) {
      const n = (inFlight.get(id) ?? 0) + by
      if (n > 0) inFlight.set(id, n)
      else inFlight.delete(id)
    }
  }
  return {
    /**
     * Admits one attempt against each identity's windows: `attempt` when it may go on, else
     * null and the seconds to wait (at least 1) before another is allowed.
     */
    async enter(checks: ReadonlyArray<readonly [id: string, windows: WindowRule[]]>): Promise<{ wait: number; attempt: Attempt | null }> {
      const now = clock.now()
      const results: Array<{ id: string; windows: WindowRule[]; r: HitResult }> = []
      for (const [id, windows] of checks) results.push({ id, windows, r: await limits.hit(id, windows, now, false) })
      // no await from here on: the check and the in-flight count are one step
      let wait = 0
      for (const { id, r } of results) {
        const pending = inFlight.get(id) ?? 0
        for (const w of r.windows) if (w.count + pending >= w.rule.limit) wait = Math.max(wait, 1, Math.ceil((w.resetAt - now) / 1000))
      }
      if (wait > 0) return { wait, attempt: null }
      const ids = results.map((x) => x.id)
      change(ids, 1)
      let open = true
      const leave = () => {
        if (open) change(ids, -1)
        open = false
      }
      return {
        wait: 0,
        attempt: {
          leave,
          async count() {
            try {
              const at = clock.now()
              for (const { id, windows } of results) if (open) await limits.hit(id, windows, at, true)
            } finally {
              leave()
            }
          },
        },
      }
    },
  }
}
