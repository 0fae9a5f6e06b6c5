import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { EventEmitter } from 'node:events'
import type { ServerResponse } from 'node:http'
import { REDIS_URL, needs } from '../support/server.js'
import { admit, admitNow } from '../../src/http/guard.js'
import { createMemoryLimitStore } from '../../src/limits/store.js'
import { createRedisLimitStore } from '../../src/limits/redis.js'
import { tierRules } from '../../src/limits/tiers.js'

const rules = tierRules({ default: { minute: 5, hour: 100, day: 1000, concurrent: 2 } }).default
const NOW = Date.UTC(2026, 0, 15, 4, 0, 0)

/** A response as the guard sees it: an emitter with `closed`. */
const response = () => Object.assign(new EventEmitter(), { closed: false }) as unknown as ServerResponse

describe('admitNow (an answer written while it is admitted)', () => {
  it('with the in-process store: counts the request, holds no slot afterwards and leaves no listener on the response', async () => {
    const limits = createMemoryLimitStore()
    try {
      const res = response()
      const a = admitNow(limits, 'ip:a', rules, NOW, res)
      assert.ok(!(a instanceof Promise), 'answered synchronously')
      assert.equal(a.ok, true)
      assert.equal(a.window.count, 1)
      assert.equal(await limits.inFlight('ip:a', NOW), 0)
      assert.equal(res.listenerCount('close'), 0)
      // admit, by contrast, holds its slot until the response closes
      const res2 = response()
      const b = admit(limits, 'ip:a', rules, NOW, res2)
      assert.ok(!(b instanceof Promise) && b.ok && b.window.count === 2)
      assert.equal(await limits.inFlight('ip:a', NOW), 1)
      res2.emit('close')
      assert.equal(await limits.inFlight('ip:a', NOW), 0)
    } finally {
      await limits.close()
    }
  })

  it('with the in-process store: refused (1206, not counted) while running requests hold every slot', async () => {
    const limits = createMemoryLimitStore()
    try {
      const held = [response(), response()]
      for (const r of held) assert.equal((admit(limits, 'ip:b', rules, NOW, r) as { ok: boolean }).ok, true)
      const a = admitNow(limits, 'ip:b', rules, NOW, response())
      assert.ok(!(a instanceof Promise))
      assert.equal(a.ok, false)
      assert.equal(a.ok === false && a.error.key, 'RATE_LIMIT_CONCURRENT')
      assert.equal(a.window.count, 2, 'the refused request was not counted')
      assert.equal(await limits.inFlight('ip:b', NOW), 2, 'and took no slot')
      held[0].emit('close')
      const c = admitNow(limits, 'ip:b', rules, NOW, response())
      assert.ok(!(c instanceof Promise) && c.ok && c.window.count === 3)
      assert.equal(await limits.inFlight('ip:b', NOW), 1)
    } finally {
      await limits.close()
    }
  })

  it('with Redis: the same as admit (the slot is held until the response closes)', needs('redis'), async () => {
    const limits = createRedisLimitStore(REDIS_URL, { serverTime: false, prefix: `svc:test:${crypto.randomBytes(6).toString('hex')}:` })
    try {
      const res = response()
      const p = admitNow(limits, 'ip:c', rules, NOW, res)
      assert.ok(p instanceof Promise)
      const a = await p
      assert.equal(a.ok, true)
      assert.equal(await limits.inFlight('ip:c', NOW), 1)
      res.emit('close')
      for (let i = 0; i < 50 && (await limits.inFlight('ip:c', NOW)) > 0; i++) await new Promise((r) => setTimeout(r, 10))
      assert.equal(await limits.inFlight('ip:c', NOW), 0)
    } finally {
      await limits.close()
    }
  })
})
