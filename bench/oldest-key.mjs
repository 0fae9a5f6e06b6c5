#!/usr/bin/env node
// Evicting the oldest entry of a full Map, as the bounded caches do on every fill: the
// obvious `map.keys().next()` against src/util/oldest.ts (one kept iterator), in one run.
//
//   npm run build && node bench/oldest-key.mjs            50,000 entries, 200,000 fills
//   ENTRIES=1024 FILLS=1000000 node bench/oldest-key.mjs
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const { dropOldest } = await import(path.join(root, 'dist/src/util/oldest.js'))
const N = Number(process.env.ENTRIES ?? 50_000)
const FILLS = Number(process.env.FILLS ?? 200_000)

const full = () => {
  const m = new Map()
  for (let i = 0; i < N; i++) m.set(`k${i}`, i)
  return m
}
const run = (name, evict) => {
  const m = full()
  let next = N
  const t0 = performance.now()
  for (let j = 0; j < FILLS; j++) {
    m.set(`k${next++}`, j)
    evict(m)
  }
  const us = ((performance.now() - t0) * 1000) / FILLS
  console.log(`${name.padEnd(22)} ${us.toFixed(2)} µs per fill (${N} entries, ${FILLS} fills)`)
}
for (let round = 1; round <= 2; round++) {
  run('map.keys().next()', (m) => m.delete(m.keys().next().value))
  run('dropOldest (util)', dropOldest)
}
