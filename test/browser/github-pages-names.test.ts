import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { logInPage, openBrowser, type BrowserLease } from '../support/browser.js'
import { makeTree, runCli } from '../cli/run.js'

// A hand-made site moved from GitHub Pages with `svc deploy`: file names with spaces, `+`,
// `%`, `#`, accents written decomposed (NFD) as macOS writes them, other scripts, emoji and
// two names that differ in case only. Chromium reads each link of its page as a click would
// (its own percent-encoding of what the page wrote), on the project's own origin and under
// the user's origin, and gets what GitHub Pages serves.
const engine = ENGINES[0]

const page = (what: string) => `<!doctype html><meta charset="utf-8"><title>${what}</title><p>${what}</p>`
const FILES: Record<string, string> = {
  '404.html': page('site 404'),
  'a b.html': page('a b'),
  'a+b.html': page('a+b'),
  '100%.html': page('100%'),
  'c#d.html': page('c#d'),
  // macOS writes these names decomposed; GitHub Pages serves them at the composed URL
  ['cafe\u0301/index.html'.normalize('NFD')]: page('café'),
  ['re\u0301sume\u0301.html'.normalize('NFD')]: page('résumé'),
  '日本語.html': page('日本語'),
  '🎉.html': page('party'),
  'About.html': page('About'),
  'about.html': page('about'),
  'legacy/index.htm': page('legacy'),
  CNAME: 'www.moved.test\n',
  LICENSE: 'MIT\n',
  '.well-known/security.txt': 'Contact: mailto:me@moved.test\n',
}

// each row: the href as the page writes it, the status, the path the browser ends at (null:
// the href's own), and the start of the body or the Content-Type
const ROWS: Array<[href: string, status: number, landed: string | null, expect: string]> = [
  ['a b.html', 200, null, '<p>a b'],
  ['a%20b.html', 200, null, '<p>a b'],
  ['a+b.html', 200, null, '<p>a+b'],
  ['a%2Bb.html', 200, null, '<p>a+b'],
  ['100%25.html', 200, null, '<p>100%'],
  ['c%23d.html', 200, null, '<p>c#d'],
  ['café/', 200, null, '<p>café'],
  ['cafe\u0301/', 200, null, '<p>café'],
  ['caf%C3%A9?from=menu', 200, 'caf%C3%A9/?from=menu', '<p>café'],
  ['résumé.html', 200, null, '<p>résumé'],
  ['re\u0301sume\u0301', 200, null, '<p>résumé'],
  ['日本語.html', 200, null, '<p>日本語'],
  ['%F0%9F%8E%89.html', 200, null, '<p>party'],
  ['About.html', 200, null, '<p>About'],
  ['about', 200, null, '<p>about'],
  ['ABOUT.html', 404, null, '<p>site 404'],
  ['a%2520b.html', 404, null, '<p>site 404'],
  ['legacy', 200, 'legacy/', '<p>legacy'],
  ['CNAME', 200, null, 'application/octet-stream'],
  ['LICENSE', 200, null, 'application/octet-stream'],
  ['.well-known/security.txt', 200, null, 'text/plain; charset=utf-8'],
]

describe(`a GitHub Pages site's file names in Chromium [${engine}]`, () => {
  let s: TestServer
  let browser: BrowserLease
  let user: Awaited<ReturnType<TestServer['user']>>
  let username: string
  let port: string
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    browser = await openBrowser()
    user = await s.user()
    username = user.username
    port = new URL(s.httpUrl).port
    const links = ROWS.map(([href]) => `<a href="${href}">${href}</a>`).join('\n')
    const dir = makeTree({ ...FILES, 'index.html': `<!doctype html><meta charset="utf-8"><title>home</title>\n${links}` })
    const env = { SVC_URL: s.url, SVC_API_KEY: user.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'no-config.json') }
    const r = await runCli(['deploy', dir, '--project', 'names'], { env })
    assert.equal(r.code, 0, r.stderr)
  })
  after(async () => {
    await browser?.close()
    await s?.close()
  })

  it('every link of the page answers as on GitHub Pages, at the project origin and under the user origin', async () => {
    const ctx = await browser.newContext()
    const tab = await ctx.newPage()
    for (const base of [`http://names.${username}.localhost:${port}/`, `http://${username}.localhost:${port}/names/`]) {
      assert.equal((await tab.goto(base))?.status(), 200)
      // each anchor's href as Chromium parsed it, fetched as a click would ask for it
      const got = await tab.evaluate(async () => {
        const out: Array<{ status: number; url: string; type: string; body: string }> = []
        for (const a of Array.from(document.querySelectorAll('a'))) {
          const r = await fetch(a.href)
          out.push({ status: r.status, url: r.url, type: r.headers.get('content-type') ?? '', body: await r.text() })
        }
        return out
      })
      assert.equal(got.length, ROWS.length)
      ROWS.forEach(([href, status, landed, expect], i) => {
        const g = got[i]
        const want = new URL(landed ?? href, base).href
        assert.deepEqual([g.status, g.url], [status, want], `${base} ${href}`)
        if (expect.startsWith('<')) assert.ok(g.body.includes(expect), `${base} ${href}: ${g.body}`)
        else assert.equal(g.type, expect, `${base} ${href}`)
      })
      // a click on a folder's slashless link lands on the folder's page, its query kept
      await tab.click('a[href="caf%C3%A9?from=menu"]')
      await tab.waitForURL(new URL('caf%C3%A9/?from=menu', base).href)
      assert.equal(await tab.textContent('p'), 'café')
    }
    await ctx.close()
  })

  it("the dashboard refuses a Jekyll site's source as svc deploy does; with .nojekyll it goes up as it is", async () => {
    const ctx = await browser.newContext({ locale: 'en-US' })
    const tab = await ctx.newPage()
    tab.on('dialog', (d) => void d.accept())
    await logInPage(tab, s.url, user)
    await tab.goto(`${s.url}/dashboard/folders`)
    const source = { '_config.yml': 'title: Moved\n', 'about.md': '# About\n' }
    // each row: the folder chosen, whether the page refuses it (nothing goes up)
    const rows: Array<[tree: Record<string, string>, refused: boolean]> = [
      [{ ...source, 'index.html': '---\nlayout: home\n---\n{{ content }}\n' }, true],
      [{ ...source, 'index.md': '---\n---\n# Home\n', 'index.html': '<p>x</p>' }, true],
      [{ ...source, 'index.html': '---\nlayout: home\n---\n{{ content }}\n', '.nojekyll': '' }, false],
      [{ ...source, 'index.html': '<p>hand made</p>' }, false],
    ]
    for (const [i, [tree, refused]] of rows.entries()) {
      const dir = path.join(makeTree({}), `moved${i}`)
      for (const [p, data] of Object.entries(tree)) {
        fs.mkdirSync(path.dirname(path.join(dir, p)), { recursive: true })
        fs.writeFileSync(path.join(dir, p), data)
      }
      await tab.getByLabel('Folder to upload (sub-folders are kept)').setInputFiles(dir)
      // the last row's words off the status line, so only this upload's can be waited for
      await tab.evaluate(() => (document.getElementById('folders-status')!.textContent = ''))
      await tab.getByRole('button', { name: 'Upload folder' }).click()
      const status = tab.locator('#folders-status')
      if (refused) {
        await status.filter({ hasText: 'This folder is the source of a Jekyll site' }).waitFor()
        assert.equal((await s.get(`/api/folders/moved${i}/files`, { key: user.key })).status, 403, `row ${i}: nothing went up`)
      } else {
        await status.filter({ hasText: '3 uploaded, 0 failed' }).waitFor()
        assert.equal((await s.get(`/api/folders/moved${i}/files`, { key: user.key })).json.total_files, 3, `row ${i}`)
      }
    }
    await ctx.close()
  })

  it("the dashboard refuses an app's source that a bundler builds (a Vite project) as svc deploy does; its build goes up", async () => {
    const ctx = await browser.newContext({ locale: 'en-US' })
    const tab = await ctx.newPage()
    tab.on('dialog', (d) => void d.accept())
    await logInPage(tab, s.url, user)
    await tab.goto(`${s.url}/dashboard/folders`)
    const entry = (src: string) => `<!doctype html><div id="root"></div><script type="module" src="${src}"></script>`
    const vitePkg = JSON.stringify({ scripts: { build: 'vite build' } })
    // each row: the folder chosen, whether the page refuses it (nothing goes up)
    const rows: Array<[tree: Record<string, string>, refused: boolean]> = [
      // npm create vite: React's JSX entry; Vue's .js entry beside vite.config.js; vanilla's package.json
      [{ 'index.html': entry('/src/main.jsx'), 'src/main.jsx': 'x', 'package.json': vitePkg }, true],
      [{ 'index.html': entry('./src/main.js'), 'src/main.js': 'x', 'vite.config.js': 'x' }, true],
      [{ 'index.html': entry('/src/main.js'), 'src/main.js': 'x', 'package.json': vitePkg }, true],
      // the build, and a hand-made module site
      [{ 'index.html': entry('/assets/index-B1.js'), 'assets/index-B1.js': 'x', 'vite.svg': '<svg/>' }, false],
      [{ 'index.html': entry('app.js'), 'app.js': 'x', 'package.json': '{}' }, false],
    ]
    for (const [i, [tree, refused]] of rows.entries()) {
      const dir = path.join(makeTree({}), `bundled${i}`)
      for (const [p, data] of Object.entries(tree)) {
        fs.mkdirSync(path.dirname(path.join(dir, p)), { recursive: true })
        fs.writeFileSync(path.join(dir, p), data)
      }
      await tab.getByLabel('Folder to upload (sub-folders are kept)').setInputFiles(dir)
      await tab.evaluate(() => (document.getElementById('folders-status')!.textContent = ''))
      await tab.getByRole('button', { name: 'Upload folder' }).click()
      const status = tab.locator('#folders-status')
      if (refused) {
        await status.filter({ hasText: 'This folder is the source of an app a bundler builds' }).waitFor()
        assert.equal((await s.get(`/api/folders/bundled${i}/files`, { key: user.key })).status, 403, `row ${i}: nothing went up`)
      } else {
        await status.filter({ hasText: '3 uploaded, 0 failed' }).waitFor()
        assert.equal((await s.get(`/api/folders/bundled${i}/files`, { key: user.key })).json.total_files, 3, `row ${i}`)
      }
    }
    await ctx.close()
  })
})
