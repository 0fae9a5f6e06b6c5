import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { type BrowserContext, type Page } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { deploySite, type Site } from '../support/deploys.js'
import { openBrowser, type BrowserLease, watchErrors } from '../support/browser.js'

// An installable, offline-capable site (a PWA) as a Vite build with a hand-written,
// Workbox-style precaching service worker ships it, checked in Chromium on the project's own
// origin and under /{project}/ of its user's origin: the worker registers with the scope the
// spec gives it, the manifest is read, the app shell loads offline, a redeploy and a rollback
// reach the visitor, a rule's long cache life never holds the worker back, Service-Worker-Allowed
// widens a scope within the project only, and an unpublish or a takedown drops the worker.
const engine = ENGINES[0]

/** A module that answers 42: `(module (func (export "ans") (result i32) i32.const 42))`. */
const WASM = Buffer.from('0061736d010000000105016000017f0302010007070103616e7300000a06010400412a0b', 'hex')

/**
 * The build of version `v`: a hashed entry chunk, a web app manifest, a tiny WebAssembly module
 * loaded with instantiateStreaming, and `sw.js`, which precaches the shell on install
 * (skipWaiting), drops older caches on activate (clients.claim) and answers cache-first, with
 * the shell's index.html for navigations: what Workbox's generateSW makes, by hand.
 * `swPath`: where the worker lives (Vite's public/ puts it at the root); `scope`: the scope the
 * page asks for (none: the default, the script's folder).
 */
function pwaSite(v: string, opts: { swPath?: string; scope?: string; headers?: string; updateViaCache?: 'all' } = {}): Site {
  const swPath = opts.swPath ?? 'sw.js'
  const entry = `assets/index-${v}a1b2.js`
  const shell = ['./', 'index.html', entry, 'data.json', 'assets/answer.wasm', 'manifest.webmanifest', 'favicon.ico']
  const index = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>loading</title>
<link rel="manifest" href="manifest.webmanifest"><link rel="icon" href="favicon.ico">
<script type="module" crossorigin src="./${entry}"></script>
</head><body><h1 id="v">loading</h1><p id="data"></p><p id="wasm"></p></body></html>`
  const app = `const base = new URL('../', import.meta.url)
document.getElementById('v').textContent = 'app ${v}'
document.getElementById('data').textContent = (await (await fetch(new URL('data.json', base))).json()).message
const { instance } = await WebAssembly.instantiateStreaming(fetch(new URL('assets/answer.wasm', base)))
document.getElementById('wasm').textContent = 'wasm ' + instance.exports.ans()
const reg = await navigator.serviceWorker.register(new URL('${swPath}', base)${opts.scope === undefined && opts.updateViaCache === undefined ? '' : `, ${JSON.stringify({ scope: opts.scope, updateViaCache: opts.updateViaCache })}`}).catch((e) => ({ scope: 'refused: ' + e.name }))
window.__scope = reg.scope
document.title = 'ready'
`
  const sw = `const VERSION = '${v}'
const SHELL = ${JSON.stringify(shell)}
const base = new URL('${swPath
    .split('/')
    .slice(1)
    .map(() => '../')
    .join('')}', location)
self.addEventListener('install', (e) => {
  e.waitUntil(caches.open('shell-' + VERSION).then((c) => c.addAll(SHELL.map((u) => new URL(u, base)))).then(() => self.skipWaiting()))
})
self.addEventListener('activate', (e) => {
  e.waitUntil(caches.keys().then((keys) => Promise.all(keys.filter((k) => k !== 'shell-' + VERSION).map((k) => caches.delete(k)))).then(() => self.clients.claim()))
})
self.addEventListener('fetch', (e) => {
  if (e.request.method !== 'GET') return
  if (new URL(e.request.url).pathname.endsWith('/__sw-version')) return e.respondWith(new Response(VERSION))
  e.respondWith((async () => {
    const hit = await caches.match(e.request, { ignoreSearch: true })
    if (hit) return hit
    if (e.request.mode === 'navigate') {
      const shell = await caches.match(new URL('index.html', base))
      if (shell) return shell
    }
    return fetch(e.request)
  })())
})
`
  const manifest = JSON.stringify({
    name: 'PWA test',
    short_name: 'PWA',
    start_url: '.',
    scope: '.',
    display: 'standalone',
    icons: [{ src: 'favicon.ico', sizes: '16x16', type: 'image/x-icon' }],
  })
  const site: Site = {
    'index.html': index,
    [entry]: app,
    [swPath]: sw,
    'data.json': JSON.stringify({ message: `data ${v}` }),
    'assets/answer.wasm': WASM,
    'manifest.webmanifest': manifest,
    // an ICO header with no images is enough for the type; the page never draws it
    'favicon.ico': Buffer.from([0, 0, 1, 0, 0, 0]),
  }
  if (opts.headers !== undefined) site._headers = opts.headers
  return site
}

let browser: BrowserLease
before(async () => {
  browser = await openBrowser()
})
after(async () => {
  await browser?.close()
})

/** What the page shows once its script is done: version, data, wasm, the worker's scope. */
async function shown(page: Page): Promise<string> {
  await page.waitForFunction(() => document.title === 'ready', null, { timeout: 15_000 })
  return page.evaluate(
    () =>
      `${document.getElementById('v')!.textContent} | ${document.getElementById('data')!.textContent} | ${document.getElementById('wasm')!.textContent} | scope ${(window as unknown as { __scope: string }).__scope}`,
  )
}

/**
 * Waits until the page is controlled by an activated worker of version `v` (it answers
 * `__sw-version`), at most 15 s. The page looks again at each change of its registration (a
 * worker found, a worker's state, the controller, the first worker ready), a second at most
 * apart; a navigation that ends the look starts another one.
 */
async function controlledBy(page: Page, v: string): Promise<void> {
  const until = Date.now() + 15_000
  const version = (ms: number) =>
    page.evaluate(
      async ({ want, ms }) => {
        const sw = navigator.serviceWorker
        const end = Date.now() + ms
        for (;;) {
          const reg = await sw.getRegistration()
          // listening before looking: a change while the page looks wakes the next wait
          // (no named functions in here: the test's transform would wrap them in a helper the page lacks)
          const changed = new Promise<void>((wake) => {
            setTimeout(wake, 1000)
            sw.addEventListener('controllerchange', () => wake(), { once: true })
            if (reg === undefined) void sw.ready.then(() => wake())
            reg?.addEventListener('updatefound', () => wake(), { once: true })
            for (const worker of [reg?.installing, reg?.waiting, reg?.active]) worker?.addEventListener('statechange', () => wake(), { once: true })
          })
          let got: string | null = null
          if (reg !== undefined && reg.installing === null && reg.waiting === null && sw.controller !== null) {
            got = await (await fetch(new URL('__sw-version', reg.scope))).text()
          }
          if (got === want || Date.now() > end) return got
          await changed
        }
      },
      { want: v, ms },
    )
  let last: string | null = null
  while (last !== v) {
    if (Date.now() > until) assert.fail(`the page is controlled by worker ${last}, not ${v}`)
    last = await version(until - Date.now()).catch(async (e: Error) => {
      // the page navigated while it looked: look again in the new document
      if (!/context was destroyed|navigat/i.test(e.message)) throw e
      await new Promise((resolve) => setTimeout(resolve, 100))
      return null
    })
  }
}

/** A page of version v1 at `start`, once its worker controls it. */
async function installed(ctx: BrowserContext, start: string): Promise<Page> {
  const page = await ctx.newPage()
  await page.goto(start)
  assert.equal(await shown(page), `app v1 | data v1 | wasm 42 | scope ${start}`)
  await controlledBy(page, 'v1')
  return page
}

describe(`a PWA (service worker, manifest, offline) in Chromium [${engine}]`, () => {
  let s: TestServer
  let user: { username: string; key: string; password: string }
  let port: string
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    user = await s.user()
    port = new URL(s.httpUrl).port
  })
  after(async () => {
    await s?.close()
  })

  const deploy = async (project: string, site: Site): Promise<string> => {
    const { res } = await deploySite(s, user.key, project, site)
    assert.equal(res.status, 201, res.text)
    return res.json.deploy.id as string
  }

  // Each of these tests has a project and a browser context (storage, workers, caches) of its
  // own, so three run at a time: most of a test is Chromium's own update check and reload
  // after a visit. The takedown comes after them all: it blocks its site's bytes, which the
  // other tests' sites share, for their next publish (451 / 1701).
  describe('side by side', { concurrency: 3 }, () => {
    for (const where of ['project origin', 'user origin'] as const) {
      it(`registers, works offline and takes a redeploy and a rollback on the ${where}`, async () => {
        const project = where === 'project origin' ? 'pwa-own' : 'pwa-sub'
        const first = await deploy(project, pwaSite('v1'))
        const start =
          where === 'project origin' ? `http://${project}.${user.username}.localhost:${port}/` : `http://${user.username}.localhost:${port}/${project}/`
        const ctx: BrowserContext = await browser.newContext()
        try {
          const page = await ctx.newPage()
          const errors = watchErrors(page)
          await page.goto(start)
          assert.equal(await shown(page), `app v1 | data v1 | wasm 42 | scope ${start}`)
          await controlledBy(page, 'v1')
          // the browser reads the web app manifest (application/manifest+json) without a complaint
          const app = await (await ctx.newCDPSession(page)).send('Page.getAppManifest')
          assert.deepEqual(app.errors, [])
          assert.equal(app.url, new URL('manifest.webmanifest', start).href)
          assert.equal(JSON.parse(app.data ?? '{}').name, 'PWA test')

          await ctx.setOffline(true)
          await page.reload()
          assert.equal(await shown(page), `app v1 | data v1 | wasm 42 | scope ${start}`, 'offline, from the worker')
          await page.goto(new URL('settings', start).href)
          assert.equal(await shown(page), `app v1 | data v1 | wasm 42 | scope ${start}`, 'offline, a route of the app')
          await ctx.setOffline(false)

          // a redeploy: the next visit fetches the new sw.js, which takes over and serves v2
          await deploy(project, pwaSite('v2'))
          await page.goto(start)
          await controlledBy(page, 'v2')
          await page.reload()
          assert.equal(await shown(page), `app v2 | data v2 | wasm 42 | scope ${start}`)

          // a rollback to v1: its sw.js differs from the live one, so the browser takes it again
          const rb = await s.post(`/api/folders/${project}/rollback`, { key: user.key, json: { deploy_id: first } })
          assert.equal(rb.status, 200, rb.text)
          await page.goto(start)
          await controlledBy(page, 'v1')
          await page.reload()
          assert.equal(await shown(page), `app v1 | data v1 | wasm 42 | scope ${start}`)
          assert.deepEqual(errors, [])
        } finally {
          await ctx.close()
        }
      })
    }

    it('a rule that keeps sw.js a year does not hold a worker registered with updateViaCache "all" back', async () => {
      const headers = '/*.js\n  Cache-Control: public, max-age=31536000, immutable\n'
      await deploy('pwa-cached', pwaSite('v1', { updateViaCache: 'all', headers }))
      const start = `http://pwa-cached.${user.username}.localhost:${port}/`
      const ctx = await browser.newContext()
      try {
        const page = await installed(ctx, start)
        await deploy('pwa-cached', pwaSite('v2', { updateViaCache: 'all', headers }))
        await page.goto(start)
        await controlledBy(page, 'v2')
      } finally {
        await ctx.close()
      }
    })

    it('Service-Worker-Allowed from _headers widens the scope to the project, on both origins and a kept deploy', async () => {
      const headers = '/assets/sw.js\n  Service-Worker-Allowed: /\n'
      const id = await deploy('pwa-swa', pwaSite('v1', { swPath: 'assets/sw.js', scope: './', headers }))
      const mine = `http://${user.username}.localhost:${port}`
      // the project's origin, under /{project}/, and a kept deploy under /{project}@{deploy}/
      for (const start of [`http://pwa-swa.${user.username}.localhost:${port}/`, `${mine}/pwa-swa/`, `${mine}/pwa-swa@${id}/`]) {
        const ctx = await browser.newContext()
        try {
          const page = await installed(ctx, start)
          await ctx.setOffline(true)
          await page.reload()
          assert.equal(await shown(page), `app v1 | data v1 | wasm 42 | scope ${start}`, 'offline')
        } finally {
          await ctx.close()
        }
      }
    })

    it("on the user's origin a project's worker cannot take the origin's root, so never another project's pages", async () => {
      const headers = '/assets/sw.js\n  Service-Worker-Allowed: /\n'
      await deploy('pwa-wide', pwaSite('v1', { swPath: 'assets/sw.js', scope: '/', headers }))
      const start = `http://${user.username}.localhost:${port}/pwa-wide/`
      const ctx = await browser.newContext()
      try {
        const page = await ctx.newPage()
        await page.goto(start)
        assert.equal(await shown(page), 'app v1 | data v1 | wasm 42 | scope refused: SecurityError')
      } finally {
        await ctx.close()
      }
    })

    for (const where of ['project origin', 'user origin'] as const) {
      it(`unpublishing the project retires its worker on the ${where}: the visitor then sees the 404`, async () => {
        const project = where === 'project origin' ? 'pwa-off' : 'pwa-off-sub'
        await deploy(project, pwaSite('v1'))
        const start =
          where === 'project origin' ? `http://${project}.${user.username}.localhost:${port}/` : `http://${user.username}.localhost:${port}/${project}/`
        const ctx = await browser.newContext()
        try {
          const page = await ctx.newPage()
          await page.goto(start)
          await controlledBy(page, 'v1')
          const off = await s.post(`/api/folders/${project}/unpublish`, { key: user.key })
          assert.equal(off.status, 200, off.text)
          // the visit still comes from the worker; the browser's update check after it gets a
          // worker that unregisters itself and reloads the page, from the network: the 404
          const notFound = page.waitForResponse((r) => r.url() === start && r.status() === 404, { timeout: 15_000 })
          // (an update check the first visit scheduled may already have run: then this visit is the 404,
          // or is cut short by the reload)
          await page.goto(start).catch(() => null)
          await notFound
          await page.waitForLoadState()
          // the retiring worker's reload of this page may come after a 404 the visit got first:
          // the next visit is made in a page of its own, the old one closed, so none cuts it short
          await page.close()
          // published again, the site comes from the network, and registers its worker anew
          const on = await s.post(`/api/folders/${project}/publish`, { key: user.key })
          assert.equal(on.status, 200, on.text)
          const again = await ctx.newPage()
          const back = await again.goto(start)
          assert.equal(back?.fromServiceWorker(), false, 'no worker left to answer')
          assert.equal(await shown(again), `app v1 | data v1 | wasm 42 | scope ${start}`)
          await controlledBy(again, 'v1')
        } finally {
          await ctx.close()
        }
      })
    }

    it('a page that registers a worker the site lacks is not reloaded, and keeps no worker', async () => {
      const index = `<!doctype html><title>loading</title><link rel="icon" href="data:,"><script type="module">
  sessionStorage.loads = Number(sessionStorage.loads ?? 0) + 1
  await navigator.serviceWorker.register('./sw.js')
  document.title = 'ready'
  </script>`
      await deploy('pwa-none', { 'index.html': index })
      const start = `http://pwa-none.${user.username}.localhost:${port}/`
      const ctx = await browser.newContext()
      try {
        const page = await ctx.newPage()
        await page.goto(start)
        await page.waitForFunction(() => document.title === 'ready', null, { timeout: 15_000 })
        const left = () => page.evaluate(async () => `${(await navigator.serviceWorker.getRegistrations()).length} workers, loads ${sessionStorage.loads}`)
        const until = Date.now() + 15_000
        while ((await left()) !== '0 workers, loads 1' && Date.now() < until) await new Promise((r) => setTimeout(r, 200))
        await new Promise((r) => setTimeout(r, 1000))
        assert.equal(await left(), '0 workers, loads 1')
      } finally {
        await ctx.close()
      }
    })
  })

  describe('after them', () => {
    it('a takedown drops the worker and its caches for a returning visitor', async () => {
      const admin = await s.user({ admin: true })
      const cookie = await s.login(admin.username, admin.password)
      await deploy('pwa-gone', pwaSite('v1'))
      const start = `http://pwa-gone.${user.username}.localhost:${port}/`
      const ctx = await browser.newContext()
      try {
        const page = await ctx.newPage()
        await page.goto(start)
        await controlledBy(page, 'v1')
        const rep = await s.request('POST', '/svc_api/admin/reports', { cookie, json: { url: start, category: 'phishing' } })
        assert.equal(rep.status, 201, rep.text)
        const down = await s.request('POST', `/svc_api/admin/reports/${rep.json.data.id}/takedown`, { cookie, json: {} })
        assert.equal(down.status, 200, down.text)
        // the visit still comes from the worker; the browser's update check after it gets the 451,
        // whose Clear-Site-Data drops the worker and the caches: the next visit meets the notice
        // (an update check the first visit scheduled may have run already: this visit is then the 451)
        const first = await page.goto(start).catch(() => null)
        if (first?.status() !== 451) {
          const left = () =>
            page.evaluate(async () => `${(await navigator.serviceWorker.getRegistrations()).length} workers, ${(await caches.keys()).length} caches`)
          const until = Date.now() + 15_000
          while ((await left()) !== '0 workers, 0 caches' && Date.now() < until) await new Promise((r) => setTimeout(r, 200))
          assert.equal(await left(), '0 workers, 0 caches')
        }
        assert.equal((await page.goto(start))?.status(), 451)
      } finally {
        await ctx.close()
      }
    })
  })
})
