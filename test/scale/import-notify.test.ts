import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ENGINES, REDIS_URL, needs, startServer, type TestServer } from '../support/server.js'
import { HTML, uploadFile } from '../support/hosting.js'
import { clearRedisPrefix } from '../support/redis.js'
import { runCli } from '../cli/run.js'

/**
 * `svc import` beside a running server (same database, REDIS_URL set): pages of the imported
 * user that the server answered 404 before the import are served right after it, not once the
 * public host's cached 404 expires (5 minutes).
 */
for (const engine of ENGINES) {
  describe(`svc import tells running servers [${engine}]`, needs('redis'), () => {
    const redisPrefix = `svc-test-${crypto.randomBytes(5).toString('hex')}:`
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-import-notify-'))
    let s: TestServer | undefined
    after(async () => {
      await s?.close()
      fs.rmSync(dir, { recursive: true, force: true })
      await clearRedisPrefix(REDIS_URL, redisPrefix)
    })

    it('a page the server answered 404 before the import is served at once after it', async () => {
      s = await startServer({ engine, env: { REDIS_URL, REDIS_PREFIX: redisPrefix } })
      const alice = await s.user()
      assert.equal((await uploadFile(s, { key: alice.key }, 'index.html', HTML('imported'))).status, 200)
      const archive = path.join(dir, 'alice.zip')
      const ex = await runCli(['export', alice.username, archive], { env: s.env })
      assert.equal(ex.code, 0, ex.stderr)

      const name = `im${crypto.randomBytes(4).toString('hex')}`
      // asked for before the import: not there, and the public host keeps that answer
      for (let i = 0; i < 2; i++) assert.equal((await s.get(`/${name}/index.html`)).status, 404)

      const im = await runCli(['import', archive, '--as', name], { env: s.env })
      assert.equal(im.code, 0, im.stderr)
      assert.match(im.stdout, /running servers were told/)
      const page = await s.get(`/${name}/index.html`)
      assert.equal(page.status, 200)
      assert.equal(page.text, HTML('imported'))
    })
  })
}
