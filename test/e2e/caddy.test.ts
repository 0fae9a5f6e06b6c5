import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import tls from 'node:tls'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { Agent, request } from 'undici'
import { multipart, startServer, type TestServer } from '../support/server.js'
import { HTML } from '../support/hosting.js'
import { closedPort } from '../support/ports.js'
import { pastNotYetValid } from '../support/caddy-clock.js'

// deploy/Caddyfile, run by a real Caddy (Debian's package) in front of a real svc: the service
// on svc.test, users' origins on *.pages.test with on-demand TLS gated by svc's ask endpoint.
// The shipped file is used as is, with the names and ports swapped for the test's and a few
// global options added so that everything stays on loopback and inside a temporary directory:
// Caddy's internal CA instead of ACME (local_certs), no admin endpoint, no trust-store install.
// It tests the proxy, not the database, so it runs on SQLite only. SHOW_CADDY_LOG=1 prints
// Caddy's log at the end. Without Caddy it skips (loudly), except in CI (CI=true), where it fails.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const CADDY = process.env.CADDY_BIN ?? 'caddy'
const caddyFound = spawnSync(CADDY, ['version'], { encoding: 'utf8' }).status === 0
const SKIP =
  !caddyFound && process.env.CI !== 'true' ? `SKIPPED: "${CADDY}" not found (apt-get install caddy, or set CADDY_BIN); deploy/Caddyfile is not tested` : false
if (SKIP) console.warn(`\n*** test/e2e/caddy.test.ts ${SKIP} ***\n`)

/** Every name of the test resolves to loopback, and nothing else resolves at all. */
function lookup(hostname: string, options: { all?: boolean }, cb: (...args: unknown[]) => void): void {
  if (!/(^|\.)(svc\.test|pages\.test)$/.test(hostname)) {
    cb(Object.assign(new Error(`test lookup: ${hostname} is not a test name`), { code: 'ENOTFOUND' }))
    return
  }
  if (options?.all) cb(null, [{ address: '127.0.0.1', family: 4 }])
  else cb(null, '127.0.0.1', 4)
}

/** `from` replaced by `to` everywhere, failing when the shipped file no longer contains it. */
function swap(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `deploy/Caddyfile no longer contains "${from}": update this test`)
  return text.split(from).join(to)
}

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  header(n: string): string | undefined
}

describe("deploy/Caddyfile: svc behind Caddy, users' origins with on-demand TLS", { skip: SKIP }, () => {
  let s: TestServer
  let caddy: ChildProcess | null = null
  let caddyExit: Promise<void> = Promise.resolve()
  let tmp = ''
  let log = ''
  let port = 0
  let httpPort = 0
  let rootCa = ''
  let agent: Agent
  let alice: Awaited<ReturnType<TestServer['user']>>
  const page = HTML('alice home', '<script type="module" src="./app.js"></script>')

  const get = async (url: string, o: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<Answer> => {
    const r = await pastNotYetValid(() => request(url, { method: (o.method ?? 'GET') as 'GET', headers: o.headers, body: o.body, dispatcher: agent }))
    const text = await r.body.text()
    const hs = r.headers as Answer['headers']
    return {
      status: r.statusCode,
      headers: hs,
      text,
      header: (n) => {
        const v = hs[n.toLowerCase()]
        return Array.isArray(v) ? v.join(', ') : v
      },
    }
  }
  const svcUrl = (p: string) => `https://svc.test:${port}${p}`
  const siteUrl = (user: string, p: string) => `https://${user}.pages.test:${port}${p}`

  /** The TLS handshake for `servername` on Caddy's HTTPS port: the certificate, or the error. */
  const handshake = (servername: string) => pastNotYetValid(() => handshakeOnce(servername))
  const handshakeOnce = (servername: string) =>
    new Promise<tls.PeerCertificate | Error>((resolve) => {
      const sock = tls.connect({ host: '127.0.0.1', port, servername, ca: rootCa, ALPNProtocols: ['http/1.1'] }, () => {
        const cert = sock.getPeerCertificate()
        sock.end()
        resolve(cert)
      })
      sock.setTimeout(15_000, () => sock.destroy(new Error('handshake timed out')))
      sock.once('error', (e) => resolve(e))
    })

  before(async () => {
    assert.ok(caddyFound, `"${CADDY}" must be installed where CI runs (apt-get install caddy)`)
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-caddy-'))
    log = path.join(tmp, 'caddy.log')
    port = await closedPort()
    do httpPort = await closedPort()
    while (httpPort === port)

    s = await startServer({
      engine: 'sqlite',
      env: { TRUST_PROXY: '1', CONTENT_DOMAIN: 'pages.test', PUBLIC_URL: `https://svc.test:${port}` },
    })
    alice = await s.user({ name: 'alice' })
    const svcPort = new URL(s.url).port

    let conf = fs.readFileSync(path.join(root, 'deploy', 'Caddyfile'), 'utf8')
    conf = swap(conf, 'svc.example.com', 'svc.test')
    conf = swap(conf, 'pages.example.net', 'pages.test')
    conf = swap(conf, '127.0.0.1:8080', `127.0.0.1:${svcPort}`)
    const globals = `\tadmin off\n\tlocal_certs\n\tskip_install_trust\n\thttp_port ${httpPort}\n\thttps_port ${port}\n`
    assert.match(conf, /^\{$/m, 'deploy/Caddyfile starts with a global options block')
    conf = conf.replace(/^\{$/m, `{\n${globals}`)
    const file = path.join(tmp, 'Caddyfile')
    fs.writeFileSync(file, conf)

    // HOME and XDG_*: Caddy writes its CA, certificates and autosave under tmp, nowhere else
    const out = fs.openSync(log, 'a')
    caddy = spawn(CADDY, ['run', '--config', file, '--adapter', 'caddyfile'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, XDG_DATA_HOME: path.join(tmp, 'data'), XDG_CONFIG_HOME: path.join(tmp, 'config') },
      stdio: ['ignore', out, out],
    })
    fs.closeSync(out)
    const child = caddy
    caddyExit = new Promise((r) => child.once('exit', () => r()))
    let exited = false
    void caddyExit.then(() => {
      exited = true
    })
    const failed = (why: string) => new Error(`${why}; Caddy's log:\n${fs.readFileSync(log, 'utf8').slice(-4000)}`)

    // the internal CA is created at start; the service's certificate is issued soon after
    const rootFile = path.join(tmp, 'data', 'caddy', 'pki', 'authorities', 'local', 'root.crt')
    const deadline = Date.now() + 30_000
    while (!fs.existsSync(rootFile)) {
      if (exited) throw failed('caddy exited')
      if (Date.now() > deadline) throw failed('no internal CA after 30 s')
      await new Promise((r) => setTimeout(r, 100))
    }
    await new Promise((r) => setTimeout(r, 100))
    rootCa = fs.readFileSync(rootFile, 'utf8')
    agent = new Agent({ connect: { ca: rootCa, lookup: lookup as never }, keepAliveTimeout: 1000 })
    for (;;) {
      const r = await get(svcUrl('/healthz')).catch((e: Error) => e)
      if (!(r instanceof Error) && r.status === 200) break
      if (exited) throw failed('caddy exited')
      if (Date.now() > deadline) throw failed(`svc.test/healthz not answering through Caddy after 30 s: ${r instanceof Error ? r.message : r.status}`)
      await new Promise((r) => setTimeout(r, 200))
    }
  })

  after(async () => {
    if (caddy?.pid !== undefined && caddy.exitCode === null && caddy.signalCode === null) {
      process.kill(caddy.pid, 'SIGTERM')
      const t = setTimeout(() => caddy?.pid !== undefined && caddy.exitCode === null && process.kill(caddy.pid, 'SIGKILL'), 5000)
      await caddyExit
      clearTimeout(t)
    }
    await agent?.close()
    await s?.close()
    if (process.env.SHOW_CADDY_LOG) console.log(fs.readFileSync(log, 'utf8'))
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
  })

  it('serves the API on the service host, with the X-Forwarded-* headers set by Caddy', async () => {
    // a client's own X-Forwarded-Proto / -For are replaced, never passed on
    const me = await get(svcUrl('/svc_api/me'), {
      headers: { authorization: `Bearer ${alice.key}`, 'x-forwarded-proto': 'http', 'x-forwarded-for': '203.0.113.9' },
    })
    assert.equal(me.status, 200, me.text)
    assert.equal(JSON.parse(me.text).data?.username ?? JSON.parse(me.text).username, 'alice')

    const mp = multipart([{ name: 'file', filename: 'home.html', type: 'text/html', data: page }])
    const up = await get(svcUrl('/svc_api/upload'), {
      method: 'POST',
      body: mp.body,
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': mp.contentType },
    })
    assert.equal(up.status, 200, up.text)
  })

  it("serves alice's page on alice.pages.test, on a certificate of its own, without the sandbox", async () => {
    const r = await get(siteUrl('alice', '/home.html'))
    assert.equal(r.status, 200, r.text)
    assert.equal(r.text, page)
    assert.doesNotMatch(r.header('content-security-policy') ?? '', /(^|;\s*)sandbox\b/)
    assert.equal(r.header('set-cookie'), undefined)

    // on-demand: a certificate for exactly this name, not the wildcard
    const cert = await handshake('alice.pages.test')
    assert.ok(!(cert instanceof Error), cert instanceof Error ? cert.message : '')
    assert.equal(cert.subjectaltname, 'DNS:alice.pages.test')
  })

  it("has no API on a user's origin", async () => {
    const r = await get(siteUrl('alice', '/svc_api/me'), { headers: { authorization: `Bearer ${alice.key}` } })
    assert.equal(r.status, 404)
    assert.ok(!r.text.includes('alice'), r.text)
    const up = await get(siteUrl('alice', '/svc_api/upload'), { method: 'POST', body: 'x', headers: { authorization: `Bearer ${alice.key}` } })
    assert.equal(up.status, 405)
    const login = await get(siteUrl('alice', '/login'))
    assert.equal(login.status, 404)
  })

  it("refuses on-demand certificates for names that are not users' origins", async () => {
    for (const name of ['bob.pages.test', 'x.alice.pages.test', 'pages.test', 'evil.test']) {
      const r = await handshake(name)
      assert.ok(r instanceof Error, `${name}: the handshake must fail, got a certificate for ${(r as tls.PeerCertificate).subjectaltname}`)
    }
    await assert.rejects(get(siteUrl('bob', '/home.html')))
    // because svc's ask endpoint said no (asked directly, as Caddy does)...
    const ask = (d: string) => request(`${s.url}/.well-known/svc/tls-allowed?domain=${d}`).then(async (r) => (await r.body.dump(), r.statusCode))
    assert.equal(await ask('bob.pages.test'), 404)
    assert.equal(await ask('alice.pages.test'), 200)
    // ...and it says yes as soon as the account exists: no restart, no reload
    await s.user({ name: 'dave' })
    const dave = await handshake('dave.pages.test')
    assert.ok(!(dave instanceof Error), dave instanceof Error ? dave.message : '')
    assert.equal(dave.subjectaltname, 'DNS:dave.pages.test')
    // the ask endpoint and metrics are not for the public
    assert.equal((await get(svcUrl('/.well-known/svc/tls-allowed?domain=alice.pages.test'))).status, 404)
    assert.equal((await get(svcUrl('/metrics'))).status, 404)
  })

  it('serves a published project at the root of its own origin, blog.alice.pages.test, on a certificate of its own', async () => {
    // through Caddy, as alice's client would publish it
    const mp = multipart([
      { name: 'files[]', filename: 'index.html', type: 'text/html', data: '<script type="module" src="/assets/app.js"></script><p>blog</p>' },
      { name: 'files[]', filename: 'assets/app.js', type: 'text/javascript', data: 'export {}' },
    ])
    const auth = { authorization: `Bearer ${alice.key}` }
    const up = await get(svcUrl('/api/folders/blog/batch_upload'), { method: 'POST', body: mp.body, headers: { ...auth, 'content-type': mp.contentType } })
    assert.equal(up.status, 200, up.text)
    assert.equal((await get(svcUrl('/api/folders/blog/publish'), { method: 'POST', headers: auth })).status, 200)
    const blog = (p: string) => `https://blog.alice.pages.test:${port}${p}`
    const r = await get(blog('/'))
    assert.equal(r.status, 200, r.text)
    assert.match(r.text, /<p>blog<\/p>/)
    assert.equal((await get(blog('/assets/app.js'))).text, 'export {}')
    assert.equal((await get(blog('/svc_api/me'), { headers: auth })).status, 404)
    const cert = await handshake('blog.alice.pages.test')
    assert.ok(!(cert instanceof Error), cert instanceof Error ? cert.message : '')
    assert.equal(cert.subjectaltname, 'DNS:blog.alice.pages.test')
    // a project that is not published gets no certificate
    assert.ok((await handshake('draft.alice.pages.test')) instanceof Error)
  })

  it("redirects a browser navigating to the path form to the user's origin", async () => {
    const r = await get(svcUrl('/alice/home.html?x=1'), { headers: { 'sec-fetch-dest': 'document' } })
    assert.equal(r.status, 302)
    assert.equal(r.header('location'), `https://alice.pages.test:${port}/home.html?x=1`)
    const there = await get(r.header('location')!)
    assert.equal(there.status, 200)
    assert.equal(there.text, page)
    // scripts still get the path form
    const script = await get(svcUrl('/alice/home.html'))
    assert.equal(script.status, 200)
    assert.match(script.header('content-security-policy') ?? '', /(^|;\s*)sandbox\b/)
  })

  it('redirects plain HTTP to HTTPS on both hosts', async () => {
    for (const host of ['svc.test', 'alice.pages.test']) {
      const r = await get(`http://${host}:${httpPort}/home.html`)
      assert.equal(r.status, 308, host)
      // Caddy 2.6 leaves a non-default HTTPS port out of this redirect: only the scheme matters here
      assert.match(r.header('location') ?? '', new RegExp(`^https://${host.replace(/\./g, '\\.')}(:${port})?/home\\.html$`), host)
    }
  })

  it('sets the session cookie for the service host only (no Domain attribute)', async () => {
    const r = await get(svcUrl('/login'), {
      method: 'POST',
      body: new URLSearchParams({ username: 'alice', password: alice.password }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    })
    assert.equal(r.status, 200, r.text)
    const cookie = r.header('set-cookie') ?? ''
    assert.match(cookie, /^session=[^;]+;/)
    assert.doesNotMatch(cookie, /;\s*domain=/i)
    assert.match(cookie, /;\s*secure/i)
    // and the session works through the proxy
    const me = await get(svcUrl('/svc_api/me'), { headers: { cookie: cookie.split(';')[0] } })
    assert.equal(me.status, 200, me.text)
  })
})
