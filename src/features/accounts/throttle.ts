import type { LimitStore } from '../../limits/store.js'
import type { WindowRule } from '../../limits/tiers.js'
import type { Clock } from '../../util/clock.js'

const PER_USER: WindowRule[] = [{ name: 'login-fail', kind: 'sliding', ms: 15 * 60_000, limit: 10 }]
const PER_IP: WindowRule[] = [{ name: 'login-fail', kind: 'sliding', ms: 15 * 60_000, limit: 50 }]

/**
 * Failed-login throttle, per username and per client IP, kept apart from the API rate
 * limits: after 10 failures for a name (or 50 from an address) within 15 minutes, further
 * attempts are refused until the oldest failure ages out.
 */
export function createLoginThrottle(limits: LimitStore, clock: Clock) {
  const ids = (username: string, ip: string) =>
    [
      [`login:u:${username.toLowerCase()}`, PER_USER],
      [`login:ip:${ip}`, PER_IP],
    ] as const
  return {
    /** Seconds to wait before another attempt is allowed, or 0. */
    async blockedFor(username: string, ip: string): Promise<number> {
      const now = clock.now()
      let wait = 0
      for (const [id, rules] of ids(username, ip)) {
        const r = await limits.hit(id, rules, now, false)
        if (!r.allowed) wait = Math.max(wait, Math.ceil((r.windows[0].resetAt - now) / 1000))
      }
      return wait
    },
    async failed(username: string, ip: string): Promise<void> {
      const now = clock.now()
      for (const [id, rules] of ids(username, ip)) await limits.hit(id, rules, now, true)
    },
  }
}
