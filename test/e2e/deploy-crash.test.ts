import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawn, type ChildProcess } from 'node:child_process'
import { Readable } from 'node:stream'
import { request } from 'undici'
import { ENGINES, PG_URL, dropSchema, insecureAgent } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { manifestOf, sha, tarOf, type Site } from '../support/deploys.js'
import { loadConfig } from '../../src/config.js'
import { createDeps } from '../../src/compose.js'
import type { Engine } from '../../src/db/kysely.js'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const bin = path.join(root, 'bin', 'svc')
const ROUNDS = 3

function serve(env: Record<string, string>, log: string): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const out = fs.openSync(log, 'a')
    const child = spawn(process.execPath, [bin, 'serve'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', out] })
    let buf = ''
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${buf}`)), 30_000)
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString()
      const m = /svc listening on (https:\/\/\S+) /.exec(buf)
      if (m) {
        clearTimeout(timer)
        resolve({ child, url: m[1].replace('localhost', '127.0.0.1') })
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`serve exited ${code}: ${buf}`))
    })
  })
}

/** A site of `n` pages and a few larger files, every one marked with its version. */
function siteOf(v: string, n: number): Site {
  const s: Site = { 'index.html': `<!doctype html><h1>${v}</h1>` }
  for (let i = 0; i < n; i++) s[`d${i % 20}/p${i}.html`] = `<p>${v} ${i} ${crypto.randomBytes(600).toString('hex')}</p>`
  for (let i = 0; i < 3; i++) s[`big${i}.bin`] = Buffer.concat([Buffer.from(v), crypto.randomBytes(1_500_000)])
  return s
}

// the engines' loops share nothing (a data folder, a schema, servers of their own), and a loop
// mostly waits (an archive sent slowly, a server's start): they run side by side
describe('kill -9 during a deploy', { concurrency: true }, () => {
  for (const engine of ENGINES) crashLoop(engine)
})

function crashLoop(engine: Engine): void {
  describe(`kill -9 during a deploy [${engine}]`, () => {
    it(`leaves the previous deploy live and intact (${ROUNDS} rounds)`, async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-deploy-crash-'))
      const schema = `dcrash_${crypto.randomBytes(4).toString('hex')}`
      const env: Record<string, string> = {
        DATA_DIR: dataDir,
        PORT: '0',
        HTTP_PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        RATE_LIMITS: HIGH_LIMITS,
        ...(engine === 'postgres' ? { DATABASE_URL: `${PG_URL}?schema=${schema}` } : {}),
      }
      const log = path.join(dataDir, 'server.log')
      let child: ChildProcess | null = null
      try {
        const deps0 = await createDeps(loadConfig(env))
        const user = await deps0.users.create('crashd', 'crash test password 1')
        const { key } = await deps0.apiKeys.create(user.id, { name: 'crash' })
        await deps0.close()
        const headers = { authorization: `Bearer ${key}` }
        const post = async (url: string, body: Buffer | Readable) => {
          const r = await request(`${url}/api/folders/site/deploys`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/x-tar' },
            body,
            dispatcher: insecureAgent,
          })
          return { status: r.statusCode, text: await r.body.text() }
        }

        const v1 = siteOf('VERSION-ONE', 400)
        let s = await serve(env, log)
        child = s.child
        const first = await post(s.url, await tarOf([manifestOf(v1), ...Object.entries(v1).map(([name, data]) => ({ name, data }))]))
        assert.equal(first.status, 201, first.text)

        for (let round = 0; round < ROUNDS; round++) {
          // the next version, sent slowly, and the server killed while it streams in
          const v2 = siteOf(`VERSION-NEXT-${round}`, 400)
          const archive = await tarOf([manifestOf(v2), ...Object.entries(v2).map(([name, data]) => ({ name, data }))])
          async function* slowly() {
            for (let i = 0; i < archive.length; i += 64 * 1024) {
              yield archive.subarray(i, i + 64 * 1024)
              await new Promise((r) => setTimeout(r, 20))
            }
          }
          const sending = post(s.url, Readable.from(slowly())).catch((e: Error) => ({ status: 0, text: e.message }))
          const exited = new Promise((r) => s.child.once('exit', r))
          await new Promise((r) => setTimeout(r, 200 + round * 400))
          s.child.kill('SIGKILL')
          await exited
          child = null
          const r = await sending
          assert.notEqual(r.status, 201, 'the deploy could not finish before the kill')

          s = await serve(env, log)
          child = s.child
          // the previous deploy answers whole: every page, byte for byte
          for (const [p, data] of Object.entries(v1)) {
            const g = await request(`${s.url}/crashd/site/${p}`, { dispatcher: insecureAgent })
            const body = Buffer.from(await g.body.arrayBuffer())
            assert.equal(g.statusCode, 200, `round ${round}: ${p}`)
            assert.equal(sha(body), sha(data), `round ${round}: ${p} is not the previous deploy's`)
          }
          const list = await request(`${s.url}/api/folders/site/deploys`, { headers, dispatcher: insecureAgent })
          const l = (await list.body.json()) as { deploys: Array<{ is_live: boolean }> }
          assert.equal(l.deploys.length, 1, `round ${round}: only the first deploy exists`)
          assert.ok(l.deploys[0].is_live)
        }
        s.child.kill('SIGTERM')
        await new Promise((r) => s.child.once('exit', r))
        child = null

        // no row without its blob, and each blob holds the bytes of its digest
        const deps = await createDeps(loadConfig(env))
        try {
          const digests = (await deps.db.k.selectFrom('deploy_files').select('digest').execute()).map((r) => r.digest)
          assert.equal(new Set(digests).size, Object.keys(v1).length)
          for (const d of new Set(digests)) assert.equal(sha(await deps.blobs.read(d)), d)
        } finally {
          await deps.close()
        }
      } finally {
        if (child) {
          const c = child
          const gone = new Promise((r) => c.once('exit', r))
          c.kill('SIGKILL')
          await gone
        }
        if (engine === 'postgres') await dropSchema(schema)
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })
}
