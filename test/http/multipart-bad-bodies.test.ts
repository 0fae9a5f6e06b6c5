import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, FormData, startServer, type TestServer } from '../support/server.js'
import { expectError } from '../support/errors.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { FakeClock } from '../../src/util/clock.js'
import {
  ATTACKS,
  eventually,
  multipartRoutes,
  outcomeRes,
  recorded,
  recordUncaught,
  requestFds,
  tmpEntries,
  type MultipartRoute,
  type Records,
} from '../support/multipart-attacks.js'

// Malformed, truncated, late and abandoned multipart bodies on every multipart route: each is
// a client error (400, code 1106 in the route's format) answered within a second, with no
// error-level log line; the process stays up, nothing is recorded, and no descriptor or temp
// file outlives the request.

/** Runs a route's assertions with the route's name in front of a failure's message. */
const onRoute = (r: MultipartRoute, check: () => void) => {
  try {
    check()
  } catch (e) {
    if (e instanceof Error) {
      const message = `${r.name}: ${e.message}`
      e.stack = e.stack?.replace(e.message, message)
      e.message = message
    }
    throw e
  }
}

for (const engine of ENGINES) {
  describe(`bad multipart bodies on every multipart route [${engine}]`, () => {
    let s: TestServer
    let routes: MultipartRoute[] = []
    let port = 0
    let start: Records
    let uncaught: ReturnType<typeof recordUncaught>
    const clock = new FakeClock(Date.now())
    before(async () => {
      uncaught = recordUncaught()
      // high limits: a 429 would hide the answer a route gives the body
      s = await startServer({ engine, clock, env: { RATE_LIMITS: HIGH_LIMITS }, captureLogs: true })
      routes = await multipartRoutes(s)
      port = Number(new URL(s.url).port)
      start = await recorded(s, routes)
    })
    after(async () => {
      uncaught.stop()
      await s.close()
    })

    let logsRead = 0
    /** Since the last call: no uncaught error in the process, and no error-level log line. */
    const noCrashNoErrorLog = () => {
      assert.deepEqual(uncaught.take(), [], 'uncaught errors in the process (the server runs in it)')
      const lines = s.logs.slice(logsRead)
      logsRead = s.logs.length
      assert.deepEqual(
        lines.filter((l) => l.level >= 50),
        [],
        'error-level log lines for client errors',
      )
    }

    for (const attack of ATTACKS) {
      const expected = attack.expectsAnswer ? '400 (1106) within a second' : 'at most a 400'
      it(`${attack.name}: ${expected} on every route, nothing kept`, async () => {
        // a new minute: the form route's own limit (10 a minute per address and form) counts every attempt
        clock.advance(61_000)
        // all routes at once: a late or abandoned body costs its wait once, not once per route
        const outcomes = await Promise.all(routes.map((r) => attack.send(port, r)))
        noCrashNoErrorLog()
        for (const [i, r] of routes.entries()) {
          const out = outcomes[i]
          onRoute(r, () => {
            const res = outcomeRes(out)
            if (attack.expectsAnswer) {
              expectError(res, 400, r.error)
              assert.ok(out.ms < 1000, `answered after ${out.ms} ms`)
            } else if (out.status !== null) {
              // the client has gone; what it may still read is a 400: the route's, or, once the
              // request cannot be parsed (a half-closed socket), the HTTP layer's, in format A
              if (res.json?.error_code === 1106 && res.json?.error_type === 'PARAM_ERROR' && r.error !== 1106) expectError(res, 400, 1106)
              else expectError(res, 400, r.error)
            }
          })
        }
        const health = await s.get('/healthz')
        assert.equal(health.status, 200, 'the server still answers')
        assert.deepEqual(
          await eventually(
            () => tmpEntries(s.dataDir),
            (t) => t.length === 0,
          ),
          [],
          'blobs/tmp is empty again',
        )
        const now = await recorded(s, routes)
        for (const r of routes) for (const t of r.tables) assert.deepEqual(now.rows[t], start.rows[t], `${r.name}: rows of ${t} changed`)
        assert.deepEqual(now.rows.usage, start.rows.usage, 'usage counters changed')
        assert.deepEqual(now.blobs, start.blobs, 'blobs were kept')
        noCrashNoErrorLog()
      })
    }

    // [label, body, status, code, Chinese message (no Accept-Language), English message]
    const spoken: Array<[string, string, number, number, string, string]> = [
      [
        'a body without its closing boundary',
        '--X\r\nContent-Disposition: form-data; name="a"\r\n\r\nvalue\r\n',
        400,
        1106,
        '参数错误：多部分表单请求体无效：数据意外结束',
        'Invalid parameter: malformed multipart body: unexpected end of multipart data',
      ],
      [
        'more fields than the parser takes',
        Array.from({ length: 101 }, (_, i) => `--X\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv\r\n`).join('') + '--X--\r\n',
        413,
        1111,
        '单次请求的文件或字段过多：字段数超过上限',
        'Too many files or fields in one request: reach fields limit',
      ],
    ]
    for (const [label, body, status, code, zh, en] of spoken) {
      it(`${label}: the refusal is wholly Chinese by default, English on request`, async () => {
        const r = routes.find((x) => x.name === 'folder batch upload')!
        const send = (lang: Record<string, string>) =>
          s.post(r.path, { body, headers: { ...r.headers, 'content-type': 'multipart/form-data; boundary=X', ...lang } })
        const zhRes = await send({})
        expectError(zhRes, status, code)
        assert.equal(zhRes.json.message, zh)
        assert.doesNotMatch(zhRes.json.message, /[A-Za-z]{4,}/)
        const enRes = await send({ 'accept-language': 'en' })
        expectError(enRes, status, code)
        assert.equal(enRes.json.message, en)
        noCrashNoErrorLog()
      })
    }

    it('no accepted connection or blob file stays open, and a good upload still works', async () => {
      const fds = await eventually(
        () => requestFds(port, s.dataDir),
        (l) => l.length === 0,
      )
      assert.deepEqual(fds, [], 'descriptors left open by the bad bodies')
      const key = routes[0].headers.authorization.slice('Bearer '.length)
      const fd = new FormData()
      fd.append('file', new Blob(['<p>still here</p>'], { type: 'text/html' }), 'ok.html')
      const r = await s.post('/svc_api/upload', { key, body: fd })
      assert.equal(r.status, 200, r.text)
      noCrashNoErrorLog()
    })
  })
}
