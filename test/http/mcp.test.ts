import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { mcpHttpClient, textOf } from '../support/mcp.js'
import { makeImage, svc } from '../support/images.js'
import { batchUpload, HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import type { McpServices } from '../../src/features/mcp/services.js'
import type { ImageHostState } from '../../src/features/image-host/index.js'
import { createKvService } from '../../src/features/kv/service.js'
import { createHostedData } from '../../src/features/hosted-data/service.js'
import { MCP_BODY_LIMIT } from '../../src/features/mcp/limits.js'
import { KV_LIST_VALUE_BYTES, READ_FILE_PAGE_BYTES } from '../../src/features/mcp/tools.js'
import { NAME_RULE } from '../../src/features/sites/paths.js'

type User = Awaited<ReturnType<TestServer['user']>>

const WRITE_TOOLS = [
  'publish_html',
  'deploy_files',
  'rollback',
  'promote',
  'set_user_site',
  'delete_site',
  'delete_file',
  'kv_set',
  'kv_incr',
  'create_form',
  'create_data',
  'update_data',
  'upload_image',
  'kv_delete',
  'delete_form',
  'delete_image',
  'update_form',
  'delete_data',
  'delete_submission',
  'set_access',
  'clear_access',
  'add_domain',
  'verify_domain',
  'remove_domain',
]
const READ_TOOLS = [
  'list_sites',
  'get_site',
  'read_file',
  'list_deploys',
  'kv_get',
  'kv_list',
  'list_submissions',
  'get_submission',
  'list_data',
  'list_images',
  'list_access',
  'list_domains',
]

for (const engine of ENGINES) {
  describe(`MCP over streamable HTTP [${engine}]`, () => {
    let s: TestServer
    let alice: User
    let client: Client
    const call = async (name: string, args: Record<string, unknown> = {}) => {
      const r = await client.callTool({ name, arguments: args })
      return r as { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent: any }
    }
    const ok = async (name: string, args: Record<string, unknown> = {}) => {
      const r = await call(name, args)
      assert.ok(!r.isError, `${name}: ${textOf(r)}`)
      return r
    }
    const rpc = (key: string | null, body: unknown, headers: Record<string, string> = {}) =>
      s.post('/mcp', {
        ...(key ? { key } : {}),
        json: body,
        headers: { accept: 'application/json, text/event-stream', ...headers },
      })
    const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }

    before(async () => {
      // alice makes most of this file's calls, more than a minute's default allowance
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      alice = await s.user()
      client = await mcpHttpClient(s.url, alice.key)
    })
    after(async () => {
      await client.close()
      await s.close()
    })

    it("answers a tool's unexpected failure as the REST API does: 1501 with the request id, its text only in the log", async () => {
      const own = await startServer({ engine, captureLogs: true })
      try {
        const bob = await own.user()
        const agent = await mcpHttpClient(own.url, bob.key)
        const kv = (own.app.featureState('mcp') as McpServices).kv
        const get = kv.get.bind(kv)
        // a failure no refusal describes (a database's own error, naming its tables and files)
        kv.get = async () => {
          throw new Error('relation "kv_secret_table" does not exist (/srv/svc/data/svc.db)')
        }
        try {
          const r = (await agent.callTool({ name: 'kv_get', arguments: { key: 'x' } })) as Awaited<ReturnType<typeof call>>
          assert.equal(r.isError, true)
          assert.match(textOf(r), /^Error 1501 \(SERVER_ERROR\): Internal server error\. Retry later; if it persists, report request id \S+/)
          assert.doesNotMatch(JSON.stringify(r), /kv_secret_table|svc\.db/)
          assert.equal(r.structuredContent.error_code, 1501)
          const id = /report request id (\S+)/.exec(textOf(r))![1]
          const line = own.logs.find((l) => l.msg === 'mcp: unexpected error in a tool')
          assert.ok(line, JSON.stringify(own.logs))
          assert.match(JSON.stringify(line), /kv_secret_table/)
          assert.equal((line as Record<string, unknown>).reqId, id)
        } finally {
          kv.get = get
          await agent.close()
        }
        // the next call is answered as usual
        const fine = await mcpHttpClient(own.url, bob.key)
        try {
          const r = (await fine.callTool({ name: 'kv_get', arguments: { key: 'x' } })) as Awaited<ReturnType<typeof call>>
          assert.equal(r.structuredContent.error_code, 1604, textOf(r))
        } finally {
          await fine.close()
        }
      } finally {
        await own.close()
      }
    })

    it('lists every tool with a description, an input schema and read-only/destructive hints', async () => {
      const { tools } = await client.listTools()
      assert.deepEqual(tools.map((t) => t.name).sort(), [...WRITE_TOOLS, ...READ_TOOLS].sort())
      for (const t of tools) {
        assert.ok((t.description ?? '').length > 20, t.name)
        assert.equal(t.inputSchema.type, 'object', t.name)
        assert.equal(t.annotations?.readOnlyHint, READ_TOOLS.includes(t.name), t.name)
        assert.equal(typeof t.annotations?.destructiveHint, 'boolean', t.name)
      }
      assert.equal(tools.find((t) => t.name === 'delete_site')?.annotations?.destructiveHint, true)
      // a tool that takes content says how much, in bytes, where a model reads it
      for (const name of ['publish_html', 'deploy_files', 'kv_set', 'create_data', 'update_data', 'upload_image']) {
        const t = tools.find((x) => x.name === name)
        assert.match(`${t?.description} ${JSON.stringify(t?.inputSchema)}`, /4194304 bytes/, name)
      }
      assert.match(tools.find((t) => t.name === 'kv_set')?.description ?? '', /max_entry_bytes/)
      const rb = tools.find((t) => t.name === 'rollback')?.annotations
      assert.deepEqual([rb?.destructiveHint, rb?.idempotentHint], [false, true])
      assert.deepEqual(tools.find((t) => t.name === 'promote')?.inputSchema.required, ['project', 'deploy_id'])
      assert.deepEqual((tools.find((t) => t.name === 'deploy_files')?.inputSchema.required as string[]).sort(), ['files', 'project'])
      // each tool an entitlement gates says so, and an id another tool takes says where it comes from
      const desc = (name: string) => tools.find((t) => t.name === name)?.description ?? ''
      for (const name of ['create_data', 'update_data', 'delete_data']) assert.match(desc(name), /hosted-data entitlement/, name)
      assert.match(desc('upload_image'), /image-host entitlement/)
      assert.match(desc('create_form'), /id, which list_submissions takes as form_id/)
      assert.match(desc('update_data'), /create_data's file\.id/)
      // every argument says what it is, and what an omitted one means where that differs from create to update
      for (const t of tools)
        for (const [arg, schema] of Object.entries((t.inputSchema.properties ?? {}) as Record<string, { description?: string }>))
          assert.ok((schema.description ?? '').length > 5, `${t.name}.${arg} has no description`)
      // every list takes the REST lists' pages, and says so
      for (const t of tools) {
        const page = t.inputSchema.properties?.page as { maximum?: number } | undefined
        if (page) assert.equal(page.maximum, 999_999_999, t.name)
      }
      const kvSetArgs = tools.find((t) => t.name === 'kv_set')?.inputSchema.properties as Record<string, { description: string }>
      for (const arg of ['data_type', 'is_public', 'ttl']) assert.match(kvSetArgs[arg].description, /update keeps/, arg)
      // a counter a page's visitors would raise needs a key the page cannot carry: the tool says
      // so, and names the public counter such a page adds to without one (decision 303)
      assert.match(desc('kv_incr'), /a hosted page must not carry/)
      assert.match(desc('kv_incr'), /public counter \(public_incr: true\)/)
      assert.match(desc('delete_image'), /upload_image's image\.public_token/)
      assert.match(desc('delete_form'), /create_form's form\.id/)
    })

    it("declares each tool's output schema, which its results (refusals included) meet, as the SDK client checks", async () => {
      // a user of its own: alice's requests are counted against her key's rate limits
      const hank = await s.user()
      const own = await mcpHttpClient(s.url, hank.key)
      try {
        const { tools } = await own.listTools()
        const schema = (name: string) => tools.find((t) => t.name === name)?.outputSchema as any
        for (const t of tools) {
          const out = t.outputSchema as any
          assert.equal(out?.type, 'object', t.name)
          assert.deepEqual(out.required, ['success'], t.name)
          // a refusal's fields are named once, by success, not declared again by every tool (the schema is open)
          assert.match(out.properties.success.description, /refusal \(isError\), which has error_code, error_type, message and solution/, t.name)
          assert.equal(out.additionalProperties, undefined, t.name)
        }
        // the ids one tool gives and another takes are named where an agent reads them
        assert.match(JSON.stringify(schema('create_form')), /What list_submissions and delete_form take as form_id/)
        assert.match(JSON.stringify(schema('list_submissions')), /What delete_submission takes as submission_id/)
        assert.match(JSON.stringify(schema('list_deploys')), /What rollback and promote take as deploy_id/)
        assert.match(JSON.stringify(schema('upload_image')), /What delete_image takes/)
        // the schemas have teeth: a result of the wrong shape fails them
        const check = (name: string, v: unknown) => new AjvJsonSchemaValidator().getValidator(schema(name))(v).valid
        assert.equal(check('kv_get', { success: true, entry: 5 }), false)
        assert.equal(check('create_form', { success: true, form: { id: 1 } }), false)
        assert.equal(check('list_sites', { success: true, pages: 'none' }), false)
        assert.equal(check('kv_get', { success: false, error_code: 1604, error_type: 'DATA_ERROR', message: 'm', solution: 's' }), true)
        // the SDK client checks every structured result against the schema: these went through it
        const set = (await own.callTool({ name: 'kv_set', arguments: { key: 'shape', value: { a: 1 } } })) as Awaited<ReturnType<typeof call>>
        assert.ok(!set.isError, textOf(set))
        assert.equal(check('kv_set', set.structuredContent), true)
        const missing = (await own.callTool({ name: 'kv_get', arguments: { key: 'no-such-shape' } })) as Awaited<ReturnType<typeof call>>
        assert.equal(missing.isError, true)
        assert.equal(check('kv_get', missing.structuredContent), true)
      } finally {
        await own.close()
      }
    })

    it('publish_html stores the page the REST API and the public host then show', async () => {
      const html = '<!doctype html><title>Hi</title><h1>Hello from an agent</h1>'
      const r = await ok('publish_html', { name: 'agent-page', html })
      assert.equal(r.structuredContent.file_name, 'agent-page.html')
      assert.ok(textOf(r).includes(r.structuredContent.open_url), textOf(r))
      const list = await s.get('/svc_api/files', { key: alice.key })
      assert.ok(
        list.json.data.files.some((f: any) => f.file_name === 'agent-page.html' && f.file_size === Buffer.byteLength(html)),
        list.text,
      )
      const page = await s.get(`/${alice.username}/agent-page.html`)
      assert.equal(page.status, 200)
      assert.equal(page.text, html)
    })

    it('deploy_files uploads and publishes a small site; get_site and list_sites match the REST API', async () => {
      const r = await ok('deploy_files', {
        project: 'agent-site',
        files: [
          { path: 'index.html', content: '<!doctype html><link rel=stylesheet href="css/a.css"><p>site</p>' },
          { path: 'css/a.css', content: Buffer.from('p{color:red}').toString('base64'), encoding: 'base64' },
        ],
      })
      assert.equal(r.structuredContent.uploaded_count, 2)
      assert.equal(r.structuredContent.is_published, true)
      const files = await s.get('/api/folders/agent-site/files', { key: alice.key })
      assert.deepEqual(files.json.files.map((f: any) => f.path).sort(), ['css/a.css', 'index.html'])
      assert.equal((await s.get(`/${alice.username}/agent-site/css/a.css`)).text, 'p{color:red}')

      const site = await ok('get_site', { name: 'agent-site' })
      assert.equal(site.structuredContent.type, 'project')
      assert.equal(site.structuredContent.is_published, true)
      assert.deepEqual(site.structuredContent.files.map((f: any) => f.path).sort(), ['css/a.css', 'index.html'])

      const all = await ok('list_sites')
      const rest = await s.get('/api/folders', { key: alice.key })
      assert.deepEqual(
        all.structuredContent.projects.map((p: any) => [p.name, p.file_count, p.is_published]),
        rest.json.folders.map((p: any) => [p.name, p.file_count, p.is_published]),
      )
      assert.ok(all.structuredContent.pages.some((p: any) => p.file_name === 'agent-page.html'))
      // the project's own origin, as the REST API gives it, in each answer that names the project
      const root = rest.json.folders.find((p: any) => p.name === 'agent-site').origin_url
      assert.match(root, /^http:\/\/agent-site\.[^.]+\.localhost:\d+\/$/)
      assert.equal(r.structuredContent.origin_url, root)
      assert.ok(r.content[0].text.includes(root), r.content[0].text)
      assert.equal(site.structuredContent.origin_url, root)
      assert.equal(all.structuredContent.projects.find((p: any) => p.name === 'agent-site').origin_url, root)
    })

    it('deploy_files on a live project unpublished while the call runs publishes it, as if the unpublish came first', async () => {
      // a user of its own: the other tests count alice's requests against her rate limits
      const carl = await s.user()
      const own = await mcpHttpClient(s.url, carl.key)
      const ok = async (name: string, args: Record<string, unknown>) => {
        const r = (await own.callTool({ name, arguments: args })) as Awaited<ReturnType<typeof call>>
        assert.ok(!r.isError, `${name}: ${textOf(r)}`)
        return r
      }
      await ok('deploy_files', { project: 'paused', files: [{ path: 'index.html', content: '<p>one</p>' }] })
      // the project is unpublished once the call has read it as live, while its files are stored
      const blobs = s.deps.blobs
      const put = blobs.put.bind(blobs)
      const pausedMidCall = async (content: string) => {
        blobs.put = async (...args) => {
          blobs.put = put
          const off = await s.post('/api/folders/paused/unpublish', { key: carl.key })
          assert.equal(off.status, 200, off.text)
          return put(...args)
        }
        try {
          return (await ok('deploy_files', { project: 'paused', files: [{ path: 'index.html', content }] })).structuredContent
        } finally {
          blobs.put = put
        }
      }
      // a changed file, then the same file again: either way the call leaves the project live
      for (const [content, unchanged] of [
        ['<p>two</p>', false],
        ['<p>two</p>', true],
      ] as const) {
        const r = await pausedMidCall(content)
        const live = (await s.get('/api/folders/paused/deploys', { key: carl.key })).json.live_deploy_id
        assert.notEqual(live, null, content)
        assert.equal(r.deploy_id, live)
        assert.equal(r.is_published, true)
        assert.equal(r.changed_count === 0, unchanged)
        assert.equal((await s.get(`/${carl.username}/paused/`)).text, content)
      }
      await own.close()
    })

    it('deploy_files refuses a path that is both a file and a folder, and writes none of the call', async () => {
      await ok('deploy_files', { project: 'clash', files: [{ path: 'index.html', content: '<p>v1</p>' }] })
      const r = await call('deploy_files', {
        project: 'clash',
        files: [
          { path: 'index.html', content: '<p>v2</p>' },
          { path: 'index.html/x.css', content: 'p{}' },
        ],
      })
      assert.equal(r.isError, true)
      assert.match(textOf(r), /index\.html is a file of this project, so it cannot also be a folder/)
      const files = await s.get('/api/folders/clash/files', { key: alice.key })
      assert.deepEqual(
        files.json.files.map((f: any) => f.path),
        ['index.html'],
      )
      assert.equal((await s.get(`/${alice.username}/clash/`)).text, '<p>v1</p>')
    })

    it('deploy_files of a site built for / opens it at the root of its own origin, live and as a preview', async () => {
      // a user of its own: the other tests count alice's requests against her rate limits
      const own = await mcpHttpClient(s.url, (await s.user()).key)
      const ok = async (name: string, args: Record<string, unknown>) => {
        const r = (await own.callTool({ name, arguments: args })) as Awaited<ReturnType<typeof call>>
        assert.ok(!r.isError, `${name}: ${textOf(r)}`)
        return r
      }
      // Vite's default base: the page loads /assets/..., which only the root of an origin has
      const files = [
        { path: 'index.html', content: '<!doctype html><script type="module" src="/assets/app.js"></script><p>root</p>' },
        { path: 'assets/app.js', content: 'document.title = "root"' },
      ]
      // a relative site (the test above) opens under its user's origin
      const relative = await ok('deploy_files', { project: 'rel-site', files: [{ path: 'index.html', content: '<script src="app.js"></script>' }] })
      assert.equal(relative.structuredContent.open_url, relative.structuredContent.site_url)
      // relative pages with a 404 page loading from / (SvelteKit's fallback): the project's origin
      const fallback = await ok('deploy_files', {
        project: 'kit-site',
        files: [
          { path: 'index.html', content: '<script type="module" src="./app.js"></script>' },
          { path: '404.html', content: '<script type="module" src="/app.js"></script>' },
          { path: 'app.js', content: '' },
        ],
      })
      assert.equal(fallback.structuredContent.open_url, fallback.structuredContent.origin_url)
      const live = await ok('deploy_files', { project: 'root-site', files })
      assert.equal(live.structuredContent.open_url, live.structuredContent.origin_url)
      assert.ok(textOf(live).includes(`published: ${live.structuredContent.origin_url}`), textOf(live))
      assert.ok(textOf(live).includes(live.structuredContent.site_url), textOf(live))
      const host = new URL(live.structuredContent.open_url).hostname
      const js = await request(`${s.httpUrl}/assets/app.js`, { headers: { host } })
      assert.equal(await js.body.text(), 'document.title = "root"', 'what the page asks for is there')
      const pre = await ok('deploy_files', { project: 'root-site', publish: false, files })
      assert.equal(pre.structuredContent.open_url, pre.structuredContent.preview_origin_url)
      assert.ok(textOf(pre).includes(`not live): ${pre.structuredContent.preview_origin_url}`), textOf(pre))
      await own.close()
    })

    it("set_user_site makes a project the user site at the root of the user's origin, and stops it", async () => {
      // a user of its own: the calls stay out of alice's rate limits, which another test counts
      const dora = await s.user()
      const own = await mcpHttpClient(s.url, dora.key)
      const use = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as Awaited<ReturnType<typeof call>>
      try {
        assert.ok(!(await use('deploy_files', { project: 'homepage', files: [{ path: 'index.html', content: '<p>mcp home</p>' }] })).isError)
        const root = () => s.get('/', { headers: { host: `${dora.username}.localhost` } })
        assert.equal((await root()).status, 404)
        const on = await use('set_user_site', { project: 'homepage' })
        assert.ok(!on.isError, textOf(on))
        assert.equal(on.structuredContent.user_site, true)
        assert.equal(on.structuredContent.user_site_url, `http://${dora.username}.localhost:${new URL(s.httpUrl).port}/`)
        assert.ok(textOf(on).includes(on.structuredContent.user_site_url), textOf(on))
        assert.equal((await root()).text, '<p>mcp home</p>')
        const off = await use('set_user_site', { project: 'homepage', user_site: false })
        assert.equal(off.structuredContent.user_site, false)
        assert.equal((await root()).status, 404)
        const none = await use('set_user_site', { project: 'nope' })
        assert.equal(none.isError, true)
        assert.match(textOf(none), /1312/)
      } finally {
        await own.close()
      }
    })

    it('list_deploys, rollback and promote move the live deploy; deploy_files publish false makes a preview', async () => {
      const live = `/${alice.username}/versions/`
      await ok('deploy_files', { project: 'versions', files: [{ path: 'index.html', content: '<p>v1</p>' }] })
      await ok('deploy_files', { project: 'versions', files: [{ path: 'index.html', content: '<p>v2</p>' }] })
      assert.equal((await s.get(live)).text, '<p>v2</p>')

      const list = await ok('list_deploys', { project: 'versions' })
      const rest = await s.get('/api/folders/versions/deploys', { key: alice.key })
      assert.equal(rest.status, 200, rest.text)
      const shape = (d: any) => [d.id, d.is_live, d.is_preview, d.file_count]
      assert.deepEqual(list.structuredContent.deploys.map(shape), rest.json.deploys.map(shape))
      assert.ok(list.structuredContent.deploys.length >= 2, textOf(list))
      assert.equal(list.structuredContent.live_deploy_id, rest.json.live_deploy_id)
      assert.equal(list.structuredContent.deploys[0].is_live, true)
      assert.ok(textOf(list).includes(list.structuredContent.open_url), textOf(list))
      // each deploy's own URL shows that deploy's content
      const newest = list.structuredContent.deploys[0]
      assert.equal((await s.get(new URL(newest.preview_url).pathname)).text, '<p>v2</p>')

      const back = await ok('rollback', { project: 'versions' })
      assert.ok(textOf(back).includes(back.structuredContent.open_url), textOf(back))
      assert.notEqual(back.structuredContent.live_deploy_id, newest.id)
      assert.equal((await s.get(live)).text, '<p>v1</p>')
      assert.equal((await s.get('/api/folders/versions/deploys', { key: alice.key })).json.live_deploy_id, back.structuredContent.live_deploy_id)

      const pre = await ok('deploy_files', { project: 'versions', publish: false, files: [{ path: 'index.html', content: '<p>v3</p>' }] })
      assert.equal(pre.structuredContent.is_published, false)
      assert.equal(pre.structuredContent.deploy.is_preview, true)
      assert.ok(textOf(pre).includes(pre.structuredContent.open_url), textOf(pre))
      const preview = await s.get(new URL(pre.structuredContent.preview_url).pathname)
      assert.equal(preview.text, '<p>v3</p>')
      assert.equal(preview.header('x-robots-tag'), 'noindex')
      // and at the root of its own origin, named in the answer and its summary
      const root = pre.structuredContent.preview_origin_url as string
      assert.equal(new URL(root).hostname, `${pre.structuredContent.deploy.id}--versions.${alice.username}.localhost`)
      assert.ok(textOf(pre).includes(root), textOf(pre))
      const atRoot = await request(`${s.httpUrl}/`, { headers: { host: new URL(root).hostname } })
      assert.equal(await atRoot.body.text(), '<p>v3</p>')
      assert.equal((await s.get(live)).text, '<p>v1</p>', 'a preview does not go live')

      const prom = await ok('promote', { project: 'versions', deploy_id: pre.structuredContent.deploy.id })
      assert.equal(prom.structuredContent.live_deploy_id, pre.structuredContent.deploy.id)
      assert.equal((await s.get(live)).text, '<p>v3</p>')
      const after = await ok('list_deploys', { project: 'versions' })
      assert.equal(after.structuredContent.deploys.find((d: any) => d.is_live).id, pre.structuredContent.deploy.id)

      const unknown = await call('promote', { project: 'versions', deploy_id: 'zzzzzzzzzzzz' })
      assert.equal(unknown.isError, true)
      assert.match(textOf(unknown), /1331/)
      assert.equal((await s.get(live)).text, '<p>v3</p>')
      const noIndex = await call('deploy_files', { project: 'versions', publish: false, files: [{ path: 'a.css', content: 'p{}' }] })
      assert.equal(noIndex.isError, true)
      assert.match(textOf(noIndex), /1313/)
      const nope = await call('list_deploys', { project: 'no-such-project' })
      assert.equal(nope.isError, true)
    })

    it('deploy_files publishes a project that went offline during the call, never "unchanged" with no live deploy', async () => {
      const carol = await s.user()
      const own = await mcpHttpClient(s.url, carol.key)
      const folders = (s.app.featureState('mcp') as McpServices).folders
      const projects = folders.projects.bind(folders)
      try {
        const deploy = async (v: string) => {
          const r = (await own.callTool({
            name: 'deploy_files',
            arguments: { project: 'gone', files: [{ path: 'index.html', content: `<p>${v}</p>` }] },
          })) as Awaited<ReturnType<typeof call>>
          assert.ok(!r.isError, textOf(r))
          return r
        }
        await deploy('v1')
        // the project goes offline between the call's look at it (live) and its batch
        folders.projects = async (...args: Parameters<typeof projects>) => {
          folders.projects = projects
          const list = await projects(...args)
          assert.equal((await s.post('/api/folders/gone/unpublish', { key: carol.key })).status, 200)
          return list
        }
        const r = await deploy('v2')
        assert.equal(r.structuredContent.unchanged, false, textOf(r))
        assert.match(r.structuredContent.deploy_id, /^[a-z0-9]{12}$/)
        assert.equal((await s.get(`/${carol.username}/gone/`)).text, '<p>v2</p>')
        assert.equal((await s.get('/api/folders/gone/deploys', { key: carol.key })).json.live_deploy_id, r.structuredContent.deploy_id)
      } finally {
        folders.projects = projects
        await own.close()
      }
    })

    it('each deploy_files call is one whole deploy named in its answer: rollback undoes the last call, a repeat makes none', async () => {
      // a user of its own: the other tests count alice's requests against her rate limits
      const bob = await s.user()
      const own = await mcpHttpClient(s.url, bob.key)
      try {
        const run = async (name: string, args: Record<string, unknown>) => {
          const r = (await own.callTool({ name, arguments: args })) as Awaited<ReturnType<typeof call>>
          assert.ok(!r.isError, `${name}: ${textOf(r)}`)
          return r
        }
        const deploy = (v: string, extra: Array<{ path: string; content: string }> = []) =>
          run('deploy_files', { project: 'steps', files: [{ path: 'index.html', content: `<p>${v}</p>` }, ...extra] })
        const live = async () => (await s.get(`/${bob.username}/steps/`)).text
        const ids: string[] = []
        for (const v of ['v1', 'v2', 'v3']) {
          const r = await deploy(v)
          ids.push(r.structuredContent.deploy_id)
          assert.ok(textOf(r).includes(`as deploy ${r.structuredContent.deploy_id}`), textOf(r))
        }
        const list = await run('list_deploys', { project: 'steps' })
        assert.deepEqual(
          list.structuredContent.deploys.map((d: any) => [d.id, d.is_partial, d.is_live]),
          [
            [ids[2], false, true],
            [ids[1], false, false],
            [ids[0], false, false],
          ],
        )
        // the plain rollback goes back one call, to v2, not past every later call to the first
        const back = await run('rollback', { project: 'steps' })
        assert.equal(back.structuredContent.live_deploy_id, ids[1])
        assert.equal(await live(), '<p>v2</p>')

        // the same call again changes no file: no new deploy, the live one named
        await run('promote', { project: 'steps', deploy_id: ids[2] })
        const again = await deploy('v3')
        assert.equal(again.structuredContent.unchanged, true)
        assert.equal(again.structuredContent.deploy_id, ids[2])
        assert.match(textOf(again), /No file of steps changed/)
        assert.equal((await run('list_deploys', { project: 'steps' })).structuredContent.deploys.length, 3)

        // a call that changes _redirects is one deploy too, its rules live at once
        const rules = await deploy('v4', [{ path: '_redirects', content: '/old /index.html 301' }])
        const after = await run('list_deploys', { project: 'steps' })
        assert.equal(after.structuredContent.deploys.length, 4)
        assert.equal(after.structuredContent.live_deploy_id, rules.structuredContent.deploy_id)
        assert.equal(await live(), '<p>v4</p>')
        assert.equal((await s.get(`/${bob.username}/steps/old`)).status, 301)
      } finally {
        await own.close()
      }
    })

    it('delete_site removes a page and takes a project offline', async () => {
      await ok('publish_html', { name: 'doomed', html: '<p>bye</p>' })
      await ok('delete_site', { name: 'doomed.html' })
      const list = await s.get('/svc_api/files', { key: alice.key })
      assert.ok(!list.json.data.files.some((f: any) => f.file_name === 'doomed.html'))
      assert.equal((await s.get(`/${alice.username}/doomed.html`)).status, 404)
    })

    it('delete_site finds a page by the name it was published with, ".html" added as publish_html adds it', async () => {
      // a user of its own: the other tests count alice's requests against her rate limits
      const fay = await s.user()
      const own = await mcpHttpClient(s.url, fay.key)
      try {
        const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as Awaited<ReturnType<typeof call>>
        await run('publish_html', { name: 'doomed', html: '<p>bye</p>' })
        const gone = await run('delete_site', { name: 'doomed' })
        assert.notEqual(gone.isError, true, textOf(gone))
        assert.equal(gone.structuredContent.name, 'doomed.html')
        assert.equal((await s.get(`/${fay.username}/doomed.html`)).status, 404)
        // a project of that very name is the one meant
        await run('deploy_files', { project: 'doomed', files: [{ path: 'index.html', content: '<p>p</p>' }] })
        await run('publish_html', { name: 'doomed', html: '<p>page</p>' })
        assert.equal((await run('delete_site', { name: 'doomed' })).structuredContent.type, 'project')
        assert.equal((await s.get(`/${fay.username}/doomed.html`)).text, '<p>page</p>')
      } finally {
        await own.close()
      }
    })

    it('delete_site deletes a project whole: its files, its kept deploys and their preview URLs', async () => {
      // its own user: the file's main key is near its per-minute limit by the end
      const carol = await s.user()
      const c = await mcpHttpClient(s.url, carol.key)
      try {
        const ok = async (name: string, args: Record<string, unknown>) => {
          const r = (await c.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: any; content: Array<{ text: string }> }
          assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`)
          return r
        }
        await ok('deploy_files', { project: 'gone', files: [{ path: 'index.html', content: '<p>v1</p>' }] })
        await ok('deploy_files', { project: 'gone', files: [{ path: 'index.html', content: '<p>v2</p>' }] })
        const older = (await ok('list_deploys', { project: 'gone' })).structuredContent.deploys.find((d: any) => !d.is_live)
        const kept = `/${carol.username}/gone@${older.id}/`
        assert.equal((await s.get(kept)).text, '<p>v1</p>')
        assert.equal((await s.get(`/${carol.username}/gone/`)).text, '<p>v2</p>')

        const del = await ok('delete_site', { name: 'gone' })
        assert.equal(del.structuredContent.deleted_files, 1)
        assert.equal((await s.get(`/${carol.username}/gone/`)).status, 404)
        assert.equal((await s.get(kept)).status, 404, 'a kept deploy of a deleted project answers no more')
        const projects = await s.get('/api/folders', { key: carol.key })
        assert.equal(projects.status, 200, projects.text)
        assert.ok(!JSON.stringify(projects.json).includes('"gone"'), projects.text)
        const deploys = await c.callTool({ name: 'list_deploys', arguments: { project: 'gone' } })
        assert.equal(deploys.isError, true)
      } finally {
        await c.close()
      }
    })

    it('read_file reads a file of a project back; delete_file takes one file off the live site', async () => {
      // its own user: the file's main key is near its per-minute limit by the end
      const dave = await s.user()
      const c = await mcpHttpClient(s.url, dave.key)
      try {
        const run = async (name: string, args: Record<string, unknown>) =>
          (await c.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: any; content: Array<{ text: string }> }
        const ok = async (name: string, args: Record<string, unknown>) => {
          const r = await run(name, args)
          assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`)
          return r
        }
        await ok('deploy_files', {
          project: 'rw',
          files: [
            { path: 'index.html', content: '<p>héllo</p>' },
            { path: 'css/a.css', content: 'p{color:red}' },
            { path: 'bin.dat', content: Buffer.from([0, 1, 2, 255]).toString('base64'), encoding: 'base64' },
          ],
        })
        const page = await ok('read_file', { project: 'rw', path: 'index.html' })
        assert.equal(page.structuredContent.content, '<p>héllo</p>')
        assert.equal(page.structuredContent.size, Buffer.byteLength('<p>héllo</p>'))
        assert.match(page.content[0].text, /<p>héllo<\/p>/)
        const bin = await ok('read_file', { project: 'rw', path: 'bin.dat' })
        assert.equal(bin.structuredContent.content, null, 'bytes that are not UTF-8 text are not shown')
        assert.equal(bin.structuredContent.size, 4)
        for (const [args, code] of [
          // the next step named with the tools' own words, the project's name in it
          [{ project: 'rw', path: 'nope.html' }, /1301 .*File not found\. get_site \{name: "rw"\} lists the project's files$/],
          [{ project: 'rw', path: '../x' }, /1110/],
          [{ project: 'no-such', path: 'index.html' }, /13\d\d .*does not belong to the caller\. list_sites shows your projects/],
        ] as const) {
          const r = await run('read_file', args)
          assert.equal(r.isError, true, JSON.stringify(args))
          assert.match(r.content[0].text, code, JSON.stringify(args))
        }

        assert.equal((await s.get(`/${dave.username}/rw/css/a.css`)).status, 200)
        const del = await ok('delete_file', { project: 'rw', path: 'css/a.css' })
        assert.deepEqual(del.structuredContent, { success: true, project: 'rw', path: 'css/a.css' })
        assert.equal((await s.get(`/${dave.username}/rw/css/a.css`)).status, 404, 'gone from the live site at once')
        assert.equal((await s.get(`/${dave.username}/rw/`)).text, '<p>héllo</p>')
        const again = await run('delete_file', { project: 'rw', path: 'css/a.css' })
        assert.equal(again.isError, true)
        assert.match(again.content[0].text, /1301 .*get_site \{name: "rw"\} lists the project's files$/)
        const files = (await ok('get_site', { name: 'rw' })).structuredContent.files.map((f: any) => f.path).sort()
        assert.deepEqual(files, ['bin.dat', 'index.html'])
        // as the REST delete does: the root's index.html too, leaving the site without a home page
        await ok('delete_file', { project: 'rw', path: 'index.html' })
        assert.equal((await s.get(`/${dave.username}/rw/`)).status, 404)
        // the deletes made one partial deploy: rollback brings back the last whole one, the publish (decision 159)
        await ok('rollback', { project: 'rw' })
        assert.equal((await s.get(`/${dave.username}/rw/`)).text, '<p>héllo</p>')
        assert.equal((await s.get(`/${dave.username}/rw/css/a.css`)).text, 'p{color:red}')
      } finally {
        await c.close()
      }
    })

    it('read_file answers a large text file a page at a time, cut at characters, naming the next call', async () => {
      const ida = await s.user()
      const own = await mcpHttpClient(s.url, ida.key)
      const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      try {
        // 80,001 bytes of two-byte characters after one ASCII one: every page's cut falls inside a character
        const text = 'a' + 'é'.repeat(40_000)
        const dep = await run('deploy_files', {
          project: 'paged',
          files: [
            { path: 'index.html', content: '<p>small</p>' },
            { path: 'app.js', content: text },
          ],
        })
        assert.ok(!dep.isError, textOf(dep))
        const small = await run('read_file', { project: 'paged', path: 'index.html' })
        assert.equal(small.structuredContent.content, '<p>small</p>')
        assert.equal(small.structuredContent.total_pages, 1)
        assert.match(textOf(small), /^paged\/index\.html \(12 bytes; content below\)\n<p>small<\/p>$/)

        const pages: string[] = []
        for (let page = 1; page <= 3; page++) {
          const r = await run('read_file', { project: 'paged', path: 'app.js', ...(page > 1 ? { page } : {}) })
          assert.ok(!r.isError, textOf(r))
          assert.equal(r.structuredContent.size, 80_001)
          assert.equal(r.structuredContent.page, page)
          assert.equal(r.structuredContent.total_pages, 3)
          const chunk = r.structuredContent.content as string
          assert.ok(!chunk.includes('\ufffd'), 'no character is cut in two')
          assert.ok(Buffer.byteLength(chunk) <= READ_FILE_PAGE_BYTES + 1, `page ${page}: ${Buffer.byteLength(chunk)} bytes`)
          // the answer, summary and structured content together, stays near two pages, never the whole file twice
          assert.ok(JSON.stringify(r).length < 2 * READ_FILE_PAGE_BYTES + 4096, `${JSON.stringify(r).length} bytes`)
          if (page < 3) assert.ok(textOf(r).includes(`read_file {project: "paged", path: "app.js", page: ${page + 1}} reads the next`), textOf(r))
          else assert.doesNotMatch(textOf(r), /reads the next/)
          pages.push(chunk)
        }
        assert.equal(pages.join(''), text)
        const past = await run('read_file', { project: 'paged', path: 'app.js', page: 4 })
        assert.equal(past.structuredContent.content, '')
        assert.match(textOf(past), /no content on page 4 of 3/)
      } finally {
        await own.close()
      }
    })

    it('kv_set with expected_version is a compare-and-swap, as `version` is on REST', async () => {
      // its own user: the file's main key is near its per-minute limit by the end
      const bob = await s.user()
      const c = await mcpHttpClient(s.url, bob.key)
      try {
        const set = async (args: Record<string, unknown>) =>
          (await c.callTool({ name: 'kv_set', arguments: args })) as {
            isError?: boolean
            content: Array<{ type: string; text: string }>
            structuredContent: any
          }
        const first = await set({ key: 'cas', value: 'first' })
        assert.equal(first.structuredContent.entry.version, 1)
        const stale = await set({ key: 'cas', value: 'second', expected_version: 99 })
        assert.equal(stale.isError, true)
        assert.match(textOf(stale), /1409/)
        const absent = await set({ key: 'never-made', value: 1, expected_version: 3 })
        assert.equal(absent.isError, true)
        assert.equal((await s.get('/svc_api/data/get?key=never-made', { key: bob.key })).status, 404)
        assert.equal((await s.get('/svc_api/data/get?key=cas', { key: bob.key })).json.data.value, 'first')
        assert.equal((await set({ key: 'cas', value: 'second', expected_version: 1 })).structuredContent.entry.version, 2)
        assert.equal((await set({ key: 'fresh', value: 1, expected_version: 0 })).structuredContent.created, true)
      } finally {
        await c.close()
      }
    })

    it('kv tools read and write the same entries as the REST API', async () => {
      const set = await ok('kv_set', { key: 'greeting', value: { hello: 'world' }, is_public: true })
      assert.equal(set.structuredContent.created, true)
      assert.ok(textOf(set).includes(set.structuredContent.public_url))
      const pub = await s.get(new URL(set.structuredContent.public_url).pathname)
      assert.deepEqual(pub.json.data.value, { hello: 'world' })
      const rest = await s.get('/svc_api/data/get?key=greeting', { key: alice.key })
      assert.deepEqual(rest.json.data.value, { hello: 'world' })

      await s.post('/svc_api/data/store', { key: alice.key, json: { key: 'visits', value: 41, data_type: 'number' } })
      const incr = await ok('kv_incr', { key: 'visits' })
      assert.equal(incr.structuredContent.entry.value, 42)
      assert.equal((await s.get('/svc_api/data/get?key=visits', { key: alice.key })).json.data.value, 42)
      assert.equal(incr.structuredContent.public_incr_url, undefined)
      // a public counter: the answer names where a page adds 1 without a key
      const counter = await ok('kv_incr', { key: 'visits', by: 0, public_incr: true })
      assert.equal(counter.structuredContent.entry.public_incr, true)
      const visitor = await s.post(new URL(counter.structuredContent.public_incr_url).pathname)
      assert.equal(visitor.json.data.value, 43)
      assert.equal((await ok('kv_incr', { key: 'visits', by: -1, public_incr: false })).structuredContent.entry.value, 42)

      const got = await ok('kv_get', { key: 'visits' })
      assert.equal(got.structuredContent.entry.value, 42)
      const list = await ok('kv_list', { per_page: 100 })
      const restList = await s.get('/svc_api/data/list?per_page=100', { key: alice.key })
      assert.deepEqual(
        list.structuredContent.items.map((e: any) => e.key),
        restList.json.data.items.map((e: any) => e.key),
      )

      const missing = await call('kv_get', { key: 'nope' })
      assert.equal(missing.isError, true)
      assert.match(textOf(missing), /1604/)
    })

    it('kv_set makes a public counter of a number value and names its public_incr_url; another type is 1106, nothing stored', async () => {
      // its own user: the suite's user is near its per-minute limit by now
      const gus = await s.user()
      const own = await mcpHttpClient(s.url, gus.key)
      const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      try {
        // what an agent writes for a like button: a number and the flag, no data_type
        const likes = await run('kv_set', { key: 'likes', value: 0, public_incr: true })
        assert.ok(!likes.isError, textOf(likes))
        assert.equal(likes.structuredContent.entry.data_type, 'number')
        assert.equal(likes.structuredContent.entry.public_incr, true)
        const url = likes.structuredContent.public_incr_url as string
        assert.equal(new URL(url).pathname, `/svc_api/data/public/${gus.username}/likes/incr`)
        assert.ok(textOf(likes).includes(`visitors add 1 with POST ${url}`), textOf(likes))
        // a visitor's page adds 1 without a key
        const visitor = await s.post(new URL(url).pathname)
        assert.equal(visitor.status, 200, visitor.text)
        assert.equal(visitor.json.data.value, 1)
        const got = await run('kv_get', { key: 'likes' })
        assert.equal(got.structuredContent.public_incr_url, url)
        assert.equal(got.structuredContent.entry.value, 1)
        // a flagged entry of another type would answer its visitors 1604: refused, naming what to send
        for (const args of [
          { key: 'votes', value: 'a', data_type: 'text', public_incr: true },
          { key: 'votes', value: 0, data_type: 'json', public_incr: true },
          { key: 'votes', value: '0', public_incr: true },
        ]) {
          const r = await run('kv_set', args)
          assert.equal(r.isError, true, JSON.stringify(args))
          assert.equal(r.structuredContent.error_code, 1106)
          assert.match(textOf(r), /argument "public_incr": a public counter is a number entry: send a number value/)
          assert.equal((await s.get('/svc_api/data/get?key=votes', { key: gus.key })).status, 404)
        }
        // an entry that is no counter keeps the json default, and names no counter URL
        const plain = await run('kv_set', { key: 'plain', value: 0 })
        assert.equal(plain.structuredContent.entry.data_type, 'json')
        assert.equal(plain.structuredContent.public_incr_url, undefined)
      } finally {
        await own.close()
      }
    })

    it('kv_list leaves out values over its bound for kv_get to read, so a page of large entries stays small', async () => {
      // its own user: twenty entries near the store's default entry size (65536 bytes)
      const hal = await s.user()
      const own = await mcpHttpClient(s.url, hal.key)
      const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      try {
        const big = 'y'.repeat(60_000)
        for (let i = 0; i < 20; i++) {
          const r = await s.post('/svc_api/data/store', { key: hal.key, json: { key: `blob${String(i).padStart(2, '0')}`, value: big } })
          assert.equal(r.status, 200, r.text)
        }
        // at the bound (512 bytes of JSON text: the quotes count) and a small one: listed whole
        const edge = 'e'.repeat(KV_LIST_VALUE_BYTES - 2)
        await s.post('/svc_api/data/store', { key: hal.key, json: { key: 'edge', value: edge } })
        await s.post('/svc_api/data/store', { key: hal.key, json: { key: 'small', value: { theme: 'dark' } } })
        const list = await run('kv_list', { per_page: 100 })
        assert.ok(!list.isError, textOf(list))
        assert.equal(list.structuredContent.total, 22)
        const byKey = new Map<string, any>(list.structuredContent.items.map((e: any) => [e.key, e]))
        assert.deepEqual(byKey.get('small').value, { theme: 'dark' })
        assert.equal(byKey.get('small').value_omitted, undefined)
        assert.equal(byKey.get('edge').value, edge)
        assert.equal(byKey.get('blob00').value, null)
        assert.equal(byKey.get('blob00').value_omitted, true)
        assert.equal(byKey.get('blob00').size, 60_002)
        assert.match(textOf(list), /20 value\(s\) over 512 bytes left out \(value_omitted\): kv_get \{key: "blob00"\} reads one/)
        // the whole result, both text blocks and the structured content, is a few kilobytes, not 2.4 MB
        assert.ok(JSON.stringify(list).length < 32_000, `${JSON.stringify(list).length} bytes`)
        // kv_get reads the value whole
        assert.equal((await run('kv_get', { key: 'blob07' })).structuredContent.entry.value, big)
      } finally {
        await own.close()
      }
    })

    it("kv write tools check the key by the store's rule in their input schema: 1106 naming the limit, nothing stored", async () => {
      // a user of its own: the suite's user is near its per-minute limit by now
      const fay = await s.user()
      const own = await mcpHttpClient(s.url, fay.key)
      const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      try {
        const { tools } = await own.listTools()
        for (const name of ['kv_set', 'kv_incr']) {
          const key = (tools.find((t) => t.name === name)?.inputSchema.properties as any).key
          assert.equal(key.maxLength, 100, name)
          assert.match(key.description, /at most 100 characters/, name)
          assert.equal(typeof key.pattern, 'string', name)
        }
        const long = `k${'x'.repeat(100)}`
        assert.equal(long.length, 101)
        for (const [name, args] of [
          ['kv_set', { key: long, value: 1 }],
          ['kv_incr', { key: long }],
        ] as const) {
          const r = await run(name, args)
          assert.equal(r.isError, true, textOf(r))
          assert.equal(r.structuredContent.error_code, 1106, textOf(r))
          assert.match(r.structuredContent.message, /argument "key": .*at most 100 characters/)
        }
        const badFormat = await run('kv_set', { key: '1st-key', value: 1 })
        assert.equal(badFormat.structuredContent.error_code, 1106, textOf(badFormat))
        assert.match(badFormat.structuredContent.message, /argument "key": .*letter/)
        assert.equal((await s.get(`/svc_api/data/get?key=${long}`, { key: fay.key })).status, 404)
        assert.equal((await s.get('/svc_api/data/list', { key: fay.key })).json.data.total, 0)

        // the longest key the store takes is written and read back through the tools
        const max = `k${'x'.repeat(99)}`
        assert.equal((await run('kv_set', { key: max, value: 7 })).isError, undefined)
        const got = await run('kv_get', { key: max })
        assert.equal(got.structuredContent.entry.value, 7, textOf(got))
        // a read looks up any key the store may hold (as GET /svc_api/data/get does): a longer one is not found
        const missing = await run('kv_get', { key: long })
        assert.equal(missing.structuredContent.error_code, 1604, textOf(missing))
      } finally {
        await own.close()
      }
    })

    it('the tools use the same service instances as the REST routes (one cache, one line of write rounds each)', async () => {
      const mcp = s.app.featureState('mcp') as McpServices
      assert.equal(mcp.kv, s.deps.services.get(createKvService))
      assert.equal(mcp.data, s.deps.services.get(createHostedData))
      assert.equal(mcp.images, (s.app.featureState('image-host') as ImageHostState).host)
      // increments from both sides on one key, at once (a user of its own: the key's per-minute
      // limit is shared with the other tests): every one counted exactly once. 2n stays under
      // the key's 10 concurrent requests, so none is refused however slowly the server answers
      const carol = await s.user()
      const agent = await mcpHttpClient(s.url, carol.key)
      try {
        await s.post('/svc_api/data/store', { key: carol.key, json: { key: 'shared', value: 0, data_type: 'number' } })
        const n = 4
        const answers = await Promise.all([
          ...Array.from({ length: n }, () => agent.callTool({ name: 'kv_incr', arguments: { key: 'shared' } })),
          ...Array.from({ length: n }, () => s.post('/svc_api/data/incr', { key: carol.key, json: { key: 'shared' } })),
        ])
        for (const a of answers) assert.ok('status' in a ? a.status === 200 : !a.isError, JSON.stringify(a).slice(0, 300))
        assert.equal((await s.get('/svc_api/data/get?key=shared', { key: carol.key })).json.data.value, 2 * n)
      } finally {
        await agent.close()
      }
    })

    it('kv_list with prefix lists only the keys starting with it, as the REST list does', async () => {
      // a user of its own: the key's per-minute limit is shared with the other tests
      const fay = await s.user()
      const agent = await mcpHttpClient(s.url, fay.key)
      try {
        for (const key of ['cart-1', 'cart-2', 'cart_3', 'other']) await s.post('/svc_api/data/store', { key: fay.key, json: { key, value: 1 } })
        const some = (await agent.callTool({ name: 'kv_list', arguments: { prefix: 'cart-' } })) as { isError?: boolean; structuredContent: any }
        assert.ok(!some.isError)
        assert.deepEqual(
          some.structuredContent.items.map((e: any) => e.key),
          ['cart-1', 'cart-2'],
        )
        assert.equal(some.structuredContent.total, 2)
        const bad = await agent.callTool({ name: 'kv_list', arguments: { prefix: '\ud800' } })
        assert.equal(bad.isError, true)
        assert.match(textOf(bad as { content?: unknown }), /1106/)
      } finally {
        await agent.close()
      }
    })

    it('kv and form summaries carry the URL to open: the public read URL, the submit URL, the dashboard', async () => {
      // a user of its own: the key's per-minute limit is shared with the other tests
      const erin = await s.user()
      const agent = await mcpHttpClient(s.url, erin.key)
      const ok = async (name: string, args: Record<string, unknown> = {}) => {
        const r = (await agent.callTool({ name, arguments: args })) as { isError?: boolean; content: unknown; structuredContent: any }
        assert.ok(!r.isError, `${name}: ${textOf(r)}`)
        return r
      }
      try {
        const cookie = await s.login(erin.username, erin.password)
        const opens = async (url: string) => assert.equal((await s.get(new URL(url).pathname, { cookie })).status, 200, url)

        // a public entry: kv_get and kv_incr name the public URL, which serves the entry
        await s.post('/svc_api/data/store', { key: erin.key, json: { key: 'hits', value: 1, data_type: 'number', is_public: true } })
        const pubGet = await ok('kv_get', { key: 'hits' })
        const hitsUrl = pubGet.structuredContent.public_url
        assert.match(hitsUrl, /\/svc_api\/data\/public\/[^/]+\/hits$/)
        assert.ok(textOf(pubGet).includes(hitsUrl), textOf(pubGet))
        const pubIncr = await ok('kv_incr', { key: 'hits' })
        assert.equal(pubIncr.structuredContent.public_url, hitsUrl)
        assert.ok(textOf(pubIncr).includes(hitsUrl), textOf(pubIncr))
        assert.equal((await s.get(new URL(hitsUrl).pathname)).json.data.value, 2)

        // a private entry has no public URL: the summaries name the dashboard, which opens
        await s.post('/svc_api/data/store', { key: erin.key, json: { key: 'secret', value: 1, data_type: 'number' } })
        const privGet = await ok('kv_get', { key: 'secret' })
        const privIncr = await ok('kv_incr', { key: 'secret' })
        for (const r of [privGet, privIncr]) {
          assert.equal(r.structuredContent.public_url, null)
          assert.ok(textOf(r).includes(r.structuredContent.dashboard_url), textOf(r))
          assert.doesNotMatch(textOf(r), /\/svc_api\/data\/public\//)
        }
        await opens(privGet.structuredContent.dashboard_url)

        // kv_list: each public entry's URL and the dashboard
        const list = await ok('kv_list', { per_page: 100 })
        const hits = list.structuredContent.items.find((e: any) => e.key === 'hits')
        assert.equal(hits.public_url, hitsUrl)
        assert.equal(list.structuredContent.items.find((e: any) => e.key === 'secret').public_url, null)
        assert.ok(textOf(list).includes(`hits (public at ${hitsUrl})`), textOf(list))
        assert.ok(textOf(list).includes(list.structuredContent.dashboard_url), textOf(list))

        // list_submissions: each form's submit URL, the dashboard, and one form's submissions in the API
        const form = (await ok('create_form', { form_name: 'Links' })).structuredContent.form
        await s.post(new URL(form.submit_url).pathname, { json: { m: 'hi' } })
        const forms = await ok('list_submissions')
        assert.ok(textOf(forms).includes(`Links (id ${form.id}): 1 submissions; submit to ${form.submit_url}`), textOf(forms))
        assert.ok(textOf(forms).includes(forms.structuredContent.dashboard_url), textOf(forms))
        await opens(forms.structuredContent.dashboard_url)
        const subs = await ok('list_submissions', { form_id: form.id })
        assert.ok(textOf(subs).includes(subs.structuredContent.dashboard_url), textOf(subs))
        assert.ok(textOf(subs).includes(subs.structuredContent.submissions_url), textOf(subs))
        const api = await s.get(new URL(subs.structuredContent.submissions_url).pathname, { key: erin.key })
        assert.deepEqual(api.json.data.submissions[0].data, { m: 'hi' })
      } finally {
        await agent.close()
      }
    })

    it('create_form and list_submissions see what visitors submit', async () => {
      const r = await ok('create_form', { form_name: 'Contact', fields_config: [{ name: 'email', type: 'email', required: true }] })
      const form = r.structuredContent.form
      assert.ok(textOf(r).includes(form.submit_url))
      const rest = await s.get('/svc_api/forms/list', { key: alice.key })
      assert.ok(rest.json.data.forms.some((f: any) => f.id === form.id))
      const sub = await s.post(new URL(form.submit_url).pathname, { json: { email: 'v@example.com' } })
      assert.equal(sub.status, 200, sub.text)
      const subs = await ok('list_submissions', { form_id: form.id })
      assert.equal(subs.structuredContent.total, 1)
      assert.deepEqual(subs.structuredContent.submissions[0].data, { email: 'v@example.com' })
      const forms = await ok('list_submissions')
      assert.equal(forms.structuredContent.forms.find((f: any) => f.id === form.id).submission_count, 1)
      // a client that hands the model only `content` (the MCP spec: structured content SHOULD also
      // come as its JSON in a text block) still shows what was submitted, not only a count
      assert.equal(subs.content.length, 2)
      assert.deepEqual(JSON.parse(subs.content[1].text), subs.structuredContent)
      assert.match(subs.content[1].text, /v@example\.com/)
    })

    it("every answer carries its structured content as JSON text after the summary, a refusal's too", async () => {
      const own = await mcpHttpClient(s.url, (await s.user()).key)
      try {
        const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as Awaited<ReturnType<typeof call>>
        const site = await run('deploy_files', { project: 'json', files: [{ path: 'index.html', content: '<p>json</p>' }] })
        for (const r of [site, await run('get_site', { name: 'json' }), await run('kv_set', { key: 'k', value: { a: 1 } }), await run('list_sites', {})]) {
          assert.equal(r.content.length, 2, textOf(r))
          assert.deepEqual(JSON.parse(r.content[1].text), r.structuredContent)
        }
        // a list cut into pages names the call for the next one
        await run('kv_set', { key: 'k2', value: 2 })
        const kv = await run('kv_list', { per_page: 1 })
        assert.match(textOf(kv), /^2 entries: k\nentries 1-1 of 2 shown; kv_list \{page: 2, per_page: 1\} lists the next/)
        const refused = await run('read_file', { project: 'json', path: 'nope.html' })
        assert.equal(refused.isError, true)
        assert.deepEqual(JSON.parse(refused.content[1].text), refused.structuredContent)
        // read_file's summary carries the content as it is: its JSON does not repeat it
        const read = await run('read_file', { project: 'json', path: 'index.html' })
        assert.match(textOf(read), /<p>json<\/p>/)
        const json = JSON.parse(read.content[1].text)
        assert.equal(json.content, undefined)
        assert.deepEqual({ ...json, content: '<p>json</p>' }, read.structuredContent)
      } finally {
        await own.close()
      }
    })

    it('create_data, update_data and upload_image need their entitlement, then serve public URLs', async () => {
      const refused = await call('create_data', { display_name: 'd.json', content: '{"a":1}' })
      assert.equal(refused.isError, true)
      assert.match(textOf(refused), /1010/)
      await svc(s, 'grant', alice.username, 'hosted-data')
      await svc(s, 'grant', alice.username, 'image-host')

      const d = await ok('create_data', { display_name: 'd.json', content: '{"a":1}' })
      const url = new URL(d.structuredContent.file.public_url)
      assert.deepEqual((await s.get(url.pathname)).json, { a: 1 })
      const v2 = await ok('update_data', { file_id: d.structuredContent.file.id, content: '{"a":2}' })
      assert.equal(v2.structuredContent.file.default_version, 2)
      assert.equal(v2.structuredContent.version.version, 2, 'the version this call created')
      assert.equal(v2.structuredContent.version.url, `${url.href}?v=2`)
      assert.deepEqual((await s.get(url.pathname)).json, { a: 2 })
      const badJson = await call('update_data', { file_id: d.structuredContent.file.id, content: '{nope' })
      assert.equal(badJson.isError, true)
      assert.match(textOf(badJson), /not valid JSON/)

      const png = await makeImage('png', { width: 7, height: 5 })
      const img = await ok('upload_image', { base64: png.toString('base64'), file_name: 'dot.png' })
      assert.equal(img.structuredContent.image.width, 7)
      const got = await s.get(new URL(img.structuredContent.image.public_url).pathname)
      assert.equal(got.status, 200)
      assert.equal(got.header('content-type'), 'image/png')
      assert.match(textOf(img), /^Uploaded dot\.png \(7x5\): /)
    })

    it('upload_image names an SVG without a pixel size, never "nullxnull"', async () => {
      // a user of its own: alice's requests are counted against her key's rate limits
      const frank = await s.user()
      await svc(s, 'grant', frank.username, 'image-host')
      const own = await mcpHttpClient(s.url, frank.key)
      try {
        const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>').toString('base64')
        const r = (await own.callTool({ name: 'upload_image', arguments: { base64: svg, file_name: 'a.svg' } })) as Awaited<ReturnType<typeof call>>
        assert.ok(!r.isError, textOf(r))
        assert.equal(r.structuredContent.image.width, null)
        assert.match(textOf(r), /^Uploaded a\.svg: https?:\/\//)
      } finally {
        await own.close()
      }
    })

    it("list_data gives back each data file's file_id and link, after the entitlement", async () => {
      // a user of its own: alice's requests are counted against her key's rate limits below
      const carol = await s.user()
      const own = await mcpHttpClient(s.url, carol.key)
      try {
        const run = async (name: string, args: Record<string, unknown> = {}) =>
          (await own.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent: any }
        const refused = await run('list_data')
        assert.equal(refused.isError, true)
        assert.match(textOf(refused), /1010/)
        await svc(s, 'grant', carol.username, 'hosted-data')
        assert.match(textOf(await run('list_data')), /^No data files yet; create_data makes one\.$/)
        const d = await run('create_data', { display_name: 'd.json', content: '{"a":1}' })
        assert.ok(!d.isError, textOf(d))
        const id = d.structuredContent.file.id as string
        const url = d.structuredContent.file.public_url as string
        assert.ok(!(await run('update_data', { file_id: id, content: '{"a":2}' })).isError)
        const listed = await run('list_data')
        assert.ok(!listed.isError, textOf(listed))
        assert.deepEqual(
          listed.structuredContent.files.map((f: { id: string; public_url: string; default_version: number }) => [f.id, f.public_url, f.default_version]),
          [[id, url, 2]],
        )
        assert.equal(textOf(listed), `d.json (application/json, version 2 of 2): ${url} (file_id ${id})`)
      } finally {
        await own.close()
      }
    })

    it('a payload over the inline limit names the next step for its own kind, never a site deploy', async () => {
      const erin = await s.user()
      await svc(s, 'grant', erin.username, 'hosted-data')
      await svc(s, 'grant', erin.username, 'image-host')
      const own = await mcpHttpClient(s.url, erin.key)
      try {
        const refused = async (name: string, args: Record<string, unknown>, code: number, next: RegExp) => {
          const r = (await own.callTool({ name, arguments: args })) as Awaited<ReturnType<typeof call>>
          assert.equal(r.isError, true, textOf(r))
          assert.equal(r.structuredContent.error_code, code, textOf(r))
          assert.match(textOf(r), next)
          assert.doesNotMatch(textOf(r), /svc deploy|larger sites/)
        }
        const over = 'x'.repeat(4 * 1024 * 1024 + 1)
        // a detail that ends in a parenthesis gets its full stop before the solution
        await refused('create_data', { display_name: 'big.txt', content: over }, 1104, /\(multipart\)\. Make the file smaller/)
        // the account's entry size is the smaller limit: the REST store's 1602 with it
        await refused('kv_set', { key: 'big', value: over }, 1602, /size limit of 64 KiB \(65536 bytes\)/)
        await refused(
          'create_data',
          { display_name: 'big.txt', content: over, content_type: 'text/plain' },
          1104,
          /\/dashboard\/data\) or with POST \/api\/hosted-data\/files \(multipart\)/,
        )
        const small = (await own.callTool({ name: 'create_data', arguments: { display_name: 's.json', content: '{}' } })) as Awaited<ReturnType<typeof call>>
        const id = small.structuredContent.file.id
        await refused(
          'update_data',
          { file_id: id, content: over, content_type: 'text/plain' },
          1104,
          new RegExp(`POST /api/hosted-data/files/${id}/versions \\(multipart\\)`),
        )
        const png = Buffer.alloc(4 * 1024 * 1024 + 1)
        await refused('upload_image', { base64: png.toString('base64') }, 1104, /\/dashboard\/images\) or with POST \/api\/image-host\/upload \(multipart\)/)
      } finally {
        await own.close()
      }
    })

    it('refuses bad input with a clear error and stores nothing', async () => {
      const before = (await s.get('/svc_api/files', { key: alice.key })).json.data.files.length
      const big = await call('publish_html', { name: 'big', html: `<p>${'x'.repeat(4 * 1024 * 1024 + 10)}</p>` })
      assert.equal(big.isError, true)
      assert.match(textOf(big), /svc deploy/)
      assert.equal((await s.get('/svc_api/files', { key: alice.key })).json.data.files.length, before)

      const trav = await call('deploy_files', {
        project: 'evil',
        files: [
          { path: 'index.html', content: '<p>ok</p>' },
          { path: '../../etc/passwd', content: 'x' },
        ],
      })
      assert.equal(trav.isError, true)
      assert.match(textOf(trav), /1110/)
      const folders = await s.get('/api/folders', { key: alice.key })
      assert.ok(!folders.json.folders.some((f: any) => f.name === 'evil'), folders.text)

      const badArgs = await call('kv_set', { key: 'k', value: 1, unknown_field: true })
      assert.equal(badArgs.isError, true)

      // too many files: the message names the file limit, not a byte limit
      const many = await call('deploy_files', { project: 'many', files: Array.from({ length: 201 }, (_, i) => ({ path: `p${i}.html`, content: 'x' })) })
      assert.equal(many.isError, true)
      assert.match(textOf(many), /201 files; deploy_files takes at most 200/)
      assert.doesNotMatch(textOf(many), /bytes/)

      // a value nested past the JSON depth limit: the service's own error, not a stack overflow
      // (sent as text: this side's JSON.stringify would overflow its own stack first)
      const depth = 100_000
      const body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"kv_set","arguments":{"key":"deep","value":${'['.repeat(depth)}1${']'.repeat(depth)}}}}`
      const nested = await s.post('/mcp', {
        key: alice.key,
        body,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      })
      assert.doesNotMatch(nested.text, /call stack/i)
      assert.match(nested.text, /1106/)
    })

    it('deploy_files over the inline limit says whether several calls can carry it, and stores nothing', async () => {
      const frank = await s.user()
      const own = await mcpHttpClient(s.url, frank.key)
      const call = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      const MiB = 1024 * 1024
      // files that only add up to the limit: several calls carry them
      const split = [
        { path: 'index.html', content: '<p>home</p>' },
        { path: 'a.txt', content: 'a'.repeat(3 * MiB) },
        { path: 'b.txt', content: 'b'.repeat(2 * MiB) },
      ]
      const together = await call('deploy_files', { project: 'split', files: split })
      assert.equal(together.structuredContent.error_code, 1104, textOf(together))
      assert.match(textOf(together), /files together are over the MCP inline limit of 4 MiB \(4194304 bytes\); send the site in several deploy_files calls/)
      assert.match(textOf(together), /svc deploy \.\/folder --project NAME/)
      // a preview is one call: only the CLI
      const preview = await call('deploy_files', { project: 'split', files: split, publish: false })
      assert.equal(preview.structuredContent.error_code, 1104, textOf(preview))
      assert.match(textOf(preview), /a preview is one call/)
      assert.doesNotMatch(textOf(preview), /several deploy_files calls/)
      // one file over the limit fits no call: named, with the CLI
      const one = await call('deploy_files', { project: 'split', files: [split[0], { path: 'big.txt', content: 'c'.repeat(4 * MiB + 1) }] })
      assert.equal(one.structuredContent.error_code, 1104, textOf(one))
      assert.match(textOf(one), /big\.txt alone is 4194305 bytes, over the MCP inline limit/)
      assert.doesNotMatch(textOf(one), /several deploy_files calls/)
      const many = await call('deploy_files', { project: 'split', files: Array.from({ length: 201 }, (_, i) => ({ path: `p${i}.html`, content: 'x' })) })
      assert.match(textOf(many), /several deploy_files calls/)
      const folders = await s.get('/api/folders', { key: frank.key })
      assert.equal(folders.json.folders.length, 0, folders.text)
      // what the error says works: two calls, each under the limit
      assert.ok(!(await call('deploy_files', { project: 'split', files: split.slice(0, 2) })).isError)
      const second = await call('deploy_files', { project: 'split', files: split.slice(2) })
      assert.ok(!second.isError, textOf(second))
      assert.equal((await s.get(`/${frank.username}/split/b.txt`)).text.length, 2 * MiB)
      await own.close()
    })

    it('deploy_files refuses a binary file sent as text, naming the encoding, and stores none of the call', async () => {
      // a user of its own: the other tests count alice's requests against her rate limits
      const erin = await s.user()
      const own = await mcpHttpClient(s.url, erin.key)
      const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as Awaited<ReturnType<typeof call>>
      const okRun = async (name: string, args: Record<string, unknown>) => {
        const r = await run(name, args)
        assert.ok(!r.isError, `${name}: ${textOf(r)}`)
        return r
      }
      try {
        // an image sent as text (its base64 without "encoding", or its bytes read as a string)
        // would be stored as UTF-8 and served broken: refused, naming the encoding (decision 211)
        const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64')
        for (const content of [png.toString('base64'), png.toString('latin1')]) {
          const asText = await run('deploy_files', {
            project: 'as-text',
            files: [
              { path: 'index.html', content: '<img src="img/Logo.PNG">' },
              { path: 'img/Logo.PNG', content },
            ],
          })
          assert.equal(asText.isError, true)
          assert.match(textOf(asText), /1106.*img\/Logo\.PNG: a \.png file is binary: send its bytes base64-encoded with "encoding": "base64"/)
        }
        assert.ok(!(await s.get('/api/folders', { key: erin.key })).json.folders.some((f: any) => f.name === 'as-text'))
        // text types stay text, whatever their extension's media type says (.ts is video/mp2t)
        await okRun('deploy_files', {
          project: 'as-text',
          files: [
            { path: 'index.html', content: '<p>src</p>' },
            { path: 'src/main.ts', content: 'export const a = 1' },
            { path: 'logo.svg', content: '<svg xmlns="http://www.w3.org/2000/svg"/>' },
            { path: 'img/Logo.PNG', content: png.toString('base64'), encoding: 'base64' },
          ],
        })
        assert.deepEqual(Buffer.from((await s.get(`/${erin.username}/as-text/img/Logo.PNG`)).body), png)
      } finally {
        await own.close()
      }
    })

    it('a bad argument answers as other refusals do: isError with 1106 naming the argument', async () => {
      // a user of its own: the suite's user is near its per-minute limit by now
      const dan = await s.user()
      const own = await mcpHttpClient(s.url, dan.key)
      try {
        const cases: Array<[string, Record<string, unknown>, RegExp]> = [
          ['kv_set', { key: 'k', value: 1, unknown_field: true }, /"unknown_field"/],
          ['publish_html', { name: 'no-html' }, /"html"/],
          ['kv_get', { key: 5 }, /"key"/],
          ['deploy_files', { project: 'p', files: [{ path: 'index.html', content: 'x', encoding: 'hex' }] }, /"files\[0\]\.encoding"/],
        ]
        for (const [name, args, names] of cases) {
          const r = (await own.callTool({ name, arguments: args })) as any
          assert.equal(r.isError, true, `${name}: ${textOf(r)}`)
          assert.equal(r.structuredContent?.error_code, 1106, `${name}: ${textOf(r)}`)
          assert.equal(r.structuredContent.error_type, 'PARAM_ERROR')
          assert.match(r.structuredContent.message, names)
          assert.match(textOf(r), /^Error 1106 \(PARAM_ERROR\): Invalid parameter: /)
          assert.match(textOf(r), names)
        }
        // on the wire: a tool result, not a JSON-RPC error
        const raw = await rpc(dan.key, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'kv_get', arguments: {} } })
        assert.equal(raw.status, 200, raw.text)
        assert.equal(raw.json.error, undefined, raw.text)
        assert.equal(raw.json.result.isError, true)
        assert.equal(raw.json.result.structuredContent.error_code, 1106)
        assert.equal((await s.get('/svc_api/files', { key: dan.key })).json.data.files.length, 0)
      } finally {
        await own.close()
      }
    })

    it("a tool's refusal is whole English, its own words and the shared services' alike, whatever language the request asks", async () => {
      // a user of its own: the suite's user is near its per-minute limit by now
      const erin = await s.user()
      const files = (path: string, content: string, encoding?: string) => [{ path, content, ...(encoding ? { encoding } : {}) }]
      const cases: Array<[string, Record<string, unknown>, number, string]> = [
        // the tool's own check
        ['deploy_files', { project: 'p', files: files('a.bin', '%%%', 'base64') }, 1106, 'Invalid parameter: a.bin: content is not valid base64'],
        // the folders service's path rules (a Text in both languages)
        ['deploy_files', { project: 'p', files: files('a\\b.html', 'x') }, 1110, 'Invalid path: a\\b.html: backslash'],
        // the files service's name rules (a Text in both languages)
        ['publish_html', { name: 'a\\b', html: '<p>x</p>' }, 1110, 'Invalid path: backslash'],
        // the store's value check (a Text in both languages)
        ['kv_set', { key: 'k', value: 'a\u0000b' }, 1106, 'Invalid parameter: value contains U+0000, which the store cannot keep'],
      ]
      for (const lang of ['zh-CN', 'zh', 'en']) {
        for (const [name, args, code, message] of cases) {
          const r = await rpc(erin.key, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name, arguments: args } }, { 'accept-language': lang })
          assert.equal(r.status, 200, r.text)
          const res = r.json.result
          assert.equal(res.isError, true, r.text)
          assert.equal(res.structuredContent.error_code, code, r.text)
          assert.equal(res.structuredContent.message, message)
          assert.doesNotMatch(JSON.stringify(res), /\p{Script=Han}/u)
        }
      }
    })

    it('a project name with "/" is an invalid name (1110), and a missing project names the tools to use', async () => {
      // a user of its own: the suite's user is near its per-minute limit by now
      const carol = await s.user()
      const own = await mcpHttpClient(s.url, carol.key)
      const call = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      for (const project of ['../x', 'a/b', 'someone/site']) {
        const r = await call('deploy_files', { project, files: [{ path: 'index.html', content: '<p>x</p>' }] })
        assert.equal(r.isError, true)
        assert.equal(r.structuredContent.error_code, 1110, textOf(r))
        assert.match(textOf(r), /cannot contain "\/"/)
        assert.doesNotMatch(textOf(r), /batch upload/)
      }
      const folders = await s.get('/api/folders', { key: carol.key })
      assert.ok(!folders.json.folders.some((f: any) => ['x', 'b', 'site'].includes(f.name)), folders.text)
      const missing = await call('rollback', { project: 'never-made' })
      assert.equal(missing.structuredContent.error_code, 1312)
      assert.match(missing.structuredContent.solution, /deploy_files/)
      // the tools answer in English: the service's reason too, in the text and the structure
      const info = 'folder project "never-made" does not exist or does not belong to the caller'
      assert.equal(missing.structuredContent.details.info, info)
      assert.ok(textOf(missing).includes(info), textOf(missing))
      assert.doesNotMatch(textOf(missing), /batch upload/)
      const page = await call('get_site', { name: 'never-made.html' })
      assert.equal(page.structuredContent.error_code, 1301)
      assert.match(page.structuredContent.solution, /list_sites/)
      await own.close()
    })

    it('a refused rollback, promote, page, key or form names the tool that is the next step, never a CLI command', async () => {
      // a user of its own: the suite's user is near its per-minute limit by now
      const dave = await s.user()
      const own = await mcpHttpClient(s.url, dave.key)
      const call = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      const refused = async (name: string, args: Record<string, unknown>, code: number, next: RegExp) => {
        const r = await call(name, args)
        assert.equal(r.isError, true, textOf(r))
        assert.equal(r.structuredContent.error_code, code, textOf(r))
        assert.match(r.structuredContent.solution, next, textOf(r))
        assert.match(textOf(r), next)
        assert.doesNotMatch(textOf(r), /svc publish|slug or id|public read/)
        return r
      }
      // a preview only: the project has never been live
      const preview = await call('deploy_files', { project: 'draft', files: [{ path: 'index.html', content: '<p>draft</p>' }], publish: false })
      assert.ok(!preview.isError, textOf(preview))
      await refused('rollback', { project: 'draft' }, 1336, /deploy_files publishes the project; or promote/)
      await refused('promote', { project: 'draft', deploy_id: 'nosuchdeploy' }, 1331, /list_deploys \{project: "draft"\}/)
      const one = await call('deploy_files', { project: 'live', files: [{ path: 'index.html', content: '<p>one</p>' }] })
      assert.ok(!one.isError, textOf(one))
      await refused('rollback', { project: 'live' }, 1334, /list_deploys \{project: "live"\}.*deploy_id/)
      await refused('rollback', { project: 'live', deploy_id: 'nosuchdeploy' }, 1331, /list_deploys/)
      // publish_html adds .html to every name: a refused type is the html argument's content
      for (const html of ['just some words', '{"a": 1}']) {
        const r = await refused('publish_html', { name: 'notes', html }, 1105, /html argument must be an HTML document/)
        assert.doesNotMatch(r.structuredContent.solution, /Only \.html/)
      }
      assert.equal((await s.get('/svc_api/files', { key: dave.key })).json.data.files.length, 0)
      await refused('kv_get', { key: 'never-set' }, 1604, /kv_list/)
      const form = await call('create_form', { form_name: 'Contact', form_slug: 'contact-dave' })
      assert.ok(!form.isError, textOf(form))
      // the slug is not an id: the forms list gives the ids
      await refused('list_submissions', { form_id: 'contact-dave' }, 1611, /list_submissions without form_id/)
      await own.close()
    })

    it('create_form refuses an unknown or mistyped field setting (1106) instead of dropping it, and creates nothing', async () => {
      const erin = await s.user()
      const own = await mcpHttpClient(s.url, erin.key)
      const call = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      const typo = await call('create_form', { form_name: 'Signup', fields_config: [{ name: 'email', requird: true }] })
      assert.equal(typo.isError, true, textOf(typo))
      assert.equal(typo.structuredContent.error_code, 1106)
      assert.match(textOf(typo), /unknown argument "requird" in "fields_config\[0\]"/)
      const type = await call('create_form', { form_name: 'Signup', fields_config: [{ name: 'email', type: 'e-mail' }] })
      assert.equal(type.structuredContent.error_code, 1106, textOf(type))
      assert.match(textOf(type), /argument "fields_config\[0\]\.type".*"email"/)
      const rest = await s.get('/svc_api/forms/list', { key: erin.key })
      assert.equal(rest.json.data.forms.length, 0, rest.text)
      // the field types are in the input schema, where an agent reads them
      const { tools } = await own.listTools()
      const schema = JSON.stringify(tools.find((t) => t.name === 'create_form')?.inputSchema)
      assert.match(schema, /"enum":\["text","email","number","textarea","select","checkbox","url","tel","date","file"\]/)
      await own.close()
    })

    it("project names follow the REST API's one rule for names: what it takes the tools take, what it refuses they refuse", async () => {
      // a user of its own: the suite's user is near its per-minute limit by now
      const gil = await s.user()
      const own = await mcpHttpClient(s.url, gil.key)
      const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      const index = [{ path: 'index.html', content: '<p>x</p>' }]
      const names = async () => (await s.get('/api/folders', { key: gil.key })).json.folders.map((f: any) => f.name).sort()
      try {
        // the tool that makes a project states the rule the service applies, not a narrower one;
        // the tools naming an existing one say where its name comes from and hold it to no other rule
        const { tools } = await own.listTools()
        for (const t of tools.filter((x) => (x.inputSchema.properties as any)?.project)) {
          const project = (t.inputSchema.properties as any).project
          const said = t.name === 'deploy_files' ? `Project (site) name: ${NAME_RULE}` : 'The name of one of your projects, as list_sites shows it'
          assert.equal(project.description, said, t.name)
          assert.deepEqual(Object.keys(project).sort(), ['description', 'maxLength', 'minLength', 'type'], t.name)
          assert.equal(project.maxLength, 255, t.name)
        }
        assert.match(NAME_RULE, /spaces .* allowed/)

        // a space, other scripts and a long name: taken by the REST API and by the tools alike
        const rest = await batchUpload(s, { key: gil.key }, encodeURIComponent('rest site'), [{ filename: 'index.html', data: '<p>r</p>' }])
        assert.equal(rest.status, 200, rest.text)
        const long = `p${'x'.repeat(199)}`
        for (const project of ['my site', 'درباره ما', long]) {
          const r = await run('deploy_files', { project, files: index })
          assert.ok(!r.isError, `${project}: ${textOf(r)}`)
          const files = await s.get(`/api/folders/${encodeURIComponent(project)}/files`, { key: gil.key })
          assert.deepEqual(
            files.json.files.map((f: any) => f.path),
            ['index.html'],
            files.text,
          )
          assert.equal((await run('list_deploys', { project })).isError, undefined)
        }
        assert.equal((await s.get(`/${gil.username}/my%20site/`)).text, '<p>x</p>')
        assert.equal((await run('get_site', { name: 'rest site' })).structuredContent.type, 'project')
        const before = await names()
        assert.deepEqual(before, [long, 'my site', 'rest site', 'درباره ما'].sort())

        // names the rule refuses: 1110 naming why, from the same check, and nothing stored
        for (const [project, why] of [
          ['..', /dot segment/],
          ['a\\b', /backslash/],
          ['bell\u0007', /control character/],
          ['a%41', /%XX sequence/],
          ['é'.repeat(128), /longer than 255 bytes/],
        ] as const) {
          const r = await run('deploy_files', { project, files: index })
          assert.equal(r.isError, true, project)
          assert.equal(r.structuredContent.error_code, 1110, textOf(r))
          assert.match(r.structuredContent.message, why)
          // named as the argument the agent sent, with the rule: never the REST route's folder_path
          assert.ok(r.structuredContent.message.includes(`project name ${JSON.stringify(project)}: `), r.structuredContent.message)
          assert.doesNotMatch(textOf(r), /folder_path/)
          assert.ok(textOf(r).includes(NAME_RULE), textOf(r))
          // the REST API refuses the same name (a URL cannot carry "..": clients resolve it, %2E%2E too)
          if (project === '..') continue
          const viaRest = await s.get(`/api/folders/${encodeURIComponent(project)}/files`, { key: gil.key })
          assert.equal(viaRest.status, 400, `${project}: ${viaRest.text}`)
          assert.equal(viaRest.json.error_code, 1110, viaRest.text)
        }
        assert.deepEqual(await names(), before)
      } finally {
        await own.close()
      }
    })

    it('deploy_files reads base64 as upload_image does: a data: URL prefix and the URL-safe alphabet', async () => {
      const dave = await s.user()
      const own = await mcpHttpClient(s.url, dave.key)
      const bytes = Buffer.from([0xfb, 0xff, 0xfe, 0x00, 0x89, 0x50])
      const r = (await own.callTool({
        name: 'deploy_files',
        arguments: {
          project: 'bin',
          files: [
            { path: 'index.html', content: '<p>x</p>' },
            { path: 'a.bin', content: `data:application/octet-stream;base64,${bytes.toString('base64')}`, encoding: 'base64' },
            { path: 'b.bin', content: bytes.toString('base64url'), encoding: 'base64' },
          ],
        },
      })) as any
      assert.ok(!r.isError, textOf(r))
      for (const f of ['a.bin', 'b.bin']) assert.deepEqual((await s.get(`/${dave.username}/bin/${f}`)).body, bytes, f)
      const bad = (await own.callTool({
        name: 'deploy_files',
        arguments: { project: 'bin', files: [{ path: 'c.bin', content: 'not base64!', encoding: 'base64' }] },
      })) as any
      assert.equal(bad.structuredContent.error_code, 1106)
      await own.close()
    })

    it('deploy_files that its publish would refuse (no index.html, a bad _redirects line) stores none of its files', async () => {
      // a user of its own: the key's per-minute limit is shared with the other tests
      const erin = await s.user()
      const agent = await mcpHttpClient(s.url, erin.key)
      const use = async (name: string, args: Record<string, unknown>) => (await agent.callTool({ name, arguments: args })) as any
      try {
        const projects = async () => (await s.get('/api/folders', { key: erin.key })).json.folders.map((f: any) => f.name)
        const noIndex = await use('deploy_files', { project: 'no-index', files: [{ path: 'a.css', content: 'p{}' }] })
        assert.equal(noIndex.isError, true)
        assert.equal(noIndex.structuredContent.error_code, 1313)
        assert.deepEqual(await projects(), [])

        assert.ok(!(await use('deploy_files', { project: 'ruled', files: [{ path: 'index.html', content: '<p>r1</p>' }] })).isError)
        const filesOf = async () => (await s.get('/api/folders/ruled/files', { key: erin.key })).json.files.map((f: any) => f.path).sort()
        const deploysOf = async () => (await use('list_deploys', { project: 'ruled' })).structuredContent.deploys.length
        const deploys = await deploysOf()
        const badRules = await use('deploy_files', {
          project: 'ruled',
          files: [
            { path: 'index.html', content: '<p>r2</p>' },
            { path: '_redirects', content: 'no-slash /x 301' },
          ],
        })
        assert.equal(badRules.isError, true)
        assert.equal(badRules.structuredContent.error_code, 1314)
        assert.match(textOf(badRules), /_redirects, line 1/)
        assert.deepEqual(await filesOf(), ['index.html'])
        assert.equal(await deploysOf(), deploys)
        assert.equal((await s.get(`/${erin.username}/ruled/`)).text, '<p>r1</p>')
        // nothing of the refused call stays behind to refuse the next one
        const next = await use('deploy_files', { project: 'ruled', files: [{ path: '_headers', content: '/*\n  X-Test: 1\n' }] })
        assert.ok(!next.isError, textOf(next))
        assert.deepEqual(await filesOf(), ['_headers', 'index.html'])
      } finally {
        await agent.close()
      }
    })

    it('a body over the route limit answers 413 / 1443 naming the limit and the archive deploy; the SDK client shows it', async () => {
      // a user of its own: the key's per-minute limit is shared with the other tests
      const dave = await s.user()
      const agent = await mcpHttpClient(s.url, dave.key)
      const huge = 'x'.repeat(MCP_BODY_LIMIT)
      const body = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'publish_html', arguments: { name: 'huge', html: huge } } }
      for (const lang of ['en', 'zh']) {
        const r = await rpc(dave.key, body, { 'accept-language': lang })
        assert.equal(r.status, 413, r.text.slice(0, 300))
        assert.deepEqual([r.json.success, r.json.error_code, r.json.error_type], [false, 1443, 'BUSINESS_ERROR'])
        assert.ok(r.json.message.includes(String(MCP_BODY_LIMIT)), r.json.message)
        assert.match(r.json.solution, /svc deploy \.\/folder --project NAME/)
        assert.match(r.json.solution, /POST \/api\/folders\/\{project\}\/deploys/)
        assert.match(r.json.doc_link, /\/docs\/errors#1443$/)
      }
      try {
        await assert.rejects(
          agent.callTool({ name: 'publish_html', arguments: { name: 'huge', html: huge } }),
          (e: any) => e.code === 413 && /1443/.test(e.message) && /svc deploy/.test(e.message) && e.message.includes(String(MCP_BODY_LIMIT)),
        )
        // the client stays usable after the refusal, and nothing was stored
        assert.ok((await agent.listTools()).tools.length > 0)
      } finally {
        await agent.close()
      }
      assert.deepEqual((await s.get('/svc_api/files', { key: dave.key })).json.data.files, [])
    })

    it('answers 401 without a key or with a wrong one, 405 to GET, DELETE, PUT and PATCH, 403 to a foreign Host', async () => {
      const none = await rpc(null, LIST)
      assert.equal(none.status, 401)
      assert.equal(none.json.error_code, 1001)
      // MCP clients send no Accept-Language: /mcp's errors are English then, as its tools are
      assert.equal(none.json.message, 'API key missing')
      assert.equal((await rpc(null, LIST, { 'accept-language': 'zh-CN' })).json.message, '缺少 API 密钥')
      const wrong = await rpc(`svc_${'x'.repeat(60)}`, LIST)
      assert.equal(wrong.status, 401)
      assert.equal(wrong.json.error_code, 1002)
      await assert.rejects(mcpHttpClient(s.url, `svc_${'y'.repeat(60)}`), (e: any) => e.code === 401 && /1002/.test(e.message))

      for (const m of ['GET', 'DELETE', 'PUT', 'PATCH']) {
        const r = await s.request(m, '/mcp', { key: alice.key })
        assert.equal(r.status, 405, m)
        assert.equal(r.header('allow'), 'POST')
        assert.equal(r.json.error_code, 1442)
        assert.match(r.json.message, /only takes POST|POST/)
        assert.doesNotMatch(r.json.message, /只接受/)
      }
      const rebound = await rpc(alice.key, LIST, { host: 'attacker.example' })
      assert.equal(rebound.status, 403)
      assert.equal(rebound.json.error_code, 1441)
      const foreign = await rpc(alice.key, LIST, { origin: 'https://attacker.example' })
      assert.equal(foreign.status, 403)
      assert.equal(foreign.json.error_code, 1441)
    })

    it('counts a request no MCP route takes, as the API context counts its misses', async () => {
      // /mcp is in the API context: its misses go through the API guard (X-RateLimit-*,
      // counted against the key) as /svc_api/nope does, and answer in its format
      const carol = await s.user()
      let remaining = Number((await s.get('/svc_api/nope', { key: carol.key })).header('x-ratelimit-remaining'))
      const cases: Array<[string, string, number, string | undefined]> = [
        ['GET', '/mcp/x', 404, undefined],
        ['POST', '/mcp/', 404, undefined],
        ['OPTIONS', '/mcp', 405, 'POST'],
      ]
      for (const [m, p, status, allow] of cases) {
        const r = await s.request(m, p, { key: carol.key })
        assert.equal(r.status, status, `${m} ${p}`)
        assert.equal(r.header('allow'), allow, `${m} ${p}`)
        assert.equal(r.json.success, false, `${m} ${p}`)
        // in English, as /mcp's routes answer to a client that sends no Accept-Language
        assert.doesNotMatch(r.json.message, /\p{Script=Han}/u, `${m} ${p}`)
        assert.ok(r.header('x-ratelimit-limit'), `${m} ${p}: no X-RateLimit-Limit`)
        assert.equal(Number(r.header('x-ratelimit-remaining')), remaining - 1, `${m} ${p}: not counted`)
        remaining -= 1
      }
    })

    it('over plain HTTP answers 1116 as the REST API does, never a redirect a client would follow', async () => {
      // a 301 to HTTPS would be followed (the key already sent in the clear), the POST turned into a GET
      for (const url of ['/mcp', '/mcp?x=1']) {
        const r = await s.post(url, { plain: true, key: alice.key, json: LIST, headers: { accept: 'application/json, text/event-stream' } })
        assert.equal(r.status, 400, `${url}: ${r.status} ${r.header('location') ?? r.text}`)
        assert.equal(r.json.error_code, 1116)
        assert.equal(r.header('location'), undefined)
      }
      const get = await s.get('/mcp', { plain: true })
      assert.equal(get.json.error_code, 1116)
    })

    it("counts each MCP request against the key's rate limits, with the REST API's headers", async () => {
      const a = await rpc(alice.key, LIST)
      assert.equal(a.status, 200, a.text)
      const b = await s.get('/svc_api/me', { key: alice.key })
      const c = await rpc(alice.key, LIST)
      const left = (r: typeof a) => Number(r.header('x-ratelimit-remaining'))
      assert.equal(a.header('x-ratelimit-window'), b.header('x-ratelimit-window'))
      assert.equal(left(b), left(a) - 1)
      assert.equal(left(c), left(b) - 1)
      assert.ok(a.json.result.tools.length > 0)
    })

    it("arguments that are no JSON object (their JSON text, an array) answer the tool's 1106, never an internal error", async () => {
      const { key } = await s.user()
      for (const args of ['{"page": 1}', [1]]) {
        const r = await rpc(key, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_sites', arguments: args } })
        assert.equal(r.status, 200, r.text)
        assert.equal(r.json.id, 7)
        assert.equal(r.json.result?.isError, true, r.text)
        assert.equal(r.json.result.structuredContent.error_code, 1106, r.text)
        assert.match(r.json.result.content[0].text, /Invalid parameter: the arguments: .*expected object/)
      }
    })

    it('refuses a JSON-RPC batch (400, -32600) before any of its calls runs: one request is one call against the rate limits', async () => {
      // a user of its own: alice's requests are near her rate limits here
      const { key } = await s.user()
      const incr = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'kv_incr', arguments: { key: 'batched' } } })
      const r = await rpc(key, [incr(1), incr(2), incr(3)])
      assert.equal(r.status, 400, r.text)
      assert.equal(r.json.error.code, -32600)
      assert.match(r.json.error.message, /batches are not supported; send one message per POST/)
      assert.equal((await s.get('/svc_api/data/get?key=batched', { key })).status, 404)
      // a lone message in an array is no batch
      const one = await rpc(key, [LIST])
      assert.equal(one.status, 200, one.text)
      assert.match(one.text, /"name":"publish_html"/)
    })

    it('a read-only key lists only read-only tools, and the REST API refuses its writes (1440)', async () => {
      const { key } = await s.deps.apiKeys.create(alice.id, { name: 'agent-ro', readOnly: true })
      const ro = await mcpHttpClient(s.url, key)
      try {
        const { tools } = await ro.listTools()
        assert.deepEqual(tools.map((t) => t.name).sort(), [...READ_TOOLS].sort())
        for (const t of tools) assert.equal(t.annotations?.readOnlyHint, true)
        assert.ok(!tools.some((t) => t.name === 'rollback' || t.name === 'promote'))
        const r = await ro.callTool({ name: 'kv_set', arguments: { key: 'x', value: 1 } })
        assert.equal(r.isError, true)
        assert.equal((r.structuredContent as any).error_code, 1440, textOf(r as { content?: unknown }))
        const unknown = await ro.callTool({ name: 'no_such_tool', arguments: {} })
        assert.equal((unknown.structuredContent as any).error_code, 1106)
        assert.match(textOf(unknown as { content?: unknown }), /unknown tool "no_such_tool"/)
        const rb = await ro.callTool({ name: 'rollback', arguments: { project: 'versions' } })
        assert.equal(rb.isError, true)
        assert.equal((await s.get(`/${alice.username}/versions/`)).text, '<p>v3</p>')
        const deploys = await ro.callTool({ name: 'list_deploys', arguments: { project: 'versions' } })
        assert.ok(!deploys.isError, textOf(deploys as { content?: unknown }))
        const got = await ro.callTool({ name: 'kv_get', arguments: { key: 'visits' } })
        assert.equal((got.structuredContent as any).entry.value, 42)
      } finally {
        await ro.close()
      }
      const write = await s.post('/svc_api/data/store', { key, json: { key: 'x', value: 1 } })
      assert.equal(write.status, 403)
      assert.equal(write.json.error_code, 1440)
      assert.equal((await s.get('/svc_api/data/get?key=x', { key: alice.key })).status, 404)
      const del = await s.request('DELETE', '/svc_api/data/delete?key=visits', { key })
      assert.equal(del.json.error_code, 1440)
      const read = await s.get('/svc_api/data/get?key=visits', { key })
      assert.equal(read.status, 200)
      assert.equal((await s.get('/svc_api/me', { key })).json.data.read_only, true)
    })
  })
}

describe('MCP behind a proxy (TRUST_PROXY=1)', () => {
  let s: TestServer
  before(async () => {
    s = await startServer({ env: { TRUST_PROXY: '1' } })
  })
  after(() => s.close())

  it('checks the host the client named (X-Forwarded-Host), the one the answers are built on', async () => {
    const alice = await s.user()
    const rpc = (forwardedHost: string) =>
      s.post('/mcp', {
        key: alice.key,
        json: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
        headers: { accept: 'application/json, text/event-stream', 'x-forwarded-proto': 'https', 'x-forwarded-host': forwardedHost },
      })
    // a proxy that sends its upstream's address as Host: the client's host is in X-Forwarded-Host
    const rebound = await rpc('attacker.example')
    assert.equal(rebound.status, 403, rebound.text.slice(0, 200))
    assert.equal(rebound.json.error_code, 1441)
    const own = await rpc('localhost:8443')
    assert.equal(own.status, 200, own.text.slice(0, 200))
    assert.ok(own.json.result.tools.length > 0)
  })
})

describe('MCP with many pages and files', () => {
  let s: TestServer
  before(async () => {
    s = await startServer({ env: { RATE_LIMITS: HIGH_LIMITS } })
  })
  after(() => s.close())

  it('finds a page by its exact name however many other names contain it', async () => {
    const dora = await s.user()
    await s.deps.users.update(dora.username, { limits: { files: 150 } })
    // the page asked for first, then more than a page of list results whose names contain it
    assert.equal((await uploadFile(s, { key: dora.key }, 'a.html', '<p>the one</p>')).status, 200)
    for (let i = 0; i < 101; i++) assert.equal((await uploadFile(s, { key: dora.key }, `a${i}.html`, `<p>${i}</p>`)).status, 200)
    const c = await mcpHttpClient(s.url, dora.key)
    try {
      for (const name of ['a.html', 'a']) {
        const r = (await c.callTool({ name: 'get_site', arguments: { name } })) as {
          isError?: boolean
          structuredContent?: any
          content: Array<{ text: string }>
        }
        assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`)
        assert.equal(r.structuredContent.file_name, 'a.html', name)
      }

      // list_sites shows pages 100 at a time, and says where the rest are
      const sites = async (args: Record<string, unknown>) =>
        (await c.callTool({ name: 'list_sites', arguments: args })) as { structuredContent: any; content: Array<{ text: string }> }
      const first = await sites({})
      assert.equal(first.structuredContent.pages.length, 100)
      assert.deepEqual([first.structuredContent.pages_total, first.structuredContent.page, first.structuredContent.total_pages], [102, 1, 2])
      assert.match(first.content[0].text, /pages 1-100 of 102 shown; list_sites \{page: 2\} lists the next/)
      const second = await sites({ page: 2 })
      const names = [...first.structuredContent.pages, ...second.structuredContent.pages].map((p: any) => p.file_name)
      assert.equal(new Set(names).size, 102)
    } finally {
      await c.close()
    }
  })

  it("get_site lists a large project's files a page at a time, with the total and the next page named", async () => {
    const eve = await s.user()
    const c = await mcpHttpClient(s.url, eve.key)
    type R = { isError?: boolean; structuredContent: any; content: Array<{ text: string }> }
    const run = async (name: string, args: Record<string, unknown>) => {
      const r = (await c.callTool({ name, arguments: args })) as R
      assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`)
      return r
    }
    try {
      for (let b = 0; b < 3; b++) {
        const files = Array.from({ length: 150 }, (_, i) => ({ path: `assets/c${b}-${String(i).padStart(3, '0')}.js`, content: `${b}/${i}` }))
        if (b === 0) files.push({ path: 'index.html', content: '<p>big</p>' })
        await run('deploy_files', { project: 'big', files })
      }
      const one = await run('get_site', { name: 'big' })
      assert.equal(one.structuredContent.file_count, 451)
      assert.equal(one.structuredContent.files.length, 200, 'the default page')
      assert.deepEqual([one.structuredContent.files_total, one.structuredContent.page, one.structuredContent.total_pages], [451, 1, 3])
      assert.match(one.content[0].text, /files 1-200 of 451 listed; get_site \{name: "big", page: 2\} lists the next/)
      const seen = new Set<string>()
      for (let page = 1; page <= 3; page++) for (const f of (await run('get_site', { name: 'big', page })).structuredContent.files) seen.add(f.path)
      assert.equal(seen.size, 451)
      const wide = await run('get_site', { name: 'big', per_page: 1000 })
      assert.equal(wide.structuredContent.files.length, 451)
      assert.doesNotMatch(wide.content[0].text, /lists the next/)
      const tooWide = (await c.callTool({ name: 'get_site', arguments: { name: 'big', per_page: 1001 } })) as R
      assert.equal(tooWide.isError, true)
    } finally {
      await c.close()
    }
  })
})

for (const engine of ENGINES) {
  // a server of its own, with high limits: a visitor's requests here count against the test's one IP
  describe(`MCP tools that change and delete what an agent made [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    })
    after(() => s.close())

    it("update_form changes a form's settings through the forms service, as PUT /svc_api/forms/update does", async () => {
      const ivy = await s.user()
      const own = await mcpHttpClient(s.url, ivy.key)
      const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      try {
        const { tools } = await own.listTools()
        const t = tools.find((x) => x.name === 'update_form')
        assert.deepEqual(t?.inputSchema.required, ['form_id'])
        assert.deepEqual([t?.annotations?.readOnlyHint, t?.annotations?.destructiveHint, t?.annotations?.idempotentHint], [false, false, true])
        const form = (await run('create_form', { form_name: 'Guestbook' })).structuredContent.form
        const restForm = async () => (await s.get('/svc_api/forms/list', { key: ivy.key })).json.data.forms[0]
        // the page's URL is known once it is deployed: the redirect is set after
        const page = `https://${ivy.username}.example/guestbook/`
        const r = await run('update_form', { form_id: form.id, redirect_url: page })
        assert.ok(!r.isError, textOf(r))
        assert.equal(r.structuredContent.form.redirect_url, page)
        assert.equal(r.structuredContent.form.form_name, 'Guestbook', 'the settings not given stay')
        assert.match(textOf(r), new RegExp(`submit to ${form.submit_url}`))
        assert.equal((await restForm()).redirect_url, page)
        const post = () => s.post(new URL(form.submit_url).pathname, { json: { message: 'hi' } })
        assert.equal((await post()).status, 200)
        assert.equal((await run('update_form', { form_id: form.id, is_active: false })).structuredContent.form.is_active, false)
        assert.equal((await post()).json.error_code, 1612)
        // refusals change nothing
        const before = await restForm()
        for (const [args, code, next] of [
          [{ form_id: form.id, redirect_url: 'javascript:alert(1)' }, 1106, /redirect_url/],
          [{ form_id: form.id, fields_config: [{ name: 'a', requird: true }] }, 1106, /unknown argument "requird"/],
          [{ form_id: form.form_slug, form_name: 'x' }, 1611, /not the slug/],
          [{ redirect_url: page }, 1106, /argument "form_id" is required/],
        ] as const) {
          const bad = await run('update_form', args)
          assert.equal(bad.isError, true, textOf(bad))
          assert.equal(bad.structuredContent.error_code, code, textOf(bad))
          assert.match(textOf(bad), next)
        }
        assert.deepEqual(await restForm(), before)
        const slugged = await run('update_form', { form_id: form.id, form_slug: 'ivy-guestbook', is_active: true })
        assert.match(slugged.structuredContent.form.submit_url, /\/api\/forms\/submit\/ivy-guestbook$/)
        assert.equal((await s.post('/api/forms/submit/ivy-guestbook', { json: { message: 'again' } })).status, 200)
      } finally {
        await own.close()
      }
    })

    it('an id argument with a NUL character is 1106 naming it, on PostgreSQL too, as the REST routes refuse one', async () => {
      const kim = await s.user()
      const own = await mcpHttpClient(s.url, kim.key)
      try {
        for (const [name, args, arg] of [
          ['rollback', { project: 'p', deploy_id: '\u0000' }, 'deploy_id'],
          ['promote', { project: 'p', deploy_id: 'a\u0000' }, 'deploy_id'],
          ['list_submissions', { form_id: 'a\u0000' }, 'form_id'],
          ['update_form', { form_id: '\u0000', form_name: 'x' }, 'form_id'],
          ['delete_form', { form_id: '\u0000' }, 'form_id'],
          ['delete_submission', { submission_id: 'a\u0000' }, 'submission_id'],
          ['update_data', { file_id: 'x\u0000', content: '{}' }, 'file_id'],
          ['delete_image', { public_token: 'a\u0000' }, 'public_token'],
          ['delete_data', { file_id: 'a\u0000' }, 'file_id'],
          ['set_access', { name: 'a\u0000', password: 'long enough' }, 'name'],
          ['clear_access', { name: '\u0000' }, 'name'],
        ] as const) {
          const r = (await own.callTool({ name, arguments: args })) as any
          assert.equal(r.isError, true, `${name}: ${textOf(r)}`)
          assert.equal(r.structuredContent?.error_code, 1106, `${name}: ${textOf(r)}`)
          assert.match(textOf(r), new RegExp(`argument "${arg}": must not contain a NUL character`), name)
        }
      } finally {
        await own.close()
      }
    })

    it('list_submissions names the call that lists the next page, as kv_list and get_site do', async () => {
      const jack = await s.user()
      const own = await mcpHttpClient(s.url, jack.key)
      const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      try {
        const form = (await run('create_form', { form_name: 'Guestbook' })).structuredContent.form
        for (const m of ['one', 'two', 'three']) assert.equal((await s.post(new URL(form.submit_url).pathname, { json: { m } })).status, 200)
        const first = await run('list_submissions', { form_id: form.id, per_page: 2 })
        assert.equal(first.structuredContent.total, 3)
        assert.match(
          textOf(first),
          new RegExp(`^3 submissions; submissions 1-2 of 3 shown; list_submissions \\{form_id: "${form.id}", page: 2, per_page: 2\\} lists the next\\.`),
        )
        const second = await run('list_submissions', { form_id: form.id, page: 2, per_page: 2 })
        assert.deepEqual(
          second.structuredContent.submissions.map((x: any) => x.data.m),
          ['one'],
        )
        assert.match(textOf(second), /^3 submissions; submissions 3-3 of 3 shown\. /)
        assert.match(textOf(await run('list_submissions', { form_id: form.id })), /^3 submissions\. The dashboard/)
      } finally {
        await own.close()
      }
    })

    it('an agent cleans up what it made: kv_delete, delete_form, list_images and delete_image, as the REST API deletes', async () => {
      const gina = await s.user()
      const own = await mcpHttpClient(s.url, gina.key)
      const run = async (name: string, args: Record<string, unknown>) => (await own.callTool({ name, arguments: args })) as any
      const done = async (name: string, args: Record<string, unknown>) => {
        const r = await run(name, args)
        assert.ok(!r.isError, `${name}: ${textOf(r)}`)
        return r
      }
      const refused = async (name: string, args: Record<string, unknown>, code: number, next: RegExp) => {
        const r = await run(name, args)
        assert.equal(r.isError, true, textOf(r))
        assert.equal(r.structuredContent.error_code, code, textOf(r))
        assert.match(textOf(r), next)
      }
      try {
        const { tools } = await own.listTools()
        for (const name of ['kv_delete', 'delete_form', 'delete_submission', 'delete_image', 'delete_site', 'delete_file']) {
          const t = tools.find((x) => x.name === name)?.annotations
          assert.deepEqual([t?.readOnlyHint, t?.destructiveHint, t?.idempotentHint], [false, true, true], name)
        }
        assert.equal(tools.find((x) => x.name === 'list_images')?.annotations?.readOnlyHint, true)

        // a page past the REST lists' bound is refused by every list tool alike, before any query
        for (const name of ['list_sites', 'get_site', 'kv_list', 'list_images', 'list_submissions']) {
          const args = { page: 1_000_000_000, ...(name === 'get_site' ? { name: 'x' } : {}) }
          await refused(name, args, 1106, /argument "page": .*999999999/)
        }

        // kv_delete: the store's delete; the public read goes at once
        await done('kv_set', { key: 'visits', value: 3, is_public: true })
        // an update that omits is_public keeps it, as the argument's description says
        assert.equal((await done('kv_set', { key: 'visits', value: 4 })).structuredContent.public_url !== null, true)
        assert.equal((await s.get(`/svc_api/data/public/${gina.username}/visits`)).json.data.value, 4)
        assert.equal((await s.get(`/svc_api/data/public/${gina.username}/visits`)).status, 200)
        const del = await done('kv_delete', { key: 'visits' })
        assert.equal(del.structuredContent.key, 'visits')
        assert.equal((await s.get('/svc_api/data/get?key=visits', { key: gina.key })).json.error_code, 1604)
        assert.equal((await s.get(`/svc_api/data/public/${gina.username}/visits`)).status, 404)
        await refused('kv_delete', { key: 'visits' }, 1604, /kv_list lists the keys/)
        await refused('kv_delete', { key: '' }, 1106, /argument "key"/)

        // delete_form: the form and its submissions; its submit URL refuses posts
        const form = (await done('create_form', { form_name: 'Guestbook' })).structuredContent.form
        const sent = await s.post(new URL(form.submit_url).pathname, { json: { message: 'hi' } })
        assert.equal(sent.status, 200, sent.text)
        // delete_submission: one submission, by an id list_submissions shows
        const test = await s.post(new URL(form.submit_url).pathname, { json: { message: 'test post' } })
        assert.equal(test.status, 200, test.text)
        const listed = (await done('list_submissions', { form_id: form.id })).structuredContent.submissions
        const testId = listed.find((x: any) => x.data.message === 'test post').id
        const dropped = await done('delete_submission', { submission_id: testId })
        assert.deepEqual([dropped.structuredContent.submission_id, dropped.structuredContent.form_id], [testId, form.id])
        assert.deepEqual(
          (await s.get(`/svc_api/forms/data/${form.id}`, { key: gina.key })).json.data.submissions.map((x: any) => x.data.message),
          ['hi'],
        )
        await refused('delete_submission', { submission_id: testId }, 1405, /list_submissions \{form_id\} lists a form's submissions/)
        // another account's submission is the same 1405
        const other = await s.user()
        const otherForm = (await s.post('/svc_api/forms/create', { key: other.key, json: { form_name: 'Theirs' } })).json.data
        const theirs = (await s.post(`/api/forms/submit/${otherForm.form_slug}`, { json: { message: 'not yours' } })).json.data.submission_id
        await refused('delete_submission', { submission_id: theirs }, 1405, /list_submissions/)
        assert.equal((await s.get(`/svc_api/forms/data/${otherForm.id}`, { key: other.key })).json.data.total, 1)
        const gone = await done('delete_form', { form_id: form.id })
        assert.equal(gone.structuredContent.form_id, form.id)
        assert.deepEqual((await s.get('/svc_api/forms/list', { key: gina.key })).json.data.forms, [])
        assert.equal((await s.post(new URL(form.submit_url).pathname, { json: { message: 'late' } })).json.error_code, 1611)
        await refused('delete_form', { form_id: form.id }, 1611, /list_submissions without form_id/)
        // an id of no form, of any shape, is the same 1611 on both engines
        await refused('delete_form', { form_id: form.form_slug }, 1611, /not the slug/)

        // images: the entitlement first, as upload_image
        await refused('list_images', {}, 1010, /.+/)
        await refused('delete_image', { public_token: 'x' }, 1010, /.+/)
        await svc(s, 'grant', gina.username, 'image-host')
        assert.match(textOf(await done('list_images', {})), /No images yet; upload_image/)
        const tokens: string[] = []
        for (const w of [3, 4]) {
          const png = await makeImage('png', { width: w, height: 2 })
          tokens.push((await done('upload_image', { base64: png.toString('base64'), file_name: `i${w}.png` })).structuredContent.image.public_token)
        }
        const first = await done('list_images', { per_page: 1 })
        assert.equal(first.structuredContent.total, 2)
        assert.equal(first.structuredContent.total_pages, 2)
        assert.equal(first.structuredContent.images.length, 1)
        assert.match(textOf(first), /images 1-1 of 2 shown; list_images \{page: 2, per_page: 1\} lists the next/)
        const second = await done('list_images', { page: 2, per_page: 1 })
        assert.deepEqual([...first.structuredContent.images, ...second.structuredContent.images].map((i: any) => i.public_token).sort(), [...tokens].sort())
        await refused('list_images', { per_page: 101 }, 1106, /argument "per_page"/)
        const url = new URL(first.structuredContent.images[0].public_url).pathname
        assert.equal((await s.get(url)).status, 200)
        await done('delete_image', { public_token: first.structuredContent.images[0].public_token })
        assert.equal((await s.get(url)).status, 404)
        assert.equal((await done('list_images', {})).structuredContent.total, 1)
        await refused('delete_image', { public_token: first.structuredContent.images[0].public_token }, 1405, /list_images lists your images/)
        await refused('delete_image', { public_token: '../x' }, 1405, /list_images/)
      } finally {
        await own.close()
      }
    })
  })
}
