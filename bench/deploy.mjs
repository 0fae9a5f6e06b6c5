#!/usr/bin/env node
// Benchmark of `svc deploy` (not a test): a 1,000-file, 20 MB folder against a local server.
// Measures the first deploy, a no-change redeploy, and a redeploy after changing 10 files.
//
//   npm run build && node bench/deploy.mjs [--files 1000] [--mb 20] [--port 19710] [--engine sqlite|postgres]
//
// Starts `bin/svc serve` on 127.0.0.1 (ports PORT and PORT+1) with a fresh DATA_DIR, creates
// a user and key with the operator CLI, runs the client as a child process (as a user would),
// prints the figures as JSON, and stops the server it started.
import { spawn, spawnSync } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'

const { values: o } = parseArgs({
  options: {
    files: { type: 'string', default: '1000' },
    mb: { type: 'string', default: '20' },
    port: { type: 'string', default: '19710' },
    engine: { type: 'string', default: 'sqlite' },
    runs: { type: 'string', default: '1' },
  },
})
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const bin = path.join(root, 'bin', 'svc')
const nFiles = Number(o.files)
const totalBytes = Number(o.mb) * 1_000_000
const port = Number(o.port)

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-deploy-'))
const dataDir = path.join(work, 'data')
const site = path.join(work, 'site')
fs.mkdirSync(dataDir)
const pgUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const schema = `bench_deploy_${crypto.randomBytes(4).toString('hex')}`
const serverEnv = {
  ...process.env,
  DATA_DIR: dataDir,
  PORT: String(port),
  HTTP_PORT: String(port + 1),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  ...(o.engine === 'postgres' ? { DATABASE_URL: `${pgUrl}?schema=${schema}` } : {}),
}

/** Random-looking but deterministic sizes that add up to totalBytes, a few folders deep. */
function makeSite() {
  let seed = 1
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed / 2 ** 31
  }
  const weights = Array.from({ length: nFiles }, () => 0.2 + next() * 1.8)
  const sum = weights.reduce((a, b) => a + b, 0)
  let written = 0
  for (let i = 0; i < nFiles; i++) {
    const size = i === nFiles - 1 ? totalBytes - written : Math.floor((weights[i] / sum) * totalBytes)
    const rel = i === 0 ? 'index.html' : `d${i % 10}/s${i % 7}/file-${i}.${['html', 'css', 'js', 'json', 'bin'][i % 5]}`
    const abs = path.join(site, rel)
    fs.mkdirSync(path.dirname(abs), { recursive: true })
    fs.writeFileSync(abs, crypto.randomBytes(size))
    written += size
  }
  return written
}

function waitForListening(child) {
  return new Promise((resolve, reject) => {
    let buf = ''
    const t = setTimeout(() => reject(new Error(`server did not start: ${buf}`)), 60_000)
    child.stdout.on('data', (d) => {
      buf += d
      if (/listening on/.test(buf)) {
        clearTimeout(t)
        resolve()
      }
    })
    child.on('exit', (c) => reject(new Error(`server exited ${c}: ${buf}`)))
  })
}

function cli(args, env) {
  const t0 = process.hrtime.bigint()
  const r = spawnSync(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} failed (${r.status}): ${r.stderr}\n${r.stdout}`)
  return { ms, out: r.stdout }
}

const bytes = makeSite()
const admin = (args) => {
  const r = spawnSync(process.execPath, [bin, ...args], { env: serverEnv, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`)
  return r.stdout.trim()
}
const server = spawn(process.execPath, [bin, 'serve'], { env: serverEnv, stdio: ['ignore', 'pipe', 'inherit'] })
try {
  await waitForListening(server)
  admin(['user', 'add', 'bench', '--password', 'bench-password-123'])
  const key = admin(['key', 'create', 'bench'])
  const env = { SVC_URL: `https://127.0.0.1:${port}`, SVC_API_KEY: key, SVC_INSECURE: '1', SVC_CONFIG: path.join(work, 'cfg.json') }
  const results = []
  for (let run = 0; run < Number(o.runs); run++) {
    const project = `bench${run}`
    const deploy = () => {
      const r = cli(['deploy', site, '--project', project, '--json'], env)
      const j = JSON.parse(r.out)
      return {
        wall_ms: Math.round(r.ms),
        cli_ms: j.duration_ms,
        uploaded: j.uploaded.length,
        upload_requests: j.upload_requests,
        requests: j.requests,
        rate_limit_waits: j.rate_limit_waits,
      }
    }
    const first = deploy()
    const noChange = deploy()
    // touch 10 files (same size, new bytes)
    const all = []
    const walk = (d) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(path.join(d, e.name))
        else all.push(path.join(d, e.name))
      }
    }
    walk(site)
    for (const f of all.slice(0, 10)) fs.writeFileSync(f, crypto.randomBytes(fs.statSync(f).size))
    const tenChanged = deploy()
    results.push({ first, no_change: noChange, ten_changed: tenChanged })
  }
  const startup = cli(['--help'], env).ms
  console.log(
    JSON.stringify(
      {
        files: nFiles,
        bytes,
        engine: o.engine,
        node: process.version,
        cpus: os.cpus().length,
        loadavg: os.loadavg().map((x) => x.toFixed(2)),
        cli_startup_ms: Math.round(startup),
        results,
      },
      null,
      2,
    ),
  )
} finally {
  server.kill('SIGTERM')
  await new Promise((r) => server.once('exit', r))
  fs.rmSync(work, { recursive: true, force: true })
  if (o.engine === 'postgres') {
    const { default: pg } = await import('pg')
    const c = new pg.Client({ connectionString: pgUrl })
    await c.connect()
    await c.query(`drop schema if exists "${schema}" cascade`)
    await c.end()
  }
}
