import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { ENGINES } from '../support/server.js'
import { notCancelled, watchErrors } from '../support/browser.js'
import { assertLive, clientNav, deployedFixtures, statusChain } from '../support/generator-sites.js'

// Gatsby 5 and React Router 7 in SPA mode, deployed with `svc deploy` and opened in Chromium
// (decision 192). Gatsby writes a folder per page and shows pages on client navigation from
// `page-data/{path}/page-data.json`, the 404 page's for a missing one; with `pathPrefix` and
// `--prefix-paths` everything is under the prefix. React Router's SPA build is one
// `index.html` (no fallback unless `_redirects` asks, as on GitHub Pages and Netlify), its
// prerender build pages plus `{path}.data` payloads and `__spa-fallback.html`. The fixtures
// are those builds with their HTML (less React's inline helpers), page data and file names;
// the scripts are cut down by hand (test/fixtures/ssg/gatsby-*, rr-spa-*).
const engine = ENGINES[0]

/**
 * The page's client has rendered the URL's route (a document that is no HTML has none, nor the
 * host's own 404 page, decision 193).
 */
const rendered = (page: Page) =>
  page.waitForFunction(
    (host404) => document.documentElement.dataset.rendered === location.pathname || document.contentType !== 'text/html' || document.title === host404,
    HOST_404,
    { timeout: 15_000 },
  )
/** The title of the host's own 404 page in English (Chromium's default language here). */
const HOST_404 = '404 - page not found'

/** How a URL answers a browser: its statuses along redirects, where it ends, and what the page shows. */
async function opened(page: Page, url: string): Promise<string> {
  const res = await page.goto(url)
  assert.ok(res, url)
  const chain = await statusChain(res)
  await rendered(page)
  const h1 = await page.evaluate(() => document.querySelector('h1')?.textContent ?? '-')
  return `${chain.join(' ')} ${new URL(page.url()).pathname} ${await page.title()} / ${h1}`
}

/** Runs `step` and checks the page showed `title` at its URL without loading a document. */
const nav = (page: Page, step: () => Promise<unknown>, title: string) =>
  clientNav(page, step, ([t]) => document.title === t && document.documentElement.dataset.rendered === location.pathname, [title], title)

/** Status, Content-Type and first character of each path, fetched by the page. */
const fetched = (page: Page, paths: string[]) =>
  page.evaluate(async (ps) => {
    const out: string[] = []
    for (const p of ps) {
      const r = await fetch(p)
      out.push(`${r.status} ${r.headers.get('content-type')} ${p} ${(await r.text()).slice(0, 1)}`)
    }
    return out
  }, paths)

describe(`sites built with Gatsby and React Router, deployed with svc deploy [${engine}]`, () => {
  const site = deployedFixtures(engine, [
    ['gatsby-site', 'gatsby'],
    ['gatsby-prefix', 'gatsby-pp'],
    ['rr-spa', 'rr-spa'],
    ['rr-spa-redirects', 'rr-netlify'],
    ['rr-spa-prerender', 'rr-pre'],
  ])

  it("Gatsby: folder pages, page data on client navigation, the 404 page's data for a missing page", async () => {
    const { s, browser, username, port, out } = site
    const own = `http://gatsby.${username}.localhost:${port}`
    assertLive(out.get('gatsby'), own)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      // a missing page's data is a 404 too; Gatsby's pages link no icon, so Chromium asks for one
      const errors = watchErrors(
        page,
        ['/nope', '/favicon.ico', '/app-missing.js'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [
        `${own}/`,
        `${own}/about`,
        `${own}/about/`,
        `${own}/blog/first`,
        `${own}/nope`,
        `${own}/nope/`,
        `http://${username}.localhost:${port}/gatsby/about/`,
        `${s.url}/${username}/gatsby/blog/first/`,
      ])
        seen.push(await opened(page, url))
      assert.deepEqual(seen, [
        '200 / Gatsby home / Gatsby home',
        '301 200 /about/ Gatsby about / Gatsby about',
        '200 /about/ Gatsby about / Gatsby about',
        '301 200 /blog/first/ Gatsby post first / Gatsby post first',
        // 404.html, whose client then shows the page data of /404.html
        '404 /nope Gatsby not found / Gatsby not found',
        '404 /nope/ Gatsby not found / Gatsby not found',
        // built for /: its other URLs send browsers to the project's origin (decision 75)
        '302 200 /about/ Gatsby about / Gatsby about',
        '302 200 /blog/first/ Gatsby post first / Gatsby post first',
      ])
      assert.deepEqual(
        await fetched(page, [
          '/page-data/app-data.json',
          '/page-data/index/page-data.json',
          '/page-data/blog/first/page-data.json',
          '/page-data/nope/page-data.json',
          '/app-missing.js',
        ]),
        [
          '200 application/json; charset=utf-8 /page-data/app-data.json {',
          '200 application/json; charset=utf-8 /page-data/index/page-data.json {',
          '200 application/json; charset=utf-8 /page-data/blog/first/page-data.json {',
          '404 text/html; charset=utf-8 /page-data/nope/page-data.json <',
          '404 text/html; charset=utf-8 /app-missing.js <',
        ],
      )

      // links: page data and the component chunk are fetched, the URL pushed
      await page.goto(`${own}/`)
      await rendered(page)
      assert.equal(await page.locator('#site').textContent(), 'Gatsby min', 'the page query result, from its page data')
      const pageData: string[] = []
      page.on('request', (r) => {
        const path = new URL(r.url()).pathname
        if (path.endsWith('/page-data.json')) pageData.push(path)
      })
      await nav(page, () => page.locator('#nav-about').click(), 'Gatsby about')
      await nav(page, () => page.locator('#nav-post').click(), 'Gatsby post first')
      await nav(page, () => page.locator('#rel-about').click(), 'Gatsby about')
      await nav(page, () => page.locator('#nav-missing').click(), 'Gatsby not found')
      assert.equal(page.url(), `${own}/nope/`)
      await nav(page, () => page.goBack(), 'Gatsby about')
      await nav(page, () => page.goBack(), 'Gatsby post first')
      await nav(page, () => page.goForward(), 'Gatsby about')
      assert.deepEqual(pageData, [
        '/page-data/about/page-data.json',
        '/page-data/blog/first/page-data.json',
        '/page-data/about/page-data.json',
        '/page-data/nope/page-data.json',
        '/page-data/404.html/page-data.json',
        '/page-data/about/page-data.json',
        '/page-data/blog/first/page-data.json',
        '/page-data/about/page-data.json',
      ])
      const reloaded = await page.reload()
      assert.equal(`${reloaded?.status()} ${page.url()}`, `200 ${own}/about/`, 'the deep link reloaded')
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it('Gatsby with pathPrefix and --prefix-paths: under the user origin, page data under the prefix', async () => {
    const { s, browser, username, port, out } = site
    const base = `http://${username}.localhost:${port}/gatsby-pp`
    assertLive(out.get('gatsby-pp'), base)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(
        page,
        ['/nope', '/favicon.ico'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [`${base}/`, base, `${base}/about`, `${base}/blog/first/`, `${base}/nope/`, `${s.url}/${username}/gatsby-pp/about/`])
        seen.push(await opened(page, url))
      assert.deepEqual(seen, [
        '200 /gatsby-pp/ Gatsby home / Gatsby home',
        '301 200 /gatsby-pp/ Gatsby home / Gatsby home',
        '301 200 /gatsby-pp/about/ Gatsby about / Gatsby about',
        '200 /gatsby-pp/blog/first/ Gatsby post first / Gatsby post first',
        // the project's 404.html, as a GitHub Pages project site sends it
        '404 /gatsby-pp/nope/ Gatsby not found / Gatsby not found',
        // the path form sends browsers to the user's origin (decision 69)
        '302 200 /gatsby-pp/about/ Gatsby about / Gatsby about',
      ])
      await page.goto(`${base}/`)
      await rendered(page)
      const pageData: string[] = []
      page.on('request', (r) => {
        const path = new URL(r.url()).pathname
        if (path.includes('/page-data/')) pageData.push(path)
      })
      await nav(page, () => page.locator('#nav-post').click(), 'Gatsby post first')
      await nav(page, () => page.locator('#rel-about').click(), 'Gatsby about')
      await nav(page, () => page.locator('#nav-missing').click(), 'Gatsby not found')
      await nav(page, () => page.goBack(), 'Gatsby about')
      assert.equal(page.url(), `${base}/about/`)
      assert.ok(pageData.length >= 8 && pageData.every((p) => p.startsWith('/gatsby-pp/page-data/')), pageData.join(' '))
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it("React Router's SPA: no fallback as on GitHub Pages; with `/* /index.html 200` every route opens", async () => {
    const { s, browser, username, port, out } = site
    const plain = `http://rr-spa.${username}.localhost:${port}`
    const netlify = `http://rr-netlify.${username}.localhost:${port}`
    assertLive(out.get('rr-spa'), plain)
    assertLive(out.get('rr-netlify'), netlify)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(
        page,
        ['/about', '/blog/first'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [
        `${plain}/`,
        `${plain}/about`,
        `${plain}/blog/first`,
        `${netlify}/`,
        `${netlify}/about`,
        `${netlify}/about/`,
        `${netlify}/blog`,
        `${netlify}/blog/first`,
        `${netlify}/nope`,
        `http://${username}.localhost:${port}/rr-netlify/blog/first`,
        `${s.url}/${username}/rr-netlify/blog/first`,
      ])
        seen.push(await opened(page, url))
      assert.deepEqual(seen, [
        '200 / RR home / RR home',
        // no file, no rule: the host's 404, as GitHub Pages and Netlify answer
        '404 /about 404 - page not found / 404 - page not found',
        '404 /blog/first 404 - page not found / 404 - page not found',
        // the rule sends index.html for every path; the router shows the URL's route
        '200 / RR home / RR home',
        '200 /about RR about / RR about',
        '200 /about/ RR about / RR about',
        '200 /blog RR blog / RR blog',
        '200 /blog/first RR post first / RR post first',
        '200 /nope RR not found / RR not found',
        '302 200 /blog/first RR post first / RR post first',
        '302 200 /blog/first RR post first / RR post first',
      ])
      // the rule also answers a missing asset with the page, as Netlify's does
      assert.deepEqual(await fetched(page, ['/assets/missing.js', '/logo.svg']), [
        '200 text/html; charset=utf-8 /assets/missing.js <',
        '200 image/svg+xml /logo.svg <',
      ])

      // client routes, a nested one through a relative link, back and forward, each site
      for (const origin of [plain, netlify]) {
        await page.goto(`${origin}/`)
        await rendered(page)
        await nav(page, () => page.locator('#nav-about').click(), 'RR about')
        await nav(page, () => page.locator('#nav-blog').click(), 'RR blog')
        await nav(page, () => page.locator('#post-link').click(), 'RR post first')
        await nav(page, () => page.locator('#nav-missing').click(), 'RR not found')
        await nav(page, () => page.goBack(), 'RR post first')
        await nav(page, () => page.goBack(), 'RR blog')
        await nav(page, () => page.goForward(), 'RR post first')
        assert.equal(page.url(), `${origin}/blog/first`)
        // reloading the deep link: a 404 without the rule, the route with it
        const reloaded = await page.reload()
        await rendered(page)
        assert.equal(`${reloaded?.status()} ${await page.title()}`, origin === plain ? `404 ${HOST_404}` : '200 RR post first', origin)
      }
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it("React Router's prerender with ssr: false: prerendered folders, `.data` payloads, the SPA fallback", async () => {
    const { browser, username, port, out } = site
    const own = `http://rr-pre.${username}.localhost:${port}`
    assertLive(out.get('rr-pre'), own)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(page)
      const seen: string[] = []
      for (const url of ['/', '/about', '/about/', '/blog/first', '/nope']) {
        seen.push(await opened(page, `${own}${url}`))
        if (url.startsWith('/about')) assert.equal(await page.locator('#built').textContent(), 'at build time', 'hydrated from the streamed loader data')
      }
      assert.deepEqual(seen, [
        '200 / RR home / RR home',
        // about/index.html: a folder, named without its slash, goes to the slash form
        '301 200 /about/ RR about / RR about',
        '200 /about/ RR about / RR about',
        // not prerendered: `/* /__spa-fallback.html 200` in _redirects, as React Router's docs say
        '200 /blog/first RR post first / RR post first',
        '200 /nope RR not found / RR not found',
      ])
      assert.deepEqual(await fetched(page, ['/about.data']), ['200 application/octet-stream /about.data ['])
      await page.goto(`${own}/`)
      await rendered(page)
      const data: string[] = []
      page.on('request', (r) => {
        if (r.url().includes('.data')) data.push(new URL(r.url()).pathname)
      })
      await nav(page, () => page.locator('#nav-about').click(), 'RR about')
      assert.equal(await page.locator('#built').textContent(), 'at build time', 'from about.data')
      await nav(page, () => page.locator('#nav-post').click(), 'RR post first')
      await nav(page, () => page.goBack(), 'RR about')
      assert.deepEqual(data, ['/about.data', '/about.data'])
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })
})
