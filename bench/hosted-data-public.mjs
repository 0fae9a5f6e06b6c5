// Load on a hosted data public link (cached hot path) and on the uncached lookup.
// Usage: node --import tsx bench/hosted-data-public.mjs [seconds=5] [concurrency=16]
// Listens on 127.0.0.1:19400/19401 (SQLite in a temp dir); prints requests/s and latency.
import { Agent, request } from 'undici'
import { startServer } from '../test/support/server.ts'

const seconds = Number(process.argv[2] ?? 5)
const conc = Number(process.argv[3] ?? 16)
const s = await startServer({
  engine: 'sqlite',
  env: { PORT: '19400', HTTP_PORT: '19401', RATE_LIMITS: JSON.stringify({ authenticated: { minute: 1e6, hour: 1e6, day: 1e6 } }) },
})
try {
  const u = await s.user()
  const cookie = await s.login(u.username, u.password)
  await s.deps.db.k.insertInto('entitlements').values({ user_id: u.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() }).execute()
  const body = JSON.stringify({ rows: Array.from({ length: 200 }, (_, i) => ({ i, name: `row ${i}` })) })
  const r = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'bench.json', content: body } })
  const path = new URL(r.json.file.public_url).pathname
  const agent = new Agent({ connect: { rejectUnauthorized: false }, connections: conc, pipelining: 1 })
  for (const [label, headers] of [
    ['200 (full body)', {}],
    ['304 (If-None-Match)', { 'if-none-match': (await s.get(path)).header('etag') }],
  ]) {
    const lat = []
    let n = 0
    const end = Date.now() + seconds * 1000
    await Promise.all(
      Array.from({ length: conc }, async () => {
        while (Date.now() < end) {
          const t = process.hrtime.bigint()
          const res = await request(s.url + path, { dispatcher: agent, headers })
          await res.body.arrayBuffer()
          lat.push(Number(process.hrtime.bigint() - t) / 1e6)
          n++
        }
      }),
    )
    lat.sort((a, b) => a - b)
    console.log(
      `${label}: ${(n / seconds).toFixed(0)} req/s, p50 ${lat[Math.floor(lat.length * 0.5)].toFixed(2)} ms, p99 ${lat[Math.floor(lat.length * 0.99)].toFixed(2)} ms (${body.length} bytes, concurrency ${conc})`,
    )
  }
  await agent.close()
} finally {
  await s.close()
}
