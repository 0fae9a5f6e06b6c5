// What making a small batch of blobs durable costs the event loop and the caller, by way:
// `sync -f` (one syncfs(2), spawned: fork/exec runs on the event loop) against an fdatasync
// per file on the thread pool and an fsync per directory.
//
//   node bench/small-batch-sync.mjs                    primitives, batches of 1..1024 files
//   HEAP_MB=500 node bench/small-batch-sync.mjs        the same from a process holding 500 MB
//   STORE=dist/src/storage/local.js node bench/small-batch-sync.mjs putbatch
//                                                      putBatch of the built store, end to end
//
// Figures: `blocked` is the longest the event loop was kept from running a timer (a
// setImmediate loop's largest gap), `wall` the time until the batch is durable. Median of RUNS.
import fs from 'node:fs'
import fsp from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { execFile } from 'node:child_process'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'

const RUNS = Number(process.env.RUNS ?? 15)
const SIZES = (process.env.SIZES ?? '1,4,16,64,128,256,1024').split(',').map(Number)
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 2)
const dir = fs.mkdtempSync(path.join(process.env.DIR ?? os.tmpdir(), 'svc-sync-bench-'))
// a heap as a running server has one (fork copies the page tables of all of it)
const ballast = []
for (let i = 0; i < Number(process.env.HEAP_MB ?? 0); i++) ballast.push(Buffer.alloc(1024 * 1024, i & 255 || 1))
const heapFill = []
for (let i = 0; i < Number(process.env.HEAP_MB ?? 0) * 2000; i++) heapFill.push({ i, s: `x${i}` })
// held past the module's top level (an unreferenced local would be collected)
globalThis.benchBallast = [ballast, heapFill]

/** Runs fn while a setImmediate loop watches; returns the longest gap and fn's wall time (ms). */
async function watch(fn) {
  let last = performance.now()
  let worst = 0
  let on = true
  const tick = () => {
    const now = performance.now()
    worst = Math.max(worst, now - last)
    last = now
    if (on) setImmediate(tick)
  }
  setImmediate(tick)
  const t0 = performance.now()
  await fn()
  const wall = performance.now() - t0
  on = false
  await new Promise((r) => setImmediate(r))
  return { blocked: worst, wall }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const execFileP = promisify(execFile)
const syncFs = () => execFileP('sync', ['-f', dir])

async function pool(items, n, fn) {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++])
    }),
  )
}
const fdatasync = promisify(fs.fdatasync)
const fsync = promisify(fs.fsync)
const fsyncDir = async (d) => {
  const fd = fs.openSync(d, 'r')
  try {
    await fsync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** n new files of 2 KB into 256-way folders, made durable one way or the other. */
async function batch(n, way) {
  const files = Array.from({ length: n }, () => {
    const b = crypto.randomBytes(2048)
    const digest = crypto.createHash('sha256').update(b).digest('hex')
    const tmp = path.join(dir, `tmp-${digest}`)
    const fd = fs.openSync(tmp, 'wx', 0o640)
    fs.writeSync(fd, b)
    return { tmp, fd, target: path.join(dir, digest.slice(0, 2), digest) }
  })
  const rename = () => {
    for (const f of files) {
      fs.mkdirSync(path.dirname(f.target), { recursive: true })
      fs.renameSync(f.tmp, f.target)
    }
  }
  if (way === 'syncfs') {
    for (const f of files) fs.closeSync(f.fd)
    await syncFs()
    rename()
    await syncFs()
  } else {
    await pool(files, CONCURRENCY, (f) => fdatasync(f.fd))
    for (const f of files) fs.closeSync(f.fd)
    rename()
    await pool([...new Set(files.map((f) => path.dirname(f.target)))], CONCURRENCY, fsyncDir)
  }
}

async function primitives() {
  console.log(
    `node ${process.version}, rss ${Math.round(process.memoryUsage().rss / 1048576)} MB, ${os.cpus().length} CPUs, ${dir}, runs ${RUNS}, concurrency ${CONCURRENCY}`,
  )
  const spawn = []
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now()
    const p = syncFs()
    spawn.push(performance.now() - t)
    await p
  }
  console.log(
    `execFile('sync', ['-f']): synchronous part (fork/exec on the event loop) median ${median(spawn).toFixed(2)} ms, max ${Math.max(...spawn).toFixed(2)} ms`,
  )
  console.log('files  way      blocked-ms(median)  wall-ms(median)')
  for (const n of SIZES) {
    for (const way of ['syncfs', 'fsync']) {
      const b = []
      const w = []
      for (let i = 0; i < RUNS; i++) {
        const r = await watch(() => batch(n, way))
        b.push(r.blocked)
        w.push(r.wall)
      }
      console.log(`${String(n).padStart(5)}  ${way.padEnd(7)}  ${median(b).toFixed(2).padStart(18)}  ${median(w).toFixed(2).padStart(15)}`)
    }
  }
}

async function putbatch() {
  const { createLocalBlobStore } = await import(pathToFileURL(path.resolve(process.env.STORE)).href)
  const store = createLocalBlobStore(dir)
  console.log(`putBatch of ${process.env.STORE}: node ${process.version}, rss ${Math.round(process.memoryUsage().rss / 1048576)} MB, runs ${RUNS}`)
  console.log('files  blocked-ms(median)  wall-ms(median)')
  for (const n of SIZES) {
    const b = []
    const w = []
    for (let i = 0; i < RUNS; i++) {
      const bodies = Array.from({ length: n }, () => crypto.randomBytes(2048))
      const r = await watch(() => store.putBatch(bodies))
      b.push(r.blocked)
      w.push(r.wall)
    }
    console.log(`${String(n).padStart(5)}  ${median(b).toFixed(2).padStart(18)}  ${median(w).toFixed(2).padStart(15)}`)
  }
}

try {
  await (process.argv[2] === 'putbatch' ? putbatch() : primitives())
} finally {
  await fsp.rm(dir, { recursive: true, force: true })
}
