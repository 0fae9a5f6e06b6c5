import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ifMatchHits, ifNoneMatchHits, notModified, parseEntityTags, preconditionFails } from '../../src/http/conditional.js'

describe('If-None-Match (RFC 9110 13.1.2, weak comparison)', () => {
  // [field, etag(s), matches]
  const cases: [string, string | string[], boolean][] = [
    ['"a"', '"a"', true],
    ['"a"', '"b"', false],
    ['W/"a"', '"a"', true],
    ['"a"', 'W/"a"', true],
    ['W/"a"', 'W/"a"', true],
    ['"b", "a"', '"a"', true],
    ['"b","a"', '"a"', true],
    ['"b" ,\t"a"  ', '"a"', true],
    [' "b", W/"a" ', '"a"', true],
    ['"b", "c"', '"a"', false],
    ['*', '"a"', true],
    ['  *  ', '"a"', true],
    ['"b", *', '"a"', false], // * only as the whole field
    ['*, "a"', '"a"', false],
    ['', '"a"', false],
    ['   ', '"a"', false],
    [',,', '"a"', false],
    ['a', '"a"', false], // unquoted
    ['a, "a"', '"a"', true], // a malformed member does not hide the next one
    ['"a', '"a"', false], // unterminated
    ['"a"x, "b"', '"b"', true],
    ['"a"x', '"a"', true], // trailing junk after a complete tag
    ['"x,y"', '"x,y"', true], // a comma inside a tag belongs to it
    ['"x,y"', '"x"', false],
    ['"x", "y"', '"x,y"', false],
    ['"abc"', '"ab"', false], // no prefix or substring matches
    ['"ab"', '"abc"', false],
    ['"abc-gz"', '"abc"', false],
    ['"ABC"', '"abc"', false], // case-sensitive
    ['w/"a"', '"a"', false], // the weak prefix is case-sensitive
    ['""', '""', true],
    // several tags of one content (the public host: identity, br, gzip)
    ['"d-gz"', ['"d"', '"d-br"', '"d-gz"'], true],
    ['W/"d-br", "x"', ['"d"', '"d-br"', '"d-gz"'], true],
    ['"e"', ['"d"', '"d-br"', '"d-gz"'], false],
    ['"d"', [], false],
  ]
  for (const [field, etags, want] of cases) {
    it(`${JSON.stringify(field)} vs ${JSON.stringify(etags)} -> ${want}`, () => assert.equal(ifNoneMatchHits(field, etags), want))
  }
})

describe('notModified (If-None-Match, else If-Modified-Since)', () => {
  const lm = Date.UTC(2026, 0, 15, 4, 0, 0) / 1000
  const at = (s: number) => new Date(s * 1000).toUTCString()
  // [If-None-Match, If-Modified-Since, lastModifiedSec, 304?]
  const cases: [string | undefined, string | undefined, number | undefined, boolean][] = [
    [undefined, undefined, lm, false],
    ['"a"', undefined, lm, true],
    ['"b"', undefined, lm, false],
    [undefined, at(lm), lm, true],
    [undefined, at(lm + 60), lm, true],
    [undefined, at(lm - 1), lm, false],
    [undefined, 'not a date', lm, false],
    [undefined, at(lm), undefined, false], // no Last-Modified: If-Modified-Since means nothing
    ['"b"', at(lm + 60), lm, false], // If-None-Match present: If-Modified-Since is ignored
    ['"a"', at(lm - 60), lm, true],
  ]
  for (const [inm, ims, sec, want] of cases) {
    it(`${inm} / ${ims} / ${sec} -> ${want}`, () => assert.equal(notModified(inm, ims, '"a"', sec), want))
  }
})

describe('If-Match / If-None-Match of a write (parseEntityTags)', () => {
  const cases: [string, ReturnType<typeof parseEntityTags>][] = [
    ['*', '*'],
    [' * ', '*'],
    ['"3"', [{ tag: '"3"', weak: false }]],
    ['W/"3"', [{ tag: '"3"', weak: true }]],
    [
      '"a,b" , W/"c",, ""',
      [
        { tag: '"a,b"', weak: false },
        { tag: '"c"', weak: true },
        { tag: '""', weak: false },
      ],
    ],
    ['3', null],
    ['"3" "4"', null],
    ['*, "3"', null],
    ['"3', null],
    ['', null],
    [', ,', null],
  ]
  for (const [field, want] of cases) it(`${JSON.stringify(field)}`, () => assert.deepEqual(parseEntityTags(field), want))
})

describe('If-Match (RFC 9110 13.1.1, strong comparison)', () => {
  const cases: [string, string | string[], boolean][] = [
    ['"a"', '"a"', true],
    ['"b"', '"a"', false],
    ['"b", "a"', '"a"', true],
    ['*', '"a"', true],
    ['W/"a"', '"a"', false], // a weak tag never matches strongly
    ['W/"a", "a"', '"a"', true],
    ['"a"', 'W/"a"', true], // the current tag's own prefix is the server's: ignored as for If-None-Match
    ['"d-br"', ['"d"', '"d-br"', '"d-gz"'], true],
    ['"e"', ['"d"', '"d-br"', '"d-gz"'], false],
    ['', '"a"', false],
    ['a', '"a"', false],
  ]
  for (const [field, etags, want] of cases) {
    it(`${JSON.stringify(field)} vs ${JSON.stringify(etags)} -> ${want}`, () => assert.equal(ifMatchHits(field, etags), want))
  }
})

describe('preconditionFails (If-Match, else If-Unmodified-Since)', () => {
  const lm = Date.UTC(2026, 0, 15, 4, 0, 0) / 1000
  const at = (s: number) => new Date(s * 1000).toUTCString()
  // [If-Match, If-Unmodified-Since, lastModifiedSec, 412?]
  const cases: [string | undefined, string | undefined, number | undefined, boolean][] = [
    [undefined, undefined, lm, false],
    ['"a"', undefined, lm, false],
    ['"b"', undefined, lm, true],
    ['*', undefined, lm, false],
    [undefined, at(lm), lm, false],
    [undefined, at(lm + 60), lm, false],
    [undefined, at(lm - 1), lm, true],
    [undefined, 'not a date', lm, false],
    [undefined, at(lm - 60), undefined, false], // no Last-Modified: If-Unmodified-Since means nothing
    ['"a"', at(lm - 60), lm, false], // If-Match present: If-Unmodified-Since is ignored
    ['"b"', at(lm + 60), lm, true],
  ]
  for (const [im, ius, sec, want] of cases) {
    it(`${im} / ${ius} / ${sec} -> ${want}`, () => assert.equal(preconditionFails(im, ius, '"a"', sec), want))
  }
})
