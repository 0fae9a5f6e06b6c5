/** The part of an ioredis client read here. */
export interface RedisEvents {
  readonly status: string
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'ready', listener: () => void): unknown
}

/**
 * Why a call on an ioredis client failed, in words an operator can act on (decision 319).
 * While the client is not connected a call fails with ioredis's own "Command timed out" or
 * "Connection is closed"; the connection's last error (`connect ECONNREFUSED 10.0.0.5:6379`,
 * a DNS or TLS failure, NOAUTH) says why, so it comes first. It never holds a password.
 */
export function redisFailure(client: RedisEvents): (err: unknown) => Error {
  let last: Error | null = null
  client.on('error', (e) => {
    last = e
  })
  client.on('ready', () => {
    last = null
  })
  return (err) => {
    const msg = err instanceof Error ? err.message : String(err)
    return new Error(client.status !== 'ready' && last ? `${last.message} (${msg})` : msg)
  }
}
