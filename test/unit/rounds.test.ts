import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { rounds } from '../../src/util/rounds.js'

/** A run whose rounds finish only when the test says so; records each round. */
function gated<T>() {
  const seen: T[][] = []
  const gates: Array<() => void> = []
  const run = async (round: T[]) => {
    seen.push(round)
    await new Promise<void>((r) => gates.push(r))
    return round.map((x) => (x instanceof Error ? x : { got: x, round: seen.length }))
  }
  /** Ends the oldest running round, then lets the next one start. */
  const finish = async () => {
    gates.shift()!()
    await new Promise((r) => setImmediate(r))
  }
  return { seen, run, finish }
}

describe('rounds (util/rounds.ts)', () => {
  it('a lone call runs at once; calls made while a round runs wait and go together in the next', async () => {
    const g = gated<number>()
    const call = rounds(g.run)
    const first = call('l', 1)
    assert.deepEqual(g.seen, [[1]])
    const later = [call('l', 2), call('l', 3)]
    // a round already running is never joined: it started before these calls
    assert.deepEqual(g.seen, [[1]])
    await g.finish()
    assert.deepEqual(g.seen, [[1], [2, 3]])
    const last = call('l', 4)
    await g.finish()
    await g.finish()
    assert.deepEqual(await Promise.all([first, ...later, last]), [
      { got: 1, round: 1 },
      { got: 2, round: 2 },
      { got: 3, round: 2 },
      { got: 4, round: 3 },
    ])
  })

  it('take picks the next round; the others keep their order for later rounds, and the first always goes', async () => {
    const g = gated<number>()
    // the waiting numbers of the first one's parity; none at all when the first is 100
    const call = rounds(g.run, (waiting) => (waiting[0] === 100 ? [] : waiting.flatMap((x, i) => (x % 2 === waiting[0] % 2 ? [i] : []))))
    const all = [call('l', 1), call('l', 2), call('l', 3), call('l', 4), call('l', 5)]
    await g.finish()
    assert.deepEqual(g.seen, [[1], [2, 4]])
    await g.finish()
    assert.deepEqual(g.seen, [[1], [2, 4], [3, 5]])
    await g.finish()
    assert.equal((await Promise.all(all)).length, 5)
    const more = [call('m', 7), call('m', 100), call('m', 8)]
    await g.finish()
    assert.deepEqual(g.seen.slice(3), [[7], [100]])
    await g.finish()
    await g.finish()
    assert.deepEqual(g.seen.slice(3), [[7], [100], [8]])
    await Promise.all(more)
  })

  it('an Error answers its own call only; a throw fails the whole round and the next round still runs', async () => {
    let throwNext = false
    const call = rounds<string, string>(async (round) => {
      // whether this round fails is fixed when it starts
      const fail = throwNext
      throwNext = false
      await new Promise((r) => setImmediate(r))
      if (fail) throw new Error('whole round')
      return round.map((x) => (x === 'bad' ? new Error(`bad item`) : x.toUpperCase()))
    })
    const first = call('l', 'a')
    const second = [call('l', 'b'), call('l', 'bad'), call('l', 'c')]
    assert.equal(await first, 'A')
    assert.deepEqual(await Promise.allSettled(second).then((r) => r.map((x) => (x.status === 'fulfilled' ? x.value : (x.reason as Error).message))), [
      'B',
      'bad item',
      'C',
    ])
    const running = call('l', 'x')
    throwNext = true
    const failing = [call('l', 'd'), call('l', 'e')]
    assert.equal(await running, 'X')
    assert.deepEqual(
      (await Promise.allSettled(failing)).map((x) => (x.status === 'rejected' ? (x.reason as Error).message : x.value)),
      ['whole round', 'whole round'],
    )
    assert.equal(await call('l', 'f'), 'F')
  })

  it('lines are independent: a round running on one line does not hold back another', async () => {
    const g = gated<string>()
    const call = rounds(g.run)
    const a = call('a', 'a1')
    const b = call('b', 'b1')
    assert.deepEqual(g.seen, [['a1'], ['b1']])
    await g.finish()
    await g.finish()
    assert.deepEqual(await Promise.all([a, b]), [
      { got: 'a1', round: 2 },
      { got: 'b1', round: 2 },
    ])
  })
})
