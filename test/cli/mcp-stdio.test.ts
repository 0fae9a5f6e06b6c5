import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { mcpHttpClient, textOf } from '../support/mcp.js'
import { makeImage, svc } from '../support/images.js'
import { startDns, type TestDns } from '../support/dns.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { runCli, SVC_BIN } from './run.js'
import { MCP_BODY_LIMIT } from '../../src/features/mcp/limits.js'
import { FakeClock } from '../../src/util/clock.js'

for (const engine of ENGINES) {
  describe(`svc mcp over stdio [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let home: string
    let dns: TestDns
    const clients: Client[] = []

    /** Spawns `bin/svc mcp` with SVC_URL / SVC_API_KEY, connected to the SDK's own client; stderr is collected. */
    async function stdioClient(key: string): Promise<{ client: Client; stderr: () => string }> {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [SVC_BIN, 'mcp'],
        env: { PATH: process.env.PATH ?? '', HOME: home, SVC_URL: s.url, SVC_API_KEY: key, SVC_INSECURE: '1', LANG: 'C' },
        stderr: 'pipe',
      })
      let err = ''
      transport.stderr?.on('data', (c: Buffer) => (err += c.toString()))
      const client = new Client({ name: 'svc-test', version: '1.0.0' })
      await client.connect(transport)
      clients.push(client)
      return { client, stderr: () => err }
    }

    before(async () => {
      dns = await startDns()
      // alice calls every tool: more than a minute's default allowance, which a client waits out
      s = await startServer({ engine, env: { DNS_RESOLVER: dns.addr, RATE_LIMITS: HIGH_LIMITS } })
      alice = await s.user()
      home = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-home-'))
    })
    after(async () => {
      for (const c of clients) await c.close().catch(() => {})
      await s.close()
      await dns.close()
      fs.rmSync(home, { recursive: true, force: true })
    })

    it('lists the same tools as POST /mcp and runs each one against the service', { timeout: 120_000 }, async () => {
      const { client } = await stdioClient(alice.key)
      const http = await mcpHttpClient(s.url, alice.key)
      clients.push(http)
      const viaStdio = (await client.listTools()).tools
      const viaHttp = (await http.listTools()).tools
      assert.deepEqual(viaStdio, viaHttp)
      assert.equal(viaStdio.length, 36)

      const called = new Set<string>()
      const ok = async (name: string, args: Record<string, unknown> = {}) => {
        called.add(name)
        const r = (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent: any; content: unknown }
        assert.ok(!r.isError, `${name}: ${textOf(r)}`)
        return r
      }
      const page = await ok('publish_html', { name: 'stdio', html: '<h1>stdio</h1>' })
      assert.ok(textOf(page).includes(page.structuredContent.open_url))
      assert.equal((await s.get(`/${alice.username}/stdio.html`)).text, '<h1>stdio</h1>')

      await ok('deploy_files', { project: 'tiny', files: [{ path: 'index.html', content: '<p>tiny</p>' }] })
      assert.equal((await s.get(`/${alice.username}/tiny/`)).text, '<p>tiny</p>')
      const site = await ok('get_site', { name: 'tiny' })
      assert.deepEqual(
        site.structuredContent.files.map((f: any) => f.path),
        ['index.html'],
      )
      assert.equal((await ok('read_file', { project: 'tiny', path: 'index.html' })).structuredContent.content, '<p>tiny</p>')
      await ok('deploy_files', {
        project: 'pair',
        files: [
          { path: 'index.html', content: '<p>pair</p>' },
          { path: 'x.txt', content: 'x' },
        ],
      })
      await ok('delete_file', { project: 'pair', path: 'x.txt' })
      assert.equal((await s.get(`/${alice.username}/pair/x.txt`)).status, 404)
      // the deploy tools: a second deploy, the list as the REST API shows it, rollback, promote
      await ok('deploy_files', { project: 'tiny', files: [{ path: 'index.html', content: '<p>tiny 2</p>' }] })
      assert.equal((await s.get(`/${alice.username}/tiny/`)).text, '<p>tiny 2</p>')
      const deploysOf = async () => (await s.get('/api/folders/tiny/deploys', { key: alice.key })).json
      const list = await ok('list_deploys', { project: 'tiny' })
      const rest = await deploysOf()
      const shape = (d: any) => [d.id, d.is_live, d.is_preview, d.file_count]
      assert.deepEqual(list.structuredContent.deploys.map(shape), rest.deploys.map(shape))
      assert.equal(list.structuredContent.live_deploy_id, rest.live_deploy_id)
      assert.ok(textOf(list).includes(list.structuredContent.open_url), textOf(list))
      const [newest, older] = list.structuredContent.deploys
      assert.equal(newest.is_live, true)
      const back = await ok('rollback', { project: 'tiny' })
      assert.equal(back.structuredContent.live_deploy_id, older.id)
      assert.equal((await deploysOf()).live_deploy_id, older.id)
      assert.equal((await s.get(`/${alice.username}/tiny/`)).text, '<p>tiny</p>')
      const prom = await ok('promote', { project: 'tiny', deploy_id: newest.id })
      assert.equal(prom.structuredContent.live_deploy_id, newest.id)
      assert.equal((await deploysOf()).live_deploy_id, newest.id)
      assert.equal((await s.get(`/${alice.username}/tiny/`)).text, '<p>tiny 2</p>')

      // the user site: tiny answers the root of alice's origin, then no longer
      const root = async () => (await s.get('/', { headers: { host: `${alice.username}.localhost` } })).status
      assert.equal((await ok('set_user_site', { project: 'tiny' })).structuredContent.user_site, true)
      assert.equal(await root(), 200)
      await ok('set_user_site', { project: 'tiny', user_site: false })
      assert.equal(await root(), 404)

      const sites = await ok('list_sites')
      assert.deepEqual(
        sites.structuredContent.pages.map((p: any) => p.file_name),
        (await s.get('/svc_api/files', { key: alice.key })).json.data.files.map((f: any) => f.file_name),
      )

      await ok('kv_set', { key: 'color', value: 'teal', data_type: 'text' })
      assert.equal((await s.get('/svc_api/data/get?key=color', { key: alice.key })).json.data.value, 'teal')
      assert.equal((await ok('kv_get', { key: 'color' })).structuredContent.entry.value, 'teal')
      assert.equal((await ok('kv_incr', { key: 'n', by: 5 })).structuredContent.entry.value, 5)
      assert.equal((await s.get('/svc_api/data/get?key=n', { key: alice.key })).json.data.value, 5)
      assert.deepEqual(
        (await ok('kv_list')).structuredContent.items.map((e: any) => e.key),
        ['color', 'n'],
      )

      const form = (await ok('create_form', { form_name: 'Feedback' })).structuredContent.form
      await s.post(new URL(form.submit_url).pathname, { json: { msg: 'hi' } })
      const subs = (await ok('list_submissions', { form_id: form.id })).structuredContent.submissions
      assert.deepEqual(subs[0].data, { msg: 'hi' })
      assert.deepEqual((await ok('get_submission', { submission_id: subs[0].id })).structuredContent.submission.data, { msg: 'hi' })
      await ok('delete_submission', { submission_id: subs[0].id })
      assert.equal((await s.get(`/svc_api/forms/data/${form.id}`, { key: alice.key })).json.data.total, 0)

      await svc(s, 'grant', alice.username, 'hosted-data')
      await svc(s, 'grant', alice.username, 'image-host')
      const data = (await ok('create_data', { display_name: 'x.json', content: '[1]' })).structuredContent.file
      await ok('update_data', { file_id: data.id, content: '[1,2]' })
      assert.deepEqual((await s.get(new URL(data.public_url).pathname)).json, [1, 2])
      assert.deepEqual(
        (await ok('list_data')).structuredContent.files.map((f: any) => f.id),
        [data.id],
      )
      await ok('update_data', { file_id: data.id, content: '[1,2,3]' })
      assert.deepEqual(
        (await ok('delete_data', { file_id: data.id, version: 1 })).structuredContent.file.versions.map((v: any) => v.version),
        [2, 3],
      )
      await ok('delete_data', { file_id: data.id })
      assert.equal((await s.get(new URL(data.public_url).pathname)).status, 404)
      const img = (await ok('upload_image', { base64: (await makeImage('png')).toString('base64') })).structuredContent.image
      assert.equal((await s.get(new URL(img.public_url).pathname)).status, 200)
      assert.deepEqual(
        (await ok('list_images')).structuredContent.images.map((i: any) => i.public_token),
        [img.public_token],
      )
      await ok('delete_image', { public_token: img.public_token })
      assert.equal((await s.get(new URL(img.public_url).pathname)).status, 404)

      // the clean-up tools
      await ok('kv_delete', { key: 'n' })
      assert.equal((await s.get('/svc_api/data/get?key=n', { key: alice.key })).status, 404)
      assert.equal((await ok('update_form', { form_id: form.id, form_name: 'Guestbook' })).structuredContent.form.form_name, 'Guestbook')
      await ok('delete_form', { form_id: form.id })
      assert.deepEqual((await s.get('/svc_api/forms/list', { key: alice.key })).json.data.forms, [])

      // visitor access: a password on the project, then open again
      assert.equal((await ok('set_access', { name: 'tiny', password: 'let me in' })).structuredContent.access.password, true)
      assert.equal((await s.get(`/${alice.username}/tiny/`)).status, 401)
      assert.deepEqual(
        (await ok('list_access')).structuredContent.access.map((a: any) => a.name),
        ['tiny'],
      )
      await ok('clear_access', { name: 'tiny' })
      assert.equal((await s.get(`/${alice.username}/tiny/`)).status, 200)

      // a custom domain: the TXT record the answer gives, verified, serving, removed
      const added = (await ok('add_domain', { domain: 'stdio.example.test', project: 'tiny' })).structuredContent.domain
      dns.txt.set(added.verification.name, [added.verification.value])
      assert.equal((await ok('verify_domain', { domain: 'stdio.example.test' })).structuredContent.domain.verified, true)
      assert.equal((await s.get('/', { headers: { host: 'stdio.example.test' } })).text, '<p>tiny 2</p>')
      assert.deepEqual(
        (await ok('list_domains')).structuredContent.domains.map((d: any) => d.domain),
        ['stdio.example.test'],
      )
      await ok('remove_domain', { domain: 'stdio.example.test' })
      assert.deepEqual((await s.get('/api/domains', { key: alice.key })).json.data.domains, [])

      await ok('delete_site', { name: 'stdio.html' })
      assert.equal((await s.get(`/${alice.username}/stdio.html`)).status, 404)
      assert.deepEqual([...called].sort(), viaStdio.map((t) => t.name).sort(), 'every tool was called')
    })

    it('a key from `svc key create --read-only` only reads: the API refuses its writes (1440), svc mcp lists the read-only tools', async () => {
      const create = async (...flags: string[]) => {
        const r = await runCli(['key', 'create', alice.username, ...flags], { env: s.env })
        assert.equal(r.code, 0, r.stderr)
        const key = r.stdout.trim().split('\n').pop()!
        assert.match(key, /^[A-Za-z0-9_]{64}$/)
        return key
      }
      const key = await create('--read-only', '--name', 'agent-ro')
      assert.equal((await s.get('/svc_api/me', { key })).json.data.read_only, true)
      const write = await s.post('/svc_api/data/store', { key, json: { key: 'ro_write', value: 1 } })
      assert.equal(write.status, 403, write.text)
      assert.equal(write.json.error_code, 1440)
      assert.equal((await s.get('/svc_api/data/get?key=ro_write', { key: alice.key })).status, 404)
      assert.equal((await s.get('/svc_api/data/list', { key })).status, 200)
      // the same command without the flag makes a key that writes
      const rw = await create('--name', 'agent-rw')
      assert.equal((await s.get('/svc_api/me', { key: rw })).json.data.read_only, false)
      assert.equal((await s.post('/svc_api/data/store', { key: rw, json: { key: 'rw_write', value: 1 } })).status, 200)

      const { client } = await stdioClient(key)
      const { tools } = await client.listTools()
      assert.deepEqual(tools.map((t) => t.name).sort(), [
        'get_site',
        'get_submission',
        'kv_get',
        'kv_list',
        'list_access',
        'list_data',
        'list_deploys',
        'list_domains',
        'list_images',
        'list_sites',
        'list_submissions',
        'read_file',
      ])
    })

    it('a call over the body limit of /mcp comes back as a clear error naming the limit and the archive deploy', async () => {
      // a user of its own: the key's per-minute limit is shared with the other tests
      const bob = await s.user()
      const { client, stderr } = await stdioClient(bob.key)
      const huge = 'x'.repeat(MCP_BODY_LIMIT)
      await assert.rejects(
        client.callTool({ name: 'publish_html', arguments: { name: 'huge', html: huge } }),
        (e: Error) =>
          /error 1443 \(BUSINESS_ERROR, HTTP 413\)/.test(e.message) &&
          e.message.includes(String(MCP_BODY_LIMIT)) &&
          /svc deploy \.\/folder --project NAME/.test(e.message) &&
          /POST \/api\/folders\/\{project\}\/deploys/.test(e.message),
      )
      assert.doesNotMatch(stderr(), /retrying|connection problem/)
      // the server keeps answering, and nothing was stored
      assert.equal((await client.listTools()).tools.length, 36)
      assert.deepEqual((await s.get('/svc_api/files', { key: bob.key })).json.data.files, [])
    })

    it('tells an agent the same instructions as POST /mcp, the read-only note included', async () => {
      const http = await mcpHttpClient(s.url, alice.key)
      clients.push(http)
      const { client } = await stdioClient(alice.key)
      const text = http.getInstructions()
      assert.match(text ?? '', new RegExp(`for ${alice.username}\\. .*deploy_files \\(files of a project; it publishes them`))
      assert.equal(client.getInstructions(), text)
      const reader = (await s.post('/svc_api/api-keys', { cookie: await s.login(alice.username, alice.password), json: { name: 'reader', read_only: true } }))
        .json.data.key
      const roHttp = await mcpHttpClient(s.url, reader)
      clients.push(roHttp)
      const ro = await stdioClient(reader)
      assert.match(roHttp.getInstructions() ?? '', /This key is read-only/)
      assert.equal(ro.client.getInstructions(), roHttp.getInstructions())
    })

    it("a call past the key's rate limit is the tool's 1204 result with retry_after, as over HTTP", async () => {
      const low = { minute: 3, hour: 1000, day: 10000, concurrent: 10 }
      const own = await startServer({ engine, env: { RATE_LIMITS: JSON.stringify({ default: low, authenticated: low, vip: low }) } })
      try {
        const u = await own.user()
        const transport = new StdioClientTransport({
          command: process.execPath,
          args: [SVC_BIN, 'mcp'],
          env: { PATH: process.env.PATH ?? '', HOME: home, SVC_URL: own.url, SVC_API_KEY: u.key, SVC_INSECURE: '1', LANG: 'C' },
          stderr: 'pipe',
        })
        const client = new Client({ name: 'svc-test', version: '1.0.0' })
        await client.connect(transport)
        clients.push(client)
        // starting (its initialize of the service) and listing the tools cost one request
        assert.equal((await client.listTools()).tools.length, 36)
        for (let i = 0; i < 2; i++) assert.ok(!((await client.callTool({ name: 'kv_incr', arguments: { key: 'n' } })) as { isError?: boolean }).isError)
        const r = (await client.callTool({ name: 'kv_incr', arguments: { key: 'n' } })) as { isError?: boolean; structuredContent: any; content: unknown }
        assert.equal(r.isError, true)
        assert.equal(r.structuredContent.error_code, 1204)
        assert.ok(r.structuredContent.retry_after >= 1)
        assert.match(textOf(r), /^Error 1204 \(QUOTA_ERROR\): Rate limit exceeded \(per-minute limit 3\)\. Retry after \d+ seconds/)
      } finally {
        await own.close()
      }
    })

    it("tools/list past the key's rate limit is waited out, as a 429 is, then answered", async () => {
      const low = { minute: 2, hour: 1000, day: 10000, concurrent: 10 }
      const clock = new FakeClock()
      const own = await startServer({ engine, clock, env: { RATE_LIMITS: JSON.stringify({ default: low, authenticated: low, vip: low }) } })
      try {
        const u = await own.user()
        const transport = new StdioClientTransport({
          command: process.execPath,
          args: [SVC_BIN, 'mcp'],
          // the service's retry_after (up to 60 s) is waited out a fiftieth as long
          env: { PATH: process.env.PATH ?? '', HOME: home, SVC_URL: own.url, SVC_API_KEY: u.key, SVC_INSECURE: '1', LANG: 'C', SVC_RETRY_WAIT_SCALE: '0.02' },
          stderr: 'pipe',
        })
        let err = ''
        transport.stderr?.on('data', (c: Buffer) => (err += c.toString()))
        const client = new Client({ name: 'svc-test', version: '1.0.0' })
        await client.connect(transport)
        clients.push(client)
        for (let i = 0; i < 2; i++) assert.ok(!((await client.callTool({ name: 'kv_incr', arguments: { key: 'n' } })) as { isError?: boolean }).isError)
        // the window is spent: svc mcp is refused, says so on stderr, and waits; the minute passes
        const listed = client.listTools()
        while (!/rate limited \(error 1204\): waiting \d+ s before retry 1\//.test(err)) await new Promise((r) => setTimeout(r, 20))
        clock.advance(61_000)
        assert.equal((await listed).tools.length, 36)
      } finally {
        await own.close()
      }
    })

    it("arguments sent as their JSON text come back as the tool's 1106, as over HTTP, never an internal error", async () => {
      const { client } = await stdioClient(alice.key)
      // the SDK client passes what it is given: an agent that serialized its arguments
      const r = (await client.callTool({ name: 'list_sites', arguments: '{}' as never })) as { isError?: boolean; structuredContent: any; content: unknown }
      assert.equal(r.isError, true, textOf(r))
      assert.equal(r.structuredContent.error_code, 1106)
      assert.match(textOf(r), /the arguments: .*expected object, received string/)
    })

    it('a wrong key gives a clear error on stderr and on every request', async () => {
      const { client, stderr } = await stdioClient(`svc_${'z'.repeat(60)}`)
      // the SDK client puts "MCP error -32600: " before the message once; the message carries no second one
      await assert.rejects(
        client.listTools(),
        (e: Error) => /^MCP error -32600: svc at .*error 1002 \(AUTH_ERROR, HTTP 401\)/.test(e.message) && /SVC_API_KEY/.test(e.message),
      )
      // the service's solution and the hint read as two sentences
      await assert.rejects(client.listTools(), /not expired\. Check SVC_API_KEY/)
      await assert.rejects(client.callTool({ name: 'list_sites', arguments: {} }), /1002/)
      assert.match(stderr(), /error 1002/)
    })

    it('answers every request of a client that pipes them and closes its stdin', async () => {
      const requests = [
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } },
        },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
        { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_sites', arguments: {} } },
      ]
      const r = await runCli(['mcp'], {
        env: { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1' },
        input: requests.map((m) => JSON.stringify(m)).join('\n') + '\n',
      })
      assert.equal(r.code, 0, r.stderr)
      const ids = r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { id?: number; error?: unknown }).id)
      assert.deepEqual(ids.sort(), [1, 2, 3], r.stdout + r.stderr)
      assert.doesNotMatch(r.stderr, /hang up/)
    })

    it('without a key it exits 1 and says how to configure one', async () => {
      const r = await runCli(['mcp'], { env: { SVC_URL: s.url, SVC_INSECURE: '1' } })
      assert.equal(r.code, 1)
      assert.match(r.stderr, /SVC_API_KEY/)
      assert.equal(r.stdout, '')
    })
  })
}
