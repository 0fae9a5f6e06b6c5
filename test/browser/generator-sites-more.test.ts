import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { ENGINES } from '../support/server.js'
import { notCancelled, watchErrors } from '../support/browser.js'
import { deployedFixtures, markWindow, sameWindow, statusChain } from '../support/generator-sites.js'

// More of today's generators, deployed with `svc deploy` and opened in Chromium (decisions 186,
// 187): SvelteKit's adapter-static with a fallback page, whose pages load their files by
// relative paths but whose `404.html` loads them from /, and a Next.js static export, whose
// client router prefetches `.txt` payloads beside and inside each page's folder. The fixtures
// are those builds cut down by hand (test/fixtures/ssg/sveltekit-fallback, next-export).
const engine = ENGINES[0]

/** How a URL answers a browser: its statuses along redirects, where it ends, and what the page shows. */
async function opened(page: Page, url: string): Promise<string> {
  const res = await page.goto(url)
  assert.ok(res, url)
  const chain = await statusChain(res)
  await page
    .locator('#ran')
    .first()
    .filter({ hasText: /ran at/ })
    .waitFor({ timeout: 15_000 })
  return `${chain.join(' ')} ${page.url()} ${await page.title()} / ${await page.locator('#ran').first().textContent()}`
}

describe(`sites built with SvelteKit and Next.js, deployed with svc deploy [${engine}]`, () => {
  const site = deployedFixtures(engine, [
    ['sveltekit-fallback', 'kit'],
    ['next-export', 'next'],
  ])

  it("SvelteKit with a fallback 404.html: relative pages, a fallback loading from /, so the project's origin", async () => {
    const { browser, username, port, out } = site
    const own = `http://kit.${username}.localhost:${port}`
    // the pages alone would work under /kit/, the fallback page only at an origin's root
    assert.match(out.get('kit') ?? '', new RegExp(`is live: ${own.replace(/[.]/g, '\\.')}/\n`), 'the project origin')
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(page, [{ url: '/nope', status: 404 }])
      const seen: string[] = []
      for (const url of [
        `${own}/`,
        `${own}/about`,
        `${own}/nope/`,
        `http://${username}.localhost:${port}/kit/about/`,
        `http://${username}.localhost:${port}/kit/nope/`,
      ])
        seen.push(await opened(page, url))
      assert.deepEqual(seen, [
        `200 ${own}/ Kit home / script ran at / under ""`,
        `301 200 ${own}/about/ Kit about / script ran at /about/ under ""`,
        // the fallback page's client renders the error page of the route
        `404 ${own}/nope/ Kit error 404 / fallback ran at /nope/`,
        // browsers opening the user's origin are sent to the project's (decision 75)
        `302 200 ${own}/about/ Kit about / script ran at /about/ under ""`,
        `302 404 ${own}/nope/ Kit error 404 / fallback ran at /nope/`,
      ])
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })

  it("Next.js's export: pages beside their payload folders, `.txt` payloads as text/plain, its router", async () => {
    const { browser, username, port, out } = site
    const own = `http://next.${username}.localhost:${port}`
    assert.match(out.get('next') ?? '', new RegExp(`is live: ${own.replace(/[.]/g, '\\.')}/\n`), 'built for /: the project origin')
    const ctx = await browser.newContext()
    try {
      const page = await ctx.newPage()
      const errors = watchErrors(page, [{ url: '/nope', status: 404 }])
      // the router has fetched every link's payloads (leaving earlier would abort them)
      const prefetched = () => page.locator('html[data-prefetched=yes]').waitFor({ state: 'attached' })
      const seen: string[] = []
      for (const url of ['/', '/about', '/about/', '/about.html', '/blog/first', '/nope']) {
        const res = await page.goto(`${own}${url}`)
        assert.ok(res, url)
        const chain = [res.status()]
        for (let r = res.request().redirectedFrom(); r; r = r.redirectedFrom()) chain.unshift((await r.response())?.status() ?? 0)
        await prefetched()
        seen.push(`${chain.join(' ')} ${new URL(page.url()).pathname} ${await page.title()}`)
      }
      assert.deepEqual(seen, [
        '200 / Next home',
        // about.html beside the folder about/ that holds its segment payloads: the page
        '200 /about Next about',
        '301 200 /about Next about',
        '200 /about.html Next about',
        '200 /blog/first Next post first',
        '404 /nope Next not found',
      ])
      // the payloads, with the router's query and a `$` in their names
      const payloads = await page.evaluate(async () => {
        const out: string[] = []
        for (const u of [
          '/about.txt?_rsc=1x2y3',
          '/about/__next._tree.txt?_rsc=1x2y3',
          '/blog/first/__next.blog.$d$slug.__PAGE__.txt?_rsc=1x2y3',
          '/nope.txt?_rsc=1x2y3',
        ]) {
          const r = await fetch(u, { headers: { rsc: '1' } })
          out.push(`${r.status} ${r.headers.get('content-type')} ${u} ${(await r.text()).slice(0, 2)}`)
        }
        return out
      })
      assert.deepEqual(payloads, [
        '200 text/plain; charset=utf-8 /about.txt?_rsc=1x2y3 0:',
        '200 text/plain; charset=utf-8 /about/__next._tree.txt?_rsc=1x2y3 0:',
        '200 text/plain; charset=utf-8 /blog/first/__next.blog.$d$slug.__PAGE__.txt?_rsc=1x2y3 0:',
        '404 text/html; charset=utf-8 /nope.txt?_rsc=1x2y3 <!',
      ])
      // the router shows pages from their payloads; a missing page is loaded, its 404 page shown
      await page.goto(`${own}/`)
      await prefetched()
      await markWindow(page)
      const stayed = () => sameWindow(page)
      for (const [link, title] of [
        ['#nav-about', 'Next about'],
        ['#nav-post', 'Next post first'],
      ]) {
        await page.locator(link).click()
        await page.waitForFunction((t) => document.title === t, title)
        assert.equal(await stayed(), true, `${title}: shown from its payload`)
      }
      assert.equal(page.url(), `${own}/blog/first`)
      await page.goBack()
      await page.waitForFunction(() => document.title === 'Next about')
      assert.equal(await stayed(), true, 'back: from the payload')
      await Promise.all([page.waitForURL(`${own}/nope`), page.locator('#nav-missing').click()])
      assert.equal(await page.title(), 'Next not found')
      await prefetched()
      assert.deepEqual(notCancelled(errors), [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })
})
