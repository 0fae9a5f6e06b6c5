/**
 * Disk cache of S3 blobs benchmark (not a test). Measures, on this machine:
 *   1. in process, reading N distinct blobs (2 KB and 50 KB) once each: disk driver, S3 driver
 *      alone, S3 + disk cache cold (every read a miss), warm (every read a hit), and the first
 *      read after a restart (a hit that hashes the file once again);
 *   2. over HTTP, a real `svc serve` (SQLite, TRUST_PROXY=1, plain HTTP on loopback) serving N
 *      distinct 2 KB pages once each right after a restart (the host's memory is empty, so
 *      every body comes from the blob store): disk storage, S3 without cache, S3 with the cache
 *      cold (first pass) and warm (a second restart, then the same pass).
 *
 *   node --import tsx bench/blob-cache.ts [--pages 500] [--blobs 200] [--concurrency 8]
 *
 * S3 is s3rver (bench/s3-server.ts) in a process of its own: it stands for S3's behaviour, not
 * its speed (a real bucket is farther away, so the cache matters more). Loopback only; stops
 * everything it starts. Figures go to stdout; they are noisy on a shared machine.
 */
import fs from 'node:fs'
import os from 'node:os'
import net from 'node:net'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { parseArgs } from 'node:util'
import { request, Agent } from 'undici'
import { createLocalBlobStore } from '../src/storage/local.js'
import { createS3BlobStore } from '../src/storage/s3.js'
import { createBlobCache } from '../src/storage/disk-cache.js'
import type { BlobStore } from '../src/storage/blob-store.js'

const { values: args } = parseArgs({
  options: {
    pages: { type: 'string', default: '500' },
    blobs: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '8' },
  },
})
const PAGES = Number(args.pages)
const BLOBS = Number(args.blobs)
const CONCURRENCY = Number(args.concurrency)
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const bin = path.join(root, 'bin', 'svc')
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-cache-'))
const children: ChildProcess[] = []
const log = (s: string) => process.stdout.write(`${s}\n`)
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

function quantiles(ms: number[]) {
  const s = [...ms].sort((x, y) => x - y)
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]
  return { n: s.length, mean: +(s.reduce((a, b) => a + b, 0) / s.length).toFixed(3), p50: +q(0.5).toFixed(3), p99: +q(0.99).toFixed(3) }
}
const fmt = (q: ReturnType<typeof quantiles>) => `mean ${q.mean} ms  p50 ${q.p50}  p99 ${q.p99}  (n=${q.n})`

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer()
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port
      s.close(() => resolve(p))
    })
  })

const page = (i: number, size: number) => {
  const head = `<!doctype html><title>page ${i}</title><p>${crypto.randomUUID()}</p><p>`
  return Buffer.from(head + 'x'.repeat(Math.max(0, size - head.length - 4)) + '</p>')
}

async function readAll(store: BlobStore, digests: string[]) {
  const ms: number[] = []
  for (const d of digests) {
    const t0 = process.hrtime.bigint()
    await store.read(d)
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6)
  }
  return quantiles(ms)
}

async function localFileAll(store: BlobStore, digests: string[]) {
  const ms: number[] = []
  for (const d of digests) {
    const t0 = process.hrtime.bigint()
    const f = await store.localFile(d)
    if (!f) throw new Error('no local file')
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6)
  }
  return quantiles(ms)
}

async function inProcess(s3url: (prefix: string) => string) {
  for (const size of [2 * 1024, 50 * 1024]) {
    log(`\n1. read() of ${BLOBS} distinct ${size / 1024} KB blobs, one after another, in process`)
    const bodies = Array.from({ length: BLOBS }, (_, i) => page(i, size))
    const disk = createLocalBlobStore(path.join(work, `blobs-${size}`))
    const digests: string[] = []
    for (const b of bodies) digests.push((await disk.put(b)).digest)
    log(`  disk                     ${fmt(await readAll(disk, digests))}`)
    log(`  disk localFile()         ${fmt(await localFileAll(disk, digests))}`)
    const s3 = createS3BlobStore(s3url(`inproc-${size}`))
    for (const b of bodies) await s3.put(b)
    log(`  S3 alone                 ${fmt(await readAll(s3, digests))}`)
    const dir = path.join(work, `cache-${size}`)
    let cached = await createBlobCache(s3, { dir, maxBytes: 1024 ** 3 })
    log(`  S3 + cache, cold         ${fmt(await readAll(cached, digests))}`)
    log(`  S3 + cache, warm         ${fmt(await readAll(cached, digests))}`)
    log(`  S3 + cache, localFile()  ${fmt(await localFileAll(cached, digests))}`)
    await cached.close()
    const t0 = process.hrtime.bigint()
    cached = await createBlobCache(createS3BlobStore(s3url(`inproc-${size}`)), { dir, maxBytes: 1024 ** 3 })
    log(`  restart: index of ${BLOBS} files rebuilt in ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(1)} ms`)
    log(`  S3 + cache, after restart ${fmt(await readAll(cached, digests))} (first use hashes each file again)`)
    log(`  S3 + cache, warm again   ${fmt(await readAll(cached, digests))}`)
    await cached.close()
  }
}

function svc(cmd: string[], env: Record<string, string>): string {
  const r = spawnSync(process.execPath, [bin, ...cmd], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 })
  if (r.status !== 0) throw new Error(`svc ${cmd.join(' ')}: ${r.stderr}`)
  return r.stdout.trim()
}

async function startSvc(env: Record<string, string>, name: string): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort()
  const child = spawn(process.execPath, [bin, 'serve'], {
    env: { ...process.env, ...env, PORT: String(port), HTTP_PORT: String(await freePort()), HOST: '127.0.0.1', TRUST_PROXY: '1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', fs.openSync(path.join(work, `${name}.log`), 'a')],
  })
  children.push(child)
  await new Promise<void>((resolve, reject) => {
    let buf = ''
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${buf}`)), 60_000)
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString()
      if (buf.includes('svc listening on')) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once('exit', (code) => reject(new Error(`${name} exited ${code}: ${buf}`)))
  })
  return { child, url: `http://127.0.0.1:${port}` }
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const done = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  await Promise.race([done, new Promise((r) => setTimeout(r, 10_000))])
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}

async function upload(url: string, key: string, name: string, content: Buffer) {
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

/** Each page once, CONCURRENCY at a time: requests per second and latency. */
async function pass(url: string, paths: string[], sizes: number[]) {
  const dispatcher = new Agent({ connections: CONCURRENCY })
  const ms: number[] = []
  let next = 0
  const t0 = process.hrtime.bigint()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < paths.length; i = next++) {
        const s = process.hrtime.bigint()
        const r = await request(`${url}${paths[i]}`, { dispatcher, headers: { 'x-forwarded-proto': 'https' } })
        const b = Buffer.from(await r.body.arrayBuffer())
        ms.push(Number(process.hrtime.bigint() - s) / 1e6)
        if (r.statusCode !== 200 || b.length !== sizes[i]) throw new Error(`GET ${paths[i]}: ${r.statusCode} ${b.length}`)
      }
    }),
  )
  const secs = Number(process.hrtime.bigint() - t0) / 1e9
  await dispatcher.close()
  return { rps: Math.round(paths.length / secs), ...quantiles(ms) }
}

async function overHttp(s3url: (prefix: string) => string) {
  log(`\n2. ${PAGES} distinct 2 KB pages, each GET once right after a restart, ${CONCURRENCY} at a time, over HTTP (svc serve, SQLite)`)
  const configs: { name: string; env: Record<string, string> }[] = [
    { name: 'disk', env: {} },
    { name: 'S3, no cache', env: { STORAGE_URL: s3url('http-nocache'), BLOB_CACHE_SIZE: 'off' } },
    { name: 'S3 + cache', env: { STORAGE_URL: s3url('http-cache'), BLOB_CACHE_SIZE: '1G' } },
  ]
  for (const c of configs) {
    const env = { DATA_DIR: path.join(work, `data-${c.name.replace(/\W+/g, '-')}`), ...c.env }
    fs.mkdirSync(env.DATA_DIR, { recursive: true })
    svc(['migrate'], env)
    svc(['user', 'add', 'bench', '--password', 'bench-password-1234', '--vip'], env)
    svc(['user', 'set', 'bench', '--limit', `files=${PAGES + 10}`], env)
    const key = svc(['key', 'create', 'bench'], env)
    let s = await startSvc({ ...env, RATE_LIMITS: JSON.stringify({ vip: { minute: 1e6, hour: 1e6, day: 1e7, concurrent: 1000 } }) }, c.name)
    const paths: string[] = []
    const sizes: number[] = []
    for (let i = 0; i < PAGES; i++) {
      const p = page(i, 2048)
      await upload(s.url, key, `p${i}.html`, p)
      paths.push(`/bench/p${i}.html`)
      sizes.push(p.length)
    }
    // shuffled, so that neither pass reads in upload order
    for (let i = paths.length - 1; i > 0; i--) {
      const j = crypto.randomInt(i + 1)
      ;[paths[i], paths[j]] = [paths[j], paths[i]]
      ;[sizes[i], sizes[j]] = [sizes[j], sizes[i]]
    }
    for (const round of ['first pass after restart', 'second restart, same pass']) {
      await stop(s.child)
      s = await startSvc(env, c.name)
      const before = load()
      const r = await pass(s.url, paths, sizes)
      log(`  ${c.name.padEnd(13)} ${round.padEnd(26)} ${String(r.rps).padStart(6)} req/s  mean ${r.mean} ms  p50 ${r.p50}  p99 ${r.p99}  (load ${before})`)
    }
    await stop(s.child)
  }
}

async function main() {
  log(`blob-cache bench: ${os.cpus().length} CPUs, load ${load()}, ${BLOBS} blobs, ${PAGES} pages, concurrency ${CONCURRENCY}`)
  const s3port = await freePort()
  const s3dir = path.join(work, 's3')
  fs.mkdirSync(s3dir)
  const s3 = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench', 's3-server.ts'), String(s3port), s3dir, 'svc-bench'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(s3)
  await new Promise<void>((resolve, reject) => {
    s3.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve()
    })
    s3.once('exit', (code) => reject(new Error(`s3rver exited ${code}`)))
  })
  const s3url = (prefix: string) =>
    `s3://svc-bench/${prefix}?endpoint=http://127.0.0.1:${s3port}&region=us-east-1&forcePathStyle=true&accessKeyId=S3RVER&secretAccessKey=S3RVER`
  try {
    await inProcess(s3url)
    await overHttp(s3url)
  } finally {
    for (const c of children) await stop(c)
    fs.rmSync(work, { recursive: true, force: true })
  }
}

await main()
