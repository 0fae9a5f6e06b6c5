import { Redis } from 'ioredis'

/** Deletes every Redis key under `prefix` (a test's own REDIS_PREFIX), in SCAN pages. */
export async function clearRedisPrefix(url: string, prefix: string): Promise<void> {
  const r = new Redis(url)
  try {
    let cursor = '0'
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
      if (keys.length) await r.del(...keys)
      cursor = next
    } while (cursor !== '0')
  } finally {
    r.disconnect()
  }
}
