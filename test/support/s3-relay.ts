import http from 'node:http'
import type net from 'node:net'

/**
 * An HTTP relay on loopback in front of a real S3 server (s3rver), which a test can make
 * misbehave on object reads: count them, hold them back, or cut a body in the middle.
 */
export interface S3Relay {
  endpoint: string
  /** GET requests of object keys (not listings) seen so far. */
  gets: number
  /** What the relay does to the next object GETs. */
  mode: 'pass' | 'truncate' | 'hold'
  /** In 'hold' mode, S3's answers to GETs are held back until this is called. */
  release(): void
  /** Resolves once `n` answers are being held back. */
  holding(n: number): Promise<void>
  close(): Promise<void>
}

export async function startS3Relay(target: string): Promise<S3Relay> {
  const t = new URL(target)
  const sockets = new Set<net.Socket>()
  let held: (() => void)[] = []
  const relay: S3Relay = {
    endpoint: '',
    gets: 0,
    mode: 'pass',
    release() {
      const h = held
      held = []
      for (const go of h) go()
    },
    async holding(n) {
      for (let i = 0; held.length < n; i++) {
        if (i > 1000) throw new Error(`relay: ${held.length} answers held, waited for ${n}`)
        await new Promise((r) => setTimeout(r, 10))
      }
    },
    async close() {
      relay.release()
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
  const server = http.createServer((req, res) => {
    const isObjectGet = req.method === 'GET' && /\/[0-9a-f]{64}$/.test(new URL(req.url ?? '/', 'http://x').pathname)
    const mode = isObjectGet ? relay.mode : 'pass'
    if (isObjectGet) relay.gets++
    const forward = () => {
      const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
        if (mode === 'hold' && relay.mode === 'hold') {
          // S3 has answered (its bytes are on the way); the client sees nothing until release()
          ur.pause()
          held.push(() => {
            res.writeHead(ur.statusCode ?? 502, ur.headers)
            ur.pipe(res)
            ur.resume()
          })
          return
        }
        res.writeHead(ur.statusCode ?? 502, ur.headers)
        if (mode === 'truncate' && ur.statusCode === 200) {
          // half the body, then the connection drops
          const total = Number(ur.headers['content-length'] ?? 0)
          let sent = 0
          ur.on('data', (c: Buffer) => {
            const room = Math.floor(total / 2) - sent
            if (room > 0) res.write(c.subarray(0, room))
            sent += Math.min(c.length, Math.max(room, 0))
            if (sent >= Math.floor(total / 2)) {
              ur.destroy()
              res.socket?.destroy()
            }
          })
          return
        }
        ur.pipe(res)
      })
      up.on('error', () => res.destroy())
      req.pipe(up)
    }
    forward()
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  relay.endpoint = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`
  return relay
}
