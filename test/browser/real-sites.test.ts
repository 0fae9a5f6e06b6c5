import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload, type BatchFile } from '../support/hosting.js'
import { openBrowser, type BrowserLease, watchErrors } from '../support/browser.js'

// Sites as the common generators write them, opened in Chromium at the URLs people share:
// what a visitor sees must be what the same build shows on Netlify or GitHub Pages.
const engine = ENGINES[0]

async function deploy(s: TestServer, key: string, project: string, files: BatchFile[]): Promise<void> {
  const r = await batchUpload(s, { key }, project, files)
  assert.equal(r.status, 200, r.text)
  const p = await s.post(`/api/folders/${project}/publish`, { key })
  assert.equal(p.status, 200, p.text)
}

/**
 * Angular's default build (and Flutter web's): `<base href="/">`, then relative file names,
 * which the browser resolves from the root of the origin; the router falls back to index.html.
 */
const ANGULAR: BatchFile[] = [
  {
    filename: 'index.html',
    data: `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>loading</title><base href="/">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="styles-5INURTSO.css"></head>
<body><app-root></app-root>
<script src="polyfills-FFHMD2TL.js" type="module"></script><script src="main-ABC123.js" type="module"></script></body></html>`,
  },
  { filename: 'styles-5INURTSO.css', data: 'app-root { color: rgb(1, 2, 3); }' },
  { filename: 'polyfills-FFHMD2TL.js', data: 'globalThis.polyfilled = true' },
  {
    filename: 'main-ABC123.js',
    data: `const root = document.querySelector('app-root')
root.textContent = 'route ' + location.pathname + (globalThis.polyfilled ? ' polyfilled' : '') + ' ' + getComputedStyle(root).color
document.title = 'ready'`,
  },
  { filename: '_redirects', data: '/* /index.html 200\n' },
]

/**
 * A Persian blog as a generator writes it from its titles: page and folder names with the
 * zero-width non-joiner (U+200C) the language spells its words with, linked relatively.
 */
const ABOUT = 'درباره\u200cما'
const POSTS = 'نوشته\u200cها'
const PERSIAN: BatchFile[] = [
  {
    path: 'index.html',
    data: `<!doctype html><html lang="fa" dir="rtl"><meta charset="utf-8"><title>خانه</title><link rel="icon" href="data:,">
<a id="about" href="${ABOUT}.html">درباره ما</a> <a id="posts" href="${POSTS}/">نوشته‌ها</a>`,
  },
  { path: `${ABOUT}.html`, data: `<!doctype html><meta charset="utf-8"><title>${ABOUT}</title><link rel="icon" href="data:,"><h1>${ABOUT}</h1>` },
  { path: `${POSTS}/index.html`, data: `<!doctype html><meta charset="utf-8"><title>${POSTS}</title><link rel="icon" href="data:,"><h1>${POSTS}</h1>` },
].map(({ path, data }) => ({ filenameStar: encodeURIComponent(path), data }))

/** The files of a fixture tree under test/fixtures (tests run from the repository's root or dist/). */
function fixtureTree(name: string): BatchFile[] {
  let dir = path.dirname(new URL(import.meta.url).pathname)
  while (!fs.existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir)
  const root = path.join(dir, 'test', 'fixtures', name)
  return fs
    .readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((rel) => fs.statSync(path.join(root, rel)).isFile())
    .map((rel) => ({ filename: rel.split(path.sep).join('/'), data: fs.readFileSync(path.join(root, rel)) }))
}

let browser: BrowserLease
before(async () => {
  browser = await openBrowser()
})
after(async () => {
  await browser?.close()
})

describe(`real-world builds in Chromium [${engine}]`, () => {
  let s: TestServer
  let username: string
  let port: string
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    const user = await s.user()
    username = user.username
    port = new URL(s.httpUrl).port
    await deploy(s, user.key, 'ng', ANGULAR)
    await deploy(s, user.key, 'fa', PERSIAN)
    // a Hugo theme that joins the base URL (/blog/) and a path with `{{ .Site.BaseURL }}/css/...`
    await deploy(s, user.key, 'blog', fixtureTree('ssg/hugo-base-slash'))
  })
  after(async () => {
    await s?.close()
  })

  it('an app built for / with <base href="/"> (Angular, Flutter) opens from every URL at its own origin', async () => {
    const own = `http://ng.${username}.localhost:${port}`
    for (const [from, to] of [
      [`http://${username}.localhost:${port}/ng/`, `${own}/`],
      [`http://${username}.localhost:${port}/ng/heroes/7?tab=2`, `${own}/heroes/7?tab=2`],
      [`${s.url}/${username}/ng/`, `${own}/`],
    ]) {
      const ctx = await browser.newContext({ ignoreHTTPSErrors: true })
      try {
        const page = await ctx.newPage()
        const errors = watchErrors(page)
        const res = await page.goto(from)
        assert.equal(res?.status(), 200, from)
        assert.equal(page.url(), to, from)
        await page.waitForFunction(() => document.title === 'ready', null, { timeout: 15_000 })
        assert.equal(await page.locator('app-root').textContent(), `route ${new URL(to).pathname} polyfilled rgb(1, 2, 3)`, from)
        assert.deepEqual(errors, [], `${from}: no console errors, page errors or failed requests`)
      } finally {
        await ctx.close()
      }
    }
  })

  it('a theme whose URLs hold a double slash after the base (/blog//css/main.css) loads its CSS, script and pages through the merged path (decision 111)', async () => {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true })
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(page)
      const home = `http://${username}.localhost:${port}/blog/`
      assert.equal((await page.goto(home))?.status(), 200)
      await page.waitForFunction(() => document.documentElement.dataset.js === 'ran', null, { timeout: 15_000 })
      assert.equal(await page.evaluate(() => getComputedStyle(document.body).color), 'rgb(1, 2, 3)')
      const [res] = await Promise.all([page.waitForNavigation(), page.click('#about')])
      assert.equal(res?.status(), 200)
      // /blog//about/ is sent to the merged path, where the page's relative links resolve as built
      assert.equal(page.url(), `http://${username}.localhost:${port}/blog/about/`)
      assert.equal(await page.locator('h1').textContent(), 'About')
      assert.equal(await page.evaluate(() => getComputedStyle(document.body).color), 'rgb(1, 2, 3)')
      const feed = await page.evaluate(async () => {
        const r = await fetch('/blog//index.xml')
        return `${r.status} ${r.headers.get('content-type')}`
      })
      assert.equal(feed, '200 application/xml')
      assert.deepEqual(errors, [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it('a site whose page and folder names carry the joiners its language needs (Persian ZWNJ) is deployed and browsed', async () => {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true })
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(page)
      const home = `http://${username}.localhost:${port}/fa/`
      assert.equal((await page.goto(home))?.status(), 200)
      for (const [link, title] of [
        ['#about', ABOUT],
        ['#posts', POSTS],
      ]) {
        const [res] = await Promise.all([page.waitForNavigation(), page.click(link)])
        assert.equal(res?.status(), 200, title)
        assert.equal(await page.title(), title)
        assert.equal(await page.locator('h1').textContent(), title)
        await page.goBack()
      }
      // the folder named without its slash goes to the slash form, as on GitHub Pages
      const bare = await page.goto(`${home}${encodeURIComponent(POSTS)}`)
      assert.equal(bare?.status(), 200)
      assert.equal(page.url(), `${home}${encodeURIComponent(POSTS)}/`)
      assert.deepEqual(errors, [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })
})
