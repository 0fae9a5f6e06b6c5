import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import zlib from 'node:zlib'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload, type BatchFile } from '../support/hosting.js'
import { openBrowser, type BrowserLease, watchErrors } from '../support/browser.js'

// A build shipped precompressed, as Unity's WebGL builds and Vite's compression plugins write
// it: `Build/*.br` and `*.gz` files that `_headers` labels with their Content-Encoding, as
// Unity's nginx and Apache samples (and Netlify sites) do. Headers and paths: one engine.
const engine = ENGINES[0]

// (module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
const WASM = Buffer.from('0061736d0100000001070160027f7f017f030201000707010361646400000a09010700200020016a0b', 'hex')
const SCRIPT = `window.framework = 'ran' // ${'x'.repeat(400)}\n`
const DATA = crypto.randomBytes(600).toString('hex')
const FILES: Record<string, Buffer> = {
  'Build/game.wasm.br': zlib.brotliCompressSync(WASM),
  'Build/game.framework.js.gz': zlib.gzipSync(SCRIPT),
  'Build/game.data.br': zlib.brotliCompressSync(DATA),
}
const HEADERS = [
  '/Build/*.br',
  '  Content-Encoding: br',
  '  Cache-Control: public, max-age=31536000, immutable',
  '/Build/*.gz',
  '  Content-Encoding: gzip',
  '/Build/*.wasm.br',
  '  Content-Type: application/wasm',
  '/Build/*.js.gz',
  '  Content-Type: text/javascript',
].join('\n')
const INDEX = `<!doctype html><title>loading</title><link rel="icon" href="data:,">
<script src="Build/game.framework.js.gz"></script>
<script type="module">
const out = { framework: window.framework ?? 'not run' }
try { out.wasm = (await WebAssembly.instantiateStreaming(fetch('Build/game.wasm.br'))).instance.exports.add(2, 3) } catch (e) { out.wasm = String(e) }
try { out.data = await (await fetch('Build/game.data.br')).text() } catch (e) { out.data = String(e) }
window.__out = out
document.title = 'ready'
</script>`
const SITE: BatchFile[] = [
  { filename: 'index.html', data: INDEX },
  { filename: '404.html', data: '<!doctype html><title>missing</title><p>custom 404</p>' },
  ...Object.entries(FILES).map(([filename, data]) => ({ filename, data })),
  { filename: '_headers', data: HEADERS },
]
const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex')

let browser: BrowserLease
before(async () => {
  browser = await openBrowser()
})
after(async () => {
  await browser?.close()
})

describe(`a precompressed build labelled by _headers [${engine}]`, () => {
  let s: TestServer
  let user: Awaited<ReturnType<TestServer['user']>>
  let host: string
  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    user = await s.user()
    const r = await batchUpload(s, { key: user.key }, 'game', SITE)
    assert.equal(r.status, 200, r.text)
    const p = await s.post('/api/folders/game/publish', { key: user.key })
    assert.equal(p.status, 200, p.text)
    host = `${user.username}.localhost:${new URL(s.httpUrl).port}`
  })
  after(async () => {
    await s?.close()
  })

  it('Chromium runs the script, compiles the streamed wasm and reads the data, with no error', async () => {
    const ctx = await browser.newContext()
    const page = await ctx.newPage()
    const errors = watchErrors(page)
    try {
      assert.equal((await page.goto(`http://${host}/game/`))?.status(), 200)
      await page.waitForFunction(() => document.title === 'ready', null, { timeout: 15_000 })
      const out = await page.evaluate(() => (window as unknown as { __out: unknown }).__out)
      assert.deepEqual(out, { framework: 'ran', wasm: 5, data: DATA })
      assert.deepEqual(errors, [])
    } finally {
      await ctx.close()
    }
  })

  it('sends the stored bytes with their encoding on every answer about them, and never on an error page', async () => {
    const forms: Array<[string, string, Record<string, string>]> = [
      ['path form', `/${user.username}/game`, {}],
      ["user's origin", '/game', { host }],
    ]
    for (const [form, base, h] of forms)
      for (const [name, bytes] of Object.entries(FILES)) {
        const enc = name.endsWith('.br') ? 'br' : 'gzip'
        const what = `${form} ${name}`
        for (const accept of [{ 'accept-encoding': 'gzip, br' }, {}] as Array<Record<string, string>>) {
          const [get, head] = [
            await s.get(`${base}/${name}`, { headers: { ...h, ...accept } }),
            await s.request('HEAD', `${base}/${name}`, { headers: { ...h, ...accept } }),
          ]
          for (const r of [get, head]) {
            assert.equal(r.status, 200, what)
            assert.equal(r.header('content-encoding'), enc, what)
            assert.equal(r.header('etag'), `"${sha(bytes)}"`, what)
            assert.equal(r.header('content-length'), String(bytes.length), what)
            // one representation (no Accept-Encoding); a file a rule keeps a year answers a
            // worker's fetch apart (decision 272), and says so
            assert.equal(r.header('vary'), name.endsWith('.br') ? 'Service-Worker' : undefined, `${what}: one representation`)
          }
          assert.ok(get.body.equals(bytes), `${what}: the stored bytes, not compressed again`)
        }
        const inm = await s.get(`${base}/${name}`, { headers: { ...h, 'if-none-match': `"${sha(bytes)}"` } })
        assert.deepEqual([inm.status, inm.header('content-encoding')], [304, enc], what)
        const part = await s.get(`${base}/${name}`, { headers: { ...h, range: 'bytes=0-3' } })
        assert.deepEqual([part.status, part.header('content-encoding'), part.header('content-range')], [206, enc, `bytes 0-3/${bytes.length}`], what)
        const bad = await s.get(`${base}/${name}`, { headers: { ...h, range: `bytes=${bytes.length + 5}-` } })
        assert.deepEqual([bad.status, bad.header('content-encoding')], [416, undefined], what)
      }
    const wasm = await s.get(`/${user.username}/game/Build/game.wasm.br`)
    assert.deepEqual([wasm.header('content-type'), wasm.header('cache-control')], ['application/wasm', 'public, max-age=31536000, immutable'])
    // the project's 404 page under a labelled pattern is HTML as stored: no encoding, no long cache
    for (const [form, base, h] of forms) {
      const nf = await s.get(`${base}/Build/missing.data.br`, { headers: h })
      assert.deepEqual([nf.status, nf.header('content-encoding'), nf.text], [404, undefined, '<!doctype html><title>missing</title><p>custom 404</p>'], form)
      assert.equal(nf.header('cache-control'), 'public, max-age=0, must-revalidate', form)
    }
  })

  it('refuses at publish a Content-Encoding other than gzip or br, naming the line', async () => {
    for (const value of ['deflate', 'gzip, br', 'identity']) {
      const r = await batchUpload(
        s,
        { key: user.key },
        'bad',
        [
          { filename: 'index.html', data: '<p>x</p>' },
          { filename: '_headers', data: `/*.js\n  Content-Encoding: ${value}\n` },
        ],
        true,
      )
      assert.equal(r.status, 200, r.text)
      const p = await s.post('/api/folders/bad/publish', { key: user.key, headers: { 'accept-language': 'en' } })
      assert.equal(p.status, 400, value)
      assert.equal(p.json.error_code, 1314, value)
      assert.match(p.json.message, /_headers, line 2: Content-Encoding names how the files are stored compressed: gzip or br/, value)
      assert.equal((await s.get(`/${user.username}/bad/`)).status, 404, 'not published')
    }
  })
})
