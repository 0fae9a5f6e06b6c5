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
  /** True while every instance's messages reach this one (local bus: always). */
  reliable(): boolean
  close(): Promise<void>
}

/** The message that tells a subscriber to drop everything it caches for the channel. */
export const FLUSH_ALL = '*'

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

export function createRedisBus(url: string, prefix = 'svc:bus:'): Bus {
  const pub = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 1000, connectTimeout: 1000, enableOfflineQueue: false })
  const sub = new Redis(url, {
    maxRetriesPerRequest: null, connectTimeout: 1000, autoResubscribe: false,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  })
  pub.on('error', () => {})
  sub.on('error', () => {})
  const local = new EventEmitter()
  local.setMaxListeners(0)
  const channels = new Set<string>()
  let live = false
  let closed = false
  const flushAll = () => {
    for (const ch of channels) local.emit(ch, FLUSH_ALL)
  }
  sub.on('message', (ch: string, msg: string) => {
    if (ch.startsWith(prefix)) local.emit(ch.slice(prefix.length), msg)
  })
  // (re)connected: subscribe to every channel, then caches may trust the bus again; they
  // flush first, since messages published meanwhile were lost
  sub.on('ready', () => {
    const all = [...channels].map((c) => prefix + c)
    void (all.length ? sub.subscribe(...all) : Promise.resolve())
      .then(() => {
        if (closed) return
        live = true
        flushAll()
      })
      .catch(() => sub.disconnect(true))
  })
  sub.on('close', () => {
    if (live) {
      live = false
      flushAll()
    }
  })
  return {
    async publish(channel, message) {
      // deliver locally at once too, so this instance never serves stale data even if Redis is slow
      local.emit(channel, message)
      await pub.publish(prefix + channel, message).catch(() => {})
    },
    subscribe(channel, fn) {
      if (!channels.has(channel)) {
        channels.add(channel)
        // while connected, subscribe now (not reliable until confirmed); otherwise 'ready' does it
        if (live) {
          live = false
          void sub.subscribe(prefix + channel).then(() => {
            if (!closed && sub.status === 'ready') live = true
          }, () => sub.disconnect(true))
        }
      }
      local.on(channel, fn)
    },
    reliable: () => live,
    async close() {
      closed = true
      live = false
      pub.disconnect()
      sub.disconnect()
    },
  }
}
