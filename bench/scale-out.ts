/**
 * Scale-out benchmark (not a test). Measures, on this machine:
 *   1. blob store get() latency of a 50 KB blob: disk driver vs S3 driver (s3rver), in process;
 *   2. a 50 KB hosted page through the public host, one connection: disk vs S3 latency;
 *   3. hosted-page requests per second: one instance direct, one behind nginx, two behind
 *      nginx (upstream on loopback), over PostgreSQL + Redis + S3 (and shared-disk storage).
 *
 *   node --import tsx bench/scale-out.ts [--seconds 10] [--connections 32] [--skip-pages]
 *     [--nginx-workers 1|2|auto] [--storage both|s3|disk]
 *
 * Needs PostgreSQL and Redis as for the tests, and Debian's `wrk` and `nginx`
 * (apt-get install wrk nginx). Uses only loopback ports 19600-19699. Stops everything it
 * starts. Figures go to stdout (and bench/results/ as JSON); they are noisy on a shared machine.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { parseArgs } from 'node:util'
import { request } from 'undici'
import pg from 'pg'
import { Redis } from 'ioredis'
import { createLocalBlobStore } from '../src/storage/local.js'
import { createS3BlobStore } from '../src/storage/s3.js'
import type { BlobStore } from '../src/storage/blob-store.js'

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    'skip-pages': { type: 'boolean', default: false },
    'nginx-workers': { type: 'string', default: '1' },
    storage: { type: 'string', default: 'both' },
  },
})
const SECONDS = Number(args.seconds)
const CONNECTIONS = Number(args.connections)
const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const PORTS = { nginx: 19600, a: 19601, b: 19602, s3: 19690 }
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const bin = path.join(root, 'bin', 'svc')
const runId = crypto.randomBytes(4).toString('hex')
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'))
const children: ChildProcess[] = []
const schemas: string[] = []
const results: Record<string, unknown> = {
  started: new Date().toISOString(),
  cpus: os.cpus().length,
  seconds: SECONDS,
  connections: CONNECTIONS,
  nginxWorkers: args['nginx-workers'],
}

const log = (s: string) => process.stdout.write(`${s}\n`)
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const PAGE = Buffer.from(
  `<!doctype html><html><head><meta charset="utf-8"><title>bench</title></head><body>\n${Array.from(
    { length: 1400 },
    (_, i) => `<p>line ${String(i).padStart(4, '0')} ${crypto.createHash('sha256').update(String(i)).digest('hex').slice(0, 24)}</p>`,
  ).join('\n')}\n</body></html>\n`,
).subarray(0, 50 * 1024)

function quantiles(ms: number[]) {
  const s = [...ms].sort((x, y) => x - y)
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]
  return {
    n: s.length,
    mean: +(s.reduce((a, b) => a + b, 0) / s.length).toFixed(3),
    p50: +q(0.5).toFixed(3),
    p95: +q(0.95).toFixed(3),
    p99: +q(0.99).toFixed(3),
  }
}

async function blobLatency(store: BlobStore, rounds: number) {
  const { digest } = await store.put(PAGE)
  for (let i = 0; i < 20; i++)
    for await (const _ of await store.get(digest)) {
      /* warm up */
    }
  const ms: number[] = []
  for (let i = 0; i < rounds; i++) {
    const t0 = process.hrtime.bigint()
    let n = 0
    for await (const c of await store.get(digest)) n += (c as Buffer).length
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6)
    if (n !== PAGE.length) throw new Error('short read')
  }
  return quantiles(ms)
}

function svc(args: string[], env: Record<string, string>): string {
  const r = spawnSync(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 })
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')}: ${r.stderr}`)
  return r.stdout.trim()
}

function startInstance(port: number, env: Record<string, string>, name: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const logFile = fs.openSync(path.join(work, `${name}.log`), 'a')
    const child = spawn(process.execPath, [bin, 'serve'], {
      env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', logFile],
    })
    children.push(child)
    let buf = ''
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${buf}`)), 60_000)
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString()
      if (buf.includes('svc listening on')) {
        clearTimeout(timer)
        resolve(child)
      }
    })
    child.on('exit', (code) => reject(new Error(`${name} exited ${code}: ${buf}`)))
  })
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const done = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  await Promise.race([done, new Promise((r) => setTimeout(r, 10_000))])
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}

function startNginx(upstreams: number[]): Promise<ChildProcess> {
  const dir = fs.mkdtempSync(path.join(work, 'nginx-'))
  fs.chmodSync(dir, 0o777)
  const conf = `worker_processes ${args['nginx-workers']};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream svc {
${upstreams.map((p) => `    server 127.0.0.1:${p};`).join('\n')}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${PORTS.nginx};
    location / {
      proxy_pass http://svc;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $remote_addr;  # replace, never append: the first hop is the client
      proxy_set_header X-Forwarded-Proto https;  # stands for the TLS listener of a real deployment
      proxy_set_header X-Forwarded-Host $host;
      proxy_buffer_size 16k;
      proxy_buffers 16 16k;
    }
  }
}
`
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf)
  return new Promise((resolve, reject) => {
    const child = spawn('nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] })
    children.push(child)
    let err = ''
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString()
    })
    child.on('exit', (code) => reject(new Error(`nginx exited ${code}: ${err}`)))
    // ready when it answers
    const poll = async (left: number): Promise<void> => {
      try {
        const r = await request(`http://127.0.0.1:${PORTS.nginx}/healthz`)
        await r.body.dump()
        resolve(child)
      } catch {
        if (left <= 0) return reject(new Error(`nginx did not start: ${err}`))
        setTimeout(() => void poll(left - 1), 100)
      }
    }
    void poll(100)
  })
}

interface WrkResult {
  rps: number
  latencyAvgMs: number
  p50Ms: number
  p99Ms: number
  non2xx: number
  errors: string | null
  load: string
}
const toMs = (v: string) => {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim())
  if (!m) return NaN
  return Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000, m: 60000 } as Record<string, number>)[m[2]]
}
function wrk(url: string, threads: number, conns: number, seconds: number): WrkResult {
  const before = load()
  const r = spawnSync('wrk', ['-t', String(threads), '-c', String(conns), '-d', `${seconds}s`, '--latency', '-H', 'X-Forwarded-Proto: https', url], {
    encoding: 'utf8',
    timeout: (seconds + 30) * 1000,
  })
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`)
  const out = r.stdout
  const num = (re: RegExp) => re.exec(out)?.[1] ?? ''
  return {
    rps: Number(num(/Requests\/sec:\s+([\d.]+)/)),
    latencyAvgMs: toMs(num(/Latency\s+(\S+)/)),
    p50Ms: toMs(num(/50%\s+(\S+)/)),
    p99Ms: toMs(num(/99%\s+(\S+)/)),
    non2xx: Number(num(/Non-2xx or 3xx responses:\s+(\d+)/) || 0),
    errors: /Socket errors: (.*)/.exec(out)?.[1] ?? null,
    load: before,
  }
}

async function setupSite(baseEnv: Record<string, string>, url: string): Promise<{ pagePath: string; key: string; username: string } | null> {
  const username = `bench${runId}`
  svc(['user', 'add', username, '--password', `bench-password-${runId}`, '--vip'], baseEnv)
  const key = svc(['key', 'create', username], baseEnv)
  const boundary = `----bench${runId}`
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="page.html"\r\nContent-Type: text/html\r\n\r\n`),
    PAGE,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  const up = await request(`${url}/svc_api/upload`, {
    method: 'POST',
    body,
    headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-forwarded-proto': 'https' },
  })
  const text = await up.body.text()
  if (up.statusCode !== 200) {
    log(`  upload answered ${up.statusCode}: ${text.slice(0, 200)}`)
    return null
  }
  const pagePath = `/${username}/page.html`
  const get = await request(`${url}${pagePath}`, { headers: { 'x-forwarded-proto': 'https' } })
  const got = Buffer.from(await get.body.arrayBuffer())
  if (get.statusCode !== 200 || !got.equals(PAGE)) {
    log(`  GET ${pagePath} answered ${get.statusCode} (${got.length} bytes)`)
    return null
  }
  return { pagePath, key, username }
}

async function uploadPage(url: string, key: string, name: string, content: Buffer) {
  const boundary = `----bench${crypto.randomBytes(6).toString('hex')}`
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: text/html\r\n\r\n`),
    content,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  const r = await request(`${url}/svc_api/upload`, {
    method: 'POST',
    body,
    headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-forwarded-proto': 'https' },
  })
  const text = await r.body.text()
  if (r.statusCode !== 200) throw new Error(`upload ${name}: ${r.statusCode} ${text}`)
}

/** First request of pages nobody asked for yet: database lookup + blob read from the store (no cache). */
async function coldLatency(url: string, key: string, username: string, n: number) {
  const names: string[] = []
  for (let i = 0; i < n; i++) {
    const content = Buffer.concat([PAGE.subarray(0, PAGE.length - 60), Buffer.from(`<!-- ${i} ${crypto.randomUUID()} -->`.padEnd(60, ' '))])
    await uploadPage(url, key, `cold${i}.html`, content)
    names.push(`cold${i}.html`)
  }
  const ms: number[] = []
  for (const name of names) {
    const t0 = process.hrtime.bigint()
    const r = await request(`${url}/${username}/${name}`, { headers: { 'x-forwarded-proto': 'https' } })
    const b = Buffer.from(await r.body.arrayBuffer())
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6)
    if (r.statusCode !== 200 || b.length !== PAGE.length) throw new Error(`cold GET ${name}: ${r.statusCode} ${b.length}`)
  }
  return quantiles(ms)
}

async function main() {
  for (const tool of ['wrk', 'nginx']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) throw new Error(`${tool} is not installed (apt-get install ${tool})`)
  }
  log(
    `scale-out bench ${runId}: ${os.cpus().length} CPUs, load ${load()}, ${SECONDS}s runs, ${CONNECTIONS} connections, nginx workers ${args['nginx-workers']}`,
  )
  const s3dir = path.join(work, 's3')
  fs.mkdirSync(s3dir)
  // the fake S3 server runs in a process of its own, as a real one would
  const s3 = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench', 's3-server.ts'), String(PORTS.s3), s3dir, 'svc-bench'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(s3)
  await new Promise<void>((resolve, reject) => {
    s3.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve()
    })
    s3.on('exit', (code) => reject(new Error(`s3rver exited ${code}`)))
  })
  const s3url = (prefix: string) =>
    `s3://svc-bench/${prefix}?endpoint=http://127.0.0.1:${PORTS.s3}&region=us-east-1&forcePathStyle=true&accessKeyId=S3RVER&secretAccessKey=S3RVER`

  try {
    // 1. blob store, in process
    log('\n1. blob store get() of a 50 KB blob, sequential, in process')
    const local = createLocalBlobStore(path.join(work, 'blobs'))
    const remote = createS3BlobStore(s3url('blobbench'))
    const blob = { disk: await blobLatency(local, 500), s3: await blobLatency(remote, 500) }
    await remote.close()
    results.blobGet50k = blob
    for (const [k, v] of Object.entries(blob)) log(`  ${k.padEnd(5)} mean ${v.mean} ms  p50 ${v.p50}  p95 ${v.p95}  p99 ${v.p99}  (n=${v.n})`)

    if (args['skip-pages']) return
    const pages: Record<string, unknown> = {}
    const rps: Record<string, unknown> = {}
    results.page50k = pages
    results.rps = rps
    for (const storage of (args.storage === 'both' ? ['s3', 'disk'] : [args.storage]) as Array<'s3' | 'disk'>) {
      const schema = `bench_${runId}_${storage}`
      schemas.push(schema)
      const env: Record<string, string> = {
        DATABASE_URL: `${PG_URL}?schema=${schema}`,
        REDIS_URL,
        REDIS_PREFIX: `svc-bench-${runId}-${storage}:`,
        STORAGE_URL: storage === 's3' ? s3url(`site-${runId}`) : `file://${path.join(work, 'shared-blobs')}`,
        DATA_DIR: path.join(work, `data-${storage}`),
        TRUST_PROXY: '1',
        LOG_LEVEL: 'warn',
      }
      svc(['migrate'], env)
      log(`\n[${storage}] starting instance A on ${PORTS.a}`)
      const a = await startInstance(PORTS.a, { ...env, DATA_DIR: path.join(work, `data-${storage}-a`) }, `${storage}-a`)
      const site = await setupSite(env, `http://127.0.0.1:${PORTS.a}`)
      let pagePath = site?.pagePath ?? null
      if (!site || !pagePath) {
        // measure what can be measured: the same set-up on GET /healthz (one indexed query)
        log('  the public host does not serve the uploaded page (files feature not merged?): no page figures;')
        log('  requests per second below are for GET /healthz instead')
        results.pagesSkipped = 'public host unavailable; req/s measured on /healthz'
        pagePath = '/healthz'
        if (storage === 'disk') {
          await stop(a)
          break
        }
      } else {
        log(`2. [${storage}] 50 KB page, first request (not cached: database + blob store), sequential`)
        const cold = await coldLatency(`http://127.0.0.1:${PORTS.a}`, site.key, site.username, 40)
        results.coldPage50k ??= {} as Record<string, unknown>
        ;(results.coldPage50k as Record<string, unknown>)[storage] = cold
        log(`  mean ${cold.mean} ms  p50 ${cold.p50}  p95 ${cold.p95}  p99 ${cold.p99}  (n=${cold.n})`)
        log(`2b. [${storage}] one connection, the same 50 KB page again and again (cached), instance direct`)
        const single = wrk(`http://127.0.0.1:${PORTS.a}${pagePath}`, 1, 1, SECONDS)
        pages[storage] = single
        log(`  ${single.rps.toFixed(0)} req/s, latency avg ${single.latencyAvgMs} ms, p50 ${single.p50Ms}, p99 ${single.p99Ms} (load ${single.load})`)
      }
      log(`3. [${storage}] ${CONNECTIONS} connections, GET ${pagePath.replace(/^\/bench[0-9a-f]+/, '/USER')}`)
      const r1 = wrk(`http://127.0.0.1:${PORTS.a}${pagePath}`, 2, CONNECTIONS, SECONDS)
      log(`  one instance, direct:        ${r1.rps.toFixed(0)} req/s (p99 ${r1.p99Ms} ms, non-2xx ${r1.non2xx}, load ${r1.load})`)
      let ngx = await startNginx([PORTS.a])
      const r2 = wrk(`http://127.0.0.1:${PORTS.nginx}${pagePath}`, 2, CONNECTIONS, SECONDS)
      log(`  one instance behind nginx:   ${r2.rps.toFixed(0)} req/s (p99 ${r2.p99Ms} ms, non-2xx ${r2.non2xx}, load ${r2.load})`)
      await stop(ngx)
      const b = await startInstance(PORTS.b, { ...env, DATA_DIR: path.join(work, `data-${storage}-b`) }, `${storage}-b`)
      ngx = await startNginx([PORTS.a, PORTS.b])
      const r3 = wrk(`http://127.0.0.1:${PORTS.nginx}${pagePath}`, 2, CONNECTIONS, SECONDS)
      log(`  two instances behind nginx:  ${r3.rps.toFixed(0)} req/s (p99 ${r3.p99Ms} ms, non-2xx ${r3.non2xx}, load ${r3.load})`)
      rps[storage] = { oneDirect: r1, oneNginx: r2, twoNginx: r3 }
      await stop(ngx)
      await Promise.all([stop(a), stop(b)])
    }
  } finally {
    for (const c of children) await stop(c)
    const c = new pg.Client({ connectionString: PG_URL })
    await c.connect()
    for (const s of schemas) await c.query(`drop schema if exists "${s}" cascade`)
    await c.end()
    const r = new Redis(REDIS_URL)
    let cursor = '0'
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `svc-bench-${runId}-*`, 'COUNT', 500)
      if (keys.length) await r.del(...keys)
      cursor = next
    } while (cursor !== '0')
    r.disconnect()
    fs.rmSync(work, { recursive: true, force: true })
    const outDir = path.join(root, 'bench', 'results')
    fs.mkdirSync(outDir, { recursive: true })
    fs.writeFileSync(path.join(outDir, `scale-out-${results.started as string}.json`.replace(/:/g, '-')), JSON.stringify(results, null, 2))
  }
}

main().catch((e) => {
  console.error(e)
  for (const c of children) c.kill('SIGKILL')
  process.exitCode = 1
})
