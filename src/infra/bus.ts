import { EventEmitter } from 'node:events'
import { Redis } from 'ioredis'

/**
 * Cross-instance notifications (cache invalidation). In-process by default; with REDIS_URL
 * every instance receives every message through Redis pub/sub, including its own.
 *
 * Pub/sub delivers nothing to an instance whose subscription is down, so a cache built on the
 * bus follows two rules: cache only while `reliable()` is true, and treat the message
 * FLUSH_ALL ('*') as "drop everything cached for this channel". The Redis bus sends '*' to
 * every local subscriber when its subscription is lost and again when it is back.
 */
export interface Bus {
  publish(channel: string, message: string): Promise<void>
  subscribe(channel: string, fn: (message: string) => void): void
  /**
   * True while every instance's messages reach this one (local bus: always). Optional so
   * in-process fakes need not implement it; call `isReliable(bus)`.
   */
  reliable?(): boolean
  /** Resolves when the bus's server answers (readiness checks); in-process buses need none. */
  ping?(): Promise<void>
  close(): Promise<void>
}

/** The message that tells a subscriber to drop everything it caches for the channel. */
export const FLUSH_ALL = '*'

/** Whether a cache may trust the bus right now (a bus without `reliable` is in-process). */
export const isReliable = (bus: Bus): boolean => bus.reliable?.() ?? true

export function createLocalBus(): Bus {
  const ee = new EventEmitter()
  ee.setMaxListeners(0)
  return {
    async publish(channel, message) {
      ee.emit(channel, message)
    },
    subscribe(channel, fn) {
      ee.on(channel, fn)
    },
    reliable: () => true,
    async close() {
      ee.removeAllListeners()
    },
  }
}

export interface RedisBusOptions {
  /** Called when a publish to Redis fails (the server counts it for /metrics). */
  onPublishError?: () => void
}

export function createRedisBus(url: string, prefix = 'svc:bus:', opts: RedisBusOptions = {}): Bus {
  const pub = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 1000, connectTimeout: 1000 })
  const sub = new Redis(url, {
    maxRetriesPerRequest: null,
    connectTimeout: 1000,
    autoResubscribe: false,
    connectionName: `${prefix}sub`.replace(/[^A-Za-z0-9_.:-]/g, '_'),
    retryStrategy: (times) => Math.min(times * 200, 2000),
  })
  pub.on('error', () => {})
  sub.on('error', () => {})
  const local = new EventEmitter()
  local.setMaxListeners(0)
  const channels = new Set<string>()
  let ready = false // subscription up, every channel confirmed at least once since
  let pending = 0 // SUBSCRIBE calls in flight
  let closed = false
  const flushAll = () => {
    for (const ch of channels) local.emit(ch, FLUSH_ALL)
  }
  const subscribeNow = async (chs: string[]): Promise<void> => {
    if (chs.length === 0) return
    pending++
    try {
      await sub.subscribe(...chs.map((c) => prefix + c))
    } finally {
      pending--
    }
  }
  sub.on('message', (ch: string, msg: string) => {
    if (ch.startsWith(prefix)) local.emit(ch.slice(prefix.length), msg)
  })
  // (re)connected: subscribe to every channel, then caches may trust the bus again; they
  // flush first, since messages published meanwhile were lost
  sub.on('ready', () => {
    subscribeNow([...channels]).then(
      () => {
        if (closed) return
        ready = true
        flushAll()
      },
      () => sub.disconnect(true),
    )
  })
  sub.on('close', () => {
    const was = ready
    ready = false
    if (was) flushAll()
  })
  return {
    async publish(channel, message) {
      // deliver locally at once too, so this instance never serves stale data even if Redis is slow
      local.emit(channel, message)
      // a lost message only matters to instances whose own subscription works; count it
      await pub.publish(prefix + channel, message).catch(() => opts.onPublishError?.())
    },
    subscribe(channel, fn) {
      local.on(channel, fn)
      if (!channels.has(channel)) {
        channels.add(channel)
        // connected: subscribe now (not reliable until confirmed); otherwise 'ready' does it
        if (sub.status === 'ready') subscribeNow([channel]).catch(() => sub.disconnect(true))
      }
    },
    reliable: () => ready && pending === 0 && !closed,
    async ping() {
      await pub.ping()
    },
    async close() {
      closed = true
      ready = false
      pub.disconnect()
      sub.disconnect()
    },
  }
}
