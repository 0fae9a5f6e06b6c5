import fs from 'node:fs'
import fsp from 'node:fs/promises'
import type { Config } from '../config.js'
import { backupsScheduled, redact } from '../config.js'
import { createDeps } from '../compose.js'
import { buildApp } from '../app.js'
import { applyHeapGrowth, listen, serverFactoryFor, tlsMaterial } from '../server.js'
import { sweepBlobs, type SweepResult } from '../storage/sweeper.js'
import { BLOB_COLUMNS, FEATURE_TABLES } from '../features/tables.js'
import { allMigrations, newerMigrations } from '../db/migrate.js'
import { sendfileAvailable } from '../http/sendfile.js'
import { backupSqlite, openSnapshotTarget } from './backup.js'
import type { Deps } from '../deps.js'
import { databaseState, holdDataDir, newDatabaseNote } from './data-dir.js'

const SWEEP_EVERY_MS = 15 * 60_000
const SWEEP_GRACE_MS = 60 * 60_000

/** `svc serve`: connect, migrate, listen, print the URL; close cleanly on SIGTERM/SIGINT. */
export async function serve(config: Config): Promise<void> {
  // before the heap grows: the V8 flag the serving process runs with (server.ts)
  const heap = applyHeapGrowth()
  // TLS files first: a bad one stops start-up (exit 78) before anything is opened
  // the first start makes the data folder and its database: the start line says so, so a
  // mistyped DATA_DIR shows at once (operator commands refuse one: cli/data-dir.ts)
  const created = newDatabaseNote(databaseState(config))
  // one server per SQLite data folder: a second is refused before it opens or migrates anything
  const release = holdDataDir(config)
  const tls = await tlsMaterial(config)
  const deps = await createDeps(config)
  const app = await buildApp(deps, { serverFactory: serverFactoryFor(tls) })
  const l = await listen(app, config, tls !== null)
  const timer = setInterval(() => {
    void Promise.all([
      scheduledSweep(deps, SWEEP_GRACE_MS)
        .then((r) =>
          'newer' in r
            ? app.log.warn({ migrations: r.newer }, 'blob sweep skipped: a newer release migrated this database (MIGRATE_ON_START=0)')
            : app.log.info(r, r.skipped ? 'blob sweep skipped: another is running' : 'blob sweep done'),
        )
        .catch((err) => app.log.warn({ err }, 'blob sweep failed')),
      deps.sessions.purgeExpired().catch(() => {}),
    ])
  }, SWEEP_EVERY_MS)
  timer.unref()
  const backups = scheduleBackups(config, deps, (msg, err) => app.log.warn({ err }, msg))
  let closing = false
  const stop = async (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down')
    clearInterval(timer)
    if (backups) clearInterval(backups)
    const force = setTimeout(() => process.exit(1), 15_000)
    force.unref()
    await l.close().catch(() => {})
    await deps.close().catch(() => {})
    release()
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
  // the handlers are in place before the start line: a SIGTERM sent once it shows is a clean stop
  const db = config.databaseUrl ? `postgres (${redact(config.databaseUrl)})` : `sqlite (${config.dataDir}/svc.db${created === null ? '' : `: new, ${created}`})`
  if (l.httpsUrl) {
    process.stdout.write(`svc listening on ${l.httpsUrl} (HTTP on ${l.httpUrl} redirects to HTTPS); database ${db}; storage ${deps.blobs.kind}\n`)
    const sites = config.contentDomain
      ? `https://{user}.${config.contentDomain}/`
      : config.contentDomainAuto
        ? `http://{user}.localhost:${l.httpPort}/ (from this machine)`
        : null
    if (sites) process.stdout.write(`users' sites: ${sites}\n`)
  } else {
    process.stdout.write(`svc listening on ${l.httpUrl} (behind a TLS proxy, TRUST_PROXY=1); database ${db}; storage ${deps.blobs.kind}\n`)
    // the zero-copy path serves plain-HTTP connections only: say whether it is on
    const sendfile = !config.sendfile ? 'off (SENDFILE=0)' : sendfileAvailable() ? 'on' : 'off (native addon not built: run npm install, see its output)'
    process.stdout.write(`public host sendfile: ${sendfile}\n`)
  }
  app.log.info({ v8: heap.flag, from: heap.own ? 'the command line' : 'svc' }, 'heap growth')
  const shared = sharedStateLine(config)
  if (shared) (shared.warning ? process.stderr : process.stdout).write(`${shared.line}\n`)
  if (shared?.warning)
    app.log.warn({ databaseUrl: redact(config.databaseUrl!) }, "DATABASE_URL without REDIS_URL: rate limits and cache invalidation are this instance's own")
  if (config.host === '127.0.0.1' || config.host === '::1') {
    process.stdout.write(`only this machine can connect (HOST=${config.host}); HOST=0.0.0.0 listens on every interface\n`)
  }
}

/**
 * The server's periodic blob sweep. It does nothing on a database a newer release migrated
 * (an older release started with MIGRATE_ON_START=0, during a roll or after a downgrade):
 * that release may keep blobs in columns this one does not know (form_files for a release
 * older than it), and this sweep would delete them as unreferenced.
 */
export async function scheduledSweep(deps: Pick<Deps, 'db' | 'blobs'>, graceMs: number): Promise<SweepResult | { newer: string[] }> {
  const newer = await newerMigrations(deps.db, FEATURE_TABLES)
  if (newer.length > 0) return { newer }
  return sweepBlobs(deps.db, deps.blobs, BLOB_COLUMNS, graceMs)
}

/**
 * BACKUP_DIR: a snapshot every BACKUP_EVERY into that folder or s3:// bucket (svc backup's
 * format, BACKUP_KEEP kept), for SQLite and a local blob store. One at a time: a run still
 * going skips the next.
 */
function scheduleBackups(config: Config, deps: Deps, warn: (msg: string, err?: unknown) => void): NodeJS.Timeout | null {
  const dest = config.backupDir
  if (dest === null) return null
  if (!backupsScheduled(config)) {
    warn('BACKUP_DIR is ignored: scheduled backups cover SQLite and a local blob store (docs/operations/backups.md)')
    return null
  }
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    openSnapshotTarget(dest)
      .then((target) =>
        backupSqlite({
          dataDir: config.dataDir,
          blobs: deps.blobs,
          blobColumns: BLOB_COLUMNS,
          knownMigrations: Object.keys(allMigrations(FEATURE_TABLES)),
          target,
          keep: config.backupKeep,
        }).finally(() => target.close()),
      )
      .then((r) => process.stdout.write(`backup: ${r.snapshot} (${r.copied} new blobs)\n`))
      .catch((err: unknown) => warn('scheduled backup failed', err))
      .finally(() => {
        running = false
      })
  }, config.backupEveryMs)
  timer.unref()
  // a folder this process cannot write (read-only, or outside a sandbox's ReadWritePaths)
  // would show only as a warning at the first turn, BACKUP_EVERY later: say so at start
  if (!dest.startsWith('s3://')) {
    fsp
      .mkdir(dest, { recursive: true })
      .then(() => fsp.access(dest, fs.constants.W_OK))
      .catch((err: unknown) => {
        const code = (err as NodeJS.ErrnoException).code ?? String(err)
        process.stdout.write(`warning: BACKUP_DIR ${dest} cannot be written (${code}): scheduled backups fail until it can\n`)
        warn('BACKUP_DIR cannot be written: scheduled backups fail until it can', err)
      })
  }
  return timer
}

/**
 * What the start line says of the state instances share besides the database (decision
 * 318): with REDIS_URL, the Redis and key prefix this instance uses; on PostgreSQL
 * without it, a warning, since another instance's writes then never reach this one's caches
 * (it serves pages stale) and its rate limits count alone. SQLite is one instance: no line.
 */
function sharedStateLine(config: Pick<Config, 'databaseUrl' | 'redisUrl' | 'redisPrefix'>): { line: string; warning: boolean } | null {
  if (config.redisUrl)
    return { line: `rate limits and cache invalidation: Redis ${redact(config.redisUrl)} (keys under ${config.redisPrefix})`, warning: false }
  if (!config.databaseUrl) return null
  return {
    line:
      "warning: DATABASE_URL without REDIS_URL: rate limits and cache invalidation are this instance's own; " +
      "another instance's writes never reach its caches, so it serves pages stale after them. " +
      'Run no other instance on this database, or give every instance the same REDIS_URL',
    warning: true,
  }
}
