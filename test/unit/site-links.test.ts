import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { builtForRoot, bundlerSource, linkLines } from '../../src/cli/client/site-links.js'

// svc deploy's URLs: which one it says to open, from how the folder's index.html loads its files.
describe('svc deploy: the URL to open', () => {
  let dir: string
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-links-'))
  })
  after(() => fs.rmSync(dir, { recursive: true, force: true }))

  const pages: Array<[string, string | null, boolean]> = [
    ["Vite's default build", '<script type="module" crossorigin src="/assets/index-a1.js"></script>', true],
    ['a root-absolute stylesheet', "<link rel=stylesheet href='/style.css'>", true],
    ['an unquoted root-absolute src', '<img src=/logo.png>', true],
    ['a root-absolute file the folder does not have', '<link rel="stylesheet" href="/theme.css">', false],
    ['a link to /', '<a href="/">home</a>', false],
    ['a path out of the folder', '<script src="/../outside.js"></script>', false],
    ['a relative build', '<script type="module" src="./assets/index-a1.js"></script>', false],
    ['a scheme-relative CDN script', '<script src="//cdn.example.net/x.js"></script>', false],
    ['an absolute URL', '<a href="https://example.net/">x</a>', false],
    ['Angular\'s default build: relative files under <base href="/">', '<base href="/"><script src="main-a1.js" type="module"></script>', true],
    ['relative files under a relative base', '<base href="./"><script src="main-a1.js" type="module"></script>', false],
    ['no index.html', null, false],
  ]
  for (const [name, html, want] of pages)
    it(`${name} -> ${want ? 'built for /' : 'not built for /'}`, async () => {
      const d = fs.mkdtempSync(path.join(dir, 'site-'))
      if (html !== null) fs.writeFileSync(path.join(d, 'index.html'), `<!doctype html><html><head>${html}</head></html>`)
      // the files the pages above load, where the folder has them
      for (const f of ['assets/index-a1.js', 'style.css', 'logo.png', 'main-a1.js']) {
        fs.mkdirSync(path.dirname(path.join(d, f)), { recursive: true })
        fs.writeFileSync(path.join(d, f), 'x')
      }
      fs.writeFileSync(path.join(dir, 'outside.js'), 'x')
      assert.equal(await builtForRoot(d), want)
    })

  it("a relative site whose 404.html loads files from / (SvelteKit's fallback) -> built for /", async () => {
    const d = fs.mkdtempSync(path.join(dir, 'site-'))
    fs.mkdirSync(path.join(d, '_app'))
    fs.writeFileSync(path.join(d, '_app', 'start.js'), 'x')
    fs.writeFileSync(path.join(d, 'index.html'), '<!doctype html><link href="./_app/start.js" rel="modulepreload">')
    assert.equal(await builtForRoot(d), false, 'the pages alone work under a path')
    fs.writeFileSync(path.join(d, '404.html'), '<!doctype html><link href="/_app/start.js" rel="modulepreload">')
    assert.equal(await builtForRoot(d), true)
    // a 404 page without an index is no site to open
    fs.rmSync(path.join(d, 'index.html'))
    assert.equal(await builtForRoot(d), false)
  })

  const urls = {
    website_url: 'https://localhost:8443/alice/blog/',
    site_url: 'http://alice.localhost:8080/blog/',
    origin_url: 'http://blog.alice.localhost:8080/',
  }
  it("a site built for / opens at the project's own origin, then names the others", () => {
    assert.deepEqual(linkLines('published', { ...urls, built_for_root: true }), [
      'published: http://blog.alice.localhost:8080/',
      '  (the site loads files from /: browsers opening http://alice.localhost:8080/blog/ are sent here)',
      '  for scripts: https://localhost:8443/alice/blog/ (browsers are sent to http://blog.alice.localhost:8080/)',
    ])
  })
  it("any other site opens under its user's origin, and names its own origin", () => {
    assert.deepEqual(linkLines('published', { ...urls, built_for_root: false }), [
      'published: http://alice.localhost:8080/blog/',
      '  at the root of its own origin: http://blog.alice.localhost:8080/ (for sites built for /)',
      '  for scripts: https://localhost:8443/alice/blog/ (browsers are sent to http://alice.localhost:8080/blog/)',
    ])
  })
  it('a site built for / whose name can have no origin says how to get one', () => {
    const lines = linkLines('published', { ...urls, origin_url: null, built_for_root: true })
    assert.equal(lines[0], 'published: http://alice.localhost:8080/blog/')
    assert.match(lines[1], /loads files from \/.*lowercase letters, digits and -/)
  })
  it('without a content domain, the path form is the one URL', () => {
    assert.deepEqual(linkLines('published', { website_url: urls.website_url, site_url: null, origin_url: null, built_for_root: true }), [
      'published: https://localhost:8443/alice/blog/',
    ])
  })
})

describe("bundlerSource: the folder's own text in the error", () => {
  it('shows control characters as ? and cuts a long build script, so a cloned repository cannot act on the terminal', async () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bundler-'))
    try {
      const build = `\u001b]0;owned\u0007; vite build \u009b31m${'x'.repeat(200)}`
      fs.writeFileSync(path.join(d, 'package.json'), JSON.stringify({ scripts: { build } }))
      fs.writeFileSync(path.join(d, 'index.html'), '<script type="module" src="/src/main&#27;[2J.js"></script>')
      fs.mkdirSync(path.join(d, 'src'))
      fs.writeFileSync(path.join(d, 'src', 'main\u001b[2J.js'), 'x')
      const r = await bundlerSource(d)
      assert.ok(r !== null)
      assert.equal(r.vite, true)
      assert.doesNotMatch(r.why, /[\u0000-\u001f\u007f-\u009f]/)
      // at most 80 characters of the script: 79 and an ellipsis
      const shown = '?]0;owned?; vite build ?31m'
      assert.equal(r.why, `package.json's build script "${shown}${'x'.repeat(79 - shown.length)}…", and index.html loads /src/main?[2J.js`)
    } finally {
      fs.rmSync(d, { recursive: true, force: true })
    }
  })
})
