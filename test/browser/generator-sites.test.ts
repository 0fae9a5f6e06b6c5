import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { ENGINES } from '../support/server.js'
import { loadedWidth, notCancelled, watchErrors } from '../support/browser.js'
import { clientNav, deployedFixtures, statusChain } from '../support/generator-sites.js'

// Sites from today's generators, deployed with `svc deploy` and opened in Chromium: what
// Astro 7 (`build.format` 'directory' with its client router, and 'file') and VitePress 1.6
// (`base: '/docs/'`, `cleanUrls: true`, local search) build must show what GitHub Pages and
// Netlify show. The fixtures are those builds cut down by hand (test/fixtures/ssg/astro-*,
// vitepress-docs): the same file layout, asset paths and client navigation.
const engine = ENGINES[0]

/** How a URL answers a browser: its statuses along redirects, where it ends, and what the page shows. */
async function opened(page: Page, url: string, ready: (page: Page) => Promise<unknown>): Promise<string> {
  const res = await page.goto(url)
  assert.ok(res, url)
  const chain = await statusChain(res)
  await ready(page)
  return `${chain.join(' ')} ${new URL(page.url()).pathname} ${await page.title()} / ${await page.locator('h1').first().textContent()}`
}

/** Runs `step` (a click) and checks the page showed `title` without loading a document. */
const nav = (page: Page, step: () => Promise<void>, title: string) => clientNav(page, step, ([t]) => document.title === t, [title], title)

describe(`sites built with Astro and VitePress, deployed with svc deploy [${engine}]`, () => {
  const site = deployedFixtures(engine, [
    ['astro-directory', 'astro'],
    ['astro-file', 'astro-file'],
    ['vitepress-docs', 'docs'],
  ])

  it("Astro's directory build: folder URLs, its 404 page for pages and assets, the client router", async () => {
    const { s, browser, username, port, out } = site
    const own = `http://astro.${username}.localhost:${port}`
    assert.match(out.get('astro') ?? '', new RegExp(`is live: ${own.replace(/[.]/g, '\\.')}/\n`), 'built for /: the project origin')
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const missing = ['/nope', '/img/missing.png', '/_astro/missing.js'].map((url) => ({ url, status: 404 }))
      const errors = watchErrors(page, missing)
      const ready = (p: Page) => p.locator('h1').first().waitFor()
      const seen: string[] = []
      for (const url of [
        `${own}/`,
        `${own}/about/`,
        `${own}/about`,
        `${own}/blog/post-1`,
        `${own}/blog/post-1/index.html`,
        `http://${username}.localhost:${port}/astro/blog/post-1/`,
        `${s.url}/${username}/astro/about/`,
        `${own}/nope/`,
        `${own}/nope`,
        `${own}/img/missing.png`,
        `${own}/_astro/missing.js`,
      ]) {
        seen.push(await opened(page, url, ready))
        if (!page.url().includes('nope') && !page.url().includes('missing')) {
          // the page's own script ran, its asset from public/ and its scoped style loaded
          assert.equal(await page.locator('#ran').textContent(), `script ran at ${new URL(page.url()).pathname}`, url)
          assert.ok((await loadedWidth(page.locator('#logo'))) > 0, url)
          assert.equal(await page.locator('h1').evaluate((h) => getComputedStyle(h).color), 'rgb(10, 20, 30)', url)
        }
      }
      assert.deepEqual(seen, [
        '200 / Astro home / Astro home',
        '200 /about/ Astro about / Astro about',
        // a folder named without its slash goes to the slash form, as on GitHub Pages and Netlify
        '301 200 /about/ Astro about / Astro about',
        '301 200 /blog/post-1/ Astro post 1 / Astro post 1',
        '200 /blog/post-1/index.html Astro post 1 / Astro post 1',
        // its other URLs take a browser to its own origin (decision 75)
        '302 200 /blog/post-1/ Astro post 1 / Astro post 1',
        '302 200 /about/ Astro about / Astro about',
        '404 /nope/ Astro not found / Astro not found',
        '404 /nope Astro not found / Astro not found',
        '404 /img/missing.png Astro not found / Astro not found',
        '404 /_astro/missing.js Astro not found / Astro not found',
      ])

      // <ClientRouter />: links are fetched and swapped in, the page's script runs again
      await page.goto(`${own}/`)
      await nav(page, () => page.locator('#nav-about').click(), 'Astro about')
      assert.equal(await page.locator('#ran').textContent(), 'script ran at /about/')
      await nav(page, () => page.locator('#nav-blog').click(), 'Astro blog')
      await nav(page, () => page.locator('#post-link').click(), 'Astro post 1')
      assert.equal(page.url(), `${own}/blog/post-1/`, 'a relative link from the folder URL')
      await nav(page, () => page.locator('#rel-back').click(), 'Astro blog')
      assert.equal(page.url(), `${own}/blog/`)
      await nav(page, () => page.locator('#nav-missing').click(), 'Astro not found')
      await nav(page, () => page.goBack().then(() => {}), 'Astro blog')
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it("Astro's file build: a page at its clean URL, the slash form sent to it, a page beside its folder", async () => {
    const { browser, username, port } = site
    const own = `http://astro-file.${username}.localhost:${port}`
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(page, [{ url: '/nope', status: 404 }])
      const ready = (p: Page) => p.locator('h1').first().waitFor()
      const seen: string[] = []
      for (const url of ['/about', '/about.html', '/about/', '/blog', '/blog/', '/blog/post-1', '/nope']) seen.push(await opened(page, `${own}${url}`, ready))
      assert.deepEqual(seen, [
        '200 /about Astro about / Astro about',
        '200 /about.html Astro about / Astro about',
        // decision 66: the slash form of a page goes to the page
        '301 200 /about Astro about / Astro about',
        // blog.html beside blog/post-1.html: the page, not the folder
        '200 /blog Astro blog / Astro blog',
        '301 200 /blog Astro blog / Astro blog',
        '200 /blog/post-1 Astro post 1 / Astro post 1',
        '404 /nope Astro not found / Astro not found',
      ])
      await page.goto(`${own}/blog`)
      await Promise.all([page.waitForURL(`${own}/blog/post-1`), page.locator('#post-link').click()])
      assert.equal(await page.locator('#ran').textContent(), 'script ran at /blog/post-1')
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it("VitePress with base /docs/ and clean URLs: under the user's origin, 404 page, router, local search", async () => {
    const { s, browser, username, port, out } = site
    const docs = `http://${username}.localhost:${port}/docs`
    assert.match(out.get('docs') ?? '', new RegExp(`is live: ${docs.replace(/[.]/g, '\\.')}/\n`), 'built for /docs/: the user origin')
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const missing = ['/docs/nope', '/docs/guide/deep/nope/x.png', '/docs/assets/missing.js'].map((url) => ({ url, status: 404 }))
      const errors = watchErrors(page, missing)
      // the router has shown the page of the URL (the 404 page's #app is empty until it runs)
      const ready = (p: Page) => p.waitForFunction(() => document.documentElement.dataset.route === location.pathname, null, { timeout: 15_000 })
      const seen: string[] = []
      for (const url of [
        `${docs}/`,
        docs,
        `${docs}/about`,
        `${docs}/about.html`,
        `${docs}/about/`,
        `${docs}/guide`,
        `${docs}/guide/`,
        `${docs}/guide/deep/page`,
        `${s.url}/${username}/docs/guide/getting-started`,
        `${docs}/nope`,
        `${docs}/guide/deep/nope/x.png`,
        `${docs}/assets/missing.js`,
      ]) {
        seen.push(await opened(page, url, ready))
      }
      assert.deepEqual(seen, [
        '200 /docs/ VP site / VP site',
        '301 200 /docs/ VP site / VP site',
        '200 /docs/about About | VP site / About',
        '200 /docs/about.html About | VP site / About',
        '301 200 /docs/about About | VP site / About',
        '301 200 /docs/guide/ Guide intro | VP site / Guide intro',
        '200 /docs/guide/ Guide intro | VP site / Guide intro',
        '200 /docs/guide/deep/page Deep page | VP site / Deep page',
        '302 200 /docs/guide/getting-started Getting started | VP site / Getting started',
        '404 /docs/nope 404 | VP site / PAGE NOT FOUND',
        '404 /docs/guide/deep/nope/x.png 404 | VP site / PAGE NOT FOUND',
        '404 /docs/assets/missing.js 404 | VP site / PAGE NOT FOUND',
      ])
      assert.equal(await page.locator('h1').evaluate((h) => getComputedStyle(h).color), 'rgb(10, 20, 30)')

      // the router: page chunks under /docs/assets/, links followed without loading a document
      await page.goto(`${docs}/`)
      await ready(page)
      await nav(page, () => page.locator('nav >> text=Guide').click(), 'Guide intro | VP site')
      await nav(page, () => page.locator('aside >> text=Getting started').click(), 'Getting started | VP site')
      // the router swapped the page in without a load event: the image may still be arriving
      assert.ok((await loadedWidth(page.locator('main img'))) > 0, 'public/logo.svg')
      await nav(page, () => page.locator('main >> text=deep').click(), 'Deep page | VP site')
      assert.equal(page.url(), `${docs}/guide/deep/page`)
      await nav(page, () => page.goBack().then(() => {}), 'Getting started | VP site')
      // local search: its index chunk is named `@localSearchIndexroot...` under the project
      await page.goto(`${docs}/about`)
      await ready(page)
      await page.locator('.DocSearch-Button').click()
      await page.locator('#localsearch-input').fill('quokkas')
      await nav(page, () => page.locator('a.result').click(), 'Deep page | VP site')
      assert.equal(page.url(), `${docs}/guide/deep/page`)
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })
})
