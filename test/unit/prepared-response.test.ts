import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { exchange } from '../support/raw-http.js'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {
  headerList,
  prepare,
  prepareShared,
  sendPrepared,
  sendPreparedFile,
  sharedHead,
  wholeBytesHeld,
  WHOLE_BUDGET,
  WHOLE_MAX_BODY,
} from '../../src/http/prepared-response.js'
import { FakeClock } from '../../src/util/clock.js'
import { sendfileAvailable } from '../../src/http/sendfile.js'
import { loadConfig } from '../../src/config.js'
import { tlsMaterial } from '../../src/server.js'

const BODY = Buffer.from('<!doctype html><p>prepared ünïcode</p>\n')
const HEADERS = [
  'Content-Type',
  'text/html; charset=utf-8',
  'Content-Security-Policy',
  'sandbox allow-scripts',
  'ETag',
  '"abc"',
  'Content-Length',
  String(BODY.length),
]
const OK = prepare(200, HEADERS)
// the same answer with its first two headers shared (one encoded head for many answers) and
// the rest its own; a value with ': ' in it reads back whole
const SHARED = sharedHead(200, HEADERS.slice(2, 4))
const OK_SHARED = prepareShared(SHARED, [...HEADERS.slice(0, 2), ...HEADERS.slice(4), 'X-Note', 'a: b'])
// a body too large to be joined with its head, and many bodies that together pass the budget
const LARGE = Buffer.alloc(WHOLE_MAX_BODY + 1, 'L')
const OK_LARGE = prepare(200, ['Content-Type', 'text/plain', 'Content-Length', String(LARGE.length)])
const MANY = Array.from({ length: Math.ceil(WHOLE_BUDGET / WHOLE_MAX_BODY) + 4 }, (_, i) => {
  const body = Buffer.alloc(WHOLE_MAX_BODY, String.fromCharCode(65 + (i % 26)))
  return { body, p: prepare(200, ['Content-Type', 'text/plain', 'X-N', String(i), 'Content-Length', String(body.length)]) }
})

describe("prepared responses (the hot paths' precomputed heads)", () => {
  const marks: (boolean | undefined)[] = []
  const closes: (string | undefined)[] = []
  // the service clock the answers are dated by: tests move it instead of waiting for seconds.
  // Set to now when the tests start, not when the file loads: in a group of files (run-tests)
  // the file loads before the files ahead of it have run
  const clock = new FakeClock()
  let server: http.Server
  let port = 0
  // a body in its own file, sent as the public host sends a blob file without sendfile (TLS)
  let fileDir = ''
  let fileFd = -1
  const OK_FILE = prepare(200, ['Content-Type', 'text/html; charset=utf-8', 'ETag', '"file"', 'Content-Length', String(BODY.length)])
  before(async () => {
    clock.set(Date.now())
    fileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-prepared-file-'))
    fs.writeFileSync(path.join(fileDir, 'body'), BODY)
    fileFd = fs.openSync(path.join(fileDir, 'body'), 'r')
    server = http.createServer((req, res) => {
      if (req.url === '/slow') {
        // an ordinary answer that finishes later: pipelined requests queue behind it
        setTimeout(() => {
          res.writeHead(200, ['Content-Type', 'text/plain', 'Content-Length', '4'])
          res.end('slow')
        }, 50)
        return
      }
      if (req.url === '/plain') {
        res.writeHead(200, HEADERS)
        res.end(req.method === 'HEAD' ? undefined : BODY)
        return
      }
      if (req.url === '/mark' || req.url === '/listened') {
        if (req.url === '/listened') req.once('close', () => closes.push(req.url))
        sendPrepared(req, res, OK, BODY, undefined, clock)
        marks.push((req as { _dumped?: boolean })._dumped)
        return
      }
      if (req.url === '/large') {
        sendPrepared(req, res, OK_LARGE, LARGE, undefined, clock)
        return
      }
      if (req.url === '/large-with') {
        sendPrepared(req, res, OK_LARGE, LARGE, ['X-RateLimit-Remaining', '3'], clock)
        return
      }
      if (req.url?.startsWith('/many/')) {
        const m = MANY[Number(req.url.slice(6))]
        sendPrepared(req, res, m.p, m.body, undefined, clock)
        return
      }
      if (req.url === '/shared') {
        sendPrepared(req, res, OK_SHARED, BODY, undefined, clock)
        return
      }
      if (req.url === '/with') {
        sendPrepared(req, res, OK, BODY, ['X-RateLimit-Remaining', '7'], clock)
        return
      }
      if (req.url === '/file') {
        sendPreparedFile(req, res, OK_FILE, fileFd, BODY.length, false, clock)
        return
      }
      sendPrepared(req, res, OK, BODY, undefined, clock)
    })
    server.keepAliveTimeout = 5000
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    port = (server.address() as AddressInfo).port
  })
  after(async () => {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
    fs.closeSync(fileFd)
    fs.rmSync(fileDir, { recursive: true, force: true })
  })

  it('sends exactly the headers (and Date, Connection, Keep-Alive) that writeHead sends, and keeps the connection', async () => {
    const req = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`
    const { responses, closedByServer } = await exchange(port, req('/plain') + req('/p') + req('/p'), [false, false, false])
    assert.equal(closedByServer, false)
    assert.equal(responses.length, 3)
    const [plain, a, b] = responses
    for (const r of [a, b]) {
      assert.equal(r.status, 'HTTP/1.1 200 OK')
      assert.deepEqual(r.body, BODY)
      assert.deepEqual([...r.headers.keys()].sort(), [...plain.headers.keys()].sort())
      for (const [k, v] of plain.headers) if (k !== 'date') assert.equal(r.headers.get(k), v, k)
      assert.ok(Math.abs(Date.parse(r.headers.get('date')!) - Date.now()) < 5000)
    }
    assert.equal(a.headers.get('connection'), 'keep-alive')
    assert.equal(a.headers.get('keep-alive'), 'timeout=5')
  })

  it('answers pipelined requests in order, behind a slower ordinary answer', async () => {
    const req = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`
    const { responses } = await exchange(port, req('/slow') + req('/p') + req('/with') + req('/p'), [false, false, false, false])
    assert.deepEqual(
      responses.map((r) => r.body.toString()),
      ['slow', BODY.toString(), BODY.toString(), BODY.toString()],
    )
    assert.equal(responses[2].headers.get('x-ratelimit-remaining'), '7')
    assert.equal(responses[1].headers.has('x-ratelimit-remaining'), false)
  })

  it('HEAD: the same headers, no body, and the connection goes on', async () => {
    const { responses, closedByServer } = await exchange(port, 'HEAD /p HTTP/1.1\r\nHost: x\r\n\r\nGET /with HTTP/1.1\r\nHost: x\r\n\r\n', [true, false])
    assert.equal(closedByServer, false)
    assert.equal(responses[0].headers.get('content-length'), String(BODY.length))
    assert.equal(responses[0].headers.get('etag'), '"abc"')
    assert.equal(responses[0].body.length, 0)
    assert.deepEqual(responses[1].body, BODY)
    assert.equal(responses[1].headers.get('x-ratelimit-remaining'), '7')
  })

  it('closes as Node would when the client asks (Connection: close, HTTP/1.0 without keep-alive)', async () => {
    for (const raw of ['GET /p HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'GET /with HTTP/1.0\r\n\r\n']) {
      const { responses, closedByServer } = await exchange(port, raw, [false])
      assert.equal(closedByServer, true, raw)
      assert.equal(responses[0].headers.get('connection'), 'close')
      assert.deepEqual(responses[0].body, BODY)
    }
    // HTTP/1.0 with keep-alive stays open
    const { closedByServer } = await exchange(port, 'GET /p HTTP/1.0\r\nConnection: keep-alive\r\n\r\n', [false])
    assert.equal(closedByServer, false)
  })

  it('sends a body too large to join in parts, byte for byte, with or without per-request headers', async () => {
    const req = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`
    const { responses } = await exchange(port, req('/large') + req('/p') + req('/large-with') + req('/with'), [false, false, false, false])
    assert.deepEqual(
      responses.map((r) => r.body.length),
      [LARGE.length, BODY.length, LARGE.length, BODY.length],
    )
    assert.ok(responses[0].body.equals(LARGE) && responses[2].body.equals(LARGE))
    assert.equal(responses[2].headers.get('x-ratelimit-remaining'), '3')
    assert.equal(responses[3].headers.get('x-ratelimit-remaining'), '7')
    assert.equal(responses[0].headers.has('x-ratelimit-remaining'), false)
    assert.equal(responses[0].headers.get('connection'), 'keep-alive')
  })

  it('joins at most WHOLE_BUDGET bytes a second, answers correctly past it, and lets joined answers go when the second changes', async () => {
    // early in a second of the service clock, which stays there until the test moves it
    clock.set(Math.floor(clock.now() / 1000) * 1000 + 20)
    const req = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`
    const raw = MANY.map((_, i) => req(`/many/${i}`)).join('')
    const { responses } = await exchange(
      port,
      raw,
      MANY.map(() => false),
      1500,
    )
    assert.equal(responses.length, MANY.length)
    responses.forEach((r, i) => {
      assert.ok(r.body.equals(MANY[i].body), `body ${i}`)
      assert.equal(r.headers.get('x-n'), String(i))
    })
    assert.equal(new Set(responses.map((r) => r.headers.get('date'))).size, 1, 'all dated in the same second')
    const held = wholeBytesHeld()
    assert.ok(held <= WHOLE_BUDGET, `held ${held}`)
    // the budget was used up, not more
    assert.ok(held > WHOLE_BUDGET - WHOLE_MAX_BODY - 1024, `held ${held}`)
    // the next second's first prepared answer drops them all
    clock.advance(1000)
    const { responses: next } = await exchange(port, req('/p'), [false])
    assert.deepEqual(next[0].body, BODY)
    assert.ok(wholeBytesHeld() < 1024, `held ${wholeBytesHeld()} after the second changed`)
    assert.equal(Date.parse(next[0].headers.get('date')!) / 1000, Math.floor(clock.now() / 1000))
    // a clock set back a second dates answers by it too
    clock.advance(-1000)
    const { responses: back } = await exchange(port, req('/p'), [false])
    assert.equal(Date.parse(back[0].headers.get('date')!) / 1000, Math.floor(clock.now() / 1000))
  })

  it("reads a file's body once a second: the second's whole answer is shared, then read again", async () => {
    clock.set(Math.floor(clock.now() / 1000) * 1000 + 1000 + 20)
    const req = 'GET /file HTTP/1.1\r\nHost: x\r\n\r\n'
    const first = await exchange(port, req, [false])
    const held = wholeBytesHeld()
    assert.ok(first.responses[0].body.equals(BODY))
    assert.equal(first.responses[0].headers.get('etag'), '"file"')
    // the same bytes in the file's place (a blob file never changes; this one does, to show
    // whether it was read): within the second the shared answer goes out, not a new read
    const other = Buffer.from(BODY.toString('latin1').replace('prepared', 'PREPARED'), 'latin1')
    fs.writeFileSync(path.join(fileDir, 'body'), other, { flag: 'r+' })
    const again = await exchange(port, req + req, [false, false])
    assert.ok(
      again.responses.every((r) => r.body.equals(BODY)),
      'read once in the second',
    )
    assert.equal(wholeBytesHeld(), held, 'no second copy for the same answer')
    // the next second drops it and reads the file again
    clock.advance(1000)
    const next = await exchange(port, req, [false])
    assert.ok(next.responses[0].body.equals(other), 'read again in the next second')
    assert.equal(Date.parse(next.responses[0].headers.get('date')!) / 1000, Math.floor(clock.now() / 1000))
  })

  it("over TLS with sendfile on, reads a file's body once a second too (the kernel cannot send it)", async (t) => {
    // in CI the addon is always built (as test/unit/sendfile.test.ts checks); elsewhere there may be no zero-copy path to avoid
    if (!sendfileAvailable() && process.env.CI !== 'true') return t.skip('the sendfile addon is not built here')
    const tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-prepared-tls-'))
    const file = path.join(tlsDir, 'body')
    fs.writeFileSync(file, BODY)
    const fd = fs.openSync(file, 'r')
    const tls = (await tlsMaterial(loadConfig({ DATA_DIR: tlsDir })))!
    const p = prepare(200, ['Content-Type', 'text/html; charset=utf-8', 'ETag', '"tls"', 'Content-Length', String(BODY.length)])
    const server = https.createServer(tls, (req, res) => sendPreparedFile(req, res, p, fd, BODY.length, true, clock))
    try {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`
      // kept alive, as browsers and wrk keep theirs: a closing answer takes the ordinary path
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1 })
      after(() => agent.destroy())
      const get = () =>
        new Promise<Buffer>((resolve, reject) => {
          https
            .get(url, { rejectUnauthorized: false, agent }, (res) => {
              const parts: Buffer[] = []
              res.on('data', (d: Buffer) => parts.push(d))
              res.on('end', () => resolve(Buffer.concat(parts)))
            })
            .on('error', reject)
        })
      clock.set(Math.floor(clock.now() / 1000) * 1000 + 1000 + 20)
      assert.ok((await get()).equals(BODY))
      // the file changes in place (a blob file never does): within the second the joined
      // answer goes out again, with no read of the file per request
      const other = Buffer.from(BODY.toString('latin1').replace('prepared', 'PREPARED'), 'latin1')
      fs.writeFileSync(file, other, { flag: 'r+' })
      assert.ok((await get()).equals(BODY), 'read once in the second, as over plain HTTP without sendfile')
      clock.advance(1000)
      assert.ok((await get()).equals(other), 'read again in the next second')
    } finally {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
      fs.closeSync(fd)
      fs.rmSync(tlsDir, { recursive: true, force: true })
    }
  })

  it('marks the request drained at once; a body sent with it is dropped and the connection goes on', async () => {
    const big = 'b'.repeat(100_000) // more than a stream's buffer: left unread, it would stall the connection
    const raw =
      'GET /mark HTTP/1.1\r\nHost: x\r\n\r\n' +
      'GET /mark HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n' +
      `GET /mark HTTP/1.1\r\nHost: x\r\nContent-Length: ${big.length}\r\n\r\n${big}` +
      'GET /mark HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' +
      'GET /p HTTP/1.1\r\nHost: x\r\n\r\n'
    marks.length = 0
    const { responses, closedByServer } = await exchange(port, raw, [false, false, false, false, false], 1000)
    assert.equal(closedByServer, false)
    assert.equal(responses.length, 5)
    for (const r of responses) assert.deepEqual(r.body, BODY)
    assert.deepEqual(marks, [true, true, true, true])
    // a request someone listens to is left to Node, and still emits 'close'
    marks.length = 0
    await exchange(port, 'GET /listened HTTP/1.1\r\nHost: x\r\n\r\n', [false])
    assert.deepEqual(marks, [false])
    assert.deepEqual(closes, ['/listened'])
  })

  it('a shared head: one encoded copy per text, the whole header list read back, the same bytes on the wire', async () => {
    assert.equal(sharedHead(200, [...HEADERS.slice(2, 4)]), SHARED)
    assert.notEqual(sharedHead(404, HEADERS.slice(2, 4)), SHARED)
    const list = headerList(OK_SHARED)
    assert.deepEqual(list, [...HEADERS.slice(2, 4), ...HEADERS.slice(0, 2), ...HEADERS.slice(4), 'X-Note', 'a: b'])
    const req = (path: string, method = 'GET') => `${method} ${path} HTTP/1.1\r\nHost: x\r\n\r\n`
    // GET takes the prepared bytes, HEAD the header list (writeHead): both carry every header
    const { responses } = await exchange(port, req('/shared') + req('/shared', 'HEAD'), [false, true])
    for (const r of responses) {
      assert.equal(r.status, 'HTTP/1.1 200 OK')
      for (let i = 0; i < list.length; i += 2) assert.equal(r.headers.get(list[i].toLowerCase()), list[i + 1], list[i])
    }
    assert.deepEqual(responses[0].body, BODY)
  })

  it('refuses, when prepared, a header writeHead would refuse', () => {
    assert.throws(() => prepare(200, ['Bad Name', 'x']))
    assert.throws(() => prepare(200, ['X-Split', 'a\r\nInjected: 1']))
    assert.throws(() => prepare(299, []))
  })
})
