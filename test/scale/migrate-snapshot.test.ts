import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import SQLite from 'better-sqlite3'
import type { Kysely } from 'kysely'
import { startServer } from '../support/server.js'
import { openDatabase } from '../../src/db/kysely.js'
import { migrateToLatest, type MigrationSet } from '../../src/db/migrate.js'
import { snapshotFirst } from '../../src/db/snapshot.js'
import { FEATURE_TABLES } from '../../src/features/tables.js'

/** A release whose new migration creates a table, then fails. */
const BROKEN: MigrationSet = {
  name: 'broken',
  migrations: {
    '9999-broken': {
      async up(db: Kysely<any>) {
        await db.schema.createTable('half_done').addColumn('id', 'text').execute()
        throw new Error('deliberately broken')
      },
    },
  },
}

const tables = (file: string) => {
  const db = new SQLite(file, { readonly: true })
  try {
    return (db.prepare("select name from sqlite_master where type = 'table'").all() as Array<{ name: string }>).map((r) => r.name)
  } finally {
    db.close()
  }
}

describe('a failed migration on SQLite', () => {
  it('changes nothing, leaves a copy taken before it, a database the previous release still starts on, and says how to go back', async () => {
    const s = await startServer({ engine: 'sqlite', keepData: true })
    const { dataDir } = s
    try {
      const u = await s.user()
      assert.equal((await s.post('/svc_api/data/store', { key: u.key, json: { key: 'kept', value: 42 } })).status, 200)
      await s.close()
      assert.equal(fs.existsSync(path.join(dataDir, 'backups')), false, 'a new install takes no copy')

      // the new release: its migration fails half way
      const db = await openDatabase({ databaseUrl: null, dataDir })
      let message = ''
      await assert.rejects(migrateToLatest(db, [...FEATURE_TABLES, BROKEN], snapshotFirst({ databaseUrl: null, dataDir })), (e: Error) => {
        message = e.message
        return true
      })
      await db.close()
      assert.match(message, /migration failed: deliberately broken/)
      assert.match(message, /start the previous release/)
      const copy = /copy of the database taken before this migration is (\S+);/.exec(message)?.[1]
      assert.ok(copy && fs.existsSync(copy), `the copy named in the error exists: ${message}`)
      // the migrations of one start run in one transaction: the failed one's first step is gone
      assert.ok(!tables(path.join(dataDir, 'svc.db')).includes('half_done'), "SQLite kept the failed migration's first step")
      assert.ok(!tables(copy).includes('half_done') && tables(copy).includes('kv_entries'), 'the copy is the database before the migration')

      // the previous release starts on the database as the failure left it
      const again = await startServer({ engine: 'sqlite', dataDir, keepData: true })
      try {
        const r = await again.get(`/svc_api/data/get?key=kept`, { key: u.key })
        assert.equal(r.status, 200, r.text)
        assert.equal(r.json.data.value, 42)
      } finally {
        await again.close()
      }

      // and the way back the error gives works too
      fs.copyFileSync(copy, path.join(dataDir, 'svc.db'))
      for (const f of ['svc.db-wal', 'svc.db-shm']) fs.rmSync(path.join(dataDir, f), { force: true })
      const rolled = await startServer({ engine: 'sqlite', dataDir, keepData: true })
      try {
        assert.equal((await rolled.get(`/svc_api/data/get?key=kept`, { key: u.key })).json.data.value, 42)
      } finally {
        await rolled.close()
      }
      assert.ok(!tables(path.join(dataDir, 'svc.db')).includes('half_done'))
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')

describe('a process killed during its migrations on SQLite', () => {
  it('leaves none of them behind, and the next start runs them all', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-killed-'))
    const script = path.join(dataDir, 'killed.mts')
    try {
      const db = await openDatabase({ databaseUrl: null, dataDir })
      await migrateToLatest(db, FEATURE_TABLES)
      await db.close()
      // a release with two new migrations, killed (kill -9, a power cut) inside the second
      // after its first statement: what a crash during the first start of an upgrade leaves
      fs.writeFileSync(
        script,
        `import { openDatabase } from ${JSON.stringify(path.join(root, 'src/db/kysely.ts'))}
import { migrateToLatest } from ${JSON.stringify(path.join(root, 'src/db/migrate.ts'))}
import { FEATURE_TABLES } from ${JSON.stringify(path.join(root, 'src/features/tables.ts'))}
const db = await openDatabase({ databaseUrl: null, dataDir: process.argv[2] })
await migrateToLatest(db, [...FEATURE_TABLES, { name: 'new', migrations: {
  '9998-first': { async up(k) { await k.schema.createTable('first_done').addColumn('id', 'text').execute() } },
  '9999-killed': { async up(k) {
    await k.schema.createTable('half_done').addColumn('id', 'text').execute()
    process.kill(process.pid, 'SIGKILL')
  } },
} }])
`,
      )
      const r = spawnSync(process.execPath, ['--import', 'tsx', script, dataDir], { cwd: root, encoding: 'utf8', timeout: 60_000 })
      assert.equal(r.signal, 'SIGKILL', r.stderr)
      const file = path.join(dataDir, 'svc.db')
      assert.deepEqual(
        tables(file).filter((t) => t.endsWith('_done')),
        [],
        'no table of the migrations the killed process ran',
      )
      const ran = new SQLite(file, { readonly: true })
      const names = (ran.prepare("select name from kysely_migration where name like '99%'").all() as Array<{ name: string }>).map((x) => x.name)
      ran.close()
      assert.deepEqual(names, [])

      // the release starts again: its migrations run whole
      const NEW: MigrationSet = {
        name: 'new',
        migrations: {
          '9998-first': { up: async (k: Kysely<any>) => k.schema.createTable('first_done').addColumn('id', 'text').execute() },
          '9999-killed': { up: async (k: Kysely<any>) => k.schema.createTable('half_done').addColumn('id', 'text').execute() },
        },
      }
      const again = await openDatabase({ databaseUrl: null, dataDir })
      try {
        assert.deepEqual(await migrateToLatest(again, [...FEATURE_TABLES, NEW], snapshotFirst({ databaseUrl: null, dataDir })), ['9998-first', '9999-killed'])
      } finally {
        await again.close()
      }
      assert.deepEqual(
        tables(file)
          .filter((t) => t.endsWith('_done'))
          .sort(),
        ['first_done', 'half_done'],
      )
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
