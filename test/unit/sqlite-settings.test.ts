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
})
