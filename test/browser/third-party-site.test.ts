import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { openBrowser, type BrowserLease, watchErrors } from '../support/browser.js'
import { makeTree, runCli } from '../cli/run.js'

// A real third-party site, as published on npm and unchanged but for its configuration file.
const engine = ENGINES[0]
const SWAGGER_DIST = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))

/** swagger-initializer.js is the file the dist tells its users to edit: the spec's URL, no online validator. */
const INITIALIZER = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: './openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
  })
}
`

describe(`swagger-ui-dist deployed with svc deploy, in Chromium [${engine}]`, () => {
  let s: TestServer
  let browser: BrowserLease
  let dir: string
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    // the dist folder as a user copies it, with the service's own API description as the spec
    const spec = await s.get('/openapi.json')
    assert.equal(spec.status, 200)
    dir = makeTree({ 'openapi.json': spec.text, 'swagger-initializer.js': INITIALIZER, '.svcignore': '*.map\n' })
    for (const f of fs.readdirSync(SWAGGER_DIST)) {
      if (!fs.existsSync(path.join(dir, f))) fs.copyFileSync(path.join(SWAGGER_DIST, f), path.join(dir, f))
    }
    browser = await openBrowser()
  })
  after(async () => {
    await browser?.close()
    await s?.close()
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  it("renders the spec on the user's origin with no console errors", async () => {
    const user = await s.user()
    const env = { SVC_URL: s.url, SVC_API_KEY: user.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'no-config.json') }
    const r = await runCli(['deploy', dir, '--project', 'api-docs', '--json'], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.json.published, true)
    assert.ok(r.json.uploaded.includes('swagger-ui-bundle.js'))
    assert.ok(!r.json.uploaded.some((f: string) => f.endsWith('.map')), '.svcignore kept the source maps local')
    assert.equal(r.json.site_url, `http://${user.username}.localhost:${new URL(s.httpUrl).port}/api-docs/`)

    const ctx = await browser.newContext({ ignoreHTTPSErrors: true })
    const page = await ctx.newPage()
    const errors = watchErrors(page)
    try {
      const res = await page.goto(r.json.site_url)
      assert.equal(res?.status(), 200)
      const title = page.locator('.information-container .title')
      await title.waitFor({ timeout: 20_000 })
      assert.match(await title.innerText(), /^svc hosting API/)
      // the operations are rendered from the spec, and one opens
      const op = page.locator('.opblock-summary-path', { hasText: '/svc_api/me' }).first()
      await op.click()
      await page.locator('.opblock-body').first().waitFor()
      assert.deepEqual(errors, [], 'no console errors, page errors or failed requests')
    } finally {
      await ctx.close()
    }
  })
})
