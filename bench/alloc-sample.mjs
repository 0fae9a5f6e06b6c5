// A preload that samples every allocation of the process, kept or collected, and writes the
// bytes allocated per function at exit: where a path's garbage comes from (V8's sampling heap
// profiler, with the objects young and full GCs collected included, which --heap-prof leaves
// out).
//
//   node --import ./bench/alloc-sample.mjs bench/resolve-miss.mjs /tmp/lt100k
//   ALLOC_SAMPLE_BYTES=1024 ALLOC_TOP=40 node --import ./bench/alloc-sample.mjs SCRIPT
//
// Prints the top ALLOC_TOP functions (default 30) by bytes allocated on stderr, and writes the
// raw profile to ALLOC_PROFILE (default /tmp/alloc.heapprofile; Chrome DevTools opens it).
// ALLOC_ON_SIGNAL=1 starts sampling at the process's first SIGUSR2 instead of at once.
import fs from 'node:fs'
import inspector from 'node:inspector'

const out = process.env.ALLOC_PROFILE ?? '/tmp/alloc.heapprofile'
const session = new inspector.Session()
session.connect()
const start = () =>
  session.post('HeapProfiler.startSampling', {
    samplingInterval: Number(process.env.ALLOC_SAMPLE_BYTES ?? 4096),
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  })
// ALLOC_ON_SIGNAL=1: sample from the first SIGUSR2 on (a server's steady state, after warm-up)
if (process.env.ALLOC_ON_SIGNAL === '1') process.once('SIGUSR2', start)
else start()

process.on('exit', () => {
  // the inspector answers synchronously inside 'exit'
  session.post('HeapProfiler.stopSampling', (err, r) => {
    if (err) return
    fs.writeFileSync(out, JSON.stringify(r.profile))
    const self = new Map()
    let total = 0
    const walk = (n) => {
      const cf = n.callFrame
      const key = `${cf.functionName || '(anonymous)'} ${cf.url.replace(/.*\/(dist|node_modules)\//, '$1/')}:${cf.lineNumber}`
      if (n.selfSize) self.set(key, (self.get(key) ?? 0) + n.selfSize)
      total += n.selfSize
      for (const c of n.children) walk(c)
    }
    walk(r.profile.head)
    const mb = (b) => (b / 1e6).toFixed(1).padStart(8)
    process.stderr.write(`allocated ${mb(total).trim()} MB in all (profile: ${out})\n`)
    for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.ALLOC_TOP ?? 30))) process.stderr.write(`${mb(v)} MB  ${k}\n`)
  })
})
