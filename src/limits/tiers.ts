import type { RateLimitOverrides } from '../config.js'
import type { Tier } from '../auth/account-rules.js'

export type WindowName = 'minute' | 'hour' | 'day'

/** One counting window: sliding over `ms`, or the calendar day in Beijing time. */
export interface WindowRule {
  /** a WindowName, or another name for a custom window */
  name: string
  kind: 'sliding' | 'beijing-day'
  ms: number
  limit: number
}

export interface TierRules {
  windows: WindowRule[]
  concurrent: number
}

/** The spec's rate-limit table (Limits part), as data. */
export const DEFAULT_TIERS: Record<Tier, { minute: number; hour: number; day: number; concurrent: number }> = {
  default: { minute: 10, hour: 100, day: 1000, concurrent: 2 },
  authenticated: { minute: 60, hour: 1000, day: 10000, concurrent: 10 },
  vip: { minute: 300, hour: 5000, day: 50000, concurrent: 50 },
}

/** Tier rules with the operator's RATE_LIMITS overrides applied. */
export function tierRules(overrides: RateLimitOverrides | null): Record<Tier, TierRules> {
  const out = {} as Record<Tier, TierRules>
  for (const tier of Object.keys(DEFAULT_TIERS) as Tier[]) {
    const t = { ...DEFAULT_TIERS[tier], ...(overrides?.[tier] ?? {}) }
    out[tier] = {
      windows: [
        { name: 'minute', kind: 'sliding', ms: 60_000, limit: t.minute },
        { name: 'hour', kind: 'sliding', ms: 3_600_000, limit: t.hour },
        { name: 'day', kind: 'beijing-day', ms: 86_400_000, limit: t.day },
      ],
      concurrent: t.concurrent,
    }
  }
  return out
}
