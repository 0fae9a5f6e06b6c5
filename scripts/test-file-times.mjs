/**
 * A node:test reporter: after the run, the test files whose top-level tests took longest (the
 * sum of their durations), so the suite's time can be watched. Used by scripts/run-tests.mjs
 * as a second reporter, on stderr. TEST_SLOWEST=how many files to list (default 15).
 * TEST_TIMELINE=how many test processes to list by when they ended (default none): seconds
 * since the run's start at which each started and ended, so what runs alone at the end shows.
 */
export default async function* fileTimes(source) {
  const perFile = new Map()
  const runs = new Map()
  const t0 = performance.now()
  for await (const event of source) {
    const file = event.data?.file
    if (!file || event.data.nesting !== 0) continue
    // a process's own events, under the run's file (scripts/run-tests.mjs: *.test.mjs)
    if (file.endsWith('.test.mjs')) {
      const at = (performance.now() - t0) / 1000
      if (event.type === 'test:dequeue') runs.set(file, { from: at, to: NaN })
      else if (event.type === 'test:complete' && runs.has(file)) runs.get(file).to = at
      continue
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    perFile.set(file, (perFile.get(file) ?? 0) + (event.data.details?.duration_ms ?? 0) / 1000)
  }
  const rows = [...perFile].sort((a, b) => b[1] - a[1])
  const total = rows.reduce((sum, [, secs]) => sum + secs, 0)
  const shown = Number(process.env.TEST_SLOWEST ?? 15)
  yield `\nslowest test files (seconds of their top-level tests; ${rows.length} files, ${total.toFixed(0)} s in all):\n`
  for (const [file, secs] of rows.slice(0, shown)) yield `${secs.toFixed(1).padStart(7)}  ${file.replace(process.cwd() + '/', '')}\n`
  const last = Number(process.env.TEST_TIMELINE ?? 0)
  if (last > 0) {
    yield `\ntest processes by when they ended (seconds since the run's start: started, ended):\n`
    const ends = [...runs].sort((a, b) => b[1].to - a[1].to).slice(0, last)
    for (const [file, r] of ends) yield `${r.from.toFixed(1).padStart(7)} ${r.to.toFixed(1).padStart(7)}  ${file.split('/').pop()}\n`
  }
}
