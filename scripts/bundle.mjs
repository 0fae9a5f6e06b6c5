#!/usr/bin/env node
// Bundles the compiled CLI (dist/src/cli/main.js, made by tsc) with its JavaScript dependencies
// into dist/bin/, which bin/svc runs. Node 20 resolves and reads each of the ~1,500 files an
// unbundled `svc serve` imports one by one; the bundle is a few files, so every start of the
// service and of a client command is shorter (docs/benchmarks/2026-11-29-start-bundle.md).
// Dynamic imports stay separate chunks, loaded on first use as before (util/lazy.ts).
//
// Left out of the bundle and resolved from node_modules at run time: native addons, the heavy
// packages the service loads on first use only, and packages whose own files are read at run
// time (swagger-ui-dist's assets). dist/src stays: the benches and test/cli/lean-start import it.
import path from 'node:path'
import fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const final = path.join(root, 'dist', 'bin')
// built beside the old bundle, then swapped in: a `bin/svc` started meanwhile finds one whole
const outdir = `${final}.new`
fs.rmSync(outdir, { recursive: true, force: true })

await build({
  // serve.js is an entry of its own (dist/bin/serve.js, a stable name): main.js imports it on
  // `svc serve`, and a process can load it ahead of starting (test/support/write-crash.ts)
  entryPoints: [path.join(root, 'dist', 'src', 'cli', 'main.js'), path.join(root, 'dist', 'src', 'cli', 'serve.js')],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  external: [
    // native addons (the sendfile addon is found by sendfile.ts on disk)
    'better-sqlite3',
    'sharp',
    '@node-rs/argon2',
    // loaded on first use only (util/lazy.ts), as before: a server that never needs them
    // never reads them (test/cli/lean-start.test.ts checks the bundle too)
    '@modelcontextprotocol/sdk',
    'nodemailer',
    'pg',
    'pg-native',
    'ioredis',
    '@aws-sdk/*',
    // files read from its folder (features/docs)
    'swagger-ui-dist',
  ],
  // CommonJS dependencies inside an ES module bundle call require() for Node's built-ins
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" },
})
fs.rmSync(final, { recursive: true, force: true })
fs.renameSync(outdir, final)
