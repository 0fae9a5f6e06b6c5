import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import tls from 'node:tls'
import { startServer, type TestServer } from '../support/server.js'

// Requests Node's HTTP parser refuses never reach a route; they are still answered in the
// spec's format (error 1106, format A), on the HTTPS port and on the plain-HTTP listener.
describe('requests the HTTP parser refuses', () => {
  let s: TestServer
  before(async () => {
    s = await startServer()
  })
  after(() => s?.close())

  /** Sends raw bytes on a fresh connection and reads until the server closes it. */
  const raw = (plain: boolean, bytes: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const url = new URL(plain ? s.httpUrl : s.url)
      const opts = { host: '127.0.0.1', port: Number(url.port) }
      const sock = plain ? net.connect(opts) : tls.connect({ ...opts, rejectUnauthorized: false })
      let out = ''
      sock.setEncoding('utf8')
      sock.on('data', (d: string) => (out += d))
      sock.on('error', reject)
      sock.on('close', () => resolve(out))
      sock.once(plain ? 'connect' : 'secureConnect', () => sock.write(bytes))
      sock.setTimeout(5000, () => sock.destroy(new Error('no answer in 5 s')))
    })
  const parse = (answer: string) => {
    const [head, body] = answer.split('\r\n\r\n')
    return { status: Number(head.split(' ')[1]), head, json: JSON.parse(body) as Record<string, unknown> }
  }

  const cases: Array<[string, string, number]> = [
    ['a malformed request line', 'GARBAGE\r\n\r\n', 400],
    ['a bad header line', 'GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', 400],
    ['a chunked body with a bad chunk size', 'POST /svc_api/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n', 400],
    ['headers over the limit', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ]
  for (const plain of [false, true])
    for (const [name, bytes, status] of cases)
      it(`${name} (${plain ? 'plain HTTP' : 'HTTPS'}): ${status} with error 1106`, async () => {
        const answer = await raw(plain, bytes)
        const r = parse(answer)
        assert.equal(r.status, status, answer)
        assert.match(r.head, /content-type: application\/json; charset=utf-8/i)
        assert.equal(r.json.success, false)
        assert.equal(r.json.error_code, 1106)
        assert.equal(r.json.error_type, 'PARAM_ERROR')
        assert.equal(typeof r.json.message, 'string')
      })
})
