import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { isWellFormed, truncate } from '../../src/util/unicode.js'
import { submissionMail } from '../../src/features/forms/notify-mail.js'

describe('truncate: a cut never leaves half a surrogate pair', () => {
  for (const [name, input, max, expected] of [
    ['shorter than the bound', 'abc', 5, 'abc'],
    ['plain text', 'abcdef', 4, 'abcd'],
    ['a cut after a whole pair', 'ab😀cd', 4, 'ab😀'],
    ['a cut inside a pair drops its first half', 'abc😀d', 4, 'abc'],
    ['a string of pairs', '😀😀😀', 5, '😀😀'],
  ] as const) {
    it(name, () => {
      const out = truncate(input, max)
      assert.equal(out, expected)
      assert.ok(isWellFormed(out))
    })
  }

  it("a mail's subject for a long emoji form name stays well-formed", () => {
    // "New submission to x" is 19 units: the 120th unit is the first half of the 51st pair
    const name = `x${'🎉'.repeat(60)}`
    const { subject } = submissionMail([
      { event: 'form.submission', form: { id: 'f', name, slug: 's' }, submission: { id: 'x', data: { a: 1 }, created_at: '2026-12-04T00:00:00Z' } },
    ])
    assert.ok(subject.length <= 120)
    assert.ok(isWellFormed(subject), 'no lone surrogate in the subject')
    assert.ok(subject.startsWith('New submission to x🎉'))
    assert.equal(subject.length, 119)
  })
})
