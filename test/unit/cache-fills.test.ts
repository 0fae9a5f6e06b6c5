import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, type TestServer } from '../support/server.js'
import { counting } from '../support/queries.js'
import { HTML, batchUpload, uploadFile } from '../support/hosting.js'
import { createHostCache } from '../../src/features/sites/host-cache.js'
import { createResolver, siteKey } from '../../src/features/sites/resolver.js'
import { createKvService } from '../../src/features/kv/service.js'

// hot paths that miss together: one database read for all of them, never one that began before a write
describe('cache fills of the public host and the KV public read (real SQLite)', () => {
  let s: TestServer
  let u: Awaited<ReturnType<TestServer['user']>>
  before(async () => {
    s = await startServer()
    u = await s.user()
    assert.equal((await uploadFile(s, { key: u.key }, 'shared.html', HTML('shared'))).status, 200)
    assert.equal((await s.post('/svc_api/data/store', { key: u.key, json: { key: 'hot', value: 1, is_public: true } })).status, 200)
  })
  after(() => s.close())

  it('public host: concurrent misses of a path share one lookup; a lookup begun before a write is not shared after it', async () => {
    const c = counting(s.deps.db)
    const cache = createHostCache()
    const resolve = createResolver(c.db, cache)
    const path = `/${u.username}/shared.html`
    const all = await Promise.all(Array.from({ length: 20 }, () => resolve(path)))
    const perLookup = c.queries()
    assert.ok(perLookup >= 1 && perLookup <= 3, `one lookup is 1-3 queries, saw ${perLookup}`)
    for (const r of all) {
      assert.ok('entry' in r && r.entry.kind === 'file')
      assert.equal(r.entry, (all[0] as { entry: unknown }).entry)
    }
    cache.invalidate(u.username) // the path is not cached any more
    const first = resolve(path)
    cache.invalidate(u.username) // a write of this user while the lookup runs
    const second = resolve(path)
    await Promise.all([first, second])
    assert.equal(c.queries(), perLookup * 3, 'the request after the write ran its own lookup')
  })

  it("public host: a user site's answers to made-up paths are kept as misses, never evicting files", async () => {
    assert.equal((await batchUpload(s, { key: u.key }, 'home', [{ filename: 'index.html', data: HTML('home') }])).status, 200)
    assert.equal((await s.post('/api/folders/home/publish', { key: u.key })).status, 200)
    assert.equal((await s.request('PUT', '/api/folders/home/user_site', { key: u.key })).status, 200)
    const cache = createHostCache({ maxEntries: 3, maxMissing: 3 })
    const resolve = createResolver(s.deps.db, cache)
    const file = `/${u.username}/shared.html`
    assert.equal(((await resolve(file)) as { entry: { kind: string } }).entry.kind, 'file')
    for (let i = 0; i < 10; i++) {
      const r = await resolve(`/${u.username}/scan${i}/x.js`, true)
      assert.ok('entry' in r && r.entry.kind === 'userSite' && r.entry.project === 'home', JSON.stringify(r))
    }
    assert.equal(cache.get(file)?.kind, 'file', "the scan left the file's entry alone")
    assert.equal(cache.get(siteKey(`/${u.username}/scan9/x.js`))?.kind, 'userSite')
    assert.deepEqual(cache.stats(), { entries: 1, missing: 3 })
  })

  it('KV public read: concurrent misses share one read; a line in use is read again before it expires', async () => {
    const c = counting(s.deps.db)
    const TTL = 3000
    const kv = createKvService({ db: c.db, clock: s.deps.clock, publicCacheTtlMs: TTL })
    const filled = performance.now()
    const bodies = await Promise.all(Array.from({ length: 20 }, () => kv.publicRead(u.username, 'hot')))
    assert.equal(c.queries(), 1)
    for (const b of bodies) assert.equal(JSON.parse(b.body.toString()).data.value, 1)
    // used every 20 ms: served from memory all along, read again once, in the last quarter of its life
    while (c.queries() < 2) {
      assert.ok(kv.peekPublic(u.username, 'hot'), 'the line is served while it lives')
      assert.ok(performance.now() - filled < TTL, 'refreshed before it expired')
      await new Promise((r) => setTimeout(r, 20))
    }
    assert.ok(performance.now() - filled >= TTL * 0.75, 'not refreshed before its last quarter')
    // the refreshed line lives on past the first one's expiry
    await new Promise((r) => setTimeout(r, Math.max(0, filled + TTL + 100 - performance.now())))
    assert.ok(kv.peekPublic(u.username, 'hot'), 'the refreshed line outlives the first')
    assert.equal(c.queries(), 2)
  })
})
