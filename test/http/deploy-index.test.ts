import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { counting } from '../support/queries.js'
import { HTML, HIGH_LIMITS } from '../support/hosting.js'
import { deploySite, sha, type Site } from '../support/deploys.js'
import { createHostCache, type HostEntry } from '../../src/features/sites/host-cache.js'
import { createResolver } from '../../src/features/sites/resolver.js'
import { createDeployIndex } from '../../src/features/sites/deploy-index.js'
import { headerList } from '../../src/http/prepared-response.js'

/** A site of `n` pages plus its home, a clean-URL page, a directory index and a 404 page. */
const siteOf = (v: string, n: number): Site => {
  const out: Site = { 'index.html': HTML(`home ${v}`), 'about.html': HTML(`about ${v}`), 'docs/index.html': HTML(`docs ${v}`), '404.html': HTML(`lost ${v}`) }
  for (let i = 0; i < n; i++) out[`p/${i}.html`] = HTML(`page ${i} ${v}`)
  return out
}

/** What a resolved entry says, to compare two resolvers. */
const shape = (e: HostEntry) =>
  e.kind === 'file'
    ? { kind: e.kind, status: e.status, digest: e.digest, size: e.size, headers: headerList(e.ok) }
    : e.kind === 'redirect'
      ? { kind: e.kind, status: e.status, location: e.location }
      : { kind: e.kind }

const until = async (ok: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 10))
  assert.ok(ok(), what)
}

for (const engine of ENGINES) {
  describe(`the public host's deploy index [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      u = await s.user()
    })
    after(() => s.close())

    it('loads a deploy whole after a few lookups; then every path answers as before, with no query', async () => {
      const site = siteOf('v1', 30)
      assert.equal((await deploySite(s, u.key, 'big', site)).res.status, 201)
      const c = counting(s.deps.db)
      // small pages: the load runs over several keyset pages
      const index = createDeployIndex(c.db, { loadAfter: 5, pageRows: 7 })
      const resolve = createResolver(c.db, createHostCache(), index)
      const plain = createResolver(s.deps.db, createHostCache())
      const base = `/${u.username}/big`
      for (let i = 0; i < 5; i++) await resolve(`${base}/p/${i}.html`)
      await until(() => index.deploys() === 1, 'the deploy was loaded')
      assert.equal(index.size(), Object.keys(site).length)

      const paths = [
        ...Array.from({ length: 30 }, (_, i) => `${base}/p/${i}.html`),
        `${base}/about`, // clean URL: about.html
        `${base}/docs/`, // directory index
        `${base}/docs`, // a directory without its slash: redirected
        `${base}/`,
        `${base}/nope.html`, // the project's own 404 page
        `${base}/p/`,
      ]
      const before = c.queries()
      for (const p of paths) {
        const a = await resolve(p)
        const b = await plain(p)
        assert.ok('entry' in a && 'entry' in b, p)
        assert.deepEqual(shape(a.entry), shape(b.entry), p)
      }
      assert.equal(c.queries(), before, 'no query once the deploy and the project are known')
      const page7 = await resolve(`${base}/p/7.html`)
      assert.ok('entry' in page7 && page7.entry.kind === 'file')
      assert.equal(page7.entry.digest, sha(site['p/7.html']))
      const lost = await resolve(`${base}/nope.html`)
      assert.ok('entry' in lost && lost.entry.kind === 'file' && lost.entry.status === 404)
      assert.ok(index.stats.indexed > 0)
    })

    it('a new deploy and a rollback are served at once, never a loaded deploy of before', async () => {
      const n = 60 // past the service's own load threshold
      const v1 = siteOf('v1', n)
      assert.equal((await deploySite(s, u.key, 'swap', v1)).res.status, 201)
      const get = (p: string) => s.get(`/${u.username}/swap/${p}`)
      for (let i = 0; i < n; i++) assert.equal((await get(`p/${i}.html`)).text, v1[`p/${i}.html`])
      const v2 = siteOf('v2', n)
      assert.equal((await deploySite(s, u.key, 'swap', v2)).res.status, 201)
      for (let i = 0; i < n; i += 7) assert.equal((await get(`p/${i}.html`)).text, v2[`p/${i}.html`])
      assert.equal((await get('about')).text, v2['about.html'])
      assert.equal((await s.post('/api/folders/swap/rollback', { key: u.key })).status, 200)
      for (let i = 0; i < n; i += 7) assert.equal((await get(`p/${i}.html`)).text, v1[`p/${i}.html`])
      const lost = await get('gone.html')
      assert.equal(lost.status, 404)
      assert.equal(lost.text, v1['404.html'])
    })

    it('holds at most maxPaths: the least recently used deploy goes, one over the budget is never loaded', async () => {
      const ids: string[] = []
      for (const [name, n] of [
        ['ba', 20],
        ['bb', 20],
        ['bc', 40],
      ] as const) {
        const r = await deploySite(s, u.key, name, siteOf(name, n))
        assert.equal(r.res.status, 201, r.res.text)
        ids.push(r.res.json.deploy.id)
      }
      const index = createDeployIndex(s.deps.db, { loadAfter: 1, maxPaths: 30 })
      const loaded = async (id: string) => {
        await index.file(id, 'about.html')
        await new Promise((r) => setTimeout(r, 50))
      }
      await loaded(ids[0])
      await until(() => index.deploys() === 1, 'the first deploy was loaded')
      assert.equal(index.size(), 24)
      await index.file(ids[1], 'about.html')
      await until(() => index.stats.loads === 2, 'the second deploy was loaded')
      assert.equal(index.deploys(), 1, 'the first went: both do not fit')
      assert.equal(index.size(), 24)
      await loaded(ids[2])
      assert.equal(index.stats.loads, 2, '44 paths: over the budget, not loaded')
      // still answered, by a query per path
      const f = await index.file(ids[2], 'p/39.html')
      assert.equal(f?.digest, sha(siteOf('bc', 40)['p/39.html']))
      assert.equal(await index.file(ids[2], 'p/40.html'), undefined)
    })
  })
}
