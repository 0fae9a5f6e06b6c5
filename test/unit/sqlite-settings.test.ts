import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/kysely.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { FEATURE_TABLES } from '../../src/features/tables.js'

describe('SQLite settings', () => {
  it('uses WAL, synchronous=NORMAL behind the durability barrier, no autocheckpoint, a busy timeout and foreign keys', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-sqlite-'))
    const db = await openDatabase({ databaseUrl: null, dataDir: dir })
    try {
      await migrateToLatest(db, FEATURE_TABLES)
      const one = async (p: string) => Object.values((await sql.raw(`pragma ${p}`).execute(db.k)).rows[0] as object)[0]
      assert.equal(await one('journal_mode'), 'wal')
      assert.equal(await one('synchronous'), 1)
      assert.equal(await one('wal_autocheckpoint'), 0)
      assert.ok(db.barrier)
      assert.ok(Number(await one('busy_timeout')) > 0)
      assert.equal(await one('foreign_keys'), 1)
      // a second migrate is a no-op
      assert.deepEqual(await migrateToLatest(db, FEATURE_TABLES), [])
    } finally {
      await db.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('copies each burst of commits into the database file on its own, without a close', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-sqlite-'))
    const db = await openDatabase({ databaseUrl: null, dataDir: dir })
    // the rows' text, found in svc.db itself only once a checkpoint copied their pages there
    const inFile = (mark: string) => fs.readFileSync(path.join(dir, 'svc.db')).includes(mark)
    const settled = async (mark: string) => {
      for (let i = 0; i < 100 && !inFile(mark); i++) await new Promise((r) => setTimeout(r, 20))
      return inFile(mark)
    }
    try {
      await sql`create table t (v text not null)`.execute(db.k)
      for (const burst of ['first-burst-of-commits', 'second-burst-after-a-pause']) {
        for (let i = 0; i < 5; i++) await sql`insert into t (v) values (${`${burst}-${i}`})`.execute(db.k)
        assert.equal(inFile(`${burst}-4`), false, 'a commit reaches the WAL, not the database file')
        assert.ok(await settled(`${burst}-4`), `${burst}: checkpointed within 2 s`)
        // idle in between: the schedule has nothing to do until the next commit
        await new Promise((r) => setTimeout(r, 500))
      }
    } finally {
      await db.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('creates DATA_DIR for its owner only and the database files without access for other users', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-modes-'))
    const mode = (p: string) => fs.statSync(p).mode & 0o777
    const prev = process.umask(0o022)
    try {
      // a folder svc creates (and its missing parent): the owner only
      const made = path.join(root, 'srv', 'data')
      let db = await openDatabase({ databaseUrl: null, dataDir: made })
      await migrateToLatest(db, FEATURE_TABLES)
      for (const f of ['svc.db', 'svc.db-wal', 'svc.db-shm']) assert.equal(mode(path.join(made, f)) & 0o007, 0, `${f}: ${mode(path.join(made, f)).toString(8)}`)
      assert.equal(mode(path.join(made, 'svc.db')), 0o640)
      await db.close()
      assert.equal(mode(made), 0o700)
      assert.equal(mode(path.join(root, 'srv')), 0o700)

      // a folder the operator made keeps its mode; a database an older version left
      // world-readable loses that on open, group bits kept
      const own = path.join(root, 'own')
      fs.mkdirSync(own, { mode: 0o755 })
      fs.chmodSync(own, 0o755)
      db = await openDatabase({ databaseUrl: null, dataDir: own })
      await db.close()
      for (const f of ['svc.db', 'svc.db-wal', 'svc.db-shm']) if (fs.existsSync(path.join(own, f))) fs.chmodSync(path.join(own, f), 0o664)
      db = await openDatabase({ databaseUrl: null, dataDir: own })
      try {
        assert.equal(mode(own), 0o755)
        for (const f of ['svc.db', 'svc.db-wal', 'svc.db-shm']) assert.equal(mode(path.join(own, f)), 0o660, f)
      } finally {
        await db.close()
      }
    } finally {
      process.umask(prev)
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})
