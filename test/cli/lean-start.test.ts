import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import url from 'node:url'

const root = path.resolve(path.dirname(url.fileURLToPath(import.meta.url)), '../..')

/**
 * Writes DIR/hooks.mjs: a module resolve hook that prints `PKG <name>` on stderr for each
 * package the service's own code (any module outside node_modules) resolves.
 */
function writeHooks(dir: string): string {
  const hooks = path.join(dir, 'hooks.mjs')
  fs.writeFileSync(
    hooks,
    `export async function resolve(spec, ctx, next) {
      const r = await next(spec, ctx)
      const m = /node_modules\\/((@[^/]+\\/)?[^/]+)/.exec(r.url)
      if (m && ctx.parentURL && !ctx.parentURL.includes('/node_modules/')) process.stderr.write('PKG ' + m[1] + '\\n')
      return r
    }`,
  )
  return hooks
}

/**
 * The packages (node_modules) a fresh process resolves from the service's own code while it
 * loads and builds the server as `svc serve` does (compiled dist/, SQLite, no Redis, no SMTP),
 * reported by a module resolve hook.
 */
function packagesLoadedByServe(): Set<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-lean-'))
  try {
    const hooks = writeHooks(dir)
    const dist = (f: string) => JSON.stringify(url.pathToFileURL(path.join(root, 'dist', 'src', f)).href)
    const code = `
      import { register } from 'node:module'
      register(${JSON.stringify(url.pathToFileURL(hooks).href)})
      const { loadConfig } = await import(${dist('config.js')})
      const { createDeps } = await import(${dist('compose.js')})
      const { buildApp } = await import(${dist('app.js')})
      const { serverFactoryFor } = await import(${dist('server.js')})
      const deps = await createDeps(loadConfig({ DATA_DIR: ${JSON.stringify(path.join(dir, 'data'))}, TRUST_PROXY: '1' }))
      const app = await buildApp(deps, { serverFactory: serverFactoryFor(null) })
      await app.ready()
      await app.close()
      await deps.close()
    `
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', env: { ...process.env, NODE_ENV: 'production' } })
    assert.equal(r.status, 0, r.stderr)
    return new Set([...r.stderr.matchAll(/^PKG (\S+)$/gm)].map((m) => m[1]))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The packages `bin/svc serve` (the bundle in dist/bin) resolves from node_modules until it
 * listens: those the bundle leaves out (scripts/bundle.mjs), as the same hook reports them.
 */
async function packagesLoadedByBundledServe(): Promise<Set<string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-lean-'))
  try {
    const hooks = writeHooks(dir)
    const register = path.join(dir, 'register.mjs')
    fs.writeFileSync(register, `import { register } from 'node:module'\nregister(${JSON.stringify(url.pathToFileURL(hooks).href)})\n`)
    const child = spawn(process.execPath, ['--import', url.pathToFileURL(register).href, path.join(root, 'bin', 'svc'), 'serve'], {
      env: { ...process.env, NODE_ENV: 'production', DATA_DIR: path.join(dir, 'data'), PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const exited = new Promise((r) => child.once('exit', r))
    for (let i = 0; i < 600 && !/svc listening on/.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50))
    assert.match(out, /svc listening on/, err)
    child.kill('SIGTERM')
    await exited
    return new Set([...err.matchAll(/^PKG (\S+)$/gm)].map((m) => m[1]))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const HEAVY = ['sharp', '@modelcontextprotocol/sdk', 'nodemailer', 'pg', 'ioredis', '@aws-sdk/client-s3', '@aws-sdk/lib-storage']

// heavy packages load on first use only: a SQLite server without Redis or SMTP starts without them
describe('svc serve loads only what its settings use', () => {
  it('builds the server without sharp, the MCP SDK, nodemailer, pg, ioredis or the S3 client', () => {
    const loaded = packagesLoadedByServe()
    assert.ok(loaded.has('fastify') && loaded.has('better-sqlite3'), `the hook saw the server's own packages: ${[...loaded].join(', ')}`)
    for (const heavy of HEAVY) assert.ok(!loaded.has(heavy), `${heavy} was loaded at start`)
  })

  it('bin/svc serve (the bundle) listens without them too', async () => {
    const loaded = await packagesLoadedByBundledServe()
    // fastify is inside the bundle: only what it leaves out is resolved from node_modules
    assert.ok(loaded.has('better-sqlite3') && !loaded.has('fastify'), `packages resolved: ${[...loaded].join(', ')}`)
    for (const heavy of HEAVY) assert.ok(!loaded.has(heavy), `${heavy} was loaded at start`)
  })
})

/**
 * The packages a client command (`svc ARGS`, the compiled dist/src entry point) resolves from
 * node_modules, as the same hook reports them; the server at SVC_URL refuses connections.
 */
function packagesLoadedByClient(args: string[], cwd: string): Set<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-lean-'))
  try {
    const hooks = writeHooks(dir)
    const code = `
      import { register } from 'node:module'
      register(${JSON.stringify(url.pathToFileURL(hooks).href)})
      const { main } = await import(${JSON.stringify(url.pathToFileURL(path.join(root, 'dist', 'src', 'cli', 'main.js')).href)})
      await main(${JSON.stringify(args)})
    `
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, HOME: dir, XDG_CONFIG_HOME: dir, SVC_URL: 'http://127.0.0.1:9', SVC_API_KEY: `svc_${'a'.repeat(60)}` },
    })
    return new Set([...r.stderr.matchAll(/^PKG (\S+)$/gm)].map((m) => m[1]))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

// the content-type table (mime-db, the largest part of the CLI's code) is read by svc deploy
// only: every other command's start went without it
describe('client commands load only what they use', () => {
  it('svc version, whoami, kv and deploys start without the content-type table; svc deploy loads it', () => {
    const site = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-lean-site-'))
    try {
      fs.writeFileSync(path.join(site, 'index.html'), '<!doctype html><p>hi</p>')
      for (const args of [['version'], ['whoami'], ['kv', 'list'], ['deploys', 'list']]) {
        const loaded = packagesLoadedByClient(args, site)
        assert.ok(!loaded.has('mime-types') && !loaded.has('mime-db'), `svc ${args.join(' ')} loaded: ${[...loaded].join(', ')}`)
      }
      const deploy = packagesLoadedByClient(['deploy', '.', '--dry-run'], site)
      assert.ok(deploy.has('mime-types'), `svc deploy loaded: ${[...deploy].join(', ')}`)
    } finally {
      fs.rmSync(site, { recursive: true, force: true })
    }
  })
})

/** Voluntary context switches of a process's main thread: each is the event loop going to sleep. */
const sleeps = (pid: number): number => Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))![1])

// an idle server sleeps: only its timers wake it (the event-loop delay sampler was a 10 ms one)
describe('an idle svc serve', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  it('wakes its event loop fewer than 20 times a second', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-idle-'))
    const child = spawn(process.execPath, [path.join(root, 'bin', 'svc'), 'serve'], {
      env: { ...process.env, NODE_ENV: 'production', DATA_DIR: path.join(dir, 'data'), PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    const exited = new Promise((r) => child.once('exit', r))
    try {
      for (let i = 0; i < 600 && !/svc listening on/.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50))
      assert.match(out, /svc listening on/)
      await new Promise((r) => setTimeout(r, 1000))
      const before = sleeps(child.pid!)
      await new Promise((r) => setTimeout(r, 2000))
      const perSecond = (sleeps(child.pid!) - before) / 2
      assert.ok(perSecond < 20, `the idle server's event loop woke ${perSecond} times a second`)
    } finally {
      child.kill('SIGTERM')
      await exited
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
