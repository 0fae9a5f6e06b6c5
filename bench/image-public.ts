/**
 * Public image link throughput on one process (SQLite, loopback HTTPS, keep-alive):
 * originals (token lookup cached in memory, blob streamed from disk) and a cached variant.
 * Run: node --import tsx bench/image-public.ts  (PORT 19300, loopback only)
 */
import { Agent, request } from 'undici'
import { startServer } from '../test/support/server.js'
import { imageForm, makeImage, svc } from '../test/support/images.js'

const DURATION_MS = Number(process.env.BENCH_MS ?? 3000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16)

async function run(url: string, label: string, headers: Record<string, string> = {}) {
  const agent = new Agent({ connect: { rejectUnauthorized: false }, connections: CONNECTIONS, pipelining: 1 })
  let done = 0
  let bad = 0
  const lat: number[] = []
  const end = Date.now() + DURATION_MS
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < end) {
        const t = performance.now()
        const r = await request(url, { dispatcher: agent, headers })
        await r.body.arrayBuffer()
        lat.push(performance.now() - t)
        if (r.statusCode >= 400) bad++
        done++
      }
    }),
  )
  await agent.close()
  lat.sort((a, b) => a - b)
  const p = (q: number) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))].toFixed(2)
  console.log(`${label}: ${Math.round(done / (DURATION_MS / 1000))} req/s, p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, errors ${bad}`)
}

const s = await startServer({ engine: 'sqlite', env: { PORT: '19300', HTTP_PORT: '19301' } })
try {
  const u = await s.user()
  await svc(s, 'grant', u.username, 'image-host')
  const cookie = await s.login(u.username, u.password)
  const img = await makeImage('jpeg', { width: 800, height: 600 })
  const form = imageForm([{ name: 'a.jpg', data: img }])
  const up = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
  const { public_url: link, size } = up.json.images[0]
  console.log(`image ${size} bytes, ${CONNECTIONS} connections, ${DURATION_MS} ms each`)
  await run(`${s.url}/healthz`, 'baseline /healthz')
  await run(link, 'original 200')
  const etag = (await s.get(link.slice(s.url.length))).header('etag')!
  await run(link, 'original 304', { 'if-none-match': etag })
  await run(`${link}?w=200&format=webp`, 'variant (cached) 200')
} finally {
  await s.close()
}
