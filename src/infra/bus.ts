import crypto from 'node:crypto'
import { EventEmitter } from 'node:events'
import type { default as Pg } from 'pg'
import { lazyRequire } from '../util/lazy.js'
import { redisFailure } from '../util/redis-cause.js'

/** ioredis, loaded when a Redis client is first made (a server without REDIS_URL never loads it). */
const ioredis = lazyRequire<typeof import('ioredis')>('ioredis')
/** pg, loaded when a PostgreSQL bus is made (a SQLite install never loads it). */
const pg = lazyRequire<typeof Pg>('pg')

/**
 * Cross-instance notifications (cache invalidation). In-process on SQLite; with REDIS_URL every
 * instance receives every message through Redis pub/sub, including its own; on PostgreSQL
 * without REDIS_URL, through LISTEN/NOTIFY on the database (decision NEW-PGBUS-1). Both shared
 * buses are one protocol (`createTransportBus`) over two transports.
 *
 * Pub/sub delivers nothing to an instance whose subscription is down, so a cache built on the
 * bus follows two rules: cache only while `reliable()` is true, and treat the message
 * FLUSH_ALL ('*') as "drop everything cached for this channel". A shared bus sends '*' to
 * every local subscriber when its subscription is lost and again when it is back. A
 * subscription that stays open but delivers nothing (a hung server or network: no close
 * comes for minutes) counts as lost once the instance's own heartbeat, published every
 * `heartbeatMs` to itself through the server, has not come back for HEARTBEAT_MISSES of them.
 *
 * `publish` resolves once every instance that received the message has applied it (a shared
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
  /** Called when a publish to the bus's server fails (the server counts it for /metrics). */
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
  /** Instances that must acknowledge (the transport's receiver count). */
  need: number
  done: () => void
}

/**
 * A shared bus's connection to its server. Channels are the bus's own names (the transport
 * maps them onto its server's); an instance's acknowledgement channel is ACK_PREFIX + its id.
 */
interface Transport {
  /** Sends `payload` on `channel`; resolves to how many subscriptions received it. */
  send(channel: string, payload: string): Promise<number>
  /** Subscribes the listening connection (up: `connected()`) to `channels`. */
  listen(channels: string[]): Promise<void>
  /** Whether the listening connection is up. */
  connected(): boolean
  /** Drops the listening connection (it hangs open); the transport connects a new one. */
  reset(): void
  ping?(): Promise<void>
  close(): void
}

/** What a transport tells its bus: a message, its listening connection up, and down. */
interface TransportEvents {
  message(channel: string, raw: string): void
  ready(): void
  down(): void
}

/** An instance's acknowledgement channel is this followed by its id. */
const ACK_PREFIX = '_ack:'

/**
 * The protocol of every shared bus, over the transport `connect` makes: each message carries
 * its publisher and sequence number, every receiver acknowledges it on the publisher's own
 * channel, the instance's heartbeat to itself tells a hung subscription, and FLUSH_ALL goes to
 * every local subscriber whenever the subscription is lost or back.
 */
function createTransportBus(connect: (events: TransportEvents) => Transport, opts: RedisBusOptions = {}): Bus {
  const local = new EventEmitter()
  local.setMaxListeners(0)
  const id = crypto.randomBytes(8).toString('hex')
  const ackWaitMs = opts.ackWaitMs ?? ACK_WAIT_MS
  const heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS
  // acknowledgements to an instance arrive on its own channel: `<acker id> <highest seq>`
  const ackChannelOf = (instance: string) => `${ACK_PREFIX}${instance}`
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
    for (const [publisher, upTo] of owed) t.send(ackChannelOf(publisher), `${id} ${upTo}`).catch(() => {})
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
  let pending = 0 // subscribe calls in flight
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
        t.reset()
      })
      return
    }
    sentAt = Date.now()
    t.send(ackChannel, PING).catch(() => {})
  }, heartbeatMs)
  heartbeat.unref()
  const subscribeNow = async (chs: string[]): Promise<void> => {
    if (chs.length === 0) return
    pending++
    try {
      await t.listen(chs)
    } finally {
      pending--
    }
  }
  const t = connect({
    message(ch, raw) {
      heardAt = Date.now()
      if (ch === ackChannel) {
        if (raw === PING) return
        const sp = raw.indexOf(' ')
        const acker = raw.slice(0, sp)
        const upTo = Number(raw.slice(sp + 1))
        if (upTo > (acked.get(acker) ?? -1)) acked.set(acker, upTo)
        settle()
        return
      }
      if (ch.startsWith(ACK_PREFIX)) return
      const h = HEADER.exec(raw)
      if (h === null) {
        local.emit(ch, raw)
        return
      }
      const [, publisher, n] = h
      // this instance's own message was applied when it was published
      if (publisher !== id) local.emit(ch, raw.slice(h[0].length))
      owed.set(publisher, Math.max(owed.get(publisher) ?? 0, Number(n)))
      if (!ackScheduled) {
        ackScheduled = true
        setImmediate(sendAcks)
      }
    },
    // (re)connected: subscribe to every channel, then caches may trust the bus again; they
    // flush first, since messages published meanwhile were lost
    ready() {
      subscribeNow([ackChannel, ...channels]).then(
        () => {
          if (closed) return
          heardAt = Date.now()
          ready = true
          flushAll()
        },
        () => t.reset(),
      )
    },
    down() {
      const was = ready
      ready = false
      if (was) flushAll()
    },
  })
  return {
    async publish(channel, message) {
      // deliver locally at once too, so this instance never serves stale data even if the server is slow
      local.emit(channel, message)
      const s = ++seq
      let receivers: number
      try {
        receivers = await t.send(channel, `${id}.${s}\n${message}`)
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
        if (t.connected()) subscribeNow([channel]).catch(() => t.reset())
      }
    },
    reliable: () => ready && pending === 0 && !closed,
    ...(t.ping ? { ping: () => t.ping!() } : {}),
    async close() {
      closed = true
      ready = false
      clearInterval(heartbeat)
      for (const w of waiters) w.done()
      t.close()
    },
  }
}

export function createRedisBus(url: string, prefix = 'svc:bus:', opts: RedisBusOptions = {}): Bus {
  return createTransportBus((events) => {
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
    sub.on('message', (ch: string, raw: string) => {
      if (ch.startsWith(prefix)) events.message(ch.slice(prefix.length), raw)
    })
    sub.on('ready', () => events.ready())
    sub.on('close', () => events.down())
    return {
      send: (channel, payload) => pub.publish(prefix + channel, payload),
      listen: async (chs) => {
        await sub.subscribe(...chs.map((c) => prefix + c))
      },
      connected: () => sub.status === 'ready',
      reset: () => sub.disconnect(true),
      async ping() {
        await pub.ping().catch((err: unknown) => {
          throw pubFailure(err)
        })
      },
      close() {
        pub.disconnect()
        sub.disconnect()
      },
    }
  }, opts)
}

export interface PostgresBusOptions extends RedisBusOptions {
  /**
   * Runs a statement on the server's pool (the connections its writes use), for the messages
   * themselves; absent, they go over the bus's own connection too (operator commands).
   */
  query?: (text: string, values: unknown[]) => Promise<Array<Record<string, unknown>>>
}

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more. */
export const NOTIFY_MAX_BYTES = 7999

/**
 * The PostgreSQL channel of a schema's bus (also its connection's application_name): instances
 * on another schema of the same database never hear it. A name too long for an identifier
 * with an instance id after it (63 bytes) is replaced by its digest.
 */
export function postgresBusChannel(schema: string | null): string {
  const name = `svc_bus_${schema ?? 'public'}`
  return name.length <= 46
    ? name
    : `svc_bus_${crypto
        .createHash('sha256')
        .update(schema ?? '')
        .digest('hex')
        .slice(0, 32)}`
}

/**
 * The bus over PostgreSQL LISTEN/NOTIFY, for instances sharing a database without Redis. One
 * dedicated connection (pg's Client; a pooled one cannot keep a LISTEN) listens on the
 * schema's channel and on its instance's own `<channel>.<id>`, and sends acknowledgements and
 * heartbeats; messages go out through `opts.query` (the pool that made the write) with the
 * count of listening connections of the schema, which are the instances that acknowledge.
 * A message is `<bus channel>\n<header>\n<message>`; one over NOTIFY's limit is sent as
 * FLUSH_ALL for its channel (applied here exactly, over-invalidating elsewhere).
 */
export function createPostgresBus(databaseUrl: string, opts: PostgresBusOptions = {}): Bus {
  const url = new URL(databaseUrl)
  const ns = postgresBusChannel(url.searchParams.get('schema'))
  url.searchParams.delete('schema')
  // pg channel of a bus channel; an acknowledgement channel is the instance's own
  const pgChannel = (ch: string) => (ch.startsWith(ACK_PREFIX) ? `${ns}.${ch.slice(ACK_PREFIX.length)}` : ns)
  // the NOTIFY and the count of the schema's listening connections in one round trip
  const notify = 'select pg_notify($1, $2), (select count(*)::int from pg_stat_activity where datname = current_database() and application_name = $1) as n'
  return createTransportBus((events) => {
    // the listening connection, its LISTENs, and its queries run one at a time (pg's Client
    // must not be handed a query while one runs)
    let conn: { c: Pg.Client; listening: Set<string>; run: (text: string, values?: unknown[]) => Promise<Pg.QueryResult> } | null = null
    let up = false
    let closed = false
    let attempts = 0
    let retry: NodeJS.Timeout | undefined
    const lost = (c: Pg.Client) => {
      if (c !== conn?.c) return
      conn = null
      const was = up
      up = false
      if (was) events.down()
      c.connection.stream.destroy()
      c.end().catch(() => {})
      if (!closed) retry = setTimeout(open, Math.min(++attempts * 200, 2000))
    }
    const open = () => {
      const c = new (pg().Client)({
        connectionString: url.toString(),
        application_name: ns,
        connectionTimeoutMillis: 1000,
        query_timeout: 1000,
        keepAlive: true,
      })
      let chain: Promise<unknown> = Promise.resolve()
      // a query that fails or goes unanswered for a second (query_timeout) ends the connection
      const run = (text: string, values?: unknown[]): Promise<Pg.QueryResult> => {
        const p = chain.then(() => {
          if (c !== conn?.c) throw new Error('the bus connection to PostgreSQL is down')
          return c.query(text, values).catch((e: unknown) => {
            lost(c)
            throw e
          })
        })
        chain = p.catch(() => {})
        return p
      }
      conn = { c, listening: new Set(), run }
      c.on('error', () => lost(c))
      c.on('end', () => lost(c))
      c.on('notification', (n) => {
        if (c !== conn?.c || n.payload === undefined) return
        if (n.channel === ns) {
          const nl = n.payload.indexOf('\n')
          if (nl > 0) events.message(n.payload.slice(0, nl), n.payload.slice(nl + 1))
        } else if (n.channel.startsWith(`${ns}.`)) events.message(ACK_PREFIX + n.channel.slice(ns.length + 1), n.payload)
      })
      c.connect().then(
        () => {
          if (c !== conn?.c) return
          attempts = 0
          up = true
          events.ready()
        },
        () => lost(c),
      )
    }
    open()
    const onClient = async (text: string, values: unknown[]): Promise<Array<Record<string, unknown>>> => {
      if (!up || conn === null) throw new Error('the bus connection to PostgreSQL is down')
      return (await conn.run(text, values)).rows as Array<Record<string, unknown>>
    }
    return {
      async send(channel, payload) {
        if (channel.startsWith(ACK_PREFIX)) {
          await onClient('select pg_notify($1, $2)', [pgChannel(channel), payload])
          return 1
        }
        let body = `${channel}\n${payload}`
        if (Buffer.byteLength(body) > NOTIFY_MAX_BYTES) body = `${channel}\n${HEADER.exec(payload)?.[0] ?? ''}${FLUSH_ALL}`
        const rows = await (opts.query ?? onClient)(notify, [ns, body])
        return Number(rows[0]?.n ?? 0)
      },
      async listen(chs) {
        const at = conn
        if (at === null) throw new Error('the bus connection to PostgreSQL is down')
        // the schema's channel always: every listening connection is counted as a receiver
        // of every message (whatever its bus channels), so each must hear and acknowledge it
        for (const name of new Set([ns, ...chs.map(pgChannel)])) {
          if (at.listening.has(name)) continue
          await at.run(`listen "${name}"`)
          at.listening.add(name)
        }
      },
      connected: () => up,
      reset() {
        if (conn !== null) lost(conn.c)
      },
      close() {
        closed = true
        clearTimeout(retry)
        const c = conn?.c
        conn = null
        up = false
        c?.end().catch(() => {})
      },
    }
  }, opts)
}
