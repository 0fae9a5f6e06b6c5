/**
 * The composition root of the server: opens the infrastructure, builds the account services,
 * and hands the layers what they need from the features (their tables) and from observability
 * (metric hooks), so that no layer imports upward.
 */
import type { Config } from './config.js'
import type { Deps } from './deps.js'
import { openDatabase } from './db/kysely.js'
import { migrateToLatest, pendingMigrations } from './db/migrate.js'
import { snapshotFirst } from './db/snapshot.js'
import type { BlobStore } from './storage/blob-store.js'
import { openBlobStore } from './storage/open.js'
import { systemClock, type Clock } from './util/clock.js'
import { createMemoryLimitStore, type LimitStore } from './limits/store.js'
import { createRedisLimitStore } from './limits/redis.js'
import { createLocalBus, createRedisBus, type Bus } from './infra/bus.js'
import { blobCacheMetrics, instrumentBlobStore } from './observability/blob-store.js'
import { metrics } from './observability/metrics.js'
import { createUsers } from './auth/users.js'
import { serviceLabels } from './http/site-origin.js'
import { createApiKeys } from './auth/api-keys.js'
import { createSessions } from './auth/sessions.js'
import { createPrincipalResolver } from './auth/principal.js'
import { tierRules } from './limits/tiers.js'
import { FEATURE_TABLES } from './features/tables.js'
import { anyBlockedDigest } from './features/abuse/store.js'
import { withBlocklist } from './storage/blocklist.js'
import { AppError } from './errors/app-error.js'
import { createScope } from './util/scope.js'

export type { Deps } from './deps.js'
export { openBlobStore }

export interface DepsOverrides {
  clock?: Clock
  blobs?: BlobStore
  limits?: LimitStore
  bus?: Bus
}

/** Connects to the database (running migrations), blob store, limit store and bus. */
export async function createDeps(config: Readonly<Config>, o: DepsOverrides = {}): Promise<Deps> {
  const clock = o.clock ?? systemClock
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    onQueryError: (engine, kind) => metrics.dbErrors.inc({ engine, kind }),
    queryTimeoutMs: config.databaseQueryTimeoutMs,
  })
  if (config.migrateOnStart) {
    // a failed migration must not leave the pool open (the process would never exit)
    await migrateToLatest(db, FEATURE_TABLES, snapshotFirst(config)).catch(async (e) => {
      await db.close().catch(() => {})
      throw e
    })
  } else {
    const pending = await pendingMigrations(db, FEATURE_TABLES)
    if (pending.length > 0) {
      await db.close()
      throw new Error(`the database schema is behind this release (pending: ${pending.join(', ')}); run \`svc migrate\` first (MIGRATE_ON_START=0)`)
    }
  }
  // uploads of content taken down for abuse are refused, whichever feature writes or reuses them
  const blobs = withBlocklist(
    o.blobs ??
      (await openBlobStore(config, { mode: 'serve', wrap: instrumentBlobStore, cacheEvents: blobCacheMetrics }).catch(async (e) => {
        // (an unwritable BLOB_CACHE_DIR): the pool must not keep the process alive
        await db.close().catch(() => {})
        throw e
      })),
    (digests) => anyBlockedDigest(db.k, digests),
    () => new AppError('CONTENT_BLOCKED'),
  )
  const limits =
    o.limits ??
    (config.redisUrl
      ? createRedisLimitStore(config.redisUrl, { serverTime: clock === systemClock, prefix: `${config.redisPrefix}rl:`, clock })
      : createMemoryLimitStore(clock))
  const bus =
    o.bus ??
    (config.redisUrl
      ? createRedisBus(config.redisUrl, `${config.redisPrefix}bus:`, {
          onPublishError: () => metrics.dependencyErrors.inc({ dependency: 'redis-bus' }),
          onAckTimeout: () => metrics.dependencyErrors.inc({ dependency: 'redis-bus-ack' }),
        })
      : createLocalBus())
  const deps: Deps = {
    config,
    db,
    blobs,
    limits,
    bus,
    clock,
    users: createUsers(db, clock, serviceLabels(config)),
    apiKeys: createApiKeys(db, clock),
    sessions: createSessions(db, clock, config.sessionTtlSeconds),
    resolvePrincipal: createPrincipalResolver(db, clock),
    tiers: tierRules(config.rateLimits),
    services: createScope(() => deps),
    async close() {
      await Promise.allSettled([limits.close(), bus.close(), blobs.close()])
      await db.close()
    },
  }
  return deps
}
