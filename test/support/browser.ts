import { after } from 'node:test'
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Locator, type Page } from 'playwright-core'

/** Debian's Chromium, headless, as this machine runs it (no browser download, no network calls). */
export const CHROMIUM_PATH = '/usr/bin/chromium'
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
]

/** Chromium processes of this test process, by their extra arguments. */
const browsers = new Map<string, Promise<Browser>>()
// this module is imported at a test file's top level, so the hook is the process's root one:
// it runs once every file of the process (a group, scripts/run-tests.mjs) is done
after(async () => {
  const open = [...browsers.values()]
  browsers.clear()
  for (const b of open) await (await b.catch(() => null))?.close()
})

/** What a test file holds of a shared Chromium: its own contexts, closed by close(). */
export interface BrowserLease {
  /** A fresh context (its own cookies, storage, cache), trusting the test server's certificate. */
  newContext(options?: BrowserContextOptions): Promise<BrowserContext>
  /** Closes this lease's contexts; the browser stays for the process's other files. */
  close(): Promise<void>
}

/**
 * Chromium for a test file. A launch costs about a CPU-second more than a context, so the
 * files of one test process share one browser per set of `extraArgs` (launch-time switches
 * such as --host-resolver-rules), relaunched if it went away. Nothing crosses between files:
 * each works in contexts of its own, which hold Chromium's cookies, storage, caches, HSTS
 * state and permissions.
 */
export async function openBrowser(extraArgs: string[] = []): Promise<BrowserLease> {
  const key = extraArgs.join('\n')
  let launched = browsers.get(key)
  if (launched === undefined) {
    const mine = chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS, ...extraArgs] })
    launched = mine
    browsers.set(key, mine)
    const forget = () => {
      if (browsers.get(key) === mine) browsers.delete(key)
    }
    mine.then((b) => b.on('disconnected', forget), forget)
  }
  const browser = await launched
  const contexts = new Set<BrowserContext>()
  return {
    async newContext(options = {}) {
      const ctx = await browser.newContext({ ignoreHTTPSErrors: true, ...options })
      contexts.add(ctx)
      ctx.on('close', () => contexts.delete(ctx))
      return ctx
    },
    async close() {
      for (const ctx of [...contexts]) await ctx.close().catch(() => {})
    },
  }
}

/** One context of a shared Chromium (openBrowser), for a file that needs one; ctx.close() ends it. */
export async function openContext(options: BrowserContextOptions = {}): Promise<BrowserContext> {
  return (await openBrowser()).newContext(options)
}

/**
 * Everything that went wrong on a page, as a visitor's devtools would show it: console
 * errors, uncaught exceptions, requests that failed, and answers of 400 or more (except the
 * statuses a test expects, by URL substring).
 */
export function watchErrors(page: Page, expected: Array<{ url: string; status: number }> = []): string[] {
  const errors: string[] = []
  page.on('console', (m) => {
    if (m.type() !== 'error') return
    // Chromium logs an expected 404 as "Failed to load resource"; those are checked below
    const at = m.location().url
    if (/Failed to load resource/.test(m.text()) && expected.some((e) => at.includes(e.url))) return
    errors.push(`console: ${m.text()} (${at})`)
  })
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`))
  page.on('requestfailed', (r) => errors.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`))
  page.on('response', (r) => {
    if (r.status() >= 400 && !expected.some((e) => r.url().includes(e.url) && r.status() === e.status)) errors.push(`response: ${r.status()} ${r.url()}`)
  })
  return errors
}

/**
 * `errors` (watchErrors) without the requests Chromium cancelled (net::ERR_ABORTED): a
 * favicon or prefetch still in flight when the test or the page's router navigates on. What
 * the server refused shows as a `response:` entry, and a broken connection by its own code.
 */
export const notCancelled = (errors: readonly string[]): string[] => errors.filter((e) => !/^requestfailed: \S+ net::ERR_ABORTED$/.test(e))

/**
 * The natural width of the image `img` shows, once it has loaded (0: it failed). An image
 * a script put in (a list rendered from the API, a router's swap) may still be arriving when
 * the element is there, and more so on a busy machine: this waits for its load or error event.
 */
export const loadedWidth = (img: Locator): Promise<number> =>
  img.evaluate((i: HTMLImageElement) =>
    i.complete
      ? i.naturalWidth
      : new Promise<number>((done) => {
          i.addEventListener('load', () => done(i.naturalWidth), { once: true })
          i.addEventListener('error', () => done(0), { once: true })
        }),
  )

/** Polls `check` every 50 ms until it holds or `ms` pass; returns whether it held. */
export async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) return false
    await new Promise((r) => setTimeout(r, 50))
  }
  return true
}

/**
 * Tracks `page`'s requests; the function returned resolves once none has been in flight for
 * `quietMs` (what the page fetches after its load event has arrived). Playwright's
 * 'networkidle' waits a fixed 500 ms of quiet instead, on every navigation.
 */
export function networkQuiet(page: Page): (quietMs?: number, timeoutMs?: number) => Promise<void> {
  let inFlight = 0
  let last = Date.now()
  const ended = () => {
    inFlight = Math.max(0, inFlight - 1)
    last = Date.now()
  }
  page.on('request', () => {
    inFlight++
    last = Date.now()
  })
  page.on('requestfinished', ended)
  page.on('requestfailed', ended)
  return async (quietMs = 100, timeoutMs = 10_000) => {
    if (!(await waitFor(() => inFlight === 0 && Date.now() - last >= quietMs, timeoutMs))) {
      throw new Error(`the page still had ${inFlight} request(s) in flight after ${timeoutMs} ms`)
    }
  }
}

/**
 * The cookies of a TestServer.login() Cookie header (`session` and its `__Host-` binding
 * cookie), for a browser context's addCookies on `url`, as the login answer sets them.
 */
export function sessionCookiesFor(cookieHeader: string, url: string) {
  return cookieHeader.split(';').map((part) => {
    const eq = part.indexOf('=')
    return { name: part.slice(0, eq).trim(), value: part.slice(eq + 1).trim(), url, httpOnly: true, secure: true, sameSite: 'Lax' as const }
  })
}

/** The session id of a TestServer.login() Cookie header. */
export const sessionIdOf = (cookieHeader: string): string => /(?:^|;\s*)session=([^;]*)/.exec(cookieHeader)?.[1] ?? ''

/** Signs `user` in through the login page, as a visitor would; resolves on the dashboard. */
export async function logInPage(page: Page, baseUrl: string, user: { username: string; password: string }): Promise<void> {
  await page.goto(`${baseUrl}/login`)
  await page.getByLabel('Username').fill(user.username)
  await page.getByLabel('Password', { exact: true }).fill(user.password)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForURL('**/dashboard')
}

/**
 * Counts the answers the page's scripts have handled (XMLHttpRequest's `loadend`, which follows
 * the script's own `load`), from the page's next navigation on: `handled()` reads the count,
 * `moreThan(n)` waits until more than n were handled. For checking what a page shows once a
 * held answer has been let through.
 */
export async function countXhrAnswers(page: Page): Promise<{ handled: () => Promise<number>; moreThan: (n: number) => Promise<void> }> {
  await page.addInitScript(() => {
    const w = window as unknown as { xhrDone: number }
    w.xhrDone = 0
    type Send = (this: XMLHttpRequest, body?: Document | XMLHttpRequestBodyInit | null) => void
    const send = Object.getOwnPropertyDescriptor(XMLHttpRequest.prototype, 'send')!.value as Send
    // assigned, not named: the test's transform would wrap a named function in a helper the page lacks
    XMLHttpRequest.prototype.send = function (this: XMLHttpRequest, body?: Document | XMLHttpRequestBodyInit | null) {
      this.addEventListener('loadend', () => w.xhrDone++)
      send.call(this, body)
    }
  })
  return {
    handled: () => page.evaluate(() => (window as unknown as { xhrDone: number }).xhrDone),
    moreThan: async (n) => {
      await page.waitForFunction((k) => (window as unknown as { xhrDone: number }).xhrDone > k, n)
    },
  }
}
