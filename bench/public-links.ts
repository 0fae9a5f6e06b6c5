/**
 * Every kind of public link against a hosted page of the same size, in the same run (issue 21:
 * "image variants and hosted-data links at the same ratio as pages of the same size").
 *
 *   node --import tsx bench/public-links.ts
 *   ROUNDS=3 SECS=5 CONNS=64 SIZES=2048,51200 node --import tsx bench/public-links.ts
 *
 * One server (SQLite) in this process; wrk reaches it over a plain-HTTP listener on the same
 * request handler, as bench/hosting-server.mjs does and as a TLS-terminating proxy would. One
 * user with both entitlements. For each size in SIZES (bytes): a noise PNG near that size, its
 * variant (?w= half its width), a hosted-data file of the image's exact size, a page of that
 * size and a page of the variant's size. Then ROUNDS rounds of wrk (-t2 -cCONNS, SECS seconds
 * per URL, each URL warmed first), the URLs in a rotated order each round; prints req/s and
 * p99 per URL and round, and each link's ratio to the page of its size in the same round.
 * Needs wrk; loopback only, on a free port. The KV public read is an API path and needs HTTPS:
 * bench/kv-public.sh measures it.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import crypto from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import sharp from 'sharp'
import { multipart, startServer } from '../test/support/server.js'
import { imageForm, svc } from '../test/support/images.js'

const ROUNDS = Number(process.env.ROUNDS ?? 3)
const SECS = Number(process.env.SECS ?? 5)
const CONNS = Number(process.env.CONNS ?? 64)
const SIZES = (process.env.SIZES ?? '2048,51200').split(',').map(Number)

/** A PNG of random pixels (it does not compress) whose size is near `bytes`. */
async function noisePng(bytes: number): Promise<Buffer> {
  const side = Math.max(4, Math.round(Math.sqrt(bytes / 3)))
  return sharp(crypto.randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toBuffer()
}

/** Text of exactly `bytes` bytes that compresses like a page (the page's own bytes). */
const pageOf = (bytes: number, tag: string) => `<!doctype html><title>${tag}</title><p>${crypto.randomBytes(bytes).toString('base64')}`.slice(0, bytes)

/** wrk against url for secs -> [req/s, p99 ms, non-2xx]; asynchronous: the server runs in this process. */
async function wrk(url: string, secs: number): Promise<[number, number, number]> {
  const r = await promisify(execFile)('wrk', ['-t2', `-c${CONNS}`, `-d${secs}s`, '--latency', url], { encoding: 'utf8' })
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1] ?? NaN)
  const m = /^\s+99%\s+([\d.]+)(us|ms|s)\s*$/m.exec(r.stdout)
  const p99 = m ? Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1) : NaN
  const bad = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(r.stdout)?.[1] ?? 0)
  return [rps, p99, bad]
}

const s = await startServer({
  engine: 'sqlite',
  env: {
    LOG_LEVEL: 'warn',
    RATE_LIMITS: JSON.stringify(Object.fromEntries(['default', 'authenticated', 'vip'].map((t) => [t, { minute: 1e9, hour: 1e9, day: 1e9, concurrent: 1e5 }]))),
  },
})
try {
  const u = await s.user()
  await svc(s, 'grant', u.username, 'image-host')
  await svc(s, 'grant', u.username, 'hosted-data')
  const cookie = await s.login(u.username, u.password)
  const page = async (name: string, bytes: number) => {
    const body = pageOf(bytes, name)
    const f = multipart([{ name: 'file', filename: name, type: 'text/html', data: body }])
    const r = await s.post('/svc_api/upload', { key: u.key, body: f.body, headers: { 'content-type': f.contentType } })
    if (r.status !== 200) throw new Error(`upload ${name}: ${r.status} ${r.text}`)
    return `/${u.username}/${name}`
  }
  // label -> [path, bytes, the page it is compared with]
  const links: Array<{ label: string; path: string; bytes: number; page: string }> = []
  for (const size of SIZES) {
    const png = await noisePng(size)
    const form = imageForm([{ name: `n${size}.png`, data: png }])
    const up = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
    if (up.status !== 200) throw new Error(`image upload: ${up.status} ${up.text}`)
    const img = up.json.images[0] as { public_url: string; size: number; width: number }
    const imgPath = new URL(img.public_url).pathname
    const samePage = await page(`p${img.size}.html`, img.size)
    links.push({ label: `page ${img.size} B`, path: samePage, bytes: img.size, page: samePage })
    links.push({ label: `image original ${img.size} B`, path: imgPath, bytes: img.size, page: samePage })
    const variantPath = `${imgPath}?w=${Math.max(1, Math.floor(img.width / 2))}`
    const v = await s.get(variantPath, {})
    if (v.status !== 200) throw new Error(`variant: ${v.status} ${v.text}`)
    const variantPage = await page(`p${v.body.length}.html`, v.body.length)
    links.push({ label: `page ${v.body.length} B`, path: variantPage, bytes: v.body.length, page: variantPage })
    links.push({ label: `image variant ${v.body.length} B`, path: variantPath, bytes: v.body.length, page: variantPage })
    const hd = await s.post('/api/hosted-data/files', { cookie, json: { display_name: `d${size}.txt`, content: pageOf(img.size, 'd') } })
    if (hd.status !== 200) throw new Error(`hosted data: ${hd.status} ${hd.text}`)
    const hdPath = new URL(hd.json.file.public_url).pathname
    links.push({ label: `hosted data ${img.size} B`, path: hdPath, bytes: img.size, page: samePage })
  }
  const plain = http.createServer(s.app.server.listeners('request')[0] as http.RequestListener)
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`
  for (const l of links) {
    const r = await s.get(l.path, {})
    if (r.status !== 200) throw new Error(`${l.label} ${l.path}: ${r.status} ${r.text.slice(0, 200)}`)
    await wrk(base + l.path, 1)
  }
  console.log(`wrk -t2 -c${CONNS}, ${SECS} s per URL, ${ROUNDS} rounds; ${base}`)
  const results = new Map<string, number[]>()
  for (let round = 1; round <= ROUNDS; round++) {
    const order = links.map((_, i) => links[(i + round - 1) % links.length])
    const rps = new Map<string, number>()
    for (const l of order) {
      const [r, p99, bad] = await wrk(base + l.path, SECS)
      rps.set(l.path, r)
      console.log(`round ${round}  ${l.label.padEnd(26)} ${r.toFixed(0).padStart(7)} req/s  p99 ${p99.toFixed(2)} ms${bad ? `  non-2xx ${bad}` : ''}`)
    }
    for (const l of links) {
      if (l.path === l.page) continue
      const ratio = rps.get(l.path)! / rps.get(l.page)!
      results.set(l.label, [...(results.get(l.label) ?? []), ratio])
    }
  }
  console.log('\nratio to a page of the same size, per round:')
  for (const [label, ratios] of results) console.log(`  ${label.padEnd(26)} ${ratios.map((r) => r.toFixed(2)).join('  ')}`)
  plain.closeAllConnections()
  plain.close()
} finally {
  await s.close()
}
