import path from 'node:path'
import type { Config } from './config.js'
import { openDatabase, type Db } from './db/kysely.js'
import { migrateToLatest, pendingMigrations } from './db/migrate.js'
import type { BlobStore } from './storage/blob-store.js'
import { createLocalBlobStore } from './storage/local.js'
import { systemClock, type Clock } from './util/clock.js'
import { createMemoryLimitStore, type LimitStore } from './limits/store.js'
import { createRedisLimitStore } from './limits/redis.js'
import { createLocalBus, createRedisBus, type Bus } from './util/bus.js'
import { instrumentBlobStore } from './http/metrics.js'
import { createUsers, type Users } from './auth/users.js'
import { createApiKeys, type ApiKeys } from './auth/api-keys.js'
import { createSessions, type Sessions } from './auth/sessions.js'
import { createPrincipalResolver, type PrincipalResolver } from './auth/principal.js'
import { tierRules, type TierRules } from './limits/tiers.js'
import type { Tier } from './auth/users.js'

/** Everything outside the process, behind small interfaces; built once and passed down. */
export interface Deps {
  config: Readonly<Config>
  db: Db
  blobs: BlobStore
  limits: LimitStore
  bus: Bus
  clock: Clock
  users: Users
  apiKeys: ApiKeys
  sessions: Sessions
  resolvePrincipal: PrincipalResolver
  tiers: Record<Tier, TierRules>
  close(): Promise<void>
}

export interface DepsOverrides {
  clock?: Clock
  blobs?: BlobStore
  limits?: LimitStore
  bus?: Bus
}

/** Opens the blob store named by STORAGE_URL (unset: DATA_DIR/blobs). */
export async function openBlobStore(config: Config): Promise<BlobStore> {
  const url = config.storageUrl
  if (url?.startsWith('s3://')) {
    // loaded only when configured, so the embedded default never loads the AWS SDK
    const s3Module = './storage/s3.js'
    const { createS3BlobStore } = (await import(s3Module)) as { createS3BlobStore(url: string): Promise<BlobStore> | BlobStore }
    return createS3BlobStore(url)
  }
  if (url?.startsWith('file://')) return createLocalBlobStore(new URL(url).pathname)
  return createLocalBlobStore(path.join(config.dataDir, 'blobs'))
}

/** Connects to the database (running migrations), blob store, limit store and bus. */
export async function createDeps(config: Readonly<Config>, o: DepsOverrides = {}): Promise<Deps> {
  const clock = o.clock ?? systemClock
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  if (config.migrateOnStart) {
    // a failed migration must not leave the pool open (the process would never exit)
    await migrateToLatest(db).catch(async (e) => {
      await db.close().catch(() => {})
      throw e
    })
  } else {
    const pending = await pendingMigrations(db)
    if (pending.length > 0) {
      await db.close()
      throw new Error(`the database schema is behind this release (pending: ${pending.join(', ')}); run \`svc migrate\` first (MIGRATE_ON_START=0)`)
    }
  }
  const blobs = o.blobs ?? instrumentBlobStore(await openBlobStore(config))
  const limits = o.limits ?? (config.redisUrl
    ? createRedisLimitStore(config.redisUrl, { serverTime: clock === systemClock, prefix: `${config.redisPrefix}rl:` })
    : createMemoryLimitStore())
  const bus = o.bus ?? (config.redisUrl ? createRedisBus(config.redisUrl, `${config.redisPrefix}bus:`) : createLocalBus())
  return {
    config, db, blobs, limits, bus, clock,
    users: createUsers(db, clock),
    apiKeys: createApiKeys(db, clock),
    sessions: createSessions(db, clock, config.sessionTtlSeconds),
    resolvePrincipal: createPrincipalResolver(db, clock),
    tiers: tierRules(config.rateLimits),
    async close() {
      await Promise.allSettled([limits.close(), bus.close(), blobs.close()])
      await db.close()
    },
  }
}
