import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { netlifyRules } from '../../src/cli/client/netlify-toml.js'

describe("netlify.toml's rules as _redirects and _headers lines", () => {
  it('reads TOML as Netlify writes it: sub-tables, multi-line arrays of tables, literal strings', () => {
    const text = `[build]
publish = "dist"

[[redirects]]
from = '/store'
to = "/blog/:id"
status = 302
  [redirects.query]
  id = ":id"

[[headers]]
for = "/*"
  [headers.values]
  X-Frame-Options = "DENY"
  "Content-Security-Policy" = """default-src 'self'"""

[[redirects]]
from = "/proxy/*"
to = "https://api.example.com/:splat"
status = 200
  [redirects.headers]
  X-From = "Netlify"
`
    const r = netlifyRules(text, 'netlify.toml')
    assert.deepEqual(r, {
      file: 'netlify.toml',
      redirects: ['/store id=:id /blog/:id 302'],
      headers: ['/*', '  X-Frame-Options: DENY', "  Content-Security-Policy: default-src 'self'"],
      // a redirect's own headers: no _redirects line says them
      byHand: 1,
    })
  })

  it('a value no line can hold makes its rule one to write by hand', () => {
    const text = `[[redirects]]
from = "/a"
to = """/b
/c"""
[[headers]]
for = "/x"
  [headers.values]
  X-Count = 3
[[redirects]]
from = "/ok"
to = "/fine"
`
    assert.deepEqual(netlifyRules(text, 'f'), { file: 'f', redirects: ['/ok /fine 301'], headers: [], byHand: 2 })
  })

  it("a rule holding a terminal's control characters is one to write by hand, never a line (331)", () => {
    // TOML's \u escapes put an escape sequence in a cloned repository's file: written to the
    // terminal as a line, it would retitle the window, hide text or worse
    const text = `[[redirects]]
from = "/a\\u001b]0;owned\\u0007"
to = "/b"
[[redirects]]
from = "/c"
to = "/d\\u009b2J"
[[headers]]
for = "/x"
  [headers.values]
  X-Note = "fine\\u001b[8m hidden"
[[redirects]]
from = "/ok"
to = "/fine"
`
    const r = netlifyRules(text, 'f')
    assert.deepEqual(r, { file: 'f', redirects: ['/ok /fine 301'], headers: [], byHand: 3 })
  })

  it('a file that is not TOML, or holds no rule, gives nothing to say', () => {
    assert.equal(netlifyRules('[[redirects]\nfrom = "/a"', 'f'), null)
    assert.equal(netlifyRules('[build]\ncommand = "npm run build"\n', 'f'), null)
  })
})
