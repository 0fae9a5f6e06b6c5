import net from 'node:net'

/** A loopback TCP relay to a real service that a test can cut and restore, as if the service went down. */
export interface TcpProxy {
  port: number
  /** Stops accepting and drops every open connection (the service looks down). */
  cut(): Promise<void>
  /** Accepts again on the same port. */
  restore(): Promise<void>
  /**
   * Stops moving bytes either way, connections kept open and new ones accepted: the service
   * hangs (a stuck server, a network that drops packets). `resume` delivers what waited.
   */
  hang(): void
  resume(): void
  close(): Promise<void>
}

/**
 * `onClientData`: sees each chunk a client sends, before it is relayed (e.g. to cut the relay
 * once a request of some kind starts).
 */
export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1', o: { onClientData?: (chunk: Buffer) => void } = {}): Promise<TcpProxy> {
  const open = new Set<net.Socket>()
  let hung = false
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost)
    open.add(client).add(upstream)
    const drop = () => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
      open.delete(upstream)
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    if (o.onClientData !== undefined) client.on('data', o.onClientData)
    client.pipe(upstream).pipe(client)
    if (hung) {
      client.pause()
      upstream.pause()
    }
  })
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject)
        resolve()
      })
    })
  await listen(0)
  const port = (server.address() as net.AddressInfo).port
  const cut = async () => {
    const closed = new Promise<void>((r) => server.close(() => r()))
    for (const s of open) s.destroy()
    open.clear()
    await closed
  }
  return {
    port,
    cut,
    restore: () => listen(port),
    hang() {
      hung = true
      for (const s of open) s.pause()
    },
    resume() {
      hung = false
      for (const s of open) s.resume()
    },
    async close() {
      if (server.listening) await cut()
    },
  }
}
