// The CPU one request path costs in a site's rules (decisions 172, 210): `_redirects` files of
// LINES lines with placeholders (default the ceiling, 10,000), of three shapes, and a path that
// matches no line and one that matches the middle line. Prints µs per path for matchRedirect
// and queryNamesFor, the two calls a path not yet in the host cache makes.
//
//   npm run build && node bench/site-rules.mjs
//   LINES=2000 ROUNDS=500 node bench/site-rules.mjs
// Compare builds by running it in each checkout.
import { dist } from './lib/service.mjs'

const { parseRedirects, compileRules, matchRedirect, queryNamesFor } = await dist('features/sites/site-rules.js')
const LINES = Number(process.env.LINES ?? 10_000)
const ROUNDS = Number(process.env.ROUNDS ?? 200)
/** Each shape: its line, a path matching no line, and a path matching the middle line. */
const SHAPES = {
  'distinct first segment': [(i) => `/blog${i}/:slug /posts/:slug 301`, (i) => `/nothing/here-${i}`, (i) => `/blog${LINES >> 1}/p${i}`],
  'one first segment': [(i) => `/blog/:slug/x${i} /posts/:slug 301`, (i) => `/blog/p${i}/nothing`, (i) => `/blog/p${i}/x${LINES >> 1}`],
  'placeholder first': [(i) => `/:lang/x${i} /y/:lang 301`, (i) => `/nothing/here-${i}`, (i) => `/en${i}/x${LINES >> 1}`],
}
/** µs per call of fn over ROUNDS paths, after as many unmeasured (V8 compiling the path). */
const perPath = (fn) => {
  for (let i = 0; i < ROUNDS; i++) fn(i)
  const t = process.hrtime.bigint()
  for (let i = 0; i < ROUNDS; i++) fn(i)
  return (Number(process.hrtime.bigint() - t) / ROUNDS / 1e3).toFixed(1)
}
console.log(`${LINES} lines, ${ROUNDS} paths each; µs per path`)
for (const [shape, [line, missPath, hitPath]] of Object.entries(SHAPES)) {
  const rules = compileRules(parseRedirects(Array.from({ length: LINES }, (_, i) => line(i)).join('\n')), [])
  const miss = perPath((i) => matchRedirect(rules, missPath(i), false))
  const hit = perPath((i) => {
    if (matchRedirect(rules, hitPath(i), false) === null) throw new Error(`${shape}: ${hitPath(i)} matched no line`)
  })
  const names = perPath((i) => queryNamesFor(rules, missPath(i)))
  console.log(`${shape.padEnd(24)} matchRedirect miss ${miss.padStart(8)}  hit ${hit.padStart(8)}  queryNamesFor ${names.padStart(8)}`)
}
