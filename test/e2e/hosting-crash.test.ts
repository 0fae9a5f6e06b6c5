import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawn, type ChildProcess } from 'node:child_process'
import { request } from 'undici'
import { ENGINES, PG_URL, dropSchema, insecureAgent, multipart } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { loadConfig } from '../../src/config.js'
import { createDeps } from '../../src/compose.js'
import type { Engine } from '../../src/db/kysely.js'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const bin = path.join(root, 'bin', 'svc')
const ROUNDS = 3
const sha = (b: Buffer | string) => crypto.createHash('sha256').update(b).digest('hex')

/** Small seeded PRNG (mulberry32) so a failing run can be replayed with CRASH_SEED. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

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

/** Versions sent for one name, in order; `acked` is how many of them got a 200. */
interface History {
  sent: string[]
  acked: number
}

// the engines' loops share nothing (a data folder, a schema, servers of their own), and a loop
// mostly waits (a server's start, the random time before a kill): they run side by side
describe('kill -9 during uploads', { concurrency: true }, () => {
  for (const engine of ENGINES) crashLoop(engine)
})

function crashLoop(engine: Engine): void {
  describe(`kill -9 during uploads [${engine}]`, () => {
    it(`keeps every acknowledged file byte-identical and never a row without its blob (${ROUNDS} rounds)`, async () => {
      const seed = Number(process.env.CRASH_SEED ?? Date.now() % 1e9)
      const rand = rng(seed)
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-crash-'))
      const schema = `crash_${crypto.randomBytes(4).toString('hex')}`
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
      const singles = new Map<string, History>()
      const batchFiles = new Map<string, History>()
      let child: ChildProcess | null = null
      try {
        // the account and its key, written straight to the database before the first start
        const deps0 = await createDeps(loadConfig(env))
        const user = await deps0.users.create('crashy', 'crash test password 1')
        const { key } = await deps0.apiKeys.create(user.id, { name: 'crash' })
        await deps0.close()
        const auth = { authorization: `Bearer ${key}` }

        for (let round = 0; round < ROUNDS; round++) {
          const s = await serve(env, log)
          child = s.child
          let stop = false
          const post = async (p: string, parts: Parameters<typeof multipart>[0]) => {
            const mp = multipart(parts)
            const r = await request(s.url + p, {
              method: 'POST',
              headers: { ...auth, 'content-type': mp.contentType },
              body: mp.body,
              dispatcher: insecureAgent,
            })
            const text = await r.body.text()
            return { status: r.statusCode, text }
          }
          const singleWorker = async (w: number) => {
            for (let i = 0; !stop; i++) {
              // a worker owns its names and sends their versions one after another
              const name = `r${round}w${w}n${i % 3}.html`
              const content = `<!doctype html><html><body><p>${crypto.randomBytes(Math.floor(rand() * 60_000) + 1000).toString('hex')}</p></body></html>`
              const h = singles.get(name) ?? { sent: [], acked: 0 }
              singles.set(name, h)
              h.sent.push(sha(content))
              try {
                const r = await post('/svc_api/upload', [{ name: 'file', filename: name, type: 'text/html', data: content }])
                if (r.status === 200) h.acked = h.sent.length
                else if (!stop) throw new Error(`upload answered ${r.status}: ${r.text}`)
              } catch (e) {
                if (!stop) throw e
              }
            }
          }
          const batchWorker = async (w: number) => {
            for (let i = 0; !stop; i++) {
              const folder = `r${round}b${w}`
              const files = Array.from({ length: 4 }, (_, j) => ({
                path: `d${j % 2}/f${j}-${i % 2}.txt`,
                data: crypto.randomBytes(Math.floor(rand() * 40_000) + 100).toString('base64'),
              }))
              const hs = files.map((f) => {
                const k = `${folder}/${f.path}`
                const h = batchFiles.get(k) ?? { sent: [], acked: 0 }
                batchFiles.set(k, h)
                h.sent.push(sha(f.data))
                return h
              })
              try {
                const r = await post(`/api/folders/${folder}/batch_upload`, [
                  { name: 'overwrite_files', data: 'true' },
                  ...files.map((f) => ({ name: 'files[]', filename: f.path, data: f.data })),
                ])
                if (r.status === 200) for (const h of hs) h.acked = h.sent.length
                else if (!stop) throw new Error(`batch answered ${r.status}: ${r.text}`)
              } catch (e) {
                if (!stop) throw e
              }
            }
          }
          const work = Promise.all([...[0, 1, 2, 3].map(singleWorker), ...[0, 1].map(batchWorker)])
          const exited = new Promise((r) => s.child.once('exit', r))
          await new Promise((r) => setTimeout(r, 300 + Math.floor(rand() * 900)))
          // the last round kills only once each kind has had an acknowledgement in some round, so
          // the checks below always have acknowledged files to check, however slow the machine
          const acked = (m: Map<string, History>) => [...m.values()].some((h) => h.acked > 0)
          for (let waited = 0; round === ROUNDS - 1 && !(acked(singles) && acked(batchFiles)) && waited < 30_000; waited += 50) {
            await new Promise((r) => setTimeout(r, 50))
          }
          stop = true
          s.child.kill('SIGKILL')
          await exited
          child = null
          await work
        }

        // restart once more and check everything through the running server and the data
        const s = await serve(env, log)
        child = s.child
        const get = async (p: string) => {
          const r = await request(s.url + p, { headers: auth, dispatcher: insecureAgent })
          return { status: r.statusCode, body: Buffer.from(await r.body.arrayBuffer()) }
        }
        let ackedSingles = 0
        for (const [name, h] of singles) {
          const r = await get(`/crashy/${encodeURIComponent(name)}`)
          if (h.acked === 0) {
            // never acknowledged: absent, or complete
            if (r.status === 200) assert.ok(h.sent.includes(sha(r.body)), `seed ${seed}: ${name} holds bytes never sent`)
            continue
          }
          ackedSingles++
          assert.equal(r.status, 200, `seed ${seed}: acknowledged ${name} is missing`)
          // the last acknowledged version, or the one in flight when the server died
          assert.ok(
            h.sent.slice(h.acked - 1, h.acked + 1).includes(sha(r.body)),
            `seed ${seed}: ${name} is not byte-identical to an acknowledged or in-flight version`,
          )
        }
        let ackedBatch = 0
        for (const [k, h] of batchFiles) {
          const [folder, ...rest] = k.split('/')
          const r = await get(`/api/folders/${folder}/file/${rest.join('/')}`)
          const content = r.status === 200 ? (JSON.parse(r.body.toString()).content as string) : null
          if (h.acked === 0) {
            if (content !== null) assert.ok(h.sent.includes(sha(content)), `seed ${seed}: ${k} holds bytes never sent`)
            continue
          }
          ackedBatch++
          assert.ok(content !== null, `seed ${seed}: acknowledged ${k} is missing (${r.status})`)
          assert.ok(h.sent.slice(h.acked - 1, h.acked + 1).includes(sha(content)), `seed ${seed}: ${k} differs from every acknowledged version`)
        }
        assert.ok(ackedSingles > 0 && ackedBatch > 0, `seed ${seed}: the load acknowledged something (${ackedSingles} files, ${ackedBatch} batch files)`)
        s.child.kill('SIGTERM')
        await new Promise((r) => s.child.once('exit', r))
        child = null

        // no row without its blob, and every blob holds exactly the bytes of its digest
        const deps = await createDeps(loadConfig(env))
        try {
          const digests = [
            ...(await deps.db.k.selectFrom('files').select('digest').execute()),
            ...(await deps.db.k.selectFrom('folder_files').select('digest').execute()),
          ].map((r) => r.digest)
          for (const d of new Set(digests)) assert.equal(sha(await deps.blobs.read(d)), d, `seed ${seed}: blob ${d}`)
          if (engine === 'sqlite') {
            const { sql } = await import('kysely')
            const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(deps.db.k)
            assert.equal(check.rows[0].integrity_check, 'ok')
          }
        } finally {
          await deps.close()
        }
      } finally {
        if (child) child.kill('SIGKILL')
        if (engine === 'postgres') await dropSchema(schema)
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })
}
