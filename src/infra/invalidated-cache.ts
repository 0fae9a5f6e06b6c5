import { FLUSH_ALL, isReliable, type Bus } from './bus.js'
import { oldestKey } from '../util/oldest.js'

/**
 * The service's one in-memory cache invalidated through the bus (the public host's paths, the
 * KV public read, hosted-data links, image-host links): every instance drops what a write
 * anywhere changed, so no instance serves stale data once a write has returned.
 *
 * Invariants:
 * - Race-free fills: read `ticket()` before the database read and pass it to `set`; the fill
 *   is refused when an invalidation it could have missed happened meanwhile (any key or
 *   FLUSH_ALL moves the cache's epoch; a group's message moves that group's generation).
 * - Nothing is cached while the bus cannot deliver other instances' invalidations
 *   (`isReliable(bus)` false), and FLUSH_ALL ('*') drops everything (see util/bus.ts).
 * - Bounds: `maxEntries` entries (and `maxMisses` negative entries, kept apart so a scan of
 *   missing names cannot evict real ones), `maxBytes` of `cost`; the oldest set go first.
 *   `cost` must give the same number for a stored value for as long as it is stored.
 * - `get` allocates nothing (hot paths); an entry `isFresh` rejects is dropped on sight.
 */
export interface InvalidatedCacheOptions<K, V> {
  /** Carries invalidations between instances; absent: only this instance's own calls. */
  bus?: Bus
  /** The bus channel (required with `bus`). */
  channel?: string
  /**
   * What a message names. 'keys' (default): the keys `keysOf(message)` returns (default: the
   * message is the key; a throw ignores the message). 'groups': a group given to `set`.
   */
  messages?: 'keys' | 'groups'
  keysOf?: (message: string) => readonly K[]
  maxEntries?: number
  /** Negative entries (cached "not found"), bounded by `maxMisses` apart from the others. */
  isMiss?: (value: V) => boolean
  maxMisses?: number
  maxBytes?: number
  cost?: (key: K, value: V) => number
  /** False: the entry is past its life (TTL, expiry) and is dropped. */
  isFresh?: (value: V) => boolean
}

export interface InvalidatedCache<K, V> {
  /** A fresh entry, or undefined. */
  get(key: K): V | undefined
  /** The fill ticket (the entry's group, if any): read it before the database read. */
  ticket(group?: string): number
  /** Whether a fill holding `ticket` may be kept now (no invalidation since, bus reliable). */
  accepts(ticket: number, group?: string): boolean
  /** Keeps `value` when `accepts(ticket, group)`; returns whether it did. */
  set(key: K, value: V, ticket: number, group?: string): boolean
  /** This instance only: the key goes, fills in flight are refused. */
  invalidate(key: K): void
  /** This instance only: every key set with this group goes, its fills in flight are refused. */
  invalidateGroup(group: string): void
  /** This instance only: everything goes, every fill in flight is refused. */
  invalidateAll(): void
  /** Applies a message here at once, then sends it to every instance through the bus. */
  publish(message: string): Promise<void>
  size(): number
  stats(): { entries: number; misses: number; bytes: number }
}

export function createInvalidatedCache<K, V>(o: InvalidatedCacheOptions<K, V>): InvalidatedCache<K, V> {
  const { bus, channel, isMiss, cost, isFresh } = o
  if (bus && channel === undefined) throw new Error('createInvalidatedCache: a bus needs a channel')
  const byGroup = o.messages === 'groups'
  const keysOf = o.keysOf ?? ((m: string) => [m as unknown as K])
  const maxEntries = o.maxEntries ?? Infinity
  const maxMisses = o.maxMisses ?? Infinity
  const maxBytes = o.maxBytes ?? Infinity

  const entries = new Map<K, V>()
  const misses = new Map<K, V>()
  let bytes = 0
  // moved by every key invalidation and FLUSH_ALL: counts in every ticket
  let epoch = 0
  const gens = new Map<string, number>()
  // a key's group as the group's member set (not its name: a cache of many keys of one group
  // keeps one copy of the name, however the caller made its string)
  const groupOf = new Map<K, Set<K>>()
  const members = new Map<string, Set<K>>()

  const remove = (k: K): void => {
    let v = entries.get(k)
    if (v !== undefined) entries.delete(k)
    else {
      v = misses.get(k)
      if (v === undefined) return
      misses.delete(k)
    }
    if (cost !== undefined) bytes -= cost(k, v)
    if (byGroup) {
      const g = groupOf.get(k)
      if (g !== undefined) {
        groupOf.delete(k)
        g.delete(k)
      }
    }
  }
  const evictOldest = (map: Map<K, V>): void => {
    const k = oldestKey(map)
    if (k !== undefined) remove(k)
  }
  const ticket = (group?: string): number => (group === undefined ? epoch : epoch + (gens.get(group) ?? 0))
  const trusted = (): boolean => bus === undefined || isReliable(bus)

  const cache: InvalidatedCache<K, V> = {
    get(key) {
      let v = entries.get(key)
      if (v === undefined) {
        if (misses.size === 0) return undefined
        v = misses.get(key)
        if (v === undefined) return undefined
      }
      if (isFresh !== undefined && !isFresh(v)) {
        remove(key)
        return undefined
      }
      return v
    },

    ticket,
    accepts: (t, group) => t === ticket(group) && trusted(),

    set(key, value, t, group) {
      if (t !== ticket(group) || !trusted()) return false
      remove(key)
      const miss = isMiss !== undefined && isMiss(value)
      const map = miss ? misses : entries
      map.set(key, value)
      if (cost !== undefined) bytes += cost(key, value)
      if (byGroup && group !== undefined) {
        let set = members.get(group)
        if (!set) members.set(group, (set = new Set()))
        set.add(key)
        groupOf.set(key, set)
      }
      if (map.size > (miss ? maxMisses : maxEntries)) evictOldest(map)
      // oldest first (Maps keep insertion order); this entry last
      while (bytes > maxBytes && entries.size + misses.size > 0) evictOldest(entries.size > 0 ? entries : misses)
      return true
    },

    invalidate(key) {
      epoch++
      remove(key)
    },

    invalidateGroup(group) {
      gens.set(group, (gens.get(group) ?? 0) + 1)
      const set = members.get(group)
      if (!set) return
      members.delete(group)
      for (const k of set) {
        groupOf.delete(k)
        const v = entries.get(k) ?? misses.get(k)
        if (v === undefined) continue
        entries.delete(k)
        misses.delete(k)
        if (cost !== undefined) bytes -= cost(k, v)
      }
    },

    invalidateAll() {
      epoch++
      entries.clear()
      misses.clear()
      groupOf.clear()
      members.clear()
      bytes = 0
    },

    async publish(message) {
      onMessage(message)
      if (bus) await bus.publish(channel!, message)
    },

    size: () => entries.size + misses.size,
    stats: () => ({ entries: entries.size, misses: misses.size, bytes }),
  }

  function onMessage(m: string): void {
    if (m === FLUSH_ALL) return cache.invalidateAll()
    if (byGroup) return cache.invalidateGroup(m)
    let keys: readonly K[]
    try {
      keys = keysOf(m)
    } catch {
      return
    }
    for (const k of keys) cache.invalidate(k)
  }
  if (bus) bus.subscribe(channel!, onMessage)
  return cache
}
