import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { eachTag, pageText, type Tag } from '../../src/util/html-tags.js'

const tags = (html: string): Tag[] => {
  const out: Tag[] = []
  eachTag(html, (t) => out.push(t))
  return out
}

describe("a page's tags and text as a browser's tokenizer reads them", () => {
  it('lower-cases names, decodes entities in values, keeps the first of a repeated attribute', () => {
    assert.deepEqual(tags('<FORM Action="a?x=1&amp;y=2" ID=f id=g><Input TYPE=file name=cv></form>'), [
      { name: 'form', attrs: { action: 'a?x=1&y=2', id: 'f' }, end: false },
      { name: 'input', attrs: { type: 'file', name: 'cv' }, end: false },
      { name: 'form', attrs: {}, end: true },
    ])
  })

  it('finds no tag in comments, in the text of scripts, styles and textareas, nor inside templates', () => {
    const html =
      '<!-- <input a> --><script>"<input b>"</script><style>/* <input c> */</style><textarea><input d></textarea><template><input e></template><input f>'
    assert.deepEqual(
      tags(html).filter((t) => t.name === 'input'),
      [{ name: 'input', attrs: { f: '' }, end: false }],
    )
  })

  it("a page's text: text nodes outside scripts and styles, the title's included, entities decoded", () => {
    const text = pageText('<title>Log in &amp; pay</title><script>var paypal</script><style>.x{}</style><p>Your<b>bank</b></p>')
    assert.equal(text.replace(/\s+/g, ' ').trim(), 'Log in & pay Your bank')
  })
})
