import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, multipart, startServer, type TestServer } from '../support/server.js'

const ASK = '/.well-known/svc/tls-allowed'
const ask = (s: TestServer, domain?: string) => s.get(domain === undefined ? ASK : `${ASK}?domain=${encodeURIComponent(domain)}`)

for (const engine of ENGINES) {
  describe(`on-demand TLS ask endpoint [${engine}]`, () => {
    let s: TestServer
    let off: TestServer
    before(async () => {
      const env = { TRUST_PROXY: '1', CONTENT_DOMAIN: 'pages.test', PUBLIC_URL: 'https://svc.test' }
      ;[s, off] = await Promise.all([startServer({ engine, env }), startServer({ engine, env: { ...env, CONTENT_DOMAIN: 'off' } })])
      const alice = await s.user({ name: 'alice' })
      const carol = await s.user({ name: 'carol' })
      // alice: a published project and one not published; carol's published project goes with her account
      for (const [u, name, publish] of [
        [alice, 'blog', true],
        [alice, 'draft', false],
        [carol, 'blog', true],
      ] as const) {
        // behind the proxy (TRUST_PROXY), as it forwards an HTTPS request
        const https = { 'x-forwarded-proto': 'https' }
        const mp = multipart([{ name: 'files[]', filename: 'index.html', type: 'text/html', data: '<p>x</p>' }])
        const up = await s.post(`/api/folders/${name}/batch_upload`, { key: u.key, body: mp.body, headers: { 'content-type': mp.contentType, ...https } })
        assert.equal(up.status, 200, up.text)
        if (publish) assert.equal((await s.post(`/api/folders/${name}/publish`, { key: u.key, headers: https })).status, 200)
      }
      await s.deps.users.update('carol', { disabled: true })
      await off.user({ name: 'alice' })
    })
    after(() => Promise.all([s.close(), off.close()]))

    it("allows the origin of an existing, enabled user, its published projects' origins and the service host, over plain HTTP", async () => {
      for (const d of ['alice.pages.test', 'ALICE.Pages.Test', 'blog.alice.pages.test', 'svc.test']) {
        const r = await ask(s, d)
        assert.equal(r.status, 200, d)
        assert.equal(r.header('cache-control'), 'no-store', d)
      }
    })

    it('refuses every other name', async () => {
      for (const d of [
        'bob.pages.test',
        'carol.pages.test',
        'x.alice.pages.test',
        'draft.alice.pages.test',
        'blog.carol.pages.test',
        'blog.bob.pages.test',
        'a.blog.alice.pages.test',
        'alice.pages.test.evil.example',
        'pages.test',
        'alice.pages.test:443',
        'alice.pages.test.',
        'alice',
        'evil.example',
        'api.pages.test',
        '',
        'alice.pages.test/x',
      ]) {
        assert.equal((await ask(s, d)).status, 404, d)
      }
      assert.equal((await ask(s)).status, 404, 'no domain')
      assert.equal((await s.get(`${ASK}?domain=alice.pages.test&domain=svc.test`)).status, 404, 'two domains')
    })

    it("allows a kept deploy's own origin ({deploy id}--{project}) of an enabled user, and no other deploy label", async () => {
      const https = { 'x-forwarded-proto': 'https' }
      const alice = (await s.deps.users.byName('alice'))!
      const [key] = [(await s.deps.apiKeys.create(alice.id, { name: 'tls' })).key]
      const list = await s.get('/api/folders/blog/deploys', { key, headers: https })
      assert.equal(list.status, 200, list.text)
      const id = list.json.deploys[0].id as string
      assert.equal((await ask(s, `${id}--blog.alice.pages.test`)).status, 200)
      for (const d of [`zzzzzzzzzzzz--blog.alice.pages.test`, `${id}--draft.alice.pages.test`, `${id}--blog.carol.pages.test`, `${id}-blog.alice.pages.test`])
        assert.equal((await ask(s, d)).status, 404, d)
    })

    it("refuses users' origins when CONTENT_DOMAIN=off", async () => {
      assert.equal((await ask(off, 'alice.pages.test')).status, 404)
      assert.equal((await ask(off, 'svc.test')).status, 200)
    })
  })
}
