import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createScope } from '../../src/util/scope.js'

describe('service scope (util/scope.ts)', () => {
  it('builds each factory once per scope, from the scope context, and shares that instance', () => {
    const ctx = { name: 'deps A' }
    const scope = createScope(() => ctx)
    let built = 0
    const createCounter = (c: { name: string }) => ({ of: c.name, n: ++built })
    const a = scope.get(createCounter)
    const b = scope.get(createCounter)
    assert.equal(a, b)
    assert.deepEqual(a, { of: 'deps A', n: 1 })
    assert.equal(built, 1)
    // another factory is another service
    const createOther = (c: { name: string }) => ({ other: c.name })
    assert.deepEqual(scope.get(createOther), { other: 'deps A' })
  })

  it('two scopes (two sets of deps in one process) share nothing', () => {
    const createBox = () => ({ items: [] as number[] })
    const one = createScope(() => ({}))
    const two = createScope(() => ({}))
    one.get(createBox).items.push(1)
    assert.deepEqual(two.get(createBox).items, [])
    assert.notEqual(one.get(createBox), two.get(createBox))
  })

  it('a service may use another; one that asks for itself while built throws, naming it', () => {
    type Ctx = { scope: ReturnType<typeof createScope<Ctx>> }
    const ctx = {} as Ctx
    ctx.scope = createScope(() => ctx)
    const createBase = () => ({ base: true })
    const createTop = (c: Ctx) => ({ base: c.scope.get(createBase) })
    assert.equal(ctx.scope.get(createTop).base, ctx.scope.get(createBase))
    const createLoop = (c: Ctx): unknown => c.scope.get(createLoop)
    assert.throws(() => ctx.scope.get(createLoop), /service createLoop asks for itself while it is built/)
  })

  it('a factory that throws keeps nothing: the next call builds again', () => {
    const scope = createScope(() => ({}))
    let calls = 0
    const createFlaky = () => {
      if (++calls === 1) throw new Error('not yet')
      return { calls }
    }
    assert.throws(() => scope.get(createFlaky), /not yet/)
    assert.deepEqual(scope.get(createFlaky), { calls: 2 })
    assert.equal(scope.get(createFlaky), scope.get(createFlaky))
    assert.equal(calls, 2)
  })
})
