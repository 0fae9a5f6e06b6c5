import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { mcpHttpClient, textOf } from '../support/mcp.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { svc } from '../support/images.js'
import { startDns, type TestDns } from '../support/dns.js'
import { verifyPassword } from '../../src/auth/passwords.js'
import type { McpServices } from '../../src/features/mcp/services.js'
import type { DomainsState } from '../../src/features/domains/index.js'

// The MCP tools that do what the dashboard does for a published site: visitor passwords and
// expiries (set_access, list_access, clear_access), deleting hosted data (delete_data) and
// custom domains (list_domains, add_domain, verify_domain, remove_domain). Each calls the
// service its REST route calls; each is driven through the SDK's own client.

type Result = { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent: any }

/** A visitor password no other text of the answers or the log could hold by chance. */
const PASSWORD = 'Visitor-Pw-7f3c9e2a'

for (const engine of ENGINES) {
  describe(`MCP tools for visitor access, hosted data and custom domains [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    // every line the server logs, at the most detailed level
    const logLines: string[] = []

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, logLines, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr, DOMAINS_PER_USER: '2', LOG_LEVEL: 'trace' } })
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    /** A user of its own with an SDK client, and helpers that call a tool and check how it answered. */
    async function agent() {
      const user = await s.user()
      const client: Client = await mcpHttpClient(s.url, user.key)
      const run = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as Result
      const done = async (name: string, args: Record<string, unknown> = {}) => {
        const r = await run(name, args)
        assert.ok(!r.isError, `${name}: ${textOf(r)}`)
        return r
      }
      const refused = async (name: string, args: Record<string, unknown>, code: number, text: RegExp) => {
        const r = await run(name, args)
        assert.equal(r.isError, true, `${name}: ${textOf(r)}`)
        assert.equal(r.structuredContent.error_code, code, textOf(r))
        assert.match(textOf(r), text)
        return r
      }
      return { user, client, run, done, refused }
    }

    it('the tools use the domains service the REST routes use, which drops the public caches', () => {
      const mcp = s.app.featureState('mcp') as McpServices
      assert.equal(mcp.domains, (s.app.featureState('domains') as DomainsState).service)
    })

    it('set_access protects a page and a project as PUT /api/access does; the password is never echoed, kept only hashed, never logged', async () => {
      const { user, client, done, refused } = await agent()
      try {
        const { tools } = await client.listTools()
        const hints = (name: string) => {
          const a = tools.find((t) => t.name === name)?.annotations
          return [a?.readOnlyHint, a?.destructiveHint, a?.idempotentHint]
        }
        assert.deepEqual(hints('list_access'), [true, false, true])
        assert.deepEqual(hints('set_access'), [false, false, false])
        assert.deepEqual(hints('clear_access'), [false, true, true])

        await done('publish_html', { name: 'landing', html: '<p>landing page</p>' })
        await done('deploy_files', { project: 'secret', files: [{ path: 'index.html', content: '<p>secret site</p>' }] })
        const page = `/${user.username}/landing.html`
        const site = `/${user.username}/secret/`
        const basic = { authorization: `Basic ${Buffer.from(`visitor:${PASSWORD}`).toString('base64')}` }
        assert.equal((await s.get(page)).status, 200)
        assert.match(textOf(await done('list_access')), /^No project or page has a visitor password or an expiry; set_access sets one\.$/)

        // the page by the name publish_html was given: ".html" is added, as publish_html adds it
        const set = await done('set_access', { name: 'landing', password: PASSWORD })
        assert.deepEqual(
          [set.structuredContent.access.name, set.structuredContent.access.password, set.structuredContent.access.expires_at],
          ['landing.html', true, null],
        )
        assert.equal(textOf(set), 'Saved. landing.html: visitors need a password, no expiry.')
        assert.doesNotMatch(JSON.stringify(set), new RegExp(PASSWORD))
        assert.equal((await s.get(page)).status, 401)
        const opened = await s.get(page, { headers: basic })
        assert.equal(opened.status, 200)
        assert.equal(opened.text, '<p>landing page</p>')
        // what the REST API lists is what the tool answered
        assert.deepEqual((await s.get('/api/access', { key: user.key })).json.data.access, [set.structuredContent.access])
        // kept as an Argon2id hash of the password, never the password
        const row = await s.deps.db.k.selectFrom('site_access').select('password_hash').where('name', '=', 'landing.html').executeTakeFirstOrThrow()
        assert.match(row.password_hash ?? '', /^\$argon2id\$/)
        assert.ok(!row.password_hash?.includes(PASSWORD))
        assert.equal(await verifyPassword(row.password_hash!, PASSWORD), true)

        // an expiry in the past: the project answers 410 to everyone
        const expired = await done('set_access', { name: 'secret', expires_at: '2020-01-01T00:00:00Z' })
        assert.deepEqual([expired.structuredContent.access.password, expired.structuredContent.access.expired], [false, true])
        assert.equal((await s.get(site)).status, 410)
        // null removes the expiry; the password comes with the same call
        await done('set_access', { name: 'secret', expires_at: null, password: PASSWORD })
        assert.equal((await s.get(site)).status, 401)
        assert.equal((await s.get(site, { headers: basic })).text, '<p>secret site</p>')
        const listed = await done('list_access')
        assert.deepEqual(
          listed.structuredContent.access.map((a: any) => [a.name, a.password, a.expires_at]),
          [
            ['landing.html', true, null],
            ['secret', true, null],
          ],
        )
        assert.match(
          textOf(listed),
          /^landing\.html: visitors need a password, no expiry\nsecret: visitors need a password, no expiry\nThe dashboard shows them: https?:\/\/\S+\/dashboard\/domains$/,
        )

        // refusals change nothing, and never repeat the password they were given
        const before = (await s.get('/api/access', { key: user.key })).json.data.access
        const refusals = [
          await refused('set_access', { name: 'landing' }, 1347, /send password, expires_at or both/),
          await refused('set_access', { name: 'landing', password: 'Zq9' }, 1106, /argument "password": .*4/),
          await refused('set_access', { name: 'nope', password: PASSWORD }, 1346, /list_sites lists your projects and pages/),
          await refused('set_access', { name: 'a/b', password: PASSWORD }, 1347, /must be a project or page name/),
          await refused('set_access', { name: 'landing', password: PASSWORD, expires_at: 'tomorrow' }, 1347, /expires_at must be an ISO 8601 time/),
          await refused('set_access', { name: 'landing', password: PASSWORD, shout: true }, 1106, /unknown argument "shout"/),
        ]
        for (const r of refusals) assert.doesNotMatch(JSON.stringify(r), new RegExp(`${PASSWORD}|Zq9`))
        assert.deepEqual((await s.get('/api/access', { key: user.key })).json.data.access, before)

        // clear_access opens the name at once; a name without a setting is 1348
        const cleared = await done('clear_access', { name: 'landing' })
        assert.equal(cleared.structuredContent.name, 'landing.html')
        assert.equal((await s.get(page)).status, 200)
        await refused('clear_access', { name: 'landing.html' }, 1348, /list_access lists the names/)
        assert.deepEqual(
          (await s.get('/api/access', { key: user.key })).json.data.access.map((a: any) => a.name),
          ['secret'],
        )

        // a read-only key lists the settings and changes none
        const { key } = await s.deps.apiKeys.create(user.id, { name: 'ro', readOnly: true })
        const ro = await mcpHttpClient(s.url, key)
        try {
          const names = (await ro.listTools()).tools.map((t) => t.name)
          assert.ok(names.includes('list_access') && names.includes('list_domains'))
          assert.ok(!names.includes('set_access') && !names.includes('clear_access') && !names.includes('add_domain'))
          const r = (await ro.callTool({ name: 'clear_access', arguments: { name: 'secret' } })) as Result
          assert.equal(r.structuredContent.error_code, 1440)
          assert.equal((await s.get(site)).status, 401)
        } finally {
          await ro.close()
        }
      } finally {
        await client.close()
      }
      // the password went through the server's log at its most detailed level nowhere
      assert.ok(logLines.length > 0)
      assert.ok(!logLines.some((l) => l.includes(PASSWORD)), 'a log line holds the password')
    })

    it('delete_data deletes a data file, or one version of it, as the hosted-data REST routes do', async () => {
      const { user, client, done, refused } = await agent()
      try {
        const { tools } = await client.listTools()
        const t = tools.find((x) => x.name === 'delete_data')
        assert.deepEqual([t?.annotations?.readOnlyHint, t?.annotations?.destructiveHint, t?.annotations?.idempotentHint], [false, true, true])
        assert.deepEqual(t?.inputSchema.required, ['file_id'])
        await refused('delete_data', { file_id: 'x' }, 1010, /.+/)
        await svc(s, 'grant', user.username, 'hosted-data')

        const file = (await done('create_data', { display_name: 'scores.json', content: '[1]' })).structuredContent.file
        await done('update_data', { file_id: file.id, content: '[2]' })
        await done('update_data', { file_id: file.id, content: '[3]' })
        const link = new URL(file.public_url).pathname
        assert.equal((await s.get(`${link}?v=1`)).status, 200)

        // one version: its own URL goes, the public URL keeps serving the default
        const one = await done('delete_data', { file_id: file.id, version: 1 })
        assert.deepEqual(
          one.structuredContent.file.versions.map((v: any) => [v.version, v.is_default]),
          [
            [2, false],
            [3, true],
          ],
        )
        assert.match(textOf(one), /^Deleted version 1 of scores\.json; versions left: 2, 3 \(default\)\. \S+ still serves version 3\.$/)
        assert.equal((await s.get(`${link}?v=1`)).status, 404)
        assert.deepEqual((await s.get(link)).json, [3])
        // the default version, one that does not exist, a file of no one: refused, nothing deleted
        await refused('delete_data', { file_id: file.id, version: 3 }, 1106, /default version cannot be deleted.*update_data makes a new one the default/)
        await refused('delete_data', { file_id: file.id, version: 9 }, 1106, /version 9 does not exist/)
        await refused('delete_data', { file_id: file.id, version: 0 }, 1106, /argument "version"/)
        await refused('delete_data', { file_id: 'no-such-file' }, 1405, /list_data lists your data files/)
        // a locked file keeps every version
        await svc(s, 'lock', 'hosted-data', file.id)
        await refused('delete_data', { file_id: file.id }, 1423, /Locked/)
        await refused('delete_data', { file_id: file.id, version: 2 }, 1423, /Locked/)
        await svc(s, 'unlock', 'hosted-data', file.id)
        assert.equal((await s.get(`${link}?v=2`)).status, 200)

        // the whole file: its public URL answers 404 at once
        const all = await done('delete_data', { file_id: file.id })
        assert.deepEqual(all.structuredContent, { success: true, file_id: file.id })
        assert.equal((await s.get(link)).status, 404)
        assert.equal((await s.get(`${link}?v=3`)).status, 404)
        assert.deepEqual((await done('list_data')).structuredContent.files, [])
        assert.equal((await s.get('/api/hosted-data/files/' + file.id, { cookie: await s.login(user.username, user.password) })).status, 404)
        await refused('delete_data', { file_id: file.id }, 1405, /list_data lists your data files/)
      } finally {
        await client.close()
      }
    })

    it('add_domain gives the TXT record to create; verify_domain makes the domain serve the project; remove_domain stops it', async () => {
      const { user, client, done, refused } = await agent()
      const at = (host: string) => s.get('/', { headers: { host } })
      try {
        const { tools } = await client.listTools()
        const hints = (name: string) => {
          const a = tools.find((t) => t.name === name)?.annotations
          return [a?.readOnlyHint, a?.destructiveHint, a?.idempotentHint]
        }
        assert.deepEqual(hints('list_domains'), [true, false, true])
        assert.deepEqual(hints('add_domain'), [false, false, false])
        assert.deepEqual(hints('verify_domain'), [false, false, true])
        assert.deepEqual(hints('remove_domain'), [false, true, true])

        await done('deploy_files', { project: 'site', files: [{ path: 'index.html', content: '<p>on my domain</p>' }] })
        const empty = await done('list_domains')
        assert.deepEqual([empty.structuredContent.domains, empty.structuredContent.limit], [[], 2])
        assert.match(textOf(empty), /^0 of 2 domains; add_domain adds one\n/)

        const host = `${user.username}.example.test`
        const added = await done('add_domain', { domain: `${host.toUpperCase()}.`, project: 'site' })
        const d = added.structuredContent.domain
        assert.deepEqual([d.domain, d.project, d.verified, d.site_url, added.structuredContent.held_by_other], [host, 'site', false, null, false])
        assert.equal(d.verification.type, 'TXT')
        assert.equal(d.verification.name, `_svc-challenge.${host}`)
        assert.match(d.verification.value, /^svc-verify=[0-9a-f]{32}$/)
        const record = `_svc-challenge.${host} TXT "${d.verification.value}"`
        assert.ok(textOf(added).includes(`Create this DNS record: ${record}`), textOf(added))
        assert.ok(textOf(added).includes(`verify_domain {domain: "${host}"}`), textOf(added))
        // the REST list shows the same domain, with the same record
        assert.deepEqual((await s.get('/api/domains', { key: user.key })).json.data.domains, [d])
        assert.ok(!(await at(host)).text.includes('on my domain'))

        // no record yet, then the wrong one: 1343 naming the record to create
        await refused(
          'verify_domain',
          { domain: host },
          1343,
          new RegExp(`no TXT record found.*Create the TXT record ${record.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
        )
        dns.txt.set(`_svc-challenge.${host}`, [d.verification.value])
        const verified = await done('verify_domain', { domain: host })
        assert.deepEqual([verified.structuredContent.domain.verified, verified.structuredContent.domain.site_url], [true, `https://${host}/`])
        assert.match(textOf(verified), new RegExp(`^Verified ${host}: it serves site at https://${host}/`))
        assert.equal((await at(host)).text, '<p>on my domain</p>')
        assert.match(textOf(await done('list_domains')), new RegExp(`^1 of 2 domains\\n${host} -> site: verified, https://${host}/\\n`))

        // refusals, each with its own code and next step, adding nothing
        await refused('add_domain', { domain: host, project: 'site' }, 1345, /already attached to project site/)
        await refused('add_domain', { domain: 'http://x.example.test', project: 'site' }, 1340, /not a bare host name/)
        await refused('add_domain', { domain: 'two.example.test', project: 'nope' }, 1346, /list_sites lists your projects/)
        await refused('add_domain', { domain: 'two.example.test', project: 'si\u0000te' }, 1106, /.+/)
        await refused('add_domain', { domain: 'two.example.test' }, 1106, /argument "project" is required/)
        await refused('verify_domain', { domain: 'other.example.test' }, 1344, /list_domains lists the domains you added/)
        await done('add_domain', { domain: 'two.example.test', project: 'site' })
        await refused('add_domain', { domain: 'three.example.test', project: 'site' }, 1341, /remove_domain removes a domain/)
        assert.deepEqual(
          (await s.get('/api/domains', { key: user.key })).json.data.domains.map((x: any) => x.domain),
          [host, 'two.example.test'],
        )

        // remove_domain: the host stops serving at once; a second call is 1344
        const removed = await done('remove_domain', { domain: host.toUpperCase() })
        assert.equal(removed.structuredContent.domain, host)
        assert.ok(!(await at(host)).text.includes('on my domain'))
        await refused('remove_domain', { domain: host }, 1344, /list_domains/)
        await done('remove_domain', { domain: 'two.example.test' })
        assert.deepEqual((await s.get('/api/domains', { key: user.key })).json.data.domains, [])
      } finally {
        await client.close()
      }
    })
  })
}
