#!/usr/bin/env node
// Builds the optional native addon (native/sendfile: zero-copy sending for the public host)
// with node-gyp, from `npm install` (the prepare script). It needs g++, make, python3 and
// Node's headers; npm's own node-gyp is on PATH inside npm scripts. When the build cannot run
// (no compiler, not Linux) this prints why and exits 0: the service then copies bodies into
// the socket as before (src/http/sendfile.ts). SVC_NATIVE=0 skips the build.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dir = path.join(root, 'native', 'sendfile')
const out = path.join(dir, 'build', 'Release', 'svc_sendfile.node')

if (process.env.SVC_NATIVE === '0') {
  console.log('native addon: skipped (SVC_NATIVE=0)')
  process.exit(0)
}
if (process.platform !== 'linux') {
  console.log(`native addon: not built on ${process.platform} (it uses Linux's sendfile); bodies are copied`)
  process.exit(0)
}
// npm sets npm_config_node_gyp to its bundled node-gyp.js; outside npm, try one on PATH
const gyp = process.env.npm_config_node_gyp
const args = ['rebuild']
// build against this Node's own headers when it has them (no download of headers)
const prefix = path.resolve(path.dirname(process.execPath), '..')
if (!process.env.npm_config_nodedir && fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) args.push(`--nodedir=${prefix}`)
const [cmd, cmdArgs] = gyp ? [process.execPath, [gyp, ...args]] : ['node-gyp', args]
const r = spawnSync(cmd, cmdArgs, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' })
if (r.status === 0 && fs.existsSync(out)) {
  console.log(`native addon: built ${path.relative(root, out)}`)
  process.exit(0)
}
const why = r.error ? r.error.message : (r.stderr || r.stdout || '').trim().split('\n').slice(-8).join('\n')
console.warn(`native addon: not built; the public host will copy bodies into the socket (slower on large pages)\n${why}`)
process.exit(0)
