import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import crypto from 'node:crypto'
import { openDatabase, type Db } from '../../src/db/kysely.js'
import { prepared } from '../../src/db/prepared.js'
import { ENGINES, PG_URL, dropSchema } from '../support/server.js'

// Prepared queries (src/db/prepared.ts): built and compiled once, each call binds its own
// arguments; an argument that does not come out as a parameter is refused at once. On
// PostgreSQL each runs as a named statement, parsed and planned once per connection.
for (const engine of ENGINES)
  describe(`prepared queries [${engine}]`, () => {
    let dir: string
    let db: Db
    const schema = `t_prep_${crypto.randomBytes(4).toString('hex')}`
    const t = () => db.k as unknown as import('kysely').Kysely<{ t: { k: string; v: number; note: string | null } }>
    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-prepared-'))
      db = await openDatabase({ databaseUrl: engine === 'postgres' ? `${PG_URL}?schema=${schema}` : null, dataDir: dir })
      await sql`create table t (k text primary key, v integer not null, note text)`.execute(db.k)
      await t()
        .insertInto('t')
        .values(Array.from({ length: 20 }, (_, i) => ({ k: `k${i}`, v: i, note: i % 2 ? 'odd' : null })))
        .execute()
    })
    after(async () => {
      await db.close()
      if (engine === 'postgres') await dropSchema(schema)
      fs.rmSync(dir, { recursive: true, force: true })
    })

    it('answers every call with its own arguments, constants of the query kept', async () => {
      let builds = 0
      const between = prepared(db, 2, (lo: number, hi: number) => {
        builds++
        return t().selectFrom('t').select(['k', 'v']).where('v', '>=', lo).where('v', '<', hi).where('k', '!=', 'k5').orderBy('v')
      })
      assert.deepEqual(
        (await between(3, 7)).map((r) => r.k),
        ['k3', 'k4', 'k6'],
      )
      assert.deepEqual(
        (await between(18, 100)).map((r) => r.v),
        [18, 19],
      )
      assert.deepEqual(await between(50, 60), [])
      assert.equal(builds, 1, 'built once')
    })

    it('binds an argument used twice in both places, and null as a value', async () => {
      const upd = prepared(db, 3, (k: string, v: number, note: string | null) =>
        t()
          .updateTable('t')
          .set({ v: sql<number>`v + ${v}`, note })
          .where('k', '=', k)
          .where('v', '<', sql<number>`${v} + 1000`)
          .returning(['k', 'v', 'note']),
      )
      assert.deepEqual(await upd('k2', 5, null), [{ k: 'k2', v: 7, note: null }])
      assert.deepEqual(await upd('k3', 10, 'ten'), [{ k: 'k3', v: 13, note: 'ten' }])
      assert.deepEqual(await upd('nope', 1, null), [])
    })

    it('refuses a query that does not use an argument as a parameter', async () => {
      const bad = prepared(db, 2, (k: string, _unused: string) => t().selectFrom('t').select('v').where('k', '=', k))
      await assert.rejects(bad('k1', 'x'), /argument 1 is not a parameter/)
      const raw = prepared(db, 1, (col: string) => t().selectFrom('t').select(sql.raw<number>(col).as('c')))
      await assert.rejects(raw('v'), /argument 0 is not a parameter/)
    })

    if (engine === 'postgres')
      it('runs as a named statement on PostgreSQL, one name per query text', async () => {
        const byKey = prepared(db, 1, (k: string) => t().selectFrom('t').select('v').where('k', '=', k))
        const byValue = prepared(db, 1, (v: number) => t().selectFrom('t').select('k').where('v', '=', v))
        for (const i of [0, 1, 4]) {
          assert.deepEqual(await byKey(`k${i}`), [{ v: i }])
          assert.deepEqual(await byValue(i), [{ k: `k${i}` }])
        }
        // one call at a time: the pool hands out the same idle connection again (pg's pool takes
        // the last one released), so its statements are the ones listed here
        const listed = (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db.k)).rows
        const ours = listed.filter((r) => r.name.startsWith('svc_') && /"t"/.test(r.statement))
        assert.ok(ours.some((r) => /"k" = \$1/.test(r.statement)) && ours.some((r) => /"v" = \$1/.test(r.statement)), JSON.stringify(listed))
        assert.equal(new Set(ours.map((r) => r.name)).size, ours.length, 'one name per text')
      })
  })
