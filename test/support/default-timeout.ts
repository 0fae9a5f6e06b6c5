/**
 * Gives every test (`it`/`test` from node:test) a 60 s timeout unless it sets its own
 * `{ timeout }`. Loaded by scripts/run-tests.mjs with --import into each test file's process.
 *
 * Why not just --test-timeout: on Node 20 and 22 that flag times out a whole test *file*
 * (nodejs/node#57656, fixed per test in later releases), so a file of many fast tests would
 * fail as a unit and a hung test would be reported by file only. The runner keeps a file-level
 * --test-timeout as a backstop for hung hooks.
 */
import { createRequire, syncBuiltinESMExports } from 'node:module'

export const DEFAULT_TEST_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS ?? 60_000)

type AnyFn = (...args: unknown[]) => unknown
type TestFn = AnyFn & Record<string, unknown>

/** Adds { timeout } to a test's arguments ([name][, options][, fn]) when it has none. */
function withTimeout(args: unknown[]): unknown[] {
  const out = [...args]
  const o = out.findIndex((a) => typeof a === 'object' && a !== null)
  if (o >= 0) {
    const opts = out[o] as { timeout?: number }
    if (opts.timeout === undefined) out[o] = { ...opts, timeout: DEFAULT_TEST_TIMEOUT_MS }
    return out
  }
  const f = out.findIndex((a) => typeof a === 'function')
  out.splice(f >= 0 ? f : out.length, 0, { timeout: DEFAULT_TEST_TIMEOUT_MS })
  return out
}

function wrap(original: TestFn): TestFn {
  const wrapped = ((...args: unknown[]) => original(...withTimeout(args))) as TestFn
  for (const variant of ['skip', 'todo', 'only']) {
    const v = original[variant]
    if (typeof v === 'function') wrapped[variant] = (...args: unknown[]) => (v as AnyFn)(...withTimeout(args))
  }
  return wrapped
}

// node:test's ESM named exports mirror its CommonJS exports object; syncBuiltinESMExports
// publishes the replaced functions to every `import { it } from 'node:test'`.
const nodeTest = createRequire(import.meta.url)('node:test') as Record<string, TestFn>
nodeTest.it = wrap(nodeTest.it)
nodeTest.test = wrap(nodeTest.test)
syncBuiltinESMExports()
