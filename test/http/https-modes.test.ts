import crypto from 'node:crypto'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import tls from 'node:tls'
import { request } from 'undici'
import { insecureAgent, startServer, type TestServer } from '../support/server.js'
import { expectError } from '../support/errors.js'
import { HTML, uploadFile } from '../support/hosting.js'
import { ConfigError, loadConfig } from '../../src/config.js'
import { tlsMaterial } from '../../src/server.js'

describe('HTTPS modes', () => {
  it('TRUST_PROXY=1: plain HTTP on PORT, X-Forwarded-Proto decides 1116, X-Forwarded-For is the client', async () => {
    const s = await startServer({ env: { TRUST_PROXY: '1' } })
    try {
      assert.match(s.url, /^http:\/\//)
      const u = await s.user()
      const noProto = await s.get('/svc_api/me', { key: u.key })
      assert.equal(noProto.json.error_code, 1116)
      const http = await s.get('/svc_api/me', { key: u.key, headers: { 'x-forwarded-proto': 'http' } })
      assert.equal(http.json.error_code, 1116)
      const https = await s.get('/svc_api/me', { key: u.key, headers: { 'x-forwarded-proto': 'https' } })
      assert.equal(https.status, 200)
      const page = await s.get('/someone/', { headers: { 'x-forwarded-proto': 'http', host: 'example.test' } })
      assert.equal(page.status, 301)
      assert.equal(page.header('location'), 'https://example.test/someone/')
      // a form post is redirected with 308, which a browser follows with the same method and body
      const post = await s.request('POST', '/someone/site/', {
        headers: { 'x-forwarded-proto': 'http', host: 'example.test', 'content-type': 'application/x-www-form-urlencoded' },
        body: 'form-name=f',
      })
      assert.equal(post.status, 308)
      assert.equal(post.header('location'), 'https://example.test/someone/site/')
      // per-IP limits follow X-Forwarded-For behind the proxy
      const a = await s.get('/svc_api/me', { headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.1' } })
      const b = await s.get('/svc_api/me', { headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.2' } })
      assert.equal(a.header('x-ratelimit-remaining'), '9')
      assert.equal(b.header('x-ratelimit-remaining'), '9')
    } finally {
      await s.close()
    }
  })

  // regression: app.ts matched API paths without the query form, so this one was redirected
  describe('TRUST_PROXY=1: an API path with a query string over plain HTTP answers 1116 like without it, never 301', () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ env: { TRUST_PROXY: '1' } })
    })
    after(() => s.close())
    const overHttp = { 'x-forwarded-proto': 'http', host: 'example.test' }
    for (const p of ['/api', '/api?x=1', '/svc_api', '/svc_api?x=1', '/svc_api/me?x=1']) {
      it(`${p}: 400 / 1116, no redirect`, async () => {
        const r = await s.get(p, { headers: overHttp })
        expectError(r, 400, 1116)
        assert.equal(r.header('location'), undefined)
      })
    }
    it('not an API path: still redirected, query string kept', async () => {
      const page = await s.get('/api-keys?x=1', { headers: overHttp })
      assert.equal(page.status, 301)
      assert.equal(page.header('location'), 'https://example.test/api-keys?x=1')
    })
  })

  describe('without TRUST_PROXY, X-Forwarded-Proto and X-Forwarded-For are ignored', () => {
    let s: TestServer
    before(async () => {
      s = await startServer()
    })
    after(() => s.close())
    it('X-Forwarded-Proto: https over plain HTTP is still 1116', async () => {
      const plain = await s.get('/svc_api/me', { plain: true, headers: { 'x-forwarded-proto': 'https' } })
      assert.equal(plain.json.error_code, 1116)
    })
    // the plain-HTTP listener uses the same API-path matcher as the app
    for (const p of ['/api?x=1', '/svc_api?x=1']) {
      it(`${p} over plain HTTP: 1116`, async () => {
        const q = await s.get(p, { plain: true })
        assert.equal(q.json.error_code, 1116)
      })
    }
    it('a page over plain HTTP redirects to the same host on HTTPS; a Host that is no host name is refused', async () => {
      const port = new URL(s.url).port
      const ok = await s.get('/login?x=1', { plain: true, headers: { host: 'svc.test:8080' } })
      assert.equal(ok.status, 301)
      assert.equal(ok.header('location'), `https://svc.test:${port}/login?x=1`)
      assert.equal((await s.get('/', { plain: true, headers: { host: '[::1]:8080' } })).header('location'), `https://[::1]:${port}/`)
      for (const host of ['evil.example/phish?', 'a b', 'x"y<z>', 'evil.example\\x']) {
        const r = await s.get('/login', { plain: true, headers: { host } })
        assert.equal(r.status, 400, host)
        assert.equal(r.header('location'), undefined)
      }
    })
    it('a request over plain HTTP other than GET and HEAD is redirected with 308, so a form post is sent again', async () => {
      const port = new URL(s.url).port
      const form = { 'content-type': 'application/x-www-form-urlencoded', host: 'svc.test:8080' }
      // 301 turns a POST into a GET (RFC 9110 15.4.2): a path-form page's form post would be lost
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
        const r = await s.request(method, '/someone/site/?x=1', { plain: true, headers: form, body: method === 'OPTIONS' ? undefined : 'form-name=f' })
        assert.equal(r.status, 308, method)
        assert.equal(r.header('location'), `https://svc.test:${port}/someone/site/?x=1`, method)
      }
      for (const method of ['GET', 'HEAD']) {
        const r = await s.request(method, '/someone/site/', { plain: true, headers: { host: 'svc.test:8080' } })
        assert.equal(r.status, 301, method)
        assert.equal(r.header('location'), `https://svc.test:${port}/someone/site/`, method)
      }
    })
    it('1116 over plain HTTP links its explanation on the HTTPS port, where the redirect sends pages', async () => {
      const port = new URL(s.url).port
      const r = await s.get('/svc_api/files', { plain: true, headers: { host: 'svc.test:8080' } })
      expectError(r, 400, 1116)
      assert.equal(r.json.doc_link, `https://svc.test:${port}/docs/errors#1116`)
      const portless = await s.get('/api/folders', { plain: true, headers: { host: 'svc.test' } })
      assert.equal(portless.json.doc_link, `https://svc.test:${port}/docs/errors#1116`)
      // the link opens: the HTTPS port serves the errors page
      const page = await s.get(new URL(r.json.doc_link).pathname)
      assert.equal(page.status, 200)
    })
    // app.inject reaches the routes over no TLS socket and past the plain-HTTP listener: the
    // pages' own upgrade answers it, with the same status rule as the listener (decision 182)
    for (const p of ['/register', '/report']) {
      it(`POST ${p} reached without TLS (app.inject) is upgraded with 308, which keeps its body`, async () => {
        const form = { 'content-type': 'application/x-www-form-urlencoded', host: 'svc.test' }
        const r = await s.app.inject({ method: 'POST', url: p, headers: form, payload: 'username=x' })
        assert.equal(r.statusCode, 308, r.body)
        assert.equal(r.headers.location, `https://svc.test${p}`)
      })
    }
    it('a page reached without TLS (app.inject) is upgraded with 301 for GET and HEAD', async () => {
      for (const method of ['GET', 'HEAD'] as const) {
        const r = await s.app.inject({ method, url: '/login?x=1', headers: { host: 'svc.test' } })
        assert.equal(r.statusCode, 301, method)
        assert.equal(r.headers.location, 'https://svc.test/login?x=1', method)
      }
    })
    it('X-Forwarded-For does not change the rate-limit bucket', async () => {
      const a = await s.get('/svc_api/me', { headers: { 'x-forwarded-for': '203.0.113.1' } })
      const b = await s.get('/svc_api/me', { headers: { 'x-forwarded-for': '203.0.113.2' } })
      assert.equal(Number(a.header('x-ratelimit-remaining')) - 1, Number(b.header('x-ratelimit-remaining')))
    })
  })

  it("closing: a user's page in flight on HTTP_PORT is sent whole, then the port is closed", async () => {
    const s = await startServer()
    // assigned in a callback: the cast keeps TypeScript from narrowing it to null
    let closed = null as Promise<void> | null
    try {
      const u = await s.user()
      // above 2 MiB: streamed from the blob store, so it is still in flight when closing starts
      const page = HTML('big', 'x'.repeat(3 * 1024 * 1024))
      assert.equal((await uploadFile(s, { key: u.key }, 'big.html', page)).status, 200)
      const port = Number(new URL(s.httpUrl).port)
      const body = await new Promise<Buffer>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/big.html', headers: { host: `${u.username}.localhost` } }, (res) => {
          assert.equal(res.statusCode, 200)
          const chunks: Buffer[] = []
          res.once('data', (c: Buffer) => {
            chunks.push(c)
            // the first bytes are here: the server starts closing while the rest is unsent
            res.pause()
            closed = s.close()
            setTimeout(() => {
              res.on('data', (d: Buffer) => chunks.push(d))
              res.resume()
            }, 200)
          })
          res.on('end', () => resolve(Buffer.concat(chunks)))
          res.on('error', reject)
        })
        req.on('error', reject)
      })
      assert.equal(body.length, Buffer.byteLength(page))
      await closed
      const refused = await new Promise<boolean>((resolve) => {
        const c = net.connect(port, '127.0.0.1')
        c.on('connect', () => {
          c.destroy()
          resolve(false)
        })
        c.on('error', () => resolve(true))
      })
      assert.ok(refused, 'HTTP_PORT still accepts connections after close')
    } finally {
      if (!closed) await s.close()
    }
  })

  it('closing: a request that still arrives on an open connection is answered as usual, then the connection closed', async () => {
    const s = await startServer()
    let closed: Promise<void> | null = null
    try {
      const u = await s.user()
      assert.equal((await uploadFile(s, { key: u.key }, 'home.html', HTML('home'))).status, 200)
      const port = Number(new URL(s.url).port)
      const host = `127.0.0.1:${port}`
      const auth = `Authorization: Bearer ${u.key}\r\n`
      const body = '{"key":"a","value":1}'
      // a store in flight (its body half sent) on each connection, then, once the server is
      // closing, the rest of it and a second request: an API route, and a page (a fast path).
      // Node runs pipelined requests side by side: the second does not depend on the first
      const second = [`GET /svc_api/data/list HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n`, `GET /${u.username}/home.html HTTP/1.1\r\nHost: ${host}\r\n\r\n`]
      const conns = second.map((next) => {
        const c = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false })
        c.write(
          `POST /svc_api/data/store HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
        )
        let text = ''
        c.on('data', (d: Buffer) => (text += d.toString('latin1')))
        const ended = new Promise<string>((resolve) => c.on('close', () => resolve(text)))
        return { c, next, ended }
      })
      await new Promise((r) => setTimeout(r, 300))
      closed = s.close()
      await new Promise((r) => setTimeout(r, 50))
      for (const { c, next } of conns) c.write(body.slice(5) + next)
      const [api, page] = await Promise.all(conns.map((x) => x.ended))
      for (const text of [api, page]) {
        const answers = text.split(/(?=HTTP\/1\.1 )/)
        assert.equal(answers.length, 2, text)
        assert.match(answers[0], /^HTTP\/1\.1 200 /, text)
        assert.match(answers[1], /^HTTP\/1\.1 200 /, text)
        assert.match(answers[1], /\r\nconnection: close\r\n/i, text)
      }
      assert.match(api, /"success":true,"data":\{"items":/)
      assert.match(page, /<title>home<\/title>/)
      await closed
    } finally {
      if (!closed) await s.close()
    }
  })

  it('TLS_CERT/TLS_KEY: PORT speaks HTTPS with the given certificate', async () => {
    const certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tls-'))
    await tlsMaterial(loadConfig({ DATA_DIR: certDir }))
    const s = await startServer({ env: { TLS_CERT: path.join(certDir, 'tls-cert.pem'), TLS_KEY: path.join(certDir, 'tls-key.pem') } })
    try {
      const r = await request(`${s.url}/healthz`, { dispatcher: insecureAgent })
      assert.equal(r.statusCode, 200)
      await r.body.dump()
    } finally {
      await s.close()
      fs.rmSync(certDir, { recursive: true, force: true })
    }
  })

  it('TLS_CERT/TLS_KEY that cannot be read, are not PEM, or do not match: a ConfigError naming each variable', async () => {
    const a = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tls-'))
    const b = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tls-'))
    try {
      await tlsMaterial(loadConfig({ DATA_DIR: a }))
      await tlsMaterial(loadConfig({ DATA_DIR: b }))
      const problems = async (cert: string, key: string) => {
        const err = await tlsMaterial(loadConfig({ DATA_DIR: a, TLS_CERT: cert, TLS_KEY: key })).then(
          () => null,
          (e: unknown) => e,
        )
        assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`)
        return err.problems
      }
      const missing = await problems(path.join(a, 'nope.pem'), path.join(a, 'nope-key.pem'))
      assert.equal(missing.length, 2)
      assert.match(missing[0], /^TLS_CERT: cannot read .*nope\.pem.*ENOENT/)
      assert.match(missing[1], /^TLS_KEY: cannot read .*nope-key\.pem.*ENOENT/)
      const swapped = await problems(path.join(a, 'tls-key.pem'), path.join(a, 'tls-cert.pem'))
      assert.deepEqual(
        swapped.map((p) => p.split(':')[0]),
        ['TLS_CERT', 'TLS_KEY'],
      )
      const mismatch = await problems(path.join(a, 'tls-cert.pem'), path.join(b, 'tls-key.pem'))
      assert.equal(mismatch.length, 1)
      assert.match(mismatch[0], /^TLS_KEY: the key .* does not belong to the certificate/)
      // the matching pair is taken as is
      const ok = await tlsMaterial(loadConfig({ DATA_DIR: b, TLS_CERT: path.join(a, 'tls-cert.pem'), TLS_KEY: path.join(a, 'tls-key.pem') }))
      assert.deepEqual(ok!.cert, fs.readFileSync(path.join(a, 'tls-cert.pem')))
    } finally {
      fs.rmSync(a, { recursive: true, force: true })
      fs.rmSync(b, { recursive: true, force: true })
    }
  })

  it("the generated certificate covers users' origins: *.localhost, and *.CONTENT_DOMAIN once it is set", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-self-'))
    try {
      const plain = await tlsMaterial(loadConfig({ DATA_DIR: dir }))
      const x = new crypto.X509Certificate(plain!.cert)
      // (OpenSSL's host check, as some clients', takes no wildcard over a single label: the name is checked as written)
      assert.match(x.subjectAltName ?? '', /DNS:\*\.localhost(,|$)/)
      assert.equal(x.checkHost('localhost'), 'localhost')
      assert.equal(x.checkIP('127.0.0.1'), '127.0.0.1')
      assert.equal(x.checkHost('alice.pages.test'), undefined)
      // a certificate that does not cover a newly set content domain is made again
      const withDomain = await tlsMaterial(loadConfig({ DATA_DIR: dir, CONTENT_DOMAIN: 'pages.test' }))
      const y = new crypto.X509Certificate(withDomain!.cert)
      assert.equal(y.checkHost('alice.pages.test'), '*.pages.test')
      assert.match(y.subjectAltName ?? '', /DNS:\*\.localhost(,|$)/)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('default mode generates a self-signed certificate into DATA_DIR once', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-self-'))
    const cfg = loadConfig({ DATA_DIR: dir })
    const a = await tlsMaterial(cfg)
    const b = await tlsMaterial(cfg)
    assert.ok(a && b)
    assert.deepEqual(a.cert, b.cert)
    assert.equal(fs.statSync(path.join(dir, 'tls-key.pem')).mode & 0o777, 0o600)
    fs.rmSync(dir, { recursive: true, force: true })
  })
})
