import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { csvCell, toCsv } from '../../src/util/csv.js'

// one rule for every CSV the service and the CLI write (form exports, the audit log)
describe('CSV cells', () => {
  const rows: Array<[what: string, value: unknown, cell: string]> = [
    ['plain text', 'hello', 'hello'],
    ['a formula', '=1+1', "'=1+1"],
    ['a formula with a quote and comma', '=HYPERLINK("x","y")', `"'=HYPERLINK(""x"",""y"")"`],
    ['starts with +', '+cmd|x', "'+cmd|x"],
    ['starts with -', '-2+3', "'-2+3"],
    ['starts with @', '@SUM(A1)', "'@SUM(A1)"],
    ['starts with a tab', '\t=1', "'\t=1"],
    ['starts with CR', '\r=1', `"'\r=1"`],
    ['starts with LF', '\n=1', `"'\n=1"`],
    ['full-width =', '\uFF1D1+1', "'\uFF1D1+1"],
    ['full-width +', '\uFF0B1', "'\uFF0B1"],
    ['full-width -', '\uFF0D1', "'\uFF0D1"],
    ['full-width @', '\uFF20x', "'\uFF20x"],
    ['a negative number as text', '-3', '-3'],
    ['a signed decimal as text', '+1.5', '+1.5'],
    ['a number', -2, '-2'],
    ['a boolean', true, 'true'],
    ['null', null, ''],
    ['undefined', undefined, ''],
    ['an array', ['a', 'b'], 'a; b'],
    ['an array starting with a formula', ['=1', 'b'], "'=1; b"],
    ['a quote inside', 'say "hi"', '"say ""hi"""'],
    ['a line break inside', 'a\nb', '"a\nb"'],
    ['surrounding spaces', ' x ', '" x "'],
    ['Chinese text', '你好，世界', '你好，世界'],
  ]
  for (const [what, value, cell] of rows) it(what, () => assert.equal(csvCell(value), cell))

  it('rows end with CRLF; no rows, no text', () => {
    assert.equal(
      toCsv([
        ['a', 1],
        ['=b', null],
      ]),
      "a,1\r\n'=b,\r\n",
    )
    assert.equal(toCsv([]), '')
  })
})
