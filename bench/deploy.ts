/**
 * Archive deploys benchmark (not a test), issue 23's figures, on this machine:
 *   1. first deploy of a 20,000-page site (2 KB each, 200 folders): time and requests, with
 *      `svc deploy` (archive) and the old batch path (`svc deploy --batch`) in the same run,
 *      and `tar -cz` of the same tree (reading it) and `tar -xz` + `sync` (writing it) as the floors;
 *   2. a one-file redeploy, both paths, then (archive path) nine more, up to 10 kept deploys,
 *      then the same site as a second project (its blobs already stored);
 *   3. rollback: the HTTP request alone, and `svc rollback` (process start included);
 *   4. the server's memory (VmRSS, sampled every 20 ms) during a 200 MB archive deploy of
 *      incompressible 1 MB files.
 *
 *   npm run build && node --import tsx bench/deploy.ts [--pages 20000] [--big-mb 200]
 *     [--engine sqlite|postgres] [--port 19720] [--skip-batch]
 *
 * Starts `bin/svc serve` on 127.0.0.1 (PORT, PORT+1) with a fresh DATA_DIR and the default rate
 * limits, runs the client as child processes (as a user would), prints JSON, and stops the
 * server. Figures go in docs/benchmarks/ (never in tests).
 */
import { spawn, spawnSync } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'

const { values: o } = parseArgs({
  options: {
    pages: { type: 'string', default: '20000' },
    folders: { type: 'string', default: '200' },
    'big-mb': { type: 'string', default: '200' },
    port: { type: 'string', default: '19720' },
    engine: { type: 'string', default: 'sqlite' },
    'skip-batch': { type: 'boolean', default: false },
  },
})
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const bin = path.join(root, 'bin', 'svc')
const port = Number(o.port)
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-deploys-'))
const dataDir = path.join(work, 'data')
fs.mkdirSync(dataDir)
const pgUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const schema = `bench_deploys_${crypto.randomBytes(4).toString('hex')}`
const serverEnv: NodeJS.ProcessEnv = {
  ...process.env,
  DATA_DIR: dataDir,
  PORT: String(port),
  HTTP_PORT: String(port + 1),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  ...(o.engine === 'postgres' ? { DATABASE_URL: `${pgUrl}?schema=${schema}` } : {}),
}
const agent = new Agent({ connect: { rejectUnauthorized: false } })

/** 20,000 pages of 2 KB in 200 folders (+ index.html), text that compresses as HTML does. */
function makePages(dir: string, n: number, folders: number): void {
  for (let i = 0; i < n; i++) {
    const rel = i === 0 ? 'index.html' : `f${i % folders}/page-${i}.html`
    const abs = path.join(dir, rel)
    fs.mkdirSync(path.dirname(abs), { recursive: true })
    const head = `<!doctype html><html><head><title>Page ${i}</title></head><body><h1>Page ${i}</h1><p>`
    const filler = crypto.randomBytes(700).toString('base64').replace(/[+/=]/g, ' ')
    const body = `${head}${filler}</p>${'<p>lorem ipsum dolor sit amet</p>'.repeat(40)}</body></html>`
    fs.writeFileSync(abs, body.padEnd(2048, ' ').slice(0, 2048))
  }
}

function makeBig(dir: string, mb: number): void {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, 'index.html'), '<h1>big</h1>')
  for (let i = 0; i < mb; i++) fs.writeFileSync(path.join(dir, `blob-${i}.bin`), crypto.randomBytes(1_000_000))
}

function waitForListening(child: ReturnType<typeof spawn>): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = ''
    const t = setTimeout(() => reject(new Error(`server did not start: ${buf}`)), 60_000)
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString()
      if (/listening on/.test(buf)) {
        clearTimeout(t)
        resolve()
      }
    })
    child.on('exit', (c) => reject(new Error(`server exited ${c}: ${buf}`)))
  })
}

/** Runs the client; resolves with its wall time and parsed --json output. */
function cli(args: string[], env: Record<string, string>): Promise<{ ms: number; json: any }> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint()
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6
      if (code !== 0) return reject(new Error(`svc ${args.join(' ')} failed (${code}): ${err}\n${out}`))
      let json: any = null
      try {
        json = JSON.parse(out)
      } catch {}
      resolve({ ms: Math.round(ms), json })
    })
  })
}

const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)

const pagesDir = path.join(work, 'pages')
const bigDir = path.join(work, 'big')
makePages(pagesDir, Number(o.pages), Number(o.folders))
makeBig(bigDir, Number(o['big-mb']))
// the generated 240 MB go to disk now: the server's durability step (syncfs) would otherwise
// flush them inside the first deploy, which the bench's own setup is not part of
spawnSync('sync')
const tarT0 = Date.now()
spawnSync('tar', ['-czf', path.join(work, 'pages.tgz'), '-C', pagesDir, '.'])
const tarMs = Date.now() - tarT0
spawnSync('sync')
// the write-side floor: unpacking the same tree makes the 20,000 files a deploy must store
const untar = path.join(work, 'untar')
fs.mkdirSync(untar)
const untarT0 = Date.now()
spawnSync('tar', ['-xzf', path.join(work, 'pages.tgz'), '-C', untar])
// durable, like a deploy: tar -xz and then sync
spawnSync('sync')
const untarMs = Date.now() - untarT0

const admin = (args: string[]) => {
  const r = spawnSync(process.execPath, [bin, ...args], { env: serverEnv, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`)
  return r.stdout.trim()
}
admin(['migrate'])
admin(['user', 'add', 'bench', '--password', 'bench-password-123'])
const key = admin(['key', 'create', 'bench'])
const server = spawn(process.execPath, [bin, 'serve'], { env: serverEnv, stdio: ['ignore', 'pipe', 'inherit'] })
try {
  await waitForListening(server)
  const url = `https://127.0.0.1:${port}`
  const env = { SVC_URL: url, SVC_API_KEY: key, SVC_INSECURE: '1', SVC_CONFIG: path.join(work, 'cfg.json') }
  const summary = (r: { ms: number; json: any }) => ({
    wall_ms: r.ms,
    requests: r.json.requests,
    uploaded: r.json.uploaded.length,
    rate_limit_waits: r.json.rate_limit_waits,
  })
  const changeOne = () => fs.writeFileSync(path.join(pagesDir, 'f7/page-7.html'), `<h1>changed ${Date.now()}</h1>`.padEnd(2048, ' '))

  // 1 + 2: archive path
  const archiveFirst = summary(await cli(['deploy', pagesDir, '--project', 'site', '--json'], env))
  changeOne()
  const archiveOne = summary(await cli(['deploy', pagesDir, '--project', 'site', '--json'], env))
  // the steady state: nine more one-file redeploys, until the project keeps DEPLOYS_KEEP (10)
  // deploys, each a full copy of the site's rows
  const archiveOneKept: number[] = []
  for (let i = 0; i < 9; i++) {
    changeOne()
    archiveOneKept.push((await cli(['deploy', pagesDir, '--project', 'site', '--json'], env)).ms)
  }

  // the same site as a second project: every blob is already stored (the manifest check is
  // per project, so all 20,000 files are sent again, and the store finds it holds them)
  const copy = summary(await cli(['deploy', pagesDir, '--project', 'copy', '--json'], env))

  // 3: rollback (HTTP request alone, five times back and forth), then through the CLI
  const rollbackMs: number[] = []
  const list = await request(`${url}/api/folders/site/deploys`, { headers: { authorization: `Bearer ${key}` }, dispatcher: agent })
  const ids = ((await list.body.json()) as { deploys: Array<{ id: string }> }).deploys.map((d) => d.id)
  for (let i = 0; i < 6; i++) {
    const t0 = process.hrtime.bigint()
    const r = await request(`${url}/api/folders/site/rollback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ deploy_id: ids[(i + 1) % 2] }),
      dispatcher: agent,
    })
    await r.body.text()
    if (r.statusCode !== 200) throw new Error(`rollback answered ${r.statusCode}`)
    rollbackMs.push(Math.round((Number(process.hrtime.bigint() - t0) / 1e6) * 10) / 10)
  }
  const rollbackCli = (await cli(['rollback', '--project', 'site', '--json'], env)).ms

  // 4: memory during a 200 MB archive deploy
  const pid = server.pid!
  const before = rssKb(pid)
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 20)
  const big = summary(await cli(['deploy', bigDir, '--project', 'big', '--json'], env))
  clearInterval(sampler)

  // the old path, same tree, same server
  let batch: Record<string, unknown> | null = null
  if (!o['skip-batch']) {
    const first = summary(await cli(['deploy', pagesDir, '--project', 'old', '--batch', '--json'], env))
    changeOne()
    const one = summary(await cli(['deploy', pagesDir, '--project', 'old', '--batch', '--json'], env))
    batch = { first, one_file: one }
  }

  console.log(
    JSON.stringify(
      {
        pages: Number(o.pages),
        engine: o.engine,
        node: process.version,
        cpus: os.cpus().length,
        loadavg: os.loadavg().map((x) => x.toFixed(2)),
        tar_cz_ms: tarMs,
        tar_xz_ms: untarMs,
        archive: {
          first: archiveFirst,
          one_file: archiveOne,
          one_file_then_ms: archiveOneKept,
          second_project: copy,
          rollback_http_ms: rollbackMs,
          rollback_cli_ms: rollbackCli,
        },
        big_deploy: {
          ...big,
          mb: Number(o['big-mb']),
          rss_before_mb: Math.round(before / 1024),
          rss_peak_mb: Math.round(peak / 1024),
          growth_mb: Math.round((peak - before) / 1024),
        },
        batch,
      },
      null,
      2,
    ),
  )
} finally {
  server.kill('SIGTERM')
  await new Promise((r) => server.once('exit', r))
  await agent.close()
  fs.rmSync(work, { recursive: true, force: true })
}
