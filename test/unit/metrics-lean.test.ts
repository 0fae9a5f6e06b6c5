import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Counter, Histogram, Registry } from 'prom-client'
import { LeanHistogram, flushHotCounts, hotCount } from '../../src/observability/registry.js'

// the hot paths' metric helpers must print what prom-client's own metrics print
describe('metrics of the hot paths (LeanHistogram, hotCount)', () => {
  const buckets = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
  const observations: [string, string, number][] = [
    ['(fast path)', 'GET', 0.00002],
    ['(fast path)', 'GET', 0.0031],
    ['(fast path)', 'HEAD', 0.002],
    ['/svc_api/me', 'GET', 0.7],
    ['/svc_api/me', 'GET', 12],
    ['/svc_api/me', 'GET', 0.01],
    ['/a"b\\c', 'POST', 0.05],
  ]

  it("renders the same Prometheus text as prom-client's Histogram for the same observations", async () => {
    const a = new Registry()
    const b = new Registry()
    const lean = new LeanHistogram('t_duration_seconds', 'help text', ['route', 'method'] as const, buckets, a)
    const ref = new Histogram({ name: 't_duration_seconds', help: 'help text', labelNames: ['route', 'method'] as const, buckets, registers: [b] })
    assert.equal(await a.metrics(), await b.metrics(), 'both empty')
    const child = lean.labels('(fast path)', 'GET')
    for (const [route, method, v] of observations) {
      if (route === '(fast path)' && method === 'GET') child.observe(v)
      else lean.observe({ route, method }, v)
      ref.observe({ route, method }, v)
    }
    assert.equal(await a.metrics(), await b.metrics())
    a.resetMetrics()
    b.resetMetrics()
    assert.equal(await a.metrics(), await b.metrics(), 'after a reset')
  })

  it('hotCount: counts kept as plain numbers reach the counter when the metrics are read, once', async () => {
    const r = new Registry()
    const c: Counter<'source'> = new Counter({
      name: 't_bytes_total',
      help: 'h',
      labelNames: ['source'] as const,
      registers: [r],
      collect: flushHotCounts,
    })
    const hot = hotCount(c, { source: 'hosting' })
    hot.n += 100
    c.inc({ source: 'other' }, 5)
    hot.n += 23
    const v = async (source: string) => (await c.get()).values.find((x) => x.labels.source === source)?.value
    assert.equal(await v('hosting'), 123)
    assert.equal(hot.n, 0)
    assert.equal(await v('hosting'), 123, 'not counted twice')
    hot.n += 1
    assert.match(await r.metrics(), /t_bytes_total\{source="hosting"\} 124/)
    assert.equal(await v('other'), 5)
  })
})
