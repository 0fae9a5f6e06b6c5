import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { builtForRoot, escapeHtml, fileInputsSentAsNames, rootResources } from '../../src/util/html.js'
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

// Which files a page loads from the root of its origin: the test of a site built for / (decision 75).
describe('rootResources', () => {
  const cases: Array<[string, string, string[]]> = [
    [
      "Vite's default build",
      '<script type="module" crossorigin src="/assets/index-a1.js"></script><link rel="stylesheet" crossorigin href="/assets/index-b2.css">',
      ['/assets/index-a1.js', '/assets/index-b2.css'],
    ],
    [
      'a module preload and a preload; not an icon or a manifest, which the page works without',
      '<link rel="icon" href="/favicon.svg"><link rel=manifest href=/app.webmanifest><link rel="modulepreload" href="/m.js"><link rel=preload as=font href="/f.woff2">',
      ['/m.js', '/f.woff2'],
    ],
    ['images and media, query and fragment dropped', '<img alt="x" src=/logo.png?v=2><video src="/v.mp4#t=1"></video>', ['/logo.png', '/v.mp4']],
    ['single quotes, upper case', "<SCRIPT SRC='/a.js'></SCRIPT>", ['/a.js']],
    ['links to /, which load nothing', '<a href="/">home</a><a href="/about/">about</a><form action="/x"></form>', []],
    ['links that only point', '<link rel="canonical" href="/blog/"><link rel="alternate" type="application/rss+xml" href="/feed.xml">', []],
    ['relative and scheme-relative files', '<script src="./assets/a.js"></script><script src="//cdn.example.net/x.js"></script><img src="logo.png">', []],
    ['absolute URLs', '<script src="https://example.net/x.js"></script>', []],
    ['the root itself', '<link rel="stylesheet" href="/">', []],
    ['each path once', '<img src="/a.png"><img src="/a.png">', ['/a.png']],
    [
      'Angular\'s default build: relative files under <base href="/">',
      '<base href="/"><link rel="icon" href="favicon.ico"><link rel="stylesheet" href="styles-5I.css"><script src="polyfills-FF.js" type="module"></script><script src="main-AB.js" type="module"></script>',
      ['/styles-5I.css', '/polyfills-FF.js', '/main-AB.js'],
    ],
    [
      "Flutter's: an unquoted base, a later attribute",
      "<base target=_self href=/><script src='flutter_bootstrap.js?v=1' async></script>",
      ['/flutter_bootstrap.js'],
    ],
    ['a base under a subpath', '<base href="/app/"><script src="main.js"></script><img src="../logo.png">', ['/app/main.js', '/logo.png']],
    [
      'a root-absolute base leaves other origins and inline data out',
      '<base href="/"><script src="//cdn.example.net/x.js"></script><script src="https://example.net/y.js"></script><img src="data:image/png;base64,AA"><img src="#x">',
      [],
    ],
    [
      'only the first base counts: a relative one keeps relative files relative',
      '<base href="./"><script src="a.js"></script><base href="/"><script src="b.js"></script>',
      [],
    ],
    ['an absolute base', '<base href="https://cdn.example.net/"><script src="a.js"></script>', []],
  ]
  for (const [name, html, want] of cases) it(name, () => assert.deepEqual(rootResources(`<!doctype html><html><head>${html}</head></html>`), want))

  it('names at most eight files, in order', () => {
    const html = Array.from({ length: 20 }, (_, i) => `<img src="/i${i}.png">`).join('')
    assert.deepEqual(
      rootResources(html),
      Array.from({ length: 8 }, (_, i) => `/i${i}.png`),
    )
  })
})

describe('builtForRoot', () => {
  const page = '<link rel="stylesheet" href="/theme.css"><script type="module" src="/assets/app.js"></script>'
  it('is true when the site has one of the files its page loads from /', async () => {
    assert.equal(await builtForRoot(page, (p) => p === '/assets/app.js'), true)
  })
  it('is false when it has none of them (shared files of the user at /)', async () => {
    const asked: string[] = []
    assert.equal(
      await builtForRoot(page, async (p) => {
        asked.push(p)
        return false
      }),
      false,
    )
    assert.deepEqual(asked, ['/theme.css', '/assets/app.js'])
  })
  it('is false for a page that loads nothing from /', async () => {
    assert.equal(await builtForRoot('<a href="/">home</a>', () => true), false)
  })
})

describe('fileInputsSentAsNames', () => {
  const forms = (h: string) => fileInputsSentAsNames(h).map((f) => `${f.form} ${f.input}${f.get ? ' get' : ''}`)
  it('names a form by its id, name or action, else its place; the input by its name', () => {
    assert.deepEqual(
      forms(
        '<form><input></form><FORM METHOD=POST ACTION=/up><INPUT TYPE=FILE NAME=cv></FORM><form method="post" name="a" id="b"><input type=\'file\'></form>',
      ),
      ['action="/up" name="cv"', 'id="b" a file input'],
    )
    assert.deepEqual(forms('<p><form method="post"><input type="file" name="x">'), ['form 1 name="x"'], 'a form never closed')
  })
  it('a form without a method is sent by GET, whatever its enctype', () => {
    assert.deepEqual(forms('<form enctype="multipart/form-data"><input type="file" name="x"></form>'), ['form 1 name="x" get'])
  })
  it('multipart by the form or a button of it is sent whole; a file input of another form does not count', () => {
    assert.deepEqual(forms('<form method="post" enctype="Multipart/Form-Data"><input type="file"></form>'), [])
    assert.deepEqual(forms('<form method="post"><input type="file"><button formenctype="multipart/form-data">Up</button></form>'), [])
    assert.deepEqual(forms('<form method="post"><input name="q"></form><input type="file" name="loose">'), [])
  })
  it('skips comments, scripts and templates', () => {
    assert.deepEqual(
      forms(
        '<!-- <form method="post"><input type="file"></form> --><script>"<form method=post><input type=file>"</script><template><form><input type="file"></form></template>',
      ),
      [],
    )
  })
  it('warns of a Netlify form as of any other (svc forms take its files once it sends them)', () => {
    assert.deepEqual(forms('<form name="c" method="POST" netlify><input type="file" name="f"></form>'), ['name="c" name="f"'])
    assert.deepEqual(forms('<form method="post"><input type="hidden" name="form-name" value="c"><input type="file"></form>'), ['form 1 a file input'])
    assert.deepEqual(forms('<form method="post" data-netlify-honeypot="x"><input type="file"></form>'), ['form 1 a file input'])
  })
})
