import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import type { BrowserContext, Page } from 'playwright-core'
import { startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'
import { deploySite } from '../support/deploys.js'
import { imageForm, makeImage, svc } from '../support/images.js'
import { networkQuiet, openBrowser, sessionCookiesFor, type BrowserLease } from '../support/browser.js'

// Every page a person sees, in a realistic state (signed in, with data), checked with axe-core
// against WCAG 2.1 A and AA: a violation of impact serious or critical fails (the accessibility
// bar, docs/decisions.md). One task is done by keyboard alone (the KV page: focus visible, and
// kept when the list is drawn again), and the main pages are loaded 375 px wide: no horizontal
// scroll. A new page goes in PAGES, so it is visible here.

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']
/** Playwright's viewport for a context given none. */
const DEFAULT_VIEWPORT = { width: 1280, height: 720 }

type Who = 'guest' | 'alice' | 'admin'
interface PageCase {
  name: string
  who: Who
  /** the address, from the test's server and alice's origin */
  url: (w: World) => string
  /** what to do once loaded to reach the state checked (open a panel, post a form) */
  act?: (page: Page, w: World) => Promise<void>
  /** the status expected of the navigation (200 unless said) */
  status?: number
  /** checked at 375 px too */
  narrow?: boolean
  /** the sign-up mode (the admin's `registration` setting) while the page is checked; open otherwise */
  registration?: 'invite' | 'closed'
}
interface World {
  s: TestServer
  /** alice's own origin, where her sites are served */
  site: string
}

/**
 * Every page of the service that a person sees; read the routes when adding one. A page with
 * panels its script opens is checked with them open (the closed page is part of it).
 */
const PAGES: PageCase[] = [
  // src/features/pages/auth-pages.ts
  { name: 'login', who: 'guest', url: (w) => `${w.s.url}/login`, narrow: true },
  { name: 'login, refused', who: 'guest', url: (w) => `${w.s.url}/login?error=1&username=alice` },
  { name: 'sign-up', who: 'guest', url: (w) => `${w.s.url}/register`, narrow: true },
  { name: 'sign-up, refused fields', who: 'guest', url: (w) => `${w.s.url}/register?error=taken,password,expired&username=alice` },
  { name: 'sign-up, held for approval', who: 'guest', url: (w) => `${w.s.url}/register?pending` },
  { name: 'sign-up by invitation', who: 'guest', url: (w) => `${w.s.url}/register?error=invite`, registration: 'invite' },
  { name: 'sign-up closed', who: 'guest', url: (w) => `${w.s.url}/register`, status: 403, registration: 'closed' },
  { name: 'log out', who: 'alice', url: (w) => `${w.s.url}/logout` },
  // src/features/pages/dashboard.ts and each feature's page.ts
  { name: 'dashboard', who: 'alice', url: (w) => `${w.s.url}/dashboard`, narrow: true },
  { name: 'files', who: 'alice', url: (w) => `${w.s.url}/dashboard/files`, narrow: true },
  {
    name: "folders, a project's files and deploys shown",
    who: 'alice',
    narrow: true,
    url: (w) => `${w.s.url}/dashboard/folders`,
    act: async (page) => {
      await page.getByRole('button', { name: 'blog', exact: true }).click()
      await page.getByText('second').first().waitFor()
    },
  },
  {
    name: 'forms, submissions and notifications shown',
    who: 'alice',
    narrow: true,
    url: (w) => `${w.s.url}/dashboard/forms`,
    act: async (page) => {
      await page.getByRole('button', { name: 'Submissions Contact' }).click()
      await page.locator('#subs-table tbody tr', { hasText: 'Ada' }).waitFor()
      await page.getByRole('button', { name: 'Notifications Contact' }).click()
      await page.locator('#deliv-table').waitFor()
    },
  },
  { name: 'images', who: 'alice', url: (w) => `${w.s.url}/dashboard/images`, narrow: true },
  {
    name: "hosted data, a file's versions shown",
    who: 'alice',
    narrow: true,
    url: (w) => `${w.s.url}/dashboard/data`,
    act: async (page) => {
      await page.getByRole('button', { name: 'Versions data.json' }).click()
      await page.locator('#versions-table tbody tr').first().waitFor()
    },
  },
  {
    name: 'KV, a refused value at its field',
    who: 'alice',
    narrow: true,
    url: (w) => `${w.s.url}/dashboard/kv`,
    act: async (page) => {
      await page.getByLabel('Key', { exact: true }).fill('broken')
      await page.getByLabel('Value', { exact: true }).fill('{"a": ')
      await page.getByRole('button', { name: 'Save', exact: true }).click()
      await page.locator('#kv-value[aria-invalid="true"]').waitFor()
    },
  },
  { name: 'domains and visitor access', who: 'alice', url: (w) => `${w.s.url}/dashboard/domains`, narrow: true },
  { name: 'export', who: 'alice', url: (w) => `${w.s.url}/dashboard/export` },
  // src/features/accounts/page.ts
  { name: 'API keys', who: 'alice', url: (w) => `${w.s.url}/api-keys`, narrow: true },
  { name: 'account', who: 'alice', url: (w) => `${w.s.url}/account`, narrow: true },
  // src/features/admin/page.ts (and its 403 for a non-admin)
  {
    name: "admin: users, an account's API keys shown",
    who: 'admin',
    narrow: true,
    url: (w) => `${w.s.url}/admin`,
    act: async (page) => {
      await page.locator('#users-table tr[data-user="alice"]').getByRole('button', { name: 'API keys' }).click()
      await page.locator('#keys-table tbody tr').first().waitFor()
    },
  },
  { name: 'admin: reports', who: 'admin', url: (w) => `${w.s.url}/admin/reports`, narrow: true },
  { name: 'admin: content', who: 'admin', url: (w) => `${w.s.url}/admin/content` },
  { name: 'admin: settings', who: 'admin', url: (w) => `${w.s.url}/admin/settings` },
  { name: 'admin: audit', who: 'admin', url: (w) => `${w.s.url}/admin/audit` },
  { name: 'admin: health', who: 'admin', url: (w) => `${w.s.url}/admin/health` },
  { name: 'admin, refused to a non-admin', who: 'alice', url: (w) => `${w.s.url}/admin`, status: 403 },
  // src/features/abuse/page.ts
  { name: 'report form', who: 'guest', url: (w) => `${w.s.url}/report?url=${encodeURIComponent(`${w.site}/about.html`)}`, narrow: true },
  { name: 'report form, sent', who: 'guest', url: (w) => `${w.s.url}/report?sent=1` },
  // src/features/docs
  {
    name: 'API reference, an operation opened',
    who: 'guest',
    url: (w) => `${w.s.url}/docs`,
    act: async (page) => {
      await page.locator('#operations-key-value_store-postSvcApiDataStore .opblock-summary-control').click()
      await page.locator('#operations-key-value_store-postSvcApiDataStore .opblock-body').waitFor()
    },
  },
  { name: 'error codes', who: 'guest', url: (w) => `${w.s.url}/docs/errors` },
  // src/web/short-page.ts: the service's 404, a form's landing pages, the verify page
  { name: "the service's 404", who: 'guest', url: (w) => `${w.s.url}/dashbord`, status: 404 },
  {
    name: 'form landing page: thank you',
    who: 'guest',
    url: (w) => `${w.site}/site/form.html`,
    act: async (page) => {
      await page.getByLabel('Your name').fill('Lena')
      await Promise.all([page.waitForURL(/\/api\/forms\/submit\//), page.getByRole('button', { name: 'Send' }).click()])
      await page.getByRole('heading', { name: 'Thank you' }).waitFor()
    },
  },
  {
    name: 'form landing page: not sent',
    who: 'guest',
    url: (w) => `${w.site}/site/form.html`,
    act: async (page) => {
      await page.locator('#broken').evaluate((f: HTMLFormElement) => f.submit())
      await page.getByRole('heading', { name: 'Not sent' }).waitFor()
    },
  },
  { name: 'notification address verify page', who: 'guest', url: (w) => `${w.s.url}/svc_api/notify/verify?token=nothing`, status: 400 },
  // on alice's origin: src/features/sites/not-found.ts, domains/access.ts, abuse/public.ts
  { name: "a site's 404", who: 'guest', url: (w) => `${w.site}/site/missing.html`, status: 404 },
  { name: 'visitor password form', who: 'guest', url: (w) => `${w.site}/secret/`, status: 401 },
  {
    name: 'visitor password form, wrong password',
    who: 'guest',
    url: (w) => `${w.site}/secret/`,
    status: 401,
    act: async (page) => {
      await page.fill('input[type=password]', 'wrong guess')
      await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit]')])
      await page.locator('[role=alert]').waitFor()
    },
  },
  { name: '451 notice of held content', who: 'guest', url: (w) => `${w.site}/held.html`, status: 451 },
]

/** The contrast ratio of two colours (WCAG 2.1), each `#rrggbb` or `rgb(r, g, b)`. */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    const parts = c.startsWith('#') ? [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)) : (c.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map(Number)
    const [r, g, bl] = parts.map((v) => {
      const x = v / 255
      return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4
    })
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl
  }
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x)
  return (hi + 0.05) / (lo + 0.05)
}

/**
 * Loads axe-core into the page from `axeUrl` with a script element, removed again once loaded so
 * the page's DOM is what it was. Fetched from a cacheable URL, not evaluated from a string: the
 * context's HTTP cache keeps the 500 KB script and Chromium reuses its compiled code in the
 * page's next documents. A script that fails to load throws: no page passes unchecked.
 */
async function injectAxe(page: Page, axeUrl: string): Promise<void> {
  await page.evaluate(
    (src) =>
      new Promise<void>((done, fail) => {
        const script = document.createElement('script')
        script.src = src
        script.onload = () => {
          script.remove()
          done()
        }
        script.onerror = () => fail(new Error(`axe-core did not load from ${src}`))
        ;(document.head ?? document.documentElement).append(script)
      }),
    axeUrl,
  )
}

/** Serious and critical axe-core violations of WCAG 2.1 A/AA on the page as it is now. */
async function violations(page: Page, axeUrl: string, rules?: string[]): Promise<string[]> {
  await injectAxe(page, axeUrl)
  const only = rules ? { type: 'rule', values: rules } : { type: 'tag', values: TAGS }
  const found = await page.evaluate(async (runOnly) => {
    const axe = (window as unknown as { axe: { run: (ctx: unknown, o: unknown) => Promise<{ violations: Array<Record<string, unknown>> }> } }).axe
    const r = await axe.run(document, { runOnly, resultTypes: ['violations'] })
    return r.violations.map((v) => ({
      id: v.id as string,
      impact: v.impact as string,
      help: v.help as string,
      nodes: (v.nodes as Array<{ target: string[]; failureSummary: string }>)
        .slice(0, 40)
        .map((n) => `${n.target.join(' ')}: ${n.failureSummary.replace(/\s+/g, ' ')}`),
    }))
  }, only)
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}) ${v.help}\n    ${v.nodes.join('\n    ')}`)
}

describe('accessibility: every page passes axe-core (WCAG 2.1 AA, serious and critical) (Chromium)', () => {
  let s: TestServer
  let browser: BrowserLease
  let w: World
  const cookies: Partial<Record<Who, string>> = {}
  /**
   * One context per person, and in it one page the cases are opened in one after another, as
   * that person goes from page to page (the tests that type or resize open pages of their own).
   */
  const contexts = new Map<Who, Promise<BrowserContext>>()
  const casePages = new Map<Who, Promise<Page>>()
  /** Each page's request tracker (networkQuiet), made once per page. */
  const trackers = new WeakMap<Page, ReturnType<typeof networkQuiet>>()
  /** Serves axe-core to the pages (a loopback origin, so no mixed content on the service's HTTPS pages), cacheable. */
  let axeHost: http.Server
  let axeUrl: string

  before(async () => {
    s = await startServer({ env: { RATE_LIMITS: HIGH_LIMITS } })
    const admin = await s.user({ admin: true })
    const alice = await s.user({ name: 'alice' })
    const site = `http://alice.localhost:${new URL(s.httpUrl).port}`
    const key = { key: alice.key }
    const ok = (r: { status: number; text?: string }, what: string) => assert.ok(r.status < 300, `${what}: ${r.status} ${r.text ?? ''}`)

    // files, a published project with deploys, a protected one
    ok(await uploadFile(s, key, 'about.html', '<!doctype html><title>about</title><h1>about alice</h1>'), 'file')
    ok(await uploadFile(s, key, 'held.html', '<!doctype html><title>held</title><h1>held</h1>'), 'file')
    const form = (await s.post('/svc_api/forms/create', { ...key, json: { form_name: 'Contact' } })).json.data as { id: string; form_slug: string }
    const formPage = `<!doctype html><html lang="en"><title>form</title><main>
      <form method="post" action="${s.url}/api/forms/submit/${form.form_slug}"><label for="n">Your name</label><input id="n" name="name"><button>Send</button></form>
      <form id="broken" method="post" action="${s.url}/api/forms/submit/no-such-form"><input name="name" value="x" aria-label="x"></form></main>`
    ok(
      await batchUpload(s, key, 'site', [
        { filename: 'index.html', data: '<!doctype html><title>site</title><h1>site</h1>' },
        { filename: 'form.html', data: formPage },
      ]),
      'batch',
    )
    ok(await s.post('/api/folders/site/publish', key), 'publish')
    ok((await deploySite(s, alice.key, 'blog', { 'index.html': '<h1>v1</h1>' }, { message: 'first' })).res, 'deploy')
    ok((await deploySite(s, alice.key, 'blog', { 'index.html': '<h1>v2</h1>' }, { message: 'second' })).res, 'deploy')
    ok(await batchUpload(s, key, 'secret', [{ filename: 'index.html', data: '<p>secret</p>' }]), 'batch')
    ok(await s.post('/api/folders/secret/publish', key), 'publish')
    ok(await s.request('PUT', '/api/access/secret', { ...key, json: { password: 'open sesame' } }), 'access')
    // KV, a form with a submission, images, hosted data, a domain
    ok(await s.post('/svc_api/data/store', { ...key, json: { key: 'cfg', value: { theme: 'dark' }, is_public: true } }), 'kv')
    ok(await s.post('/svc_api/data/store', { ...key, json: { key: 'notes', value: 'hello', data_type: 'text' } }), 'kv')
    ok(await s.post(`/api/forms/submit/${form.form_slug}`, { json: { name: 'Ada', message: 'hello' } }), 'submit')
    await svc(s, 'grant', alice.username, 'image-host')
    await svc(s, 'grant', alice.username, 'hosted-data')
    cookies.alice = await s.login(alice.username, alice.password)
    const session = { cookie: cookies.alice }
    const img = imageForm([{ name: 'pic.png', data: await makeImage('png'), type: 'image/png' }])
    ok(await s.post('/api/image-host/upload', { ...session, body: img.body, headers: { 'content-type': img.contentType } }), 'image')
    ok(await s.post('/api/hosted-data/files', { ...session, json: { display_name: 'data.json', content: '{"a":1}' } }), 'hosted data')
    ok(await s.post('/api/domains', { ...key, json: { domain: 'www.alice.example.test', project: 'site' } }), 'domain')
    // a report, and a page of alice's held by an admin (451)
    cookies.admin = await s.login(admin.username, admin.password)
    const adminKey = { cookie: cookies.admin }
    ok(await s.post('/svc_api/abuse/reports', { json: { url: `${site}/about.html`, category: 'spam', details: 'looks like spam' } }), 'report')
    const held = await s.post('/svc_api/admin/reports', { ...adminKey, json: { url: `${site}/held.html`, category: 'phishing' } })
    ok(held, 'case')
    ok(await s.post(`/svc_api/admin/reports/${held.json.data.id}/quarantine`, adminKey), 'quarantine')

    w = { s, site }
    axeHost = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600' })
      res.end(AXE_SOURCE)
    })
    await new Promise<void>((resolve) => axeHost.listen(0, '127.0.0.1', resolve))
    axeUrl = `http://127.0.0.1:${(axeHost.address() as AddressInfo).port}/axe.min.js`
    browser = await openBrowser()
  })
  after(async () => {
    await browser?.close()
    // Chromium's kept-alive connections would hold the process open past the file
    axeHost?.closeAllConnections()
    axeHost?.close()
    await s?.close()
  })

  /** `who`'s context (its session cookie set), in English; made on first use. */
  function contextFor(who: Who): Promise<BrowserContext> {
    let ctx = contexts.get(who)
    if (ctx === undefined) {
      // bypassCSP: axe-core is injected into pages whose policy allows only their own scripts
      ctx = browser.newContext({ ignoreHTTPSErrors: true, locale: 'en-US', bypassCSP: true }).then(async (c) => {
        const cookie = cookies[who]
        if (cookie) await c.addCookies(sessionCookiesFor(cookie, s.url))
        return c
      })
      contexts.set(who, ctx)
    }
    return ctx
  }

  /** A new page for `who`. */
  async function pageFor(who: Who): Promise<Page> {
    const page = await (await contextFor(who)).newPage()
    page.setDefaultTimeout(15_000)
    page.on('dialog', (d) => void d.accept())
    return page
  }

  /** `who`'s page for the cases, made on first use. */
  function casePage(who: Who): Promise<Page> {
    let page = casePages.get(who)
    if (page === undefined) casePages.set(who, (page = pageFor(who)))
    return page
  }

  /** Opens a case's page and waits until its scripts have filled it. */
  async function open(page: Page, c: PageCase): Promise<void> {
    let quiet = trackers.get(page)
    if (quiet === undefined) trackers.set(page, (quiet = networkQuiet(page)))
    const res = await page.goto(c.url(w))
    assert.equal(res?.status(), c.status ?? 200, `${c.name}: status`)
    await quiet()
    if (c.act) {
      await c.act(page, w)
      await quiet()
    }
  }

  for (const c of PAGES) {
    it(`${c.name}: no serious or critical violation`, async () => {
      const page = await casePage(c.who)
      const registration = (mode: string) => s.post('/svc_api/admin/settings', { cookie: cookies.admin, json: { registration: mode } })
      try {
        if (c.registration) assert.equal((await registration(c.registration)).status, 200)
        await open(page, c)
        const found = await violations(page, axeUrl)
        assert.deepEqual(found, [], `${c.name} (${page.url()}):\n  ${found.join('\n  ')}`)
      } finally {
        if (c.registration) await registration('open')
      }
    })
  }

  it('KV page by keyboard alone: a key stored, made private, deleted after its confirm step; focus shown and kept', async () => {
    const page = await pageFor('alice')
    const dialogs: string[] = []
    let answer = false
    page.removeAllListeners('dialog')
    page.on('dialog', (d) => {
      dialogs.push(d.message())
      void (answer ? d.accept() : d.dismiss())
    })
    const quiet = networkQuiet(page)
    await page.goto(`${s.url}/dashboard/kv`)
    await quiet()
    const focused = () =>
      page.evaluate(() => {
        const e = document.activeElement as HTMLElement | null
        const style = e ? getComputedStyle(e) : null
        return {
          id: e?.id ?? '',
          tag: e?.tagName.toLowerCase() ?? '',
          name: e?.getAttribute('aria-label') ?? e?.textContent?.trim() ?? '',
          ring: !!e && e.matches(':focus-visible') && style!.outlineStyle !== 'none' && parseFloat(style!.outlineWidth) >= 2 ? style!.outlineColor : '',
        }
      })
    /** The focused element, checked to show a ring of at least 3:1 against the page and the cards. */
    const shown = async () => {
      const f = await focused()
      assert.ok(f.ring, `no visible focus ring on ${f.tag}#${f.id} "${f.name}"`)
      for (const bg of ['#f5f6f8', '#ffffff']) assert.ok(contrast(f.ring, bg) >= 3, `focus ring ${f.ring} on ${bg}: ${contrast(f.ring, bg).toFixed(2)}:1`)
      return f
    }
    /** Tabs until `want` holds of the focused element (at most 40 presses). */
    const tabTo = async (want: (f: Awaited<ReturnType<typeof focused>>) => boolean, what: string) => {
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab')
        const f = await shown()
        if (want(f)) return f
      }
      assert.fail(`Tab never reached ${what}`)
    }

    // the skip link first, then straight to the editor's first field
    assert.equal((await tabTo((f) => f.tag === 'a', 'the skip link')).name, 'Skip to content')
    await page.keyboard.press('Enter')
    assert.equal((await tabTo(() => true, 'the key field')).id, 'kv-key')
    await page.keyboard.type('kbd_key')
    assert.equal((await tabTo(() => true, 'the type')).id, 'kv-type')
    assert.equal((await tabTo(() => true, 'the value')).id, 'kv-value')
    await page.keyboard.type('{"n": 1}')
    await tabTo((f) => f.id === 'kv-public', 'the public box')
    await page.keyboard.press('Space')
    assert.equal((await tabTo((f) => f.tag === 'button', 'Save')).name, 'Save')
    await page.keyboard.press('Enter')
    const row = page.locator('#kv-table tbody tr', { hasText: 'kbd_key' })
    await row.waitFor()
    const stored = await s.get('/svc_api/data/get?key=kbd_key', { cookie: cookies.alice })
    assert.deepEqual([stored.json.data.value, stored.json.data.is_public], [{ n: 1 }, true])

    // made private from its row: the list is drawn again, focus stays on that box
    await tabTo((f) => f.name === 'Public kbd_key', "the entry's Public box")
    const saved = page.waitForResponse((r) => r.url().includes('/svc_api/data/list'))
    await page.keyboard.press('Space')
    await saved
    await quiet()
    assert.equal((await shown()).name, 'Public kbd_key')
    assert.equal(await page.getByLabel('Public kbd_key').isChecked(), false)

    // its Delete button; the confirm step refused keeps the entry and the focus
    await tabTo((f) => f.name === 'Delete kbd_key', "the entry's Delete button")
    await page.keyboard.press('Space')
    await quiet()
    assert.equal(dialogs.length, 1)
    assert.equal((await shown()).name, 'Delete kbd_key')
    assert.equal(await row.count(), 1)
    // confirmed: gone, and focus on the Delete button of the row now in its place, not the page's top
    answer = true
    await page.keyboard.press('Enter')
    await row.waitFor({ state: 'detached' })
    await quiet()
    const after = await shown()
    assert.equal(after.tag, 'button')
    assert.match(after.name, /^Delete (cfg|notes)$/)
    assert.equal((await s.get('/svc_api/data/get?key=kbd_key', { cookie: cookies.alice })).status, 404)
    await page.close()
  })

  it('the main pages have no horizontal scroll at 375 px, and what scrolls in them does so by keyboard', async () => {
    const wide: string[] = []
    const stuck: string[] = []
    for (const who of ['guest', 'alice', 'admin'] as const) {
      const page = await casePage(who)
      await page.setViewportSize({ width: 375, height: 800 })
      for (const c of PAGES.filter((p) => p.narrow && p.who === who)) {
        await open(page, c)
        const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth])
        if (scroll > client) {
          const culprits = await page.evaluate((limit) => {
            return [...document.querySelectorAll('body *')]
              .filter((e) => e.getBoundingClientRect().right > limit + 1 && !e.closest('.table-wrap'))
              .slice(0, 5)
              .map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className ? '.' + String(e.className).replace(/ /g, '.') : ''}`)
          }, client)
          wide.push(`${c.name}: ${scroll} px > ${client} px (${culprits.join(', ')})`)
        }
        // a table too wide for the phone scrolls in its own box, which the keyboard must reach
        stuck.push(...(await violations(page, axeUrl, ['scrollable-region-focusable'])).map((v) => `${c.name}: ${v}`))
      }
      await page.setViewportSize(DEFAULT_VIEWPORT)
    }
    assert.deepEqual(wide, [])
    assert.deepEqual(stuck, [])
  })
})
