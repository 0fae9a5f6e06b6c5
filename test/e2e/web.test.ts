import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import type { BrowserContext, Page } from 'playwright-core'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import type { Engine } from '../../src/db/kysely.js'
import { sha256hex } from '../../src/auth/tokens.js'
import { networkQuiet, openContext } from '../support/browser.js'

/**
 * The web interface end to end in headless Chromium (Debian's, no download): a new user signs
 * up, creates an API key and uses it, uploads a folder, publishes it and opens the site,
 * creates a form and sees a submission made from the hosted page, stores a KV entry and reads
 * it publicly; plus single files, images and hosted data. Screenshots of the main pages go to
 * test-output/screenshots/.
 */
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const shots = path.join(root, 'test-output', 'screenshots')

/** A 1x1 PNG. */
function png(rgb: [number, number, number] = [255, 0, 0]): Buffer {
  const crc = (buf: Buffer) => {
    let c = ~0
    for (const b of buf) {
      c ^= b
      for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1))
    }
    return ~c >>> 0
  }
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4)
    len.writeUInt32BE(data.length)
    const td = Buffer.concat([Buffer.from(type), data])
    const c = Buffer.alloc(4)
    c.writeUInt32BE(crc(td))
    return Buffer.concat([len, td, c])
  }
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0])
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(Buffer.from([0, ...rgb]))),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

/**
 * Chromium's clipboard is the browser's, shared by its contexts: the engines' flows, which run
 * side by side in one Chromium, take turns at it (a copy and the read of what it copied).
 */
let clipboardTurn: Promise<unknown> = Promise.resolve()
function withClipboard<T>(fn: () => Promise<T>): Promise<T> {
  const mine = clipboardTurn.then(fn, fn)
  clipboardTurn = mine.catch(() => {})
  return mine
}

// each engine's flow has its own server, user and context, so the two run side by side (a flow
// mostly waits on Chromium and the server); the steps of one flow run in order
describe('web interface in Chromium', { concurrency: true }, () => {
  for (const engine of ENGINES) webFlow(engine)
})

function webFlow(engine: Engine): void {
  describe(`web interface in Chromium [${engine}]`, { concurrency: false }, () => {
    let s: TestServer
    let ctx: BrowserContext
    let page: Page
    let tmp: string
    const problems: string[] = []
    const username = `web${Date.now().toString(36).slice(-6)}`
    const password = 'a long e2e password'
    let submitUrl = ''
    // the pages are the same on both engines: screenshots of the first engine's run only
    const shot = async (name: string) => {
      if (engine === ENGINES[0]) await page.screenshot({ path: path.join(shots, `${engine}-${name}.png`), fullPage: true })
    }
    let quiet: ReturnType<typeof networkQuiet>
    const go = async (p: string) => {
      await page.goto(s.url + p)
      await quiet()
    }

    before(async () => {
      fs.mkdirSync(shots, { recursive: true })
      s = await startServer({ engine, env: { RATE_LIMITS: '{"authenticated":{"minute":1000,"hour":10000}}' } })
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-web-'))
      ctx = await openContext({
        locale: 'en-US',
        viewport: { width: 1200, height: 900 },
        permissions: ['clipboard-read', 'clipboard-write'],
      })
      page = ctx.pages()[0] ?? (await ctx.newPage())
      quiet = networkQuiet(page)
      page.setDefaultTimeout(10_000)
      // a CSP or Trusted Types violation, or a script error, on the service's pages fails the run
      page.on('console', (m) => {
        if (m.type() === 'error' && /Content Security Policy|TrustedHTML|Trusted Type|Refused to/i.test(m.text())) problems.push(m.text())
      })
      page.on('pageerror', (e) => problems.push(String(e)))
      page.on('dialog', (d) => void d.accept())
    })
    after(async () => {
      await ctx?.close().catch(() => {})
      await s?.close()
      fs.rmSync(tmp, { recursive: true, force: true })
    })

    it('signs up a new user from the register page', async () => {
      await go('/register')
      await page.getByLabel('Username').fill(username)
      await page.getByLabel('Password', { exact: true }).fill(password)
      await page.getByLabel('Repeat the password').fill(password)
      await shot('register')
      await page.getByRole('button', { name: 'Create account' }).click()
      await page.waitForURL('**/dashboard')
      assert.match((await page.locator('main').textContent()) ?? '', new RegExp(`Welcome, ${username}`))
      await shot('dashboard')
      // the language switch
      await page.getByRole('link', { name: '中文' }).click()
      await page.waitForURL('**/dashboard')
      assert.equal(await page.locator('h1').textContent(), '控制台')
      await page.getByRole('link', { name: 'English' }).click()
      assert.equal(await page.locator('h1').textContent(), 'Dashboard')
    })

    it('creates an API key, shows it once, and the key works with the API', async () => {
      await go('/api-keys')
      await page.getByLabel('Name').fill('e2e key')
      await page.getByLabel(/Expires after/).fill('30')
      await page.getByRole('button', { name: 'Create key' }).click()
      await page.locator('#new-key').waitFor({ state: 'visible' })
      const key = await page.locator('#new-key-value').inputValue()
      assert.match(key, /^svc_[A-Za-z0-9]{60}$/)
      await page.locator('#keys-table tbody tr', { hasText: 'e2e key' }).waitFor()
      const copied = await withClipboard(async () => {
        await page.locator('#new-key-copy').click()
        return page.evaluate(() => navigator.clipboard.readText())
      })
      assert.equal(copied, key)
      await shot('api-keys')
      const me = await s.get('/svc_api/me', { key })
      assert.equal(me.status, 200)
      assert.equal(me.json.data.username, username)
      assert.equal(me.json.data.via, 'key')
      // the key is never shown again
      await go('/api-keys')
      assert.ok(!(await page.content()).includes(key))
      // disable it from the page: the API refuses it
      // the row's controls are named after the key
      await page.locator('#keys-table tbody tr', { hasText: 'e2e key' }).getByRole('button', { name: 'Disable e2e key', exact: true }).click()
      await page.locator('#keys-table tbody tr', { hasText: 'e2e key' }).getByRole('button', { name: 'Enable e2e key', exact: true }).waitFor()
      assert.equal((await s.get('/svc_api/me', { key })).status, 401)
    })

    it('acts once on a form submitted twice while its request runs', async () => {
      await go('/api-keys')
      // a second Enter (or a double click) before the answer, on a slow line: one key, the one shown
      const slow = '**/svc_api/api-keys'
      await page.route(slow, async (route) => {
        if (route.request().method() === 'POST') await new Promise((r) => setTimeout(r, 400))
        await route.continue()
      })
      await page.getByLabel('Name').fill('pressed twice')
      await page.getByLabel('Name').press('Enter')
      await page.getByLabel('Name').press('Enter')
      await page.locator('#keys-table tbody tr', { hasText: 'pressed twice' }).first().waitFor()
      await quiet(600)
      await page.unroute(slow)
      const names: string[] = await page.evaluate(async () =>
        ((await (await fetch('/svc_api/api-keys')).json()).data.keys as Array<{ name: string }>).map((k) => k.name),
      )
      assert.equal(names.filter((n) => n === 'pressed twice').length, 1, names.join(', '))
      // the form takes the next submit once the first is answered
      await page.getByLabel('Name').fill('pressed later')
      await page.getByLabel('Name').press('Enter')
      await page.locator('#keys-table tbody tr', { hasText: 'pressed later' }).waitFor()

      // a form the browser posts itself: a sign-up sent twice signs up once and lands on the
      // dashboard, not on "this username is taken" for the account the first post made
      const other = await openContext({ locale: 'en-US' })
      try {
        const p2 = other.pages()[0] ?? (await other.newPage())
        await p2.goto(s.url + '/register')
        await p2.getByLabel('Username').fill(username + 'x')
        await p2.getByLabel('Password', { exact: true }).fill(password)
        await p2.getByLabel('Repeat the password').fill(password)
        await p2.evaluate(() => {
          const f = document.querySelector<HTMLFormElement>('form[action="/register"]')!
          f.requestSubmit()
          setTimeout(() => f.requestSubmit(), 30)
        })
        await p2.waitForURL('**/dashboard')
        assert.match((await p2.locator('main').textContent()) ?? '', new RegExp(`Welcome, ${username}x`))
      } finally {
        await other.close()
      }
    })

    it('creates a form with the field builder', async () => {
      await go('/dashboard/forms')
      await page.getByLabel('Form name').fill('Contact')
      await page.getByRole('button', { name: 'Add field' }).click()
      const rows = page.locator('#field-rows > li')
      await rows.nth(1).getByLabel('Field name').fill('message')
      await rows.nth(1).getByLabel('Type').selectOption('textarea')
      await page.getByRole('button', { name: 'Create form' }).click()
      await page.locator('#subs').waitFor({ state: 'visible' })
      submitUrl = (await page.locator('#subs-url').textContent()) ?? ''
      assert.match(submitUrl, /\/api\/forms\/submit\/[A-Za-z0-9_-]+$/)
      await page.locator('#forms-table tbody tr', { hasText: 'Contact' }).waitFor()
      await shot('forms')
    })

    it('uploads a folder with sub-folders, publishes it and opens the site', async () => {
      const site = path.join(tmp, 'mysite')
      fs.mkdirSync(path.join(site, 'css'), { recursive: true })
      fs.mkdirSync(path.join(site, 'docs', 'deep'), { recursive: true })
      fs.writeFileSync(
        path.join(site, 'index.html'),
        `<!doctype html><html><head><link rel="stylesheet" href="css/site.css"><title>My site</title></head>
<body><h1 id="title">Hello from my site</h1>
<form id="contact" action="${submitUrl}" method="post">
<label>Name <input name="name" id="name"></label>
<label>Message <textarea name="message" id="message"></textarea></label>
<button type="submit">Send</button></form></body></html>`,
      )
      fs.writeFileSync(path.join(site, 'css', 'site.css'), 'h1 { color: rgb(0, 128, 0); }')
      fs.writeFileSync(path.join(site, 'docs', 'deep', 'page.html'), '<p>deep page</p>')
      fs.writeFileSync(path.join(site, 'docs', '<b id=treeinj>x.txt'), 'a file name with markup')
      // a repository folder chosen whole: its history and secrets stay local, .well-known/ goes up
      fs.mkdirSync(path.join(site, '.git'), { recursive: true })
      fs.writeFileSync(path.join(site, '.git', 'HEAD'), 'ref: refs/heads/main')
      fs.writeFileSync(path.join(site, '.env'), 'SECRET=1')
      fs.mkdirSync(path.join(site, '.well-known'), { recursive: true })
      fs.writeFileSync(path.join(site, '.well-known', 'security.txt'), 'Contact: mailto:me@example.org')
      // and so do its installed packages, named once as the folder
      fs.mkdirSync(path.join(site, 'node_modules', 'lib'), { recursive: true })
      fs.writeFileSync(path.join(site, 'node_modules', 'lib', 'index.js'), 'module.exports = 1')
      fs.writeFileSync(path.join(site, 'node_modules', 'lib', 'package.json'), '{"name":"lib"}')

      await go('/dashboard/folders')
      await page.locator('#folder-input').setInputFiles(site)
      assert.equal(await page.getByLabel('Project name').inputValue(), 'mysite')
      await page.getByRole('button', { name: 'Upload folder' }).click()
      await page.waitForFunction(() => /5 uploaded, 0 failed/.test(document.getElementById('folders-status')!.textContent ?? ''))
      const sent: string[] = await page.evaluate(async () =>
        ((await (await fetch('/api/folders/mysite/files')).json()).files as Array<{ path: string }>).map((f) => f.path).sort(),
      )
      assert.deepEqual(sent, ['.well-known/security.txt', 'css/site.css', 'docs/<b id=treeinj>x.txt', 'docs/deep/page.html', 'index.html'])
      const status = (await page.locator('#folders-status').textContent()) ?? ''
      const kept = /Kept local, as svc deploy keeps them \(dotfiles, node_modules\/ and __MACOSX\/ folders; files: 4\): (\S+), (\S+), (\S+?)(?:$|\s)/.exec(
        status,
      )
      assert.ok(kept, status)
      assert.deepEqual(kept.slice(1).sort(), ['.env', '.git/HEAD', 'node_modules/'], status)
      // the tree keeps the sub-folders
      const tree = page.locator('#project-tree')
      await tree.getByText('deep/').waitFor()
      await tree.getByRole('link', { name: 'site.css' }).waitFor()
      // a file name with markup is shown as text
      await tree.getByRole('link', { name: '<b id=treeinj>x.txt' }).waitFor()
      assert.equal(await page.locator('#treeinj').count(), 0)
      await page.getByRole('button', { name: 'Publish', exact: true }).click()
      await page.locator('#project-site').waitFor({ state: 'visible' })
      const siteUrl = await page.locator('#project-site').getAttribute('href')
      // the dashboard links the site on the user's own origin
      assert.equal(siteUrl, `http://${username}.localhost:${new URL(s.httpUrl).port}/mysite/`)
      // and at the root of the project's own origin, with what each link is for; no sandbox note
      assert.equal(await page.locator('#project-root').getAttribute('href'), `http://mysite.${username}.localhost:${new URL(s.httpUrl).port}/`)
      assert.match((await page.locator('#project-root-hint').innerText()) ?? '', /built for \/ .*"Open site" takes a browser there too/)
      assert.equal(await page.locator('#project-sandboxed').isHidden(), true)
      const row = page.locator('#projects-table tbody tr', { hasText: 'mysite' })
      await row.getByRole('link', { name: 'Open at its own origin' }).waitFor()
      await page.locator('#projects-table tbody tr', { hasText: 'mysite' }).getByText('published').waitFor()
      await shot('folders')

      // a folder of dotfiles only is refused, and nothing is sent
      const dotsOnly = path.join(tmp, 'dotsonly')
      fs.mkdirSync(path.join(dotsOnly, '.git'), { recursive: true })
      fs.writeFileSync(path.join(dotsOnly, '.git', 'HEAD'), 'ref: refs/heads/main')
      fs.writeFileSync(path.join(dotsOnly, '.env'), 'SECRET=2')
      await page.locator('#folder-input').setInputFiles(dotsOnly)
      await page.getByRole('button', { name: 'Upload folder' }).click()
      await page.waitForFunction(() => /only dotfiles/.test(document.getElementById('folders-status')!.textContent ?? ''))
      const projects: string[] = await page.evaluate(async () =>
        ((await (await fetch('/api/folders')).json()).folders as Array<{ name: string }>).map((f) => f.name),
      )
      assert.ok(!projects.includes('dotsonly'), projects.join(', '))

      // the project name follows the next folder chosen (it was filled from the last one)
      const other = path.join(tmp, 'othersite')
      fs.mkdirSync(other, { recursive: true })
      fs.writeFileSync(path.join(other, 'index.html'), '<p>other</p>')
      await page.locator('#folder-input').setInputFiles(other)
      assert.equal(await page.getByLabel('Project name').inputValue(), 'othersite')
      // uploading into the live project asks first (this page accepts every dialog)
      await page.locator('#folder-input').setInputFiles(site)
      assert.equal(await page.getByLabel('Project name').inputValue(), 'mysite')
      const asked = page.waitForEvent('dialog')
      const uploaded = page.waitForResponse((r) => r.url().endsWith('/api/folders') && r.request().method() === 'GET')
      await page.getByRole('button', { name: 'Upload folder' }).click()
      assert.match((await asked).message(), /mysite is live/)
      await uploaded

      // open the site from the page (a new tab), and post the form from the hosted page
      const [tab] = await Promise.all([ctx.waitForEvent('page'), page.locator('#project-site').click()])
      await tab.waitForLoadState()
      assert.equal(await tab.locator('#title').textContent(), 'Hello from my site')
      assert.equal(await tab.locator('#title').evaluate((e) => getComputedStyle(e).color), 'rgb(0, 128, 0)')
      await tab.locator('#name').fill('Visitor')
      await tab.locator('#message').fill('<img src=x id=injected>Hi there')
      await Promise.all([tab.waitForNavigation(), tab.getByRole('button', { name: 'Send' }).click()])
      // a form without redirect_url: the browser lands on the service's thank-you page
      assert.match(await tab.content(), /Your submission was received/)
      await tab.close()
    })

    it('shows the submission made from the hosted page, as text, and marks it read', async () => {
      await go('/dashboard/forms')
      const row = page.locator('#forms-table tbody tr', { hasText: 'Contact' })
      await row.getByRole('button', { name: 'Submissions' }).click()
      const sub = page.locator('#subs-table tbody tr', { hasText: 'Visitor' })
      await sub.waitFor()
      assert.match((await sub.textContent()) ?? '', /<img src=x id=injected>Hi there/)
      assert.equal(await page.locator('#injected').count(), 0)
      assert.match((await sub.getAttribute('class')) ?? '', /unread/)
      const put = page.waitForResponse((r) => r.url().includes('/svc_api/forms/mark_read/'))
      await sub.getByRole('button', { name: 'Mark read' }).click()
      const marked = await put
      assert.equal(marked.status(), 200, await marked.text())
      await page
        .locator('#subs-table tbody tr', { hasText: 'Visitor' })
        .getByRole('button', { name: 'Mark unread' })
        .waitFor()
        .catch(async (e: unknown) => {
          // say what the page showed instead: its status line and the rows, and what was sent
          const status = await page.locator('#forms-status').textContent()
          const rowText = await page.locator('#subs-table tbody').textContent()
          const sent = `${marked.request().postData()} -> ${await marked.text()}`
          throw new Error(`no "Mark unread" after the PUT (${sent}); status: ${JSON.stringify(status)}, rows: ${JSON.stringify(rowText)}`, { cause: e })
        })
      await shot('forms-submissions')
    })

    it('stores a public KV entry and it reads back without authentication', async () => {
      await go('/dashboard/kv')
      await page.getByLabel('Key', { exact: true }).fill('greeting')
      await page.getByLabel('Type').selectOption('json')
      await page.getByLabel('Value').fill('{"hello": "<b>world</b>", "n": 3}')
      await page.getByRole('checkbox', { name: /^Public: anyone can read it/ }).check()
      await page.getByRole('button', { name: 'Save' }).click()
      const row = page.locator('#kv-table tbody tr', { hasText: 'greeting' })
      await row.waitFor()
      assert.match((await row.textContent()) ?? '', /<b>world<\/b>/)
      const link = await withClipboard(async () => {
        await row.getByRole('button', { name: 'Copy public link' }).click()
        return page.evaluate(() => navigator.clipboard.readText())
      })
      assert.equal(link, `${s.url}/svc_api/data/public/${username}/greeting`)
      await shot('kv')
      const pub = await s.get(`/svc_api/data/public/${username}/greeting`)
      assert.equal(pub.status, 200)
      assert.deepEqual(pub.json.data.value, { hello: '<b>world</b>', n: 3 })
      // edit it back to private from the list: the public read stops
      await row.getByRole('checkbox').uncheck()
      await page.locator('#kv-table tbody tr', { hasText: 'greeting' }).getByRole('button', { name: 'Copy public link' }).waitFor({ state: 'detached' })
      assert.equal((await s.get(`/svc_api/data/public/${username}/greeting`)).status, 404)
    })

    it('uploads a single HTML file by the file picker and lists it', async () => {
      await go('/dashboard/files')
      const file = path.join(tmp, 'hello page.html')
      fs.writeFileSync(file, '<!doctype html><title>hi</title><p>hello</p>')
      await page.locator('#file-input').setInputFiles(file)
      await page.getByRole('button', { name: 'Upload', exact: true }).click()
      const row = page.locator('#files-table tbody tr', { hasText: 'hello page.html' })
      await row.waitFor()
      assert.equal(
        await row.getByRole('link', { name: 'hello page.html' }).getAttribute('href'),
        `http://${username}.localhost:${new URL(s.httpUrl).port}/hello%20page.html`,
      )
      await page.getByLabel('Search by name').fill('nothing-like-this')
      await row.waitFor({ state: 'detached' })
      await page.getByLabel('Search by name').fill('hello')
      await page.locator('#files-table tbody tr', { hasText: 'hello page.html' }).waitFor()
      // a file name with markup: listed as text, never as elements
      const evil = path.join(tmp, '<img src=x id=fileinj>.html')
      fs.writeFileSync(evil, '<!doctype html><p>odd name</p>')
      await page.locator('#file-input').setInputFiles(evil)
      await page.getByRole('button', { name: 'Upload', exact: true }).click()
      await page.getByLabel('Search by name').fill('')
      await page.locator('#files-table tbody tr', { hasText: '<img src=x id=fileinj>.html' }).waitFor()
      assert.equal(await page.locator('#fileinj').count(), 0)
      await shot('files')
    })

    it('shows the page before when the last file of the last page is deleted', async () => {
      await go('/dashboard/files')
      // 21 files: 20 on page 1, one on page 2
      await page.evaluate(async () => {
        const csrf = document.querySelector('meta[name="csrf-token"]')!.getAttribute('content')!
        const have = (await (await fetch('/svc_api/files')).json()).data.total as number
        for (let i = have; i < 21; i++) {
          const fd = new FormData()
          fd.append('file', new Blob(['<p>filler</p>'], { type: 'text/html' }), `filler-${String(i).padStart(2, '0')}.html`)
          const r = await fetch('/svc_api/upload', { method: 'POST', body: fd, headers: { 'X-CSRF-Token': csrf } })
          if (!r.ok) throw new Error(await r.text())
        }
      })
      await go('/dashboard/files')
      await page.locator('#files-pager').getByRole('button', { name: 'Next' }).click()
      await page.locator('#files-pager', { hasText: 'Page 2 of 2' }).waitFor()
      const rows = page.locator('#files-table tbody tr')
      assert.equal(await rows.count(), 1)
      await rows
        .first()
        .getByRole('button', { name: /^Delete/ })
        .click()
      // the 20 files left are listed, not "no files yet" on an empty page 2 without a pager
      await page.waitForFunction(() => document.querySelectorAll('#files-table tbody tr').length === 20)
      assert.equal(await page.locator('#files-table tbody td.hint').count(), 0)
    })

    it('activates images with a redeem code, uploads one and edits its remark', async () => {
      const code = `img-${Date.now()}`
      await s.deps.db.k
        .insertInto('redeem_codes')
        .values({ code_hash: sha256hex(code), feature: 'image-host', created_at: Date.now(), redeemed_by: null, redeemed_at: null })
        .execute()
      await go('/dashboard/images')
      await page.getByLabel('Code').fill(code)
      await page.getByRole('button', { name: 'Redeem' }).click()
      await page.locator('#img-form').waitFor({ state: 'visible' })
      fs.writeFileSync(path.join(tmp, 'dot.png'), png())
      await page.locator('#img-input').setInputFiles(path.join(tmp, 'dot.png'))
      await page.getByRole('button', { name: 'Upload', exact: true }).click()
      const item = page.locator('#img-list li', { hasText: 'dot.png' })
      await item.waitFor()
      await item.getByLabel('Remark').fill('a red dot')
      await item.getByRole('button', { name: 'Save remark' }).click()
      await page.locator('#toast', { hasText: 'Saved.' }).waitFor()
      await shot('images')
      const list = await page.evaluate(() => fetch('/api/image-host/images').then((r) => r.json()))
      assert.equal(list.images[0].remark, 'a red dot')
      // a replace shows its new bytes at once (the thumbnail by its versioned link) and says so
      const thumb = page.locator('#img-list li img').first()
      const before = await thumb.getAttribute('src')
      fs.writeFileSync(path.join(tmp, 'green.png'), png([0, 255, 0]))
      await page.locator('#img-list li input[type=file]').first().setInputFiles(path.join(tmp, 'green.png'))
      // said once, by the progress bar's label (the status line is left for errors)
      await page.locator('#img-progress', { hasText: 'Uploaded.' }).waitFor()
      await page.waitForFunction((b) => document.querySelector('#img-list li img')?.getAttribute('src') !== b, before)
      assert.match((await thumb.getAttribute('src')) ?? '', /\?v=/)
    })

    it('activates hosted data, creates a file with two versions and switches the default', async () => {
      const code = `data-${Date.now()}`
      await s.deps.db.k
        .insertInto('redeem_codes')
        .values({ code_hash: sha256hex(code), feature: 'hosted-data', created_at: Date.now(), redeemed_by: null, redeemed_at: null })
        .execute()
      await go('/dashboard/data')
      await page.getByLabel('Code').fill(code)
      await page.getByRole('button', { name: 'Redeem' }).click()
      await page.locator('#data-form').waitFor({ state: 'visible' })
      await page.getByLabel('Name', { exact: true }).fill('scores')
      await page.locator('#data-content').fill('{"v": 1}')
      await page.getByRole('button', { name: 'Create', exact: true }).click()
      await page.locator('#data-detail').waitFor({ state: 'visible' })
      // bad JSON is refused in the page; the message goes once a good version is sent
      await page.locator('#version-content').fill('{"v": ')
      await page.getByRole('button', { name: 'Add version' }).click()
      await page.locator('#data-status.error').waitFor()
      await page.locator('#version-content').fill('{"v": 2}')
      await page.getByLabel('Make it the default version').uncheck()
      await page.getByRole('button', { name: 'Add version' }).click()
      await page.locator('#versions-table tbody tr').nth(1).waitFor()
      assert.equal(((await page.locator('#data-status').textContent()) ?? '').trim(), '')
      const row = page.locator('#data-table tbody tr', { hasText: 'scores' })
      const link = await row.getByRole('link', { name: 'scores' }).getAttribute('href')
      const pathOf = (u: string) => new URL(u).pathname
      assert.deepEqual((await s.get(pathOf(link!))).json, { v: 1 })
      const v2 = page.locator('#versions-table tbody tr').filter({ has: page.locator('td:first-child', { hasText: /^2$/ }) })
      await v2.getByRole('button', { name: 'Make default' }).click()
      await v2.getByText('default', { exact: true }).waitFor()
      assert.deepEqual((await s.get(pathOf(link!))).json, { v: 2 })
      await shot('data')
    })

    it('fits a phone-sized screen', async () => {
      await page.setViewportSize({ width: 375, height: 740 })
      for (const p of ['/dashboard', '/dashboard/files', '/dashboard/forms', '/api-keys']) {
        await go(p)
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
        assert.ok(overflow <= 0, `${p} overflows by ${overflow}px`)
      }
      // a long unbroken name in a heading, and a long link in a status line, wrap in place
      const long = 'Averyveryverylongformname'.repeat(4)
      await page.evaluate(async (name) => {
        const csrf = document.querySelector('meta[name="csrf-token"]')!.getAttribute('content')!
        const body = { form_name: name, fields_config: [{ name: 'a', type: 'text', required: false }], is_active: true }
        const r = await fetch('/svc_api/forms/create', {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
        })
        if (!r.ok) throw new Error(await r.text())
      }, long)
      await go('/dashboard/forms')
      await page.locator('#forms-table tbody tr', { hasText: long }).getByRole('button', { name: 'Submissions' }).click()
      await page.locator('#subs-title', { hasText: long }).waitFor()
      const wide = async () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
      assert.ok((await wide()) <= 0, `a long form name overflows by ${await wide()}px`)
      await go('/dashboard/kv')
      await page.getByLabel('Key', { exact: true }).fill('k' + 'x'.repeat(99))
      await page.getByLabel('Type').selectOption('number')
      await page.getByLabel('Value').fill('1')
      await page.locator('#kv-public').check()
      await page.getByRole('button', { name: 'Save' }).click()
      await page.locator('#kv-status', { hasText: 'x'.repeat(99) }).waitFor()
      assert.ok((await wide()) <= 0, `a long KV link overflows by ${await wide()}px`)
      await shot('mobile-api-keys')
      await go('/dashboard')
      await shot('mobile-dashboard')
      await page.setViewportSize({ width: 1200, height: 900 })
    })

    it('goes to the login page when the session ends under an open page, and comes back', async () => {
      await go('/dashboard/folders')
      // another tab logs out: this page still shows the dashboard, its next call answers 401
      const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute('content')) ?? ''
      const out = await ctx.request.post(`${s.url}/logout`, { form: { _csrf: csrf }, headers: { Origin: s.url }, maxRedirects: 0 })
      assert.ok(out.status() < 400, String(out.status()))
      // a call whose error the page shows in place (the project's tree), not through a status line
      await page.getByLabel('Open a project by name').fill('mysite')
      await page.getByLabel('Open a project by name').press('Enter')
      await page.locator('#toast', { hasText: 'Your session ended' }).waitFor()
      await page.waitForURL('**/login?next=%2Fdashboard%2Ffolders')
      await page.getByLabel('Username').fill(username)
      await page.getByLabel('Password').fill(password)
      await page.getByRole('button', { name: 'Log in' }).click()
      await page.waitForURL('**/dashboard/folders')
    })

    it('logs out and the login page logs back in', async () => {
      await go('/dashboard')
      await page.getByRole('button', { name: 'Log out' }).click()
      await page.waitForURL('**/login')
      await shot('login')
      await page.getByLabel('Username').fill(username)
      await page.getByLabel('Password').fill(password)
      await page.getByRole('button', { name: 'Log in' }).click()
      await page.waitForURL('**/dashboard')
    })

    it('saw no CSP, Trusted Types or script errors on any page', () => {
      assert.deepEqual(problems, [])
    })
  })
}
