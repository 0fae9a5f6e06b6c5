import fs from 'node:fs'
import net from 'node:net'

/** The first port the kernel hands out for listen(0) and outgoing connections (Linux; 32768 elsewhere). */
function ephemeralLow(): number {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return Number.isInteger(low) && low > 12_000 ? low : 32_768
  } catch {
    return 32_768
  }
}

const listens = (port: number) =>
  new Promise<boolean>((resolve) => {
    const srv = net.createServer()
    srv.once('error', () => resolve(false))
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)))
  })

/**
 * A loopback port with nothing listening on it, for a server a test starts later (nginx, Caddy,
 * vite) or for "backing service unreachable" tests. It is drawn at random from the 10,000 ports
 * below the kernel's ephemeral range, so no listen(0) or outgoing connection of a parallel test
 * can take it between this check and its use.
 */
export async function closedPort(): Promise<number> {
  const top = ephemeralLow()
  for (;;) {
    const port = top - 1 - Math.floor(Math.random() * 10_000)
    if (await listens(port)) return port
  }
}
