import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { escapeHtml } from '../../src/util/html.js'
import { html } from '../../src/web/html.js'

describe('escapeHtml (the one implementation)', () => {
  const cases: [string, string][] = [
    ['', ''],
    ['plain text 123', 'plain text 123'],
    ['&', '&amp;'],
    ['<', '&lt;'],
    ['>', '&gt;'],
    ['"', '&quot;'],
    ["'", '&#39;'],
    ['&amp;', '&amp;amp;'],
    ['<script>alert("x")</script>', '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'],
    ['a=\'b\' & c="d"', 'a=&#39;b&#39; &amp; c=&quot;d&quot;'],
    ['`backtick` stays', '`backtick` stays'],
    ['中文 ünïcode', '中文 ünïcode'],
  ]
  for (const [input, want] of cases) {
    it(JSON.stringify(input), () => assert.equal(escapeHtml(input), want))
  }

  it('is what the page templates use', () => {
    const v = `<&>"'`
    assert.equal(html`${v}`.value, escapeHtml(v))
  })
})
