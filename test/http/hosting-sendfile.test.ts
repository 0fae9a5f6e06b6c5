import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import zlib from 'node:zlib'
import crypto from 'node:crypto'
import { startServer, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { exchange, type Parsed } from '../support/raw-http.js'
import { openBodyFds, sendfileAvailable, sendfileStats } from '../../src/http/sendfile.js'

// The public host's zero-copy path (src/http/sendfile.ts) through the whole service: behind a
// TLS-terminating proxy (TRUST_PROXY=1, plain HTTP), a cached page goes out with sendfile.
// It does not depend on the database engine, so it runs on SQLite only.
const SKIP = !sendfileAvailable() && process.env.CI !== 'true'
  ? 'native addon not built (npm install prints why); the service copies bodies instead' : false

const page = (title: string) => HTML(title, '<p>' + `${title} lorem ipsum dolor sit amet `.repeat(1800) + '</p>')
const sha = (t: string) => crypto.createHash('sha256').update(t).digest('hex')
const PROXY = { 'x-forwarded-proto': 'https' }
const get = (port: number, path: string, headers = '') =>
  exchange(port, `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Forwarded-Proto: https\r\n${headers}\r\n`, [false], 600).then((r) => r.responses[0])
const withoutDate = (r: Parsed) => [...r.headers].filter(([k]) => k !== 'date').sort()

describe('public host: hot pages sent with sendfile behind a proxy', { skip: SKIP }, () => {
  let s: TestServer
  let port = 0
  let fdsBefore = 0
  let u: Awaited<ReturnType<TestServer['user']>>
  before(async () => {
    assert.ok(sendfileAvailable(), 'the native addon must be built in CI (npm install runs scripts/build-native.mjs)')
    fdsBefore = openBodyFds()
    s = await startServer({ env: { TRUST_PROXY: '1', RATE_LIMITS: HIGH_LIMITS } })
    port = Number(new URL(s.url).port)
    u = await s.user()
  })
  after(() => s?.close())

  it('answers a hot page from a memfd with the same headers and bytes as the first (copied) answer, and an update at once', async () => {
    const a = page('first')
    assert.ok(Buffer.byteLength(a) > 50 * 1024)
    assert.equal((await uploadFile(s, { key: u.key }, 'big.html', a, {}, PROXY)).status, 200)
    const s0 = { ...sendfileStats }
    const first = await get(port, `/${u.username}/big.html`)
    assert.equal(sendfileStats.whole, s0.whole, 'the first answer (resolved, then loaded) is copied')
    const hot = await get(port, `/${u.username}/big.html`)
    assert.equal(sendfileStats.whole, s0.whole + 1, 'the cached answer went by sendfile')
    assert.equal(openBodyFds(), fdsBefore + 1)
    for (const r of [first, hot]) {
      assert.equal(r.status, 'HTTP/1.1 200 OK')
      assert.equal(r.body.toString(), a)
      assert.match(r.headers.get('content-security-policy')!, /sandbox/)
    }
    assert.deepEqual(withoutDate(hot), withoutDate(first))
    assert.equal(hot.headers.get('etag'), `"${sha(a)}"`)

    // compressed and ranged answers are copied, and right
    const br = await get(port, `/${u.username}/big.html`, 'Accept-Encoding: br\r\n')
    assert.equal(br.headers.get('content-encoding'), 'br')
    assert.equal(zlib.brotliDecompressSync(br.body).toString(), a)
    const range = await get(port, `/${u.username}/big.html`, 'Range: bytes=10-19\r\n')
    assert.equal(range.status, 'HTTP/1.1 206 Partial Content')
    assert.equal(range.body.toString(), a.slice(10, 20))

    // an update is served at once, from its own memfd once hot
    const b = page('second')
    assert.equal((await uploadFile(s, { key: u.key }, 'big.html', b, {}, PROXY)).status, 200)
    const s1 = { ...sendfileStats }
    assert.equal((await get(port, `/${u.username}/big.html`)).body.toString(), b)
    const again = await get(port, `/${u.username}/big.html`)
    assert.equal(again.body.toString(), b)
    assert.equal(sendfileStats.whole, s1.whole + 1)
    assert.equal(again.headers.get('etag'), `"${sha(b)}"`)
    assert.notEqual(again.headers.get('etag'), hot.headers.get('etag'))

    // operators see it in /metrics
    const m = await s.get('/metrics', { headers: PROXY })
    assert.equal(m.status, 200)
    const whole = /^svc_hosting_sendfile_total\{result="whole"\} (\d+)$/m.exec(m.text)
    assert.ok(whole && Number(whole[1]) >= 2, m.text.split('\n').filter((l) => l.includes('sendfile')).join('\n'))
  })

  it('closes its memfds when the service closes', async () => {
    assert.ok(openBodyFds() > fdsBefore)
    await s.close()
    assert.equal(openBodyFds(), fdsBefore)
  })

  it('SENDFILE=0: the same answers, copied, and no memfd', async () => {
    const off = await startServer({ env: { TRUST_PROXY: '1', SENDFILE: '0', RATE_LIMITS: HIGH_LIMITS } })
    try {
      const v = await off.user()
      const p = page('off')
      await uploadFile(off, { key: v.key }, 'big.html', p, {}, PROXY)
      const offPort = Number(new URL(off.url).port)
      const s0 = { ...sendfileStats }
      const fds = openBodyFds()
      for (let i = 0; i < 3; i++) assert.equal((await get(offPort, `/${v.username}/big.html`)).body.toString(), p)
      assert.deepEqual({ ...sendfileStats }, s0)
      assert.equal(openBodyFds(), fds)
    } finally {
      await off.close()
    }
  })
})
