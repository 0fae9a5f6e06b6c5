import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createInvalidatedCache, type InvalidatedCacheOptions } from '../../src/infra/invalidated-cache.js'
import { createLocalBus, FLUSH_ALL, type Bus } from '../../src/infra/bus.js'

/** A local bus whose reliability the test sets (a Redis bus whose subscription is down says false). */
function fakeBus(): Bus & { up: boolean } {
  const b = createLocalBus()
  const fake = { ...b, up: true, reliable: () => fake.up }
  return fake
}

type V = { v: string; miss?: boolean; size?: number; fresh?: boolean }
const make = (o: Partial<InvalidatedCacheOptions<string, V>> = {}) => createInvalidatedCache<string, V>({ channel: 'test', ...o })
const fill = (c: ReturnType<typeof make>, k: string, v: V, group?: string) => c.set(k, v, c.ticket(group), group)

describe('createInvalidatedCache', () => {
  describe('fills are refused after an invalidation they could have missed', () => {
    // [what happens between ticket and set, kept?]
    const cases: [string, (c: ReturnType<typeof make>) => void, boolean][] = [
      ['nothing', () => {}, true],
      ['another key invalidated', (c) => c.invalidate('other'), false],
      ['the key invalidated', (c) => c.invalidate('k'), false],
      ['everything invalidated', (c) => c.invalidateAll(), false],
      ['a group invalidated (fill without group)', (c) => c.invalidateGroup('g'), true],
    ]
    for (const [name, between, kept] of cases) {
      it(`${name} -> ${kept ? 'kept' : 'refused'}`, () => {
        const c = make()
        const t = c.ticket()
        between(c)
        assert.equal(c.set('k', { v: '1' }, t), kept)
        assert.equal(c.get('k')?.v, kept ? '1' : undefined)
      })
    }
  })

  it("groups: a group message drops every key of the group and refuses only that group's fills", () => {
    const bus = fakeBus()
    const c = make({ bus, messages: 'groups' })
    fill(c, '/alice/a', { v: 'a' }, 'alice')
    fill(c, '/alice/b', { v: 'b', miss: true }, 'alice')
    fill(c, '/bob/a', { v: 'c' }, 'bob')
    const aliceTicket = c.ticket('alice')
    const bobTicket = c.ticket('bob')
    void bus.publish('test', 'alice')
    assert.equal(c.get('/alice/a'), undefined)
    assert.equal(c.get('/alice/b'), undefined)
    assert.equal(c.get('/bob/a')?.v, 'c')
    assert.equal(c.set('/alice/a', { v: 'old' }, aliceTicket, 'alice'), false)
    assert.equal(c.set('/bob/b', { v: 'ok' }, bobTicket, 'bob'), true)
    // a key that moved to another group answers to that group only
    fill(c, '/bob/a', { v: 'moved' }, 'alice')
    c.invalidateGroup('bob')
    assert.equal(c.get('/bob/a')?.v, 'moved')
    assert.equal(c.get('/bob/b'), undefined)
    void bus.publish('test', FLUSH_ALL) // the local bus delivers before publish returns
    assert.equal(c.size(), 0)
  })

  it('instances sharing a bus: a publish drops the key on every one, at once on the publisher', async () => {
    const bus = fakeBus()
    const a = make({ bus })
    const b = make({ bus })
    const other = make({ bus, channel: 'elsewhere' })
    for (const c of [a, b, other]) fill(c, 'k', { v: '1' })
    const p = a.publish('k')
    assert.equal(a.get('k'), undefined, 'the publisher drops it before the bus answers')
    await p
    assert.equal(b.get('k'), undefined)
    assert.equal(other.get('k')?.v, '1', 'another channel is not touched')
  })

  it('keysOf: one message may name several keys; a message it cannot read is ignored', () => {
    const bus = fakeBus()
    const c = make({ bus, keysOf: (m) => (JSON.parse(m) as string[]).map((k) => `x:${k}`) })
    for (const k of ['x:a', 'x:b', 'x:c']) fill(c, k, { v: k })
    const t = c.ticket()
    void bus.publish('test', 'not json')
    assert.equal(c.size(), 3)
    assert.equal(c.ticket(), t, 'an unreadable message invalidates nothing')
    void bus.publish('test', '["a","b"]')
    assert.deepEqual(
      ['x:a', 'x:b', 'x:c'].map((k) => c.get(k)?.v),
      [undefined, undefined, 'x:c'],
    )
  })

  it('caches nothing while the bus is unreliable; FLUSH_ALL drops everything', () => {
    const bus = fakeBus()
    const c = make({ bus })
    fill(c, 'a', { v: '1' })
    bus.up = false
    assert.equal(fill(c, 'b', { v: '2' }), false)
    assert.equal(c.accepts(c.ticket()), false)
    void bus.publish('test', FLUSH_ALL) // what the Redis bus sends when its subscription drops
    assert.equal(c.get('a'), undefined)
    bus.up = true
    assert.equal(fill(c, 'b', { v: '2' }), true)
  })

  it('bounds: oldest first, misses apart from entries, bytes by cost', () => {
    const c = make({ maxEntries: 2, maxMisses: 1, isMiss: (v) => v.miss === true })
    fill(c, 'a', { v: 'a' })
    fill(c, 'm1', { v: 'm1', miss: true })
    fill(c, 'b', { v: 'b' })
    fill(c, 'm2', { v: 'm2', miss: true }) // evicts m1, not an entry
    assert.deepEqual(c.stats(), { entries: 2, misses: 1, bytes: 0 })
    assert.equal(c.get('m1'), undefined)
    assert.equal(c.get('a')?.v, 'a')
    fill(c, 'c', { v: 'c' }) // evicts a
    assert.equal(c.get('a'), undefined)
    assert.equal(c.get('m2')?.v, 'm2')
    fill(c, 'b', { v: 'b2' }) // replacing a key does not evict another
    assert.deepEqual(
      ['b', 'c'].map((k) => c.get(k)?.v),
      ['b2', 'c'],
    )

    const bytes = make({ maxBytes: 100, cost: (k, v) => k.length + (v.size ?? 0) })
    fill(bytes, 'a', { v: 'a', size: 39 }) // 40
    fill(bytes, 'b', { v: 'b', size: 39 }) // 80
    fill(bytes, 'c', { v: 'c', size: 39 }) // 120: a goes
    assert.deepEqual(
      ['a', 'b', 'c'].map((k) => bytes.get(k)?.v),
      [undefined, 'b', 'c'],
    )
    assert.equal(bytes.stats().bytes, 80)
    fill(bytes, 'b', { v: 'b', size: 9 }) // replaced: counted once
    assert.equal(bytes.stats().bytes, 50)
    bytes.invalidate('c')
    assert.equal(bytes.stats().bytes, 10)
    fill(bytes, 'huge', { v: 'h', size: 500 }) // larger than the budget: nothing of it stays
    assert.equal(bytes.size(), 0)
    assert.equal(bytes.stats().bytes, 0)
  })

  it('drops an entry isFresh rejects, on sight', () => {
    const c = make({ isFresh: (v) => v.fresh !== false })
    fill(c, 'a', { v: 'a' })
    const stale = { v: 'b' } as V
    fill(c, 'b', stale)
    stale.fresh = false
    assert.equal(c.get('a')?.v, 'a')
    assert.equal(c.get('b'), undefined)
    assert.equal(c.size(), 1)
  })

  it('publish without a bus applies here only; a bus needs a channel', async () => {
    const c = make()
    fill(c, 'k', { v: '1' })
    await c.publish('k')
    assert.equal(c.get('k'), undefined)
    assert.throws(() => createInvalidatedCache({ bus: fakeBus() }))
  })
})
