/** Debian's Chromium, headless, as this machine runs it (no browser download, no network calls). */
export const CHROMIUM_PATH = '/usr/bin/chromium'
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
  '--no-first-run', '--disable-component-update', '--disable-sync']

/** Launch options for playwright-core against the test server's self-signed certificate. */
export const chromiumOptions = { executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, ignoreHTTPSErrors: true }
