import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { PG_URL, REDIS_URL, needs } from '../support/server.js'
import { createLocalBus, createPostgresBus, createRedisBus, FLUSH_ALL, isReliable, postgresBusChannel, type Bus } from '../../src/infra/bus.js'
import { startTcpProxy } from '../support/tcp-proxy.js'

/** Polls (every 10 ms, at most 5 s) until `cond` holds. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  assert.fail(`timed out waiting for ${what}`)
}

/** A fresh bus prefix, so runs and tests never hear each other. */
const newPrefix = () => `svc-test-${crypto.randomBytes(5).toString('hex')}:bus:`

/** Subscribes `bus` to 'hosting' and waits until it is reliable; returns what it receives. */
async function listen(bus: Bus, name: string): Promise<string[]> {
  const got: string[] = []
  bus.subscribe('hosting', (m) => got.push(m))
  await until(() => isReliable(bus), `${name} subscribed`)
  return got
}

describe('bus', () => {
  it('local bus: delivers in process and is always reliable', async () => {
    const bus = createLocalBus()
    const got: string[] = []
    bus.subscribe('c', (m) => got.push(m))
    await bus.publish('c', 'hello')
    assert.deepEqual(got, ['hello'])
    assert.equal(isReliable(bus), true)
    await bus.close()
  })

  it('Redis bus: delivers across instances; a lost subscription flushes caches and reports unreliable until it is back', needs('redis'), async () => {
    const prefix = newPrefix()
    const a = createRedisBus(REDIS_URL, prefix)
    const b = createRedisBus(REDIS_URL, prefix)
    const admin = new Redis(REDIS_URL)
    try {
      const onB = await listen(b, 'B')
      onB.length = 0
      await a.publish('hosting', 'alice')
      await until(() => onB.includes('alice'), 'message on B')

      // kill B's subscriber connection only (found by its connection name)
      const list = (await admin.client('LIST')) as string
      const name = `${prefix}sub`
      const mine = list.split('\n').filter((l) => l.includes(` name=${name} `))
      assert.equal(mine.length, 2, 'one subscriber connection per bus')
      const bSubId = await (async () => {
        // B subscribed to 'hosting' and its acknowledgements; A to its acknowledgements only
        for (const l of mine) if (/ sub=2 /.test(l)) return /\bid=(\d+)/.exec(l)![1]
        throw new Error('no subscribed connection')
      })()
      onB.length = 0
      await admin.client('KILL', 'ID', bSubId)
      await until(() => onB.includes(FLUSH_ALL), 'flush on loss')
      // back again: flushed once more (messages may have been lost meanwhile), then reliable
      await until(() => isReliable(b) && onB.filter((m) => m === FLUSH_ALL).length >= 2, 'resubscribed')
      onB.length = 0
      await a.publish('hosting', 'bob')
      await until(() => onB.includes('bob'), 'message after reconnect')
    } finally {
      await a.close()
      await b.close()
      admin.disconnect()
    }
  })

  it(
    'Redis bus: a subscription that hangs open (no close) flushes and reports unreliable within the heartbeat bound, then recovers',
    needs('redis'),
    async () => {
      const prefix = newPrefix()
      // B reaches Redis through a relay that can stop moving bytes while keeping the connections
      const relay = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379))
      const a = createRedisBus(REDIS_URL, prefix)
      const b = createRedisBus(`redis://127.0.0.1:${relay.port}`, prefix, { heartbeatMs: 100 })
      try {
        const onB = await listen(b, 'B')
        await until(() => isReliable(a), 'A subscribed')
        await a.publish('hosting', 'alice')
        await until(() => onB.includes('alice'), 'message on B')
        onB.length = 0
        relay.hang()
        const t0 = Date.now()
        // A's write is lost to B: B must stop trusting (and drop) what it cached, within bounds
        await a.publish('hosting', 'bob')
        await until(() => onB.includes(FLUSH_ALL) && !isReliable(b), 'B flushed and unreliable')
        assert.ok(Date.now() - t0 < 2000, `noticed after ${Date.now() - t0} ms`)
        assert.ok(!onB.includes('bob'))
        relay.resume()
        await until(() => isReliable(b), 'B back')
        onB.length = 0
        await a.publish('hosting', 'carol')
        await until(() => onB.includes('carol'), 'message after recovery')
      } finally {
        await a.close()
        await b.close()
        await relay.close()
      }
    },
  )

  it('Redis bus: an event loop that stalls past the heartbeat bound is not taken for a silent subscription', needs('redis'), async () => {
    const b = createRedisBus(REDIS_URL, newPrefix(), { heartbeatMs: 50 })
    try {
      const onB = await listen(b, 'B')
      await until(() => isReliable(b), 'B subscribed')
      await new Promise((r) => setTimeout(r, 200))
      onB.length = 0
      // four times the bound with the loop blocked: no heartbeat is sent, none is missed
      const end = Date.now() + 50 * 4 * 4
      while (Date.now() < end);
      await new Promise((r) => setTimeout(r, 300))
      assert.deepEqual(onB, [], 'no flush')
      assert.ok(isReliable(b))
    } finally {
      await b.close()
    }
  })

  it('Redis bus: a publish returns only after every other instance has applied it', needs('redis'), async () => {
    const prefix = newPrefix()
    const buses = [createRedisBus(REDIS_URL, prefix), createRedisBus(REDIS_URL, prefix), createRedisBus(REDIS_URL, prefix)]
    const [a, b, c] = buses as [Bus, Bus, Bus]
    try {
      const [onB, onC] = await Promise.all([listen(b, 'B'), listen(c, 'C')])
      await until(() => isReliable(a), 'A subscribed')
      for (let i = 0; i < 300; i++) {
        const msg = `user-${i}`
        // several at once too: each waits for its own acknowledgements
        await Promise.all([a.publish('hosting', msg), b.publish('hosting', `${msg}-b`)])
        assert.ok(onB.includes(msg) && onC.includes(msg) && onC.includes(`${msg}-b`), `applied everywhere before publish returned (${i})`)
      }
      assert.equal(onB.filter((m) => m === 'user-7-b').length, 1, "a publisher's own message is applied once")
    } finally {
      await Promise.all(buses.map((x) => x.close()))
    }
  })

  it('Redis bus: a receiver that never acknowledges costs one bounded wait, not a hang', needs('redis'), async () => {
    const prefix = newPrefix()
    let timeouts = 0
    const a = createRedisBus(REDIS_URL, prefix, { ackWaitMs: 100, onAckTimeout: () => timeouts++ })
    // an instance of an older version: receives, never acknowledges
    const old = new Redis(REDIS_URL)
    const got: string[] = []
    try {
      await old.subscribe(`${prefix}hosting`)
      old.on('message', (_ch: string, m: string) => got.push(m))
      await until(() => isReliable(a), 'A subscribed')
      const t0 = Date.now()
      await a.publish('hosting', 'alice')
      const took = Date.now() - t0
      assert.ok(took >= 90 && took < 1000, `waited ${took} ms`)
      assert.equal(timeouts, 1)
      assert.ok(
        got.some((m) => m.endsWith('\nalice')),
        'the message carries its header and body',
      )
    } finally {
      await a.close()
      old.disconnect()
    }
  })

  it('Redis bus: a message without header (a previous version) is still applied', needs('redis'), async () => {
    const prefix = newPrefix()
    const b = createRedisBus(REDIS_URL, prefix)
    const admin = new Redis(REDIS_URL)
    try {
      const onB = await listen(b, 'B')
      await admin.publish(`${prefix}hosting`, 'carol')
      await until(() => onB.includes('carol'), 'bare message applied')
    } finally {
      await b.close()
      admin.disconnect()
    }
  })

  it('Redis bus on an unreachable Redis: never reliable, publish does not hang or throw', async () => {
    const bus = createRedisBus('redis://127.0.0.1:1', newPrefix())
    const got: string[] = []
    bus.subscribe('hosting', (m) => got.push(m))
    const t0 = Date.now()
    await bus.publish('hosting', 'x')
    assert.ok(Date.now() - t0 < 2500)
    assert.deepEqual(got, ['x'], 'still delivered to this instance')
    assert.equal(isReliable(bus), false)
    await bus.close()
  })

  // PostgreSQL LISTEN/NOTIFY (no Redis): the same protocol over the database (NEW-PGBUS-1).
  // The bus makes no schema: a fresh name only keeps runs and tests apart
  const newSchema = () => `t_pgbus_${crypto.randomBytes(5).toString('hex')}`
  /** The pids of the bus connections of `schema` (found by their application_name). */
  async function busPids(admin: pg.Client, schema: string): Promise<number[]> {
    const r = await admin.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1 order by backend_start', [
      postgresBusChannel(schema),
    ])
    return r.rows.map((x) => x.pid)
  }

  it('PostgreSQL bus: a publish returns once every instance of the schema applied it; another schema hears nothing', needs('postgres'), async () => {
    const schema = newSchema()
    const url = `${PG_URL}?schema=${schema}`
    let timeouts = 0
    const onAckTimeout = () => timeouts++
    // A subscribes to nothing: it is counted among the receivers all the same, and acknowledges
    const buses = [
      createPostgresBus(url, { onAckTimeout }),
      createPostgresBus(url, { onAckTimeout }),
      createPostgresBus(url, { onAckTimeout }),
      createPostgresBus(`${PG_URL}?schema=${newSchema()}`, { onAckTimeout }),
    ]
    const [a, b, c, other] = buses as [Bus, Bus, Bus, Bus]
    try {
      const [onB, onC, onOther] = await Promise.all([listen(b, 'B'), listen(c, 'C'), listen(other, 'other')])
      await until(() => isReliable(a), 'A subscribed')
      for (let i = 0; i < 100; i++) {
        const msg = `user-${i}`
        await Promise.all([a.publish('hosting', msg), b.publish('hosting', `${msg}-b`)])
        assert.ok(onB.includes(msg) && onC.includes(msg) && onC.includes(`${msg}-b`), `applied everywhere before publish returned (${i})`)
      }
      assert.equal(onB.filter((m) => m === 'user-7-b').length, 1, "a publisher's own message is applied once")
      assert.equal(timeouts, 0, 'every publish ended with all acknowledgements, none by the 250 ms bound')
      assert.deepEqual(
        onOther.filter((m) => m !== FLUSH_ALL),
        [],
        'a bus of another schema hears none of them',
      )
    } finally {
      await Promise.all(buses.map((x) => x.close()))
    }
  })

  it('PostgreSQL bus: a LISTEN connection terminated flushes and reports unreliable until it is back', needs('postgres'), async () => {
    const schema = newSchema()
    const url = `${PG_URL}?schema=${schema}`
    const admin = new pg.Client({ connectionString: PG_URL })
    await admin.connect()
    const b = createPostgresBus(url)
    let a: Bus | undefined
    try {
      const onB = await listen(b, 'B')
      const [bPid] = await busPids(admin, schema)
      assert.ok(bPid)
      a = createPostgresBus(url)
      await until(() => isReliable(a!), 'A subscribed')
      assert.equal((await busPids(admin, schema)).length, 2, 'one connection per bus')
      onB.length = 0
      await admin.query('select pg_terminate_backend($1)', [bPid])
      await until(() => onB.includes(FLUSH_ALL) && !isReliable(b), 'flush on loss')
      // back on a new connection: flushed once more (messages may have been lost), then reliable
      await until(() => isReliable(b) && onB.filter((m) => m === FLUSH_ALL).length >= 2, 'listening again')
      assert.ok(!(await busPids(admin, schema)).includes(bPid), 'a new connection')
      onB.length = 0
      await a.publish('hosting', 'bob')
      assert.deepEqual(onB, ['bob'], 'applied before the publish returned')
    } finally {
      await a?.close()
      await b.close()
      await admin.end()
    }
  })

  it(
    'PostgreSQL bus: a LISTEN connection that hangs open flushes and reports unreliable within the heartbeat bound, then recovers',
    needs('postgres'),
    async () => {
      const schema = newSchema()
      const target = new URL(PG_URL)
      const relay = await startTcpProxy(Number(target.port || 5432), target.hostname)
      const viaRelay = new URL(PG_URL)
      viaRelay.host = `127.0.0.1:${relay.port}`
      viaRelay.searchParams.set('schema', schema)
      const a = createPostgresBus(`${PG_URL}?schema=${schema}`)
      const b = createPostgresBus(viaRelay.toString(), { heartbeatMs: 100 })
      try {
        const onB = await listen(b, 'B')
        await until(() => isReliable(a), 'A subscribed')
        await a.publish('hosting', 'alice')
        assert.ok(onB.includes('alice'))
        onB.length = 0
        relay.hang()
        const t0 = Date.now()
        await a.publish('hosting', 'bob')
        await until(() => onB.includes(FLUSH_ALL) && !isReliable(b), 'B flushed and unreliable')
        assert.ok(Date.now() - t0 < 2000, `noticed after ${Date.now() - t0} ms`)
        assert.ok(!onB.includes('bob'))
        relay.resume()
        await until(() => isReliable(b), 'B back')
        onB.length = 0
        await a.publish('hosting', 'carol')
        await until(() => onB.includes('carol'), 'message after recovery')
      } finally {
        await a.close()
        await b.close()
        await relay.close()
      }
    },
  )

  it("PostgreSQL bus: a message over NOTIFY's 8000 bytes reaches the others as FLUSH_ALL, this instance as it is", needs('postgres'), async () => {
    const url = `${PG_URL}?schema=${newSchema()}`
    const a = createPostgresBus(url)
    const b = createPostgresBus(url)
    try {
      const [onA, onB] = await Promise.all([listen(a, 'A'), listen(b, 'B')])
      onA.length = 0
      onB.length = 0
      const big = 'x'.repeat(9000)
      await a.publish('hosting', big)
      assert.deepEqual(onA, [big])
      assert.deepEqual(onB, [FLUSH_ALL], 'dropped everything of the channel, before the publish returned')
      await a.publish('hosting', 'small')
      assert.deepEqual(onB, [FLUSH_ALL, 'small'])
    } finally {
      await a.close()
      await b.close()
    }
  })
})
