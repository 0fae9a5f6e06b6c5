#!/usr/bin/env node
// The public host's miss path without HTTP: the resolver and the host cache over a deployed
// long-tail site, pages drawn at random, as bench/long-tail.sh's random rounds ask for them.
// A lookup the cache holds costs a Map lookup; a miss resolves the path (deploy index,
// account and project answers, the entry's prepared head) and evicts the oldest entry.
// Prints µs per lookup and per miss, and the scavenges the V8 heap made meanwhile.
//
//   npm run build
//   PAGES=100000 ROUNDS=1 SECS=2 KEEP_DATA=/tmp/lt100k bench/long-tail.sh    # the site, once
//   node bench/resolve-miss.mjs /tmp/lt100k                                   # 3 rounds of 200,000
//   ENTRIES=110000 LOOKUPS=400000 ROUNDS=5 node bench/resolve-miss.mjs /tmp/lt100k
//   taskset -c 1 node bench/resolve-miss.mjs /tmp/lt100k                      # as the server is pinned
import fs from 'node:fs'
import path from 'node:path'
import { PerformanceObserver } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const kept = process.argv[2]
if (!kept || !fs.existsSync(path.join(kept, 'paths.txt'))) {
  console.error('usage: node bench/resolve-miss.mjs DIR (a KEEP_DATA folder of bench/long-tail.sh)')
  process.exit(2)
}
const { loadConfig } = await import(path.join(root, 'dist/src/config.js'))
const { createDeps } = await import(path.join(root, 'dist/src/compose.js'))
const { createHostCache } = await import(path.join(root, 'dist/src/features/sites/host-cache.js'))
const { createResolver } = await import(path.join(root, 'dist/src/features/sites/resolver.js'))

const ENTRIES = Number(process.env.ENTRIES ?? 25_000)
const LOOKUPS = Number(process.env.LOOKUPS ?? 200_000)
const ROUNDS = Number(process.env.ROUNDS ?? 3)

// a copy of the database (opening it runs the migrations check and may checkpoint); the
// resolver never reads the blobs, so they stay behind
const work = fs.mkdtempSync('/tmp/svc-bench-resolve-')
fs.mkdirSync(path.join(work, 'data'))
for (const f of fs.readdirSync(path.join(kept, 'data'))) {
  if (f.startsWith('svc.db')) fs.copyFileSync(path.join(kept, 'data', f), path.join(work, 'data', f))
}
const deps = await createDeps(loadConfig({ ...process.env, DATA_DIR: path.join(work, 'data'), LOG_LEVEL: 'warn' }))
const paths = fs.readFileSync(path.join(kept, 'paths.txt'), 'utf8').trim().split('\n')
const cache = createHostCache({ maxEntries: ENTRIES })
const resolve = createResolver(deps.db, cache)
const pick = () => paths[Math.floor(Math.random() * paths.length)]

// warm-up: enough lookups to load every deploy into the index (in the background), then a fill
for (let i = 0; i < 3000; i++) await resolve(pick())
await new Promise((r) => setTimeout(r, 2000))
for (let i = 0; i < 50_000; i++) await resolve(pick())

let scavenges = 0
let scavengeMs = 0
let fullGcs = 0
const gc = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    // kind 1: minor (scavenge); anything else counts as a full collection
    if (e.detail?.kind === 1) {
      scavenges++
      scavengeMs += e.duration
    } else fullGcs++
  }
})
gc.observe({ entryTypes: ['gc'] })

console.log(`${paths.length} pages, host cache of ${ENTRIES} entries, ${ROUNDS} rounds of ${LOOKUPS} lookups`)
for (let round = 1; round <= ROUNDS; round++) {
  scavenges = scavengeMs = fullGcs = 0
  let misses = 0
  const t0 = performance.now()
  for (let i = 0; i < LOOKUPS; i++) {
    const p = pick()
    if (cache.get(p) === undefined) {
      misses++
      await resolve(p)
    }
  }
  const ms = performance.now() - t0
  // the observer reports in a later task (the loop above runs on microtasks only)
  await new Promise((r) => setTimeout(r, 100))
  console.log(
    `round ${round}: ${misses} misses (${((100 * misses) / LOOKUPS).toFixed(0)}%), ` +
      `${((ms * 1000) / LOOKUPS).toFixed(2)} µs per lookup, ${((ms * 1000) / Math.max(1, misses)).toFixed(2)} µs per miss; ` +
      `${scavenges} scavenges (${scavengeMs.toFixed(0)} ms), ${fullGcs} full GCs; heap ${process.memoryUsage().heapUsed >> 20} MB`,
  )
}
gc.disconnect()
await deps.close()
fs.rmSync(work, { recursive: true, force: true })
