import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { openDatabase, isUniqueViolation, type Db } from '../../src/db/kysely.js'
import { DurabilityBarrier, DurabilityError, walSyncer } from '../../src/db/durability.js'

/** A SQLite database in a temp folder with one table `t (k text primary key, v integer)`. */
async function withDb(fn: (db: Db) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-barrier-'))
  const db = await openDatabase({ databaseUrl: null, dataDir: dir })
  try {
    await sql`create table t (k text primary key, v integer not null)`.execute(db.k)
    await fn(db)
  } finally {
    await db.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Counts the syncs of the real WAL fdatasync, and can make the next ones fail. */
function instrument(db: Db, real: () => Promise<void>) {
  const st = { syncs: 0, failNext: 0 }
  db.barrier!.setSync(async () => {
    st.syncs++
    if (st.failNext > 0) {
      st.failNext--
      throw Object.assign(new Error('EIO: i/o error, fdatasync (injected)'), { code: 'EIO' })
    }
    await real()
  })
  return st
}

const insert = (db: Db, k: string, v = 1) => db.k.transaction().execute((trx) => sql`insert into t (k, v) values (${k}, ${v})`.execute(trx))
const count = async (db: Db) => Number((await sql<{ n: number }>`select count(*) as n from t`.execute(db.k)).rows[0].n)

describe('durability barrier', () => {
  it('acknowledges each write after a sync that started after its commit; concurrent commits share syncs', async () => {
    const order: string[] = []
    let release: (() => void) | null = null
    const b = new DurabilityBarrier(async () => {
      order.push('sync')
      await new Promise<void>((r) => (release = r))
    })
    const s1 = b.commit()
    const w1 = b.wait(s1).then(() => order.push('w1'))
    await new Promise((r) => setImmediate(r))
    // committed while the first sync runs: must wait for the second one
    const s2 = b.commit()
    const s3 = b.commit()
    const w2 = b.wait(s2).then(() => order.push('w2'))
    const w3 = b.wait(s3).then(() => order.push('w3'))
    release!()
    await w1
    await new Promise((r) => setImmediate(r))
    // the second sync started; w2 and w3 are still waiting for it
    assert.deepEqual(order, ['sync', 'sync', 'w1'])
    release!()
    await Promise.all([w2, w3])
    assert.deepEqual(order, ['sync', 'sync', 'w1', 'w2', 'w3'])
    assert.equal(b.pending(), 0)
  })

  it('groups the commits of concurrent transactions and keeps every one', async () => {
    await withDb(async (db) => {
      const real = (db.barrier as unknown as { sync: () => Promise<void> }).sync
      const st = instrument(db, real)
      await Promise.all(Array.from({ length: 200 }, (_, i) => insert(db, `k${i}`)))
      assert.equal(await count(db), 200)
      assert.ok(st.syncs >= 1 && st.syncs < 200, `200 commits took ${st.syncs} syncs`)
      // autocommit statements outside a transaction wait for the barrier too
      const before = st.syncs
      await sql`insert into t (k, v) values ('solo', 1)`.execute(db.k)
      assert.equal(st.syncs, before + 1)
      // reads never wait for a sync
      await sql`select * from t`.execute(db.k)
      await db.k.transaction().execute((trx) => sql`select count(*) from t`.execute(trx))
      assert.equal(st.syncs, before + 1)
    })
  })

  it('a row statement that touches no row waits for no sync; one that touches a row, or DDL, does', async () => {
    await withDb(async (db) => {
      const real = (db.barrier as unknown as { sync: () => Promise<void> }).sync
      const st = instrument(db, real)
      await insert(db, 'here')
      const after = st.syncs
      // nothing written: an update or delete of a missing row, an insert refused by its conflict clause
      await sql`update t set v = 2 where k = 'missing'`.execute(db.k)
      await sql`delete from t where k = 'missing' returning k`.execute(db.k)
      await sql`insert into t (k, v) values ('here', 9) on conflict do nothing returning k`.execute(db.k)
      await db.k.transaction().execute(async (trx) => {
        await sql`update t set v = 3 where k = 'missing'`.execute(trx)
        await sql`insert into t (k, v) values ('here', 9) on conflict do nothing`.execute(trx)
      })
      assert.equal(st.syncs, after, 'statements that wrote nothing waited for a sync')
      // written: each waits for its sync (a RETURNING statement that returned its row, a plain update, DDL)
      await sql`update t set v = 4 where k = 'here' returning k`.execute(db.k)
      assert.equal(st.syncs, after + 1)
      await db.k.transaction().execute(async (trx) => {
        await sql`update t set v = 3 where k = 'missing'`.execute(trx)
        await sql`update t set v = 5 where k = 'here'`.execute(trx)
      })
      assert.equal(st.syncs, after + 2)
      await sql`create table u (x integer)`.execute(db.k)
      assert.equal(st.syncs, after + 3)
      assert.deepEqual((await sql<{ v: number }>`select v from t where k = 'here'`.execute(db.k)).rows, [{ v: 5 }])
    })
  })

  it('fails only the transaction with a constraint error in a group; the next group works', async () => {
    await withDb(async (db) => {
      await insert(db, 'taken')
      const results = await Promise.allSettled([insert(db, 'a'), insert(db, 'b'), insert(db, 'taken'), insert(db, 'c'), insert(db, 'd')])
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      )
      assert.ok(isUniqueViolation((results[2] as PromiseRejectedResult).reason))
      assert.equal(await count(db), 5)
      await Promise.all(['e', 'f', 'g'].map((k) => insert(db, k)))
      assert.equal(await count(db), 8)
    })
  })

  it('rejects the writes a failed fsync covered with DurabilityError, then recovers by a full checkpoint', async () => {
    await withDb(async (db) => {
      const real = (db.barrier as unknown as { sync: () => Promise<void> }).sync
      const st = instrument(db, real)
      await insert(db, 'before')
      st.failNext = 1
      const failed = await Promise.allSettled(['x1', 'x2', 'x3'].map((k) => insert(db, k)))
      // the first write's sync failed; all three may share it, or the later ones ride the recovery
      assert.equal(failed[0].status, 'rejected')
      for (const r of failed) if (r.status === 'rejected') assert.ok(r.reason instanceof DurabilityError, String(r.reason))
      // the next batch works, and so does everything after it
      await Promise.all(['y1', 'y2'].map((k) => insert(db, k)))
      await insert(db, 'z')
      const keys = (await sql<{ k: string }>`select k from t order by k`.execute(db.k)).rows.map((r) => r.k)
      for (const k of ['before', 'y1', 'y2', 'z']) assert.ok(keys.includes(k), `${k} is kept`)
      // the rejected commits did commit: the error says durability is unknown, not that the write was undone
      assert.ok(['x1', 'x2', 'x3'].every((k) => keys.includes(k)))
    })
  })

  it('stays failed while recovery fails, and recovers once it works', async () => {
    let fail = 2
    let recovered = 0
    const b = new DurabilityBarrier(
      async () => {
        if (fail > 0) {
          fail--
          throw new Error('EIO')
        }
      },
      async () => {
        recovered++
      },
    )
    await assert.rejects(b.wait(b.commit()), DurabilityError)
    await assert.rejects(b.wait(b.commit()), DurabilityError)
    await b.wait(b.commit())
    assert.equal(recovered, 2, 'each sync after a failure first runs the recovery')
    await b.wait(b.commit())
    assert.equal(recovered, 2, 'a healthy barrier does not recover again')
  })

  it('the WAL syncer fails when the path cannot be checked, rather than skipping the sync', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-walsync-'))
    // a file where the database's folder should be: stat of its WAL fails with ENOTDIR, not ENOENT
    const notDir = path.join(dir, 'file')
    fs.writeFileSync(notDir, 'x')
    const syncer = walSyncer(path.join(notDir, 'x.db'))
    try {
      await assert.rejects(syncer.sync(), { code: 'ENOTDIR' })
    } finally {
      syncer.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('the WAL syncer follows the file at the path: a replaced WAL is synced, a removed one is not', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-walsync-'))
    const db = path.join(dir, 'x.db')
    const synced: number[] = []
    const real = fs.fdatasync
    // durability.ts calls fs.fdatasync through the same module object: record which file each sync covers
    fs.fdatasync = ((fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
      synced.push(fs.fstatSync(fd).ino)
      real(fd, cb)
    }) as typeof fs.fdatasync
    const syncer = walSyncer(db)
    try {
      await syncer.sync()
      assert.deepEqual(synced, [], 'no WAL file: nothing to sync')
      fs.writeFileSync(`${db}-wal`, 'first')
      const first = fs.statSync(`${db}-wal`).ino
      await syncer.sync()
      await syncer.sync()
      assert.deepEqual(synced, [first, first])
      // a new file under the name (the old one unlinked while still open)
      fs.renameSync(`${db}-wal`, path.join(dir, 'held'))
      fs.writeFileSync(`${db}-wal`, 'second')
      fs.rmSync(path.join(dir, 'held'))
      const second = fs.statSync(`${db}-wal`).ino
      assert.notEqual(second, first)
      await syncer.sync()
      assert.deepEqual(synced, [first, first, second])
      fs.rmSync(`${db}-wal`)
      await syncer.sync()
      assert.deepEqual(synced, [first, first, second], 'a removed WAL is not synced')
    } finally {
      fs.fdatasync = real
      syncer.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
