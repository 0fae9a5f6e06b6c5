import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import tls from 'node:tls'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { multipart, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { closedPort } from '../support/ports.js'
import { pastNotYetValid } from '../support/caddy-clock.js'
import { startDns, type TestDns } from '../support/dns.js'

// Custom domains through deploy/Caddyfile and a real Caddy (Debian's package): a verified
// domain gets a certificate on demand from Caddy's internal CA and serves its project; an
// unverified one gets no certificate; a removed one stops serving at once. The shipped file is
// used as is, with names and ports swapped and global options that keep everything on loopback
// (internal CA, no admin endpoint, no trust-store install), as in test/e2e/caddy.test.ts.
// curl with --resolve is the client, as an operator would check it. SQLite only (it tests the
// proxy and the routing). Without Caddy or curl it skips (loudly), except in CI, where it fails.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const CADDY = process.env.CADDY_BIN ?? 'caddy'
const found = spawnSync(CADDY, ['version']).status === 0 && spawnSync('curl', ['--version']).status === 0
const SKIP = !found && process.env.CI !== 'true' ? `SKIPPED: "${CADDY}" or curl not found; custom domains behind Caddy are not tested` : false
if (SKIP) console.warn(`\n*** test/e2e/caddy-domains.test.ts ${SKIP} ***\n`)

function swap(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `deploy/Caddyfile no longer contains "${from}": update this test`)
  return text.split(from).join(to)
}

describe('deploy/Caddyfile: custom domains with on-demand TLS', { skip: SKIP }, () => {
  let s: TestServer
  let dns: TestDns
  let caddy: ChildProcess | null = null
  let caddyExit: Promise<void> = Promise.resolve()
  let tmp = ''
  let log = ''
  let port = 0
  let rootFile = ''
  let alice: Awaited<ReturnType<TestServer['user']>>

  /** curl through Caddy, the name resolved to loopback: [exit code, HTTP status, body]. */
  const curl = (host: string, p: string) =>
    pastNotYetValid(
      () => curlOnce(host, p),
      (r) => r.code === 60 && /not yet valid/i.test(r.stderr),
    )
  const curlOnce = async (host: string, p: string): Promise<{ code: number; status: number; body: string; stderr: string }> => {
    const args = [
      '-sS',
      '--max-time',
      '20',
      '--resolve',
      `${host}:${port}:127.0.0.1`,
      '--cacert',
      rootFile,
      '-w',
      '\n%{http_code}',
      `https://${host}:${port}${p}`,
    ]
    const child = spawn('curl', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.stderr.on('data', (c: Buffer) => (err += c.toString()))
    const code = await new Promise<number>((r) => child.once('close', (c) => r(c ?? -1)))
    const nl = out.lastIndexOf('\n')
    return { code, status: Number(out.slice(nl + 1)), body: out.slice(0, nl), stderr: err }
  }

  // the instance trusts the proxy: direct calls say they came over HTTPS, as Caddy's do
  const fwd = { 'x-forwarded-proto': 'https' }

  const handshake = (servername: string) => pastNotYetValid(() => handshakeOnce(servername))
  const handshakeOnce = (servername: string) =>
    new Promise<tls.PeerCertificate | Error>((resolve) => {
      const sock = tls.connect({ host: '127.0.0.1', port, servername, ca: fs.readFileSync(rootFile), ALPNProtocols: ['http/1.1'] }, () => {
        const cert = sock.getPeerCertificate()
        sock.end()
        resolve(cert)
      })
      sock.setTimeout(15_000, () => sock.destroy(new Error('handshake timed out')))
      sock.once('error', (e) => resolve(e))
    })

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-caddy-domains-'))
    log = path.join(tmp, 'caddy.log')
    port = await closedPort()
    let httpPort = await closedPort()
    while (httpPort === port) httpPort = await closedPort()
    dns = await startDns()
    s = await startServer({
      engine: 'sqlite',
      env: { TRUST_PROXY: '1', CONTENT_DOMAIN: 'pages.test', PUBLIC_URL: `https://svc.test:${port}`, DNS_RESOLVER: dns.addr, RATE_LIMITS: HIGH_LIMITS },
    })
    alice = await s.user({ name: 'alice' })
    const mp = multipart([{ name: 'files[]', filename: 'index.html', type: 'text/html', data: '<p>alice on her own domain</p>' }])
    const up = await s.post('/api/folders/site/batch_upload', { key: alice.key, body: mp.body, headers: { ...fwd, 'content-type': mp.contentType } })
    assert.equal(up.status, 200, up.text)
    assert.equal((await s.post('/api/folders/site/publish', { key: alice.key, headers: fwd })).status, 200)

    let conf = fs.readFileSync(path.join(root, 'deploy', 'Caddyfile'), 'utf8')
    conf = swap(conf, 'svc.example.com', 'svc.test')
    conf = swap(conf, 'pages.example.net', 'pages.test')
    conf = swap(conf, '127.0.0.1:8080', `127.0.0.1:${new URL(s.url).port}`)
    assert.match(conf, /^https:\/\/ \{$/m, 'deploy/Caddyfile has a catch-all block for custom domains')
    conf = conf.replace(/^\{$/m, `{\n\tadmin off\n\tlocal_certs\n\tskip_install_trust\n\thttp_port ${httpPort}\n\thttps_port ${port}\n`)
    const file = path.join(tmp, 'Caddyfile')
    fs.writeFileSync(file, conf)
    const out = fs.openSync(log, 'a')
    caddy = spawn(CADDY, ['run', '--config', file, '--adapter', 'caddyfile'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, XDG_DATA_HOME: path.join(tmp, 'data'), XDG_CONFIG_HOME: path.join(tmp, 'config') },
      stdio: ['ignore', out, out],
    })
    fs.closeSync(out)
    const child = caddy
    caddyExit = new Promise((r) => child.once('exit', () => r()))
    rootFile = path.join(tmp, 'data', 'caddy', 'pki', 'authorities', 'local', 'root.crt')
    const deadline = Date.now() + 30_000
    const failed = (why: string) => new Error(`${why}; Caddy's log:\n${fs.readFileSync(log, 'utf8').slice(-4000)}`)
    while (!fs.existsSync(rootFile)) {
      if (child.exitCode !== null) throw failed('caddy exited')
      if (Date.now() > deadline) throw failed('no internal CA after 30 s')
      await new Promise((r) => setTimeout(r, 100))
    }
    for (;;) {
      const r = await curl('svc.test', '/healthz')
      if (r.code === 0 && r.status === 200) break
      if (child.exitCode !== null) throw failed('caddy exited')
      if (Date.now() > deadline) throw failed(`svc.test/healthz not answering through Caddy: ${r.stderr}`)
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
    await s?.close()
    await dns?.close()
    if (process.env.SHOW_CADDY_LOG) console.log(fs.readFileSync(log, 'utf8'))
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
  })

  it('gives an unverified domain no certificate', async () => {
    const add = await s.post('/api/domains', { key: alice.key, headers: fwd, json: { domain: 'www.example.test', project: 'site' } })
    assert.equal(add.status, 200, add.text)
    const r = await handshake('www.example.test')
    assert.ok(r instanceof Error, 'no certificate before verification')
    const c = await curl('www.example.test', '/')
    assert.notEqual(c.code, 0, 'curl fails the TLS handshake')
    assert.ok(!c.body.includes('alice on her own domain'))
  })

  it('serves a verified domain on a certificate of its own', async () => {
    const list = await s.get('/api/domains', { key: alice.key, headers: fwd })
    dns.txt.set('_svc-challenge.www.example.test', [list.json.data.domains[0].verification.value])
    const v = await s.post('/api/domains/www.example.test/verify', { key: alice.key, headers: fwd })
    assert.equal(v.status, 200, v.text)
    const c = await curl('www.example.test', '/')
    assert.equal(c.code, 0, c.stderr)
    assert.equal(c.status, 200)
    assert.equal(c.body, '<p>alice on her own domain</p>')
    const cert = await handshake('www.example.test')
    assert.ok(!(cert instanceof Error), cert instanceof Error ? cert.message : '')
    assert.equal(cert.subjectaltname, 'DNS:www.example.test')
    // nothing of the service on that host
    assert.equal((await curl('www.example.test', '/svc_api/me')).status, 404)
    // other names still get nothing
    assert.ok((await handshake('evil.example.test')) instanceof Error)
  })

  it('stops serving a removed domain at once', async () => {
    const del = await s.request('DELETE', '/api/domains/www.example.test', { key: alice.key, headers: fwd })
    assert.equal(del.status, 200, del.text)
    const c = await curl('www.example.test', '/')
    assert.ok(!c.body.includes('alice on her own domain'), c.body)
    assert.equal((await s.get('/.well-known/svc/tls-allowed?domain=www.example.test')).status, 404)
  })
})
