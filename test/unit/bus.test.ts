import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { Redis } from 'ioredis'
import { REDIS_URL, needs } from '../support/server.js'
import { createLocalBus, createRedisBus, FLUSH_ALL, isReliable, type Bus } from '../../src/infra/bus.js'
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
})
