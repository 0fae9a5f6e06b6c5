import type { Bus } from '../../util/bus.js'
import type { Clock } from '../../util/clock.js'
import type { PublicEntry } from './store.js'

export const BUS_CHANNEL = 'hosted-data'

/** A resolved public link: the version to serve and its validator. */
export interface ServedEntry extends PublicEntry {
  etag: string
}

interface Slot {
  at: number
  /** '' = the default version, else the pinned version number. */
  byVersion: Map<string, ServedEntry>
}

/**
 * token -> version to serve, in memory. Every change to a file (new version, default switch,
 * meta, delete) publishes its token on the bus; every instance drops that token on receipt.
 * A fill that raced with an invalidation is discarded (generation check), and entries expire
 * after `ttlMs` (service clock): the backstop for a lost bus message and for changes made
 * outside the service (`svc user set --disable`).
 */
export function createPublicCache(bus: Bus, clock: Clock, opts: { maxTokens?: number; ttlMs?: number } = {}) {
  const maxTokens = opts.maxTokens ?? 10_000
  const ttlMs = opts.ttlMs ?? 5_000
  const slots = new Map<string, Slot>()
  let generation = 0

  bus.subscribe(BUS_CHANNEL, (token) => {
    generation++
    slots.delete(token)
  })

  return {
    get(token: string, version: number | null): ServedEntry | undefined {
      const slot = slots.get(token)
      if (!slot) return undefined
      const age = clock.now() - slot.at
      // a clock that went backwards expires the line too
      if (age > ttlMs || age < 0) {
        slots.delete(token)
        return undefined
      }
      return slot.byVersion.get(version === null ? '' : String(version))
    },
    /** The generation to pass to `set` (taken before reading the database). */
    generation: () => generation,
    set(gen: number, token: string, version: number | null, entry: ServedEntry): void {
      if (gen !== generation) return
      let slot = slots.get(token)
      if (!slot) {
        if (slots.size >= maxTokens) slots.delete(slots.keys().next().value as string)
        slot = { at: clock.now(), byVersion: new Map() }
        slots.set(token, slot)
      }
      slot.byVersion.set(version === null ? '' : String(version), entry)
    },
    /** Drops a token everywhere (this instance at once, the others through the bus). */
    async invalidate(token: string): Promise<void> {
      await bus.publish(BUS_CHANNEL, token)
    },
    drop(token: string): void {
      generation++
      slots.delete(token)
    },
    size: () => slots.size,
  }
}

export type PublicCache = ReturnType<typeof createPublicCache>
