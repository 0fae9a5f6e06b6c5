import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import zlib from 'node:zlib'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { startServer, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { exchange, type Parsed } from '../support/raw-http.js'
import { sendfileAvailable, sendfileStats } from '../../src/http/sendfile.js'

// The public host's zero-copy path (src/http/sendfile.ts) through the whole service: behind a
// TLS-terminating proxy (TRUST_PROXY=1, plain HTTP), a cached page goes out with sendfile.
// It does not depend on the database engine, so it runs on SQLite only.
const SKIP = !sendfileAvailable() && process.env.CI !== 'true' ? 'native addon not built (npm install prints why); the service copies bodies instead' : false

const page = (title: string) => HTML(title, '<p>' + `${title} lorem ipsum dolor sit amet `.repeat(1800) + '</p>')
const sha = (t: string) => crypto.createHash('sha256').update(t).digest('hex')
const PROXY = { 'x-forwarded-proto': 'https' }
const get = (port: number, path: string, headers = '') =>
  exchange(port, `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Forwarded-Proto: https\r\n${headers}\r\n`, [false], 600).then((r) => r.responses[0])
const withoutDate = (r: Parsed) => [...r.headers].filter(([k]) => k !== 'date').sort()

/** Descriptors of this process open on files under `dir` (what /proc says). */
const openUnder = (dir: string): number =>
  fs.readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)
    } catch {
      return false
    }
  }).length

describe('public host: pages sent from their blob files with sendfile behind a proxy', { skip: SKIP }, () => {
  let s: TestServer
  let port = 0
  let u: Awaited<ReturnType<TestServer['user']>>
  before(async () => {
    assert.ok(sendfileAvailable(), 'the native addon must be built in CI (npm install runs scripts/build-native.mjs)')
    s = await startServer({ env: { TRUST_PROXY: '1', RATE_LIMITS: HIGH_LIMITS } })
    port = Number(new URL(s.url).port)
    u = await s.user()
  })
  after(() => s?.close())

  it('answers a page from its blob file, first and hot answers alike, and an update at once', async () => {
    const a = page('first')
    assert.ok(Buffer.byteLength(a) > 50 * 1024)
    assert.equal((await uploadFile(s, { key: u.key }, 'big.html', a, {}, PROXY)).status, 200)
    const s0 = { ...sendfileStats }
    const first = await get(port, `/${u.username}/big.html`)
    const hot = await get(port, `/${u.username}/big.html`)
    assert.equal(sendfileStats.whole, s0.whole + 2, 'both answers went by sendfile from the blob file')
    for (const r of [first, hot]) {
      assert.equal(r.status, 'HTTP/1.1 200 OK')
      assert.equal(r.body.toString(), a)
      assert.match(r.headers.get('content-security-policy')!, /sandbox/)
    }
    assert.deepEqual(withoutDate(hot), withoutDate(first))
    assert.equal(hot.headers.get('etag'), `"${sha(a)}"`)
    assert.equal(openUnder(path.join(s.dataDir, 'blobs')), 1, 'one descriptor, kept open by the open-file cache')

    // compressed (once made, in the background) and ranged answers are right
    let br = await get(port, `/${u.username}/big.html`, 'Accept-Encoding: br\r\n')
    for (let i = 0; i < 100 && br.headers.get('content-encoding') !== 'br'; i++) {
      await new Promise((ok) => setTimeout(ok, 20))
      br = await get(port, `/${u.username}/big.html`, 'Accept-Encoding: br\r\n')
    }
    assert.equal(br.headers.get('content-encoding'), 'br')
    assert.equal(zlib.brotliDecompressSync(br.body).toString(), a)
    const range = await get(port, `/${u.username}/big.html`, 'Range: bytes=10-19\r\n')
    assert.equal(range.status, 'HTTP/1.1 206 Partial Content')
    assert.equal(range.body.toString(), a.slice(10, 20))

    // an update is served at once, from its own blob file
    const b = page('second')
    assert.equal((await uploadFile(s, { key: u.key }, 'big.html', b, {}, PROXY)).status, 200)
    const s1 = { ...sendfileStats }
    assert.equal((await get(port, `/${u.username}/big.html`)).body.toString(), b)
    const again = await get(port, `/${u.username}/big.html`)
    assert.equal(again.body.toString(), b)
    assert.equal(sendfileStats.whole, s1.whole + 2)
    assert.equal(again.headers.get('etag'), `"${sha(b)}"`)
    assert.notEqual(again.headers.get('etag'), hot.headers.get('etag'))

    // operators see it in /metrics
    // a direct loopback scrape: no header a proxy adds
    const m = await s.get('/metrics')
    assert.equal(m.status, 200)
    const whole = /^svc_hosting_sendfile_total\{result="whole"\} (\d+)$/m.exec(m.text)
    assert.ok(
      whole && Number(whole[1]) >= 2,
      m.text
        .split('\n')
        .filter((l) => l.includes('sendfile'))
        .join('\n'),
    )
  })

  it('closes its blob files when the service closes', async () => {
    assert.ok(openUnder(path.join(s.dataDir, 'blobs')) > 0)
    await s.close()
    assert.equal(openUnder(path.join(s.dataDir, 'blobs')), 0)
  })

  it('SENDFILE=0: the same answers, copied', async () => {
    const off = await startServer({ env: { TRUST_PROXY: '1', SENDFILE: '0', RATE_LIMITS: HIGH_LIMITS } })
    try {
      const v = await off.user()
      const p = page('off')
      await uploadFile(off, { key: v.key }, 'big.html', p, {}, PROXY)
      const offPort = Number(new URL(off.url).port)
      const s0 = { ...sendfileStats }
      for (let i = 0; i < 3; i++) assert.equal((await get(offPort, `/${v.username}/big.html`)).body.toString(), p)
      assert.deepEqual({ ...sendfileStats }, s0)
    } finally {
      await off.close()
    }
  })
})
