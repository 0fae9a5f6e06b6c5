import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'
import pg from 'pg'
import SQLite from 'better-sqlite3'
import { ENGINES, PG_URL, startServer, dropSchema } from '../support/server.js'
import { openDatabase } from '../../src/db/kysely.js'
import { migrateToLatest, pendingMigrations } from '../../src/db/migrate.js'
import { FEATURE_TABLES } from '../../src/features/tables.js'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const bin = path.join(root, 'bin', 'svc')

for (const engine of ENGINES) {
  describe(`migrations as a separate deploy step [${engine}]`, () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrate-'))
    const pgSchema = `t_${crypto.randomBytes(5).toString('hex')}`
    const dbEnv: Record<string, string> = { DATA_DIR: dataDir, ...(engine === 'postgres' ? { DATABASE_URL: `${PG_URL}?schema=${pgSchema}` } : {}) }
    after(async () => {
      if (engine === 'postgres') await dropSchema(pgSchema)
      fs.rmSync(dataDir, { recursive: true, force: true })
    })

    it('with MIGRATE_ON_START=0 an instance refuses an unmigrated database, and starts after `svc migrate`', async () => {
      await assert.rejects(
        startServer({ engine, pgSchema, dataDir, keepData: true, env: { MIGRATE_ON_START: '0' } }),
        /schema is behind this release \(pending: 0001.*run `svc migrate` first/,
      )
      const r = spawnSync(process.execPath, [bin, 'migrate'], { env: { ...process.env, ...dbEnv, LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 60_000 })
      assert.equal(r.status, 0, r.stderr)
      // it says what it did: the migrations it applied, then, run again, that there were none
      assert.match(r.stdout, /^applied \d+ migrations: 0001[^,]*, /)
      const again = spawnSync(process.execPath, [bin, 'migrate'], { env: { ...process.env, ...dbEnv, LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 60_000 })
      assert.equal(again.stdout.trim(), 'migrations up to date')
      const s = await startServer({ engine, pgSchema, dataDir, keepData: true, env: { MIGRATE_ON_START: '0' } })
      try {
        assert.equal((await s.get('/healthz')).status, 200)
      } finally {
        await s.close()
      }
    })
  })
}

describe('instances starting at once on a new schema [postgres]', { skip: ENGINES.includes('postgres') ? false : 'PostgreSQL not in SVC_TEST_ENGINES' }, () => {
  // `create schema if not exists` from two connections at once fails one of them (23505 on
  // pg_namespace): one of two instances deployed together on a new ?schema= did not start
  it('every one opens the database and migrates it, the schema made once', async () => {
    const schemas = Array.from({ length: 2 }, () => `t_${crypto.randomBytes(5).toString('hex')}`)
    try {
      for (const schema of schemas) {
        const applied = await Promise.all(
          Array.from({ length: 4 }, async () => {
            const db = await openDatabase({ databaseUrl: `${PG_URL}?schema=${schema}`, dataDir: os.tmpdir() })
            try {
              return (await migrateToLatest(db, FEATURE_TABLES)).length
            } finally {
              await db.close()
            }
          }),
        )
        // the migrations ran once, by whichever instance took Kysely's lock first
        assert.equal(applied.filter((n) => n > 0).length, 1, `applied: ${applied.join(', ')}`)
      }
    } finally {
      await Promise.all(schemas.map(dropSchema))
    }
  })
})

describe('migrations while other schemas come and go [postgres]', { skip: ENGINES.includes('postgres') ? false : 'PostgreSQL not in SVC_TEST_ENGINES' }, () => {
  // Kysely's own introspector failed with 3F000 "schema ... does not exist" when another
  // client dropped any schema during its query (src/db/kysely.ts, ScopedPostgresDialect)
  it('checks and runs migrations without tripping over schemas dropped meanwhile', async () => {
    const churn = new pg.Client({ connectionString: PG_URL })
    await churn.connect()
    const mine = Array.from({ length: 4 }, () => `t_${crypto.randomBytes(5).toString('hex')}`)
    let stop = false
    let churned = 0
    const loop = (async () => {
      while (!stop) {
        const n = `churn_${crypto.randomBytes(4).toString('hex')}`
        await churn.query(`create schema ${n}; create table ${n}.t (a int)`)
        await churn.query(`drop schema ${n} cascade`)
        churned++
      }
    })()
    try {
      for (const schema of mine) {
        const db = await openDatabase({ databaseUrl: `${PG_URL}?schema=${schema}`, dataDir: os.tmpdir() })
        try {
          for (let i = 0; i < 20; i++) assert.ok((await pendingMigrations(db, FEATURE_TABLES)).length > 0)
          assert.ok((await migrateToLatest(db, FEATURE_TABLES)).length > 0)
          for (let i = 0; i < 20; i++) assert.deepEqual(await pendingMigrations(db, FEATURE_TABLES), [])
        } finally {
          await db.close()
        }
      }
      assert.ok(churned > 10, `schemas dropped meanwhile: ${churned}`)
    } finally {
      stop = true
      await loop
      await churn.end()
      await Promise.all(mine.map(dropSchema))
    }
  })
})

/** A database's schema as comparable rows: every table, column, index, constraint and migration run. */
async function describeSchema(engine: 'sqlite' | 'postgres', where: string): Promise<unknown> {
  if (engine === 'sqlite') {
    const d = new SQLite(path.join(where, 'svc.db'), { readonly: true })
    try {
      return {
        objects: d.prepare(`select type, name, tbl_name, sql from sqlite_master where name not like 'sqlite_%' order by type, name`).all(),
        migrations: d.prepare('select name from kysely_migration order by name').all(),
      }
    } finally {
      d.close()
    }
  }
  const c = new pg.Client({ connectionString: PG_URL })
  await c.connect()
  try {
    const q = async (text: string) => (await c.query(text.replaceAll('$S', `'${where}'`))).rows.map((r) => JSON.parse(JSON.stringify(r).replaceAll(where, 'S')))
    return {
      columns: await q(
        `select table_name, column_name, data_type, is_nullable, column_default from information_schema.columns where table_schema = $S order by 1, 2`,
      ),
      indexes: await q(`select tablename, indexname, indexdef from pg_indexes where schemaname = $S order by 1, 2`),
      constraints: await q(
        `select c.conrelid::regclass::text as tbl, c.conname, pg_get_constraintdef(c.oid) as def from pg_constraint c join pg_namespace n on n.oid = c.connamespace where n.nspname = $S order by 1, 2`,
      ),
      routines: await q(`select routine_name, routine_definition from information_schema.routines where routine_schema = $S order by 1`),
      triggers: await q(`select event_object_table, trigger_name, action_statement from information_schema.triggers where trigger_schema = $S order by 1, 2`),
      migrations: await q(`select name from ${where}.kysely_migration order by name`),
    }
  } finally {
    await c.end()
  }
}

for (const engine of ENGINES) {
  describe(`the test servers' migrated template [${engine}]`, () => {
    // startServer starts a fresh database from a copy of one migrated once per process
    // (test/support/server.ts): it must be exactly what the migrations make
    it('a test server starts on the schema the migrations make, table for table', async () => {
      const s = await startServer({ engine })
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrate-'))
      const schema = `t_${crypto.randomBytes(5).toString('hex')}`
      try {
        const db = await openDatabase({ databaseUrl: engine === 'postgres' ? `${PG_URL}?schema=${schema}` : null, dataDir })
        try {
          await migrateToLatest(db, FEATURE_TABLES)
        } finally {
          await db.close()
        }
        const served = engine === 'postgres' ? new URL(s.env.DATABASE_URL).searchParams.get('schema')! : s.dataDir
        const fresh = await describeSchema(engine, engine === 'postgres' ? schema : dataDir)
        assert.ok(JSON.stringify(fresh).includes('kysely_migration'))
        assert.deepEqual(await describeSchema(engine, served), fresh)
      } finally {
        await s.close()
        if (engine === 'postgres') await dropSchema(schema)
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })
}
