import assert from 'node:assert/strict'
import net from 'node:net'

/** Raw HTTP/1.1 over one socket, for tests that check the exact bytes (pipelining, keep-alive). */

export interface Parsed {
  status: string
  headers: Map<string, string>
  body: Buffer
}

/** Splits the bytes of one connection into responses (bodies by Content-Length; HEAD: none). */
export function parseResponses(buf: Buffer, heads: boolean[]): Parsed[] {
  const out: Parsed[] = []
  let at = 0
  for (const isHead of heads) {
    const end = buf.indexOf('\r\n\r\n', at)
    if (end < 0) break
    const lines = buf.subarray(at, end).toString('latin1').split('\r\n')
    const headers = new Map<string, string>()
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':')
      assert.ok(!headers.has(l.slice(0, i).toLowerCase()), `header ${l} sent twice`)
      headers.set(l.slice(0, i).toLowerCase(), l.slice(i + 1).trim())
    }
    const len = isHead ? 0 : Number(headers.get('content-length') ?? 0)
    out.push({ status: lines[0], headers, body: buf.subarray(end + 4, end + 4 + len) })
    at = end + 4 + len
  }
  assert.equal(at, buf.length, 'no bytes after the last response')
  return out
}

/** Sends raw request bytes on one connection; resolves with everything read once `wanted` responses arrived or the server closed. */
export function exchange(port: number, raw: string, heads: boolean[], waitMs = 400): Promise<{ responses: Parsed[]; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    let done = false
    const finish = (closedByServer: boolean) => {
      if (done) return
      done = true
      clearTimeout(timer)
      sock.destroy()
      try {
        resolve({ responses: parseResponses(Buffer.concat(chunks), heads), closedByServer })
      } catch (err) {
        reject(err)
      }
    }
    const timer = setTimeout(() => finish(false), waitMs)
    sock.on('data', (d) => chunks.push(d))
    sock.on('end', () => finish(true))
    sock.on('error', reject)
    sock.write(raw)
  })
}
