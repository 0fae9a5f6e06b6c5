import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, FormData, startServer, type TestServer } from '../support/server.js'
import { ATTACKS, eventually, multipartRoutes, requestFds, tmpEntries, type MultipartRoute } from '../support/multipart-attacks.js'

// Malformed, truncated, late and abandoned multipart bodies on every multipart route: each is
// a client error answered within a second, the process stays up, and no descriptor or temp
// file outlives the request.
for (const engine of ENGINES) {
  describe(`bad multipart bodies on every multipart route [${engine}]`, () => {
    let s: TestServer
    let routes: MultipartRoute[] = []
    let port = 0
    before(async () => {
      s = await startServer({ engine })
      routes = await multipartRoutes(s)
      port = Number(new URL(s.url).port)
    })
    after(() => s.close())

    for (const attack of ATTACKS) {
      it(`${attack.name}: 4xx within a second on every route, nothing kept`, async () => {
        // all routes at once: a late or abandoned body costs its wait once, not once per route
        const outcomes = await Promise.all(routes.map((r) => attack.send(port, r)))
        for (const [i, r] of routes.entries()) {
          const out = outcomes[i]
          if (attack.expectsAnswer) {
            assert.ok(out.status !== null && out.status >= 400 && out.status < 500, `${r.name}: ${out.status} ${out.body.slice(0, 200)}`)
            assert.ok(out.ms < 1000, `${r.name}: answered after ${out.ms} ms`)
            const body = JSON.parse(out.body)
            assert.equal(body.success, false, `${r.name}: ${out.body}`)
          } else {
            // the client has gone: any answer it may have read is still a client error
            assert.ok(out.status === null || (out.status >= 400 && out.status < 500), `${r.name}: ${out.status} ${out.body.slice(0, 200)}`)
          }
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
    })
  })
}
