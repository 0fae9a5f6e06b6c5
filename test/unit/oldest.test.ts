import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { dropOldest, oldestKey } from '../../src/util/oldest.js'

describe('oldest entry of a Map (util/oldest.ts)', () => {
  it('evicts in insertion order across fills, deletes from anywhere, re-sets and rebuilds', () => {
    const m = new Map<number, number>()
    const model: number[] = [] // the keys in insertion order, as the Map keeps them
    let seed = 12345
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n
    let next = 0
    for (let step = 0; step < 20_000; step++) {
      const op = rand(10)
      if (op < 5 || m.size === 0) {
        m.set(next, step)
        model.push(next++)
      } else if (op < 7) {
        // a hit moved to the newest place (an LRU touch)
        const k = model[rand(model.length)]
        m.delete(k)
        m.set(k, step)
        model.splice(model.indexOf(k), 1)
        model.push(k)
      } else if (op < 8) {
        const k = model[rand(model.length)]
        m.delete(k)
        model.splice(model.indexOf(k), 1)
      } else {
        assert.equal(dropOldest(m), model.shift())
      }
      if (m.size > 300) assert.equal(dropOldest(m), model.shift())
    }
    assert.deepEqual([...m.keys()], model)
    // emptied, then filled again: the finished iterator is replaced
    while (m.size > 0) assert.equal(dropOldest(m), model.shift())
    assert.equal(oldestKey(m), undefined)
    assert.equal(dropOldest(m), undefined)
    m.set(-1, 0)
    m.set(-2, 0)
    assert.equal(dropOldest(m), -1)
    m.clear()
    m.set(-3, 0)
    assert.equal(dropOldest(m), -3)
  })

  it('keeps one cursor per map: two maps evict independently', () => {
    const a = new Map([
      ['a1', 1],
      ['a2', 2],
    ])
    const b = new Map([
      ['b1', 1],
      ['b2', 2],
    ])
    assert.equal(dropOldest(a), 'a1')
    assert.equal(dropOldest(b), 'b1')
    assert.equal(dropOldest(a), 'a2')
    assert.equal(dropOldest(b), 'b2')
  })
})
