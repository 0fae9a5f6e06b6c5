// The database layer alone: 64 concurrent single-row update transactions on one SQLite file
// for SECONDS (default 5), as the service ran them before (synchronous=FULL, each commit's
// fsync on the event loop) and with the durability barrier (NORMAL, one shared fdatasync on
// the thread pool). Prints transactions/s, fsyncs per transaction and the event loop's p99
// and max delay (what every other request waits). Run: npx tsx bench/write-path-db.ts [ROUNDS]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import SQLite from 'better-sqlite3'
import { Kysely, SqliteDialect, sql } from 'kysely'
import { openDatabase } from '../src/db/kysely.js'

const seconds = Number(process.env.SECONDS_PER_RUN ?? 5)
const rounds = Number(process.argv[2] ?? 3)

async function run(mode: 'full' | 'barrier') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-db-'))
  let k: Kysely<any>
  let close: () => Promise<void>
  let syncs = () => 0
  if (mode === 'full') {
    const database = new SQLite(path.join(dir, 'svc.db'))
    database.pragma('journal_mode = WAL')
    database.pragma('synchronous = FULL')
    k = new Kysely<any>({ dialect: new SqliteDialect({ database }) })
    close = () => k.destroy()
  } else {
    const db = await openDatabase({ databaseUrl: null, dataDir: dir })
    let n = 0
    const real = (db.barrier as unknown as { sync: () => Promise<void> }).sync
    db.barrier!.setSync(() => (n++, real()))
    syncs = () => n
    k = db.k
    close = () => db.close()
  }
  await sql`create table t (k text primary key, v integer not null)`.execute(k)
  await sql`insert into t values ('hot', 0)`.execute(k)
  const h = monitorEventLoopDelay({ resolution: 1 })
  const s0 = syncs()
  h.enable()
  const t0 = performance.now()
  let done = 0
  const worker = async () => {
    while (performance.now() - t0 < seconds * 1000) {
      await k.transaction().execute((trx) => sql`update t set v = v + 1 where k = 'hot'`.execute(trx))
      done++
    }
  }
  await Promise.all(Array.from({ length: 64 }, worker))
  h.disable()
  const tps = Math.round((done / (performance.now() - t0)) * 1000)
  const perTx = mode === 'full' ? '1 (in the commit)' : ((syncs() - s0) / done).toFixed(3)
  // no sample at all: the loop never reached its timers (the writes kept it busy throughout)
  const loop = h.count === 0 ? 'never reached its timers' : `p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms, max ${(h.max / 1e6).toFixed(1)} ms`
  console.log(`${mode}\t${tps} tx/s\tfsyncs/tx ${perTx}\tevent loop delay: ${loop}`)
  await close()
  fs.rmSync(dir, { recursive: true, force: true })
}

for (let r = 0; r < rounds; r++) {
  await run('full')
  await run('barrier')
}
