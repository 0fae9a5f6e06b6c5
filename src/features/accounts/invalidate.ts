import { FLUSH_ALL, type Bus } from '../../infra/bus.js'
import { invalidateHosting } from '../sites/invalidate.js'
import { BUS_CHANNEL as IMAGE_CHANNEL } from '../image-host/channel.js'
import { BUS_CHANNEL as DATA_CHANNEL } from '../hosted-data/cache.js'
import { KV_CHANNEL } from '../kv/public-cache.js'
import { DOMAINS_CHANNEL, PRIMARY_CHANNEL } from '../domains/hosts.js'

/**
 * An account was disabled or enabled: every public cache that answers for it drops it at once,
 * here and on every instance (call after the commit). The public host drops the user's paths;
 * the image, hosted-data, KV and custom-domain caches are keyed by token, key or host name, not
 * by owner, so they drop everything (FLUSH_ALL): a rare admin action, and they refill from the
 * database on the next request (decision 100).
 */
export async function invalidateAccount(bus: Bus, username: string): Promise<void> {
  await Promise.all([
    invalidateHosting(bus, username),
    ...[IMAGE_CHANNEL, DATA_CHANNEL, KV_CHANNEL, DOMAINS_CHANNEL, PRIMARY_CHANNEL].map((c) => bus.publish(c, FLUSH_ALL)),
  ])
}
