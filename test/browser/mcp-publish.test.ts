import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext } from 'playwright-core'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { openContext, watchErrors } from '../support/browser.js'
import { mcpHttpClient, textOf } from '../support/mcp.js'

const engine = ENGINES[0]

describe(`a page published through MCP opens in Chromium [${engine}]`, () => {
  let s: TestServer
  let ctx: BrowserContext
  let client: Client
  before(async () => {
    s = await startServer({ engine })
    ctx = await openContext()
  })
  after(async () => {
    await client?.close()
    await ctx?.close()
    await s.close()
  })

  it('publish_html and deploy_files answer URLs that a browser opens and runs', async () => {
    const alice = await s.user()
    client = await mcpHttpClient(s.url, alice.key)
    const html =
      '<!doctype html><html><head><title>agent</title></head><body><h1 id="h">Made by an agent</h1><script>document.title = "ran:" + location.host</script></body></html>'
    const r = (await client.callTool({ name: 'publish_html', arguments: { name: 'from-agent', html } })) as { structuredContent: any; content: unknown }
    const url: string = r.structuredContent.open_url
    assert.ok(textOf(r).includes(url))
    const page = await ctx.newPage()
    const errors = watchErrors(page, [{ url: '/favicon.ico', status: 404 }])
    await page.goto(url)
    await page.waitForFunction(() => document.title.startsWith('ran:'))
    assert.equal(await page.textContent('#h'), 'Made by an agent')
    assert.equal(new URL(page.url()).host, new URL(url).host)
    assert.deepEqual(errors, [])

    const d = (await client.callTool({
      name: 'deploy_files',
      arguments: {
        project: 'agent-site',
        files: [
          { path: 'index.html', content: '<!doctype html><link rel="stylesheet" href="style.css"><p id="p">styled</p><script src="app.js"></script>' },
          { path: 'style.css', content: '#p { color: rgb(1, 2, 3) }' },
          { path: 'app.js', content: 'document.title = "site ok"' },
        ],
      },
    })) as { structuredContent: any; content: unknown }
    const siteErrors = watchErrors(page, [{ url: '/favicon.ico', status: 404 }])
    await page.goto(d.structuredContent.open_url)
    await page.waitForFunction(() => document.title === 'site ok')
    assert.equal(await page.$eval('#p', (e) => getComputedStyle(e).color), 'rgb(1, 2, 3)')
    assert.deepEqual(siteErrors, [])
  })
})
