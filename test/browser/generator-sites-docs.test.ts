import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { ENGINES } from '../support/server.js'
import { notCancelled, watchErrors } from '../support/browser.js'
import { assertLive, deployedFixtures, fetchedTypes, statusChain } from '../support/generator-sites.js'

// Jekyll 4.3 (GitHub Pages' own generator), MkDocs 1.4 and Sphinx 5.3, deployed with
// `svc deploy` and opened in Chromium (decision 195). Jekyll writes pretty permalinks as
// folders, `.html` ones and posts as files, and `404.html`; with `baseurl` every URL starts
// with it. MkDocs writes folder pages (or `.html` ones without `use_directory_urls`), a
// `404.html` loading its files from `/`, and a search index its worker fetches. Sphinx writes
// relative `.html` pages (folders with `dirhtml`), `_static/`, `_sources/`, `searchindex.js`
// and no 404 page. The fixtures are those builds with their HTML and search files; themes'
// CSS, jQuery, Bootstrap and lunr.js are cut down by hand (test/fixtures/ssg/jekyll-*,
// mkdocs-*, sphinx-*).
const engine = ENGINES[0]

/** The title of the host's own 404 page in English (Chromium's default language here). */
const HOST_404 = '404 - page not found'

/** How a URL answers a browser: statuses along redirects, where it ends, title, heading, the theme script's mark. */
async function opened(page: Page, url: string): Promise<string> {
  const res = await page.goto(url)
  assert.ok(res, url)
  const chain = await statusChain(res)
  const [h1, ran] = await page.evaluate(() => [
    document.querySelector('h1')?.textContent?.trim().replace(/¶$/, '') ?? '-',
    document.documentElement.dataset.ran ?? '-',
  ])
  return `${chain.join(' ')} ${page.url().replace(/^http:\/\/[^/]+/, '')} ${await page.title()} / ${h1} / ${ran}`
}

describe(`sites built with Jekyll, MkDocs and Sphinx, deployed with svc deploy [${engine}]`, () => {
  const site = deployedFixtures(engine, [
    ['jekyll-site', 'jekyll'],
    ['jekyll-baseurl', 'jekyll-base'],
    ['mkdocs-site', 'mkdocs'],
    ['mkdocs-files', 'mkdocs-files'],
    ['sphinx-html', 'sphinx'],
    ['sphinx-dirhtml', 'sphinx-dir'],
  ])

  it('Jekyll: pretty and .html permalinks, a post, 404.html; with baseurl, under the user origin', async () => {
    const { s, browser, username, port, out } = site
    const own = `http://jekyll.${username}.localhost:${port}`
    const user = `http://${username}.localhost:${port}`
    // its layout loads /assets/...: built for /
    assertLive(out.get('jekyll'), own)
    assertLive(out.get('jekyll-base'), `${user}/jekyll-base`)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(
        page,
        ['/nope', '/favicon.ico'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [
        `${own}/`,
        `${own}/about`,
        `${own}/about/`,
        `${own}/contact`,
        `${own}/contact.html`,
        `${own}/contact/`,
        `${own}/2024/01/15/first-post`,
        `${own}/2024/01/15/first-post.html`,
        `${own}/nope`,
        `${own}/nope/`,
        `${user}/jekyll/about/`,
        `${s.url}/${username}/jekyll/contact`,
        `${user}/jekyll-base/`,
        `${user}/jekyll-base/about`,
        `${user}/jekyll-base/contact`,
        `${user}/jekyll-base/nope/`,
        `${s.url}/${username}/jekyll-base/2024/01/15/first-post`,
      ])
        seen.push(await opened(page, url))
      assert.deepEqual(seen, [
        '200 / Home | Jekyll site / Home / /',
        // `permalink: /about/` is a folder, as GitHub Pages sends it
        '301 200 /about/ About | Jekyll site / About / /about/',
        '200 /about/ About | Jekyll site / About / /about/',
        // `permalink: /contact.html` answers without its extension too; its slash form goes to it
        '200 /contact Contact | Jekyll site / Contact / /contact',
        '200 /contact.html Contact | Jekyll site / Contact / /contact.html',
        '301 200 /contact Contact | Jekyll site / Contact / /contact',
        '200 /2024/01/15/first-post First post | Jekyll site / First post / /2024/01/15/first-post',
        '200 /2024/01/15/first-post.html First post | Jekyll site / First post / /2024/01/15/first-post.html',
        // 404.html with its layout, loaded from / at any depth
        '404 /nope Not found | Jekyll site / Not found / /nope',
        '404 /nope/ Not found | Jekyll site / Not found / /nope/',
        // built for /: its other URLs send browsers to the project's origin (decision 75)
        '302 200 /about/ About | Jekyll site / About / /about/',
        '302 200 /contact Contact | Jekyll site / Contact / /contact',
        // baseurl /jekyll-base: served where GitHub Pages serves a project site
        '200 /jekyll-base/ Home | Jekyll site / Home / /jekyll-base/',
        '301 200 /jekyll-base/about/ About | Jekyll site / About / /jekyll-base/about/',
        '200 /jekyll-base/contact Contact | Jekyll site / Contact / /jekyll-base/contact',
        '404 /jekyll-base/nope/ Not found | Jekyll site / Not found / /jekyll-base/nope/',
        '302 200 /jekyll-base/2024/01/15/first-post First post | Jekyll site / First post / /jekyll-base/2024/01/15/first-post',
      ])
      // the layout's links, clicked from the base site
      for (const [link, title] of [
        ['#nav-about', 'About'],
        ['#nav-contact', 'Contact'],
        ['#nav-post', 'First post'],
        ['#nav-home', 'Home'],
        ['#nav-missing', 'Not found'],
      ]) {
        await page.locator(link).click()
        await page.waitForFunction((t) => document.title === `${t} | Jekyll site` && document.documentElement.dataset.ran === location.pathname, title)
      }
      assert.equal(page.url(), `${user}/jekyll-base/nope/`)
      assert.deepEqual(await fetchedTypes(page, ['/jekyll-base/assets/style.css', '/jekyll-base/assets/site.js']), [
        '200 text/css; charset=utf-8 /jekyll-base/assets/style.css',
        '200 text/javascript; charset=utf-8 /jekyll-base/assets/site.js',
      ])
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it('MkDocs: folder and .html pages, a 404.html loading from /, its search worker and index', async () => {
    const { browser, username, port, out } = site
    const own = `http://mkdocs.${username}.localhost:${port}`
    const files = `http://mkdocs-files.${username}.localhost:${port}`
    assertLive(out.get('mkdocs'), own)
    assertLive(out.get('mkdocs-files'), files)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(
        page,
        ['/nope', '/guide/'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [
        `${own}/`,
        `${own}/guide/install`,
        `${own}/guide/usage/`,
        `${own}/guide/`,
        `${own}/guide/nope/`,
        `http://${username}.localhost:${port}/mkdocs/guide/usage/`,
        `${files}/guide/install.html`,
        `${files}/guide/install`,
        `${files}/guide/install/`,
        `${files}/nope`,
      ])
        seen.push(await opened(page, url))
      assert.deepEqual(seen, [
        '200 / MkDocs site / Welcome to MkDocs / /',
        '301 200 /guide/install/ Install - MkDocs site / Install / /guide/install/',
        '200 /guide/usage/ Usage - MkDocs site / Usage / /guide/usage/',
        // a section without its own page is no folder page
        '404 /guide/ MkDocs site / 404 / /guide/',
        '404 /guide/nope/ MkDocs site / 404 / /guide/nope/',
        '302 200 /guide/usage/ Usage - MkDocs site / Usage / /guide/usage/',
        '200 /guide/install.html Install - MkDocs site / Install / /guide/install.html',
        '200 /guide/install Install - MkDocs site / Install / /guide/install',
        '301 200 /guide/install Install - MkDocs site / Install / /guide/install',
        '404 /nope MkDocs site / 404 / /nope',
      ])
      // search: main.js starts search/worker.js, which fetches search_index.json; `?q=` searches
      for (const [url, hit] of [
        [`${own}/guide/usage/?q=zebrafish`, `${own}/guide/install/`],
        [`${files}/guide/usage.html?q=zebrafish`, `${files}/guide/install.html`],
      ]) {
        await page.goto(url)
        const first = page.locator('#mkdocs-search-results a').first()
        await first.waitFor({ state: 'attached' })
        assert.equal(await first.evaluate((a) => (a as HTMLAnchorElement).href), hit)
        await page.goto(hit)
        assert.equal(await page.title(), 'Install - MkDocs site')
      }
      assert.deepEqual(await fetchedTypes(page, ['/search/search_index.json', '/search/worker.js', '/img/favicon.ico']), [
        '200 application/json; charset=utf-8 /search/search_index.json',
        '200 text/javascript; charset=utf-8 /search/worker.js',
        '200 image/x-icon /img/favicon.ico',
      ])
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it('Sphinx: relative .html and dirhtml pages under the user origin, _static, _sources, its search', async () => {
    const { s, browser, username, port, out } = site
    const user = `http://${username}.localhost:${port}`
    // relative paths only: built for any folder
    assertLive(out.get('sphinx'), `${user}/sphinx`)
    assertLive(out.get('sphinx-dir'), `${user}/sphinx-dir`)
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(
        page,
        ['/nope', '/favicon.ico'].map((url) => ({ url, status: 404 })),
      )
      const seen: string[] = []
      for (const url of [
        `${user}/sphinx/`,
        `${user}/sphinx/install.html`,
        `${user}/sphinx/install`,
        `${user}/sphinx/install/`,
        `${user}/sphinx/genindex.html`,
        `${user}/sphinx/nope.html`,
        `${s.url}/${username}/sphinx/usage.html`,
        `http://sphinx.${username}.localhost:${port}/usage.html`,
        `${user}/sphinx-dir/install`,
        `${user}/sphinx-dir/genindex/`,
        `${user}/sphinx-dir/nope/`,
      ])
        seen.push(await opened(page, url))
      const home = 'Welcome to Sphinx site’s documentation! — Sphinx site 1.0 documentation'
      assert.deepEqual(seen, [
        `200 /sphinx/ ${home} / Welcome to Sphinx site’s documentation! / -`,
        '200 /sphinx/install.html Install — Sphinx site 1.0 documentation / Install / -',
        // GitHub Pages' `/page` -> `page.html`
        '200 /sphinx/install Install — Sphinx site 1.0 documentation / Install / -',
        '301 200 /sphinx/install Install — Sphinx site 1.0 documentation / Install / -',
        '200 /sphinx/genindex.html Index — Sphinx site 1.0 documentation / Index / -',
        // no 404.html of its own: the host's page (decision 193)
        `404 /sphinx/nope.html ${HOST_404} / 404 - page not found / -`,
        '302 200 /sphinx/usage.html Usage — Sphinx site 1.0 documentation / Usage / -',
        // at the root of its own origin too
        '200 /usage.html Usage — Sphinx site 1.0 documentation / Usage / -',
        '301 200 /sphinx-dir/install/ Install — Sphinx site 1.0 documentation / Install / -',
        '200 /sphinx-dir/genindex/ Index — Sphinx site 1.0 documentation / Index / -',
        `404 /sphinx-dir/nope/ ${HOST_404} / 404 - page not found / -`,
      ])
      // search.html loads searchindex.js and fetches each hit's page for its summary
      for (const [url, hit] of [
        [`${user}/sphinx/search.html?q=zebrafish`, `${user}/sphinx/install.html`],
        [`${user}/sphinx-dir/search/?q=zebrafish`, `${user}/sphinx-dir/install/`],
      ]) {
        await page.goto(url)
        const summary = page.locator('ul.search li p.context')
        await summary.waitFor()
        assert.match((await summary.textContent()) ?? '', /zebrafish/)
        await Promise.all([page.waitForURL(hit), page.locator('ul.search li a').first().click()])
        assert.equal(await page.title(), 'Install — Sphinx site 1.0 documentation')
        // sphinx_highlight.js marks the searched word (passed in localStorage)
        await page.locator('span.highlighted', { hasText: 'zebrafish' }).waitFor()
      }
      await page.locator('a[href="../_sources/install.rst.txt"]').click()
      await page.waitForURL(`${user}/sphinx-dir/_sources/install.rst.txt`)
      assert.match((await page.textContent('body')) ?? '', /Search word: zebrafish/)
      assert.deepEqual(await fetchedTypes(page, ['../_static/searchtools.js', '../searchindex.js', '../objects.inv', 'usage.rst.txt']), [
        '200 text/javascript; charset=utf-8 ../_static/searchtools.js',
        '200 text/javascript; charset=utf-8 ../searchindex.js',
        '200 application/octet-stream ../objects.inv',
        '200 text/plain; charset=utf-8 usage.rst.txt',
      ])
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })
})
