import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { ENGINES, PG_URL, startServer, dropSchema } from '../support/server.js'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..')
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
      const s = await startServer({ engine, pgSchema, dataDir, keepData: true, env: { MIGRATE_ON_START: '0' } })
      try {
        assert.equal((await s.get('/healthz')).status, 200)
      } finally {
        await s.close()
      }
    })
  })
}
