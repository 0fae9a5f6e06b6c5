import crypto from 'node:crypto'
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
 * How long an attempt's place outlives its holder's last renewal: the store renews it while
 * the attempt runs (holdSlots), so only a holder that died (a crashed instance) frees it so.
 */
const ATTEMPT_TTL_MS = 60_000

/**
 * Limits on an outcome known only after a slow step (a login's failure, a sign-up's success,
 * a visitor password's failure, all after a password hash). Checking the windows before the
 * step and counting after it would let a burst sent at once pass the check together, each
 * request before the first was counted; so an admitted attempt counts as if it will be
 * counted until it ends, and a new one is refused while the counted ones plus those in
 * flight reach a limit.
 *
 * The attempts in flight are concurrency slots of the limit store (`acquire`, under the
 * identity's id), so with REDIS_URL every instance sees every other's: a burst spread over
 * several instances gets the limit once, not once per instance. The slot is taken before the
 * windows are read and released only after a failure is counted, so an attempt is always in
 * one of the two (or both: a refusal then errs on the side of one more wait, never one more
 * guess).
 */
export function createOutcomeLimits(limits: LimitStore, clock: Clock) {
  return {
    /**
     * Admits one attempt against each identity's windows: `attempt` when it may go on, else
     * null and the seconds to wait (at least 1) before another is allowed.
     */
    async enter(checks: ReadonlyArray<readonly [id: string, windows: WindowRule[]]>): Promise<{ wait: number; attempt: Attempt | null }> {
      const token = crypto.randomUUID()
      const taken: string[] = []
      const release = () => {
        for (const id of taken.splice(0)) void limits.release(id, token)
      }
      // this attempt's place first, then the windows (see above); a full set of places is a refusal
      const pending: number[] = []
      const hits: HitResult[] = []
      let full = false
      try {
        for (const [id, windows] of checks) {
          const slot = await limits.acquire(id, Math.max(...windows.map((w) => w.limit)), token, clock.now(), ATTEMPT_TTL_MS)
          if (!slot.ok) {
            full = true
            break
          }
          taken.push(id)
          pending.push(slot.current - 1)
        }
        const now = clock.now()
        if (!full) for (const [id, windows] of checks) hits.push(await limits.hit(id, windows, now, false))
      } catch (e) {
        release()
        throw e
      }
      const now = clock.now()
      let wait = full ? 1 : 0
      for (const [i, r] of hits.entries()) {
        for (const w of r.windows) if (w.count + pending[i] >= w.rule.limit) wait = Math.max(wait, 1, Math.ceil((w.resetAt - now) / 1000))
      }
      if (wait > 0) {
        release()
        return { wait, attempt: null }
      }
      let open = true
      const leave = () => {
        if (open) release()
        open = false
      }
      return {
        wait: 0,
        attempt: {
          leave,
          async count() {
            try {
              const at = clock.now()
              for (const [id, windows] of checks) if (open) await limits.hit(id, windows, at, true)
            } finally {
              leave()
            }
          },
        },
      }
    },
  }
}
