import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
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
  it('leaves a copy taken before it, a database the previous release still starts on, and says how to go back', async () => {
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
      assert.ok(tables(path.join(dataDir, 'svc.db')).includes('half_done'), "SQLite kept the failed migration's first step")
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
