import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import sharp, { type Sharp } from 'sharp'
import { ENGINES, startServer, type Res, type TestServer } from '../support/server.js'
import { expectError, expectErrorInBoth } from '../support/errors.js'
import { cleanFileName } from '../../src/features/image-host/service.js'
import {
  blobDigests,
  exifTiff,
  imageForm,
  jpegSegment,
  pngChunks,
  jpegWithMetadata,
  makeImage,
  pngWithMetadata,
  redeemCode,
  svc,
  SVG_WITH_SCRIPT,
  webpWithMetadata,
} from '../support/images.js'

type Account = Awaited<ReturnType<TestServer['user']>> & { cookie: string }

for (const engine of ENGINES) {
  describe(`image host API [${engine}]`, () => {
    let s: TestServer
    let alice: Account
    let bob: Account
    let png: Buffer
    before(async () => {
      s = await startServer({ engine })
      const a = await s.user()
      const b = await s.user()
      alice = { ...a, cookie: await s.login(a.username, a.password) }
      bob = { ...b, cookie: await s.login(b.username, b.password) }
      await svc(s, 'grant', alice.username, 'image-host')
      png = await makeImage('png')
    })
    after(() => s.close())

    const upload = (who: Account, files: Array<{ name: string; data: Buffer | string; type?: string }>, fields: Record<string, string> = {}, query = '') => {
      const form = imageForm(files, fields)
      return s.post(`/api/image-host/upload${query}`, {
        cookie: who.cookie,
        body: form.body,
        headers: { 'content-type': form.contentType, 'accept-language': 'en' },
      })
    }
    /** An entitled account of its own, for a test whose requests would pass alice's per-minute rate limit. */
    const freshAccount = async (): Promise<Account> => {
      const u = await s.user()
      await svc(s, 'grant', u.username, 'image-host')
      return { ...u, cookie: await s.login(u.username, u.password) }
    }
    const rowCount = async (userId: string) =>
      Number(
        (
          await s.deps.db.k
            .selectFrom('images')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('user_id', '=', userId)
            .executeTakeFirstOrThrow()
        ).n,
      )

    it('status: 401 without a session, 403 {success:false,message} for an API key, 200 entitled:false before an entitlement', async () => {
      const none = await s.get('/api/image-host/status')
      assert.equal(none.status, 401)
      assert.equal(none.json.success, false)
      const key = await s.get('/api/image-host/status', { key: alice.key })
      assert.equal(key.status, 403)
      assert.deepEqual(Object.keys(key.json).sort(), ['message', 'success'])
      assert.equal(key.json.success, false)
      const st = await s.get('/api/image-host/status', { cookie: bob.cookie })
      assert.equal(st.status, 200)
      assert.equal(st.json.success, true)
      assert.equal(st.json.entitled, false)
      assert.deepEqual(st.json.quota, { max_images: 500, used_images: 0, max_total_bytes: 524288000, used_bytes: 0, max_image_bytes: 10485760 })
      const ok = await s.get('/api/image-host/status', { cookie: alice.cookie })
      assert.equal(ok.json.entitled, true)
    })

    it('every management endpoint refuses an API key and a session without the entitlement with 403 {success:false,message}', async () => {
      const tok = 'A'.repeat(22)
      const form = imageForm([{ name: 'a.png', data: png }])
      const calls: Array<[string, string, object]> = [
        ['POST', '/api/image-host/upload', { body: form.body, headers: { 'content-type': form.contentType } }],
        ['GET', '/api/image-host/images', {}],
        ['PATCH', `/api/image-host/images/${tok}`, { json: { remark: 'x' } }],
        ['POST', `/api/image-host/images/${tok}/replace`, { body: form.body, headers: { 'content-type': form.contentType } }],
        ['DELETE', `/api/image-host/images/${tok}`, {}],
      ]
      for (const [method, path, o] of calls) {
        for (const auth of [{ key: alice.key }, { cookie: bob.cookie }]) {
          const r = await s.request(method, path, { ...o, ...auth })
          assert.equal(r.status, 403, `${method} ${path} ${JSON.stringify(auth).slice(2, 8)}`)
          assert.deepEqual(Object.keys(r.json).sort(), ['message', 'success'])
          assert.equal(r.json.success, false)
        }
      }
      assert.equal(await rowCount(bob.id), 0)
    })

    it('a redeemed code grants the entitlement (once)', async () => {
      const carol = await s.user()
      const cookie = await s.login(carol.username, carol.password)
      const code = await redeemCode(s, 'image-host')
      const r = await s.post('/api/redeem', { cookie, json: { code } })
      assert.equal(r.status, 200)
      assert.equal((await s.get('/api/image-host/status', { cookie })).json.entitled, true)
      const again = await s.post('/api/redeem', { cookie: bob.cookie, json: { code } })
      assert.equal(again.status, 400)
      assert.equal((await s.get('/api/image-host/status', { cookie: bob.cookie })).json.entitled, false)
      const up = await s.post('/api/image-host/upload', {
        cookie,
        ...(() => {
          const f = imageForm([{ name: 'c.png', data: png }])
          return { body: f.body, headers: { 'content-type': f.contentType } }
        })(),
      })
      assert.equal(up.status, 200)
    })

    it('uploads several files in one request; types come from the bytes; the public link serves them', async () => {
      const jpg = await makeImage('jpeg')
      const gif = await makeImage('gif')
      const webp = await makeImage('webp')
      const avif = await makeImage('avif')
      const r = await upload(
        alice,
        [
          { name: 'cat.gif', data: png, type: 'image/gif' }, // a PNG named .gif
          { name: 'b.jpg', data: jpg, type: 'image/jpeg' },
          { name: 'c.gif', data: gif },
          { name: 'd.webp', data: webp },
          { name: 'e.avif', data: avif },
        ],
        { remark: 'holiday' },
      )
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      assert.equal(r.json.images.length, 5)
      assert.deepEqual(
        r.json.images.map((i: any) => i.content_type),
        ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif'],
      )
      for (const img of r.json.images) {
        for (const f of ['public_token', 'public_url', 'file_name', 'size', 'content_type', 'remark', 'locked', 'created_at']) assert.ok(f in img, f)
        assert.match(img.public_token, /^[A-Za-z0-9_-]{16,}$/)
        assert.equal(img.public_url, `${s.url}/svc-img/pub/${img.public_token}`)
        assert.equal(img.remark, 'holiday')
        assert.equal(img.locked, false)
        assert.match(img.created_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      }
      const first = r.json.images[0]
      assert.equal(first.file_name, 'cat.gif')
      assert.equal(first.width, 16)
      const pub = await s.get(`/svc-img/pub/${first.public_token}`)
      assert.equal(pub.status, 200)
      assert.equal(pub.header('content-type'), 'image/png')
      assert.ok(pub.body.equals(png))
      const alias = await s.get(`/image-host/pub/${first.public_token}`)
      assert.ok(alias.body.equals(png))
      const st = await s.get('/api/image-host/status', { cookie: alice.cookie })
      assert.equal(st.json.quota.used_images, 5)
      assert.equal(
        st.json.quota.used_bytes,
        r.json.images.reduce((n: number, i: any) => n + i.size, 0),
      )
    })

    describe('refuses HTML named .png, text, empty files and a missing file with 400 and stores nothing', () => {
      let rowsBefore: number
      let blobsBefore: Set<string>
      before(async () => {
        rowsBefore = await rowCount(alice.id)
        blobsBefore = await blobDigests(s)
      })
      /** A refusal in the plain shape with nothing else in it: `{success:false, message}`. */
      const expectPlainOnly = (r: Res, status: number) => {
        expectError(r, status, 'plain')
        assert.deepEqual(Object.keys(r.json).sort(), ['message', 'success'])
      }
      const cases: Array<[string, () => Array<{ name: string; data: Buffer | string; type?: string }>, RegExp]> = [
        ['HTML named .png', () => [{ name: 'x.png', data: '<!doctype html><html><script>alert(1)</script></html>', type: 'image/png' }], /html/i],
        ['text named .jpg', () => [{ name: 'x.jpg', data: 'just some text', type: 'image/jpeg' }], /text\/plain/],
        [
          'a PDF beside a good PNG',
          () => [
            { name: 'ok.png', data: png },
            { name: 'x.png', data: Buffer.from('%PDF-1.4\n1 0 obj\n') },
          ],
          /pdf/i,
        ],
        ['an empty file', () => [{ name: 'x.png', data: Buffer.alloc(0) }], /empty/i],
        ['a PNG signature then zeros', () => [{ name: 'x.png', data: Buffer.concat([png.subarray(0, 16), Buffer.alloc(40)]) }], /png/i],
      ]
      for (const [label, files, msg] of cases) {
        it(`${label}: 400`, async () => {
          const r = await upload(alice, files())
          expectPlainOnly(r, 400)
          assert.match(r.json.message, msg)
        })
      }
      it('only the empty part of a file input left empty (no file name, no bytes): 400', async () => {
        const r = await upload(alice, [{ name: '', data: Buffer.alloc(0) }])
        expectPlainOnly(r, 400)
      })
      it('no file part: 400', async () => {
        const f = imageForm([], { remark: 'r' })
        const noFile = await s.post('/api/image-host/upload', { cookie: alice.cookie, body: f.body, headers: { 'content-type': f.contentType } })
        expectError(noFile, 400, 'plain')
      })
      it('a JSON body: 415', async () => {
        expectError(await s.post('/api/image-host/upload', { cookie: alice.cookie, json: { file: 'x' } }), 415, 'plain')
      })
      it('the image in a field of another name: 400', async () => {
        const wrongField = multipartWith('image', png)
        const wf = await s.post('/api/image-host/upload', { cookie: alice.cookie, body: wrongField.body, headers: { 'content-type': wrongField.contentType } })
        expectError(wf, 400, 'plain')
      })
      it('after them all, no image row and no new blob', async () => {
        assert.equal(await rowCount(alice.id), rowsBefore)
        // (the valid PNG of the mixed request is content stored earlier, so no blob is new either)
        const blobsAfter = await blobDigests(s)
        for (const d of blobsAfter) if (!blobsBefore.has(d)) assert.fail(`new blob ${d} after refused uploads`)
      })
    })

    it('skips the empty part of a file input left empty beside real images', async () => {
      const empty = { name: '', data: Buffer.alloc(0) }
      const r = await upload(alice, [empty, { name: 'one.png', data: png }, empty])
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(
        r.json.images.map((i: any) => i.file_name),
        ['one.png'],
      )
    })

    it('names the detected type in the refusal, in Chinese by default', async () => {
      const form = imageForm([{ name: 'x.png', data: '<html><body>hi</body></html>', type: 'image/png' }])
      const r = await s.post('/api/image-host/upload', { cookie: alice.cookie, body: form.body, headers: { 'content-type': form.contentType } })
      assert.equal(r.status, 400)
      assert.match(r.json.message, /不支持的文件类型：text\/html/)
    })

    it('strips EXIF/GPS, XMP and comments from a JPEG losslessly, keeping the orientation', async () => {
      const jpg = await jpegWithMetadata()
      const meta = await sharp(jpg).metadata()
      assert.equal(meta.orientation, 6)
      assert.ok(meta.exif && meta.xmp, 'fixture carries EXIF and XMP')
      for (const secret of ['SECRETCAM', 'SECRETXMP', 'SECRETCOMMENT']) assert.ok(jpg.includes(secret))
      const r = await upload(alice, [{ name: 'photo.jpg', data: jpg }])
      assert.equal(r.status, 200, r.text)
      const img = r.json.images[0]
      assert.ok(img.size < jpg.length)
      const served = (await s.get(`/svc-img/pub/${img.public_token}`)).body
      for (const secret of ['SECRETCAM', 'SECRETXMP', 'SECRETCOMMENT', 'GPS']) assert.ok(!served.includes(secret), secret)
      const m = await sharp(served).metadata()
      assert.equal(m.orientation, 6)
      assert.equal(m.xmp, undefined)
      assert.ok(!m.exif || m.exif.length < 64)
      // lossless: the entropy-coded image data is byte for byte the same
      const sos = (b: Buffer) => b.subarray(b.indexOf(Buffer.from([0xff, 0xda])))
      assert.ok(sos(served).equals(sos(jpg)))
    })

    it('reports width and height as displayed: after an EXIF orientation that turns the photo', async () => {
      // 24x16 pixels, orientation 6: shown 16 wide and 24 high, as browsers and variants show it
      const turned = (img: Sharp) => img.withMetadata({ orientation: 6 }).toBuffer()
      const pixels = () => sharp({ create: { width: 24, height: 16, channels: 3, background: '#0a0' } })
      const files = [
        { name: 'photo.jpg', data: await jpegWithMetadata() },
        { name: 'p.png', data: await turned(pixels().png()) },
        { name: 'w.webp', data: await turned(pixels().webp()) },
      ]
      for (const keep of ['false', 'true']) {
        const r = await upload(alice, files, { keep_metadata: keep })
        assert.equal(r.status, 200, r.text)
        for (const img of r.json.images) {
          assert.deepEqual([img.width, img.height], [16, 24], `${img.file_name} keep_metadata=${keep}`)
          const served = await sharp((await s.get(`/svc-img/pub/${img.public_token}`)).body).metadata()
          assert.deepEqual([served.autoOrient.width, served.autoOrient.height], [16, 24], `${img.file_name} as served`)
        }
      }
    })

    it('strips the EXIF/GPS of a picture appended after the JPEG, and segments between progressive scans', async () => {
      const exif = jpegSegment(0xffe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), exifTiff('SECRETCAM', 1)]))
      // a phone's multi-picture JPEG: a second JPEG with its own EXIF (GPS) and a trailer after the first one's EOI
      const base = await makeImage('jpeg', { width: 24, height: 16 })
      const second = Buffer.concat([base.subarray(0, 2), exif, base.subarray(2)])
      const appended = Buffer.concat([base, second, Buffer.from('SECRETTRAILER')])
      // a progressive JPEG with an EXIF segment and a comment before its second scan
      const prog = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#123456' } })
        .jpeg({ progressive: true })
        .toBuffer()
      const scan2 = prog.indexOf(Buffer.from([0xff, 0xda]), prog.indexOf(Buffer.from([0xff, 0xda])) + 2)
      assert.ok(scan2 > 0, 'fixture has two scans')
      const between = Buffer.concat([prog.subarray(0, scan2), exif, jpegSegment(0xfffe, Buffer.from('SECRETCOMMENT')), prog.subarray(scan2)])
      const r = await upload(alice, [
        { name: 'mpo.jpg', data: appended },
        { name: 'prog.jpg', data: between },
      ])
      assert.equal(r.status, 200, r.text)
      const [a, p] = await Promise.all(r.json.images.map(async (i: any) => (await s.get(`/svc-img/pub/${i.public_token}`)).body))
      for (const secret of ['SECRETCAM', 'SECRETTRAILER', 'GPS']) assert.ok(!a.includes(secret), secret)
      assert.ok(a.equals(base), 'the first picture, byte for byte')
      for (const secret of ['SECRETCAM', 'SECRETCOMMENT']) assert.ok(!p.includes(secret), secret)
      assert.ok(p.equals(prog), 'the progressive JPEG, byte for byte')
      assert.equal(r.json.images[0].size, base.length)
    })

    it('strips metadata from PNG and WebP too, and keeps it with keep_metadata=true', async () => {
      const p = await pngWithMetadata()
      const w = await webpWithMetadata()
      for (const secret of ['SECRETPNGEXIF', 'SECRETPNGTEXT']) assert.ok(p.includes(secret))
      for (const type of ['eXIf', 'tEXt', 'zTXt']) assert.ok(pngChunks(p).includes(type), type)
      const r = await upload(alice, [
        { name: 'p.png', data: p },
        { name: 'w.webp', data: w },
      ])
      assert.equal(r.status, 200, r.text)
      const sp = (await s.get(`/svc-img/pub/${r.json.images[0].public_token}`)).body
      const sw = (await s.get(`/svc-img/pub/${r.json.images[1].public_token}`)).body
      for (const secret of ['SECRETPNGEXIF', 'SECRETPNGTEXT']) assert.ok(!sp.includes(secret), secret)
      assert.deepEqual(
        pngChunks(sp),
        pngChunks(p).filter((t) => !['eXIf', 'tEXt', 'zTXt', 'iTXt', 'tIME'].includes(t)),
      )
      for (const secret of ['SECRETWEBPEXIF', 'SECRETWEBPXMP']) assert.ok(!sw.includes(secret), secret)
      const mp = await sharp(sp).metadata()
      const mw = await sharp(sw).metadata()
      assert.equal(mp.exif, undefined)
      assert.equal(mw.exif, undefined)
      assert.equal(mw.xmp, undefined)
      assert.equal(mw.width, 8)

      const kept = await upload(alice, [{ name: 'photo.jpg', data: await jpegWithMetadata() }], { keep_metadata: 'true' })
      assert.equal(kept.status, 200)
      const sk = (await s.get(`/svc-img/pub/${kept.json.images[0].public_token}`)).body
      assert.ok(sk.equals(await jpegWithMetadata()))
      const bad = await upload(alice, [{ name: 'p.png', data: png }], {}, '?keep_metadata=maybe')
      assert.equal(bad.status, 400)
    })

    it('accepts SVG and serves it inert: sandbox CSP, nosniff, CORP, no cookies; variant parameters get the SVG', async () => {
      const r = await upload(alice, [{ name: 'logo.png', data: SVG_WITH_SCRIPT, type: 'image/png' }])
      assert.equal(r.status, 200, r.text)
      const img = r.json.images[0]
      assert.equal(img.content_type, 'image/svg+xml')
      const pub = await s.get(`/svc-img/pub/${img.public_token}`, { cookie: alice.cookie })
      assert.equal(pub.status, 200)
      assert.equal(pub.header('content-type'), 'image/svg+xml')
      const csp = pub.header('content-security-policy')!
      assert.match(csp, /default-src 'none'/)
      assert.match(csp, /(^|;)\s*sandbox\s*(;|$)/)
      assert.ok(!/allow-scripts|allow-same-origin|script-src/.test(csp))
      assert.equal(pub.header('x-content-type-options'), 'nosniff')
      assert.equal(pub.header('cross-origin-resource-policy'), 'cross-origin')
      assert.equal(pub.header('set-cookie'), undefined)
      assert.equal(pub.text, SVG_WITH_SCRIPT)
      // a page sizing every picture of a gallery (the dashboard's own srcset included) gets the
      // SVG itself for an SVG: the browser scales it; stable and versioned links keep their caching
      for (const [q, cache] of [
        ['w=10', 'public, no-cache'],
        ['format=png', 'public, no-cache'],
        ['w=640&h=160&format=webp', 'public, no-cache'],
        [`v=${new URL(img.versioned_url).searchParams.get('v')}&w=1280&format=webp`, 'public, max-age=31536000, immutable'],
      ]) {
        for (let i = 0; i < 2; i++) {
          // the second request is answered from the public link's fast path
          const v = await s.get(`/svc-img/pub/${img.public_token}?${q}`)
          assert.equal(v.status, 200, `${q}: ${v.text}`)
          assert.equal(v.header('content-type'), 'image/svg+xml', q)
          assert.equal(v.text, SVG_WITH_SCRIPT, q)
          assert.equal(v.header('etag'), pub.header('etag'), q)
          assert.equal(v.header('cache-control'), cache, q)
          assert.equal(v.header('content-security-policy'), csp, q)
        }
      }
      const ranged = await s.get(`/svc-img/pub/${img.public_token}?w=10`, { headers: { range: 'bytes=0-3' } })
      assert.equal(ranged.status, 206)
      assert.equal(ranged.text, SVG_WITH_SCRIPT.slice(0, 4))
      // parameters are still checked: a bad value is refused as for any image
      for (const [q, zh, en] of [
        ['format=bmp', 'format 须为以下值之一：', 'format must be one of '],
        ['w=0', 'w 须为 1 到 ', 'w must be an integer from 1 to '],
      ]) {
        assert.ok((await s.get(`/svc-img/pub/${img.public_token}?${q}`)).json.message.includes(zh), q)
        assert.ok((await s.get(`/svc-img/pub/${img.public_token}?${q}`, { headers: { 'accept-language': 'en' } })).json.message.includes(en), q)
      }
    })

    it("lists the caller's images newest first with total and paging", async () => {
      const r = await s.get('/api/image-host/images', { cookie: alice.cookie })
      assert.equal(r.status, 200)
      assert.equal(r.json.success, true)
      const total = await rowCount(alice.id)
      assert.equal(r.json.total, total)
      assert.equal(r.json.images.length, Math.min(total, 50))
      const times = r.json.images.map((i: any) => i.created_at)
      assert.deepEqual([...times].sort().reverse(), times)
      const p2 = await s.get('/api/image-host/images?per_page=2&page=2', { cookie: alice.cookie })
      assert.equal(p2.json.images.length, 2)
      assert.equal(p2.json.images[0].public_token, r.json.images[2].public_token)
      for (const q of ['per_page=0', 'per_page=101', 'page=0', 'page=abc']) {
        const bad = await s.get(`/api/image-host/images?${q}`, { cookie: alice.cookie })
        assert.equal(bad.status, 400, q)
        assert.equal(bad.json.success, false)
      }
      const empty = await s.get('/api/image-host/images', {
        cookie: await (async () => {
          const c = await s.user()
          await svc(s, 'grant', c.username, 'image-host')
          return s.login(c.username, c.password)
        })(),
      })
      assert.deepEqual({ images: empty.json.images, total: empty.json.total }, { images: [], total: 0 })
    })

    it('file names lose control, bidi and zero-width characters, on upload and PATCH; joiners inside a word stay', async () => {
      const own = await freshAccount()
      const up = await upload(own, [{ name: 'photo\u202Egnp.exe\u0085x\u200b.png', data: png }])
      assert.equal(up.status, 200, up.text)
      const img = up.json.images[0]
      assert.equal(img.file_name, 'photognp.exex.png')
      const names: [string, string][] = [
        ['\u2066evil\u2069.png\u200b', 'evil.png'],
        ['\ufeffa\u0080\u009fb\u061c.png', 'ab.png'],
        ['\u202e\u202d', 'image'],
        // a joiner writing needs (Persian, an emoji sequence) is kept; at an ASCII edge it goes
        ['می\u200cخواهم.png', 'می\u200cخواهم.png'],
        ['\u{1F469}\u200d\u{1F4BB}.png', '\u{1F469}\u200d\u{1F4BB}.png'],
        ['a\u200db.png', 'ab.png'],
      ]
      for (const [given, kept] of names) {
        const r = await s.request('PATCH', `/api/image-host/images/${img.public_token}`, { cookie: own.cookie, json: { file_name: given } })
        assert.equal(r.status, 200, r.text)
        assert.equal(r.json.image.file_name, kept, JSON.stringify(given))
      }
      const stored = await s.get(`/api/image-host/images/${img.public_token}`, { cookie: own.cookie })
      assert.equal(stored.json.image.file_name, 'ab.png')
    })

    it("PATCH updates remark and file name; missing or another user's image is 404; bad input is 400", async () => {
      const up = await upload(alice, [{ name: 'a.png', data: png }])
      const tok = up.json.images[0].public_token
      const r = await s.request('PATCH', `/api/image-host/images/${tok}`, { cookie: alice.cookie, json: { remark: '备注 ✓', file_name: 'renamed.png' } })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      assert.equal(r.json.image.remark, '备注 ✓')
      assert.equal(r.json.image.file_name, 'renamed.png')
      assert.equal(r.json.image.public_token, tok)
      const list = await s.get('/api/image-host/images', { cookie: alice.cookie })
      assert.equal(list.json.images.find((i: any) => i.public_token === tok).remark, '备注 ✓')
      const one = await s.get(`/api/image-host/images/${tok}`, { cookie: alice.cookie })
      assert.equal(one.status, 200)
      assert.deepEqual(one.json, { success: true, image: r.json.image })

      await svc(s, 'grant', bob.username, 'image-host')
      const other = await s.request('PATCH', `/api/image-host/images/${tok}`, { cookie: bob.cookie, json: { remark: 'mine' } })
      assert.equal(other.status, 404)
      assert.deepEqual(Object.keys(other.json).sort(), ['message', 'success'])
      const missing = await s.request('PATCH', `/api/image-host/images/${'Z'.repeat(22)}`, { cookie: alice.cookie, json: { remark: 'x' } })
      assert.equal(missing.status, 404)
      assert.equal((await s.get(`/api/image-host/images/${tok}`, { cookie: bob.cookie })).status, 404)
      assert.equal((await s.get(`/api/image-host/images/${'Z'.repeat(22)}`, { cookie: alice.cookie })).status, 404)
      const bodies = [
        {},
        { remark: 'a\u0000b' },
        { remark: 'a\ud800b' },
        { remark: 'a\udc00' },
        { file_name: 'surr\ud800.png' },
        { remark: 'x'.repeat(501) },
        { file_name: '' },
      ]
      for (const body of bodies) {
        const bad = await s.request('PATCH', `/api/image-host/images/${tok}`, { cookie: alice.cookie, json: body })
        assert.equal(bad.status, 400, JSON.stringify(body))
        assert.equal(bad.json.success, false)
        // the reason in the answer's language: no English inside the Chinese message
        assert.match(bad.json.message, /[\u4e00-\u9fff]/)
        assert.doesNotMatch(bad.json.message, /[a-z]{4,} [a-z]{2,}/, `no English words: ${bad.json.message}`)
        const en = await s.request('PATCH', `/api/image-host/images/${tok}`, { cookie: alice.cookie, json: body, headers: { 'accept-language': 'en' } })
        assert.match(en.json.message, /^Invalid parameter: \w+/, en.json.message)
      }
      assert.equal((await s.get(`/api/image-host/images/${tok}`, { cookie: alice.cookie })).json.image.remark, '备注 ✓', 'nothing changed')
      // an uploaded name cut at 255 characters never keeps half of a surrogate pair
      assert.equal(cleanFileName('a'.repeat(254) + '\u{1F600}.png'), 'a'.repeat(254))
      const cross = await s.request('PATCH', `/api/image-host/images/${tok}`, {
        cookie: alice.cookie,
        json: { remark: 'evil' },
        headers: { origin: 'https://evil.test' },
      })
      assert.equal(cross.status, 403)
      assert.equal(cross.json.success, false)
      await svc(s, 'grant', bob.username, 'image-host', '--revoke')
    })

    it('replace keeps the token and URL; the public link serves the new bytes on the very next request', async () => {
      const red = await makeImage('png', { color: '#ff0000' })
      const blue = await makeImage('jpeg', { color: '#0000ff' })
      const up = await upload(alice, [{ name: 'a.png', data: red }])
      const img = up.json.images[0]
      const first = await s.get(`/svc-img/pub/${img.public_token}`)
      assert.ok(first.body.equals(red))
      const oldEtag = first.header('etag')!
      const form = imageForm([{ name: 'b.jpg', data: blue }])
      const r = await s.post(`/api/image-host/images/${img.public_token}/replace`, {
        cookie: alice.cookie,
        body: form.body,
        headers: { 'content-type': form.contentType },
      })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      assert.equal(r.json.image.public_token, img.public_token)
      assert.equal(r.json.image.public_url, img.public_url)
      assert.equal(r.json.image.content_type, 'image/jpeg')
      assert.equal(r.json.image.created_at, img.created_at)
      const next = await s.get(`/svc-img/pub/${img.public_token}`, { headers: { 'if-none-match': oldEtag } })
      assert.equal(next.status, 200)
      assert.equal(next.header('content-type'), 'image/jpeg')
      assert.ok(next.body.equals(blue))
      assert.notEqual(next.header('etag'), oldEtag)

      const missing = await s.post(`/api/image-host/images/${'Q'.repeat(22)}/replace`, {
        cookie: alice.cookie,
        body: form.body,
        headers: { 'content-type': form.contentType },
      })
      assert.equal(missing.status, 404)
      const bad = imageForm([{ name: 'x.png', data: '<html></html>' }])
      const refused = await s.post(`/api/image-host/images/${img.public_token}/replace`, {
        cookie: alice.cookie,
        body: bad.body,
        headers: { 'content-type': bad.contentType },
      })
      assert.equal(refused.status, 400)
      const two = imageForm([
        { name: 'a.png', data: red },
        { name: 'b.png', data: red },
      ])
      const tooMany = await s.post(`/api/image-host/images/${img.public_token}/replace`, {
        cookie: alice.cookie,
        body: two.body,
        headers: { 'content-type': two.contentType },
      })
      assert.equal(tooMany.status, 413)
      assert.ok((await s.get(`/svc-img/pub/${img.public_token}`)).body.equals(blue))
    })

    it("delete: 423 when locked (svc lock image), 200 after unlock, then 404 everywhere; another user's image 404", async () => {
      const up = await upload(alice, [{ name: 'keep.png', data: png }])
      const tok = up.json.images[0].public_token
      await svc(s, 'lock', 'image', tok)
      const list = await s.get('/api/image-host/images', { cookie: alice.cookie })
      assert.equal(list.json.images.find((i: any) => i.public_token === tok).locked, true)
      const locked = await s.request('DELETE', `/api/image-host/images/${tok}`, { cookie: alice.cookie })
      assert.equal(locked.status, 423)
      assert.deepEqual(Object.keys(locked.json).sort(), ['message', 'success'])
      assert.equal(locked.json.success, false)
      assert.equal((await s.get(`/svc-img/pub/${tok}`)).status, 200)
      // the same SQL the CLI runs, through deps.db
      await s.deps.db.k.updateTable('images').set({ locked: 0 }).where('public_token', '=', tok).execute()
      await svc(s, 'grant', bob.username, 'image-host')
      const other = await s.request('DELETE', `/api/image-host/images/${tok}`, { cookie: bob.cookie })
      assert.equal(other.status, 404)
      await svc(s, 'grant', bob.username, 'image-host', '--revoke')
      const r = await s.request('DELETE', `/api/image-host/images/${tok}`, { cookie: alice.cookie })
      assert.equal(r.status, 200)
      assert.deepEqual(r.json, { success: true })
      assert.equal((await s.get(`/svc-img/pub/${tok}`)).status, 404)
      const again = await s.request('DELETE', `/api/image-host/images/${tok}`, { cookie: alice.cookie })
      assert.equal(again.status, 404)
      assert.equal(again.json.success, false)
    })

    it('over-size uploads are refused with 413 and store nothing', async () => {
      const dave = await s.user()
      await svc(s, 'grant', dave.username, 'image-host')
      await svc(s, 'user', 'set', dave.username, '--limit', 'image_max_bytes=2000')
      const cookie = await s.login(dave.username, dave.password)
      const noisy = await sharp(crypto.randomBytes(64 * 64 * 3), { raw: { width: 64, height: 64, channels: 3 } })
        .png()
        .toBuffer()
      assert.ok(noisy.length > 2000)
      const blobsBefore = await blobDigests(s)
      const st = await s.get('/api/image-host/status', { cookie })
      assert.equal(st.json.quota.max_image_bytes, 2000)
      const acc: Account = { ...dave, cookie }
      const r = await upload(acc, [{ name: 'big.png', data: noisy }])
      assert.equal(r.status, 413, r.text)
      assert.equal(r.json.success, false)
      assert.match(r.json.message, /2000/)
      assert.equal(await rowCount(dave.id), 0)
      assert.deepEqual(await blobDigests(s), blobsBefore)
    })

    it('over-quota uploads (count and total bytes) are refused and store nothing', async () => {
      const erin = await s.user()
      await svc(s, 'grant', erin.username, 'image-host')
      await svc(s, 'user', 'set', erin.username, '--limit', 'images=2', '--limit', 'image_bytes=100000')
      const acc: Account = { ...erin, cookie: await s.login(erin.username, erin.password) }
      const ok = await upload(acc, [
        { name: '1.png', data: png },
        { name: '2.png', data: await makeImage('png', { color: '#010203' }) },
      ])
      assert.equal(ok.status, 200, ok.text)
      const blobsBefore = await blobDigests(s)
      const third = await makeImage('png', { color: '#040506' })
      const r = await upload(acc, [{ name: '3.png', data: third }])
      assert.equal(r.status, 400)
      assert.equal(r.json.success, false)
      assert.match(r.json.message, /2/)
      assert.equal(await rowCount(erin.id), 2)
      assert.deepEqual(await blobDigests(s), blobsBefore)

      await svc(s, 'user', 'set', erin.username, '--limit', 'images=default', '--limit', `image_bytes=${ok.json.images[0].size + ok.json.images[1].size + 10}`)
      const r2 = await upload(acc, [{ name: '3.png', data: third }])
      assert.equal(r2.status, 400)
      assert.equal(await rowCount(erin.id), 2)
      assert.deepEqual(await blobDigests(s), blobsBefore)
      // replace is held to the total too: a bigger image does not fit, an equal-size one does
      const bigger = await makeImage('png', { width: 64, height: 64, color: '#778899' })
      const form = imageForm([{ name: 'b.png', data: bigger }])
      const rep = await s.post(`/api/image-host/images/${ok.json.images[0].public_token}/replace`, {
        cookie: acc.cookie,
        body: form.body,
        headers: { 'content-type': form.contentType },
      })
      assert.equal(rep.status, 400)
      const st = await s.get('/api/image-host/status', { cookie: acc.cookie })
      assert.equal(st.json.quota.used_images, 2)
      assert.equal(st.json.quota.max_images, 500)
    })

    it('refuses images whose pixel data does not decode (damaged, truncated), keep_metadata or not, and stores nothing', async () => {
      const noise = (w: number, h: number) => sharp(crypto.randomBytes(w * h * 3), { raw: { width: w, height: h, channels: 3 } })
      const goodPng = await noise(48, 48).png().toBuffer()
      const goodJpeg = await noise(48, 48).jpeg().toBuffer()
      // headers intact (sharp's metadata reads them), pixel data broken
      const damagedPng = Buffer.from(goodPng)
      const idat = damagedPng.indexOf('IDAT')
      for (let i = idat + 16; i < idat + 200; i++) damagedPng[i] ^= 0x5a
      const truncatedJpeg = goodJpeg.subarray(0, Math.floor(goodJpeg.length / 2))
      for (const b of [damagedPng, truncatedJpeg]) assert.ok((await sharp(b).metadata()).width, 'fixture header reads')
      const acc = await freshAccount()
      const { json: kept } = await upload(acc, [{ name: 'ok.png', data: goodPng }])
      const token = kept.images[0].public_token
      const rowsBefore = await rowCount(acc.id)
      const blobsBefore = await blobDigests(s)
      for (const keep of ['false', 'true']) {
        for (const [name, data] of [
          ['damaged.png', damagedPng],
          ['truncated.jpg', truncatedJpeg],
        ] as const) {
          const r = await upload(acc, [{ name, data }], { keep_metadata: keep })
          expectError(r, 400, 'plain')
          assert.match(r.json.message, /damaged/, `${name} keep_metadata=${keep}`)
          const form = imageForm([{ name, data }], { keep_metadata: keep })
          const rep = await s.post(`/api/image-host/images/${token}/replace`, {
            cookie: acc.cookie,
            body: form.body,
            headers: { 'content-type': form.contentType, 'accept-language': 'en' },
          })
          expectError(rep, 400, 'plain')
        }
      }
      assert.equal(await rowCount(acc.id), rowsBefore)
      for (const d of await blobDigests(s)) if (!blobsBefore.has(d)) assert.fail(`new blob ${d} after refused uploads`)
      // the image kept its bytes, and every accepted image can be resized
      assert.ok((await s.get(`/svc-img/pub/${token}`)).body.equals(goodPng))
      const { json: ok } = await upload(acc, [{ name: 'ok.jpg', data: goodJpeg }], { keep_metadata: 'true' })
      for (const t of [token, ok.images[0].public_token]) assert.equal((await s.get(`/svc-img/pub/${t}?w=8`)).status, 200)
    })

    it('refuses a still image over the pixel limit naming its size, not as damaged, and stores nothing', async () => {
      const acc = await freshAccount()
      // a few hundred bytes whose header declares 50000x50000 pixels (a decompression bomb,
      // or a camera's panorama): refused from the header, before any pixel is decoded
      const small = await makeImage('jpeg', { width: 16, height: 16 })
      const bomb = Buffer.from(small)
      const sof = bomb.indexOf(Buffer.from([0xff, 0xc0]))
      bomb.writeUInt16BE(50000, sof + 5)
      bomb.writeUInt16BE(50000, sof + 7)
      const rowsBefore = await rowCount(acc.id)
      const blobsBefore = await blobDigests(s)
      for (const keep of ['false', 'true']) {
        const r = await upload(acc, [{ name: 'pano.jpg', data: bomb }], { keep_metadata: keep })
        expectError(r, 400, 'plain')
        assert.match(r.json.message, /image\/jpeg of 50000x50000 pixels \(too many\)/, `keep_metadata=${keep}`)
      }
      assert.equal(await rowCount(acc.id), rowsBefore)
      for (const d of await blobDigests(s)) if (!blobsBefore.has(d)) assert.fail(`new blob ${d} after refused uploads`)
    })

    it('counts every frame of an animation against the pixel limit, so every accepted animation resizes', async () => {
      const acc = await freshAccount()
      const frames = (side: number) =>
        Promise.all(
          ['#f00', '#0f0', '#00f'].map((c) =>
            sharp({ create: { width: side, height: side, channels: 3, background: c } })
              .png()
              .toBuffer(),
          ),
        )
      // three 4x4 frames on a 4500x4500 canvas: each frame decodes to the canvas, 60.75 million
      // pixels in all, in a file of a few hundred bytes
      const long = Buffer.from(
        await sharp(await frames(4), { join: { animated: true } })
          .webp()
          .toBuffer(),
      )
      const vp8x = long.indexOf('VP8X')
      long.writeUIntLE(4500 - 1, vp8x + 12, 3)
      long.writeUIntLE(4500 - 1, vp8x + 15, 3)
      const meta = await sharp(long).metadata()
      assert.deepEqual([meta.width, meta.height, meta.pages], [4500, 4500, 3], 'fixture')
      const rowsBefore = await rowCount(acc.id)
      for (const keep of ['false', 'true']) {
        const r = await upload(acc, [{ name: 'long.webp', data: long }], { keep_metadata: keep })
        expectError(r, 400, 'plain')
        assert.match(r.json.message, /4500x4500 pixels x 3 frames \(too many\)/)
      }
      assert.equal(await rowCount(acc.id), rowsBefore)
      // within the limit: accepted, and its animated variant is made
      const ok = await upload(acc, [
        {
          name: 'ok.gif',
          data: await sharp(await frames(64), { join: { animated: true } })
            .gif()
            .toBuffer(),
        },
      ])
      assert.equal(ok.status, 200, ok.text)
      const v = await s.get(`/svc-img/pub/${ok.json.images[0].public_token}?w=16`)
      assert.equal(v.status, 200)
      assert.equal((await sharp(v.body).metadata()).pages, 3)
    })

    describe('refusals are wholly Chinese by default and English on request', () => {
      const form = (files: Array<{ name: string; data: Buffer | string; type?: string }>) => imageForm(files)
      const post = (who: Account, url: string, f: { body: Buffer; contentType: string }) => (lang: Record<string, string>) =>
        s.post(url, { cookie: who.cookie, body: f.body, headers: { 'content-type': f.contentType, ...lang } })
      const up = (who: Account, f: { body: Buffer; contentType: string }) => post(who, '/api/image-host/upload', f)
      const limited = async (...limits: string[]) => {
        const acc = await freshAccount()
        await svc(s, 'user', 'set', acc.username, ...limits.flatMap((l) => ['--limit', l]))
        return acc
      }
      const stored = async (who: Account, data: Buffer | string, name = 'a.png') => {
        const r = await upload(who, [{ name, data }])
        assert.equal(r.status, 200, r.text)
        return r.json.images[0] as { public_token: string; size: number }
      }

      it('a file in a field of another name', async () => {
        await expectErrorInBoth(
          up(await freshAccount(), multipartWith('image', png)),
          400,
          'plain',
          '参数错误：不接受文件字段 "image"，图片请放在字段 "file" 中',
          'Invalid parameter: unexpected file field "image"; send images in the field "file"',
        )
      })

      it('more files than one upload takes', async () => {
        const files = Array.from({ length: 21 }, (_, i) => ({ name: `${i}.png`, data: png }))
        await expectErrorInBoth(
          up(await freshAccount(), form(files)),
          413,
          'plain',
          '单次请求的文件或字段过多：每次上传最多 20 个文件',
          'Too many files or fields in one request: at most 20 files per upload',
          true,
        )
      })

      it('a replace with two files', async () => {
        const acc = await freshAccount()
        const img = await stored(acc, png)
        await expectErrorInBoth(
          post(
            acc,
            `/api/image-host/images/${img.public_token}/replace`,
            form([
              { name: 'a.png', data: png },
              { name: 'b.png', data: png },
            ]),
          ),
          413,
          'plain',
          '单次请求的文件或字段过多：替换只接受一个文件',
          'Too many files or fields in one request: replace takes exactly one file',
          true,
        )
      })

      it('the image count quota', async () => {
        const acc = await limited('images=1')
        await stored(acc, png)
        await expectErrorInBoth(
          up(acc, form([{ name: 'b.png', data: png }])),
          400,
          'plain',
          '配额已满：图片数量已达上限（已有 1 张，上限 1 张）',
          'Quota exceeded: image count limit reached (1 of 1 images)',
          true,
        )
      })

      it('the total size quota', async () => {
        const { size } = await stored(await freshAccount(), png)
        await expectErrorInBoth(
          up(await limited('image_bytes=1'), form([{ name: 'a.png', data: png }])),
          400,
          'plain',
          `配额已满：图片总大小超过上限 1 字节（已用 0 字节，本次 ${size} 字节）`,
          `Quota exceeded: total image size limit of 1 byte reached (0 bytes used, ${size} bytes more)`,
          true,
        )
      })

      it('bytes that are HTML, damaged, too many pixels, or an iPhone HEIC photo', async () => {
        const acc = await freshAccount()
        const damaged = Buffer.from(
          await sharp(crypto.randomBytes(48 * 48 * 3), { raw: { width: 48, height: 48, channels: 3 } })
            .png()
            .toBuffer(),
        )
        const idat = damaged.indexOf('IDAT')
        for (let i = idat + 16; i < idat + 200; i++) damaged[i] ^= 0x5a
        const bomb = Buffer.from(await makeImage('jpeg', { width: 16, height: 16 }))
        const sof = bomb.indexOf(Buffer.from([0xff, 0xc0]))
        bomb.writeUInt16BE(50000, sof + 5)
        bomb.writeUInt16BE(50000, sof + 7)
        const cases: Array<[Buffer | string, string, string]> = [
          ['<html><body>hi</body></html>', 'text/html 或 XML', 'text/html or XML'],
          [damaged, '已损坏或无法读取的 image/png', 'damaged or unreadable image/png'],
          [bomb, 'image/jpeg，50000x50000 像素（像素过多）', 'image/jpeg of 50000x50000 pixels (too many)'],
          // an iPhone photo (HEVC-coded HEIF, which the image library cannot decode): the fix is named
          [
            Buffer.concat([Buffer.from('0000001866747970686569630000000068656963', 'hex'), Buffer.from('6d696631', 'hex'), crypto.randomBytes(64)]),
            'image/heic（iPhone 照片格式：请导出为 JPEG 再上传）',
            'image/heic (the iPhone photo format: export it as JPEG and upload that)',
          ],
        ]
        for (const [data, zh, en] of cases) {
          await expectErrorInBoth(up(acc, form([{ name: 'x.png', data }])), 400, 'plain', `不支持的文件类型：${zh}`, `Unsupported file type: ${en}`)
        }
      })
    })
  })
}

function multipartWith(field: string, data: Buffer) {
  const f = imageForm([])
  const boundary = f.contentType.split('boundary=')[1]
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  return { body, contentType: f.contentType }
}
