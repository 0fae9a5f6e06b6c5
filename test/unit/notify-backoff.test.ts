import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { leaseMs, retrySchedule } from '../../src/features/forms/notify-worker.js'

const S = 1000
const HOUR = 3600 * S

describe('webhook retry backoff', () => {
  it('waits the base after the first failure, doubling with each one, at most an hour apart', () => {
    const gaps = Array.from({ length: 10 }, (_, i) => retrySchedule(0, i + 1, 30 * S, Infinity).next / S)
    assert.deepEqual(gaps, [30, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600])
    // however many tries failed, the wait stays an hour (no overflow to Infinity or NaN)
    for (const tries of [50, 1100, 1e6]) assert.equal(retrySchedule(5 * S, tries, 30 * S, Infinity).next, 5 * S + HOUR)
    // the gaps follow NOTIFY_RETRY_BASE
    assert.equal(retrySchedule(0, 3, 10, Infinity).next, 40)
  })

  it('fails a delivery whose next try would be past its deadline, and only then', () => {
    assert.deepEqual(retrySchedule(100, 1, 30, 130), { next: 130, status: 'pending' })
    assert.deepEqual(retrySchedule(100, 1, 30, 129), { next: 130, status: 'failed' })
  })

  it('with the defaults (30 s base, 24 h age), a target that never answers is tried 30 times within 24 h', () => {
    const deadline = 24 * HOUR
    const times = [0]
    for (;;) {
      const r = retrySchedule(times[times.length - 1], times.length, 30 * S, deadline)
      if (r.status === 'failed') break
      times.push(r.next)
    }
    assert.equal(times.length, 30)
    assert.deepEqual(
      times.slice(0, 9),
      [0, 30, 90, 210, 450, 930, 1890, 3810, 7410].map((t) => t * S),
    )
    assert.equal(times[times.length - 1], (3810 + 22 * 3600) * S)
    assert.ok(times[times.length - 1] + HOUR > deadline)
  })
})

describe('a delivery claim', () => {
  it('outlasts the longest try the timeouts allow, twice over, never under 2 minutes', () => {
    assert.equal(leaseMs({ webhookTimeoutMs: 10 * S, smtpTimeoutMs: 20 * S }), 120 * S)
    for (const [webhookTimeoutMs, smtpTimeoutMs] of [
      [5 * 60 * S, 20 * S],
      [10 * S, 2 * 60 * S],
      [HOUR, HOUR],
    ]) {
      const lease = leaseMs({ webhookTimeoutMs, smtpTimeoutMs })
      assert.ok(lease >= 2 * Math.max(webhookTimeoutMs, smtpTimeoutMs), `${lease} against tries of ${webhookTimeoutMs} and ${smtpTimeoutMs}`)
    }
  })
})
