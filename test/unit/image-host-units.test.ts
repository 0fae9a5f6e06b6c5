import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import sharp from 'sharp'
import { stripGif, stripJpeg, stripPng, stripWebp } from '../../src/features/image-host/strip.js'
import { CLIENT_WAITING, createVariants, parseVariantParams } from '../../src/features/image-host/variants.js'
import { looksLikeSvg, prepareImage } from '../../src/features/image-host/inspect.js'
import { AppError } from '../../src/errors/app-error.js'
import { jpegWithMetadata, makeImage } from '../support/images.js'

describe('image host units', () => {
  it('the container strippers never throw on arbitrary or truncated input', async () => {
    const samples = [await jpegWithMetadata(), await makeImage('png'), await makeImage('gif'), await makeImage('webp')]
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), fc.nat(3), (bytes, cut, which) => {
        const b = Buffer.from(bytes)
        for (const f of [stripJpeg, stripPng, stripWebp, stripGif]) f(b)
        const s = samples[which]
        const t = s.subarray(0, cut % (s.length + 1))
        for (const f of [stripJpeg, stripPng, stripWebp, stripGif]) f(t)
      }),
      { numRuns: 300 },
    )
  })

  it('strips a GIF comment and XMP application block but keeps the looping block', async () => {
    const gif = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#00f' } })
      .gif({ loop: 0 })
      .toBuffer()
    // insert a comment extension and an XMP application extension after the header + colour table
    const packed = gif[10]
    const at = 13 + (packed & 0x80 ? 3 * (1 << ((packed & 7) + 1)) : 0)
    const comment = Buffer.concat([Buffer.from([0x21, 0xfe, 13]), Buffer.from('SECRETGIFNOTE'), Buffer.from([0])])
    const xmp = Buffer.concat([Buffer.from([0x21, 0xff, 11]), Buffer.from('XMP DataXMP'), Buffer.from([9]), Buffer.from('SECRETXMP'), Buffer.from([0])])
    const dirty = Buffer.concat([gif.subarray(0, at), comment, xmp, gif.subarray(at)])
    const clean = stripGif(dirty)!
    assert.ok(clean)
    assert.ok(!clean.includes('SECRETGIFNOTE') && !clean.includes('SECRETXMP'))
    assert.equal(clean.includes('NETSCAPE2.0'), gif.includes('NETSCAPE2.0'))
    assert.ok(clean.equals(gif))
    const p = await prepareImage(dirty, false)
    assert.ok(p.bytes.equals(gif))
  })

  it('re-encodes an AVIF that carries EXIF (no lossless path for its container)', async () => {
    const avif = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#0f0' } })
      .avif({ effort: 0 })
      .withExif({ IFD0: { Copyright: 'SECRETAVIF' } })
      .toBuffer()
    assert.ok((await sharp(avif).metadata()).exif)
    const p = await prepareImage(avif, false)
    assert.equal(p.contentType, 'image/avif')
    const m = await sharp(p.bytes).metadata()
    assert.equal(m.exif, undefined)
    assert.equal(m.format, 'heif')
    assert.ok(!p.bytes.includes('SECRETAVIF'))
    const clean = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#0f0' } })
      .avif({ effort: 0 })
      .toBuffer()
    assert.ok((await prepareImage(clean, false)).bytes.equals(clean))
  })

  it('recognises SVG documents and nothing else as SVG', () => {
    for (const yes of [
      '<svg xmlns="http://www.w3.org/2000/svg"/>',
      '\uFEFF<?xml version="1.0"?>\n<!-- c -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x">\n<svg>',
    ]) {
      assert.ok(looksLikeSvg(Buffer.from(yes)), yes)
    }
    for (const no of ['<html><svg></svg></html>', '<!DOCTYPE svg [<!ENTITY a "b">]><svg>', 'svg', '<svgfoo>', '<svg\u0000>']) {
      assert.ok(!looksLikeSvg(Buffer.from(no)), no)
    }
    assert.ok(!looksLikeSvg(Buffer.from([0x3c, 0x73, 0x76, 0x67, 0x20, 0xff, 0xfe])))
  })

  it('parses variant parameters strictly', () => {
    assert.equal(parseVariantParams({}), null)
    assert.equal(parseVariantParams({ v: 'abc' }), null)
    assert.deepEqual(parseVariantParams({ w: '10', format: 'JPG' }), { w: 10, h: null, format: 'jpeg' })
    for (const q of [{ w: '0' }, { h: '4097' }, { w: '1e3' }, { w: ['1', 'x'] }, { format: 'tiff' }, { w: '00000001000' }]) {
      assert.throws(() => parseVariantParams(q), AppError, JSON.stringify(q))
    }
  })

  it('keeps the variants the hot path reads (peek) when the cache is full', async () => {
    const png = await sharp(crypto.randomBytes(64 * 64 * 3), { raw: { width: 64, height: 64, channels: 3 } })
      .png()
      .toBuffer()
    const load = async () => png
    const p = (w: number) => ({ w, h: null, format: null })
    // noise: a narrower variant is smaller; the budget holds eight of the widest one
    const size = (await createVariants().get('d', 'image/png', p(40), load)).bytes.length
    const v = createVariants({ cacheBytes: size * 8 })
    await v.get('d', 'image/png', p(40), load)
    for (let w = 39; w >= 16; w--) {
      assert.ok(v.peek('d', p(40)), `the variant read through peek was evicted (w=${w})`)
      await v.get('d', 'image/png', p(w), load)
    }
    assert.ok(v.peek('d', p(40)))
    assert.equal(v.peek('d', p(39)), undefined, 'a variant not read again went')
  })

  it('runs at most `concurrency` transformations at once and refuses past the queue', async () => {
    const png = await makeImage('png', { width: 32, height: 32 })
    const v = createVariants({ concurrency: 1, maxQueue: 1 })
    let loading = 0
    let maxLoading = 0
    const gates: Array<() => void> = []
    const load = () =>
      new Promise<Buffer>((resolve) => {
        loading++
        maxLoading = Math.max(maxLoading, loading)
        gates.push(() => {
          loading--
          resolve(png)
        })
      })
    const a = v.get('d1', 'image/png', { w: 8, h: null, format: null }, load)
    const b = v.get('d1', 'image/png', { w: 9, h: null, format: null }, load)
    const c = v.get('d1', 'image/png', { w: 10, h: null, format: null }, load)
    await assert.rejects(c, (e: unknown) => e instanceof AppError && e.status === 503)
    await new Promise((r) => setImmediate(r))
    assert.equal(gates.length, 1)
    gates.shift()!()
    assert.equal((await sharp((await a).bytes).metadata()).width, 8)
    while ((gates.length as number) === 0) await new Promise((r) => setImmediate(r))
    gates.shift()!()
    assert.equal((await sharp((await b).bytes).metadata()).width, 9)
    assert.equal(maxLoading, 1)
    // cached now: no load at all
    const again = await v.get('d1', 'image/png', { w: 8, h: null, format: null }, () => assert.fail('loaded again'))
    assert.equal((await sharp(again.bytes).metadata()).width, 8)
    assert.equal(v.stats.hits, 1)
  })
})

describe('image variants per client', () => {
  it("runs one client's transformations one at a time, admits only new ones, and refuses past its queue", async () => {
    const png = await makeImage('png', { width: 32, height: 32 })
    const v = createVariants({ concurrency: 2, maxQueue: 64 })
    const gates: Array<{ who: string; open: () => void }> = []
    const load = (who: string) => () => new Promise<Buffer>((resolve) => gates.push({ who, open: () => resolve(png) }))
    const admitted: string[] = []
    const client = (key: string) => ({ key, admit: async () => void admitted.push(key) })
    const p = (w: number) => ({ w, h: null, format: null })
    const settle = async () => {
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r))
    }
    // the attacker asks for 1 + CLIENT_WAITING new sizes at once, and one more
    const mine = Array.from({ length: CLIENT_WAITING + 1 }, (_, i) => v.get('d', 'image/png', p(10 + i), load('a'), client('a')))
    await settle()
    await assert.rejects(v.get('d', 'image/png', p(30), load('a'), client('a')), (e: unknown) => e instanceof AppError && e.status === 429)
    // another address is not queued behind it: its transformation starts at once
    const theirs = v.get('d', 'image/png', p(20), load('b'), client('b'))
    await settle()
    assert.deepEqual(
      gates.map((g) => g.who),
      ['a', 'b'],
      'one transformation of a, and b beside it',
    )
    // a request for a's running variant shares it: no admission, no place in the queue
    const shared = v.get('d', 'image/png', p(10), load('c'), client('c'))
    assert.deepEqual(admitted.sort(), [...Array(CLIENT_WAITING + 1).fill('a'), 'b'].sort())
    let done = false
    const all = Promise.all([...mine, theirs, shared]).finally(() => (done = true))
    while (!done) {
      assert.ok(gates.filter((g) => g.who === 'a').length <= 1, 'two of one client at once')
      gates.shift()?.open()
      await new Promise((r) => setTimeout(r, 5))
    }
    for (const r of await all) assert.equal(r.contentType, 'image/png')
    // a refused admission starts nothing
    const before = v.stats.made
    const refuse = { key: 'a', admit: () => Promise.reject(new AppError('RATE_LIMIT_MINUTE', { params: { limit: 1, retry_after: 1 } })) }
    await assert.rejects(
      v.get('d', 'image/png', p(31), () => assert.fail('loaded'), refuse),
      AppError,
    )
    assert.equal(v.stats.made, before)
  })
})
