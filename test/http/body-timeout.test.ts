import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import tls from 'node:tls'
import type { AddressInfo } from 'node:net'
import { startServer, type TestServer } from '../support/server.js'
import { watchBody } from '../../src/http/errors.js'

/** How many whole answers (bodies by Content-Length) `text` holds. */
function answers(text: string): number {
  let n = 0
  let at = 0
  for (;;) {
    const end = text.indexOf('\r\n\r\n', at)
    if (end < 0) return n
    const len = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(at, end))?.[1] ?? 0)
    if (text.length < end + 4 + len) return n
    n++
    at = end + 4 + len
  }
}

/**
 * Opens a connection, sends `head`, then each of `parts` `gapMs` apart; resolves with all it
 * read once `wanted` answers are whole, the server closes, or `untilMs` passes.
 */
function trickle(
  port: number,
  secure: boolean,
  head: string,
  parts: string[],
  gapMs: number,
  untilMs: number,
  wanted = 1,
): Promise<{ text: string; closed: boolean; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now()
    const sock = secure ? tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false }) : net.connect(port, '127.0.0.1')
    let text = ''
    let finished = false
    const finish = (closed: boolean) => {
      if (finished) return
      finished = true
      clearTimeout(stop)
      sock.destroy()
      resolve({ text, closed, ms: Date.now() - t0 })
    }
    const stop = setTimeout(() => finish(false), untilMs)
    // one char per byte: Content-Length counts bytes
    sock.setEncoding('latin1')
    sock.on('data', (d: string) => {
      text += d
      if (answers(text) === wanted) finish(false)
    })
    sock.on('end', () => finish(true))
    sock.on('close', () => finish(true))
    sock.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? finish(true) : reject(e)))
    sock.write(head)
    let i = 0
    const next = () => {
      if (finished || i >= parts.length) return
      sock.write(parts[i++])
      setTimeout(next, gapMs)
    }
    setTimeout(next, gapMs)
  })
}

// Node's limit on a whole request is off (a big upload on a slow link must not be cut); a body
// that moves no byte for BODY_TIMEOUT is refused instead, as nginx's client_body_timeout does
describe('request bodies are timed by idleness, not in all', () => {
  let s: TestServer
  let key: string
  before(async () => {
    s = await startServer({ env: { BODY_TIMEOUT: '1s' } })
    key = (await s.user()).key
  })
  after(() => s?.close())
  const port = () => Number(new URL(s.url).port)
  const store = (value: string, length = value.length + 22, headers = '') =>
    `POST /svc_api/data/store HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${headers}Content-Length: ${length}\r\n\r\n`

  // the headers were read before the body stalled: the answer speaks their Accept-Language
  for (const [lang, message] of [
    ['', '参数错误：请求体未能在限定时间内收到'],
    ['Accept-Language: en\r\n', 'Invalid parameter: the request body was not received in time'],
  ])
    it(`a stalled body's 408 says so in the language asked (${lang === '' ? 'none: Chinese' : 'English'})`, async () => {
      const body = '{"key":"stalled","value":"x"}'
      const r = await trickle(port(), true, store('', body.length, lang) + body.slice(0, 10), [], 0, 5000, Infinity)
      assert.match(r.text, /^HTTP\/1\.1 408 Request Timeout\r\n/)
      // read as latin1, one char per byte: the body's bytes are UTF-8
      const json = JSON.parse(Buffer.from(r.text.split('\r\n\r\n')[1], 'latin1').toString('utf8'))
      assert.equal(json.error_code, 1106)
      assert.equal(json.message, message)
    })

  it('a body that stalls is refused with 408 / 1106 after BODY_TIMEOUT, and nothing is stored', async () => {
    const body = '{"key":"stalled","value":"x"}'
    const r = await trickle(port(), true, store('', body.length) + body.slice(0, 10), [], 0, 5000, Infinity)
    assert.ok(r.closed, `the server closed the connection: ${r.text}`)
    assert.ok(r.ms >= 900 && r.ms < 4000, `closed after ${r.ms} ms`)
    assert.match(r.text, /^HTTP\/1\.1 408 /)
    assert.equal(JSON.parse(r.text.split('\r\n\r\n')[1]).error_code, 1106)
    const g = await s.get('/svc_api/data/get?key=stalled', { key })
    assert.equal(g.status, 404, g.text)
  })

  it('a body that keeps moving is received whole, though it takes longer than BODY_TIMEOUT in all', async () => {
    const body = JSON.stringify({ key: 'slow', value: 'y'.repeat(40) })
    const parts = body.match(/.{1,8}/g)!
    const r = await trickle(port(), true, store('', body.length), parts, 300, 10_000)
    assert.ok(r.ms > 1500, `the body took ${r.ms} ms`)
    assert.match(r.text, /^HTTP\/1\.1 200 /, r.text)
    const g = await s.get('/svc_api/data/get?key=slow', { key })
    assert.equal(g.json.data.value, 'y'.repeat(40))
  })
})

describe('watchBody', () => {
  it('leaves the handler its time once the body is in, and the keep-alive connection open', async () => {
    const server = http.createServer({ requestTimeout: 0 }, (req, res) => {
      watchBody(req, res, 300, '')
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      // the answer comes well after the body's idle limit
      req.on('end', () => setTimeout(() => res.end(`got ${Buffer.concat(chunks).length}`), 900))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      const { port } = server.address() as AddressInfo
      const req = (body: string) => `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`
      const r = await trickle(port, false, req('abc'), [req('defg')], 1200, 5000, 2)
      assert.equal(r.closed, false, r.text)
      const answers = r.text.split('HTTP/1.1 ').slice(1)
      assert.equal(answers.length, 2, r.text)
      assert.match(answers[0], /^200 [\s\S]*got 3$/)
      assert.match(answers[1], /^200 [\s\S]*got 4$/)
    } finally {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
    }
  })
})
