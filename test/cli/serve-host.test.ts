import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import url from 'node:url'

const root = path.resolve(path.dirname(url.fileURLToPath(import.meta.url)), '../..')

/** Whether a TCP connection to host:port is accepted ('refused' when nothing listens there). */
function connect(host: string, port: number): Promise<'accepted' | 'refused'> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port })
    s.once('connect', () => {
      s.destroy()
      resolve('accepted')
    })
    s.once('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNREFUSED' ? resolve('refused') : reject(e)))
  })
}

/** `svc serve` started in a fresh data folder (`nodeArgs` before bin/svc): its output so far, and stop(). */
function startServe(extraEnv: NodeJS.ProcessEnv, nodeArgs: string[] = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-host-'))
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: path.join(dir, 'data'), PORT: '0', HTTP_PORT: '0', ...extraEnv }
  for (const [k, v] of Object.entries(extraEnv)) if (v === undefined) delete env[k]
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'bin', 'svc'), 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const io = { out: '', err: '' }
  child.stdout.on('data', (d) => (io.out += d))
  child.stderr.on('data', (d) => (io.err += d))
  const exited = new Promise((r) => child.once('exit', r))
  return {
    io,
    /** Waits up to 30 s for `ready()` while the process runs. */
    async until(ready: () => boolean) {
      for (let i = 0; i < 600 && !ready() && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50))
    },
    async stop() {
      child.kill('SIGTERM')
      await exited
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

// decision 61: without HOST the one-command start is reachable from this machine only
describe('svc serve without HOST', () => {
  it('listens on loopback only, and says so', async () => {
    const serve = startServe({ LOG_LEVEL: 'warn', HOST: undefined })
    const { io } = serve
    try {
      await serve.until(() => /only this machine/.test(io.out))
      const m = /svc listening on https:\/\/localhost:(\d+) \(HTTP on http:\/\/localhost:(\d+)/.exec(io.out)
      assert.ok(m, `${io.out}\n${io.err}`)
      assert.match(io.out, /only this machine can connect \(HOST=127\.0\.0\.1\); HOST=0\.0\.0\.0 listens on every interface/)
      const ports = [Number(m[1]), Number(m[2])]
      for (const port of ports) assert.equal(await connect('127.0.0.1', port), 'accepted')
      // every other address of this machine is refused (the CI machine has at least one)
      const others = Object.values(os.networkInterfaces())
        .flat()
        .filter((a) => a !== undefined && a.family === 'IPv4' && !a.internal)
        .map((a) => a!.address)
      for (const host of others) for (const port of ports) assert.equal(await connect(host, port), 'refused', `${host}:${port}`)
    } finally {
      await serve.stop()
    }
  })
})

/** `svc serve` started with `nodeArgs` before bin/svc: its "heap growth" log line, parsed. */
async function heapGrowthLogged(nodeArgs: string[]): Promise<{ v8: string; from: string }> {
  const serve = startServe({ HOST: '127.0.0.1', LOG_LEVEL: 'info' }, nodeArgs)
  const line = () => serve.io.out.split('\n').find((l) => l.includes('"msg":"heap growth"'))
  try {
    await serve.until(() => line() !== undefined)
    const found = line()
    assert.ok(found, `${serve.io.out}\n${serve.io.err}`)
    const { v8, from } = JSON.parse(found) as { v8: string; from: string }
    return { v8, from }
  } finally {
    await serve.stop()
  }
}

// decision 342: the serving process lets its old space grow to twice the live size
describe("svc serve's V8 heap growth", () => {
  it('is set by svc serve itself', async () => {
    assert.deepEqual(await heapGrowthLogged([]), { v8: '--heap-growing-percent=100', from: 'svc' })
  })
  it("keeps the operator's own flag from node's command line", async () => {
    assert.deepEqual(await heapGrowthLogged(['--heap-growing-percent=300']), { v8: '--heap-growing-percent=300', from: 'the command line' })
  })
})
