#!/usr/bin/env node
// Self time per function in two V8 CPU profiles (node --cpu-prof), side by side, sorted by
// how much more the second spent: what a workload added to another (a page load with a
// writer against the same load with a control client, say).
//
//   node bench/cpuprofile-diff.mjs A.cpuprofile B.cpuprofile        top 40 by B - A
//   N=100 node bench/cpuprofile-diff.mjs A.cpuprofile B.cpuprofile
//
// Functions are keyed by name, file (below dist/ or node_modules/) and line, so two builds of
// the same code compare only when their bundles' line numbers match. Times in milliseconds;
// "(idle)" is the event loop waiting.
import fs from 'node:fs'

const [a, b] = process.argv.slice(2)
if (!a || !b) {
  console.error('usage: node bench/cpuprofile-diff.mjs A.cpuprofile B.cpuprofile')
  process.exit(2)
}

/** Self microseconds per function key, and the profile's total. */
function selfTimes(file) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'))
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const perNode = new Map()
  for (let i = 0; i < p.samples.length; i++) perNode.set(p.samples[i], (perNode.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0))
  const self = new Map()
  let total = 0
  for (const [id, us] of perNode) {
    const cf = byId.get(id).callFrame
    const key = `${cf.functionName || '(anonymous)'} ${cf.url.replace(/.*\/(dist|node_modules)\//, '$1/')}:${cf.lineNumber}`
    self.set(key, (self.get(key) ?? 0) + us)
    total += us
  }
  return { self, total }
}

const A = selfTimes(a)
const B = selfTimes(b)
const ms = (us) => (us / 1000).toFixed(1).padStart(9)
console.log(`${'A ms'.padStart(9)}${'B ms'.padStart(9)}${'B-A'.padStart(9)}  function (totals: A ${ms(A.total).trim()}, B ${ms(B.total).trim()})`)
const rows = [...new Set([...A.self.keys(), ...B.self.keys()])]
  .map((k) => [k, A.self.get(k) ?? 0, B.self.get(k) ?? 0])
  .sort((x, y) => y[2] - y[1] - (x[2] - x[1]))
for (const [k, x, y] of rows.slice(0, Number(process.env.N ?? 40))) console.log(`${ms(x)}${ms(y)}${ms(y - x)}  ${k}`)
