import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { expectError, expectErrorInBoth } from '../support/errors.js'
import { startDns, verifiedDomain, type TestDns } from '../support/dns.js'
import { mcpHttpClient } from '../support/mcp.js'

// Custom domains: attach, verify through a real DNS server on loopback (dns2), serve the
// project with its site rules on that Host, answer the TLS ask endpoint, and stop at once
// when removed. Bad input each gets its own error and changes nothing.
for (const engine of ENGINES) {
  describe(`custom domains [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let alice: Awaited<ReturnType<TestServer['user']>>
    let bob: Awaited<ReturnType<TestServer['user']>>
    const ASK = '/.well-known/svc/tls-allowed?domain='

    /** A request to the service (HTTPS) with this Host. */
    const at = (host: string, p: string, headers: Record<string, string> = {}) => s.get(p, { headers: { host, ...headers } })

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr, DOMAINS_PER_USER: '2' } })
      alice = await s.user({ name: 'alice' })
      bob = await s.user({ name: 'bob' })
      const up = await batchUpload(s, { key: alice.key }, 'site', [
        { filename: 'index.html', data: '<p>alice home</p>' },
        { filename: 'about.html', data: '<p>about alice</p>' },
        { filename: 'docs/index.html', data: '<p>docs</p>' },
        { filename: '_redirects', data: '/old /about 301\n/app/* /index.html 200\n' },
        { filename: '_headers', data: '/*\n  X-Site: yes\n' },
      ])
      assert.equal(up.status, 200, up.text)
      assert.equal((await s.post('/api/folders/site/publish', { key: alice.key })).status, 200)
      const b = await batchUpload(s, { key: bob.key }, 'blog', [{ filename: 'index.html', data: '<p>bob blog</p>' }])
      assert.equal(b.status, 200, b.text)
      assert.equal((await s.post('/api/folders/blog/publish', { key: bob.key })).status, 200)
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it('refuses bad domains and unknown projects, each with its own error, and stores nothing', async () => {
      const add = (json: unknown) => s.post('/api/domains', { key: alice.key, json })
      for (const domain of [
        '',
        'http://www.example.test',
        'www.example.test:443',
        '1.2.3.4',
        'example',
        'bad_label.test',
        '-a.test',
        'a..test',
        `${'a'.repeat(64)}.test`,
      ]) {
        expectError(await add({ domain, project: 'site' }), 400, 1340)
      }
      // the service's own names
      for (const domain of ['alice.localhost', 'localhost']) expectError(await add({ domain, project: 'site' }), 400, 1340)
      expectError(await add({ domain: 'www.example.test' }), 400, 1340)
      expectError(await add({ domain: 'www.example.test', project: 'nope' }), 404, 1346)
      // U+0000 cannot be stored (decision 10): the same 1106 on both engines
      for (const project of ['\u0000', 'si\u0000te']) expectError(await add({ domain: 'www.example.test', project }), 400, 1106)
      expectError(await s.post('/api/domains', { key: alice.key, body: '[1]', headers: { 'content-type': 'application/json' } }), 400, 1106)
      expectError(await s.post('/api/domains', { json: { domain: 'www.example.test', project: 'site' } }), 401, 1001)
      const list = await s.get('/api/domains', { key: alice.key })
      assert.equal(list.status, 200)
      assert.deepEqual(list.json.data.domains, [])
      assert.equal(list.json.data.limit, 2)
    })

    it("says each refusal of a bad domain, project or body whole in the answer's language", async () => {
      const add = (json: unknown) => (headers: Record<string, string>) => s.post('/api/domains', { key: alice.key, json, headers })
      // [body, Chinese detail, English detail, names nothing]
      const invalid: Array<[unknown, string, string, boolean]> = [
        [{ domain: '1.2.3.4', project: 'site' }, 'IP 地址不是域名', 'an IP address is not a domain', true],
        [{ domain: 'example', project: 'site' }, '自定义域名至少需要两段（如 example.com）', 'a custom domain needs at least two labels (example.com)', false],
        [
          { domain: 'http://www.example.test', project: 'site' },
          '"http://www.example.test" 不是单纯的主机名（不能带协议、端口或路径）',
          '"http://www.example.test" is not a bare host name (no scheme, port or path)',
          false,
        ],
        [{ domain: 'bad_label.test', project: 'site' }, '"bad_label.test" 不是有效的主机名', '"bad_label.test" is not a valid host name', false],
        [{ project: 'site' }, '缺少 domain，须为主机名，如 www.example.com', 'send "domain", a host name such as www.example.com', false],
        [{ domain: 'alice.localhost', project: 'site' }, 'alice.localhost 属于本服务', 'alice.localhost belongs to this service', false],
        [{ domain: 'www.example.test' }, '缺少 project，须为你的一个文件夹项目的名称', 'send "project", the name of one of your folder projects', false],
      ]
      for (const [json, zh, en, wordless] of invalid) await expectErrorInBoth(add(json), 400, 1340, `域名无效：${zh}`, `Invalid domain: ${en}`, wordless)
      await expectErrorInBoth(add({ domain: 'www.example.test', project: 'nope' }), 404, 1346, '没有名为 nope 的项目', 'No project named nope')
      await expectErrorInBoth(
        (headers) => s.post('/api/domains', { key: alice.key, body: '[1]', headers: { 'content-type': 'application/json', ...headers } }),
        400,
        1106,
        '参数错误：请求体须为 JSON 对象',
        'Invalid parameter: the body must be a JSON object',
      )
      assert.deepEqual((await s.get('/api/domains', { key: alice.key })).json.data.domains, [])
    })

    it('adds a domain with the TXT record to create; the host does not serve before verification', async () => {
      const r = await s.post('/api/domains', { key: alice.key, json: { domain: 'WWW.Example.TEST.', project: 'site' } })
      assert.equal(r.status, 200, r.text)
      const d = r.json.data
      assert.equal(d.domain, 'www.example.test')
      assert.equal(d.verified, false)
      assert.equal(d.site_url, null)
      assert.equal(d.verification.type, 'TXT')
      assert.equal(d.verification.name, '_svc-challenge.www.example.test')
      assert.match(d.verification.value, /^svc-verify=[0-9a-f]{32}$/)
      expectError(await s.post('/api/domains', { key: alice.key, json: { domain: 'www.example.test', project: 'site' } }), 409, 1345)

      // the service's own routes answer an unknown Host as before; none of them is the project
      const home = await at('www.example.test', '/')
      assert.notEqual(home.status, 200)
      assert.ok(!home.text.includes('alice home'))
      assert.equal((await at('www.example.test', '/about.html')).status, 404)
      assert.equal((await s.get(ASK + 'www.example.test')).status, 404)
    })

    it('verifies only with the right TXT record', async () => {
      const verify = (headers: Record<string, string> = {}) => s.post('/api/domains/www.example.test/verify', { key: alice.key, headers })
      const value = (await s.get('/api/domains', { key: alice.key })).json.data.domains[0].verification.value as string
      const rec = '_svc-challenge.www.example.test'
      const failing = (zh: string, en: string) => expectErrorInBoth(verify, 400, 1343, `域名验证失败：${zh}`, `Domain verification failed: ${en}`)
      await failing(`${rec} 处没有找到 TXT 记录`, `no TXT record found at ${rec}`)
      dns.txt.set(rec, ['svc-verify=00000000000000000000000000000000', 'v=spf1 -all'])
      await failing(`${rec} 处有 TXT 记录，但不是 ${value}`, `TXT found, but not ${value} at ${rec}`)
      dns.failing.add(rec)
      await failing(`${rec} 的 DNS 查询失败（ESERVFAIL），请稍后再试`, `the DNS lookup of ${rec} failed (ESERVFAIL); try again later`)
      dns.failing.clear()
      expectError(await s.post('/api/domains/other.example.test/verify', { key: alice.key }), 404, 1344)
      expectError(await s.post('/api/domains/www.example.test/verify', { key: bob.key }), 404, 1344)

      dns.txt.set('_svc-challenge.www.example.test', ['v=spf1 -all', value])
      const ok = await verify()
      assert.equal(ok.status, 200, ok.text)
      assert.equal(ok.json.data.verified, true)
      assert.equal(ok.json.data.site_url, 'https://www.example.test/')
      assert.ok(dns.asked.includes('_svc-challenge.www.example.test'))
    })

    it('serves the project on the verified host, with its site rules', async () => {
      const home = await at('www.example.test', '/')
      assert.equal(home.status, 200, home.text)
      assert.equal(home.text, '<p>alice home</p>')
      assert.equal(home.header('x-site'), 'yes')
      assert.doesNotMatch(home.header('content-security-policy') ?? '', /sandbox/)
      assert.equal((await at('www.example.test:8080', '/about')).text, '<p>about alice</p>')
      const old = await at('www.example.test', '/old?x=1')
      assert.equal(old.status, 301)
      assert.equal(old.header('location'), '/about?x=1')
      const docs = await at('www.example.test', '/docs')
      assert.equal(docs.status, 301)
      assert.equal(docs.header('location'), '/docs/')
      assert.equal((await at('www.example.test', '/app/x/y')).text, '<p>alice home</p>')
      assert.equal((await at('www.example.test', '/missing')).status, 404)
      // only alice's project: no other project, user, API or page on that host
      assert.equal((await at('www.example.test', '/svc_api/me', { authorization: `Bearer ${alice.key}` })).status, 404)
      assert.equal((await at('www.example.test', '/bob/blog/')).status, 404)
      assert.equal((await s.request('POST', '/', { headers: { host: 'www.example.test' }, body: 'x' })).status, 405)
      // the second request comes from the cache: same answer
      assert.equal((await at('www.example.test', '/')).text, '<p>alice home</p>')
      assert.equal((await s.get(ASK + 'www.example.test')).status, 200)
      assert.equal((await s.get(ASK + 'nope.example.test')).status, 404)
    })

    it("another account cannot take a verified domain without its own token, and the limit counts each user's domains", async () => {
      // bob may add it (decision 90), but alice's record in DNS proves nothing for him
      const r = await s.post('/api/domains', { key: bob.key, json: { domain: 'www.example.test', project: 'blog' } })
      assert.equal(r.status, 200, r.text)
      expectError(await s.post('/api/domains/www.example.test/verify', { key: bob.key }), 400, 1343)
      assert.equal((await at('www.example.test', '/')).text, '<p>alice home</p>')
      assert.equal((await s.request('DELETE', '/api/domains/www.example.test', { key: bob.key })).status, 200)
      assert.equal((await at('www.example.test', '/')).text, '<p>alice home</p>')
      assert.equal((await s.post('/api/domains', { key: alice.key, json: { domain: 'b.example.test', project: 'site' } })).status, 200)
      expectError(await s.post('/api/domains', { key: alice.key, json: { domain: 'c.example.test', project: 'site' } }), 403, 1341)
      assert.equal((await s.get('/api/domains', { key: alice.key })).json.data.domains.length, 2)
    })

    it('a removed domain stops at once, and its name is free again', async () => {
      expectError(await s.request('DELETE', '/api/domains/www.example.test', { key: bob.key }), 404, 1344)
      assert.equal((await at('www.example.test', '/')).status, 200)
      const del = await s.request('DELETE', '/api/domains/www.example.test', { key: alice.key })
      assert.equal(del.status, 200, del.text)
      const after = await at('www.example.test', '/')
      assert.notEqual(after.status, 200)
      assert.ok(!after.text.includes('alice home'))
      assert.equal((await at('www.example.test', '/about')).status, 404)
      assert.equal((await s.get(ASK + 'www.example.test')).status, 404)
      expectError(await s.request('DELETE', '/api/domains/www.example.test', { key: alice.key }), 404, 1344)
      // bob can now attach and verify it with his own token
      const add = await s.post('/api/domains', { key: bob.key, json: { domain: 'www.example.test', project: 'blog' } })
      assert.equal(add.status, 200, add.text)
      dns.txt.set('_svc-challenge.www.example.test', [add.json.data.verification.value])
      assert.equal((await s.post('/api/domains/www.example.test/verify', { key: bob.key })).status, 200)
      assert.equal((await at('www.example.test', '/')).text, '<p>bob blog</p>')
    })

    it('a name removed and added again by the same account keeps its token; another account gets its own (decision 112)', async () => {
      const add = async (key: string, project: string) => {
        const r = await s.post('/api/domains', { key, json: { domain: 'keep.example.test', project } })
        assert.equal(r.status, 200, r.text)
        return r.json.data.verification.value as string
      }
      const remove = async (key: string) => assert.equal((await s.request('DELETE', '/api/domains/keep.example.test', { key })).status, 200)
      const first = await add(alice.key, 'site')
      dns.txt.set('_svc-challenge.keep.example.test', [first])
      assert.equal((await s.post('/api/domains/keep.example.test/verify', { key: alice.key })).status, 200)
      await remove(alice.key)
      // the record set up once still proves the name: no DNS change needed
      assert.equal(await add(alice.key, 'site'), first)
      const again = await s.post('/api/domains/keep.example.test/verify', { key: alice.key })
      assert.equal(again.status, 200, again.text)
      assert.equal((await at('keep.example.test', '/')).text, '<p>alice home</p>')
      // bob's token for the name is his own, kept as well, and alice's record proves nothing for him
      const bobs = await add(bob.key, 'blog')
      assert.notEqual(bobs, first)
      expectError(await s.post('/api/domains/keep.example.test/verify', { key: bob.key }), 400, 1343)
      await remove(bob.key)
      assert.equal(await add(bob.key, 'blog'), bobs)
      await remove(bob.key)
      await remove(alice.key)
    })
  })

  // a domain's record outlives its project: the TLS ask endpoint answers for what the domain
  // serves now, as for a project's own origin (published, enabled account), on every change
  describe(`custom domains of projects that serve nothing [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let alice: Awaited<ReturnType<TestServer['user']>>
    const ASK = '/.well-known/svc/tls-allowed?domain='
    const at = (host: string, p: string) => s.get(p, { headers: { host } })
    const publish = async (project: string, text: string) => {
      const up = await batchUpload(s, { key: alice.key }, project, [{ filename: 'index.html', data: text }])
      assert.equal(up.status, 200, up.text)
      assert.equal((await s.post(`/api/folders/${project}/publish`, { key: alice.key })).status, 200)
    }
    /** The domain gets no certificate and serves a plain 404: nothing of the project, none of the service's pages. */
    const servesNothing = async (host: string, was: string) => {
      assert.equal((await s.get(ASK + host)).status, 404, 'no certificate')
      for (const p of ['/', '/login']) {
        const r = await at(host, p)
        assert.equal(r.status, 404, `${host}${p}`)
        assert.ok(!r.text.includes(was) && !/<form/i.test(r.text), r.text.slice(0, 200))
      }
    }

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr } })
      alice = await s.user({ name: 'alice' })
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it('no certificate while the project is not published, one once it is', async () => {
      const up = await batchUpload(s, { key: alice.key }, 'later', [{ filename: 'index.html', data: '<p>later</p>' }])
      assert.equal(up.status, 200, up.text)
      await verifiedDomain(s, dns, alice.key, 'later.example.test', 'later')
      await servesNothing('later.example.test', 'later')
      assert.equal((await s.post('/api/folders/later/publish', { key: alice.key })).status, 200)
      assert.equal((await s.get(ASK + 'later.example.test')).status, 200)
      assert.equal((await at('later.example.test', '/')).text, '<p>later</p>')
    })

    it('no certificate once the project is deleted, one again once it exists again', async () => {
      await publish('gone', '<p>first</p>')
      await verifiedDomain(s, dns, alice.key, 'gone.example.test', 'gone')
      assert.equal((await s.get(ASK + 'gone.example.test')).status, 200)
      assert.equal((await at('gone.example.test', '/')).text, '<p>first</p>')
      const mcp = await mcpHttpClient(s.url, alice.key)
      try {
        const del = await mcp.callTool({ name: 'delete_site', arguments: { name: 'gone' } })
        assert.equal(del.isError, undefined, JSON.stringify(del))
      } finally {
        await mcp.close()
      }
      await servesNothing('gone.example.test', 'first')
      // the domain is still alice's: the same name made again is served there again
      await publish('gone', '<p>second</p>')
      assert.equal((await s.get(ASK + 'gone.example.test')).status, 200)
      assert.equal((await at('gone.example.test', '/')).text, '<p>second</p>')
    })

    it('no certificate once the project is taken down', async () => {
      const admin = await s.user({ admin: true })
      const cookie = await s.login(admin.username, admin.password)
      await publish('down', '<p>down</p>')
      await verifiedDomain(s, dns, alice.key, 'down.example.test', 'down')
      assert.equal((await s.get(ASK + 'down.example.test')).status, 200)
      const rep = await s.post('/svc_api/admin/reports', { cookie, json: { url: `${s.url}/alice/down/`, category: 'phishing' } })
      assert.equal(rep.status, 201, rep.text)
      const down = await s.post(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, { cookie, json: {} })
      assert.equal(down.status, 200, down.text)
      assert.equal((await s.get(ASK + 'down.example.test')).status, 404)
      const r = await at('down.example.test', '/')
      // over plain HTTP the domain still says why, as the project's other URLs do
      assert.equal(r.status, 451)
      assert.ok(!r.text.includes('<p>down</p>'), r.text.slice(0, 200))
    })
  })
}
