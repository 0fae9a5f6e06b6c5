import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import zlib from 'node:zlib'
import https from 'node:https'
import type { Readable } from 'node:stream'
import { fetch } from 'undici'
import { ENGINES, REDIS_URL, insecureAgent, multipart, needs, startServer, type Res, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'
import { deploySite } from '../support/deploys.js'
import { eventually } from '../support/multipart-attacks.js'

const sha = (b: string | Buffer) => crypto.createHash('sha256').update(b).digest('hex')
const BIG_PAGE = HTML('big', '<p>' + 'lorem ipsum dolor sit amet '.repeat(400) + '</p>')

/** The headers every user-content answer must carry, and never a cookie. */
function assertSandboxed(r: Res, what: string) {
  const csp = r.header('content-security-policy') ?? ''
  assert.match(csp, /(^|;\s*)sandbox\b/, `${what}: CSP sandbox`)
  assert.ok(!csp.includes('allow-same-origin'), `${what}: no allow-same-origin`)
  assert.equal(r.header('x-content-type-options'), 'nosniff', `${what}: nosniff`)
  assert.equal(r.header('set-cookie'), undefined, `${what}: no Set-Cookie`)
  assert.equal(r.header('x-ratelimit-limit'), undefined, `${what}: not counted against API rate limits`)
}

/** The page a 451 notice's report link names (its `url` parameter). */
function reportedUrl(html: string): string | null {
  const href = /<a href="([^"]*svc-report[^"]*)">/.exec(html)?.[1]
  return href === undefined ? null : new URL(href.replaceAll('&amp;', '&'), 'http://x').searchParams.get('url')
}

/** GET with the path sent exactly as written (fetch clients normalise /./ and /../ away). */
function rawGet(base: string, rawPath: string): Promise<{ status: number; text: string; location?: string }> {
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    const req = https.request({ host: u.hostname, port: u.port, path: rawPath, method: 'GET', rejectUnauthorized: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), location: res.headers.location }))
    })
    req.on('error', reject)
    req.end()
  })
}

for (const engine of ENGINES) {
  describe(`public host [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      u = await s.user()
    })
    after(() => s.close())

    it('serves a single file with type, ETag (content hash), Last-Modified, Cache-Control and the sandbox', async () => {
      const page = HTML('hello')
      await uploadFile(s, { key: u.key }, 'hello.html', page)
      for (const method of ['GET', 'HEAD']) {
        const r = await s.request(method, `/${u.username}/hello.html`)
        assert.equal(r.status, 200, method)
        assert.equal(r.header('content-type'), 'text/html; charset=utf-8')
        assert.equal(r.header('etag'), `"${sha(page)}"`)
        assert.equal(r.header('content-length'), String(Buffer.byteLength(page)))
        assert.ok(!Number.isNaN(Date.parse(r.header('last-modified')!)))
        assert.match(r.header('cache-control')!, /must-revalidate|max-age=\d+/)
        assert.equal(r.header('accept-ranges'), 'bytes')
        assertSandboxed(r, method)
        assert.equal(r.text, method === 'GET' ? page : '')
      }
      const q = await s.get(`/${u.username}/hello.html?v=3`)
      assert.equal(q.text, page, 'a query string is ignored')
      const enc = await s.get(`/${u.username}/hello%2Ehtml`)
      assert.equal(enc.text, page, 'percent-encoded names are decoded once')
    })

    it('answers conditional and range requests: 304, 206, 416', async () => {
      const r0 = await s.get(`/${u.username}/hello.html`)
      const etag = r0.header('etag')!
      const inm = await s.get(`/${u.username}/hello.html`, { headers: { 'if-none-match': etag } })
      assert.equal(inm.status, 304)
      assert.equal(inm.header('etag'), etag)
      assert.equal(inm.text, '')
      assertSandboxed(inm, '304')
      assert.equal((await s.get(`/${u.username}/hello.html`, { headers: { 'if-none-match': '"other"' } })).status, 200)
      assert.equal((await s.get(`/${u.username}/hello.html`, { headers: { 'if-modified-since': r0.header('last-modified')! } })).status, 304)
      assert.equal((await s.get(`/${u.username}/hello.html`, { headers: { 'if-modified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' } })).status, 200)
      const table: Array<[string, number, string | null, string | null]> = [
        ['bytes=0-4', 206, 'bytes 0-4/', r0.text.slice(0, 5)],
        ['bytes=10-', 206, 'bytes 10-', r0.text.slice(10)],
        ['bytes=-5', 206, null, r0.text.slice(-5)],
        ['bytes=0-99999', 206, null, r0.text],
        ['bytes=99999-', 416, `bytes */${r0.body.length}`, ''],
        ['bytes=5-1', 200, null, r0.text],
        ['bytes=0-1,3-4', 200, null, r0.text],
        ['items=0-1', 200, null, r0.text],
      ]
      for (const [range, status, cr, body] of table) {
        const r = await s.get(`/${u.username}/hello.html`, { headers: { range } })
        assert.equal(r.status, status, range)
        if (cr) assert.ok(r.header('content-range')?.startsWith(cr), `${range}: ${r.header('content-range')}`)
        if (body !== null) assert.equal(r.text, body, range)
        assertSandboxed(r, range)
      }
      const stale = await s.get(`/${u.username}/hello.html`, { headers: { range: 'bytes=0-4', 'if-range': '"stale"' } })
      assert.equal(stale.status, 200, 'If-Range that does not match serves the whole file')
      const fresh = await s.get(`/${u.username}/hello.html`, { headers: { range: 'bytes=0-4', 'if-range': etag } })
      assert.equal(fresh.status, 206)
    })

    describe('compresses with brotli or gzip when accepted, identical bytes after decoding', () => {
      before(async () => {
        await uploadFile(s, { key: u.key }, 'big.html', BIG_PAGE)
      })
      const cases: Array<[string, string | undefined]> = [
        ['br, gzip', 'br'],
        ['gzip, deflate', 'gzip'],
        ['br;q=0, gzip', 'gzip'],
        ['identity', undefined],
        ['*', 'br'],
        ['gzip;q=0', undefined],
      ]
      it('answers identity first: compressed forms are made in the background, never on the request path', async () => {
        const first = await s.get(`/${u.username}/big.html`, { headers: { 'accept-encoding': 'br, gzip' } })
        assert.equal(first.header('content-encoding'), undefined)
        assert.equal(first.text, BIG_PAGE)
      })
      for (const [ae, want] of cases) {
        it(`Accept-Encoding: ${ae} -> ${want ?? 'identity'}`, async () => {
          let r = await s.get(`/${u.username}/big.html`, { headers: { 'accept-encoding': ae } })
          for (let i = 0; i < 100 && r.header('content-encoding') !== want; i++) {
            await new Promise((ok) => setTimeout(ok, 20))
            r = await s.get(`/${u.username}/big.html`, { headers: { 'accept-encoding': ae } })
          }
          assert.equal(r.status, 200)
          assert.equal(r.header('content-encoding'), want, ae)
          assert.equal(r.header('vary'), 'Accept-Encoding')
          const plain = want === 'br' ? zlib.brotliDecompressSync(r.body) : want === 'gzip' ? zlib.gunzipSync(r.body) : r.body
          assert.equal(plain.toString(), BIG_PAGE, ae)
          if (want) assert.ok(r.body.length < Buffer.byteLength(BIG_PAGE) / 4)
          assertSandboxed(r, ae)
          const again = await s.get(`/${u.username}/big.html`, { headers: { 'accept-encoding': ae, 'if-none-match': r.header('etag')! } })
          assert.equal(again.status, 304, `${ae} revalidates`)
        })
      }
    })

    it('serves published folder projects: index.html for directories, slash redirects, every common type', async () => {
      const files: Array<[string, string | Buffer, string]> = [
        ['index.html', HTML('home'), 'text/html; charset=utf-8'],
        ['docs/index.html', HTML('docs'), 'text/html; charset=utf-8'],
        ['css/site.css', 'body{}', 'text/css; charset=utf-8'],
        ['js/app.js', 'console.log(1)', 'text/javascript; charset=utf-8'],
        ['js/mod.mjs', 'export {}', 'text/javascript; charset=utf-8'],
        // what today's build tools emit, compared with nginx's mime.types and Netlify (decision 145)
        ['js/common.cjs', 'module.exports = 1', 'text/javascript; charset=utf-8'],
        ['js/app.js.map', '{"version":3}', 'application/json; charset=utf-8'],
        ['img/a.avif', Buffer.from('0000001c66747970', 'hex'), 'image/avif'],
        ['img/a.webp', Buffer.from('RIFF\0\0\0\0WEBP'), 'image/webp'],
        ['favicon.ico', Buffer.from([0, 0, 1, 0, 1, 0]), 'image/x-icon'],
        ['sitemap.xml', '<?xml version="1.0"?><urlset/>', 'application/xml'],
        ['doc.pdf', Buffer.from('%PDF-1.7\n'), 'application/pdf'],
        ['v/clip.mp4', Buffer.from('0000001866747970', 'hex'), 'video/mp4'],
        ['v/clip.webm', Buffer.from('1a45dfa3', 'hex'), 'video/webm'],
        ['v/subs.vtt', 'WEBVTT\n', 'text/vtt; charset=utf-8'],
        ['data.json', '{"a":1}', 'application/json; charset=utf-8'],
        ['img/logo.svg', '<svg xmlns="http://www.w3.org/2000/svg"/>', 'image/svg+xml'],
        ['img/p.png', Buffer.from('89504e470d0a1a0a', 'hex'), 'image/png'],
        ['font/f.woff2', Buffer.from('wOF2xxxx'), 'font/woff2'],
        ['w.wasm', Buffer.from([0, 0x61, 0x73, 0x6d]), 'application/wasm'],
        ['notes.txt', 'plain', 'text/plain; charset=utf-8'],
        ['latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'text/plain'],
        ['site.webmanifest', '{}', 'application/manifest+json; charset=utf-8'],
        ['noext', 'x', 'application/octet-stream'],
        // a name that is only an extension has none, as nginx and Netlify read it
        ['html', HTML('bare'), 'application/octet-stream'],
        ['js/css', 'body{}', 'application/octet-stream'],
        ['cjs', 'module.exports = 1', 'application/octet-stream'],
        ['with space.html', HTML('space'), 'text/html; charset=utf-8'],
      ]
      await batchUpload(
        s,
        { key: u.key },
        'site',
        files.map(([filename, data]) => ({ filename, data })),
      )
      assert.equal((await s.get(`/${u.username}/site/`)).status, 404, 'not published yet')
      assert.equal((await s.post('/api/folders/site/publish', { key: u.key })).status, 200)
      for (const [p, data, type] of files) {
        const r = await s.get(`/${u.username}/site/${p.split('/').map(encodeURIComponent).join('/')}`)
        assert.equal(r.status, 200, p)
        assert.equal(r.header('content-type'), type, p)
        assert.ok(r.body.equals(Buffer.from(data)), p)
        assertSandboxed(r, p)
      }
      const root = await s.get(`/${u.username}/site/`)
      assert.equal(root.text, HTML('home'))
      const noSlash = await s.get(`/${u.username}/site?x=1`)
      assert.equal(noSlash.status, 301)
      assert.equal(noSlash.header('location'), `/${u.username}/site/?x=1`)
      const dir = await s.get(`/${u.username}/site/docs`)
      assert.equal(dir.status, 301)
      assert.equal(dir.header('location'), `/${u.username}/site/docs/`)
      assert.equal((await s.get(`/${u.username}/site/docs/`)).text, HTML('docs'))
      const missing = await s.get(`/${u.username}/site/nope.html`)
      assert.equal(missing.status, 404)
      // no 404.html of the project's: the service's page, linking to the project (decision 193)
      assert.equal(missing.header('content-type'), 'text/html; charset=utf-8')
      assert.ok(missing.text.includes(`<a href="/${u.username}/site/">`), missing.text)
      assert.equal((await s.get(`/${u.username}/site/css/`)).status, 404, 'a directory without index.html')
    })

    it('serves index.htm for a directory without index.html, on both URL forms, index.html first (decision 173)', async () => {
      const files: Array<[string, string]> = [
        ['index.html', HTML('home')],
        ['old/index.htm', HTML('old home')],
        ['both/index.html', HTML('both, html')],
        ['both/index.htm', HTML('both, htm')],
      ]
      const up = await batchUpload(
        s,
        { key: u.key },
        'htm',
        files.map(([filename, data]) => ({ filename, data })),
      )
      assert.equal(up.status, 200, up.text)
      assert.equal((await s.post('/api/folders/htm/publish', { key: u.key })).status, 200)
      const forms: Array<[string, string, Record<string, string>]> = [
        ['path form', `/${u.username}/htm`, {}],
        ["user's origin", '/htm', { host: `${u.username}.localhost:${new URL(s.url).port}` }],
      ]
      // twice each: the lookup's answer, then the cached one
      for (const [form, base, host] of forms)
        for (const round of [1, 2]) {
          const what = `${form}, round ${round}`
          for (const method of ['GET', 'HEAD']) {
            const old = await s.request(method, `${base}/old/`, { headers: host })
            assert.equal(old.status, 200, `${what} ${method}`)
            assert.equal(old.header('content-type'), 'text/html; charset=utf-8', what)
            assert.equal(old.header('etag'), `"${sha(HTML('old home'))}"`, what)
            assert.equal(old.text, method === 'GET' ? HTML('old home') : '', what)
          }
          const dir = await s.get(`${base}/old?x=1`, { headers: host })
          assert.deepEqual([dir.status, dir.header('location')], [301, `${base}/old/?x=1`], what)
          assert.equal((await s.get(`${base}/both/`, { headers: host })).text, HTML('both, html'), `${what}: index.html wins`)
          assert.equal((await s.get(`${base}/old/index.htm`, { headers: host })).text, HTML('old home'), what)
        }
      // the project's root too, once its index.html is gone
      assert.equal((await s.request('DELETE', '/api/folders/htm/file/index.html', { key: u.key })).status, 200)
      assert.equal((await s.get(`/${u.username}/htm/`)).status, 404)
      await batchUpload(s, { key: u.key }, 'htm', [{ filename: 'index.htm', data: HTML('root htm') }])
      for (const [form, base, host] of forms) assert.equal((await s.get(`${base}/`, { headers: host })).text, HTML('root htm'), form)
    })

    it('serves a .svgz as gzip-encoded SVG, never compressed again: GET, HEAD, 304, 206 (decision 174)', async () => {
      // incompressible filler, so the gzip'd file is over the size the service compresses from
      const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><!-- ${crypto.randomBytes(1500).toString('hex')} --><circle r="4"/></svg>`
      const svgz = zlib.gzipSync(svg)
      assert.ok(svgz.length > 1024, 'a file the service would compress')
      const up = await batchUpload(s, { key: u.key }, 'vector', [
        { filename: 'index.html', data: HTML('vector') },
        { filename: 'img/logo.svgz', data: svgz },
        { filename: 'img/LOUD.SVGZ', data: svgz },
        { filename: 'img/plain.svg', data: svg },
        // an entry with _headers values builds its headers apart: the encoding is kept there too
        { filename: '_headers', data: '/img/LOUD.SVGZ\n  X-Loud: yes\n' },
      ])
      assert.equal(up.status, 200, up.text)
      assert.equal((await s.post('/api/folders/vector/publish', { key: u.key })).status, 200)
      const port = new URL(s.url).port
      const forms: Array<[string, string, Record<string, string>]> = [
        ['path form', `/${u.username}/vector`, {}],
        ["user's origin", '/vector', { host: `${u.username}.localhost:${port}` }],
      ]
      const ae = { 'accept-encoding': 'br, gzip' }
      // a plain SVG of the same text is compressed (br, made in the background) ...
      let plain = await s.get(`/${u.username}/vector/img/plain.svg`, { headers: ae })
      for (let i = 0; i < 100 && plain.header('content-encoding') !== 'br'; i++) {
        await new Promise((ok) => setTimeout(ok, 20))
        plain = await s.get(`/${u.username}/vector/img/plain.svg`, { headers: ae })
      }
      assert.equal(plain.header('content-encoding'), 'br')
      // ... while a .svgz is its stored gzip bytes, labelled so, whatever the request accepts
      for (const [form, base, host] of forms)
        for (const name of ['logo.svgz', 'LOUD.SVGZ'])
          for (const accept of [ae, { 'accept-encoding': 'identity' }, {}]) {
            const what = `${form} ${name} ${JSON.stringify(accept)}`
            const [get, head] = [
              await s.get(`${base}/img/${name}`, { headers: { ...host, ...accept } }),
              await s.request('HEAD', `${base}/img/${name}`, { headers: { ...host, ...accept } }),
            ]
            for (const r of [get, head]) {
              assert.equal(r.status, 200, what)
              assert.equal(r.header('content-type'), 'image/svg+xml', what)
              assert.equal(r.header('content-encoding'), 'gzip', what)
              assert.equal(r.header('etag'), `"${sha(svgz)}"`, what)
              assert.equal(r.header('content-length'), String(svgz.length), what)
              assert.equal(r.header('vary'), undefined, `${what}: one representation`)
              assert.equal(r.header('x-loud'), name === 'LOUD.SVGZ' ? 'yes' : undefined, what)
            }
            assert.ok(get.body.equals(svgz), what)
            assert.equal(head.body.length, 0, what)
            const inm = await s.get(`${base}/img/${name}`, { headers: { ...host, ...accept, 'if-none-match': get.header('etag')! } })
            assert.deepEqual([inm.status, inm.header('etag')], [304, `"${sha(svgz)}"`], what)
            // a range is of the stored (encoded) bytes, as the ETag is
            const part = await s.get(`${base}/img/${name}`, { headers: { ...host, ...accept, range: 'bytes=0-9' } })
            assert.equal(part.status, 206, what)
            assert.deepEqual([part.header('content-encoding'), part.header('content-range')], ['gzip', `bytes 0-9/${svgz.length}`], what)
            assert.ok(part.body.equals(svgz.subarray(0, 10)), what)
            const bad = await s.get(`${base}/img/${name}`, { headers: { ...host, ...accept, range: `bytes=${svgz.length + 5}-` } })
            assert.deepEqual([bad.status, bad.header('content-encoding')], [416, undefined], `${what}: no encoding on an empty 416`)
          }
      // a client that honours Content-Encoding reads the SVG
      const decoded = await fetch(`${s.url}/${u.username}/vector/img/logo.svgz`, { dispatcher: insecureAgent })
      assert.equal(decoded.status, 200)
      assert.equal(await decoded.text(), svg)
    })

    it('serves a type an older table stored as the current table names it, and rewrites it on the next upload', async () => {
      const script = 'module.exports = "é"'
      // rows as versions before decision 145 stored them, changed before the first request
      const old: Array<[string, string | Buffer, string]> = [
        ['lib.cjs', script, 'application/node'],
        ['favicon.ico', Buffer.from([0, 0, 1, 0]), 'image/vnd.microsoft.icon'],
      ]
      const files = [{ filename: 'index.html', data: HTML('stale') }, ...old.map(([filename, data]) => ({ filename, data }))]
      await batchUpload(s, { key: u.key }, 'stale', files)
      assert.equal((await s.post('/api/folders/stale/publish', { key: u.key })).status, 200)
      for (const [p, data, type] of old)
        for (const table of ['folder_files', 'deploy_files'] as const)
          await s.deps.db.k.updateTable(table).set({ content_type: type }).where('path', '=', p).where('digest', '=', sha(data)).execute()
      const js = await s.get(`/${u.username}/stale/lib.cjs`)
      assert.equal(js.header('content-type'), 'text/javascript')
      assert.equal(js.text, script)
      assert.equal((await s.get(`/${u.username}/stale/favicon.ico`)).header('content-type'), 'image/x-icon')
      // an archive deploy that reuses the stored bytes without sending them reads them for the charset
      const { check, res } = await deploySite(s, u.key, 'stale-copy', { 'index.html': HTML('stale'), 'copy.cjs': script })
      assert.deepEqual(check.json.missing, [])
      assert.equal(res.status, 201, res.text)
      assert.equal((await s.get(`/${u.username}/stale-copy/copy.cjs`)).header('content-type'), 'text/javascript; charset=utf-8')
      // the next upload of the same bytes stores the current type, with its charset
      await batchUpload(s, { key: u.key }, 'stale', [{ filename: 'lib.cjs', data: script }], true)
      const row = await s.deps.db.k
        .selectFrom('folder_files')
        .select('content_type')
        .where('path', '=', 'lib.cjs')
        .where('digest', '=', sha(script))
        .executeTakeFirstOrThrow()
      assert.equal(row.content_type, 'text/javascript; charset=utf-8')
      assert.equal((await s.get(`/${u.username}/stale/lib.cjs`)).header('content-type'), 'text/javascript; charset=utf-8')
    })

    it('shows every write at once: update, overwrite, delete, unpublish (and a 404 that becomes a page)', async () => {
      const url = `/${u.username}/live.html`
      assert.equal((await s.get(url)).status, 404)
      await uploadFile(s, { key: u.key }, 'live.html', HTML('v1'))
      assert.equal((await s.get(url)).text, HTML('v1'))
      await uploadFile(s, { key: u.key }, 'live.html', HTML('v2'))
      const v2 = await s.get(url)
      assert.equal(v2.text, HTML('v2'))
      assert.equal(v2.header('etag'), `"${sha(HTML('v2'))}"`)
      await s.request('DELETE', '/svc_api/files/live.html', { key: u.key })
      assert.equal((await s.get(url)).status, 404)

      await batchUpload(s, { key: u.key }, 'live', [{ filename: 'index.html', data: HTML('a') }])
      await s.post('/api/folders/live/publish', { key: u.key })
      assert.equal((await s.get(`/${u.username}/live/`)).text, HTML('a'))
      await batchUpload(s, { key: u.key }, 'live', [{ filename: 'index.html', data: HTML('b') }], true)
      assert.equal((await s.get(`/${u.username}/live/`)).text, HTML('b'))
      await s.request('DELETE', '/api/folders/live/file/index.html', { key: u.key })
      assert.equal((await s.get(`/${u.username}/live/`)).status, 404)
      await batchUpload(s, { key: u.key }, 'live', [{ filename: 'index.html', data: HTML('c') }])
      assert.equal((await s.get(`/${u.username}/live/`)).text, HTML('c'))
      await s.post('/api/folders/live/unpublish', { key: u.key })
      assert.equal((await s.get(`/${u.username}/live/`)).status, 404)
    })

    it('streams large files (beyond the memory cache) byte-identical, with ranges', async () => {
      const big = crypto.randomBytes(3 * 1024 * 1024 + 17)
      await batchUpload(s, { key: u.key }, 'large', [
        { filename: 'index.html', data: HTML('l') },
        { filename: 'blob.bin', data: big },
      ])
      await s.post('/api/folders/large/publish', { key: u.key })
      const r = await s.get(`/${u.username}/large/blob.bin`, { headers: { 'accept-encoding': 'gzip, br' } })
      assert.equal(r.status, 200)
      assert.equal(r.header('content-encoding'), undefined)
      assert.ok(r.body.equals(big))
      const part = await s.get(`/${u.username}/large/blob.bin`, { headers: { range: 'bytes=1000000-1000099' } })
      assert.equal(part.status, 206)
      assert.ok(part.body.equals(big.subarray(1000000, 1000100)))
      const head = await s.request('HEAD', `/${u.username}/large/blob.bin`)
      assert.equal(head.header('content-length'), String(big.length))
      assert.equal(head.body.length, 0)
    })

    it('a client gone while a large file is opened leaves no stream holding its blob', async () => {
      // a video's seek cancels its range request at any moment: one cancelled while the blob
      // was being opened must not keep the file (and its read buffer) open for ever
      const blobs = s.deps.blobs
      const own = Object.getOwnPropertyDescriptor(blobs, 'get')!
      const get = blobs.get.bind(blobs)
      const opened: Readable[] = []
      let asked!: () => void
      const asking = new Promise<void>((ok) => (asked = ok))
      let release!: () => void
      const gate = new Promise<void>((ok) => (release = ok))
      blobs.get = async (digest, range) => {
        asked()
        await gate
        const stream = await get(digest, range)
        opened.push(stream)
        return stream
      }
      try {
        const at = new URL(s.url)
        const req = https.request({
          host: at.hostname,
          port: at.port,
          path: `/${u.username}/large/blob.bin`,
          headers: { range: 'bytes=1000-' },
          rejectUnauthorized: false,
        })
        req.on('error', () => {})
        req.end()
        await asking
        req.destroy()
        // the server has seen the close once a later request is answered
        assert.equal((await s.get(`/${u.username}/hello.html`)).status, 200)
        release()
        const gone = await eventually(
          () => opened,
          (o) => o.length === 1 && o[0].destroyed,
        )
        assert.equal(gone.length, 1, 'the blob was opened')
        assert.ok(gone[0].destroyed, 'the stream of the closed response is destroyed')
      } finally {
        Object.defineProperty(blobs, 'get', own)
      }
      const part = await s.get(`/${u.username}/large/blob.bin`, { headers: { range: 'bytes=1000-1099' } })
      assert.equal(part.status, 206, 'the next request is served')
    })

    it('compresses large text files too: a small form from its file, a large one streamed; ranges stay identity', async () => {
      // 3 MiB of script that compresses well, and 5 MiB of base64 noise whose forms stay above 2 MiB
      const js = Buffer.from('export const x = "' + 'svc '.repeat(786_432) + '"\n')
      const noise = Buffer.from(crypto.randomBytes(3_900_000).toString('base64'))
      await batchUpload(s, { key: u.key }, 'bundle', [
        { filename: 'index.html', data: HTML('b') },
        { filename: 'app.js', data: js },
        { filename: 'data.txt', data: noise },
      ])
      await s.post('/api/folders/bundle/publish', { key: u.key })
      for (const [file, plain, ae] of [
        ['app.js', js, 'br'],
        ['data.txt', noise, 'br'],
        ['data.txt', noise, 'gzip'],
      ] as const) {
        const url = `/${u.username}/bundle/${file}`
        let r = await s.get(url, { headers: { 'accept-encoding': ae } })
        for (let i = 0; i < 250 && r.header('content-encoding') !== ae; i++) {
          assert.ok(r.body.equals(plain), `${file}: identity while the form is made`)
          await new Promise((ok) => setTimeout(ok, 20))
          r = await s.get(url, { headers: { 'accept-encoding': ae } })
        }
        assert.equal(r.status, 200)
        assert.equal(r.header('content-encoding'), ae, `${file} ${ae}`)
        assert.equal(r.header('vary'), 'Accept-Encoding')
        assert.equal(r.header('content-length'), String(r.body.length))
        assert.ok(r.body.length < plain.length * 0.95, `${file} ${ae}: ${r.body.length} of ${plain.length}`)
        if (file === 'data.txt') assert.ok(r.body.length > 2 * 1024 * 1024, 'the form is large enough to be streamed')
        assert.ok((ae === 'br' ? zlib.brotliDecompressSync(r.body) : zlib.gunzipSync(r.body)).equals(plain), `${file} ${ae}`)
        const etag = r.header('etag')!
        assert.match(etag, ae === 'br' ? /-br"$/ : /-gz"$/)
        assert.equal((await s.get(url, { headers: { 'accept-encoding': ae, 'if-none-match': etag } })).status, 304)
        const head = await s.request('HEAD', url, { headers: { 'accept-encoding': ae } })
        assert.equal(head.header('content-encoding'), ae)
        assert.equal(head.header('content-length'), String(r.body.length))
        assert.equal(head.body.length, 0)
        const part = await s.get(url, { headers: { 'accept-encoding': ae, range: 'bytes=2500000-2500099' } })
        assert.equal(part.status, 206)
        assert.equal(part.header('content-encoding'), undefined)
        assert.ok(part.body.equals(plain.subarray(2500000, 2500100)))
      }
    })

    it('gives identical bytes and headers with or without a session cookie; refuses service workers', async () => {
      const cookie = await s.login(u.username, u.password)
      for (const p of [`/${u.username}/hello.html`, `/${u.username}/site/js/app.js`, `/${u.username}/nothing.html`]) {
        const a = await s.get(p)
        const b = await s.get(p, { cookie })
        assert.equal(a.status, b.status, p)
        assert.ok(a.body.equals(b.body), p)
        const strip = (h: Res['headers']) => Object.fromEntries(Object.entries(h).filter(([k]) => k !== 'date'))
        assert.deepEqual(strip(a.headers), strip(b.headers), p)
        assertSandboxed(b, p)
      }
      const sw = await s.get(`/${u.username}/site/js/app.js`, { headers: { 'service-worker': 'script' } })
      assert.equal(sw.status, 403)
      assertSandboxed(sw, 'service worker')
    })

    it('lets pages on other origins read, revalidate and resume its content (CORS), on both URL forms', async () => {
      const up = await uploadFile(s, { key: u.key }, 'cors.html', HTML('read from elsewhere'))
      assert.equal(up.status, 200, up.text)
      const origin = 'https://elsewhere.test'
      const forms: Array<[string, string, Record<string, string>]> = [
        ['path form', `/${u.username}/cors.html`, {}],
        ["user's origin", '/cors.html', { host: `${u.username}.localhost:${new URL(s.url).port}` }],
      ]
      for (const [form, p, host] of forms) {
        // If-None-Match and Range are not safelisted: the browser asks first
        const pre = await s.request('OPTIONS', p, {
          headers: { ...host, origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match,range' },
        })
        assert.equal(pre.status, 204, form)
        assert.equal(pre.header('access-control-allow-origin'), '*', form)
        assert.match(pre.header('access-control-allow-methods') ?? '', /\bGET\b/, form)
        const allowed = (pre.header('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/)
        for (const h of ['if-none-match', 'if-modified-since', 'if-range', 'range', 'cache-control']) assert.ok(allowed.includes(h), `${form}: ${h} allowed`)
        // and the answer lets the page read what a revalidation or a resumed read needs
        const r = await s.get(p, { headers: { ...host, origin, range: 'bytes=0-3' } })
        assert.equal(r.status, 206, form)
        const exposed = (r.header('access-control-expose-headers') ?? '').toLowerCase().split(/\s*,\s*/)
        for (const h of ['etag', 'content-range', 'accept-ranges']) assert.ok(exposed.includes(h), `${form}: ${h} exposed`)
      }
      // a first segment that names no user is not hosted content: the service's own path
      // answers for its methods (decision 144), with no preflight grant
      const own = await s.request('OPTIONS', '/static/x')
      assert.equal(own.status, 405)
      assert.equal(own.header('allow'), 'GET, HEAD')
      assert.equal(own.header('access-control-allow-origin'), undefined)
    })

    it('refuses writes to hosted content with 405 and Allow, on both URL forms, as a static server does', async () => {
      const up = await uploadFile(s, { key: u.key }, 'nowrite.html', HTML('read only'))
      assert.equal(up.status, 200, up.text)
      const forms: Array<[string, string, Record<string, string>]> = [
        ['path form', `/${u.username}/nowrite.html`, {}],
        ["user's origin", '/nowrite.html', { host: `${u.username}.localhost:${new URL(s.url).port}` }],
      ]
      for (const [form, p, host] of forms)
        for (const m of ['PUT', 'PATCH', 'DELETE']) {
          const r = await s.request(m, p, { headers: host, body: 'x' })
          assert.equal(r.status, 405, `${form} ${m}: ${r.text}`)
          assert.equal(r.header('allow'), 'GET, HEAD, OPTIONS', `${form} ${m}`)
          assert.equal(r.header('x-content-type-options'), 'nosniff', `${form} ${m}`)
        }
      // the service's own routes under a first segment keep their answers
      const api = await s.request('DELETE', '/api/nothing/here')
      assert.equal(api.status, 404, api.text)
      assert.equal(api.json.success, false)
      // and a first segment that names no user is not hosted content, whatever the body
      const none = await s.request('POST', '/static/x', { headers: { 'content-type': 'text/xml' }, body: '<x/>' })
      assert.equal(none.status, 405, none.text)
      assert.equal(none.header('allow'), 'GET, HEAD', "the service's static files, not hosted content")
    })

    it('answers odd paths with 400 or 404 (never 500, never another file), and reserved names are never content', async () => {
      const base = `/${u.username}`
      const paths = [
        `${base}/..%2fhello.html`,
        `${base}/%2e%2e/hello.html`,
        `${base}/site/..%2f..%2fhello.html`,
        `${base}/site/%252e%252e%252fhello.html`,
        `${base}/site/..%5cindex.html`,
        `${base}/site/%5C..%5Cindex.html`,
        `${base}/hello.html%00`,
        `${base}/site/%c0%ae%c0%ae/index.html`,
        `${base}/site/%EF%BC%8E%EF%BC%8E%EF%BC%8Findex.html`,
        `${base}/site/./index.html`,
        `${base}/site/../site/index.html`,
        `${base}/site/${'x'.repeat(256)}`,
        `${base}/site/${Array.from({ length: 1000 }, () => 'd').join('/')}`,
        `${base}/site/%E0%A4%A`,
        `${base}/C:%5Cwindows`,
        '/.well-known/acme-challenge/x',
        '/svc_api/../x',
        '/login/x',
        '/api-keys/x',
        '/%2e%2e/etc/passwd',
        `${base}/`,
        `/${u.username.toUpperCase()}/nope`,
      ]
      for (const p of paths) {
        const r = await rawGet(s.url, p)
        assert.ok([400, 404].includes(r.status), `${p}: ${r.status}`)
        // never a stored page: a 404 is the service's own page (decision 193), a 400 no page
        const servicePage = r.status === 404 && /<meta name="robots" content="noindex">.*<title>404 - /.test(r.text)
        assert.ok(servicePage || !r.text.includes('<h1>'), `${p} served a page`)
      }
      // repeated slashes go to the same project's merged path (decision 111), nowhere else
      const doubled = await rawGet(s.url, `${base}/site//index.html`)
      assert.equal(doubled.status, 301)
      assert.equal(doubled.location, `${base}/site/index.html`)
      const upper = await s.get(`/${u.username.toUpperCase()}/hello.html`)
      assert.equal(upper.status, 200, 'usernames are case-insensitive in URLs')
    })

    it("takes a disabled account's pages offline", async () => {
      const v = await s.user()
      await uploadFile(s, { key: v.key }, 'soon-gone.html', HTML('x'))
      await s.deps.users.update(v.username, { disabled: true })
      assert.equal((await s.get(`/${v.username}/soon-gone.html`)).status, 404)
    })

    it('is not rate limited', async () => {
      const rs = await Promise.all(Array.from({ length: 40 }, () => s.get(`/${u.username}/hello.html`)))
      assert.ok(rs.every((r) => r.status === 200))
    })
  })

  describe(`public host: a single page at its clean URL [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    /** Both URL forms of a name: the path form and the user's own origin. */
    let forms: Array<[string, (name: string) => string, Record<string, string>]>
    const headersOf = (r: Res) =>
      ['content-type', 'etag', 'last-modified', 'cache-control', 'content-length', 'content-security-policy', 'accept-ranges', 'location'].map((h) =>
        r.header(h),
      )
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      u = await s.user()
      forms = [
        ['path form', (name) => `/${u.username}/${name}`, {}],
        ["user's origin", (name) => `/${name}`, { host: `${u.username}.localhost:${new URL(s.url).port}` }],
      ]
    })
    after(() => s.close())

    it('serves /{name} as {name}.html answers, without a redirect, on both URL forms: GET, HEAD, 304, 206', async () => {
      const page = HTML('about me')
      assert.equal((await uploadFile(s, { key: u.key }, 'about.html', page)).status, 200)
      for (const [form, at, host] of forms) {
        for (const method of ['GET', 'HEAD', 'GET']) {
          const clean = await s.request(method, at('about'), { headers: host })
          const full = await s.request(method, at('about.html'), { headers: host })
          assert.equal(clean.status, 200, `${form} ${method}`)
          assert.equal(clean.text, method === 'GET' ? page : '', `${form} ${method}`)
          assert.deepEqual(headersOf(clean), headersOf(full), `${form} ${method}: the page's own headers`)
        }
        const etag = (await s.get(at('about'), { headers: host })).header('etag')!
        assert.equal(etag, `"${sha(page)}"`)
        const inm = await s.get(at('about'), { headers: { ...host, 'if-none-match': etag } })
        assert.equal(inm.status, 304, form)
        assert.equal(inm.text, '')
        const part = await s.get(at('about?v=2'), { headers: { ...host, range: 'bytes=0-8' } })
        assert.equal(part.status, 206, form)
        assert.equal(part.text, page.slice(0, 9))
        // the slash form is a project's URL: it keeps answering as before
        assert.equal((await s.get(at('about/'), { headers: host })).status, 404, `${form}: slash form`)
        assert.equal((await s.get(at('nothing'), { headers: host })).status, 404, `${form}: no page`)
        assert.equal((await s.get(at('about.html.html'), { headers: host })).status, 404, `${form}: one extension only`)
      }
      // an .htm page answers at its clean URL too
      const old = HTML('old style')
      assert.equal((await uploadFile(s, { key: u.key }, 'legacy.htm', old)).status, 200)
      for (const [form, at, host] of forms) assert.equal((await s.get(at('legacy'), { headers: host })).text, old, form)
    })

    it('lets a published project of the name win, and shows each change at once', async () => {
      const page = HTML('docs page')
      assert.equal((await uploadFile(s, { key: u.key }, 'docs.html', page)).status, 200)
      const both = async (want: number, location?: (name: string) => string) => {
        for (const [form, at, host] of forms) {
          const r = await s.get(at('docs'), { headers: host })
          assert.equal(r.status, want, form)
          if (want === 200) assert.equal(r.text, page, form)
          if (location) assert.equal(r.header('location'), location(at('docs')), form)
        }
      }
      await both(200)
      assert.equal((await batchUpload(s, { key: u.key }, 'docs', [{ filename: 'index.html', data: HTML('docs site') }])).status, 200)
      assert.equal((await s.post('/api/folders/docs/publish', { key: u.key })).status, 200)
      await both(301, (p) => `${p}/`)
      assert.equal((await s.post('/api/folders/docs/unpublish', { key: u.key })).status, 200)
      await both(200)
      assert.equal((await s.post('/api/folders/docs/publish', { key: u.key })).status, 200)
      await both(301, (p) => `${p}/`)
      // the page's own changes show through the project's answer at once too
      assert.equal((await uploadFile(s, { key: u.key }, 'docs.html', HTML('docs page, v2'))).status, 200)
      await both(301, (p) => `${p}/`)
    })

    it('follows an upload, an overwrite, a delete and a re-upload of the page at once', async () => {
      const answers = async () => Promise.all(forms.map(([, at, host]) => s.get(at('live'), { headers: host })))
      for (const r of await answers()) assert.equal(r.status, 404)
      for (const v of ['v1', 'v2']) {
        assert.equal((await uploadFile(s, { key: u.key }, 'live.html', HTML(v))).status, 200)
        for (const r of await answers()) assert.deepEqual([r.status, r.text, r.header('etag')], [200, HTML(v), `"${sha(HTML(v))}"`])
      }
      assert.equal((await s.request('DELETE', '/svc_api/files/live.html', { key: u.key })).status, 200)
      for (const r of await answers()) assert.equal(r.status, 404)
      assert.equal((await uploadFile(s, { key: u.key }, 'live.html', HTML('v3'))).status, 200)
      for (const r of await answers()) assert.equal(r.text, HTML('v3'))
    })

    it("answers 451 at a held page's clean URL, and asks a protected page's password there", async () => {
      const admin = await s.user({ admin: true })
      const cookie = await s.login(admin.username, admin.password)
      assert.equal((await uploadFile(s, { key: u.key }, 'held.html', HTML('held'))).status, 200)
      assert.equal((await uploadFile(s, { key: u.key }, 'note.html', HTML('secret note'))).status, 200)
      // warm the caches first: the hold and the password are checked before cached answers
      for (const [, at, host] of forms) for (const name of ['held', 'note']) assert.equal((await s.get(at(name), { headers: host })).status, 200)
      const rep = await s.post('/svc_api/admin/reports', { cookie, json: { url: `http://${u.username}.localhost:8080/held.html`, category: 'spam' } })
      assert.equal(rep.status, 201, rep.text)
      assert.equal((await s.post(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`, { cookie })).status, 200)
      assert.equal((await s.request('PUT', '/api/access/note.html', { key: u.key, json: { password: 'hunter22' } })).status, 200)
      const basic = `Basic ${Buffer.from('visitor:hunter22').toString('base64')}`
      for (const [form, at, host] of forms) {
        for (const method of ['GET', 'HEAD']) {
          const held = await s.request(method, at('held'), { headers: host })
          assert.equal(held.status, 451, `${form} ${method}`)
          // the notice's report link names the URL the visitor asked for, not the page's file
          if (method === 'GET') assert.equal(reportedUrl(held.text), `https://${host.host ?? new URL(s.url).host}${at('held')}`, form)
          const note = await s.request(method, at('note'), { headers: host })
          assert.equal(note.status, 401, `${form} ${method}`)
          assert.equal(note.header('etag'), undefined)
          assert.ok(!note.text.includes('secret note'))
        }
        const open = await s.get(at('note'), { headers: { ...host, authorization: basic } })
        assert.deepEqual([open.status, open.text, open.header('cache-control')], [200, HTML('secret note'), 'private, no-cache'], form)
      }
    })
  })

  describe(`public host across instances and with CONTENT_ORIGIN [${engine}]`, () => {
    it('serves fresh content on a second instance after a write on the first (Redis bus)', needs('redis'), async () => {
      const a = await startServer({ engine, keepData: true, env: { REDIS_URL, RATE_LIMITS: HIGH_LIMITS } })
      const b = await startServer({ engine, dataDir: a.dataDir, pgSchema: a.env.DATABASE_URL?.split('schema=')[1], env: { REDIS_URL } })
      try {
        const u = await a.user()
        const url = `/${u.username}/multi.html`
        // Redis delivers the invalidation asynchronously: wait (bounded) until B shows the change
        const eventually = async (check: (r: Res) => boolean) => {
          for (let i = 0; i < 100; i++) {
            const r = await b.get(url)
            if (check(r)) return r
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
          assert.fail('instance B kept serving stale content')
        }
        assert.equal((await b.get(url)).status, 404)
        await uploadFile(a, { key: u.key }, 'multi.html', HTML('one'))
        await eventually((r) => r.text === HTML('one'))
        await uploadFile(a, { key: u.key }, 'multi.html', HTML('two'))
        await eventually((r) => r.text === HTML('two'))
        await a.request('DELETE', '/svc_api/files/multi.html', { key: u.key })
        await eventually((r) => r.status === 404)
      } finally {
        await b.close()
        await a.close()
      }
    })

    it('behind a proxy (TRUST_PROXY=1) serves cached pages over forwarded HTTPS only, redirecting plain HTTP', async () => {
      const s = await startServer({ engine, env: { TRUST_PROXY: '1', RATE_LIMITS: HIGH_LIMITS } })
      try {
        const u = await s.user()
        const fwd = { 'x-forwarded-proto': 'https' }
        const mp = multipart([{ name: 'file', filename: 'p.html', data: HTML('p') }])
        const up = await s.post('/svc_api/upload', { key: u.key, body: mp.body, headers: { 'content-type': mp.contentType, ...fwd } })
        assert.equal(up.status, 200, up.text)
        for (let i = 0; i < 2; i++) {
          const ok = await s.get(`/${u.username}/p.html`, { headers: fwd })
          assert.equal(ok.text, HTML('p'))
          const plain = await s.get(`/${u.username}/p.html`)
          assert.equal(plain.status, 301, 'a plain-HTTP request is redirected even when the page is cached')
          assert.match(plain.header('location')!, /^https:\/\//)
        }
      } finally {
        await s.close()
      }
    })

    it('returns URLs on CONTENT_ORIGIN when it is set', async () => {
      const s = await startServer({ engine, env: { CONTENT_ORIGIN: 'https://usercontent.example', RATE_LIMITS: HIGH_LIMITS } })
      try {
        const u = await s.user()
        const up = await uploadFile(s, { key: u.key }, 'x.html', HTML('x'))
        assert.equal(up.json.data.url, `https://usercontent.example/${u.username}/x.html`)
        const list = await s.get('/svc_api/files', { key: u.key })
        assert.equal(list.json.data.files[0].url, `https://usercontent.example/${u.username}/x.html`)
        await batchUpload(s, { key: u.key }, 'p', [{ filename: 'index.html', data: HTML('p') }])
        const pub = await s.post('/api/folders/p/publish', { key: u.key })
        assert.equal(pub.json.website_url, `https://usercontent.example/${u.username}/p/`)
        const files = await s.get('/api/folders/p/files', { key: u.key })
        assert.equal(files.json.files[0].url, `https://usercontent.example/${u.username}/p/index.html`)
        const served = await s.get(`/${u.username}/x.html`)
        assertSandboxed(served, 'content origin')
      } finally {
        await s.close()
      }
    })
  })
}
