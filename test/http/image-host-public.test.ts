import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import sharp from 'sharp'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { imageForm, makeImage, svc } from '../support/images.js'
import { createLocalBus, type Bus } from '../../src/infra/bus.js'
import { FakeClock } from '../../src/util/clock.js'
import type { ImageHostState } from '../../src/features/image-host/index.js'

const INERT = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"

async function uploadAs(s: TestServer, cookie: string, files: Array<{ name: string; data: Buffer }>) {
  const form = imageForm(files)
  const r = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
  assert.equal(r.status, 200, r.text)
  return r.json.images as Array<{ public_token: string; public_url: string; versioned_url: string; size: number }>
}

async function replaceAs(s: TestServer, cookie: string, token: string, data: Buffer) {
  const form = imageForm([{ name: 'new.png', data }])
  const r = await s.post(`/api/image-host/images/${token}/replace`, { cookie, body: form.body, headers: { 'content-type': form.contentType } })
  assert.equal(r.status, 200, r.text)
  return r.json.image
}

for (const engine of ENGINES) {
  describe(`image host public links [${engine}]`, () => {
    let s: TestServer
    let cookie: string
    let png: Buffer
    let img: { public_token: string; public_url: string; versioned_url: string; size: number }
    before(async () => {
      s = await startServer({ engine })
      const a = await s.user()
      await svc(s, 'grant', a.username, 'image-host')
      cookie = await s.login(a.username, a.password)
      png = await makeImage('png', { width: 16, height: 12, color: '#22aa44' })
      ;[img] = await uploadAs(s, cookie, [{ name: 'a.png', data: png }])
    })
    after(() => s.close())

    it('serves the bytes with type, nosniff, inert CSP, CORP, ETag, revalidating cache; no cookie, no rate limit', async () => {
      for (const path of [`/svc-img/pub/${img.public_token}`, `/image-host/pub/${img.public_token}`]) {
        const r = await s.get(path)
        assert.equal(r.status, 200)
        assert.ok(r.body.equals(png))
        assert.equal(r.header('content-type'), 'image/png')
        assert.equal(r.header('content-length'), String(png.length))
        assert.equal(r.header('x-content-type-options'), 'nosniff')
        assert.equal(r.header('content-security-policy'), INERT)
        assert.equal(r.header('cross-origin-resource-policy'), 'cross-origin')
        assert.equal(r.header('access-control-allow-origin'), '*')
        assert.equal(r.header('access-control-allow-credentials'), undefined)
        assert.match(r.header('etag')!, /^"[0-9a-f]{64}"$/)
        assert.equal(r.header('cache-control'), 'public, no-cache')
        assert.equal(r.header('set-cookie'), undefined)
        assert.equal(r.header('x-ratelimit-limit'), undefined)
      }
      // anonymous callers get 10 API requests a minute; public links are not counted
      for (let i = 0; i < 15; i++) assert.equal((await s.get(`/svc-img/pub/${img.public_token}`)).status, 200)
    })

    it('answers a CORS preflight, as data links do: a page elsewhere may revalidate or resume', async () => {
      for (const path of [`/svc-img/pub/${img.public_token}`, `/image-host/pub/${img.public_token}`]) {
        const pre = await s.request('OPTIONS', path, {
          headers: { origin: 'https://elsewhere.test', 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match, range' },
        })
        assert.equal(pre.status, 204, `${path}: ${pre.status} ${pre.text}`)
        assert.equal(pre.header('access-control-allow-origin'), '*')
        assert.equal(pre.header('access-control-allow-credentials'), undefined)
        assert.match(pre.header('access-control-allow-methods')!, /\bGET\b/)
        const allowed = pre.header('access-control-allow-headers')!.toLowerCase()
        for (const h of ['if-none-match', 'range']) assert.ok(allowed.includes(h), allowed)
        assert.equal(pre.header('x-ratelimit-limit'), undefined)
      }
    })

    it('documents the endpoints in /openapi.json', async () => {
      const doc = (await s.get('/openapi.json')).json
      for (const p of [
        '/api/image-host/status',
        '/api/image-host/upload',
        '/api/image-host/images',
        '/api/image-host/images/{public_token}',
        '/api/image-host/images/{public_token}/replace',
        '/svc-img/pub/{token}',
      ]) {
        assert.ok(doc.paths[p], p)
      }
    })

    it('a session cookie changes nothing in the answer', async () => {
      const a = await s.get(`/svc-img/pub/${img.public_token}`)
      const b = await s.get(`/svc-img/pub/${img.public_token}`, { cookie })
      assert.ok(a.body.equals(b.body))
      for (const h of ['content-type', 'etag', 'cache-control', 'content-security-policy', 'set-cookie']) assert.equal(a.header(h), b.header(h), h)
    })

    it('answers If-None-Match with 304 (exact, weak, in a list, *) and HEAD without a body', async () => {
      const etag = (await s.get(`/svc-img/pub/${img.public_token}`)).header('etag')!
      for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
        const r = await s.get(`/svc-img/pub/${img.public_token}`, { headers: { 'if-none-match': inm } })
        assert.equal(r.status, 304, inm)
        assert.equal(r.body.length, 0)
        assert.equal(r.header('etag'), etag)
        assert.equal(r.header('cache-control'), 'public, no-cache')
      }
      assert.equal((await s.get(`/svc-img/pub/${img.public_token}`, { headers: { 'if-none-match': '"other"' } })).status, 200)
      const head = await s.request('HEAD', `/image-host/pub/${img.public_token}`)
      assert.equal(head.status, 200)
      assert.equal(head.body.length, 0)
      assert.equal(head.header('content-length'), String(png.length))
      assert.equal(head.header('etag'), etag)
    })

    it('the versioned URL is immutable while current; after a replace it revalidates and shows the new bytes', async () => {
      const [own] = await uploadAs(s, cookie, [{ name: 'v.png', data: await makeImage('png', { color: '#abcdef' }) }])
      const v = await s.get(own.versioned_url.slice(s.url.length))
      assert.equal(v.status, 200)
      assert.equal(v.header('cache-control'), 'public, max-age=31536000, immutable')
      const newer = await makeImage('png', { color: '#fedcba' })
      const rep = await replaceAs(s, cookie, own.public_token, newer)
      assert.notEqual(rep.versioned_url, own.versioned_url)
      const old = await s.get(own.versioned_url.slice(s.url.length))
      assert.ok(old.body.equals(newer))
      assert.equal(old.header('cache-control'), 'public, no-cache')
      assert.equal((await s.get(rep.versioned_url.slice(s.url.length))).header('cache-control'), 'public, max-age=31536000, immutable')
    })

    it('a deleted image is 404 at once on both prefixes, though its answer was taken before routing', async () => {
      const [gone] = await uploadAs(s, cookie, [{ name: 'gone.png', data: await makeImage('png', { color: '#0a0b0c' }) }])
      const link = `/svc-img/pub/${gone.public_token}`
      // the first read fills the lookup cache, the second is the fast path's (prepared heads, the blob's open file)
      for (let i = 0; i < 2; i++) assert.equal((await s.get(link)).status, 200)
      assert.equal((await s.get(`${link}?w=4`)).status, 200)
      assert.equal((await s.get(`${link}?w=4`)).status, 200)
      const del = await s.request('DELETE', `/api/image-host/images/${gone.public_token}`, { cookie })
      assert.equal(del.status, 200, del.text)
      for (const p of [link, `/image-host/pub/${gone.public_token}`, `${link}?w=4`, `${link}?v=${new URL(gone.versioned_url).searchParams.get('v')}`]) {
        assert.equal((await s.get(p)).status, 404, p)
      }
    })

    it('unknown, malformed and deleted tokens are 404; a Service-Worker fetch is 403', async () => {
      for (const t of ['short', 'A'.repeat(22), 'bad token with spaces!!', '..%2f..%2fetc%2fpasswd', 'A'.repeat(65)]) {
        const r = await s.get(`/svc-img/pub/${t}`)
        assert.equal(r.status, 404, t)
        assert.equal(r.header('set-cookie'), undefined)
        // an error answer on the public link is as inert as the content
        assert.match(r.header('content-security-policy') ?? '', /sandbox/, t)
        assert.equal(r.header('x-content-type-options'), 'nosniff', t)
        // and readable by a page on another origin, as the data link's 404 is
        assert.equal(r.header('access-control-allow-origin'), '*', t)
        assert.deepEqual(r.json, { success: false, message: '资源不存在' }, t)
      }
      const sw = await s.get(`/svc-img/pub/${img.public_token}`, { headers: { 'service-worker': 'script' } })
      assert.equal(sw.status, 403)
    })

    it('makes resized and converted variants with their own ETag, never enlarging, and refuses bad parameters', async () => {
      const base = `/svc-img/pub/${img.public_token}`
      const small = await s.get(`${base}?w=8`)
      assert.equal(small.status, 200)
      assert.equal(small.header('content-type'), 'image/png')
      assert.equal(small.header('content-security-policy'), INERT)
      const m = await sharp(small.body).metadata()
      assert.deepEqual([m.width, m.height], [8, 6])
      const etag = small.header('etag')!
      assert.notEqual(etag, (await s.get(base)).header('etag'))
      assert.equal((await s.get(`${base}?w=8`)).header('etag'), etag)
      assert.equal((await s.get(`${base}?w=8`, { headers: { 'if-none-match': etag } })).status, 304)

      const webp = await s.get(`${base}?format=webp&h=6`)
      assert.equal(webp.header('content-type'), 'image/webp')
      const mw = await sharp(webp.body).metadata()
      assert.deepEqual([mw.format, mw.width, mw.height], ['webp', 8, 6])
      for (const [q, fmt] of [
        ['format=jpeg', 'jpeg'],
        ['format=jpg', 'jpeg'],
        ['format=avif', 'heif'],
        ['format=png', 'png'],
      ]) {
        const r = await s.get(`${base}?${q}`)
        assert.equal(r.status, 200, q)
        assert.equal((await sharp(r.body).metadata()).format, fmt, q)
      }
      const big = await s.get(`${base}?w=4000`)
      assert.equal((await sharp(big.body).metadata()).width, 16)
      const head = await s.request('HEAD', `${base}?w=8`)
      assert.equal(head.status, 200)
      assert.equal(head.header('content-length'), String(small.body.length))
      // a refusal is like every answer of the link: inert, not stored, {success, message} only
      for (const q of ['w=0', 'w=4097', 'w=abc', 'h=-1', 'w=1.5', 'format=gif', 'format=svg', 'w=8&w=9999', 'format=png&format=tiff']) {
        const r = await s.get(`${base}?${q}`)
        assert.equal(r.status, 400, q)
        assert.deepEqual(Object.keys(r.json).sort(), ['message', 'success'], q)
        assert.equal(r.json.success, false)
        assert.equal(r.header('content-security-policy'), INERT, q)
        assert.equal(r.header('cache-control'), 'no-store', q)
        assert.equal(r.header('access-control-allow-origin'), '*', q)
      }
      // a name given twice: its last value counts, as for every parameter of the link
      const twice = await s.get(`${base}?w=4&w=8&v=x&v=${img.versioned_url.split('?v=')[1]}`)
      assert.equal(twice.status, 200, twice.text)
      assert.equal((await sharp(twice.body).metadata()).width, 8)
      assert.equal(twice.header('cache-control'), 'public, max-age=31536000, immutable')
    })

    it('an answer that fails once its headers were chosen (bytes unreadable) is never stored and names no version', async () => {
      const [gone] = await uploadAs(s, cookie, [{ name: 'gone.png', data: await makeImage('png', { width: 20, height: 10, color: '#123456' }) }])
      const row = await s.deps.db.k.selectFrom('images').select('digest').where('public_token', '=', gone.public_token).executeTakeFirstOrThrow()
      // the store loses the blob (a storage outage, a partial restore)
      await s.deps.blobs.delete(row.digest)
      const path = (u: string) => new URL(u).pathname + new URL(u).search
      for (const [url, headers] of [
        [path(gone.versioned_url), {}],
        [`${path(gone.versioned_url)}&w=10`, {}],
        [`${path(gone.public_url)}?format=webp`, {}],
        [path(gone.public_url), { range: 'bytes=0-9' }],
      ] as const) {
        const r = await s.get(url, { headers })
        assert.ok(r.status >= 500, `${url} ${r.status}`)
        assert.equal(r.json.success, false)
        assert.equal(r.header('cache-control'), 'no-store', url)
        for (const h of ['etag', 'content-range', 'accept-ranges']) assert.equal(r.header(h), undefined, `${url} ${h}`)
        assert.equal(r.header('content-security-policy'), INERT, url)
      }
    })

    it('identical concurrent variant requests share one transformation', async () => {
      const { variants } = s.app.featureState('image-host') as ImageHostState
      const before = variants.stats.made
      const rs = await Promise.all(Array.from({ length: 6 }, () => s.get(`/svc-img/pub/${img.public_token}?w=5&format=webp`)))
      assert.ok(rs.every((r) => r.status === 200))
      assert.ok(rs.every((r) => r.body.equals(rs[0].body)))
      assert.equal(variants.stats.made - before, 1)
    })

    it('a replace on one instance is served by another instance on its very next request', async () => {
      // two instances over one database and blob store, with one bus between them (what REDIS_URL gives)
      const shared = createLocalBus()
      const bus: Bus = { publish: (...a) => shared.publish(...a), subscribe: (...a) => shared.subscribe(...a), close: async () => {} }
      const a = await startServer({ engine, bus })
      let b: TestServer | undefined
      try {
        b = await startServer({ engine, bus, dataDir: a.dataDir, keepData: true, env: a.env.DATABASE_URL ? { DATABASE_URL: a.env.DATABASE_URL } : {} })
        const u = await a.user()
        await svc(a, 'grant', u.username, 'image-host')
        const c = await a.login(u.username, u.password)
        const red = await makeImage('png', { color: '#ff0000' })
        const blue = await makeImage('png', { color: '#0000ff' })
        const [one] = await uploadAs(a, c, [{ name: 'r.png', data: red }])
        // B caches the token's lookup
        assert.ok((await b.get(`/svc-img/pub/${one.public_token}`)).body.equals(red))
        assert.ok((await b.get(`/svc-img/pub/${one.public_token}`)).body.equals(red))
        await replaceAs(a, c, one.public_token, blue)
        const next = await b.get(`/svc-img/pub/${one.public_token}`)
        assert.ok(next.body.equals(blue))
        const del = await a.request('DELETE', `/api/image-host/images/${one.public_token}`, { cookie: c })
        assert.equal(del.status, 200)
        assert.equal((await b.get(`/svc-img/pub/${one.public_token}`)).status, 404)
      } finally {
        await b?.close()
        await a.close()
      }
    })
  })

  describe(`image host public links' Last-Modified [${engine}]`, () => {
    it('originals and variants date from the last change, answer If-Modified-Since, and a replace moves the date', async () => {
      const t0 = Math.floor(Date.now() / 1000) * 1000
      const clock = new FakeClock(t0)
      const s = await startServer({ engine, clock })
      try {
        const a = await s.user()
        await svc(s, 'grant', a.username, 'image-host')
        const cookie = await s.login(a.username, a.password)
        const [img] = await uploadAs(s, cookie, [{ name: 'a.png', data: await makeImage('png', { width: 8, height: 8, color: '#123456' }) }])
        const date = (ms: number) => new Date(ms).toUTCString()
        const links = [`/svc-img/pub/${img.public_token}`, `/image-host/pub/${img.public_token}?w=4&format=webp`]
        for (const link of links) {
          // the route (fills the caches), then the answer from memory: the same date
          for (let i = 0; i < 2; i++) {
            const r = await s.get(link)
            assert.equal(r.status, 200, link)
            assert.equal(r.header('last-modified'), date(t0), link)
            assert.equal((await s.get(link, { headers: { 'if-modified-since': date(t0) } })).status, 304, link)
            assert.equal((await s.get(link, { headers: { 'if-modified-since': date(t0 - 1000) } })).status, 200, link)
            assert.equal((await s.get(link, { headers: { 'if-none-match': '"other"', 'if-modified-since': date(t0) } })).status, 200, link)
          }
        }
        clock.advance(60_000)
        const replaced = await makeImage('png', { width: 8, height: 8, color: '#654321' })
        await replaceAs(s, cookie, img.public_token, replaced)
        for (const link of links) {
          const r = await s.get(link, { headers: { 'if-modified-since': date(t0) } })
          assert.equal(r.status, 200, link)
          assert.equal(r.header('last-modified'), date(t0 + 60_000), link)
        }
        assert.ok((await s.get(links[0])).body.equals(replaced))
      } finally {
        await s.close()
      }
    })
  })

  describe(`image host public links of a disabled account [${engine}]`, () => {
    it("go offline within the cache's life, and come back when the account is enabled", async () => {
      const clock = new FakeClock(Date.now())
      const s = await startServer({ engine, clock })
      try {
        const a = await s.user()
        await svc(s, 'grant', a.username, 'image-host')
        const cookie = await s.login(a.username, a.password)
        const [img] = await uploadAs(s, cookie, [{ name: 'a.png', data: await makeImage('png', { width: 8, height: 8, color: '#123456' }) }])
        const link = `/svc-img/pub/${img.public_token}`
        assert.equal((await s.get(link)).status, 200)
        // as `svc user set --disable` does it: the row only, no message to the serving instance
        await s.deps.users.update(a.username, { disabled: true })
        clock.advance(5_001)
        assert.equal((await s.get(link)).status, 404)
        assert.equal((await s.get(`/image-host/pub/${img.public_token}`)).status, 404)
        await s.deps.users.update(a.username, { disabled: false })
        clock.advance(5_001)
        assert.equal((await s.get(link)).status, 200)
      } finally {
        await s.close()
      }
    })
  })
}

describe('new image variants per client address (decision 229)', () => {
  it('makes 120 a minute for one address, then answers 429 / 1204 with Retry-After; cached ones still serve', async () => {
    const clock = new FakeClock(Date.now())
    const s = await startServer({ engine: 'sqlite', clock })
    try {
      const a = await s.user()
      await svc(s, 'grant', a.username, 'image-host')
      const cookie = await s.login(a.username, a.password)
      const [img] = await uploadAs(s, cookie, [{ name: 'a.png', data: await makeImage('png', { width: 16, height: 12, color: '#336699' }) }])
      const link = `/svc-img/pub/${img.public_token}`
      const { variants } = s.app.featureState('image-host') as ImageHostState
      // 120 distinct sizes (w and h from 1 to 60): each one a new transformation
      for (let i = 1; i <= 120; i++) {
        const r = await s.get(`${link}?${i <= 60 ? 'w' : 'h'}=${((i - 1) % 60) + 1}&format=webp`)
        assert.equal(r.status, 200, `${i}: ${r.text}`)
      }
      const made = variants.stats.made
      const refused = await s.get(`${link}?w=61&format=webp`)
      assert.equal(refused.status, 429, refused.text)
      assert.equal(refused.json.success, false)
      assert.match(refused.json.message, /120/)
      const retry = Number(refused.header('retry-after'))
      assert.ok(retry >= 1 && retry <= 60, String(retry))
      assert.equal(refused.header('cache-control'), 'no-store')
      assert.equal(refused.header('access-control-allow-origin'), '*')
      // a page on another origin may read when to ask again
      assert.match(refused.header('access-control-expose-headers') ?? '', /\bRetry-After\b/)
      assert.equal(variants.stats.made, made, 'a refused request made no variant')
      // what is already made, and the original, still serve to the same address
      assert.equal((await s.get(`${link}?w=7&format=webp`)).status, 200)
      assert.equal((await s.get(link)).status, 200)
      // the window slides: a minute later the address may make new ones again
      clock.advance(60_001)
      assert.equal((await s.get(`${link}?w=61&format=webp`)).status, 200)
      assert.equal(variants.stats.made, made + 1)
    } finally {
      await s.close()
    }
  })
})
