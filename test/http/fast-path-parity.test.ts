import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, uploadFile } from '../support/hosting.js'
import { registry } from '../../src/observability/registry.js'
import { imageForm, makeImage, svc } from '../support/images.js'

/**
 * Fast paths (answers written before routing) must not show: for each cached public answer,
 * the router (the first read, which fills the cache), the fast path (the next read) and
 * `app.inject` (which reaches the router directly; the app runs the fast paths in a hook
 * there) give the same status, body and headers, but the per-request ones.
 */

/** Headers that differ per request or per connection, whoever answers. */
const PER_REQUEST = new Set(['date', 'x-request-id', 'connection', 'keep-alive', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'transfer-encoding'])

const fastPathAnswers = async (): Promise<number> => {
  let n = 0
  for (const m of (await registry.getSingleMetric('svc_http_requests_total')?.get())?.values ?? []) if (m.labels.route === '(fast path)') n += m.value
  return n
}

const comparable = (headers: Record<string, string | string[] | number | undefined>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers))
    if (!PER_REQUEST.has(k.toLowerCase()) && v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v)
  return out
}

for (const engine of ENGINES) {
  describe(`fast paths answer as the router does [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    let etag = ''
    let kvTag = ''
    const page = HTML('parity', `<p>${'the same bytes either way; '.repeat(40)}</p>`)
    // behind a proxy that says HTTPS, so inject (plain, no TLS socket) takes the same branches
    const proxied = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '192.0.2.7' }

    // one file per case, so the case's first read finds its cache cold
    const NAMES = ['plain', 'etag', 'range', 'range416', 'clean', 'cleansite']
    const LINKS = ['plain', 'etag', 'versioned', 'variant']
    const images = new Map<string, { public_url: string; versioned_url: string }>()
    const data = new Map<string, string>()
    const etags = new Map<'image' | 'data', string>()
    const imagePath = (n: string) => new URL(images.get(n)!.public_url).pathname
    /** A link's ETag, as the router gives it. */
    const linkEtag = async (path: string) => (await s.app.inject({ method: 'HEAD', url: path, headers: proxied })).headers.etag as string
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, TRUST_PROXY: '1' } })
      u = await s.user()
      for (const n of [...NAMES, 'origin']) {
        const up = await uploadFile(s, { key: u.key }, `${n}.html`, page, {}, proxied)
        assert.equal(up.status, 200, up.text)
      }
      const st = await s.post('/svc_api/data/store', { key: u.key, json: { key: 'parity', value: { a: [1, 2, 3] }, is_public: true }, headers: proxied })
      assert.equal(st.status, 200, st.text)
      const st304 = await s.post('/svc_api/data/store', { key: u.key, json: { key: 'parity304', value: 'same', is_public: true }, headers: proxied })
      assert.equal(st304.status, 200, st304.text)
      kvTag = st304.header('etag')!
      const st412 = await s.post('/svc_api/data/store', { key: u.key, json: { key: 'parity412', value: 'other', is_public: true }, headers: proxied })
      assert.equal(st412.status, 200, st412.text)
      // the ETag is the content's, the same for every file: learnt from the router
      etag = (await s.app.inject({ method: 'HEAD', url: `/${u.username}/origin.html`, headers: proxied })).headers.etag as string
      assert.ok(etag)
      // public links: an image and a hosted-data file per case
      await svc(s, 'grant', u.username, 'image-host')
      await svc(s, 'grant', u.username, 'hosted-data')
      const login = await s.post('/login', { form: { username: u.username, password: u.password }, headers: { accept: 'application/json', ...proxied } })
      assert.equal(login.status, 200, login.text)
      const cookie = login.header('set-cookie')!.split(';')[0]
      // 'etag' and its twin hold the same bytes, so the twin's ETag (read through the router,
      // which fills the twin's lookup cache, not the case's) is the case's
      for (const n of [...LINKS, 'twin']) {
        const form = imageForm([{ name: `${n}.png`, data: await makeImage('png', { width: 40 + (n === 'twin' ? 4 : n.length), height: 30 }) }])
        const up = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType, ...proxied } })
        assert.equal(up.status, 200, up.text)
        images.set(n, up.json.images[0])
        const content = `{"case":"${n === 'twin' ? 'etag' : n}"}`
        const hd = await s.post('/api/hosted-data/files', { cookie, json: { display_name: `${n}.json`, content }, headers: proxied })
        assert.equal(hd.status, 200, hd.text)
        data.set(n, new URL(hd.json.file.public_url).pathname)
      }
      etags.set('image', await linkEtag(imagePath('twin')))
      etags.set('data', await linkEtag(data.get('twin')!))
    })
    after(() => s?.close())

    // [name, request, whether the first read (a cache miss) goes through the router, the status when a case checks it]
    const cases: Array<[string, () => { url: string; headers: Record<string, string> }, boolean, number?]> = [
      // a path-form page whose holds and visitor access are known is taken before routing,
      // its misses too (resolved there); the router's handler serves the others the same way
      ['a hosted page', () => ({ url: `/${u.username}/plain.html`, headers: {} }), false],
      ['a hosted page, If-None-Match (304)', () => ({ url: `/${u.username}/etag.html`, headers: { 'if-none-match': etag } }), false],
      ['a hosted page, Range', () => ({ url: `/${u.username}/range.html`, headers: { range: 'bytes=5-99' } }), false],
      ['a hosted page, unsatisfiable Range (416)', () => ({ url: `/${u.username}/range416.html`, headers: { range: 'bytes=999999-' } }), false],
      // a single page's clean URL (decision 169): found, then taken before routing as its page is
      ['a page at its clean URL', () => ({ url: `/${u.username}/clean`, headers: {} }), false],
      // a user's origin is always taken before routing (its misses are read there too)
      ["a page on the user's origin", () => ({ url: '/origin.html', headers: { host: `${u.username}.localhost:${new URL(s.url).port}` } }), false],
      [
        "a page at its clean URL on the user's origin",
        () => ({ url: '/cleansite', headers: { host: `${u.username}.localhost:${new URL(s.url).port}` } }),
        false,
      ],
      ['the KV public read', () => ({ url: `/svc_api/data/public/${u.username}/parity`, headers: {} }), true],
      ['the KV public read, If-None-Match (304)', () => ({ url: `/svc_api/data/public/${u.username}/parity304`, headers: { 'if-none-match': kvTag } }), true],
      [
        'the KV public read, failing If-Match (412)',
        () => ({ url: `/svc_api/data/public/${u.username}/parity412`, headers: { 'if-match': '"nope"' } }),
        true,
        412,
      ],
      // public links: the first read fills the lookup cache (and makes the variant)
      ['an image link', () => ({ url: imagePath('plain'), headers: {} }), true],
      ['an image link, If-None-Match (304)', () => ({ url: imagePath('etag'), headers: { 'if-none-match': etags.get('image')! } }), true],
      [
        'an image link, versioned (immutable)',
        () => ({ url: new URL(images.get('versioned')!.versioned_url).pathname + new URL(images.get('versioned')!.versioned_url).search, headers: {} }),
        true,
      ],
      ['an image variant', () => ({ url: `${imagePath('variant')}?w=20&format=webp`, headers: {} }), true],
      ['a hosted-data link', () => ({ url: data.get('plain')!, headers: {} }), true],
      ['a hosted-data link, If-None-Match (304)', () => ({ url: data.get('etag')!, headers: { 'if-none-match': etags.get('data')! } }), true],
      ['a hosted-data link, pinned version', () => ({ url: `${data.get('versioned')!}?v=1`, headers: {} }), true],
    ]
    for (const [name, make, routedFirst, status] of cases) {
      it(name, async () => {
        const { url, headers } = make()
        const h = { ...proxied, ...headers }
        const n0 = await fastPathAnswers()
        const first = await s.get(url, { headers: h })
        assert.equal(await fastPathAnswers(), routedFirst ? n0 : n0 + 1, routedFirst ? 'the first read is routed' : 'taken before routing')
        const fast = await s.get(url, { headers: h })
        assert.equal(await fastPathAnswers(), (routedFirst ? n0 : n0 + 1) + 1, 'the next read is a fast-path answer')
        if (status !== undefined) assert.equal(fast.status, status)
        assert.equal(first.status, fast.status)
        assert.equal(first.text, fast.text)
        assert.deepEqual(comparable(first.headers), comparable(fast.headers))
        const injected = await s.app.inject({ method: 'GET', url, headers: { host: new URL(s.url).host, ...h } })
        assert.equal(injected.statusCode, fast.status)
        assert.equal(injected.body, fast.text)
        assert.deepEqual(comparable(injected.headers), comparable(fast.headers))
      })
    }
  })
}
