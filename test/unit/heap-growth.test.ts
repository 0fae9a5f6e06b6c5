import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { heapGrowth, HEAP_GROWING_PERCENT } from '../../src/server.js'

// decision 342: svc serve sets V8's heap growing factor unless node's command line gave one
describe('heapGrowth: the V8 flag svc serve runs with', () => {
  it("is svc's own when node was started without one", () => {
    assert.deepEqual(heapGrowth([]), { flag: `--heap-growing-percent=${HEAP_GROWING_PERCENT}`, own: false })
    assert.deepEqual(heapGrowth(['--enable-source-maps', '--max-old-space-size=512', '--heap-growing']), {
      flag: '--heap-growing-percent=100',
      own: false,
    })
  })
  it("is the command line's, with dashes or underscores", () => {
    assert.deepEqual(heapGrowth(['--heap-growing-percent=50']), { flag: '--heap-growing-percent=50', own: true })
    assert.deepEqual(heapGrowth(['--expose-gc', '--heap_growing_percent=30']), { flag: '--heap_growing_percent=30', own: true })
  })
})
