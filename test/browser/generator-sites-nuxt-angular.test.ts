import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { ENGINES } from '../support/server.js'
import { loadedWidth, notCancelled, watchErrors } from '../support/browser.js'
import { assertLive, clientNav, deployedFixtures, statusChain } from '../support/generator-sites.js'

// Nuxt 4 and Angular 22 builds, deployed with `svc deploy` and opened in Chromium (decision 191):
// `nuxi generate` (folder pages with `_payload.json` beside them, 404.html and 200.html as SPA
// shells loading `{base}_nuxt/...`, once at `/` and once with `app.baseURL` '/nuxt-base/') and
// `ng build` (one index.html whose relative files resolve against `<base href>`, '/' and, with
// `--base-href /sub/`, '/sub/'). GitHub Pages and Netlify serve a deep link of an SPA only with
// a rewrite: Netlify's `/* /index.html 200`, GitHub Pages' copy of index.html as 404.html. The
// fixtures are those builds cut down by hand (test/fixtures/ssg/nuxt-*, angular-*): the same
// files, markup and paths, with small clients in place of the frameworks.
const engine = ENGINES[0]

/** How a URL answers a browser: its statuses along redirects, where it ends, and what the page shows. */
async function opened(page: Page, url: string): Promise<string> {
  const res = await page.goto(url)
  assert.ok(res, url)
  const chain = await statusChain(res)
  // the page's client has run: it rendered a heading, and filled #ran where the app has one
  await page.waitForFunction(
    () => {
      const ran = document.querySelector('#ran')
      return document.querySelector('h1') !== null && (ran === null || ran.textContent !== '')
    },
    null,
    { timeout: 15_000 },
  )
  const ran = (await page.locator('#ran').count()) > 0 ? await page.locator('#ran').textContent() : '-'
  return `${chain.join(' ')} ${new URL(page.url()).pathname} ${await page.title()} / ${await page.locator('h1').first().textContent()} / ${ran}`
}

/** Runs `step` (a click, back or forward) and checks the page showed `title` and `h1` without loading a document. */
const nav = (page: Page, step: () => Promise<unknown>, title: string, h1: string) =>
  clientNav(page, step, ([t, h]) => document.title === t && document.querySelector('h1')?.textContent === h, [title, h1], h1)

/** Whether #logo (a file of the site, by the path its framework gives it) was loaded. */
const logoLoaded = async (page: Page) => (await loadedWidth(page.locator('#logo'))) > 0

/** The `_payload.json` and `builds/meta` files `page` fetches from now on, by status and path. */
function payloadsOf(page: Page): Set<string> {
  const seen = new Set<string>()
  page.on('response', (r) => {
    const u = new URL(r.url())
    if (/\/_payload\.json$|\/builds\/meta\//.test(u.pathname)) seen.add(`${r.status()} ${u.pathname}${u.search}`)
  })
  return seen
}

describe(`sites built with Nuxt and Angular, deployed with svc deploy [${engine}]`, () => {
  const site = deployedFixtures(engine, [
    ['nuxt-generate', 'nuxt'],
    ['nuxt-base', 'nuxt-base'],
    ['angular-default', 'ng'],
    ['angular-redirects', 'ng-netlify'],
    ['angular-base-href', 'sub'],
  ])
  const live = (project: string, url: string) => assertLive(site.out.get(project), url)

  it("Nuxt's generate output: folder pages and payloads, 404.html rendering in the browser, its router", async () => {
    const { s, browser, username, port } = site
    const own = `http://nuxt.${username}.localhost:${port}`
    const build = '81a4f61a-9bd8-4017-a26a-bdce0f4ebdfe'
    live('nuxt', own) // its pages and 404.html load `/_nuxt/...`: built for `/`
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      // Nuxt's starter has a public/favicon.ico, this build none: Chromium's request for it is a 404
      const errors = watchErrors(
        page,
        ['/blog/other', '/nope', '/_nuxt/missing.js', '/favicon.ico'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [
        `${own}/`,
        `${own}/about`,
        `${own}/about/index.html`,
        `${own}/blog/hello`,
        `${own}/guide/intro/`,
        `${own}/blog/other`,
        `${own}/nope/`,
        `${own}/_nuxt/missing.js`,
        `${own}/200.html`,
        `http://${username}.localhost:${port}/nuxt/guide/intro/`,
        `${s.url}/${username}/nuxt/about/`,
      ]) {
        seen.push(await opened(page, url))
        if (url === `${own}/`) assert.ok(await logoLoaded(page), 'public/logo.svg')
      }
      assert.deepEqual(seen, [
        '200 / Nuxt home / Nuxt home / script ran at /',
        // each page is a folder's index.html: the bare form goes to the slash form, as on GitHub Pages
        '301 200 /about/ Nuxt about / Nuxt about / script ran at /about/',
        // the file itself; the client keeps the route it was rendered for
        '200 /about Nuxt about / Nuxt about / script ran at /about',
        '301 200 /blog/hello/ Nuxt post hello / Nuxt post hello / script ran at /blog/hello/',
        '200 /guide/intro/ Nuxt guide intro / Nuxt guide intro / script ran at /guide/intro/',
        // a dynamic route not prerendered: 404.html, whose client renders the route
        '404 /blog/other Nuxt post other / Nuxt post other / script ran at /blog/other',
        // no route: 404.html shows Nuxt's error page, at any depth (its files are root-absolute)
        '404 /nope/ Nuxt error 404 / Nuxt error 404 / -',
        '404 /_nuxt/missing.js Nuxt error 404 / Nuxt error 404 / -',
        // 200.html is Surge's convention: a file like any other here, as on GitHub Pages and Netlify
        '200 /200.html Nuxt error 404 / Nuxt error 404 / -',
        // its other URLs take a browser to its own origin (decisions 75, 186)
        '302 200 /guide/intro/ Nuxt guide intro / Nuxt guide intro / script ran at /guide/intro/',
        '302 200 /about/ Nuxt about / Nuxt about / script ran at /about/',
      ])

      // the router: the build's manifest, then each prerendered route's payload and page chunk
      await page.goto(`${own}/`)
      await page.locator('#ran').filter({ hasText: 'ran at' }).waitFor()
      const payloads = payloadsOf(page)
      await nav(page, () => page.locator('#nav-about').click(), 'Nuxt about', 'Nuxt about')
      await nav(page, () => page.locator('#nav-post').click(), 'Nuxt post hello', 'Nuxt post hello')
      assert.equal(await page.locator('#words').textContent(), 'the hello post')
      await nav(page, () => page.locator('#nav-guide').click(), 'Nuxt guide intro', 'Nuxt guide intro')
      assert.equal(page.url(), `${own}/guide/intro`)
      await nav(page, () => page.goBack(), 'Nuxt post hello', 'Nuxt post hello')
      await nav(page, () => page.goForward(), 'Nuxt guide intro', 'Nuxt guide intro')
      assert.deepEqual([...payloads].sort(), [
        `200 /_nuxt/builds/meta/${build}.json`,
        `200 /about/_payload.json?_b=${build}`,
        `200 /blog/hello/_payload.json?_b=${build}`,
        `200 /guide/intro/_payload.json?_b=${build}`,
      ])
      // a path no route matches is loaded: the host's 404.html
      const [res] = await Promise.all([page.waitForResponse((r) => r.request().isNavigationRequest()), page.locator('#nav-missing').click()])
      assert.equal(`${res.status()} ${new URL(res.url()).pathname}`, '404 /nope')
      await page.waitForFunction(() => document.title === 'Nuxt error 404')
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it("Nuxt with app.baseURL '/nuxt-base/': under the user's origin, its 404.html at any depth", async () => {
    const { s, browser, username, port } = site
    const base = `http://${username}.localhost:${port}/nuxt-base`
    const build = '11ff0399-53dd-4e2b-8ff7-9d410179348b'
    live('nuxt-base', base)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(page, [
        { url: '/nuxt-base/nope', status: 404 },
        { url: '/favicon.ico', status: 404 },
      ])
      const seen: string[] = []
      for (const url of [base, `${base}/about`, `${base}/blog/hello/`, `${base}/nope`, `${base}/nope/a/b`, `${s.url}/${username}/nuxt-base/about/`]) {
        seen.push(await opened(page, url))
        if (url === base) assert.ok(await logoLoaded(page), '/nuxt-base/logo.svg')
      }
      assert.deepEqual(seen, [
        '301 200 /nuxt-base/ Nuxt home / Nuxt home / script ran at /',
        '301 200 /nuxt-base/about/ Nuxt about / Nuxt about / script ran at /about/',
        '200 /nuxt-base/blog/hello/ Nuxt post hello / Nuxt post hello / script ran at /blog/hello/',
        '404 /nuxt-base/nope Nuxt error 404 / Nuxt error 404 / -',
        '404 /nuxt-base/nope/a/b Nuxt error 404 / Nuxt error 404 / -',
        // the path form sends browsers to the user's origin, where the base fits
        '302 200 /nuxt-base/about/ Nuxt about / Nuxt about / script ran at /about/',
      ])
      await page.goto(`${base}/`)
      await page.locator('#ran').filter({ hasText: 'ran at' }).waitFor()
      const payloads = payloadsOf(page)
      await nav(page, () => page.locator('#nav-about').click(), 'Nuxt about', 'Nuxt about')
      await nav(page, () => page.locator('#nav-post').click(), 'Nuxt post hello', 'Nuxt post hello')
      assert.equal(page.url(), `${base}/blog/hello`)
      await nav(page, () => page.goBack(), 'Nuxt about', 'Nuxt about')
      assert.deepEqual([...payloads].sort(), [
        `200 /nuxt-base/_nuxt/builds/meta/${build}.json`,
        `200 /nuxt-base/about/_payload.json?_b=${build}`,
        `200 /nuxt-base/blog/hello/_payload.json?_b=${build}`,
      ])
      const [res] = await Promise.all([page.waitForResponse((r) => r.request().isNavigationRequest()), page.locator('#nav-missing').click()])
      assert.equal(`${res.status()} ${new URL(res.url()).pathname}`, '404 /nuxt-base/nope')
      await page.waitForFunction(() => document.title === 'Nuxt error 404')
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it('Angular\'s build with <base href="/">: its own origin; deep links are 404s without a rewrite', async () => {
    const { browser, username, port } = site
    const own = `http://ng.${username}.localhost:${port}`
    live('ng', own) // relative files under <base href="/"> load from `/`
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(page, [
        { url: '/about', status: 404 },
        { url: '/items/', status: 404 },
      ])
      const seen: string[] = []
      for (const url of [`${own}/`, `${own}/index.html`, `http://${username}.localhost:${port}/ng/`]) seen.push(await opened(page, url))
      assert.deepEqual(seen, [
        '200 / Ng home / Ng home / script ran at /',
        // Angular's Location drops `index.html`
        '200 / Ng home / Ng home / script ran at /',
        '302 200 / Ng home / Ng home / script ran at /',
      ])
      // no SPA fallback unless the site asks for one: the host's 404, no app, as on GitHub Pages
      for (const url of [`${own}/about`, `${own}/items/42`]) {
        const res = await page.goto(url)
        assert.equal(`${res?.status()} ${await page.title()} ${await page.locator('app-root').count()}`, '404 404 - page not found 0', url)
      }

      // the router: a lazy route's chunk and its image by relative paths, history entries
      await page.goto(`${own}/`)
      await page.locator('#ran').filter({ hasText: 'ran at' }).waitFor()
      await nav(page, () => page.locator('#nav-about').click(), 'Ng about', 'Ng about')
      assert.ok(await logoLoaded(page), 'logo.svg')
      assert.equal(await page.locator('h1').evaluate((h) => getComputedStyle(h).color), 'rgb(10, 20, 30)', 'styles-*.css')
      await nav(page, () => page.locator('#nav-item').click(), 'Ng item', 'Ng item 7')
      await nav(page, () => page.locator('#nav-missing').click(), 'Ng not found', 'Ng not found')
      await nav(page, () => page.goBack(), 'Ng item', 'Ng item 7')
      await nav(page, () => page.goBack(), 'Ng about', 'Ng about')
      await nav(page, () => page.goForward(), 'Ng item', 'Ng item 7')
      assert.equal(page.url(), `${own}/items/7`)
      // reloading a route the router showed asks the host for it
      const res = await page.reload()
      assert.equal(`${res?.status()} ${await page.locator('app-root').count()}`, '404 0')
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it("Angular with Netlify's `/* /index.html 200` in _redirects: deep links answer the app", async () => {
    const { s, browser, username, port } = site
    const own = `http://ng-netlify.${username}.localhost:${port}`
    live('ng-netlify', own)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(page)
      const seen: string[] = []
      for (const url of [
        `${own}/about`,
        `${own}/about/`,
        `${own}/items/42`,
        `${own}/nope`,
        `http://${username}.localhost:${port}/ng-netlify/items/42`,
        `${s.url}/${username}/ng-netlify/about`,
      ]) {
        seen.push(await opened(page, url))
        if (url === `${own}/about`) assert.ok(await logoLoaded(page), 'logo.svg under <base href="/">')
      }
      assert.deepEqual(seen, [
        '200 /about Ng about / Ng about / script ran at /about',
        // the rule answers; Angular drops the slash from the address
        '200 /about Ng about / Ng about / script ran at /about',
        '200 /items/42 Ng item / Ng item 42 / script ran at /items/42',
        // every path without a file is the app, which shows its `**` route
        '200 /nope Ng not found / Ng not found / script ran at /nope',
        '302 200 /items/42 Ng item / Ng item 42 / script ran at /items/42',
        '302 200 /about Ng about / Ng about / script ran at /about',
      ])
      // a file shadows the rule; a missing file is index.html, as on Netlify
      const files = await page.evaluate(async () => {
        const out: string[] = []
        for (const u of ['/main-QHMJQU73.js', '/missing.js']) {
          const r = await fetch(u)
          out.push(`${r.status} ${r.headers.get('content-type')} ${u}`)
        }
        return out
      })
      assert.deepEqual(files, ['200 text/javascript; charset=utf-8 /main-QHMJQU73.js', '200 text/html; charset=utf-8 /missing.js'])

      await page.goto(`${own}/`)
      await page.locator('#ran').filter({ hasText: 'ran at' }).waitFor()
      await nav(page, () => page.locator('#item-link').click(), 'Ng item', 'Ng item 42')
      await nav(page, () => page.locator('#nav-about').click(), 'Ng about', 'Ng about')
      await nav(page, () => page.goBack(), 'Ng item', 'Ng item 42')
      // and a reload of that route is the app again
      assert.equal(await opened(page, page.url()), '200 /items/42 Ng item / Ng item 42 / script ran at /items/42')
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it("Angular with --base-href /sub/ and index.html copied to 404.html: GitHub Pages' trick under the user's origin", async () => {
    const { s, browser, username, port } = site
    const sub = `http://${username}.localhost:${port}/sub`
    live('sub', sub) // `/sub/main-....js` is no file of its own at the project's root
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(
        page,
        ['/sub/about', '/sub/items/42', '/sub/nope'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [sub, `${sub}/about`, `${sub}/items/42/`, `${sub}/nope`, `${s.url}/${username}/sub/items/42`]) {
        seen.push(await opened(page, url))
        if (url === `${sub}/about`) assert.ok(await logoLoaded(page), '/sub/logo.svg, by <base href>')
      }
      assert.deepEqual(seen, [
        '301 200 /sub/ Ng home / Ng home / script ran at /',
        // 404.html is index.html: the status says missing, the app shows the route
        '404 /sub/about Ng about / Ng about / script ran at /about',
        '404 /sub/items/42 Ng item / Ng item 42 / script ran at /items/42',
        '404 /sub/nope Ng not found / Ng not found / script ran at /nope',
        '302 404 /sub/items/42 Ng item / Ng item 42 / script ran at /items/42',
      ])
      await page.goto(`${sub}/`)
      await page.locator('#ran').filter({ hasText: 'ran at' }).waitFor()
      await nav(page, () => page.locator('#nav-about').click(), 'Ng about', 'Ng about')
      await nav(page, () => page.locator('#nav-item').click(), 'Ng item', 'Ng item 7')
      assert.equal(page.url(), `${sub}/items/7`)
      await nav(page, () => page.goBack(), 'Ng about', 'Ng about')
      await nav(page, () => page.goForward(), 'Ng item', 'Ng item 7')
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })
})
