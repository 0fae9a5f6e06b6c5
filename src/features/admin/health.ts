import fsp from 'node:fs/promises'
import path from 'node:path'
import type { Deps } from '../../deps.js'
import { backupsScheduled, blobFolder, redact } from '../../config.js'
import { serviceVersion } from '../../util/version.js'
import { folderSnapshots, snapshotStartedAt } from '../../util/snapshot-names.js'
import { readiness, type ReadyStatus } from '../health/routes.js'
import { API_VERSION } from '../sites/files-service.js'

export interface DiskReport {
  /** data_dir: DATA_DIR (svc.db, its WAL); blobs: a local blob store's folder outside it. */
  what: 'data_dir' | 'blobs'
  path: string
  free_bytes: number | null
  total_bytes: number | null
  /** Why the figures are missing (the folder cannot be read), else null. */
  error: string | null
}

export interface HealthReport {
  status: ReadyStatus
  checks: Array<{ name: string; result: string; required: boolean }>
  checked_at: string
  version: string
  api_version: string
  node: string
  pid: number
  started_at: string
  uptime_seconds: number
  database: { engine: 'sqlite' | 'postgres'; pending_commits: number | null }
  storage: { kind: string }
  memory: { rss_bytes: number; heap_used_bytes: number; heap_total_bytes: number }
  disks: DiskReport[]
  backups: { scheduled: boolean; destination: string | null; every_seconds: number; keep: number; last_at: string | null }
}

async function disk(what: DiskReport['what'], dir: string): Promise<DiskReport> {
  try {
    const s = await fsp.statfs(dir)
    // bavail: what an unprivileged process (this one) may still write
    return { what, path: dir, free_bytes: s.bavail * s.bsize, total_bytes: s.blocks * s.bsize, error: null }
  } catch (e) {
    return { what, path: dir, free_bytes: null, total_bytes: null, error: (e as Error).message }
  }
}

/**
 * What the admin console's health page shows: the readiness checks (the same run as /readyz,
 * with each failure's full message: admins may read them) and what this process knows of
 * itself. Nothing here prints a credential: the backup destination goes through `redact`, and
 * the database is named by its engine only, never its URL.
 */
export async function healthReport(deps: Deps): Promise<HealthReport> {
  const { config } = deps
  const [ready, disks, lastBackup] = await Promise.all([
    readiness(deps),
    (async () => {
      // the disks this instance writes: DATA_DIR holds SQLite and, by default, local blobs
      const out: Array<Promise<DiskReport>> = []
      const local = deps.blobs.kind === 'local'
      if (!config.databaseUrl || local) out.push(disk('data_dir', config.dataDir))
      const blobs = blobFolder(config.dataDir, config.storageUrl)
      if (local && path.relative(config.dataDir, blobs).startsWith('..')) out.push(disk('blobs', blobs))
      return Promise.all(out)
    })(),
    // the snapshots in a backup folder are the record of the last backup; a bucket is not
    // listed here (a request to S3 on every look at the page)
    backupsScheduled(config) && !config.backupDir!.startsWith('s3://')
      ? folderSnapshots(config.backupDir!).then((names) => (names.length > 0 ? snapshotStartedAt(names[names.length - 1]) : null))
      : Promise.resolve(null),
  ])
  // the process's own times, read from the system clock (not deps.clock, which tests may move)
  const now = Date.now()
  const uptime = process.uptime()
  const mem = process.memoryUsage()
  return {
    status: ready.status,
    checks: ready.results,
    checked_at: new Date(now).toISOString(),
    version: serviceVersion(),
    api_version: API_VERSION,
    node: process.version,
    pid: process.pid,
    started_at: new Date(now - Math.round(uptime * 1000)).toISOString(),
    uptime_seconds: Math.floor(uptime),
    database: { engine: deps.db.engine, pending_commits: deps.db.barrier?.pending() ?? null },
    storage: { kind: deps.blobs.kind },
    memory: { rss_bytes: mem.rss, heap_used_bytes: mem.heapUsed, heap_total_bytes: mem.heapTotal },
    disks,
    backups: {
      scheduled: backupsScheduled(config),
      destination: config.backupDir === null ? null : redact(config.backupDir),
      every_seconds: Math.round(config.backupEveryMs / 1000),
      keep: config.backupKeep,
      last_at: lastBackup,
    },
  }
}
