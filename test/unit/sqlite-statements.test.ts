import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import { openDatabase, type Db } from '../../src/db/kysely.js'

// The SQLite writer connection keeps prepared statements by SQL text (src/db/sqlite-writer.ts):
// each text is prepared once, results stay right whatever the parameters, the cache is bounded,
// and a schema change drops it; the connection's change stamp moves only for writes that name
// the watched tables, or another connection's commit.
describe('SQLite prepared statements', () => {
  let dir: string
  let db: Db
  const prepared = new Map<string, number>()
  // eslint-disable-next-line @typescript-eslint/unbound-method -- restored as is in after(), called with its this
  const real = SQLite.prototype.prepare
  before(async () => {
    SQLite.prototype.prepare = function (this: SQLite.Database, text: string) {
      prepared.set(text, (prepared.get(text) ?? 0) + 1)
      return real.call(this, text)
    } as typeof real
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-stmts-'))
    db = await openDatabase({ databaseUrl: null, dataDir: dir })
    await sql`create table t (k text primary key, v integer not null)`.execute(db.k)
  })
  after(async () => {
    SQLite.prototype.prepare = real
    await db.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const timesPrepared = (fragment: string) => [...prepared].filter(([t]) => t.includes(fragment)).reduce((n, [, c]) => n + c, 0)

  it('prepares a repeated query once and answers each call with its own parameters', async () => {
    for (let i = 0; i < 50; i++)
      await db.k
        .insertInto('t' as never)
        .values({ k: `k${i}`, v: i })
        .execute()
    for (let i = 0; i < 50; i++) {
      const rows = await db.k
        .selectFrom('t' as never)
        .select(sql<number>`v`.as('v'))
        .where(sql`k`, '=', `k${i}`)
        .execute()
      assert.deepEqual(rows, [{ v: i }])
    }
    assert.equal(timesPrepared('insert into "t"'), 1)
    assert.equal(timesPrepared('select v as "v" from "t"'), 1)
  })

  it('keeps at most 512 texts: the least recently used one is prepared again', async () => {
    await sql`select 1 as first_text`.execute(db.k)
    for (let i = 0; i < 600; i++) await sql.raw(`select ${i} as n`).execute(db.k)
    await sql`select 1 as first_text`.execute(db.k)
    assert.equal(timesPrepared('first_text'), 2)
  })

  it('drops the statements when the schema changes, so a cached select * sees a new column', async () => {
    const star = () => sql<Record<string, unknown>>`select * from t where k = ${'k1'}`.execute(db.k)
    assert.deepEqual(Object.keys((await star()).rows[0]).sort(), ['k', 'v'])
    await sql`alter table t add column w integer not null default 7`.execute(db.k)
    assert.deepEqual((await star()).rows[0], { k: 'k1', v: 1, w: 7 })
  })

  it("the change stamp moves on a write naming a watched table and on another connection's commit, not on other writes or reads", async () => {
    await sql`create table watched (k text primary key)`.execute(db.k)
    const stamp = db.changeStamp!(['watched'])
    const at = stamp()
    await db.k
      .insertInto('t' as never)
      .values({ k: 'other', v: 1 })
      .execute()
    await sql`select * from watched`.execute(db.k)
    assert.equal(stamp(), at, 'a write to another table, a read')
    await sql`insert into watched (k) values (${'a'})`.execute(db.k)
    const afterWrite = stamp()
    assert.notEqual(afterWrite, at, 'a write naming the table')
    const other = new SQLite(path.join(dir, 'svc.db'))
    try {
      other.prepare('insert into t (k, v) values (?, ?)').run('from-elsewhere', 2)
    } finally {
      other.close()
    }
    assert.notEqual(stamp(), afterWrite, "another connection's commit (to any table)")
  })
})
