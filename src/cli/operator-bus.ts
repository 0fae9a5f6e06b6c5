import type { Config } from '../config.js'
import { createPostgresBus, createRedisBus, isReliable, type Bus } from '../infra/bus.js'

/**
 * The bus through which an operator command tells the running servers of its change, as the
 * servers' own bus does (decision NEW-PGBUS-1): Redis with REDIS_URL, else PostgreSQL's
 * LISTEN/NOTIFY on DATABASE_URL; null on SQLite (its one server hears no other process).
 * Waits (1 s at most) for the bus's own subscription: a publish waits for the servers'
 * acknowledgements only once it is up, and the PostgreSQL bus sends through it.
 * `via` names it for the command's output.
 */
export async function openOperatorBus(config: Config, onPublishError?: () => void): Promise<{ bus: Bus; via: string } | null> {
  const opts = onPublishError ? { onPublishError } : {}
  const open = config.redisUrl
    ? { bus: createRedisBus(config.redisUrl, `${config.redisPrefix}bus:`, opts), via: 'Redis at REDIS_URL' }
    : config.databaseUrl
      ? { bus: createPostgresBus(config.databaseUrl, opts), via: 'PostgreSQL at DATABASE_URL' }
      : null
  for (let i = 0; open && i < 20 && !isReliable(open.bus); i++) await new Promise((r) => setTimeout(r, 50))
  return open
}
