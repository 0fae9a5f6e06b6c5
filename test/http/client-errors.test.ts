import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import tls from 'node:tls'
import { startServer, type TestServer } from '../support/server.js'
import { uploadFile } from '../support/hosting.js'

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

  // [label, request, status, its message: Chinese, the default, and whole]
  const cases: Array<[string, string, number, string]> = [
    ['a malformed request line', 'GARBAGE\r\n\r\n', 400, '参数错误：HTTP 请求格式错误'],
    ['a bad header line', 'GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', 400, '参数错误：HTTP 请求格式错误'],
    [
      'a chunked body with a bad chunk size',
      'POST /svc_api/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n',
      400,
      '参数错误：HTTP 请求格式错误',
    ],
    ['headers over the limit', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, '参数错误：请求头过大'],
    // requests Node's server would answer itself, with no body in the spec's format
    ['an HTTP/1.1 request without Host', 'GET /svc_api/files HTTP/1.1\r\n\r\n', 400, '参数错误：缺少 Host 请求头'],
    ['CONNECT (the service is no proxy)', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405, '参数错误：不支持 CONNECT 请求'],
    [
      'an Expect other than 100-continue',
      'POST /svc_api/data/store HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nContent-Length: 2\r\n\r\n{}',
      417,
      '参数错误：不支持的 Expect 请求头：foo',
    ],
  ]
  /** The answers of one connection, in order: status and body (by Content-Length, in bytes). */
  const answers = (text: string) => {
    const bytes = Buffer.from(text, 'utf8')
    const out: Array<{ status: number; body: string }> = []
    let at = 0
    while (at < bytes.length) {
      const end = bytes.indexOf('\r\n\r\n', at)
      assert.ok(end > 0, `a whole answer at ${at}: ${JSON.stringify(bytes.subarray(at, at + 200).toString())}`)
      const head = bytes.subarray(at, end).toString('latin1')
      const len = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0)
      out.push({ status: Number(head.split(' ')[1]), body: bytes.subarray(end + 4, end + 4 + len).toString() })
      at = end + 4 + len
    }
    return out
  }
  const PAGE = `<p>${'0123456789'.repeat(30_000)}</p>`
  before(async () => {
    const u = await s.user({ name: 'pipes' })
    const up = await uploadFile(s, { key: u.key }, 'big.html', PAGE)
    assert.equal(up.status, 200, up.text)
  })

  for (const plain of [false, true]) {
    it(`a refused request after a large answer: that answer whole first, then 400 (${plain ? 'plain HTTP' : 'HTTPS'})`, async () => {
      const host = plain ? 'pipes.localhost' : '127.0.0.1'
      const path = plain ? '/big.html' : '/pipes/big.html'
      const got = answers(await raw(plain, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\nGARBAGE\r\n\r\n`))
      assert.deepEqual(
        got.map((a) => a.status),
        [200, 400],
      )
      assert.equal(got[0].body, PAGE)
      assert.equal(JSON.parse(got[1].body).error_code, 1106)
    })
    it(`a refused request after one still being handled: its own answer first, then 400 (${plain ? 'plain HTTP' : 'HTTPS'})`, async () => {
      // an API request (answered after a database read), then bytes the parser refuses
      const got = answers(await raw(plain, 'GET /svc_api/files HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer nope\r\n\r\nGARBAGE\r\n\r\n'))
      assert.deepEqual(
        got.map((a) => [a.status, JSON.parse(a.body).error_code]),
        [plain ? [400, 1116] : [401, 1002], [400, 1106]],
      )
    })
    it(`bytes after a request that closes the connection: its answer alone (${plain ? 'plain HTTP' : 'HTTPS'})`, async () => {
      const got = answers(await raw(plain, 'GET /svc_api/files HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n'))
      assert.equal(got.length, 1, JSON.stringify(got))
      assert.equal(JSON.parse(got[0].body).success, false)
      assert.notEqual(JSON.parse(got[0].body).error_code, 1106)
    })
  }

  for (const plain of [false, true])
    it(`an HTTP/1.0 request without Host is served as usual (${plain ? 'plain HTTP' : 'HTTPS'})`, async () => {
      const r = parse(await raw(plain, 'GET /svc_api/files HTTP/1.0\r\nAuthorization: Bearer nope\r\n\r\n'))
      assert.deepEqual([r.status, r.json.error_code], plain ? [400, 1116] : [401, 1002])
    })

  for (const plain of [false, true])
    for (const [name, bytes, status, zh] of cases)
      it(`${name} (${plain ? 'plain HTTP' : 'HTTPS'}): ${status} with error 1106`, async () => {
        const answer = await raw(plain, bytes)
        const r = parse(answer)
        assert.equal(r.status, status, answer)
        assert.match(r.head, /content-type: application\/json; charset=utf-8/i)
        assert.equal(r.json.success, false)
        assert.equal(r.json.error_code, 1106)
        assert.equal(r.json.error_type, 'PARAM_ERROR')
        assert.equal(r.json.message, zh)
      })

  // [label, request with Accept-Language: en, English message]
  const spoken: Array<[string, string, string]> = [
    ['an HTTP/1.1 request without Host', 'GET /svc_api/files HTTP/1.1\r\nAccept-Language: en\r\n\r\n', 'Invalid parameter: the Host header is missing'],
    [
      'an Expect other than 100-continue',
      'POST /svc_api/data/store HTTP/1.1\r\nHost: x\r\nAccept-Language: en\r\nExpect: foo\r\nContent-Length: 2\r\n\r\n{}',
      'Invalid parameter: unsupported expectation: foo',
    ],
    [
      'CONNECT (the service is no proxy)',
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nAccept-Language: en\r\n\r\n',
      'Invalid parameter: CONNECT is not supported',
    ],
  ]
  for (const [name, bytes, en] of spoken)
    it(`${name}: in English when the request asks for it`, async () => {
      assert.equal(parse(await raw(true, bytes)).json.message, en)
    })
})
