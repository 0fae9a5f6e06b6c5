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

/** Launch options for playwright-core against the test server's self-signed certificate. */
export const chromiumOptions = { executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, ignoreHTTPSErrors: true }

import type { Page } from 'playwright-core'

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
