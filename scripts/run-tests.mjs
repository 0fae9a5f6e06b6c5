#!/usr/bin/env node
// Runs the compiled test files (dist/test/**/*.test.js) with node's test runner.
// The build (tsc) runs first through `npm test`. Options: SVC_TEST_ENGINES=sqlite,postgres
// (default both; CI must have both), TEST_FILTER=substring to run some files only.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' })
if (build.status !== 0) process.exit(build.status ?? 1)

const files = []
const walk = (d) => {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name)
    if (e.isDirectory()) walk(p)
    else if (e.name.endsWith('.test.js')) files.push(p)
  }
}
walk(path.join(root, 'dist', 'test'))
const filter = process.env.TEST_FILTER
// match against the path below dist/test, so the checkout's own path never matches
const testRoot = path.join(root, 'dist', 'test')
const selected = files.filter((f) => !filter || path.relative(testRoot, f).includes(filter)).sort()
if (selected.length === 0) {
  console.error('no test files found')
  process.exit(1)
}
const concurrency = process.env.TEST_CONCURRENCY ?? '2'
const r = spawnSync(process.execPath, ['--test', `--test-concurrency=${concurrency}`, '--test-timeout=600000', '--test-reporter=spec', ...selected], {
  cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' },
})
process.exit(r.status ?? 1)
