import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { build, preview, type PreviewServer } from 'vite'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { logInPage, openBrowser, type BrowserLease, watchErrors } from '../support/browser.js'
import { closedPort } from '../support/ports.js'
import { runCli } from '../cli/run.js'

// Issue 19's "done when": a Vite-built site deployed with `svc deploy` to the one-command
// start works in Chromium exactly as it does under `vite preview`: built with a relative base
// (opened under its user's origin) and with Vite's default base / (opened at the root of the
// project's own origin).
const engine = ENGINES[0]

/** The repository's root (tests run from dist/, fixtures stay in test/fixtures). */
function repoRoot(): string {
  let dir = path.dirname(new URL(import.meta.url).pathname)
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir)
    if (up === dir) throw new Error('package.json not found above the test')
    dir = up
  }
  return dir
}
const FIXTURE = path.join(repoRoot(), 'test', 'fixtures', 'vite-site')

describe(`a Vite-built site: svc deploy vs vite preview, in Chromium [${engine}]`, () => {
  let s: TestServer
  let browser: BrowserLease
  let work: string
  let vitePreview: PreviewServer | undefined
  // the same options for build and preview: the fixture's own (there is no vite.config), with
  // a relative base ('./', which works under any path) or Vite's default ('/', a site for the
  // root of an origin)
  const viteConfig = (base: './' | '/') => ({
    root: FIXTURE,
    base,
    configFile: false as const,
    logLevel: 'silent' as const,
    cacheDir: path.join(work, 'vite-cache'),
    build: { outDir: outOf(base), emptyOutDir: true },
  })
  const outOf = (base: './' | '/') => path.join(work, base === '/' ? 'dist-root' : 'dist')
  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-vite-'))
    const [server] = await Promise.all([startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } }), build(viteConfig('./'))])
    await build(viteConfig('/'))
    s = server
    browser = await openBrowser()
  })
  after(async () => {
    await vitePreview?.close()
    await browser?.close()
    await s?.close()
    if (work) fs.rmSync(work, { recursive: true, force: true })
  })

  /** What the page shows along a visit: first load, a client-side navigation, a reload of its route, back, the route opened directly. */
  async function visit(start: string): Promise<{ shown: string[]; errors: string[] }> {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true })
    const page = await ctx.newPage()
    const errors = watchErrors(page)
    const shown: string[] = []
    const snap = async (page_: string) => {
      await page.waitForFunction((p) => document.title === `Vite site - ${p}`, page_, { timeout: 15_000 })
      shown.push(`${new URL(page.url()).pathname.slice(new URL(start).pathname.length - 1)}\n${await page.locator('#app').innerText()}`)
    }
    try {
      const first = await page.goto(start)
      assert.equal(first?.status(), 200)
      await snap('home')
      await page.getByRole('link', { name: 'About' }).click()
      await snap('about')
      const again = await page.reload()
      assert.equal(again?.status(), 200, 'the deep route is answered with the app (SPA fallback)')
      await snap('about')
      await page.goBack()
      await snap('home')
      const direct = await page.goto(new URL('about', start).href)
      assert.equal(direct?.status(), 200)
      await snap('about')
      return { shown, errors }
    } finally {
      await ctx.close()
    }
  }

  /** The pages vite preview shows along a visit, and its errors. */
  async function previewed(base: './' | '/') {
    const port = await closedPort()
    vitePreview = await preview({ ...viteConfig(base), preview: { host: '127.0.0.1', port, strictPort: true } })
    try {
      return await visit(`http://127.0.0.1:${port}/`)
    } finally {
      await vitePreview.close()
      vitePreview = undefined
    }
  }
  const expected = (route: string, page: string, visits: number) =>
    `${route}\npage: ${page}\n\ndata: hello from public/data.json (one, two, three)\n\nvisits: ${visits}\n\ncolor: rgb(10, 20, 30)`
  const EXPECTED = [
    expected('/', 'home', 1),
    expected('/about', 'about', 1),
    expected('/about', 'about', 2),
    expected('/', 'home', 2),
    expected('/about', 'about', 3),
  ]

  it('shows the same pages, with no console errors, as vite preview does', async () => {
    const out = outOf('./')
    // the build: hashed module chunks and CSS under assets/, public/ copied as is
    const assets = fs.readdirSync(path.join(out, 'assets'))
    assert.ok(assets.some((f) => /^index-.+\.js$/.test(f)) && assets.some((f) => /\.css$/.test(f)), assets.join(' '))
    assert.ok(fs.existsSync(path.join(out, '_redirects')) && fs.existsSync(path.join(out, 'data.json')))

    const user = await s.user()
    const env = { SVC_URL: s.url, SVC_API_KEY: user.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'no-config.json') }
    const r = await runCli(['deploy', out, '--project', 'vite-app', '--json'], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.json.published, true)
    assert.ok(r.json.uploaded.includes('_redirects'))
    assert.equal(r.json.site_url, `http://${user.username}.localhost:${new URL(s.httpUrl).port}/vite-app/`)

    const shown = await previewed('./')
    const hosted = await visit(r.json.site_url)

    assert.deepEqual(shown.errors, [], 'vite preview: no console errors, page errors or failed requests')
    assert.deepEqual(hosted.errors, [], 'svc: no console errors, page errors or failed requests')
    assert.deepEqual(shown.shown, EXPECTED)
    assert.deepEqual(hosted.shown, shown.shown, 'the site on svc shows exactly what vite preview shows')
  })

  it("Vite's default build (base /): svc deploy prints the project's own origin, which shows what vite preview shows", async () => {
    const out = outOf('/')
    assert.match(fs.readFileSync(path.join(out, 'index.html'), 'utf8'), /src="\/assets\/index-[^"]+\.js"/, 'built for /')
    const user = await s.user()
    const env = { SVC_URL: s.url, SVC_API_KEY: user.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'no-config.json') }
    // the human output: its first URL is the one to open
    const r = await runCli(['deploy', out, '--project', 'vite-root'], { env })
    assert.equal(r.code, 0, r.stderr)
    const port = new URL(s.httpUrl).port
    const open = `http://vite-root.${user.username}.localhost:${port}/`
    assert.match(r.stdout, new RegExp(`is live: ${open.replace(/[.]/g, '\\.')}\n`), r.stdout)
    assert.match(r.stdout, /loads files from \//)
    const under = `http://${user.username}.localhost:${port}/vite-root/`
    assert.ok(r.stdout.includes(`browsers opening ${under} are sent here`), r.stdout)

    const shown = await previewed('/')
    const hosted = await visit(open)
    assert.deepEqual(shown.errors, [], 'vite preview: no console errors, page errors or failed requests')
    assert.deepEqual(hosted.errors, [], 'svc: no console errors, page errors or failed requests')
    assert.deepEqual(shown.shown, EXPECTED)
    assert.deepEqual(hosted.shown, shown.shown, 'the site on svc shows exactly what vite preview shows')

    // its other URLs, as people share them, take a browser to the project's origin: the app
    // runs there, where a build for / finds its files
    for (const [from, to] of [
      [under, open],
      [`${under}about`, `${open}about`],
      [`${s.url}/${user.username}/vite-root/`, open],
    ]) {
      const ctx = await browser.newContext({ ignoreHTTPSErrors: true })
      try {
        const page = await ctx.newPage()
        const errors = watchErrors(page)
        const res = await page.goto(from)
        assert.equal(res?.status(), 200, from)
        assert.equal(page.url(), to, from)
        await page.waitForFunction(() => document.title.startsWith('Vite site - '), undefined, { timeout: 15_000 })
        assert.match(await page.locator('#app').innerText(), /data: hello from public\/data\.json/, from)
        assert.deepEqual(errors, [], from)
      } finally {
        await ctx.close()
      }
    }

    // the dashboard's "Open site" link takes the owner there too
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true, locale: 'en-US' })
    try {
      const page = await ctx.newPage()
      await logInPage(page, s.url, user)
      await page.goto(`${s.url}/dashboard/folders`)
      await page.locator('#projects-table').getByRole('button', { name: 'vite-root' }).click()
      await page.locator('#project-site').waitFor({ state: 'visible' })
      assert.equal(await page.locator('#project-site').getAttribute('href'), under)
      const [tab] = await Promise.all([ctx.waitForEvent('page'), page.locator('#project-site').click()])
      await tab.waitForFunction(() => document.title === 'Vite site - home', undefined, { timeout: 15_000 })
      assert.equal(tab.url(), open)
    } finally {
      await ctx.close()
    }
  })

  it("a preview of Vite's default build: svc deploy --preview prints the deploy's own origin, which shows what vite preview shows", async () => {
    const user = await s.user()
    const env = { SVC_URL: s.url, SVC_API_KEY: user.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'no-config.json') }
    const r = await runCli(['deploy', outOf('/'), '--project', 'vite-next', '--preview'], { env })
    assert.equal(r.code, 0, r.stderr)
    const m = /preview ([0-9a-z]{12}): (\S+)/.exec(r.stdout)
    assert.ok(m, r.stdout)
    const open = `http://${m[1]}--vite-next.${user.username}.localhost:${new URL(s.httpUrl).port}/`
    assert.equal(m[2], open, 'a site built for / is previewed at the root of its own origin')

    const shown = await previewed('/')
    const hosted = await visit(open)
    assert.deepEqual(hosted.errors, [], 'svc: no console errors, page errors or failed requests')
    assert.deepEqual(hosted.shown, shown.shown, 'the preview on svc shows exactly what vite preview shows')
  })
})
