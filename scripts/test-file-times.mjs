/**
 * A node:test reporter: after the run, the test files whose top-level tests took longest (the
 * sum of their durations), so the suite's time can be watched. Used by scripts/run-tests.mjs
 * as a second reporter, on stderr. TEST_SLOWEST=how many files to list (default 15).
 */
export default async function* fileTimes(source) {
  const perFile = new Map()
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0 || !event.data.file) continue
    const { file, details } = event.data
    perFile.set(file, (perFile.get(file) ?? 0) + (details?.duration_ms ?? 0) / 1000)
  }
  const rows = [...perFile].sort((a, b) => b[1] - a[1])
  const total = rows.reduce((sum, [, secs]) => sum + secs, 0)
  const shown = Number(process.env.TEST_SLOWEST ?? 15)
  yield `\nslowest test files (seconds of their top-level tests; ${rows.length} files, ${total.toFixed(0)} s in all):\n`
  for (const [file, secs] of rows.slice(0, shown)) yield `${secs.toFixed(1).padStart(7)}  ${file.replace(process.cwd() + '/', '')}\n`
}
