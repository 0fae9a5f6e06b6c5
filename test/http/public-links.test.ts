import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import zlib from 'node:zlib'
import { request } from 'undici'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, uploadFile } from '../support/hosting.js'
import { imageForm, makeImage, svc } from '../support/images.js'

// One table of conditional, partial and HEAD requests (src/http/representation.ts), run against
// every kind of public link: a hosted page on the path form and on its user's origin, an image
// original and a variant, a hosted-data link.

interface Answer {
  status: number
  body: Buffer
  header(name: string): string | undefined
}
interface Link {
  name: string
  /** The exact bytes of the identity representation. */
  bytes: Buffer
  /** Whether answers carry Last-Modified (If-Modified-Since applies). */
  lastModified: boolean
  /** Whether Accept-Encoding may give a compressed form. */
  compressible: boolean
  fetch(method: 'GET' | 'HEAD', headers: Record<string, string>): Promise<Answer>
}

interface Case {
  name: string
  method?: 'GET' | 'HEAD'
  headers: (l: Link, etag: string) => Record<string, string>
  /** Expected status, and the bytes of the body (null: none), from the link's bytes. */
  expect: (l: Link) => { status: number; body: ((b: Buffer) => Buffer) | null; contentRange?: (n: number) => string }
}

const whole = (b: Buffer) => b
const empty = (b: Buffer) => b.subarray(0, 0)
const FUTURE = new Date(Date.now() + 86_400_000).toUTCString()
const PAST = 'Sat, 01 Jan 2000 00:00:00 GMT'

const CASES: Case[] = [
  { name: 'plain GET', headers: () => ({}), expect: () => ({ status: 200, body: whole }) },
  { name: 'HEAD', method: 'HEAD', headers: () => ({}), expect: () => ({ status: 200, body: null }) },
  {
    name: 'range first-last',
    headers: () => ({ range: 'bytes=0-9' }),
    expect: () => ({ status: 206, body: (b) => b.subarray(0, 10), contentRange: (n) => `bytes 0-9/${n}` }),
  },
  {
    name: 'range open end',
    headers: () => ({ range: 'bytes=5-' }),
    expect: () => ({ status: 206, body: (b) => b.subarray(5), contentRange: (n) => `bytes 5-${n - 1}/${n}` }),
  },
  {
    name: 'range suffix',
    headers: () => ({ range: 'bytes=-7' }),
    expect: () => ({ status: 206, body: (b) => b.subarray(-7), contentRange: (n) => `bytes ${n - 7}-${n - 1}/${n}` }),
  },
  {
    name: 'range past the end is clamped',
    headers: () => ({ range: 'bytes=0-99999999' }),
    expect: () => ({ status: 206, body: whole, contentRange: (n) => `bytes 0-${n - 1}/${n}` }),
  },
  {
    name: 'range starting past the end: 416',
    headers: (l) => ({ range: `bytes=${l.bytes.length}-` }),
    expect: () => ({ status: 416, body: (b) => b.subarray(0, 0), contentRange: (n) => `bytes */${n}` }),
  },
  {
    name: 'zero suffix: 416',
    headers: () => ({ range: 'bytes=-0' }),
    expect: () => ({ status: 416, body: (b) => b.subarray(0, 0), contentRange: (n) => `bytes */${n}` }),
  },
  { name: 'several ranges: whole', headers: () => ({ range: 'bytes=0-1,3-4' }), expect: () => ({ status: 200, body: whole }) },
  { name: 'reversed range: whole', headers: () => ({ range: 'bytes=5-1' }), expect: () => ({ status: 200, body: whole }) },
  { name: 'other unit: whole', headers: () => ({ range: 'items=0-1' }), expect: () => ({ status: 200, body: whole }) },
  // range units are case-insensitive (RFC 9110 14.1); a blank after "=" is taken, as nginx does
  {
    name: 'unit in capitals, a blank after "="',
    headers: () => ({ range: 'BYTES= 0-9' }),
    expect: () => ({ status: 206, body: (b) => b.subarray(0, 10), contentRange: (n) => `bytes 0-9/${n}` }),
  },
  {
    name: 'HEAD with a range',
    method: 'HEAD',
    headers: () => ({ range: 'bytes=0-9' }),
    expect: () => ({ status: 206, body: null, contentRange: (n) => `bytes 0-9/${n}` }),
  },
  {
    name: 'If-Range with the ETag',
    headers: (_l, etag) => ({ range: 'bytes=0-9', 'if-range': etag }),
    expect: () => ({ status: 206, body: (b) => b.subarray(0, 10), contentRange: (n) => `bytes 0-9/${n}` }),
  },
  { name: 'If-Range stale: whole', headers: () => ({ range: 'bytes=0-9', 'if-range': '"stale"' }), expect: () => ({ status: 200, body: whole }) },
  { name: 'If-Range weak tag: whole', headers: (_l, etag) => ({ range: 'bytes=0-9', 'if-range': `W/${etag}` }), expect: () => ({ status: 200, body: whole }) },
  { name: 'If-None-Match', headers: (_l, etag) => ({ 'if-none-match': etag }), expect: () => ({ status: 304, body: (b) => b.subarray(0, 0) }) },
  { name: 'If-None-Match weak', headers: (_l, etag) => ({ 'if-none-match': `W/${etag}` }), expect: () => ({ status: 304, body: (b) => b.subarray(0, 0) }) },
  {
    name: 'If-None-Match list',
    headers: (_l, etag) => ({ 'if-none-match': `"other", ${etag}` }),
    expect: () => ({ status: 304, body: (b) => b.subarray(0, 0) }),
  },
  { name: 'If-None-Match *', headers: () => ({ 'if-none-match': '*' }), expect: () => ({ status: 304, body: (b) => b.subarray(0, 0) }) },
  { name: 'If-None-Match other', headers: () => ({ 'if-none-match': '"other"' }), expect: () => ({ status: 200, body: whole }) },
  {
    name: 'If-None-Match decides over If-Modified-Since',
    headers: () => ({ 'if-none-match': '"other"', 'if-modified-since': FUTURE }),
    expect: () => ({ status: 200, body: whole }),
  },
  {
    name: 'If-Modified-Since later',
    headers: () => ({ 'if-modified-since': FUTURE }),
    expect: (l) => (l.lastModified ? { status: 304, body: (b) => b.subarray(0, 0) } : { status: 200, body: whole }),
  },
  { name: 'If-Modified-Since earlier', headers: () => ({ 'if-modified-since': PAST }), expect: () => ({ status: 200, body: whole }) },
  { name: 'If-Modified-Since invalid', headers: () => ({ 'if-modified-since': 'yesterday' }), expect: () => ({ status: 200, body: whole }) },
  { name: 'HEAD revalidated', method: 'HEAD', headers: (_l, etag) => ({ 'if-none-match': etag }), expect: () => ({ status: 304, body: null }) },
  { name: 'If-Match the ETag', headers: (_l, etag) => ({ 'if-match': etag }), expect: () => ({ status: 200, body: whole }) },
  { name: 'If-Match in a list', headers: (_l, etag) => ({ 'if-match': `"other", ${etag}` }), expect: () => ({ status: 200, body: whole }) },
  { name: 'If-Match *', headers: () => ({ 'if-match': '*' }), expect: () => ({ status: 200, body: whole }) },
  { name: 'If-Match other: 412', headers: () => ({ 'if-match': '"nope"' }), expect: () => ({ status: 412, body: empty }) },
  { name: 'If-Match weak: 412 (strong comparison)', headers: (_l, etag) => ({ 'if-match': `W/${etag}` }), expect: () => ({ status: 412, body: empty }) },
  { name: 'HEAD If-Match other: 412', method: 'HEAD', headers: () => ({ 'if-match': '"nope"' }), expect: () => ({ status: 412, body: empty }) },
  {
    name: 'If-Match decides before If-None-Match',
    headers: (_l, etag) => ({ 'if-match': '"nope"', 'if-none-match': etag }),
    expect: () => ({ status: 412, body: empty }),
  },
  { name: 'If-Match other with a range: 412', headers: () => ({ 'if-match': '"nope"', range: 'bytes=0-9' }), expect: () => ({ status: 412, body: empty }) },
  {
    name: 'If-Match the ETag with a range',
    headers: (_l, etag) => ({ 'if-match': etag, range: 'bytes=0-9' }),
    expect: () => ({ status: 206, body: (b) => b.subarray(0, 10), contentRange: (n) => `bytes 0-9/${n}` }),
  },
  { name: 'If-Unmodified-Since earlier: 412', headers: () => ({ 'if-unmodified-since': PAST }), expect: () => ({ status: 412, body: empty }) },
  { name: 'If-Unmodified-Since later', headers: () => ({ 'if-unmodified-since': FUTURE }), expect: () => ({ status: 200, body: whole }) },
  { name: 'If-Unmodified-Since invalid', headers: () => ({ 'if-unmodified-since': 'yesterday' }), expect: () => ({ status: 200, body: whole }) },
  {
    name: 'If-Match decides over If-Unmodified-Since',
    headers: (_l, etag) => ({ 'if-match': etag, 'if-unmodified-since': PAST }),
    expect: () => ({ status: 200, body: whole }),
  },
  {
    name: 'Accept-Encoding with a range: identity',
    headers: () => ({ 'accept-encoding': 'gzip, br', range: 'bytes=0-9' }),
    expect: () => ({ status: 206, body: (b) => b.subarray(0, 10), contentRange: (n) => `bytes 0-9/${n}` }),
  },
  { name: 'Accept-Encoding identity', headers: () => ({ 'accept-encoding': 'identity' }), expect: () => ({ status: 200, body: whole }) },
  { name: 'Accept-Encoding refusing all', headers: () => ({ 'accept-encoding': 'br;q=0, gzip;q=0' }), expect: () => ({ status: 200, body: whole }) },
]

const decoded = (a: Answer): Buffer => {
  const enc = a.header('content-encoding')
  return enc === 'br' ? zlib.brotliDecompressSync(a.body) : enc === 'gzip' ? zlib.gunzipSync(a.body) : a.body
}

for (const engine of ENGINES) {
  describe(`public links: one table of ETag, 304, Range and HEAD cases [${engine}]`, () => {
    let s: TestServer
    const links: Link[] = []

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      const viaService = (path: string) => async (method: 'GET' | 'HEAD', headers: Record<string, string>) => s.request(method, path, { headers })

      const page = Buffer.from(HTML('table', '<p>' + 'a public page for the table of cases '.repeat(60) + '</p>'))
      assert.equal((await uploadFile(s, { key: u.key }, 'table.html', page)).status, 200)
      links.push({ name: 'page, path form', bytes: page, lastModified: true, compressible: true, fetch: viaService(`/${u.username}/table.html`) })
      links.push({
        name: "page, user's origin",
        bytes: page,
        lastModified: true,
        compressible: true,
        async fetch(method, headers) {
          const r = await request(`${s.httpUrl}/table.html`, { method, headers: { host: `${u.username}.localhost`, ...headers } })
          const body = Buffer.from(await r.body.arrayBuffer())
          const h = r.headers as Record<string, string | undefined>
          return { status: r.statusCode, body, header: (n: string) => h[n.toLowerCase()] }
        },
      })

      await svc(s, 'grant', u.username, 'image-host')
      const png = await makeImage('png', { width: 40, height: 30, color: '#2244aa' })
      const form = imageForm([{ name: 't.png', data: png }])
      const up = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      assert.equal(up.status, 200, up.text)
      const img = up.json.images[0] as { public_url: string }
      const imgPath = new URL(img.public_url).pathname
      const original = await s.get(imgPath)
      assert.equal(original.status, 200)
      links.push({ name: 'image original', bytes: original.body, lastModified: true, compressible: false, fetch: viaService(imgPath) })
      const variant = await s.get(`${imgPath}?w=20&format=webp`)
      assert.equal(variant.status, 200)
      assert.ok(variant.body.length > 20)
      links.push({ name: 'image variant', bytes: variant.body, lastModified: true, compressible: false, fetch: viaService(`${imgPath}?w=20&format=webp`) })

      await svc(s, 'grant', u.username, 'hosted-data')
      const content = JSON.stringify({ rows: Array.from({ length: 40 }, (_, i) => ({ i, name: `row ${i}` })) })
      const f = await s.request('POST', '/api/hosted-data/files', { cookie, json: { display_name: 'table.json', content, content_type: 'application/json' } })
      assert.equal(f.status, 200, f.text)
      const dataPath = new URL(f.json.file.public_url as string).pathname
      links.push({ name: 'hosted-data link', bytes: Buffer.from(content), lastModified: true, compressible: true, fetch: viaService(dataPath) })
    })
    after(() => s?.close())

    it('answers every case alike on every kind of public link', async () => {
      for (const l of links) {
        const first = await l.fetch('GET', {})
        assert.equal(first.status, 200, l.name)
        assert.ok(first.body.equals(l.bytes), l.name)
        assert.equal(first.header('accept-ranges'), 'bytes', l.name)
        const etag = first.header('etag')!
        assert.match(etag, /^"[^"]+"$/, l.name)
        assert.equal(first.header('last-modified') !== undefined, l.lastModified, l.name)
        for (const c of CASES) {
          const what = `${l.name}: ${c.name}`
          const r = await l.fetch(c.method ?? 'GET', c.headers(l, etag))
          const want = c.expect(l)
          assert.equal(r.status, want.status, what)
          assert.equal(r.header('etag'), etag, `${what}: ETag`)
          assert.equal(r.header('content-encoding'), undefined, `${what}: identity`)
          // one request's failed precondition: no shared cache may keep it for the URL
          if (r.status === 412) {
            assert.equal(r.header('cache-control'), 'private, no-cache', `${what}: Cache-Control`)
            assert.equal(r.header('content-length'), '0', `${what}: length`)
          }
          if (want.contentRange) assert.equal(r.header('content-range'), want.contentRange(l.bytes.length), what)
          else assert.equal(r.header('content-range'), undefined, what)
          if (want.body === null) {
            assert.equal(r.body.length, 0, `${what}: no body`)
            if (r.status !== 304) {
              const n = r.status === 206 ? 10 : l.bytes.length
              assert.equal(r.header('content-length'), String(n), `${what}: length`)
            }
          } else {
            const body = want.body(l.bytes)
            assert.ok(r.body.equals(body), `${what}: ${r.body.length} bytes, want ${body.length}`)
            if (r.status === 200 || r.status === 206) assert.equal(r.header('content-length'), String(body.length), `${what}: length`)
          }
        }
      }
    })

    it('negotiates compression: a compressed form once made (never on the request path), identity where none applies', async () => {
      for (const l of links) {
        let r = await l.fetch('GET', { 'accept-encoding': 'gzip, br' })
        for (let i = 0; l.compressible && i < 100 && r.header('content-encoding') === undefined; i++) {
          await new Promise((ok) => setTimeout(ok, 20))
          r = await l.fetch('GET', { 'accept-encoding': 'gzip, br' })
        }
        assert.equal(r.status, 200, l.name)
        assert.equal(r.header('content-encoding'), l.compressible ? 'br' : undefined, l.name)
        assert.equal(r.header('last-modified') !== undefined, l.lastModified, `${l.name}: Last-Modified`)
        assert.ok(decoded(r).equals(l.bytes), l.name)
        if (l.compressible) assert.equal(r.header('vary'), 'Accept-Encoding', l.name)
        let gz = await l.fetch('GET', { 'accept-encoding': 'gzip' })
        for (let i = 0; l.compressible && i < 100 && gz.header('content-encoding') === undefined; i++) {
          await new Promise((ok) => setTimeout(ok, 20))
          gz = await l.fetch('GET', { 'accept-encoding': 'gzip' })
        }
        assert.equal(gz.header('content-encoding'), l.compressible ? 'gzip' : undefined, l.name)
        assert.ok(decoded(gz).equals(l.bytes), l.name)
        // the compressed form's own tag revalidates too
        const again = await l.fetch('GET', { 'accept-encoding': 'gzip, br', 'if-none-match': r.header('etag')! })
        assert.equal(again.status, 304, l.name)
      }
    })
  })
}
