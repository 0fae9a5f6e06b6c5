import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { scheduledSweep } from '../../src/cli/serve.js'
import { backupSqlite, openSnapshotTarget } from '../../src/cli/backup.js'
import { allMigrations } from '../../src/db/migrate.js'
import { BLOB_COLUMNS, FEATURE_TABLES } from '../../src/features/tables.js'

/**
 * An instance of an older release on a database a newer one migrated: started with
 * MIGRATE_ON_START=0 during a roll, or after a downgrade, as the refusal of its migrations
 * offers. The newer release may keep blobs in columns this one does not know (form_files for
 * a release before 0805): this one must not delete them, nor take a backup that lacks them.
 */
const FUTURE = '9999-from-the-future'
const HOUR = 3600_000

const addFuture = (s: TestServer) => sql`insert into kysely_migration (name, timestamp) values (${FUTURE}, ${new Date().toISOString()})`.execute(s.deps.db.k)
const dropFuture = (s: TestServer) => sql`delete from kysely_migration where name = ${FUTURE}`.execute(s.deps.db.k)

/** A blob no column this release knows references, written two hours ago. */
async function oldOrphan(s: TestServer): Promise<string> {
  const { digest } = await s.deps.blobs.put(Buffer.from(`kept by a newer release's table ${crypto.randomUUID()}`))
  const t = new Date(Date.now() - 2 * HOUR)
  fs.utimesSync(path.join(s.dataDir, 'blobs', digest.slice(0, 2), digest), t, t)
  return digest
}

for (const engine of ENGINES) {
  describe(`a database a newer release migrated [${engine}]`, () => {
    const servers: TestServer[] = []
    after(async () => {
      for (const s of servers) await s.close()
    })

    it("the server's periodic sweep deletes nothing there, and sweeps again once this release knows every migration", async () => {
      const s = await startServer({ engine })
      servers.push(s)
      const digest = await oldOrphan(s)
      await addFuture(s)
      assert.deepEqual(await scheduledSweep(s.deps, HOUR), { newer: [FUTURE] })
      assert.equal(await s.deps.blobs.exists(digest), true, 'a blob of a table only the newer release knows is kept')

      // back on a schema this release knows whole (upgraded again, or its own): the sweep runs
      await dropFuture(s)
      const r = await scheduledSweep(s.deps, HOUR)
      assert.ok(!('newer' in r) && r.deleted >= 1, JSON.stringify(r))
      assert.equal(await s.deps.blobs.exists(digest), false)
    })
  })
}

describe('a backup of a database a newer release migrated [sqlite]', () => {
  it('is refused, naming the migrations, and keeps no snapshot', async () => {
    const s = await startServer({ engine: 'sqlite' })
    const dest = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-newer-backup-'))
    try {
      await addFuture(s)
      const target = await openSnapshotTarget(dest)
      try {
        await assert.rejects(
          backupSqlite({
            dataDir: s.dataDir,
            blobs: s.deps.blobs,
            blobColumns: BLOB_COLUMNS,
            knownMigrations: Object.keys(allMigrations(FEATURE_TABLES)),
            target,
          }),
          new RegExp(`migrated by a newer release: .*\\(${FUTURE}\\).*back up with that release or a later one. Nothing kept`),
        )
        assert.deepEqual(await target.snapshots(), [])
      } finally {
        await target.close()
      }
    } finally {
      await s.close()
      fs.rmSync(dest, { recursive: true, force: true })
    }
  })
})
