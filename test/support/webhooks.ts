import crypto from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** One POST a webhook receiver got. */
export interface Hit {
  headers: http.IncomingHttpHeaders
  body: string
}

/** A webhook target on loopback: answers `status.value` to every POST and keeps what it received. */
export async function webhookReceiver() {
  const hits: Hit[] = []
  const status = { value: 500 }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      res.writeHead(status.value, { 'content-type': 'text/plain' }).end('x')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    hits,
    status,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

/** Whether a delivery carries a valid `X-Svc-Signature` (t=...,v1=HMAC-SHA256("t.body")) for `secret`. */
export function signedWith(h: Hit, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(h.headers['x-svc-signature']))
  return !!m && crypto.createHmac('sha256', secret).update(`${m[1]}.${h.body}`).digest('hex') === m[2]
}

/** Polls `check` every 50 ms until it holds; throws naming `what` after `ms`. */
export async function until(check: () => Promise<boolean> | boolean, ms = 20_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
