import type { Config } from './config.js'
import type { Db } from './db/kysely.js'
import type { BlobStore } from './storage/blob-store.js'
import type { Clock } from './util/clock.js'
import type { LimitStore } from './limits/store.js'
import type { TierRules } from './limits/tiers.js'
import type { Bus } from './infra/bus.js'
import type { Users } from './auth/users.js'
import type { Tier } from './auth/account-rules.js'
import type { ApiKeys } from './auth/api-keys.js'
import type { Sessions } from './auth/sessions.js'
import type { PrincipalResolver } from './auth/principal.js'
import type { Scope } from './util/scope.js'

/**
 * What features and the HTTP layer are handed: types only. compose.ts builds it. This module
 * imports nothing at run time and nothing above the layers, so `import type { Deps }` never
 * closes a cycle.
 */

/** Everything outside the process, behind small interfaces. */
export interface Infra {
  config: Readonly<Config>
  db: Db
  blobs: BlobStore
  limits: LimitStore
  bus: Bus
  clock: Clock
  tiers: Record<Tier, TierRules>
}

/** Accounts, keys, sessions and request authentication, built on the infrastructure. */
export interface AccountServices {
  users: Users
  apiKeys: ApiKeys
  sessions: Sessions
  resolvePrincipal: PrincipalResolver
}

/** Built once at start and passed down; `close` releases the infrastructure. */
export interface Deps extends Infra, AccountServices {
  /**
   * The features' services that hold state (caches, bus subscriptions, write rounds), one of
   * each per Deps: `deps.services.get(createKvService)` is the same KV service for the KV
   * routes, the MCP tools and every other caller.
   */
  services: Scope<Deps>
  close(): Promise<void>
}
