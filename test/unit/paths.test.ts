import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { checkRelativePath, MAX_DEPTH, MAX_PATH_BYTES, MAX_SEGMENT_BYTES } from '../../src/features/sites/paths.js'

// One table for the path validator, with plain ASCII paths (the fast route: structure only) and
// their non-plain twins (a space, a non-ASCII letter), which take the full route: both routes
// must give the same answer for the same structural fault.
describe('checkRelativePath', () => {
  const seg = (n: number) => 'a'.repeat(n)
  const cases: Array<[name: string, input: string, expect: string | { path: string; segments: string[] }]> = [
    ['a plain path', 'f1/page-1.html', { path: 'f1/page-1.html', segments: ['f1', 'page-1.html'] }],
    ['the same with a space', 'f1/page 1.html', { path: 'f1/page 1.html', segments: ['f1', 'page 1.html'] }],
    ['tilde, underscore, dots inside names', '~x/_a.b-c/.well-known/y', { path: '~x/_a.b-c/.well-known/y', segments: ['~x', '_a.b-c', '.well-known', 'y'] }],
    ['NFD spelling, stored as NFC', 'cafe\u0301.html', { path: 'caf\u00e9.html', segments: ['caf\u00e9.html'] }],
    ['absolute', '/a/b', 'absolute path'],
    ['absolute, non-plain', '/a b', 'absolute path'],
    ['empty segment', 'a//b', 'empty path segment'],
    ['empty segment, non-plain', 'a b//c', 'empty path segment'],
    ['trailing slash', 'a/', 'empty path segment'],
    ['dot segment', 'a/./b', 'dot segment ("." or "..")'],
    ['parent segment', '../a', 'dot segment ("." or "..")'],
    ['parent segment at the end', 'a/..', 'dot segment ("." or "..")'],
    ['parent segment, non-plain', '\u00e9/../a', 'dot segment ("." or "..")'],
    ['a lone dot', '.', 'dot segment ("." or "..")'],
    ['segment too long', seg(MAX_SEGMENT_BYTES + 1), `path segment longer than ${MAX_SEGMENT_BYTES} bytes`],
    ['segment at the limit', seg(MAX_SEGMENT_BYTES), { path: seg(MAX_SEGMENT_BYTES), segments: [seg(MAX_SEGMENT_BYTES)] }],
    ['segment too long in UTF-8', '\u00e9'.repeat(128), `path segment longer than ${MAX_SEGMENT_BYTES} bytes`],
    ['too deep', Array.from({ length: MAX_DEPTH + 1 }, () => 'd').join('/'), `path deeper than ${MAX_DEPTH} levels`],
    ['too long', Array.from({ length: 5 }, () => seg(250)).join('/'), `path longer than ${MAX_PATH_BYTES} bytes`],
    ['too long, non-plain', Array.from({ length: 5 }, () => seg(249) + ' ').join('/'), `path longer than ${MAX_PATH_BYTES} bytes`],
    ['backslash', 'a\\b', 'backslash'],
    ['drive prefix', 'C:/x', 'drive prefix'],
    ['percent sequence', 'a%2e.html', 'a %XX sequence in a name (rename it: its URL would read as another name)'],
    ['NUL', 'a\u0000b', 'control character (NUL, C0 or C1)'],
    ['bidi override', 'a\u202eb', 'invisible Unicode format character'],
    // the joiners writing needs, inside a word of another script, and nowhere else
    ['a Persian name with ZWNJ', 'درباره\u200cما.html', { path: 'درباره\u200cما.html', segments: ['درباره\u200cما.html'] }],
    ['a Devanagari conjunct with ZWJ', 'नमस्\u200dते/a.txt', { path: 'नमस्\u200dते/a.txt', segments: ['नमस्\u200dते', 'a.txt'] }],
    ['an emoji ZWJ sequence', '\u{1f469}\u200d\u{1f4bb}.png', { path: '\u{1f469}\u200d\u{1f4bb}.png', segments: ['\u{1f469}\u200d\u{1f4bb}.png'] }],
    ['ZWNJ between ASCII letters', 'ab\u200ccd.html', 'invisible Unicode format character'],
    ['ZWNJ before the extension', 'ما\u200c.html', 'invisible Unicode format character'],
    ['ZWJ starting a name', '\u200dما', 'invisible Unicode format character'],
    ['two joiners in a row', 'ما\u200c\u200cما', 'invisible Unicode format character'],
    ['a joiner next to a bidi override', 'ما\u200d\u202eما', 'invisible Unicode format character'],
    ['zero-width space between letters', 'ما\u200bما', 'invisible Unicode format character'],
    ['fullwidth dots and slash', '\uff0e\uff0e\uff0fx', 'slash look-alike character'],
    ['fullwidth dot segment', 'a/\uff0e\uff0e/b', 'look-alike of a path separator or dot segment'],
    ['empty', '', 'empty path'],
  ]
  for (const [name, input, expect] of cases) {
    it(name, () => {
      const r = checkRelativePath(input)
      if (typeof expect === 'string') {
        assert.equal(r.ok, false)
        if (!r.ok) {
          assert.equal(r.reason.en, expect)
          assert.match(r.reason.zh, /[\u4e00-\u9fff]/, 'the reason in Chinese too')
        }
      } else assert.deepEqual(r, { ok: true, ...expect })
    })
  }
  it('refuses what is not a string', () => {
    for (const v of [undefined, null, 3, ['a'], { a: 1 }]) assert.deepEqual(checkRelativePath(v), { ok: false, reason: { en: 'empty path', zh: '路径为空' } })
  })
})
