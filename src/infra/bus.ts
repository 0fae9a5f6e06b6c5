import crypto from 'node:crypto'
import { EventEmitter } from 'node:events'
import { lazyRequire } from '../util/lazy.js'
import { redisFailure } from '../util/redis-cause.js'

/** ioredis, loaded when a Redis client is first made (a server without REDIS_URL never loads it). */
const ioredis = lazyRequire<typeof import('ioredis')>('ioredis')

/**
 * Cross-instance notifications (cache invalidation). In-process by default; with REDIS_URL
 * every instance receives every message through Redis pub/sub, including its own.
 *
 * Pub/sub delivers nothing to an instance whose subscription is down, so a cache built on the
 * bus follows two rules: cache only while `reliable()` is true, and treat the message
 * FLUSH_ALL ('*') as "drop everything cached for this channel". The Redis bus sends '*' to
 * every local subscriber when its subscription is lost and again when it is back. A
 * subscription that stays open but delivers nothing (a hung Redis or network: no close
 * comes for minutes) counts as lost once the instance's own heartbeat, published every
 * `heartbeatMs` to itself through Redis, has not come back for HEARTBEAT_MISSES of them.
 *
 * `publish` resolves once every instance that received the message has applied it (the Redis
 * bus waits for their acknowledgements, at most ACK_WAIT_MS), so a write that returns is seen
 * by every instance's next request, not only by those whose socket happened to be read first.
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
  /** Called when some instance did not acknowledge a message within `ackWaitMs`. */
  onAckTimeout?: () => void
  /** How long `publish` waits for the other instances' acknowledgements (default ACK_WAIT_MS). */
  ackWaitMs?: number
  /** How often the instance pings itself through its subscription (default HEARTBEAT_MS). */
  heartbeatMs?: number
}

/**
 * The longest a publish waits for acknowledgements. An instance that stays silent longer is
 * stalled or cut off (its subscription drops, or its heartbeat stops coming back, and it
 * flushes its caches within HEARTBEAT_MS x HEARTBEAT_MISSES), or it runs a version that does
 * not acknowledge (during a rolling upgrade).
 */
export const ACK_WAIT_MS = 250

/** How often an instance publishes a heartbeat to its own subscription. */
export const HEARTBEAT_MS = 500
/**
 * Heartbeat periods without any message received after which an open subscription counts as
 * lost: the bound on how long a hung (not closed) subscription keeps serving cached answers.
 */
export const HEARTBEAT_MISSES = 4
/** The heartbeat's body on the instance's own acknowledgement channel (an ack is `<id> <seq>`). */
const PING = 'ping'

/** On the wire a message is `<publisher id>.<seq>\n<message>`; a bare message (no header) is
 * still applied, unacknowledged, so instances of the previous version keep invalidating. */
const HEADER = /^([0-9a-f]{16})\.(\d+)\n/

interface Waiter {
  seq: number
  /** Instances that must acknowledge (PUBLISH's receiver count). */
  need: number
  done: () => void
}

export function createRedisBus(url: string, prefix = 'svc:bus:', opts: RedisBusOptions = {}): Bus {
  const pub = new (ioredis().Redis)(url, { maxRetriesPerRequest: 1, commandTimeout: 1000, connectTimeout: 1000 })
  const sub = new (ioredis().Redis)(url, {
    maxRetriesPerRequest: null,
    connectTimeout: 1000,
    autoResubscribe: false,
    connectionName: `${prefix}sub`.replace(/[^A-Za-z0-9_.:-]/g, '_'),
    retryStrategy: (times) => Math.min(times * 200, 2000),
  })
  pub.on('error', () => {})
  sub.on('error', () => {})
  const pubFailure = redisFailure(pub)
  const local = new EventEmitter()
  local.setMaxListeners(0)
  const id = crypto.randomBytes(8).toString('hex')
  const ackWaitMs = opts.ackWaitMs ?? ACK_WAIT_MS
  const heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS
  // acknowledgements to an instance arrive on its own channel (under `prefix`, as every
  // channel): `<acker id> <highest seq>`
  const ackChannelOf = (instance: string) => `_ack:${instance}`
  const ackChannel = ackChannelOf(id)
  let seq = 0
  // per acker, the highest of this instance's seqs it has applied
  const acked = new Map<string, number>()
  const waiters = new Set<Waiter>()
  // what this instance owes: publisher id → highest seq applied, sent on the next tick
  const owed = new Map<string, number>()
  let ackScheduled = false
  const sendAcks = (): void => {
    ackScheduled = false
    for (const [publisher, upTo] of owed) pub.publish(prefix + ackChannelOf(publisher), `${id} ${upTo}`).catch(() => {})
    owed.clear()
  }
  const settle = (): void => {
    for (const w of waiters) {
      let n = 0
      for (const upTo of acked.values()) if (upTo >= w.seq) n++
      if (n >= w.need) w.done()
    }
  }
  const channels = new Set<string>()
  let ready = false // subscription up, every channel confirmed at least once since
  let pending = 0 // SUBSCRIBE calls in flight
  let closed = false
  // when the subscription last delivered anything (its own heartbeat at least)
  let heardAt = 0
  const flushAll = () => {
    for (const ch of channels) local.emit(ch, FLUSH_ALL)
  }
  // heartbeats sent in a row with nothing heard after them: counted per tick, so an event loop
  // that stalled (sending nothing meanwhile) is not taken for a silent subscription
  let sentAt = 0
  let misses = 0
  // a subscription open but silent is lost: caches flush and stop trusting the bus at once,
  // and the connection is replaced ('ready' flushes again once a new one works)
  const heartbeat = setInterval(() => {
    if (!ready || closed) {
      misses = 0
      return
    }
    misses = sentAt > heardAt ? misses + 1 : 0
    if (misses >= HEARTBEAT_MISSES) {
      // (checked again after this turn's I/O: timers run before the socket is read, where the
      // last heartbeat may be waiting)
      setImmediate(() => {
        if (!ready || closed || heardAt >= sentAt) return
        misses = 0
        ready = false
        flushAll()
        sub.disconnect(true)
      })
      return
    }
    sentAt = Date.now()
    pub.publish(prefix + ackChannel, PING).catch(() => {})
  }, heartbeatMs)
  heartbeat.unref()
  const subscribeNow = async (chs: string[]): Promise<void> => {
    if (chs.length === 0) return
    pending++
    try {
      await sub.subscribe(...chs.map((c) => prefix + c))
    } finally {
      pending--
    }
  }
  sub.on('message', (ch: string, raw: string) => {
    heardAt = Date.now()
    if (ch === prefix + ackChannel) {
      if (raw === PING) return
      const sp = raw.indexOf(' ')
      const acker = raw.slice(0, sp)
      const upTo = Number(raw.slice(sp + 1))
      if (upTo > (acked.get(acker) ?? -1)) acked.set(acker, upTo)
      settle()
      return
    }
    if (!ch.startsWith(prefix)) return
    const h = HEADER.exec(raw)
    if (h === null) {
      local.emit(ch.slice(prefix.length), raw)
      return
    }
    const [, publisher, n] = h
    // this instance's own message was applied when it was published
    if (publisher !== id) local.emit(ch.slice(prefix.length), raw.slice(h[0].length))
    owed.set(publisher, Math.max(owed.get(publisher) ?? 0, Number(n)))
    if (!ackScheduled) {
      ackScheduled = true
      setImmediate(sendAcks)
    }
  })
  // (re)connected: subscribe to every channel, then caches may trust the bus again; they
  // flush first, since messages published meanwhile were lost
  sub.on('ready', () => {
    subscribeNow([ackChannel, ...channels]).then(
      () => {
        if (closed) return
        heardAt = Date.now()
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
      const s = ++seq
      let receivers: number
      try {
        receivers = await pub.publish(prefix + channel, `${id}.${s}\n${message}`)
      } catch {
        // a lost message only matters to instances whose own subscription works; count it
        opts.onPublishError?.()
        return
      }
      // acknowledgements reach this instance only through its own subscription
      if (receivers === 0 || !ready || closed) return
      await new Promise<void>((resolve) => {
        const w: Waiter = {
          seq: s,
          need: receivers,
          done: () => {
            clearTimeout(timer)
            waiters.delete(w)
            resolve()
          },
        }
        const timer = setTimeout(() => {
          opts.onAckTimeout?.()
          w.done()
        }, ackWaitMs)
        waiters.add(w)
        settle()
      })
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
      await pub.ping().catch((err: unknown) => {
        throw pubFailure(err)
      })
    },
    async close() {
      closed = true
      ready = false
      clearInterval(heartbeat)
      for (const w of waiters) w.done()
      pub.disconnect()
      sub.disconnect()
    },
  }
}
