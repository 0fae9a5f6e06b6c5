import type { LimitStore } from '../../limits/store.js'
import type { WindowRule } from '../../limits/tiers.js'
import type { Clock } from '../../util/clock.js'
import { createOutcomeLimits, type Attempt } from '../../limits/in-flight.js'
import { ipLimitKey } from '../../http/ip-key.js'

const PER_USER: WindowRule[] = [{ name: 'login-fail', kind: 'sliding', ms: 15 * 60_000, limit: 10 }]
const PER_IP: WindowRule[] = [{ name: 'login-fail', kind: 'sliding', ms: 15 * 60_000, limit: 50 }]

/**
 * Failed-login throttle, per username and per client address (an IPv6 client: its /64), kept
 * apart from the API rate limits: after 10 failures for a name (or 50 from an address) within
 * 15 minutes, further attempts are refused until the oldest failure ages out. An attempt whose
 * password is still being verified counts as a failure until it ends (limits/in-flight.ts).
 */
export function createLoginThrottle(limits: LimitStore, clock: Clock) {
  const outcomes = createOutcomeLimits(limits, clock)
  return {
    /** Admits one attempt (`attempt.count()` records its failure), or says how long to wait. */
    enter(username: string, ip: string): Promise<{ wait: number; attempt: Attempt | null }> {
      return outcomes.enter([
        [`login:u:${username.toLowerCase()}`, PER_USER],
        [`login:ip:${ipLimitKey(ip)}`, PER_IP],
      ])
    },
  }
}
