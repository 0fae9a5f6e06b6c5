import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { deploySite } from '../support/deploys.js'
import { expectError } from '../support/errors.js'

// the site_bytes quota (decision 241): the distinct bytes of an account's folder projects,
// working sets and kept deploys alike, checked in the write's transaction under its lock
const bytes = (n: number) =>
  crypto
    .randomBytes(Math.ceil(n / 2))
    .toString('hex')
    .slice(0, n)

for (const engine of ENGINES) {
  describe(`site_bytes: the storage of an account's folder projects [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    const A = bytes(1000)
    const B = bytes(1000)
    const C = bytes(1500)
    const projects = async () => ((await s.get('/api/folders', { key: u.key })).json.folders as Array<{ name: string }>).map((p) => p.name).sort()
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      u = await s.user()
      await s.deps.users.update(u.username, { limits: { site_bytes: 3000 } })
    })
    after(() => s.close())

    it('counts each distinct blob once, history included, and refuses a deploy or a batch past it, storing nothing', async () => {
      const first = await deploySite(s, u.key, 'one', { 'index.html': A, 'a.txt': B })
      assert.equal(first.res.status, 201, first.res.text)
      // the same bytes again, or under other names: nothing new to the account
      assert.equal((await deploySite(s, u.key, 'one', { 'index.html': A, 'a.txt': B, 'copy.txt': A })).res.status, 201)
      assert.equal((await deploySite(s, u.key, 'mirror', { 'index.html': A })).res.status, 201)
      // 2,000 held + 1,500 new > 3,000: refused, whichever project it goes to
      const over = await deploySite(s, u.key, 'two', { 'index.html': A, 'c.txt': C })
      expectError(over.res, 400, 1208)
      assert.deepEqual(over.res.json.details, { quota: 'site_bytes', used: 2000, adding: 1500, limit: 3000 })
      // replacing a file does not free its bytes: the kept deploys still hold them
      expectError((await deploySite(s, u.key, 'one', { 'index.html': A, 'a.txt': C })).res, 400, 1208)
      const batch = await batchUpload(s, { key: u.key }, 'two', [{ filename: 'c.txt', data: Buffer.from(C) }])
      expectError(batch, 400, 1208)
      assert.deepEqual(await projects(), ['mirror', 'one'], 'no project made by a refused write')
      assert.equal((await s.get(`/${u.username}/one/a.txt`)).text, B, 'the live site unchanged')
      // a higher limit lets it through
      await s.deps.users.update(u.username, { limits: { site_bytes: 4000 } })
      assert.equal((await deploySite(s, u.key, 'two', { 'index.html': A, 'c.txt': C })).res.status, 201)
    })

    it('lets exactly one of two racing deploys take the last bytes', async () => {
      const v = await s.user()
      await s.deps.users.update(v.username, { limits: { site_bytes: 2500 } })
      assert.equal((await deploySite(s, v.key, 'base', { 'index.html': bytes(1500) })).res.status, 201)
      const racing = await Promise.all(['x', 'y', 'z'].map((p) => deploySite(s, v.key, p, { 'index.html': bytes(800) })))
      const codes = racing.map((r) => r.res.status).sort()
      assert.deepEqual(codes, [201, 400, 400], racing.map((r) => r.res.text).join('\n'))
      for (const r of racing) if (r.res.status === 400) assert.equal(r.res.json.error_code, 1208)
    })
  })
}
