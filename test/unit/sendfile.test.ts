import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import crypto from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { exchange, parseResponses } from '../support/raw-http.js'
import { prepare, sendPrepared, sendPreparedFile } from '../../src/http/prepared-response.js'
import { sendfileAvailable, sendfileStats, SENDFILE_MIN_BODY } from '../../src/http/sendfile.js'
import { tlsMaterial } from '../../src/server.js'
import { loadConfig } from '../../src/config.js'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'

// `npm install` builds the addon (scripts/build-native.mjs); CI must have it, a laptop without a
// compiler runs the rest of the suite and skips this file with the reason
const SKIP = !sendfileAvailable() && process.env.CI !== 'true' ? 'native addon not built (npm install prints why); the service copies bodies instead' : false

const pageOf = (n: number, seed: string) => {
  const b = Buffer.alloc(n)
  for (let at = 0; at < n; at += 32) crypto.createHash('sha256').update(`${seed}${at}`).digest().copy(b, at)
  return b
}
const MEDIUM = pageOf(50 * 1024, 'm')
// more than a loopback connection's buffers take at once (tcp_wmem 4 MiB + tcp_rmem 6 MiB at most)
const LARGE = pageOf(16 * 1024 * 1024, 'l')
const SMALL = Buffer.from('<!doctype html><p>small</p>')
const EMPTY = Buffer.alloc(0)
const headersFor = (b: Buffer) => ['Content-Type', 'application/octet-stream', 'ETag', `"${b.length}"`, 'Content-Length', String(b.length)]

const snapshot = () => ({ ...sendfileStats })

describe('sendfile: bodies sent from their files', { skip: SKIP }, () => {
  // each body in its own file, open read-only, as the service holds its blob files
  // (src/storage/open-files.ts); `size` is what the page's Content-Length states
  const pages = new Map<string, { body: Buffer; fd: number; size: number; ok: ReturnType<typeof prepare> }>()
  let filesDir = ''
  let server: http.Server
  let tlsServer: https.Server
  let port = 0
  let tlsPort = 0
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.url === '/block') {
      // busy for a while, so that a client in another process can go away before the answer
      const until = Date.now() + 500
      while (Date.now() < until) {
        /* blocking on purpose */
      }
    }
    if (req.url === '/slow') {
      setTimeout(() => {
        res.writeHead(200, ['Content-Length', '4'])
        res.end('slow')
      }, 50)
      return
    }
    const p = pages.get(req.url ?? '')
    if (!p) {
      res.writeHead(404, ['Content-Length', '0'])
      res.end()
      return
    }
    // per-request headers: an answer from memory (as the KV public read), copied
    if (req.url === '/medium-with') sendPrepared(req, res, p.ok, p.body, ['X-Extra', '1'])
    // as src/features/sites/serve.ts sends a page from its blob file
    else sendPreparedFile(req, res, p.ok, p.fd, p.size, true)
  }

  before(async () => {
    assert.ok(sendfileAvailable(), 'the native addon must be built in CI (npm install runs scripts/build-native.mjs)')
    filesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-sendfile-files-'))
    const fileOf = (name: string, body: Buffer) => {
      const file = path.join(filesDir, name.slice(1))
      fs.writeFileSync(file, body)
      return fs.openSync(file, 'r')
    }
    for (const [name, body] of [
      ['/medium', MEDIUM],
      ['/large', LARGE],
      ['/small', SMALL],
      ['/empty', EMPTY],
      ['/medium-with', MEDIUM],
      ['/block', MEDIUM],
    ] as const) {
      pages.set(name, { body, fd: fileOf(name, body), size: body.length, ok: prepare(200, headersFor(body)) })
    }
    // a head larger than the socket takes at once: the kernel stops inside it
    pages.set('/huge-head', {
      body: MEDIUM,
      fd: fileOf('/huge-head', MEDIUM),
      size: MEDIUM.length,
      ok: prepare(200, ['X-Pad', 'p'.repeat(12 * 1024 * 1024), ...headersFor(MEDIUM)]),
    })
    // a file shorter than the size its answer states (a blob file cut short on disk)
    pages.set('/short', {
      body: MEDIUM,
      fd: fileOf('/short', MEDIUM.subarray(0, MEDIUM.length - 1000)),
      size: MEDIUM.length,
      ok: prepare(200, headersFor(MEDIUM)),
    })
    server = http.createServer(handler)
    server.keepAliveTimeout = 5000
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    port = (server.address() as AddressInfo).port
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-sendfile-'))
    const tls = (await tlsMaterial(loadConfig({ DATA_DIR: dir })))!
    // the key is in memory now: no private key stays in the temp folder
    fs.rmSync(dir, { recursive: true, force: true })
    tlsServer = https.createServer(tls, handler)
    await new Promise<void>((r) => tlsServer.listen(0, '127.0.0.1', r))
    tlsPort = (tlsServer.address() as AddressInfo).port
  })
  after(async () => {
    server.closeAllConnections()
    tlsServer.closeAllConnections()
    await Promise.all([new Promise((r) => server.close(r)), new Promise((r) => tlsServer.close(r))])
    for (const p of pages.values()) fs.closeSync(p.fd)
    fs.rmSync(filesDir, { recursive: true, force: true })
  })

  it('sends every non-empty body from its file, small ones too; an empty one is written as usual', async () => {
    assert.equal(SENDFILE_MIN_BODY, 1)
    const s0 = snapshot()
    const empty = await exchange(port, 'GET /empty HTTP/1.1\r\nHost: x\r\n\r\n', [false])
    assert.equal(empty.responses[0].status, 'HTTP/1.1 200 OK')
    assert.equal(empty.responses[0].headers.get('content-length'), '0')
    assert.equal(empty.responses[0].body.length, 0)
    assert.deepEqual(snapshot(), s0, 'nothing to send from the file')
    for (const [path, body] of [
      ['/small', SMALL],
      ['/medium', MEDIUM],
    ] as const) {
      const r = await exchange(port, `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, [false])
      assert.ok(r.responses[0].body.equals(body), path)
      assert.equal(r.responses[0].headers.get('content-length'), String(body.length))
    }
    assert.equal(sendfileStats.whole, s0.whole + 2, 'the 27-byte and the 50 KB body both went by sendfile')
  })

  it('sends the same bytes as the copying path, keeps the connection, and keeps pipelined answers in order', async () => {
    const s0 = snapshot()
    const req = (p: string) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`
    const raw =
      req('/medium') + req('/small') + req('/slow') + req('/medium') + req('/medium-with') + 'HEAD /medium HTTP/1.1\r\nHost: x\r\n\r\n' + req('/medium')
    const { responses, closedByServer } = await exchange(port, raw, [false, false, false, false, false, true, false], 1000)
    assert.equal(closedByServer, false)
    assert.equal(responses.length, 7)
    const bodies = responses.map((r) => r.body)
    assert.ok(bodies[0].equals(MEDIUM) && bodies[3].equals(MEDIUM) && bodies[4].equals(MEDIUM) && bodies[6].equals(MEDIUM))
    assert.ok(bodies[1].equals(SMALL))
    assert.equal(bodies[2].toString(), 'slow')
    assert.equal(bodies[5].length, 0)
    for (const i of [0, 3, 4, 5, 6]) {
      assert.equal(responses[i].status, 'HTTP/1.1 200 OK')
      assert.equal(responses[i].headers.get('content-length'), String(MEDIUM.length))
      assert.equal(responses[i].headers.get('etag'), `"${MEDIUM.length}"`)
      assert.equal(responses[i].headers.get('connection'), 'keep-alive')
    }
    assert.equal(responses[4].headers.get('x-extra'), '1')
    // the first went by sendfile; the ones queued behind /slow, with extra headers or HEAD were
    // copied (Node holds a pipelined answer until the one before it is done)
    assert.ok(sendfileStats.whole - s0.whole >= 1, `whole: ${sendfileStats.whole - s0.whole}`)
    assert.equal(sendfileStats.failed, s0.failed)
  })

  /** Pipelines `paths` on one connection, reads nothing for a while, then everything. */
  async function lateRead(paths: string[], wantBytes: number): Promise<Buffer> {
    const sock = net.connect(port, '127.0.0.1')
    await new Promise((r) => sock.once('connect', r))
    sock.pause()
    const chunks: Buffer[] = []
    let got = 0
    sock.write(paths.map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''))
    await new Promise((r) => setTimeout(r, 300))
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`read ${got} of at least ${wantBytes} bytes`)), 20_000)
      sock.on('data', (d) => {
        chunks.push(d)
        got += d.length
        if (got >= wantBytes) {
          clearTimeout(t)
          setTimeout(resolve, 100)
        }
      })
      sock.resume()
    })
    sock.destroy()
    return Buffer.concat(chunks)
  }

  it('hands to Node what a full socket did not take, byte for byte, when the client reads late', async () => {
    const s0 = snapshot()
    const raw = await lateRead(['/large', '/large', '/medium'], 2 * LARGE.length + MEDIUM.length)
    const responses = parseResponses(raw, [false, false, false])
    assert.ok(responses[0].body.equals(LARGE) && responses[1].body.equals(LARGE))
    assert.ok(responses[2].body.equals(MEDIUM))
    assert.equal(sendfileStats.finishedByCopy, s0.finishedByCopy + 1, 'the kernel took part of the first answer; Node wrote the rest')
    assert.equal(sendfileStats.whole, s0.whole, 'the others were queued behind it, and copied')
  })

  it('hands to Node the rest of a head the kernel stopped inside', async () => {
    const s0 = snapshot()
    const raw = await lateRead(['/huge-head', '/medium'], 12 * 1024 * 1024 + 2 * MEDIUM.length)
    const responses = parseResponses(raw, [false, false])
    assert.equal(responses[0].headers.get('x-pad')!.length, 12 * 1024 * 1024)
    assert.ok(responses[0].body.equals(MEDIUM) && responses[1].body.equals(MEDIUM))
    assert.equal(sendfileStats.finishedByCopy, s0.finishedByCopy + 1)
  })

  it('closes the connection of a client that went away before its answer, and serves the next one', async () => {
    const s0 = snapshot()
    // a client in another process: it asks, then resets the connection while the server is busy
    const client = spawn(
      process.execPath,
      [
        '-e',
        `
      const s = require('net').connect(${port}, '127.0.0.1', () => {
        s.write('GET /block HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
        setTimeout(() => { s.resetAndDestroy(); setTimeout(() => process.exit(0), 20) }, 150)
      })`,
      ],
      { stdio: 'inherit' },
    )
    const exited = new Promise((r) => client.once('exit', r))
    // wait until the server has answered (or tried to): the handler blocks for 500 ms, and the
    // client resets 150 ms after asking (the server must have read the request by then)
    for (let i = 0; i < 100 && sendfileStats.failed === s0.failed && sendfileStats.whole === s0.whole; i++) await new Promise((r) => setTimeout(r, 20))
    await exited
    assert.equal(sendfileStats.failed, s0.failed + 1, `the peer was gone when the answer was sent: ${JSON.stringify(snapshot())}`)
    const { responses } = await exchange(port, 'GET /medium HTTP/1.1\r\nHost: x\r\n\r\n', [false])
    assert.ok(responses[0].body.equals(MEDIUM))
  })

  it('copies over TLS (nothing to hand over: the bytes are encrypted in the process)', async () => {
    const s0 = snapshot()
    const body = await new Promise<Buffer>((resolve, reject) => {
      https
        .get({ host: '127.0.0.1', port: tlsPort, path: '/medium', rejectUnauthorized: false }, (res) => {
          const c: Buffer[] = []
          res.on('data', (d) => c.push(d))
          res.on('end', () => resolve(Buffer.concat(c)))
        })
        .on('error', reject)
    })
    assert.ok(body.equals(MEDIUM))
    assert.deepEqual(snapshot(), s0)
  })

  it('never sends a torn answer: a file shorter than its size closes the connection', async () => {
    const s0 = snapshot()
    const sock = net.connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    sock.on('data', (d) => chunks.push(d))
    const closed = new Promise<void>((r) => sock.once('close', () => r()))
    sock.on('error', () => {})
    sock.write('GET /short HTTP/1.1\r\nHost: x\r\n\r\n')
    await closed
    const got = Buffer.concat(chunks)
    const end = got.indexOf('\r\n\r\n')
    assert.ok(end > 0, 'the head went out with the body')
    assert.equal(got.subarray(0, end).toString('latin1').split('\r\n')[0], 'HTTP/1.1 200 OK')
    assert.ok(got.length - end - 4 < MEDIUM.length, 'fewer body bytes than the Content-Length: the client sees a cut answer, never a wrong one')
    assert.equal(sendfileStats.failed, s0.failed + 1)
  })
})
