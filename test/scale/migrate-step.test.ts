import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'
import pg from 'pg'
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
