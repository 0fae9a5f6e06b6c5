import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { type BrowserContext, type Page } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload, type BatchFile } from '../support/hosting.js'
import { openBrowser, type BrowserLease, watchErrors } from '../support/browser.js'
import { tinyFont } from '../support/font.js'

// What a browser does with a hosted site is a matter of headers and paths, the same on both engines.
const engine = ENGINES[0]

/**
 * A small single-page app as people write them, built for a base path (as Vite's `base`
 * does): a crossorigin module script importing another module, a crossorigin stylesheet with
 * a web font, a classic `.cjs` script, fetch of its own JSON, the three kinds of storage, and history routing.
 * Everything it finds goes to window.__out; the title turns "ready" when it is done.
 */
function spaSite(base: string): BatchFile[] {
  const index = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>loading</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${base}assets/style.css" crossorigin>
<script src="${base}assets/legacy.cjs"></script>
<script type="module" src="${base}assets/app.js" crossorigin></script>
</head><body><h1 id="title">loading</h1><nav><a href="${base}about/team" data-link>team</a></nav>
<p id="route"></p><span id="font">AAAA</span></body></html>`
  const css = `@font-face { font-family: SvcTest; src: url(fonts/tiny.ttf) format("truetype"); }
h1 { color: rgb(1, 2, 3); }
#font { font: 100px SvcTest, monospace; }`
  const lib = 'export const greet = (who) => `hello ${who}`\n'
  const app = `import { greet } from './lib.js'
const root = new URL('../', import.meta.url)
const out = { greet: greet('svc'), cjs: window.legacy ?? 'not run' }
const attempt = async (name, fn) => { try { out[name] = await fn() } catch (e) { out[name] = 'threw:' + (e && e.name) } }
await attempt('data', async () => (await (await fetch(new URL('data.json', root))).json()).message)
await attempt('localBefore', () => localStorage.getItem('visited'))
await attempt('local', () => { localStorage.setItem('visited', 'yes'); return localStorage.getItem('visited') })
await attempt('session', () => { sessionStorage.setItem('s', 'ok'); return sessionStorage.getItem('s') })
await attempt('idb', () => new Promise((resolve, reject) => {
  const open = indexedDB.open('compat', 1)
  open.onupgradeneeded = () => open.result.createObjectStore('kv')
  open.onerror = () => reject(open.error)
  open.onsuccess = () => {
    const tx = open.result.transaction('kv', 'readwrite')
    tx.objectStore('kv').put('stored', 'k')
    const get = tx.objectStore('kv').get('k')
    tx.oncomplete = () => { open.result.close(); resolve(get.result) }
    tx.onerror = () => reject(tx.error)
  }
}))
await document.fonts.ready
out.fontWidth = document.getElementById('font').getBoundingClientRect().width
out.color = getComputedStyle(document.getElementById('title')).color
document.getElementById('title').textContent = out.greet
const render = () => { document.getElementById('route').textContent = 'route:' + location.pathname.slice(root.pathname.length - 1) }
window.app = { go(path) { history.pushState(null, '', new URL(path.slice(1), root)); render() } }
document.addEventListener('click', (e) => {
  const a = e.target.closest('a[data-link]')
  if (a) { e.preventDefault(); history.pushState(null, '', a.href); render() }
})
addEventListener('popstate', render)
render()
window.__out = out
document.title = 'ready'
`
  return [
    { filename: 'index.html', data: index },
    { filename: 'assets/style.css', data: css },
    { filename: 'assets/fonts/tiny.ttf', data: tinyFont() },
    { filename: 'assets/app.js', data: app },
    { filename: 'assets/lib.js', data: lib },
    // a classic script with the extension CommonJS builds use: it runs only when served as JavaScript
    { filename: 'assets/legacy.cjs', data: "window.legacy = 'ran'\n" },
    { filename: 'data.json', data: JSON.stringify({ message: 'data from json' }) },
    { filename: '_redirects', data: '/* /index.html 200\n' },
  ]
}

/** A second project without rules, with a custom 404 page, and a page that asks for a missing image. */
const PLAIN: BatchFile[] = [
  { filename: 'index.html', data: '<!doctype html><title>plain</title><link rel="icon" href="data:,"><h1>plain</h1><img id="img" src="missing.png" alt="">' },
  { filename: '404.html', data: '<!doctype html><title>not here</title><link rel="icon" href="data:,"><h1>custom 404 page</h1>' },
]

type Out = Record<string, unknown>

async function deploy(s: TestServer, key: string, project: string, files: BatchFile[]): Promise<void> {
  const r = await batchUpload(s, { key }, project, files)
  assert.equal(r.status, 200, r.text)
  const p = await s.post(`/api/folders/${project}/publish`, { key })
  assert.equal(p.status, 200, p.text)
}

async function ready(page: Page): Promise<Out> {
  await page.waitForFunction(() => document.title === 'ready', null, { timeout: 15_000 })
  return page.evaluate(() => (window as unknown as { __out: Out }).__out)
}

const routeText = (page: Page) => page.locator('#route').textContent()

// one Chromium for the file; each suite makes its own contexts
let browser: BrowserLease
before(async () => {
  browser = await openBrowser()
})
after(async () => {
  await browser?.close()
})

describe(`a modern static site in Chromium [${engine}]`, () => {
  let s: TestServer
  let ctx: BrowserContext
  let origin: string
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    const user = await s.user()
    await deploy(s, user.key, 'compat', spaSite('/compat/'))
    await deploy(s, user.key, 'plain', PLAIN)
    origin = `http://${user.username}.localhost:${new URL(s.httpUrl).port}`
    ctx = await browser.newContext({ ignoreHTTPSErrors: true })
  })
  after(async () => {
    await ctx?.close()
    await s?.close()
  })

  it("on the user's origin: modules, CSS, font, fetch, storage and history routing all work, with no console errors", async () => {
    const page = await ctx.newPage()
    const errors = watchErrors(page)
    try {
      const res = await page.goto(`${origin}/compat/`)
      assert.equal(res?.status(), 200)
      const out = await ready(page)
      assert.deepEqual(
        out,
        {
          greet: 'hello svc',
          cjs: 'ran',
          data: 'data from json',
          localBefore: null,
          local: 'yes',
          session: 'ok',
          idb: 'stored',
          fontWidth: 400,
          color: 'rgb(1, 2, 3)',
        },
        'every feature works (a font width of 400 means the web font drew the text)',
      )
      assert.equal(await page.locator('#title').textContent(), 'hello svc')
      assert.equal(await routeText(page), 'route:/')

      // a deep route opened directly: the SPA fallback serves index.html with 200
      const deep = await page.goto(`${origin}/compat/app/settings/profile`)
      assert.equal(deep?.status(), 200)
      const again = await ready(page)
      assert.equal(again.localBefore, 'yes', 'localStorage kept the first visit')
      assert.equal(again.idb, 'stored')
      assert.equal(await routeText(page), 'route:/app/settings/profile')
      // and one holding an encoded slash (a file path as one route parameter), as nginx and Netlify serve it
      const encoded = await page.goto(`${origin}/compat/files/docs%2Freadme.md`)
      assert.equal(encoded?.status(), 200)
      await ready(page)
      assert.equal(await routeText(page), 'route:/files/docs%2Freadme.md')

      // a client-side navigation (pushState), then a reload of the route it made
      await page.click('a[data-link]')
      assert.equal(await routeText(page), 'route:/about/team')
      assert.equal(new URL(page.url()).pathname, '/compat/about/team')
      await page.evaluate(() => (window as unknown as { app: { go(p: string): void } }).app.go('/blog/2026/hello'))
      assert.equal(new URL(page.url()).pathname, '/compat/blog/2026/hello')
      const reloaded = await page.reload()
      assert.equal(reloaded?.status(), 200)
      await ready(page)
      assert.equal(await routeText(page), 'route:/blog/2026/hello')
      await page.goBack()
      await ready(page)
      assert.equal(await routeText(page), 'route:/about/team')

      assert.deepEqual(errors, [], 'no console errors, page errors or failed requests')
    } finally {
      await page.close()
    }
  })

  it("on the user's origin: the custom 404 page answers for a missing page and a missing asset", async () => {
    const page = await ctx.newPage()
    const errors = watchErrors(page, [
      { url: '/plain/nope', status: 404 },
      { url: '/plain/missing.png', status: 404 },
    ])
    try {
      const res = await page.goto(`${origin}/plain/nope`)
      assert.equal(res?.status(), 404)
      assert.equal(await page.locator('h1').textContent(), 'custom 404 page')

      const missing = page.waitForResponse((r) => r.url().endsWith('/plain/missing.png'))
      await page.goto(`${origin}/plain/`)
      const img = await missing
      assert.equal(img.status(), 404, 'a project without rules has no fallback: a missing asset is a 404')
      assert.match(await img.text(), /custom 404 page/)
      assert.equal(await page.locator('h1').textContent(), 'plain')
      assert.deepEqual(errors, [])
    } finally {
      await page.close()
    }
  })
})

describe(`the same site on the path form (CONTENT_DOMAIN=off) [${engine}]`, () => {
  let s: TestServer
  let username: string
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, CONTENT_DOMAIN: 'off' } })
    const user = await s.user()
    username = user.username
    await deploy(s, user.key, 'compat', spaSite(`/${username}/compat/`))
  })
  after(async () => {
    await s?.close()
  })

  it('modules, CSS and its font, and fetch load in the sandbox (opaque origin, CORS with *); storage is refused', async () => {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true })
    const page = await ctx.newPage()
    const errors = watchErrors(page)
    try {
      const res = await page.goto(`${s.url}/${username}/compat/`)
      assert.equal(res?.status(), 200)
      assert.match(res?.headers()['content-security-policy'] ?? '', /sandbox/)
      const out = await ready(page)
      assert.equal(out.greet, 'hello svc', 'the module script and its import ran')
      assert.equal(out.cjs, 'ran', 'the .cjs classic script ran')
      assert.equal(out.data, 'data from json', "fetch read the site's JSON")
      assert.equal(out.color, 'rgb(1, 2, 3)', 'the crossorigin stylesheet applied')
      assert.equal(out.fontWidth, 400, 'the web font loaded')
      assert.equal(await page.evaluate(() => self.origin), 'null')
      for (const k of ['localBefore', 'local', 'session', 'idb']) assert.match(String(out[k]), /^threw:/, `${k} is refused in the sandbox`)
      const deep = await page.goto(`${s.url}/${username}/compat/app/x`)
      assert.equal(deep?.status(), 200)
      await ready(page)
      assert.equal(await routeText(page), 'route:/app/x')
      assert.deepEqual(errors, [])
    } finally {
      await ctx.close()
    }
  })
})
