import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import zlib from 'node:zlib'
import { request } from 'undici'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { deploySite, type Site } from '../support/deploys.js'
import { imageForm, makeImage, svc } from '../support/images.js'

// The headers an installable site (a PWA) depends on, over real HTTP on each URL form: what
// caches may keep of its worker script, its shell and its hashed assets (as Netlify sends:
// `public, max-age=0, must-revalidate`), the scope `Service-Worker-Allowed` grants, and the
// types of its manifest and WebAssembly, compressed or not; and the image and hosted-data
// links, which refuse a worker's fetch. The browser side is in test/browser/pwa.test.ts.

const DEFAULT = 'public, max-age=0, must-revalidate'
const YEAR = 'public, max-age=31536000, immutable'
/** Whether a Vary value names Service-Worker: a cache in front keeps a worker's answer apart. */
const byWorker = (vary: string | undefined): boolean => (vary ?? '').split(',').some((t) => t.trim().toLowerCase() === 'service-worker')

/** A WebAssembly module padded with a custom section, large and repetitive enough to be compressed. */
const BIG_WASM = Buffer.concat([Buffer.from('0061736d01000000', 'hex'), Buffer.from([0, 0x80, 0x80, 0x01, 1, 0x78]), Buffer.alloc(16383, 0x61)])

const SITE: Site = {
  'index.html':
    '<!doctype html><title>pwa</title><link rel="manifest" href="manifest.webmanifest"><script type="module" src="./assets/index-4f2a.js"></script>',
  'assets/index-4f2a.js': "navigator.serviceWorker.register('./sw.js')\n",
  'assets/sw.js': 'self.addEventListener("fetch", () => {})\n',
  'sw.js': 'self.addEventListener("fetch", () => {})\n',
  'manifest.webmanifest': JSON.stringify({
    name: 'PWA',
    start_url: '.',
    icons: Array.from({ length: 200 }, (_, i) => ({ src: `icon-${i}.png`, sizes: `${i}x${i}` })),
  }),
  'big.wasm': BIG_WASM,
  _headers: [
    '/assets/*',
    `  Cache-Control: ${YEAR}`,
    '/assets/sw.js',
    '  Service-Worker-Allowed: /',
    '/sw.js',
    `  Cache-Control: ${YEAR}`,
    '  CDN-Cache-Control: max-age=31536000',
    '  Service-Worker-Allowed: ../../up/',
    '',
  ].join('\n'),
}

for (const engine of ENGINES) {
  describe(`a PWA's headers on every URL form [${engine}]`, () => {
    let s: TestServer
    let user: { username: string; key: string }
    let deployId: string
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      user = await s.user()
      const { res } = await deploySite(s, user.key, 'app', SITE)
      assert.equal(res.status, 201, res.text)
      deployId = res.json.deploy.id
    })
    after(async () => {
      await s?.close()
    })

    /** A request to a site's own origin (plain HTTP on loopback, by its Host). */
    const onHost = async (host: string, path: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') => {
      const r = await request(`${s.httpUrl}${path}`, { method, headers: { host, ...headers } })
      const body = Buffer.from(await r.body.arrayBuffer())
      const h = (n: string) => {
        const v = r.headers[n]
        return Array.isArray(v) ? v.join(', ') : v
      }
      return { status: r.statusCode, body, h }
    }
    const forms = () => [
      { name: "project's origin", host: `app.${user.username}.localhost`, at: '' },
      { name: "user's origin", host: `${user.username}.localhost`, at: '/app' },
    ]

    it("answers a worker's fetch of its script with the default revalidation, whatever a rule keeps it for", async () => {
      for (const f of forms()) {
        for (const [path, plain] of [
          ['/sw.js', YEAR],
          ['/assets/sw.js', YEAR],
          ['/index.html', DEFAULT],
          ['/', DEFAULT],
          ['/manifest.webmanifest', DEFAULT],
          ['/assets/index-4f2a.js', YEAR],
        ] as const) {
          const what = `${f.name} ${path}`
          const page = await onHost(f.host, f.at + path)
          assert.equal(page.status, 200, what)
          assert.equal(page.h('cache-control'), plain, `${what}: a page's load takes the rule`)
          assert.ok(page.h('etag'), what)
          // a file a rule keeps past a revalidation answers a worker's fetch apart, and both
          // answers say so; a file with the default answers both alike, its headers unchanged
          assert.equal(byWorker(page.h('vary')), plain === YEAR, `${what}: Vary ${page.h('vary')}`)
          if (!path.endsWith('.js')) continue
          assert.equal(page.h('cdn-cache-control'), path === '/sw.js' ? 'max-age=31536000' : undefined, what)
          for (const method of ['GET', 'HEAD'] as const) {
            const sw = await onHost(f.host, f.at + path, { 'service-worker': 'script', 'accept-encoding': 'br, gzip' }, method)
            assert.equal(sw.status, 200, what)
            assert.equal(sw.h('cache-control'), DEFAULT, `${what} ${method}: a worker script is never kept past a revalidation`)
            assert.equal(sw.h('cdn-cache-control'), undefined, `${what} ${method}: nor by a CDN's own field`)
            assert.equal(sw.h('etag'), page.h('etag'), what)
            assert.equal(sw.h('content-type'), 'text/javascript; charset=utf-8', what)
            assert.equal(byWorker(sw.h('vary')), plain === YEAR, `${what} ${method}: Vary ${sw.h('vary')}`)
            if (method === 'GET') assert.equal(sw.body.toString(), SITE[path.slice(1)], what)
          }
          const again = await onHost(f.host, f.at + path, { 'service-worker': 'script', 'if-none-match': page.h('etag')! })
          assert.equal(again.status, 304, what)
          assert.equal(again.h('cache-control'), DEFAULT, `${what}: its revalidation too`)
          assert.equal(byWorker(again.h('vary')), plain === YEAR, `${what}: its revalidation's Vary`)
          const kept = await onHost(f.host, f.at + path, { 'if-none-match': page.h('etag')! })
          assert.equal(kept.status, 304, what)
          assert.equal(byWorker(kept.h('vary')), plain === YEAR, `${what}: the page load's revalidation's Vary`)
        }
      }
      // the path form refuses a worker's fetch (403): the year-kept file's answer says it varies too
      const base = `/${user.username}/app`
      for (const [path, year] of [
        ['/sw.js', true],
        ['/index.html', false],
      ] as const) {
        const page = await s.get(base + path)
        assert.equal(page.status, 200, path)
        assert.equal(byWorker(page.header('vary')), year, `path form ${path}: Vary ${page.header('vary')}`)
      }
      const refused = await s.get(`${base}/sw.js`, { headers: { 'service-worker': 'script' } })
      assert.equal(refused.status, 403)
      assert.ok(byWorker(refused.header('vary')), `the path form's refusal: Vary ${refused.header('vary')}`)
    })

    it("sends Service-Worker-Allowed as a path of the project: the origin's on a project's origin, the project's under /{project}/", async () => {
      const own = `app.${user.username}.localhost`
      assert.equal((await onHost(own, '/assets/sw.js')).h('service-worker-allowed'), '/')
      assert.equal((await onHost(own, '/sw.js')).h('service-worker-allowed'), '../../up/', 'as written where the path is the project')
      const mine = `${user.username}.localhost`
      assert.equal((await onHost(mine, '/app/assets/sw.js')).h('service-worker-allowed'), '/app/', "the project's root, not the user's origin's")
      assert.equal((await onHost(mine, '/app/sw.js')).h('service-worker-allowed'), '/app/up/', 'a value that climbs out stops at the project')
      // a kept deploy: its own origin as the project's, and under /{project}@{deploy}/ as the project's path
      assert.equal((await onHost(`${deployId}--app.${user.username}.localhost`, '/assets/sw.js')).h('service-worker-allowed'), '/')
      assert.equal((await onHost(mine, `/app@${deployId}/assets/sw.js`)).h('service-worker-allowed'), `/app@${deployId}/`)
      assert.equal((await s.get(`/${user.username}/app/assets/sw.js`)).header('service-worker-allowed'), undefined, 'never on the path form')
    })

    it("answers a worker's fetch of a script the site lacks with a worker that retires, not the 404", async () => {
      const { res } = await deploySite(s, user.key, 'gone', {
        'index.html': '<!doctype html><title>gone</title>',
        '404.html': '<!doctype html><title>lost</title>',
      })
      assert.equal(res.status, 201, res.text)
      // a single-page app's fallback answers the worker's old path with its page (200, HTML)
      const spa = await deploySite(s, user.key, 'spa', { 'index.html': '<!doctype html><title>spa</title>', _redirects: '/* /index.html 200\n' })
      assert.equal(spa.res.status, 201, spa.res.text)
      const fallback = await onHost(`spa.${user.username}.localhost`, '/sw.js')
      assert.equal(fallback.status, 200)
      assert.equal(fallback.h('content-type'), 'text/html; charset=utf-8')
      for (const [host, path] of [
        [`spa.${user.username}.localhost`, '/sw.js'],
        [`gone.${user.username}.localhost`, '/sw.js'],
        [`${user.username}.localhost`, '/gone/sw.js'],
        [`${user.username}.localhost`, '/no-such-project/sw.js'],
        [`app.${user.username}.localhost`, '/old/service-worker.js'],
      ]) {
        const what = `${host}${path}`
        const page = await onHost(host, path)
        assert.equal(page.status, host.startsWith('spa.') ? 200 : 404, `${what}: a page's load gets the 404 (the fallback's page)`)
        for (const method of ['GET', 'HEAD'] as const) {
          const sw = await onHost(host, path, { 'service-worker': 'script' }, method)
          assert.equal(sw.status, 200, what)
          assert.equal(sw.h('content-type'), 'text/javascript; charset=utf-8', what)
          assert.equal(sw.h('cache-control'), 'no-store', what)
          assert.ok(byWorker(sw.h('vary')), `${what}: Vary ${sw.h('vary')}`)
          if (method === 'GET') assert.match(sw.body.toString(), /self\.registration\.unregister\(\)/, what)
          assert.equal(Number(sw.h('content-length')), (await onHost(host, path, { 'service-worker': 'script' })).body.length, what)
        }
      }
      // a script the site has is itself, and the path form still refuses any worker
      assert.equal((await onHost(`app.${user.username}.localhost`, '/sw.js', { 'service-worker': 'script' })).body.toString(), SITE['sw.js'])
      assert.equal((await s.get(`/${user.username}/gone/sw.js`, { headers: { 'service-worker': 'script' } })).status, 403)
    })

    it("lets the user site's worker at the user's origin root be itself, its answers as on the project's origin (decision 277)", async () => {
      const mine = `${user.username}.localhost`
      assert.equal((await s.request('PUT', '/api/folders/app/user_site', { key: user.key })).status, 200)
      try {
        for (const path of ['/sw.js', '/assets/sw.js']) {
          const page = await onHost(mine, path)
          assert.equal(page.status, 200, path)
          assert.equal(page.h('cache-control'), YEAR, `${path}: a page's load takes the rule`)
          const sw = await onHost(mine, path, { 'service-worker': 'script' })
          assert.equal(sw.status, 200, path)
          assert.equal(sw.body.toString(), SITE[path.slice(1)], `${path}: the user site's own script, not a retiring worker`)
          assert.equal(sw.h('cache-control'), DEFAULT, path)
          assert.ok(byWorker(sw.h('vary')) && byWorker(page.h('vary')), path)
          assert.equal(sw.h('etag'), page.h('etag'), path)
        }
        // the scope a root worker may take is the user site's, as on its own origin
        assert.equal((await onHost(mine, '/assets/sw.js')).h('service-worker-allowed'), '/')
        // a script the user site lacks still gets the retiring worker
        const gone = await onHost(mine, '/old-sw.js', { 'service-worker': 'script' })
        assert.equal(gone.status, 200)
        assert.match(gone.body.toString(), /self\.registration\.unregister\(\)/)
      } finally {
        assert.equal((await s.request('DELETE', '/api/folders/app/user_site', { key: user.key })).status, 200)
      }
    })

    it("refuses a worker's fetch of an image or hosted-data link (403), and every answer that depends on it says so", async () => {
      const u = await s.user()
      await svc(s, 'grant', u.username, 'image-host')
      await svc(s, 'grant', u.username, 'hosted-data')
      const cookie = await s.login(u.username, u.password)
      const form = imageForm([{ name: 'icon.png', data: await makeImage('png', { width: 40, height: 30 }) }])
      const up = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      assert.equal(up.status, 200, up.text)
      const img = up.json.images[0] as { public_url: string; versioned_url: string }
      // a script as hosted data, large enough to be offered compressed (Vary: Accept-Encoding too)
      const script = 'self.addEventListener("fetch", () => {})\n'.repeat(20)
      const hd = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'sw.js', content: script, content_type: 'text/javascript' } })
      assert.equal(hd.status, 200, hd.text)
      const at = (url: string) => {
        const u = new URL(url)
        return u.pathname + u.search
      }
      const data = at(hd.json.file.public_url)
      // [link, kept for a year]: a year-kept answer a cache in front could hand to a worker's
      // fetch names Service-Worker; one revalidated on every use reaches the service, which
      // answers the worker apart, and keeps its headers
      const links: Array<[string, boolean]> = [
        [at(img.public_url), false],
        [at(img.versioned_url), true],
        [`${at(img.versioned_url)}&w=8`, true],
        [`${at(img.public_url)}?w=8`, false],
        [data, false],
        [`${data}?v=latest`, false],
        [`${data}?v=1`, true],
      ]
      for (const [link, year] of links) {
        // the first load fills the link's cache (the router), the second is answered before routing
        for (const round of ['miss', 'hit']) {
          const what = `${link} (${round})`
          const page = await s.get(link, { headers: { 'accept-encoding': 'br, gzip' } })
          assert.equal(page.status, 200, what)
          assert.equal(/max-age=31536000/.test(page.header('cache-control') ?? ''), year, `${what}: ${page.header('cache-control')}`)
          assert.equal(byWorker(page.header('vary')), year, `${what}: Vary ${page.header('vary')}`)
          if (link.startsWith('/svc-data/')) assert.match(page.header('vary') ?? '', /accept-encoding/i, what)
          const again = await s.get(link, { headers: { 'if-none-match': page.header('etag')!, 'accept-encoding': 'br, gzip' } })
          assert.equal(again.status, 304, what)
          assert.equal(byWorker(again.header('vary')), year, `${what}: the revalidation's Vary ${again.header('vary')}`)
        }
        const head = await s.request('HEAD', link)
        assert.equal(head.status, 200, link)
        assert.equal(byWorker(head.header('vary')), year, `${link} HEAD: Vary ${head.header('vary')}`)
        const part = await s.get(link, { headers: { range: 'bytes=0-3' } })
        assert.equal(part.status, 206, link)
        assert.equal(byWorker(part.header('vary')), year, `${link} 206: Vary ${part.header('vary')}`)
        // the worker's fetch: refused, never stored, and the refusal says what chose it
        for (const method of ['GET', 'HEAD']) {
          const sw = await s.request(method, link, { headers: { 'service-worker': 'script' } })
          assert.equal(sw.status, 403, `${method} ${link}`)
          assert.ok(byWorker(sw.header('vary')), `${method} ${link}: the refusal's Vary ${sw.header('vary')}`)
          assert.equal(sw.header('cache-control'), 'no-store', `${method} ${link}`)
          assert.equal(sw.header('etag'), undefined, `${method} ${link}`)
        }
      }
    })

    it('keeps the type of a manifest and a WebAssembly module in their compressed forms', async () => {
      for (const f of forms()) {
        for (const [path, type, bytes] of [
          ['/manifest.webmanifest', 'application/manifest+json; charset=utf-8', Buffer.from(SITE['manifest.webmanifest'])],
          ['/big.wasm', 'application/wasm', BIG_WASM],
        ] as const) {
          const what = `${f.name} ${path}`
          let r = await onHost(f.host, f.at + path, { 'accept-encoding': 'br' })
          for (let i = 0; i < 100 && r.h('content-encoding') !== 'br'; i++) {
            await new Promise((ok) => setTimeout(ok, 20))
            r = await onHost(f.host, f.at + path, { 'accept-encoding': 'br' })
          }
          assert.equal(r.h('content-encoding'), 'br', what)
          assert.equal(r.h('content-type'), type, what)
          assert.equal(r.h('cache-control'), DEFAULT, what)
          assert.deepEqual(zlib.brotliDecompressSync(r.body), bytes, what)
        }
      }
    })
  })
}
