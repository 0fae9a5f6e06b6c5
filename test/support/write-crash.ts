import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import url from 'node:url'
import crypto from 'node:crypto'
import { spawn, type ChildProcess } from 'node:child_process'
import { Agent, request } from 'undici'
import { sql } from 'kysely'
import { ENGINES, PG_URL, dropSchema, multipart } from './server.js'
import type { Engine } from '../../src/db/kysely.js'
import { HIGH_LIMITS } from './hosting.js'
import { loadConfig } from '../../src/config.js'
import { createDeps } from '../../src/compose.js'
import { referencedDigests, sweepBlobs } from '../../src/storage/sweeper.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'
import { assertUsageExact } from './quota-race.js'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const ROUNDS = Number(process.env.WRITE_CRASH_ROUNDS ?? 20)
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

/**
 * `svc serve` behind a (pretend) TLS proxy: plain HTTP, so each submit can carry its own client
 * address. The child loads the server's code at once (the bundle's serve.js, which bin/svc
 * runs) but runs bin/svc's entry point (which opens the database) only on `go()`: the next
 * round's process is spawned while the current one works, and only the start after the kill
 * (recovery, migrations check, listen) stays on the round's path. Loading code is most of a
 * start and touches no data.
 */
function spawnServer(env: Record<string, string>, log: string): { child: ChildProcess; go(): Promise<string> } {
  const dist = (f: string) => JSON.stringify(url.pathToFileURL(path.join(root, 'dist', 'bin', f)).href)
  const code = [
    `await import(${dist('serve.js')})`,
    // the test went away: nothing to wait for
    `process.stdin.once('end', () => process.exit(0))`,
    `process.stdin.once('data', () => import(${dist('main.js')}).then((m) => m.main(['serve'])).catch((e) => { console.error(e); process.exit(1) }))`,
  ].join('\n')
  const out = fs.openSync(log, 'a')
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', out] })
  fs.closeSync(out)
  let buf = ''
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString()
      const m = /svc listening on (https?:\/\/\S+) /.exec(buf)
      if (m) resolve(m[1].replace('localhost', '127.0.0.1'))
    })
    child.once('exit', (code) => {
      const tail = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').slice(-2000) : ''
      reject(new Error(`serve exited ${code}: ${buf}\n${tail}`))
    })
  })
  listening.catch(() => {})
  return {
    child,
    go() {
      child.stdin!.write('go\n')
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`serve did not start: ${buf}`)), 120_000)
      })
      return Promise.race([listening, late]).finally(() => clearTimeout(timer))
    },
  }
}

/**
 * Values sent for one key or file, in order; `acked` is how many of them got a 200 (the last
 * acknowledged is `sent[acked - 1]`). `log` says what became of each, for a failure message.
 */
interface History {
  sent: string[]
  acked: number
  log: string[]
}

function historyOf(m: Map<string, History>, k: string): History {
  let h = m.get(k)
  if (!h) m.set(k, (h = { sent: [], acked: 0, log: [] }))
  return h
}

/**
 * The values a key or file may hold after the crashes: the last acknowledged one, or any sent
 * after it. A worker sends one value of a key at a time, so every value after the last
 * acknowledged was the one in flight at some kill: its commit may have run with the answer
 * lost, and that can happen to the same key in several rounds before it is acknowledged again
 * (a name is reused, and the kill may come before its first answer). The latest of those
 * commits wins: a round's server starts after the previous one is dead. Nothing acknowledged:
 * any value sent, or none.
 */
function mayHold(h: History, v: string | undefined): boolean {
  if (h.acked === 0) return v === undefined || h.sent.includes(v)
  return v !== undefined && h.sent.slice(h.acked - 1).includes(v)
}

/** The failure message for a key or file holding `v`: its value history since the last acknowledged. */
function explain(what: string, h: History, v: string | undefined): string {
  const from = Math.max(0, h.acked - 1)
  return `${what} holds ${v ?? 'nothing'}; sent since the last acknowledged (#${h.acked}): ${h.log.slice(from).join(', ')}`
}

/**
 * A server killed with SIGKILL ROUNDS times while incr, store, form submit and upload run;
 * each engine has its own test file (write-crash-sqlite, write-crash-postgres), so each gets
 * the runner's whole per-file time.
 */
export function writeCrashSuite(engine: Engine): void {
  describe(`kill -9 during acknowledged writes [${engine}]`, { skip: !ENGINES.includes(engine) && `engine ${engine} not in this run` }, () => {
    it(`loses no acknowledged incr, store, form submission or upload; counters stay exact (${ROUNDS} rounds)`, { timeout: 900_000 }, async (t) => {
      const seed = Number(process.env.CRASH_SEED ?? Date.now() % 1e9)
      const rand = rng(seed)
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-write-crash-'))
      const schema = `wcrash_${crypto.randomBytes(4).toString('hex')}`
      const env: Record<string, string> = {
        DATA_DIR: dataDir,
        PORT: '0',
        HTTP_PORT: '0',
        HOST: '127.0.0.1',
        TRUST_PROXY: '1',
        LOG_LEVEL: 'warn',
        RATE_LIMITS: HIGH_LIMITS,
        ...(engine === 'postgres' ? { DATABASE_URL: `${PG_URL}?schema=${schema}` } : {}),
      }
      const log = path.join(dataDir, 'server.log')
      const agent = new Agent({ keepAliveTimeout: 1000, connections: 32 })
      let incrSent = 0
      let incrAcked = 0
      let incrMaxSeen = 0
      const stores = new Map<string, History>()
      const uploads = new Map<string, History>()
      const submissions: string[] = []
      let lostAnswers = 0
      let startMs = 0
      let roundMs = 0
      let child: ChildProcess | null = null
      let spare: ReturnType<typeof spawnServer> | null = null
      try {
        const deps0 = await createDeps(loadConfig(env))
        const user = await deps0.users.create('crashy', 'crash test password 1')
        await deps0.users.update('crashy', { limits: { kv_keys: 1_000_000, form_submissions_month: 1_000_000_000 } })
        const { key } = await deps0.apiKeys.create(user.id, { name: 'crash' })
        await deps0.close()
        const auth = { authorization: `Bearer ${key}`, 'x-forwarded-proto': 'https' }
        let formSlug = ''

        spare = spawnServer(env, log)
        for (let round = 0; round < ROUNDS; round++) {
          const started = Date.now()
          const s = spare
          child = s.child
          const base = await s.go()
          startMs += Date.now() - started
          // the next round's process loads its modules while this one works
          spare = spawnServer(env, log)
          const call = async (p: string, body: string | Buffer, headers: Record<string, string>) => {
            const r = await request(base + p, { method: 'POST', headers: { 'x-forwarded-proto': 'https', ...headers }, body, dispatcher: agent })
            return { status: r.statusCode, text: await r.body.text() }
          }
          const json = (p: string, body: unknown, extra: Record<string, string> = auth) =>
            call(p, JSON.stringify(body), { ...extra, 'content-type': 'application/json' })
          if (round === 0) {
            formSlug = `crash-${crypto.randomBytes(3).toString('hex')}`
            const f = await json('/svc_api/forms/create', { form_name: 'Crash', form_slug: formSlug })
            assert.equal(f.status, 200, f.text)
          }
          let stop = false
          /**
           * Resolves once each kind of write (incr, store, submit, upload) was acknowledged in
           * this round: the kill comes a random delay after that, so every round cuts off writes
           * of every kind. (An upload waits for the user's lock behind the stores and submissions.)
           */
          const kinds = new Set<string>()
          let allKinds!: () => void
          const everyKindAcked = new Promise<void>((resolve) => (allKinds = resolve))
          const acked = (kind: string) => {
            kinds.add(kind)
            if (kinds.size === 4) allKinds()
          }
          /** A failure after the kill is expected; before it, every write must succeed. */
          const expect200 = (what: string, r: { status: number; text: string }) => {
            if (r.status !== 200 && !stop) throw new Error(`${what} answered ${r.status}: ${r.text}`)
            return r.status === 200
          }
          const guard = async (fn: () => Promise<void>) => {
            try {
              await fn()
            } catch (e) {
              if (!stop) throw e
            }
          }
          const incrWorker = async () => {
            while (!stop) {
              incrSent++
              await guard(async () => {
                const r = await json('/svc_api/data/incr', { key: 'hot' })
                if (expect200('incr', r)) {
                  acked('incr')
                  incrAcked++
                  incrMaxSeen = Math.max(incrMaxSeen, JSON.parse(r.text).data.value)
                }
              })
            }
          }
          /** Sends `value` for one key or file and notes what became of it (acknowledged, refused, no answer). */
          const send = async (h: History, value: string, what: string, fn: () => Promise<{ status: number; text: string }>) => {
            h.sent.push(value)
            const n = h.sent.length
            const note = `#${n} (round ${round}) ${value.slice(0, 16)}`
            h.log.push(`${note} sent`)
            let r: { status: number; text: string }
            try {
              r = await fn()
            } catch (e) {
              h.log[n - 1] = `${note} no answer (${(e as Error).message})`
              if (!stop) throw e
              return
            }
            h.log[n - 1] = `${note} ${r.status === 200 ? 'acknowledged' : `answered ${r.status}`}`
            if (!expect200(what, r)) return
            acked(what)
            h.acked = n
          }
          const storeWorker = async (w: number) => {
            for (let i = 0; !stop; i++) {
              // a worker owns its keys and sends their values one after another
              const k = `w${w}k${i % 5}`
              const value = `${round}:${i}:${crypto.randomBytes(4).toString('hex')}`
              await send(historyOf(stores, k), value, 'store', () => json('/svc_api/data/store', { key: k, value }))
            }
          }
          const submitWorker = async (w: number) => {
            for (let i = 0; !stop; i++) {
              await guard(async () => {
                const ip = `10.${round}.${w}.${i % 250}`
                const r = await json(`/api/forms/submit/${formSlug}`, { n: `${round}-${w}-${i}` }, { 'x-forwarded-for': ip })
                if (expect200('submit', r)) {
                  acked('submit')
                  submissions.push(JSON.parse(r.text).data.submission_id)
                }
              })
            }
          }
          const uploadWorker = async (w: number) => {
            for (let i = 0; !stop; i++) {
              // as with stores: a worker owns its names (reused every fourth round)
              const name = `r${round % 4}w${w}n${i % 3}.html`
              const content = `<!doctype html><p>${crypto.randomBytes(Math.floor(rand() * 8000) + 100).toString('hex')}</p>`
              const mp = multipart([{ name: 'file', filename: name, type: 'text/html', data: content }])
              await send(historyOf(uploads, name), sha(content), 'upload', () => call('/svc_api/upload', mp.body, { ...auth, 'content-type': mp.contentType }))
            }
          }
          const work = Promise.all([...[0, 1, 2, 3].map(incrWorker), ...[0, 1, 2].map(storeWorker), ...[0, 1].map(submitWorker), ...[0, 1].map(uploadWorker)])
          const exited = new Promise((r) => s.child.once('exit', r))
          let timer: NodeJS.Timeout | undefined
          await Promise.race([everyKindAcked, new Promise((r) => (timer = setTimeout(r, 20_000)))])
          clearTimeout(timer)
          await new Promise((r) => setTimeout(r, Math.floor(rand() * 1000)))
          stop = true
          s.child.kill('SIGKILL')
          await exited
          child = null
          await work
          roundMs += Date.now() - started
        }
        spare.child.kill('SIGKILL')
        spare = null

        // the data as the next start finds it (opening runs SQLite's WAL recovery)
        const deps = await createDeps(loadConfig(env))
        try {
          const db = deps.db.k
          const u = await db.selectFrom('users').select('id').where('username', '=', 'crashy').executeTakeFirstOrThrow()
          const kv = new Map((await db.selectFrom('kv_entries').select(['key', 'value']).where('user_id', '=', u.id).execute()).map((r) => [r.key, r.value]))
          const hot = kv.has('hot') ? JSON.parse(kv.get('hot')!) : 0
          assert.ok(incrAcked > 0, `seed ${seed}: some increments were acknowledged`)
          assert.ok(hot >= incrAcked && hot >= incrMaxSeen, `seed ${seed}: hot is ${hot}, ${incrAcked} increments were acknowledged (highest ${incrMaxSeen})`)
          assert.ok(hot <= incrSent, `seed ${seed}: hot is ${hot}, only ${incrSent} were sent`)
          let ackedStores = 0
          for (const [k, h] of stores) {
            const v = kv.has(k) ? (JSON.parse(kv.get(k)!) as string) : undefined
            if (h.acked > 0) ackedStores++
            assert.ok(mayHold(h, v), `seed ${seed}: ${explain(k, h, v)}`)
            if (h.acked > 0 && v !== h.sent[h.acked - 1]) lostAnswers++
          }
          assert.ok(ackedStores > 0)
          // the key counter counts exactly the rows
          const usage = await db.selectFrom('kv_usage').select('keys').where('user_id', '=', u.id).executeTakeFirstOrThrow()
          assert.equal(Number(usage.keys), kv.size, `seed ${seed}: kv_usage`)
          // and every other quota counter (the form, the API key) counts exactly its rows
          await assertUsageExact(db, u.id, `seed ${seed}: usage counters`)

          // every acknowledged submission is there, and the monthly counter counts exactly the rows
          assert.ok(submissions.length > 0)
          const subs = new Set((await db.selectFrom('form_submissions').select('id').where('user_id', '=', u.id).execute()).map((r) => r.id))
          for (const id of submissions) assert.ok(subs.has(id), `seed ${seed}: acknowledged submission ${id} is missing`)
          const month = await db
            .selectFrom('form_usage')
            .select((eb) => eb.fn.sum<number | string>('submissions').as('n'))
            .where('user_id', '=', u.id)
            .executeTakeFirstOrThrow()
          assert.equal(Number(month.n), subs.size, `seed ${seed}: form_usage`)
          const seqs = await db.selectFrom('form_submissions').select('seq').orderBy('seq').execute()
          assert.deepEqual(
            seqs.map((r) => Number(r.seq)),
            Array.from({ length: seqs.length }, (_, i) => i + 1),
            'submission numbers have no gap and no duplicate',
          )

          // every acknowledged upload is there, byte-identical, and no row points to a missing blob
          const files = new Map(
            (await db.selectFrom('files').select(['file_name', 'digest']).where('user_id', '=', u.id).execute()).map((r) => [r.file_name, r.digest]),
          )
          let ackedUploads = 0
          for (const [name, h] of uploads) {
            const d = files.get(name)
            if (h.acked > 0) ackedUploads++
            assert.ok(mayHold(h, d), `seed ${seed}: ${explain(name, h, d)}`)
            if (h.acked > 0 && d !== h.sent[h.acked - 1]) lostAnswers++
          }
          assert.ok(ackedUploads > 0)
          for (const name of files.keys()) assert.ok(uploads.has(name), `seed ${seed}: a file ${name} no request uploaded`)
          const refs = await referencedDigests(deps.db, BLOB_COLUMNS)
          for (const d of refs) assert.equal(sha(await deps.blobs.read(d)), d, `seed ${seed}: blob ${d}`)
          // what the crashes left (blobs of uploads whose row never committed or was replaced,
          // temp files of uploads cut off) is garbage the sweeper finds: after a sweep the store
          // holds exactly the referenced blobs and no temp file
          await sweepBlobs(deps.db, deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
          const stored = new Set<string>()
          for await (const b of deps.blobs.list()) stored.add(b.digest)
          assert.deepEqual([...stored].sort(), [...refs].sort(), `seed ${seed}: blobs after a sweep`)
          assert.deepEqual(fs.readdirSync(path.join(dataDir, 'blobs', 'tmp')), [], `seed ${seed}: temp files after a sweep`)
          t.diagnostic(
            `seed ${seed}: ${ROUNDS} rounds, start after a kill ${Math.round(startMs / ROUNDS)} ms, round ${Math.round(roundMs / ROUNDS)} ms; ` +
              `acknowledged: ${incrAcked} incr, ${ackedStores} keys, ${submissions.length} submissions, ${ackedUploads} files; ` +
              `${lostAnswers} keys or files hold a value whose answer the kill cut off`,
          )
          if (engine === 'sqlite') {
            const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(db)
            assert.equal(check.rows[0].integrity_check, 'ok')
          }
        } finally {
          await deps.close()
        }
      } finally {
        if (child) child.kill('SIGKILL')
        if (spare) spare.child.kill('SIGKILL')
        await agent.close()
        if (engine === 'postgres') await dropSchema(schema)
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })
}
