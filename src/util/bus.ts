import { EventEmitter } from 'node:events'
import { Redis } from 'ioredis'

/**
 * Cross-instance notifications (cache invalidation). In-process by default; with REDIS_URL
 * every instance receives every message through Redis pub/sub, including its own.
 */
export interface Bus {
  publish(channel: string, message: string): Promise<void>
  subscribe(channel: string, fn: (message: string) => void): void
  close(): Promise<void>
}

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
    async close() {
      ee.removeAllListeners()
    },
  }
}

export function createRedisBus(url: string, prefix = 'svc:bus:'): Bus {
  const pub = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 1000, connectTimeout: 1000 })
  const sub = new Redis(url, { maxRetriesPerRequest: null, connectTimeout: 1000 })
  pub.on('error', () => {})
  sub.on('error', () => {})
  const local = new EventEmitter()
  local.setMaxListeners(0)
  sub.on('message', (ch: string, msg: string) => local.emit(ch.slice(prefix.length), msg))
  return {
    async publish(channel, message) {
      // deliver locally at once too, so this instance never serves stale data even if Redis is slow
      local.emit(channel, message)
      await pub.publish(prefix + channel, message).catch(() => {})
    },
    subscribe(channel, fn) {
      if (local.listenerCount(channel) === 0) void sub.subscribe(prefix + channel).catch(() => {})
      local.on(channel, fn)
    },
    async close() {
      pub.disconnect()
      sub.disconnect()
    },
  }
}
