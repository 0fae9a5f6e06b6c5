import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { ENGINES } from '../support/server.js'
import { notCancelled, watchErrors } from '../support/browser.js'
import { assertLive, deployedFixtures, fetchedTypes, markWindow, sameWindow, statusChain } from '../support/generator-sites.js'

// Docusaurus 3.10 (classic preset) and Eleventy 3.1, deployed with `svc deploy` and opened in
// Chromium (decision 199). Docusaurus writes each route as a folder (`docs/intro/index.html`)
// but links it without its slash (`trailingSlash` undefined), hydrates React on every page and
// then routes on the client, loading each route's chunks; its `404.html` is its own client
// rendering the not-found route. Eleventy writes pretty permalinks as folders, `permalink:
// /plain.html` as a file, and `404.html`; with `--pathprefix` and its HTML base plugin every
// URL starts with the prefix. The fixtures are those builds as written, less the blog's feeds,
// `sitemap.xml` and the scripts' `.LICENSE.txt` notes, which no page loads:
// - docusaurus-site, docusaurus-sub: `@docusaurus/core` and `@docusaurus/preset-classic` 3.10.2,
//   React 19.3, Node 20; config `title: 'Docu site'`, `url: 'https://example.github.io'`,
//   `baseUrl` '/' (then '/sub/'), `onBrokenLinks: 'throw'`, docs with `sidebars.js` `{ docs:
//   ['intro', 'guide'] }`, blog, `customCss` setting `--ifm-color-primary: #2e8555`, a navbar
//   (Docs sidebar, Blog), `colorMode.disableSwitch`; `docs/intro.md` and `docs/guide.md` (each
//   `# Title` and a link to the other), `blog/2024-01-15-first-post.md`, `src/pages/index.md`
//   (`# Docu home`, links to /docs/intro and /blog), `static/img/favicon.svg`; `docusaurus
//   build` (then `--out-dir build-sub`).
// - eleventy-site, eleventy-base: `@11ty/eleventy` 3.1.8, `HtmlBasePlugin` and a passthrough
//   copy of `src/assets`; a Nunjucks layout linking /assets/style.css, site.js (marks
//   `data-ran`), logo.svg, favicon.svg and each page; `index.md`, `about.md`, `posts/first.md`,
//   `plain.md` (`permalink: /plain.html`), `404.md` (`permalink: /404.html`); `eleventy` (then
//   `--pathprefix=/eleventy-base/ --output=_site-base`).
const engine = ENGINES[0]

describe(`sites built with Docusaurus and Eleventy, deployed with svc deploy [${engine}]`, () => {
  const site = deployedFixtures(engine, [
    ['docusaurus-site', 'docu'],
    ['docusaurus-sub', 'sub'],
    ['eleventy-site', 'eleventy'],
    ['eleventy-base', 'eleventy-base'],
  ])

  /** How a URL answers a browser once Docusaurus has hydrated: statuses along redirects, where it ends, title, heading, styled. */
  async function docusaurus(page: Page, url: string): Promise<string> {
    const res = await page.goto(url)
    assert.ok(res, url)
    const chain = await statusChain(res)
    await hydrated(page)
    return `${chain.join(' ')} ${new URL(page.url()).pathname} ${await page.title()} / ${await shown(page)}`
  }
  /**
   * Docusaurus has hydrated the page and its head manager has written the route's title (it
   * does so on the animation frame after the commit that sets `data-has-hydrated`).
   */
  async function hydrated(page: Page): Promise<void> {
    await page.locator('html[data-has-hydrated=true]').waitFor({ state: 'attached' })
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))))
  }
  /** The page's heading (a blog list's first post title), and whether the theme's stylesheet (Infima with the site's custom.css) applies. */
  const shown = (page: Page) =>
    page.evaluate(() => {
      const h1 = (document.querySelector('h1') ?? document.querySelector('article h2'))?.textContent?.trim() ?? '-'
      const styled = getComputedStyle(document.documentElement).getPropertyValue('--ifm-color-primary').trim() === '#2e8555'
      return `${h1}${styled ? '' : ' (unstyled)'}`
    })

  it('Docusaurus: folder routes linked without their slash, client navigation, reloads, its own 404.html', async () => {
    const { s, browser, username, port, out } = site
    const own = `http://docu.${username}.localhost:${port}`
    const user = `http://${username}.localhost:${port}`
    // baseUrl '/': its pages load /assets/..., so the site is built for / (decision 75)
    assertLive(out.get('docu'), own)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(
        page,
        ['/nope', '/docs/nope/', '/assets/js/nope.js'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [
        `${own}/`,
        `${own}/docs/intro`,
        `${own}/docs/intro/`,
        `${own}/docs/guide`,
        `${own}/blog`,
        `${own}/blog/2024/01/15/first-post`,
        `${own}/blog/archive/`,
        `${own}/nope`,
        `${own}/docs/nope/`,
        `${user}/docu/docs/guide/`,
        `${s.url}/${username}/docu/docs/intro`,
      ])
        seen.push(await docusaurus(page, url))
      assert.deepEqual(seen, [
        '200 / Home | Docu site / Docu home',
        // a folder's page without its slash: 301 to its slash form, as GitHub Pages and Netlify
        '301 200 /docs/intro/ Intro | Docu site / Intro',
        '200 /docs/intro/ Intro | Docu site / Intro',
        '301 200 /docs/guide/ Guide | Docu site / Guide',
        '301 200 /blog/ Blog | Docu site / First post',
        '301 200 /blog/2024/01/15/first-post/ First post | Docu site / First post',
        '200 /blog/archive/ Archive | Docu site / Archive',
        // Docusaurus's own 404.html, its client rendering the not-found route, at any depth
        '404 /nope Page Not Found | Docu site / Page Not Found',
        // under /docs/ the docs plugin's route renders the not-found content, with the site's title
        '404 /docs/nope/ Docu site / Page Not Found',
        // the user's origin and the path form send browsers to the project's origin
        '302 200 /docs/guide/ Guide | Docu site / Guide',
        '302 301 200 /docs/intro/ Intro | Docu site / Intro',
      ])

      // the sidebar's links: client navigation (no page load), to the slashless URLs it links
      await page.goto(`${own}/docs/intro`)
      await hydrated(page)
      await markWindow(page)
      const sidebar = page.locator('nav.menu')
      for (const [label, path] of [
        ['Guide', '/docs/guide'],
        ['Intro', '/docs/intro'],
      ]) {
        await sidebar.getByRole('link', { name: label, exact: true }).click()
        await page.waitForURL(`${own}${path}`)
        await page.locator('article h1', { hasText: label }).waitFor()
        assert.equal(await sameWindow(page), true, `${label}: shown by the client router`)
      }
      // the doc's own link to the next one, then back and forward
      await page.locator('article a', { hasText: 'guide' }).click()
      await page.waitForURL(`${own}/docs/guide`)
      await page.goBack()
      await page.locator('article h1', { hasText: 'Intro' }).waitFor()
      await page.goForward()
      await page.locator('article h1', { hasText: 'Guide' }).waitFor()
      assert.equal(await sameWindow(page), true, 'back and forward: the client router')
      // a reload of the client's slashless URL, and of its slash form
      const reloaded = await page.reload()
      assert.ok(reloaded)
      assert.deepEqual(await statusChain(reloaded), [301, 200])
      assert.equal(page.url(), `${own}/docs/guide/`)
      await hydrated(page)
      assert.equal(await shown(page), 'Guide')
      assert.equal((await page.reload())?.status(), 200)
      await hydrated(page)
      assert.equal(await shown(page), 'Guide')
      // navbar to the blog, its post, and a reload there
      await markWindow(page)
      await page.locator('nav.navbar').getByRole('link', { name: 'Blog', exact: true }).click()
      await page.waitForURL(`${own}/blog`)
      await page.locator('article h2 a', { hasText: 'First post' }).click()
      await page.waitForURL(`${own}/blog/2024/01/15/first-post`)
      await page.locator('article h1', { hasText: 'First post' }).waitFor()
      assert.equal(await sameWindow(page), true, 'blog: the client router')
      const post = await page.reload()
      assert.ok(post)
      assert.deepEqual(await statusChain(post), [301, 200])
      await hydrated(page)
      assert.equal(await shown(page), 'First post')

      assert.deepEqual(await fetchedTypes(page, ['/assets/css/styles.cfaab485.css', '/assets/js/main.f20111ca.js', '/img/favicon.svg', '/assets/js/nope.js']), [
        '200 text/css; charset=utf-8 /assets/css/styles.cfaab485.css',
        '200 text/javascript; charset=utf-8 /assets/js/main.f20111ca.js',
        '200 image/svg+xml /img/favicon.svg',
        '404 text/html; charset=utf-8 /assets/js/nope.js',
      ])
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it("Docusaurus with baseUrl '/sub/': a project site under the user's origin", async () => {
    const { s, browser, username, port, out } = site
    const user = `http://${username}.localhost:${port}`
    assertLive(out.get('sub'), `${user}/sub`)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(
        page,
        ['/sub/nope', '/sub/docs/nope'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [
        `${user}/sub/`,
        `${user}/sub`,
        `${user}/sub/docs/intro`,
        `${user}/sub/docs/guide/`,
        `${user}/sub/blog/2024/01/15/first-post`,
        `${user}/sub/nope`,
        `${user}/sub/docs/nope`,
        `${s.url}/${username}/sub/docs/guide`,
      ])
        seen.push(await docusaurus(page, url))
      assert.deepEqual(seen, [
        '200 /sub/ Home | Docu site / Docu home',
        '301 200 /sub/ Home | Docu site / Docu home',
        '301 200 /sub/docs/intro/ Intro | Docu site / Intro',
        '200 /sub/docs/guide/ Guide | Docu site / Guide',
        '301 200 /sub/blog/2024/01/15/first-post/ First post | Docu site / First post',
        '404 /sub/nope Page Not Found | Docu site / Page Not Found',
        '404 /sub/docs/nope Docu site / Page Not Found',
        // the path form sends browsers to the user's origin, where /sub/ is the project
        '302 301 200 /sub/docs/guide/ Guide | Docu site / Guide',
      ])
      await page.goto(`${user}/sub/`)
      await hydrated(page)
      await markWindow(page)
      await page.locator('article a', { hasText: 'intro' }).click()
      await page.waitForURL(`${user}/sub/docs/intro`)
      await page.locator('nav.menu').getByRole('link', { name: 'Guide', exact: true }).click()
      await page.waitForURL(`${user}/sub/docs/guide`)
      await page.locator('article h1', { hasText: 'Guide' }).waitFor()
      assert.equal(await sameWindow(page), true, 'shown by the client router')
      const reloaded = await page.reload()
      assert.ok(reloaded)
      assert.deepEqual(await statusChain(reloaded), [301, 200])
      assert.equal(page.url(), `${user}/sub/docs/guide/`)
      await hydrated(page)
      assert.equal(await shown(page), 'Guide')
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  /** How a URL answers a browser: statuses along redirects, where it ends, title, heading, the script's mark, styled, logo. */
  async function eleventy(page: Page, url: string): Promise<string> {
    const res = await page.goto(url)
    assert.ok(res, url)
    const chain = await statusChain(res)
    const shown = await page.evaluate(async () => {
      const img = document.querySelector('main img') as HTMLImageElement
      await img.decode().catch(() => {})
      const h1 = document.querySelector('h1')
      const styled = h1 !== null && getComputedStyle(h1).color === 'rgb(200, 0, 0)'
      return `${h1?.textContent ?? '-'} / ${document.documentElement.dataset.ran ?? '-'}${styled ? '' : ' (unstyled)'}${img.naturalWidth > 0 ? '' : ' (no logo)'}`
    })
    return `${chain.join(' ')} ${new URL(page.url()).pathname} ${await page.title()} / ${shown}`
  }

  it('Eleventy: pretty permalinks, a .html permalink, 404.html, assets; with a path prefix, under the user origin', async () => {
    const { s, browser, username, port, out } = site
    const own = `http://eleventy.${username}.localhost:${port}`
    const user = `http://${username}.localhost:${port}`
    // its layout loads /assets/...: built for /
    assertLive(out.get('eleventy'), own)
    assertLive(out.get('eleventy-base'), `${user}/eleventy-base`)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(
        page,
        ['/nope', '/missing/', '/assets/nope.css'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [
        `${own}/`,
        `${own}/about`,
        `${own}/about/`,
        `${own}/posts/first`,
        `${own}/plain.html`,
        `${own}/plain`,
        `${own}/plain/`,
        `${own}/nope`,
        `${own}/about/nope/`,
        `${user}/eleventy/posts/first/`,
        `${user}/eleventy-base/`,
        `${user}/eleventy-base/about`,
        `${user}/eleventy-base/plain`,
        `${user}/eleventy-base/nope/`,
        `${s.url}/${username}/eleventy-base/plain.html`,
      ])
        seen.push(await eleventy(page, url))
      assert.deepEqual(seen, [
        '200 / Home | Eleventy site / Home / /',
        // pretty permalinks are folders: the bare form 301 to the slash form
        '301 200 /about/ About | Eleventy site / About / /about/',
        '200 /about/ About | Eleventy site / About / /about/',
        '301 200 /posts/first/ First post | Eleventy site / First post / /posts/first/',
        // `permalink: /plain.html` answers without its extension too; its slash form goes to it
        '200 /plain.html Plain | Eleventy site / Plain / /plain.html',
        '200 /plain Plain | Eleventy site / Plain / /plain',
        '301 200 /plain Plain | Eleventy site / Plain / /plain',
        // 404.html with the layout, its files loaded from / at any depth
        '404 /nope Not found | Eleventy site / Not found / /nope',
        '404 /about/nope/ Not found | Eleventy site / Not found / /about/nope/',
        // built for /: the user's origin sends browsers to the project's (decision 75)
        '302 200 /posts/first/ First post | Eleventy site / First post / /posts/first/',
        // --pathprefix /eleventy-base/: served where GitHub Pages serves a project site
        '200 /eleventy-base/ Home | Eleventy site / Home / /eleventy-base/',
        '301 200 /eleventy-base/about/ About | Eleventy site / About / /eleventy-base/about/',
        '200 /eleventy-base/plain Plain | Eleventy site / Plain / /eleventy-base/plain',
        '404 /eleventy-base/nope/ Not found | Eleventy site / Not found / /eleventy-base/nope/',
        '302 200 /eleventy-base/plain.html Plain | Eleventy site / Plain / /eleventy-base/plain.html',
      ])
      // the layout's links, clicked from the prefixed site
      for (const [link, title] of [
        ['#nav-about', 'About'],
        ['#nav-post', 'First post'],
        ['#nav-plain', 'Plain'],
        ['#nav-home', 'Home'],
        ['#nav-missing', 'Not found'],
      ]) {
        await page.locator(link).click()
        await page.waitForFunction((t) => document.title === `${t} | Eleventy site` && document.documentElement.dataset.ran === location.pathname, title)
      }
      assert.equal(page.url(), `${user}/eleventy-base/missing/`)
      assert.deepEqual(
        await fetchedTypes(page, [
          '/eleventy-base/assets/style.css',
          '/eleventy-base/assets/site.js',
          '/eleventy-base/assets/logo.svg',
          '/eleventy-base/assets/nope.css',
        ]),
        [
          '200 text/css; charset=utf-8 /eleventy-base/assets/style.css',
          '200 text/javascript; charset=utf-8 /eleventy-base/assets/site.js',
          '200 image/svg+xml /eleventy-base/assets/logo.svg',
          '404 text/html; charset=utf-8 /eleventy-base/assets/nope.css',
        ],
      )
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })
})
