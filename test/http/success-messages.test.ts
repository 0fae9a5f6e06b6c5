import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type Res, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { expectSuccessInBoth } from '../support/errors.js'
import { manifestOf, sha, tarOf, type Site, type TarEntry } from '../support/deploys.js'

type Send = (headers: Record<string, string>) => Promise<Res>

// A success answer's `message` follows Accept-Language as an error's does: Chinese by default,
// English on request. Each row's request is made afresh for each language, so a row that
// changes something (a key deleted, a deploy rolled back) sets up its own object first.
for (const engine of ENGINES) {
  describe(`success messages in both languages [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    let cookie: string
    let entitled: string
    let n = 0
    const fresh = (prefix: string) => `${prefix}${++n}`

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      u = await s.user()
      cookie = await s.login(u.username, u.password)
      // hosted data takes a session of an entitled user
      const v = await s.user()
      await s.deps.db.k.insertInto('entitlements').values({ user_id: v.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() }).execute()
      entitled = await s.login(v.username, v.password)
    })
    after(() => s?.close())

    /** A key of the user made directly (not through the route under test); its id. */
    const newKeyId = async () => (await s.deps.apiKeys.create(u.id, { name: fresh('k') })).info.id

    /** An archive deploy of `files` to `project`, sending only what the check asks for. */
    const deploy = async (project: string, files: Site, headers: Record<string, string> = {}, preview = false): Promise<Res> => {
      const manifest = manifestOf(files, preview ? { preview: true } : {})
      const check = await s.post(`/api/folders/${project}/deploys/missing`, { key: u.key, json: JSON.parse(String(manifest.data)) })
      assert.equal(check.status, 200, check.text)
      const missing = new Set<string>(check.json.missing)
      const entries: TarEntry[] = [manifest, ...Object.entries(files).flatMap(([p, d]) => (missing.has(sha(d)) ? [{ name: p, data: d }] : []))]
      return s.post(`/api/folders/${project}/deploys`, { key: u.key, body: await tarOf(entries), headers: { 'content-type': 'application/x-tar', ...headers } })
    }
    const site = (v: string): Site => ({ 'index.html': HTML(`home ${v}`) })
    const deployed = async (project: string, v: string, preview = false): Promise<string> => {
      const r = await deploy(project, site(v), {}, preview)
      assert.equal(r.status, 201, r.text)
      return r.json.deploy.id as string
    }

    // [what, request, status, Chinese, English]
    const rows: Array<[string, Send, number, string, string]> = [
      [
        'log in (JSON)',
        (headers) => s.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json', ...headers } }),
        200,
        '登录成功',
        'Logged in',
      ],
      ['log out', async (headers) => s.post('/logout', { cookie: await s.login(u.username, u.password), headers }), 200, '已退出登录', 'Logged out'],
      [
        'create an API key',
        (headers) => s.post('/svc_api/api-keys', { cookie, json: { name: fresh('key') }, headers }),
        200,
        'API 密钥已创建，密钥只显示这一次',
        'API key created; the key is shown only once',
      ],
      [
        'disable an API key',
        async (headers) => s.post(`/svc_api/api-keys/${await newKeyId()}/disable`, { cookie, headers }),
        200,
        'API 密钥已停用',
        'API key disabled',
      ],
      [
        'enable an API key',
        async (headers) => s.post(`/svc_api/api-keys/${await newKeyId()}/enable`, { cookie, headers }),
        200,
        'API 密钥已启用',
        'API key enabled',
      ],
      [
        'delete an API key',
        async (headers) => s.request('DELETE', `/svc_api/api-keys/${await newKeyId()}`, { cookie, headers }),
        200,
        'API 密钥已删除',
        'API key deleted',
      ],
      [
        'report content',
        (headers) => s.post('/svc_api/abuse/reports', { json: { url: `${s.url}/nobody/${fresh('page')}.html`, category: 'spam' }, headers }),
        201,
        '举报已收到',
        'Report received',
      ],
      ['deploy a project', (headers) => deploy(fresh('live'), site('a'), headers), 201, '部署成功', 'Deployed'],
      ['deploy a preview', (headers) => deploy(fresh('pre'), site('a'), headers, true), 201, '预览已部署', 'Preview deployed'],
      [
        'promote a deploy',
        async (headers) => {
          const project = fresh('promote')
          await deployed(project, 'a')
          const id = await deployed(project, 'b', true)
          return s.post(`/api/folders/${project}/deploys/${id}/promote`, { key: u.key, headers })
        },
        200,
        '该版本已上线',
        'Promoted',
      ],
      [
        'roll back',
        async (headers) => {
          const project = fresh('rollback')
          await deployed(project, 'a')
          await deployed(project, 'b')
          return s.post(`/api/folders/${project}/rollback`, { key: u.key, headers })
        },
        200,
        '已回滚',
        'Rolled back',
      ],
      [
        'delete a single file',
        async (headers) => {
          const name = `${fresh('page')}.html`
          assert.equal((await uploadFile(s, { key: u.key }, name, HTML('x'))).status, 200)
          return s.request('DELETE', `/svc_api/files/${name}`, { key: u.key, headers })
        },
        200,
        '文件已删除',
        'File deleted',
      ],
      [
        'store a KV entry',
        (headers) => s.post('/svc_api/data/store', { key: u.key, json: { key: fresh('kv'), value: 1 }, headers }),
        200,
        '数据已保存',
        'Entry created',
      ],
      [
        'delete a hosted data file',
        async (headers) => {
          const made = await s.post('/api/hosted-data/files', { cookie: entitled, json: { display_name: 'a.txt', content: 'a' } })
          assert.equal(made.status, 200, made.text)
          return s.request('DELETE', `/api/hosted-data/files/${made.json.file.id}`, { cookie: entitled, headers })
        },
        200,
        '已删除',
        'Deleted',
      ],
      [
        'remove a visitor password',
        async (headers) => {
          const name = `${fresh('locked')}.html`
          assert.equal((await uploadFile(s, { key: u.key }, name, HTML('x'))).status, 200)
          assert.equal((await s.request('PUT', `/api/access/${name}`, { key: u.key, json: { password: 'hunter22' } })).status, 200)
          return s.request('DELETE', `/api/access/${name}`, { key: u.key, headers })
        },
        200,
        '访问设置已删除',
        'Access setting removed',
      ],
    ]

    for (const [what, send, status, zh, en] of rows) it(`${what}: ${zh} / ${en}`, () => expectSuccessInBoth(send, status, zh, en))
  })
}
