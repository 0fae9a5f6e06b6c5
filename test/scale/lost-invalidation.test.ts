import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { ENGINES, startServer, multipart, type TestServer } from '../support/server.js'
import { createLocalBus, FLUSH_ALL, type Bus } from '../../src/infra/bus.js'
import { batchUpload } from '../support/hosting.js'

/**
 * B's view of a shared bus whose subscription can be cut, as the Redis bus behaves: while cut,
 * B receives nothing and reports unreliable; cutting and restoring send FLUSH_ALL to B.
 */
function cuttableBus(shared: Bus) {
  const subs = new Map<string, Array<(m: string) => void>>()
  let up = true
  const emitAll = (m: string) => {
    for (const fns of subs.values()) for (const fn of fns) fn(m)
  }
  const bus: Bus = {
    publish: (ch, m) => shared.publish(ch, m),
    subscribe(ch, fn) {
      if (!subs.has(ch)) {
        subs.set(ch, [])
        shared.subscribe(ch, (m) => {
          if (up) for (const f of subs.get(ch)!) f(m)
        })
      }
      subs.get(ch)!.push(fn)
    },
    reliable: () => up,
    close: async () => {},
  }
  return {
    bus,
    cut() {
      up = false
      emitAll(FLUSH_ALL)
    },
    restore() {
      up = true
      emitAll(FLUSH_ALL)
    },
  }
}

for (const engine of ENGINES) {
  describe(`public host when invalidations are lost [${engine}]`, () => {
    let a: TestServer
    let b: TestServer
    const shared = createLocalBus()
    const lossy = cuttableBus(shared)
    before(async () => {
      a = await startServer({ engine, bus: { ...shared, close: async () => {} } })
      b = await startServer({ engine, bus: lossy.bus, dataDir: a.dataDir, keepData: true, env: a.env.DATABASE_URL ? { DATABASE_URL: a.env.DATABASE_URL } : {} })
    })
    // a start that failed in before leaves its server unset: the other is still closed (and its schema dropped)
    after(async () => {
      await b?.close()
      await a?.close()
    })

    it('never serves stale content while B cannot hear A, and caches again once it can', async () => {
      const u = await a.user()
      const path = `/${u.username}/p.html`
      const put = async (i: number) => {
        const html = `<!doctype html><p>v${i} ${crypto.randomUUID()}</p>`
        const mp = multipart([{ name: 'file', filename: 'p.html', type: 'text/html', data: html }])
        const r = await a.post('/svc_api/upload', { key: u.key, body: mp.body, headers: { 'content-type': mp.contentType } })
        assert.equal(r.status, 200, r.text)
        return html
      }
      let html = await put(1)
      for (let k = 0; k < 2; k++) assert.equal((await b.get(path)).text, html) // B caches v1
      lossy.cut()
      for (let i = 2; i <= 3; i++) {
        html = await put(i) // B does not hear of it
        for (let k = 0; k < 2; k++) assert.equal((await b.get(path)).text, html, `v${i} while cut`)
      }
      lossy.restore()
      assert.equal((await b.get(path)).text, html)
      html = await put(4)
      assert.equal((await b.get(path)).text, html, 'after restore')
    })

    it("a project's new files, and its unpublishing, show on B while B cannot hear A", async () => {
      const u = await a.user()
      const page = (v: string) => `<!doctype html><p>${v}</p>`
      const up = await batchUpload(a, { key: u.key }, 'proj', [{ filename: 'index.html', data: page('one') }])
      assert.equal(up.status, 200, up.text)
      assert.equal((await a.post('/api/folders/proj/publish', { key: u.key })).status, 200)
      // B has the account and the project in memory, and the page cached
      for (let k = 0; k < 2; k++) assert.equal((await b.get(`/${u.username}/proj/`)).text, page('one'))
      lossy.cut()
      const again = await batchUpload(a, { key: u.key }, 'proj', [{ filename: 'index.html', data: page('two') }], true)
      assert.equal(again.status, 200, again.text)
      for (let k = 0; k < 2; k++) assert.equal((await b.get(`/${u.username}/proj/`)).text, page('two'), 'the new live deploy while cut')
      assert.equal((await a.post('/api/folders/proj/unpublish', { key: u.key })).status, 200)
      assert.equal((await b.get(`/${u.username}/proj/`)).status, 404, 'unpublished while cut')
      lossy.restore()
      assert.equal((await b.get(`/${u.username}/proj/`)).status, 404)
    })

    it("the key-value store's public reads are never stale while B cannot hear A either", async () => {
      const u = await a.user()
      const store = async (value: number) => {
        const r = await a.post('/svc_api/data/store', { key: u.key, json: { key: 'score', value, is_public: true } })
        assert.equal(r.status, 200, r.text)
      }
      const read = async () => (await b.get(`/svc_api/data/public/${u.username}/score`)).json.data.value
      await store(1)
      assert.equal(await read(), 1)
      assert.equal(await read(), 1) // cached on B
      lossy.cut()
      await store(2)
      assert.equal(await read(), 2)
      await store(3)
      assert.equal(await read(), 3)
      lossy.restore()
      await store(4)
      assert.equal(await read(), 4)
    })
  })
}
