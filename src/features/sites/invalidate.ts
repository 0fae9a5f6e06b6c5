import type { Bus } from '../../infra/bus.js'

/** The bus channel the public host listens on; a message is the username whose content changed. */
export const HOSTING_CHANNEL = 'hosting'

/**
 * Tells every instance's public host that a user's content changed (call after the commit).
 * The Redis bus also delivers to this instance at once, so the next request is served fresh.
 */
export async function invalidateHosting(bus: Bus, username: string): Promise<void> {
  await bus.publish(HOSTING_CHANNEL, username)
}
