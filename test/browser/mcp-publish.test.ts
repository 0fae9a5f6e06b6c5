import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { BrowserContext } from 'playwright-core'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { loadedWidth, openContext, watchErrors } from '../support/browser.js'
import { mcpHttpClient, textOf } from '../support/mcp.js'
import { makeImage, svc } from '../support/images.js'

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

  it("a guestbook an agent builds through MCP counts, takes a visitor's entry, rolls back and is cleaned up", async () => {
    const bob = await s.user()
    await svc(s, 'grant', bob.username, 'image-host')
    const agent = await mcpHttpClient(s.url, bob.key)
    const ok = async (name: string, args: Record<string, unknown> = {}) => {
      const r = (await agent.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent: any; content: unknown }
      assert.ok(!r.isError, `${name}: ${textOf(r)}`)
      return r.structuredContent
    }
    try {
      await agent.listTools() // the SDK client then checks each result against its tool's output schema
      const png = await makeImage('png', { width: 30, height: 6 })
      const { image } = await ok('upload_image', { base64: png.toString('base64'), file_name: 'header.png' })
      const { form } = await ok('create_form', {
        form_name: 'Guestbook',
        fields_config: [
          { name: 'name', required: true },
          { name: 'message', type: 'textarea', required: true },
        ],
      })
      // the agent counts (a page's visitors hold no key that writes); the page reads the public entry
      await ok('kv_set', { key: 'visits', value: 41, data_type: 'number', is_public: true })
      const { public_url: countUrl } = await ok('kv_incr', { key: 'visits' })
      const page = (title: string) =>
        `<!doctype html><title>${title}</title><img id="hdr" src="${image.public_url}" alt="header"><p>Visits: <span id="count">?</span></p>` +
        `<form method="post" action="${form.submit_url}"><input name="name"><textarea name="message"></textarea><button>Sign</button></form>` +
        `<script>fetch(${JSON.stringify(countUrl)}).then((r) => r.json()).then((j) => { document.getElementById('count').textContent = j.data.value })</script>`
      const good = await ok('deploy_files', { project: 'guestbook', files: [{ path: 'index.html', content: page('Guestbook') }] })

      // the visitor comes back to the guestbook after signing: the page's URL is known now
      await ok('update_form', { form_id: form.id, redirect_url: good.open_url })

      const tab = await ctx.newPage()
      const errors = watchErrors(tab, [{ url: '/favicon.ico', status: 404 }])
      await tab.goto(good.open_url)
      await tab.waitForFunction(() => document.getElementById('count')?.textContent === '42')
      assert.equal(await loadedWidth(tab.locator('#hdr')), 30)
      await tab.fill('input[name=name]', 'Ann')
      await tab.fill('textarea[name=message]', 'Lovely page')
      await Promise.all([tab.waitForURL(good.open_url), tab.click('button')])
      await tab.waitForFunction(() => document.getElementById('count')?.textContent === '42')
      assert.deepEqual(errors, [])
      const read = await ok('list_submissions', { form_id: form.id })
      assert.deepEqual(
        read.submissions.map((x: any) => x.data),
        [{ name: 'Ann', message: 'Lovely page' }],
      )
      assert.equal((await ok('kv_get', { key: 'visits' })).entry.value, 42)

      // a bad change, rolled back
      await ok('deploy_files', { project: 'guestbook', files: [{ path: 'index.html', content: page('Broken') + '<p>oops' }] })
      await tab.goto(good.open_url)
      assert.equal(await tab.title(), 'Broken')
      assert.equal((await ok('rollback', { project: 'guestbook' })).live_deploy_id, good.deploy_id)
      await tab.goto(good.open_url)
      assert.equal(await tab.title(), 'Guestbook')

      // clean up: nothing the agent made is left
      await ok('delete_site', { name: 'guestbook' })
      await ok('kv_delete', { key: 'visits' })
      await ok('delete_form', { form_id: form.id })
      await ok('delete_image', { public_token: image.public_token })
      assert.equal((await tab.goto(good.open_url))?.status(), 404)
      for (const gone of [countUrl, image.public_url]) assert.equal((await s.get(new URL(gone).pathname)).status, 404, gone)
      const left = await ok('list_sites')
      assert.deepEqual([left.pages, left.projects], [[], []])
      assert.equal((await ok('kv_list')).total, 0)
      assert.deepEqual((await ok('list_submissions')).forms, [])
      assert.equal((await ok('list_images')).total, 0)
    } finally {
      await agent.close()
    }
  })

  it('a page an agent protects with set_access asks its visitors for the password; clear_access opens it', async () => {
    const carol = await s.user()
    const agent = await mcpHttpClient(s.url, carol.key)
    const ok = async (name: string, args: Record<string, unknown> = {}) => {
      const r = (await agent.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent: any; content: unknown }
      assert.ok(!r.isError, `${name}: ${textOf(r)}`)
      return r.structuredContent
    }
    try {
      await agent.listTools()
      const { open_url: url } = await ok('publish_html', { name: 'members', html: '<!doctype html><title>members</title><h1 id="t">for members only</h1>' })
      // the page by the name it was published with
      assert.equal((await ok('set_access', { name: 'members', password: 'club password' })).access.name, 'members.html')
      const tab = await ctx.newPage()
      const first = await tab.goto(url)
      assert.equal(first?.status(), 401)
      assert.equal(await tab.title(), 'Password required')
      assert.ok(!(await tab.content()).includes('for members only'))
      await tab.fill('input[type=password]', 'club password')
      const [answer] = await Promise.all([tab.waitForNavigation(), tab.click('button[type=submit]')])
      assert.equal(answer?.status(), 200)
      assert.equal(tab.url(), url)
      assert.equal(await tab.textContent('#t'), 'for members only')

      // open to everyone again: a visitor without the cookie sees the page at once
      await ok('clear_access', { name: 'members' })
      await ctx.clearCookies()
      assert.equal((await tab.goto(url))?.status(), 200)
      assert.equal(await tab.textContent('#t'), 'for members only')
      await tab.close()
    } finally {
      await agent.close()
    }
  })
})
