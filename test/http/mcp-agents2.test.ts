import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { mcpHttpClient, textOf } from '../support/mcp.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { makeImage, svc } from '../support/images.js'
import { SUBMISSION_FIELD_BYTES, SUBMISSIONS_PAGE_DATA_BYTES } from '../../src/features/mcp/tools.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { MCP_BODY_LIMIT, RATE_LIMITED } from '../../src/features/mcp/limits.js'
import { NAME_RULE } from '../../src/features/sites/paths.js'

type Result = { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent: any }

/** A whole tool result's size as the client receives it (content and structured content). */
const resultBytes = (r: Result) => Buffer.byteLength(JSON.stringify(r))

for (const engine of ENGINES) {
  describe(`MCP: what an agent still tripped on [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let client: Client
    const call = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as Result
    const ok = async (name: string, args: Record<string, unknown> = {}) => {
      const r = await call(name, args)
      assert.ok(!r.isError, `${name}: ${textOf(r)}`)
      return r
    }

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      alice = await s.user()
      client = await mcpHttpClient(s.url, alice.key)
    })
    after(async () => {
      await client.close()
      await s.close()
    })

    it('list_submissions leaves long values out within a bounded total; get_submission reads one whole', async () => {
      const form = (await ok('create_form', { form_name: 'Letters' })).structuredContent.form
      const path = new URL(form.submit_url).pathname
      const long = (i: number) => `${i}`.padEnd(60_000, 'x')
      // ten visitors' long letters (a form takes ten a minute from one address)
      for (let i = 0; i < 10; i++) assert.equal((await s.post(path, { json: { name: `v${i}`, letter: long(i) } })).status, 200)

      for (const per_page of [10, 100]) {
        const r = await ok('list_submissions', { form_id: form.id, per_page })
        assert.equal(r.structuredContent.submissions.length, 10)
        // 1.2 MB before: each letter in the structured content and again in the JSON text
        assert.ok(resultBytes(r) < 16_000, `${resultBytes(r)} bytes`)
        for (const sub of r.structuredContent.submissions) {
          assert.equal(sub.data.letter, null)
          assert.deepEqual(sub.omitted_fields, ['letter'])
          assert.match(sub.data.name, /^v\d$/)
        }
        const newest = r.structuredContent.submissions[0]
        assert.ok(textOf(r).includes(`get_submission {submission_id: "${newest.id}"} reads one whole`), textOf(r))
      }

      const listed = (await ok('list_submissions', { form_id: form.id })).structuredContent.submissions
      const one = await ok('get_submission', { submission_id: listed[3].id })
      assert.equal(one.structuredContent.form_id, form.id)
      assert.equal(one.structuredContent.submission.id, listed[3].id)
      assert.equal(one.structuredContent.submission.data.letter, long(6))
      assert.equal(one.structuredContent.submission.data.name, 'v6')
      // the same submission the REST list answers
      const rest = (await s.get(`/svc_api/forms/data/${form.id}?per_page=10`, { key: alice.key })).json.data.submissions
      assert.deepEqual(one.structuredContent.submission.data, rest[3].data)

      // a value of exactly the bound is listed; one byte more is not
      const edge = (await ok('create_form', { form_name: 'Edge' })).structuredContent.form
      const fits = 'y'.repeat(SUBMISSION_FIELD_BYTES - 2) // its JSON text: two quotes more
      await s.post(new URL(edge.submit_url).pathname, { json: { a: fits, b: `${fits}y` } })
      const [e] = (await ok('list_submissions', { form_id: edge.id })).structuredContent.submissions
      assert.equal(e.data.a, fits)
      assert.equal(e.data.b, null)
      assert.deepEqual(e.omitted_fields, ['b'])

      // many short fields: past the page's budget a submission's data is {} (data_omitted)
      const wide = (await ok('create_form', { form_name: 'Wide' })).structuredContent.form
      // 50 fields (what a form without fields_config takes) of values just within the bound
      const fields = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}`, 'z'.repeat(500)]))
      for (let i = 0; i < 3; i++) {
        const sent = await s.post(new URL(wide.submit_url).pathname, { json: fields })
        assert.equal(sent.status, 200, sent.text)
      }
      const w = await ok('list_submissions', { form_id: wide.id })
      assert.ok(Buffer.byteLength(JSON.stringify(w.structuredContent.submissions.map((x: any) => x.data))) <= SUBMISSIONS_PAGE_DATA_BYTES)
      const omittedWhole = w.structuredContent.submissions.filter((x: any) => x.data_omitted === true)
      assert.ok(omittedWhole.length >= 2, JSON.stringify(w.structuredContent.submissions.map((x: any) => Object.keys(x.data).length)))
      for (const x of omittedWhole) assert.deepEqual(x.data, {})
      const whole = await ok('get_submission', { submission_id: omittedWhole[0].id })
      assert.deepEqual(whole.structuredContent.submission.data, fields)

      // another account's submission, or none: 1405 naming the list that gives the ids
      const bob = await s.user()
      const other = await mcpHttpClient(s.url, bob.key)
      try {
        const r = (await other.callTool({ name: 'get_submission', arguments: { submission_id: listed[0].id } })) as Result
        assert.equal(r.isError, true)
        assert.equal(r.structuredContent.error_code, 1405)
        assert.match(r.structuredContent.solution, /list_submissions \{form_id\}/)
      } finally {
        await other.close()
      }
    })

    it('a counter made public later keeps its count; kv_set without value changes only the flags', async () => {
      const pub = (key: string) => s.get(`/svc_api/data/public/${alice.username}/${key}`)
      const incr = await ok('kv_incr', { key: 'visits', by: 41, public_incr: true })
      assert.equal(incr.structuredContent.entry.is_public, false)
      // the page can add but not read: the answer says so and names the call that fixes it
      assert.match(textOf(incr), /kv_set \{key: "visits", is_public: true\} makes it readable, the count kept/)
      assert.equal((await pub('visits')).status, 404)

      const made = await ok('kv_set', { key: 'visits', is_public: true })
      assert.equal(made.structuredContent.entry.value, 41)
      assert.equal(made.structuredContent.entry.data_type, 'number')
      assert.equal(made.structuredContent.entry.public_incr, true)
      assert.ok(made.structuredContent.public_incr_url, JSON.stringify(made.structuredContent))
      assert.equal((await pub('visits')).json.data.value, 41)
      // a visitor's +1, then the owner unmarks the counter: the count stays
      assert.equal((await s.post(`/svc_api/data/public/${alice.username}/visits/incr`)).json.data.value, 42)
      const unmarked = await ok('kv_set', { key: 'visits', public_incr: false })
      assert.equal(unmarked.structuredContent.entry.value, 42)
      assert.equal(unmarked.structuredContent.entry.public_incr, undefined)
      assert.equal(unmarked.structuredContent.entry.is_public, true)
      assert.equal((await s.post(`/svc_api/data/public/${alice.username}/visits/incr`)).status, 404)
      assert.equal((await s.get('/svc_api/data/get?key=visits', { key: alice.key })).json.data.value, 42)

      // kv_incr takes is_public too: a new counter readable from its first call
      const likes = await ok('kv_incr', { key: 'likes', by: 0, public_incr: true, is_public: true })
      assert.equal(likes.structuredContent.entry.is_public, true)
      assert.equal((await pub('likes')).json.data.value, 0)

      // refused, nothing changed: a text entry made a counter, a missing key, no flag at all, a type without a value
      await ok('kv_set', { key: 'motto', value: 'hi', data_type: 'text' })
      const refused = async (args: Record<string, unknown>, code: number, re: RegExp) => {
        const r = await call('kv_set', args)
        assert.equal(r.isError, true, textOf(r))
        assert.equal(r.structuredContent.error_code, code)
        assert.match(textOf(r), re)
      }
      await refused({ key: 'motto', public_incr: true }, 1106, /public counter is a number entry, and motto is a text entry/)
      await refused({ key: 'nothing', is_public: true }, 1604, /kv_set \{key: "nothing", value: \.\.\.\} creates it/)
      await refused({ key: 'motto' }, 1106, /"value" is required/)
      await refused({ key: 'motto', data_type: 'json', is_public: true }, 1106, /"data_type": changing the type needs a value/)
      const motto = (await s.get('/svc_api/data/get?key=motto', { key: alice.key })).json.data
      assert.deepEqual([motto.value, motto.is_public, motto.public_incr, motto.version], ['hi', false, undefined, 1])
      assert.equal((await s.get('/svc_api/data/get?key=nothing', { key: alice.key })).status, 404)
    })

    it('tools/list says each thing once: no schema boilerplate, the refusal fields and the name rule not repeated per tool', async () => {
      const { tools } = await client.listTools()
      const text = JSON.stringify(tools)
      // an agent's client receives this on every session: about 82 KB before, with these repeated in every tool
      assert.ok(Buffer.byteLength(text) < 64_000, `${Buffer.byteLength(text)} bytes`)
      assert.doesNotMatch(text, /\$schema/)
      assert.doesNotMatch(text, /9007199254740991/)
      assert.doesNotMatch(text, /"additionalProperties":\{\}/)
      assert.equal(text.split(JSON.stringify(NAME_RULE).slice(1, -1)).length - 1, 1, 'the project name rule, stated by deploy_files alone')
      for (const t of tools) {
        const out = t.outputSchema as { properties: Record<string, unknown> }
        for (const field of ['error_code', 'error_type', 'message', 'solution']) assert.equal(out.properties[field], undefined, `${t.name}: ${field}`)
        assert.equal(t.annotations?.title, undefined, t.name)
      }
      // what the model is given of each tool (name, description, input schema)
      const modelFacing = tools.reduce((n, t) => n + Buffer.byteLength(JSON.stringify([t.name, t.description, t.inputSchema])), 0)
      assert.ok(modelFacing < 29_000, `${modelFacing} bytes`)
      // a refusal still meets its tool's schema, which the SDK client checks on every result
      const r = await call('read_file', { project: 'none-such', path: 'index.html' })
      assert.equal(r.isError, true)
      assert.equal(r.structuredContent.error_code, 1312)
    })

    it("every time in a tool answer is ISO 8601 in UTC; the user's own data is left as sent", async () => {
      await svc(s, 'grant', alice.username, 'image-host')
      await svc(s, 'grant', alice.username, 'hosted-data')
      const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
      // every field named as a time, outside the user's own data, in the structured content and its JSON text
      const times = (v: unknown, where: string, out: Array<[string, unknown]> = []): Array<[string, unknown]> => {
        if (Array.isArray(v)) v.forEach((x, i) => times(x, `${where}[${i}]`, out))
        else if (v !== null && typeof v === 'object')
          for (const [k, x] of Object.entries(v)) {
            if (['value', 'data', 'content'].includes(k)) continue
            if (/(_at|_time)$|^modified$/.test(k)) out.push([`${where}.${k}`, x])
            else times(x, `${where}.${k}`, out)
          }
        return out
      }
      const seen: string[] = []
      const timed = async (name: string, args: Record<string, unknown> = {}) => {
        const r = await call(name, args)
        assert.deepEqual(JSON.parse(r.content[1].text), r.structuredContent, name)
        for (const [where, v] of times(r.structuredContent, name)) {
          if (v !== null) assert.match(typeof v === 'string' ? v : JSON.stringify(v), ISO_UTC, `${where}: ${JSON.stringify(v)}`)
          seen.push(where.replace(/\[\d+\]/g, '[]'))
        }
        return r
      }
      await timed('publish_html', { name: 'when', html: '<p>when</p>' })
      await timed('deploy_files', { project: 'timed', files: [{ path: 'index.html', content: '<p>t</p>' }] })
      await timed('list_sites')
      await timed('get_site', { name: 'timed' })
      await timed('get_site', { name: 'when.html' })
      const deploys = await timed('list_deploys', { project: 'timed' })
      const live = deploys.structuredContent.deploys[0]
      assert.ok(textOf(deploys).includes(`${live.id} ${live.created_at} `), textOf(deploys))
      await timed('kv_set', { key: 'meeting', value: { created_at: 5, at_time: '2026-01-01 10:00:00' }, ttl: 3600 })
      const entry = (await timed('kv_get', { key: 'meeting' })).structuredContent.entry
      assert.deepEqual(entry.value, { created_at: 5, at_time: '2026-01-01 10:00:00' })
      // the same instant the REST API answers in its own format (ISO 8601 at +08:00)
      const rest = (await s.get('/svc_api/data/get?key=meeting', { key: alice.key })).json.data
      assert.match(rest.updated_at, /\+08:00$/)
      assert.equal(entry.updated_at, new Date(rest.updated_at.replace(/(\.\d{3})\d+/, '$1')).toISOString())
      assert.equal(entry.expires_at, new Date(rest.expires_at.replace(/(\.\d{3})\d+/, '$1')).toISOString())
      await timed('kv_incr', { key: 'hits' })
      await timed('kv_list')
      const form = (await timed('create_form', { form_name: 'When' })).structuredContent.form
      assert.equal((await s.post(new URL(form.submit_url).pathname, { json: { meeting_at: '2026-01-01 10:00:00' } })).status, 200)
      // the forms list's last submission, which the REST list answers as Beijing time without a zone
      const forms = (await timed('list_submissions')).structuredContent.forms
      const restForm = (await s.get('/svc_api/forms/list', { key: alice.key })).json.data.forms.find((f: any) => f.id === form.id)
      assert.match(restForm.created_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      const mine = forms.find((f: any) => f.id === form.id)
      assert.equal(mine.created_at.slice(0, 19), new Date(`${restForm.created_at.replace(' ', 'T')}+08:00`).toISOString().slice(0, 19))
      assert.match(mine.last_submission_at, ISO_UTC)
      const subs = await timed('list_submissions', { form_id: form.id })
      const sub = subs.structuredContent.submissions[0]
      assert.deepEqual(sub.data, { meeting_at: '2026-01-01 10:00:00' })
      const one = await timed('get_submission', { submission_id: sub.id })
      assert.ok(textOf(one).includes(`(${one.structuredContent.submission.created_at})`), textOf(one))
      await timed('upload_image', { base64: (await makeImage('png')).toString('base64'), file_name: 'dot.png' })
      await timed('list_images')
      await timed('create_data', { display_name: 'when.json', content: '{"a":1}' })
      await timed('list_data')
      await timed('set_access', { name: 'timed', expires_at: Date.parse('2030-01-01T00:00:00Z') })
      assert.equal((await timed('list_access')).structuredContent.access[0].expires_at, '2030-01-01T00:00:00.000Z')
      // a refusal's times too (the KV conflict's current_updated_at)
      const conflict = await timed('kv_set', { key: 'meeting', value: 1, expected_version: 9 })
      assert.equal(conflict.isError, true)
      for (const where of [
        'publish_html.created_at',
        'list_sites.pages[].created_at',
        'get_site.files[].modified',
        'list_deploys.deploys[].created_at',
        'kv_get.entry.expires_at',
        'list_submissions.forms[].last_submission_at',
        'get_submission.submission.created_at',
        'list_images.images[].created_at',
        'list_data.files[].updated_at',
        'kv_set.details.current_updated_at',
      ])
        assert.ok(seen.includes(where), `${where} not among ${[...new Set(seen)].join(', ')}`)
    })

    it("a refusal's solution names the tools: deploy_files publishes, so 1313 names no publish step", async () => {
      const r = await call('deploy_files', { project: 'newproj', files: [{ path: 'about.html', content: '<p>about</p>' }] })
      assert.equal(r.isError, true)
      assert.equal(r.structuredContent.error_code, 1313)
      assert.match(r.structuredContent.solution, /root-level index\.html in the same deploy_files call/)
      assert.doesNotMatch(textOf(r), /then publish|svc publish/)
      // the rule files' own refusal names the tool that sends them again
      await ok('deploy_files', { project: 'ruled', files: [{ path: 'index.html', content: '<p>x</p>' }] })
      const bad = await call('deploy_files', { project: 'ruled', files: [{ path: '_redirects', content: 'nonsense\n' }] })
      assert.equal(bad.structuredContent.error_code, 1314)
      assert.match(bad.structuredContent.solution, /with deploy_files again/)
      assert.doesNotMatch(textOf(bad), /publish again/)
    })
  })

  describe(`MCP and the key's rate limits [${engine}]`, () => {
    const PER_MINUTE = 4
    let s: TestServer
    before(async () => {
      const low = { minute: PER_MINUTE, hour: 1000, day: 10000, concurrent: 10 }
      s = await startServer({ engine, env: { RATE_LIMITS: JSON.stringify({ default: low, authenticated: low, vip: low }) } })
    })
    after(async () => {
      await s.close()
    })

    it('initialize and notifications are not counted; a refused tools/call is a tool result with 1204 and retry_after', async () => {
      const u = await s.user()
      // connecting is initialize and notifications/initialized: two POSTs the limit does not see
      const client = await mcpHttpClient(s.url, u.key)
      try {
        const raw = await s.post('/mcp', {
          key: u.key,
          json: {
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
          },
          headers: { accept: 'application/json, text/event-stream' },
        })
        assert.equal(raw.status, 200)
        assert.equal(raw.headers['x-ratelimit-remaining'], String(PER_MINUTE))
        for (let i = 0; i < PER_MINUTE; i++) {
          const r = (await client.callTool({ name: 'kv_incr', arguments: { key: 'n' } })) as Result
          assert.ok(!r.isError, textOf(r))
        }
        // the SDK returns it (no "Streamable HTTP error" thrown): the agent reads when to retry
        const r = (await client.callTool({ name: 'kv_incr', arguments: { key: 'n' } })) as Result
        assert.equal(r.isError, true)
        assert.equal(r.structuredContent.success, false)
        assert.equal(r.structuredContent.error_code, 1204)
        assert.ok(Number.isInteger(r.structuredContent.retry_after) && r.structuredContent.retry_after >= 1, JSON.stringify(r.structuredContent))
        assert.match(
          textOf(r),
          new RegExp(`^Error 1204 \\(QUOTA_ERROR\\): Rate limit exceeded \\(per-minute limit ${PER_MINUTE}\\)\\. Retry after \\d+ seconds`),
        )
        // the refused call ran nothing (read by the owner's session, whose limits are its own)
        const cookie = await s.login(u.username, u.password)
        assert.equal((await s.get('/svc_api/data/get?key=n', { cookie })).json.data.value, PER_MINUTE)
        // a notification still goes through, uncounted (202, no body)
        const note = await s.post('/mcp', {
          key: u.key,
          json: { jsonrpc: '2.0', method: 'notifications/initialized' },
          headers: { accept: 'application/json, text/event-stream' },
        })
        assert.equal(note.status, 202)
        // the REST API keeps its 429, headers and body
        const rest = await s.get('/svc_api/data/list', { key: u.key })
        assert.equal(rest.status, 429)
        assert.equal(rest.json.error_code, 1204)
        assert.ok(rest.headers['retry-after'])
        assert.equal(rest.headers['x-ratelimit-remaining'], '0')
        // tools/list counts; refused, it is a JSON-RPC error the SDK client hands over as it is
        // (McpError with the message and data), not an HTTP 429 it would turn into a transport failure
        await assert.rejects(client.listTools(), (e: unknown) => {
          assert.ok(e instanceof McpError, String(e))
          assert.equal(e.code, RATE_LIMITED)
          assert.match(
            e.message,
            new RegExp(
              `^MCP error ${RATE_LIMITED}: Error 1204 \\(QUOTA_ERROR\\): Rate limit exceeded \\(per-minute limit ${PER_MINUTE}\\)\\. Retry after \\d+ seconds`,
            ),
          )
          const data = e.data as Record<string, unknown>
          assert.equal(data.error_code, 1204)
          assert.ok(Number.isInteger(data.retry_after) && (data.retry_after as number) >= 1, JSON.stringify(data))
          return true
        })
        const headers = { accept: 'application/json, text/event-stream' }
        const list = await s.post('/mcp', { key: u.key, json: { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, headers })
        assert.equal(list.status, 200)
        assert.ok(Number(list.headers['retry-after']) >= 1, JSON.stringify(list.headers))
        assert.equal(list.headers['x-ratelimit-remaining'], '0')
        assert.deepEqual([list.json.jsonrpc, list.json.id, list.json.error.code, list.json.error.data.error_code], ['2.0', 2, RATE_LIMITED, 1204])
        // a batch of one is answered as its one message, as the SDK answers it
        const batchCall = await s.post('/mcp', {
          key: u.key,
          json: [{ jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'kv_incr', arguments: { key: 'n' } } }],
          headers,
        })
        assert.equal(batchCall.status, 200)
        assert.deepEqual([batchCall.json.id, batchCall.json.result.isError, batchCall.json.result.structuredContent.error_code], ['c', true, 1204])
        const batchList = await s.post('/mcp', { key: u.key, json: [{ jsonrpc: '2.0', id: 3, method: 'tools/list' }], headers })
        assert.equal(batchList.status, 200)
        assert.deepEqual([batchList.json.id, batchList.json.error.code], [3, RATE_LIMITED])
        // a body with no request to answer keeps the REST API's 429 and error body
        const noId = await s.post('/mcp', { key: u.key, json: { hello: 'world' }, headers })
        assert.equal(noId.status, 429)
        assert.equal(noId.json.error_code, 1204)
        assert.equal((await s.get('/svc_api/data/get?key=n', { cookie })).json.data.value, PER_MINUTE)
      } finally {
        await client.close()
      }
    })

    it('a body /mcp cannot read, too large or not JSON, is counted as before', async () => {
      const u = await s.user()
      const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }
      const broken = await s.post('/mcp', { key: u.key, body: '{"jsonrpc": "2.0", "id": 1, "method": "tools/li', headers })
      assert.equal(broken.status, 400)
      assert.equal(broken.headers['x-ratelimit-remaining'], String(PER_MINUTE - 1))
      const huge = await s.post('/mcp', { key: u.key, body: JSON.stringify({ pad: 'x'.repeat(MCP_BODY_LIMIT) }), headers })
      assert.equal(huge.status, 413)
      assert.equal(huge.json.error_code, 1443)
      assert.equal(huge.headers['x-ratelimit-remaining'], String(PER_MINUTE - 2))
      // a foreign Host, refused before any tool
      const foreign = await s.post('/mcp', { key: u.key, json: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { ...headers, host: 'evil.example' } })
      assert.equal(foreign.status, 403)
      assert.equal(foreign.headers['x-ratelimit-remaining'], String(PER_MINUTE - 3))
    })

    it('a request without a valid key is still counted against its address', async () => {
      const body = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }
      const statuses: number[] = []
      for (let i = 0; i < PER_MINUTE + 1; i++)
        statuses.push((await s.post('/mcp', { key: 'svc_wrong', json: body, headers: { accept: 'application/json, text/event-stream' } })).status)
      assert.deepEqual(statuses, [...Array(PER_MINUTE).fill(401), 429])
    })
  })
}
