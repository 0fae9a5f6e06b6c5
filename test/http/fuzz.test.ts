import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import zlib from 'node:zlib'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { FakeClock } from '../../src/util/clock.js'
import { multipartRoutes, rawMultipart, recordUncaught, tmpEntries, eventually, type MultipartRoute } from '../support/multipart-attacks.js'

/** Strings that have broken HTTP APIs before: traversal, encodings, huge numbers, odd unicode. */
const NAUGHTY = [
  '',
  ' ',
  '0',
  '-1',
  '1.5',
  '1e400',
  'NaN',
  'null',
  'true',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  '../../etc/passwd',
  '..%2f..%2f',
  '%00',
  '\u0000',
  '%E0%A4%A',
  '\ud800',
  '😀',
  '\u202e',
  'é',
  'ＡＢＣ',
  'a'.repeat(300),
  '<script>alert(1)</script>',
  "' or 1=1 --",
  '${7*7}',
  '%252e%252e%252f',
  'C:\\x',
  '\\\\srv\\s',
]
const naughty = fc.constantFrom(...NAUGHTY)
const jsonValue = fc.oneof(
  naughty,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(naughty, { maxLength: 3 }),
  fc.dictionary(naughty, naughty, { maxKeys: 3 }),
)

/** Percent-encodes UTF-8 bytes (a lone surrogate becomes U+FFFD, as a client would send it). */
const pct = (v: string) =>
  [...Buffer.from(v)]
    .map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0').toUpperCase()}`))
    .join('')

for (const engine of ENGINES) {
  describe(`fuzzing every documented API route [${engine}]`, () => {
    let s: TestServer
    let key = ''
    let cookie = ''
    const routes: Array<{ method: string; path: string }> = []
    before(async () => {
      s = await startServer({
        engine,
        env: {
          RATE_LIMITS: JSON.stringify({
            default: { minute: 100000, hour: 100000, day: 100000, concurrent: 100 },
            authenticated: { minute: 100000, hour: 100000, day: 100000, concurrent: 100 },
          }),
        },
      })
      const u = await s.user()
      key = u.key
      cookie = await s.login(u.username, u.password)
      const doc = (await s.get('/openapi.json')).json
      for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
        if (!/^\/(svc_api|api)\//.test(p)) continue
        for (const m of Object.keys(ops)) if (['get', 'post', 'put', 'patch', 'delete'].includes(m)) routes.push({ method: m.toUpperCase(), path: p })
      }
    })
    after(() => s.close())

    it('never answers 5xx, always JSON with a boolean success and a code in the spec ranges', async () => {
      assert.ok(routes.length >= 10, `only ${routes.length} documented API routes`)
      const routeArb = fc.constantFrom(...routes)
      await fc.assert(
        fc.asyncProperty(
          routeArb,
          naughty,
          fc.dictionary(fc.constantFrom('page', 'per_page', 'key', 'search', 'is_read', 'format', 'is_featured'), naughty, { maxKeys: 3 }),
          jsonValue,
          fc.constantFrom('key', 'cookie', 'none'),
          fc.constantFrom('json', 'form', 'raw', 'multipart'),
          async (route, param, query, body, auth, kind) => {
            const path = route.path.replace(/\{[^}]+\}/g, () => pct(param) || 'x')
            const qs = new URLSearchParams(query).toString()
            const opts: Parameters<TestServer['request']>[2] = { headers: { accept: 'application/json' } }
            if (auth === 'key') opts.key = key
            if (auth === 'cookie') opts.cookie = cookie
            if (route.method !== 'GET' && route.method !== 'DELETE') {
              if (kind === 'json') opts.json = body
              else if (kind === 'form') opts.form = { v: String(param) }
              else if (kind === 'multipart') {
                // JSON sent as multipart: a body the multipart parser cannot read
                opts.body = JSON.stringify(body) ?? 'null'
                opts.headers!['content-type'] = 'multipart/form-data; boundary=svcfuzz'
              } else {
                opts.body = String(param)
                opts.headers!['content-type'] = 'application/octet-stream'
              }
            }
            const r = await s.request(route.method, qs ? `${path}?${qs}` : path, opts)
            assert.ok(r.status < 500, `${route.method} ${path}?${qs} -> ${r.status} ${r.text.slice(0, 200)}`)
            if (r.header('content-type')?.includes('application/json')) {
              assert.equal(typeof r.json.success, 'boolean', `${route.method} ${path}: ${r.text.slice(0, 200)}`)
              if (r.json.success === false && typeof r.json.error_code === 'number') {
                assert.ok(r.json.error_code >= 1000 && r.json.error_code < 1700, `code ${r.json.error_code}`)
              }
              assert.ok(!/at .*\.js:\d+|node_modules|\/work\//.test(r.text), `internals leaked: ${r.text.slice(0, 200)}`)
            }
          },
        ),
        { numRuns: 250, seed: Number(process.env.FUZZ_SEED ?? 20261122) },
      )
    })
  })

  describe(`fuzzing every multipart route with damaged bodies [${engine}]`, () => {
    let s: TestServer
    let routes: MultipartRoute[] = []
    let port = 0
    let uncaught: ReturnType<typeof recordUncaught>
    const clock = new FakeClock(Date.now())
    before(async () => {
      // the server runs in this process: an uncaught error there must fail the test, not the hook
      uncaught = recordUncaught()
      // high limits: a 429 would hide the answer a route gives the body; the logs, so that a
      // 5xx a client that went away never reads still fails the test
      s = await startServer({ engine, clock, env: { RATE_LIMITS: HIGH_LIMITS }, captureLogs: true })
      routes = await multipartRoutes(s)
      port = Number(new URL(s.url).port)
    })
    after(async () => {
      uncaught.stop()
      await s.close()
    })

    /** A well-formed body for a route, with `boundary`. */
    const goodBody = (r: MultipartRoute, boundary: string, content: string) =>
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="${r.field}"; filename="${r.filename}"\r\nContent-Type: text/plain\r\n\r\n${content}\r\n--${boundary}--\r\n`,
      )

    /** `body` compressed as a Content-Encoding says (an unknown one: gzip). */
    const compress = (encoding: string, body: Buffer) =>
      encoding === 'deflate' ? zlib.deflateSync(body) : encoding === 'br' ? zlib.brotliCompressSync(body) : zlib.gzipSync(body)

    it('never answers 5xx, never leaves a temp file, and always answers', async () => {
      const cut = fc.double({ min: 0, max: 1, noNaN: true })
      const damage = fc.oneof(
        fc.record({ kind: fc.constant('truncate' as const), at: cut }),
        fc.record({ kind: fc.constant('flip' as const), at: cut, byte: fc.integer({ min: 0, max: 255 }) }),
        fc.record({
          kind: fc.constant('content-type' as const),
          ct: fc.constantFrom(
            'multipart/form-data',
            'multipart/form-data; boundary=',
            'multipart/form-data; boundary="unclosed',
            'multipart/mixed; boundary=b',
            `multipart/form-data; boundary=${'x'.repeat(300)}`,
            'multipart/form-data; boundary=other; charset=utf-16',
            'multipart/form-data;;;boundary=b',
          ),
        }),
        fc.record({ kind: fc.constant('noise' as const), bytes: fc.uint8Array({ maxLength: 400 }) }),
        // a Content-Encoding the service does not decode, over compressed bytes or (a lying
        // header) plain ones, whole or cut short
        fc.record({
          kind: fc.constant('encoded' as const),
          encoding: fc.constantFrom('gzip', 'deflate', 'br', 'gzip, identity', 'x-unknown'),
          compressed: fc.boolean(),
          cut: fc.option(cut),
        }),
        // JSON sent as multipart, with or without a boundary
        fc.record({ kind: fc.constant('json' as const), value: jsonValue, boundary: fc.boolean() }),
      )
      // how the client sends: at once, its body late, or going away mid-body (half-close or reset)
      const client = fc.oneof(
        { weight: 8, arbitrary: fc.constant({ kind: 'prompt' as const }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant('late' as const), delayMs: fc.integer({ min: 5, max: 60 }) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant('gone' as const), then: fc.constantFrom('end' as const, 'destroy' as const) }) },
      )
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...routes), damage, fc.constantFrom('{"a":1}', '<p>x</p>', ''), client, async (r, d, content, c) => {
          let body = goodBody(r, 'b', content)
          let contentType = 'multipart/form-data; boundary=b'
          const extraHeaders: Record<string, string> = {}
          if (d.kind === 'truncate') body = body.subarray(0, Math.floor(d.at * body.length))
          if (d.kind === 'flip') {
            body = Buffer.from(body)
            body[Math.min(body.length - 1, Math.floor(d.at * body.length))] = d.byte
          }
          if (d.kind === 'content-type') contentType = d.ct
          if (d.kind === 'noise') body = Buffer.from(d.bytes)
          if (d.kind === 'encoded') {
            extraHeaders['content-encoding'] = d.encoding
            if (d.compressed) body = compress(d.encoding, body)
            if (d.cut !== null) body = body.subarray(0, Math.floor(d.cut * body.length))
          }
          if (d.kind === 'json') {
            body = Buffer.from(JSON.stringify(d.value) ?? 'null')
            if (!d.boundary) contentType = 'multipart/form-data'
          }
          // a new minute: the form route's own limit (10 a minute per address and form) counts every attempt
          clock.advance(61_000)
          const out = await rawMultipart(port, r, body, {
            contentType,
            extraHeaders,
            ...(c.kind === 'late' ? { delayMs: c.delayMs } : {}),
            // gone: the declared length promises more than is sent
            ...(c.kind === 'gone' ? { then: c.then, length: body.length + 1000, waitMs: 1500 } : {}),
          })
          const what = `${r.name} ${JSON.stringify(d)} ${JSON.stringify(c)}`
          assert.deepEqual(uncaught.take(), [], `${what}: uncaught errors in the process (the server runs in it)`)
          if (c.kind !== 'gone') assert.ok(out.status !== null, `${what}: no answer`)
          assert.ok(out.status === null || out.status < 500, `${what}: ${out.status} ${out.body.slice(0, 200)}`)
        }),
        { numRuns: 200, seed: Number(process.env.FUZZ_SEED ?? 20261125) },
      )
      assert.deepEqual(
        await eventually(
          () => tmpEntries(s.dataDir),
          (t) => t.length === 0,
        ),
        [],
      )
      assert.equal((await s.get('/healthz')).status, 200)
      assert.deepEqual(uncaught.take(), [], 'uncaught errors in the process (the server runs in it)')
      assert.deepEqual(
        s.logs.filter((l) => l.level >= 50),
        [],
        'error-level log lines (a 5xx, read or not)',
      )
    })
  })
}
