import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { ENGINES, startServer, multipart, dropSchema, type TestServer } from '../support/server.js'
import { closedPort } from '../support/ports.js'

for (const engine of ENGINES) {
  describe(`Redis unreachable [${engine}]`, () => {
    // `writer` has no Redis; `broken` shares its database and blobs but points REDIS_URL at a closed port
    let writer: TestServer
    let broken: TestServer
    const pgSchema = `t_${crypto.randomBytes(5).toString('hex')}`
    let redisPort = 0
    before(async () => {
      redisPort = await closedPort()
      writer = await startServer({ engine, pgSchema, keepData: true })
      broken = await startServer({
        engine,
        pgSchema,
        keepData: true,
        dataDir: writer.dataDir,
        captureLogs: true,
        env: { REDIS_URL: `redis://127.0.0.1:${redisPort}` },
      })
    })
    after(async () => {
      await broken.close()
      await writer.close()
      if (engine === 'postgres') await dropSchema(pgSchema)
      const fs = await import('node:fs')
      fs.rmSync(writer.dataDir, { recursive: true, force: true })
    })

    it('answers API requests 503 / 1504 fast (fail closed), with or without a key', async () => {
      const u = await broken.user()
      for (const o of [{ key: u.key }, {}]) {
        const t0 = Date.now()
        const r = await broken.get('/svc_api/me', o)
        const ms = Date.now() - t0
        assert.equal(r.status, 503)
        assert.equal(r.json.error_code, 1504)
        assert.equal(r.json.success, false)
        assert.ok(ms < 2500, `answered after ${ms} ms (target: about 1 s)`)
      }
    })

    it('sends a browser signing in or up back to its form with a message, not a JSON error', async () => {
      const u = await writer.user()
      const html = { accept: 'text/html' }
      const login = await broken.post('/login', { form: { username: u.username, password: u.password }, headers: html })
      assert.equal(login.status, 303, login.text)
      const to = new URL(login.header('location')!, broken.url)
      assert.equal(to.pathname, '/login')
      assert.equal(to.searchParams.get('error'), 'unavailable')
      assert.equal(to.searchParams.get('username'), u.username)
      const form = await broken.get(`${to.pathname}${to.search}`, { headers: { ...html, 'accept-language': 'en' } })
      assert.equal(form.status, 200)
      assert.match(form.text, /briefly unavailable/)
      // a script asking for JSON still gets the error as the API answers it
      const json = await broken.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json' } })
      assert.equal(json.status, 503)
      assert.equal(json.json.error_code, 1504)

      const name = `nr${crypto.randomBytes(4).toString('hex')}`
      const signUp = await broken.post('/register', {
        form: { username: name, password: 'long-enough-pw', password2: 'long-enough-pw' },
        headers: { ...html, 'accept-language': 'en' },
      })
      assert.equal(signUp.status, 303, signUp.text)
      const back = new URL(signUp.header('location')!, broken.url)
      assert.equal(back.pathname, '/register')
      assert.equal(back.searchParams.get('error'), 'unavailable')
      assert.equal(back.searchParams.get('username'), name)
      const again = await broken.get(`${back.pathname}${back.search}`, { headers: { ...html, 'accept-language': 'en' } })
      assert.equal(again.status, 200)
      assert.match(again.text, /Signing up is briefly unavailable/)
      // and no account was made
      assert.equal((await writer.post('/login', { form: { username: name, password: 'long-enough-pw' }, headers: { accept: 'application/json' } })).status, 401)
    })

    it('keeps serving what needs no Redis (the public host), and says Redis is down on /readyz, staying in balancing', async () => {
      assert.equal((await broken.get('/livez')).status, 200, 'the process answers')
      for (const p of ['/readyz', '/healthz']) {
        const t0 = Date.now()
        const ready = await broken.get(p)
        // Redis is shared: every instance would be out alike, while each serves the public host (decision 147)
        assert.equal(ready.status, 200, ready.text)
        assert.equal(ready.json.status, 'degraded')
        assert.notEqual(ready.json.checks.redis, 'ok')
        assert.equal(ready.json.checks.database, 'ok')
        assert.ok(Date.now() - t0 < 3000, 'within the readiness timeout')
      }
      const u = await writer.user()
      const page = `<!doctype html><title>up</title><p>served without redis ${crypto.randomUUID()}</p>`
      const mp = multipart([{ name: 'file', filename: 'up.html', type: 'text/html', data: page }])
      const up = await writer.post('/svc_api/upload', { key: u.key, body: mp.body, headers: { 'content-type': mp.contentType } })
      assert.equal(up.status, 200, up.text)
      const t0 = Date.now()
      const r = await broken.get(`/${u.username}/up.html`)
      assert.equal(r.status, 200)
      assert.equal(r.text, page)
      assert.ok(Date.now() - t0 < 2500)
    })

    it("names why Redis is down, its connection's own error, where the operator looks (decision 319)", async () => {
      const refused = `connect ECONNREFUSED 127.0.0.1:${redisPort}`
      // a direct loopback caller may read /metrics, so sees the failure's message
      const ready = await broken.get('/readyz')
      assert.equal(ready.json.status, 'degraded')
      assert.ok(String(ready.json.checks.redis).startsWith(`error: ${refused}`), ready.text)
      const a = await writer.user({ admin: true })
      const health = await broken.get('/svc_api/admin/health', { cookie: await writer.login(a.username, a.password) })
      const check = health.json.data.checks.find((c: { name: string }) => c.name === 'redis')
      assert.ok(check.result.startsWith(`error: ${refused}`), check.result)
      assert.ok(
        broken.logs.some((l) => l.msg === 'readiness: check failed' && String(l.result).startsWith(`error: ${refused}`)),
        JSON.stringify(broken.logs),
      )
      // the 503 / 1504's log line says which dependency failed and why
      const u = await writer.user()
      const r = await broken.get('/svc_api/me', { key: u.key })
      assert.equal(r.json.error_code, 1504)
      const line = broken.logs.find((l) => l.reqId === r.header('x-request-id') && l.msg === 'service unavailable')
      assert.ok(line, JSON.stringify(broken.logs))
      assert.ok((line.err as { message: string }).message.includes(`: Redis rate limits: ${refused}`), JSON.stringify(line.err))
    })

    it("shows an admin signed in before the outage the console's health page, naming Redis; others are still refused", async () => {
      // sessions are database rows: signed in on the instance with no Redis, valid on both
      const a = await writer.user({ admin: true })
      const admin = await writer.login(a.username, a.password)
      const u = await writer.user()
      const other = await writer.login(u.username, u.password)
      const r = await broken.get('/svc_api/admin/health', { cookie: admin })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.data.status, 'degraded')
      const redis = r.json.data.checks.find((c: { name: string }) => c.name === 'redis')
      assert.equal(redis.required, false)
      assert.notEqual(redis.result, 'ok')
      assert.equal((await broken.get('/svc_api/admin/health', { cookie: other })).json.error_code, 1011)
      assert.equal((await broken.get('/svc_api/admin/health')).json.error_code, 1001)
    })
  })
}
