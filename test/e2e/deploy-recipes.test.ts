import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { request } from 'undici'
import { insecureAgent, multipart, startServer, type TestServer } from '../support/server.js'
import { HTML } from '../support/hosting.js'
import { closedPort } from '../support/ports.js'

// The deployment recipes of deploy/ and the Dockerfile: nginx runs deploy/nginx.conf as
// shipped (names, ports and certificate paths swapped for the test's) in front of a real svc;
// systemd-analyze verifies the unit; dockerfilelint lints the Dockerfile (the image is built
// elsewhere). A missing nginx or systemd-analyze skips its test loudly, except in CI.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const NGINX = process.env.NGINX_BIN ?? '/usr/sbin/nginx'
const has = (bin: string, args: string[]) => spawnSync(bin, args, { encoding: 'utf8' }).status === 0
const skip = (what: string, found: boolean) => {
  if (found || process.env.CI === 'true') return false
  const why = `SKIPPED: ${what} not found`
  console.warn(`\n*** test/e2e/deploy-recipes.test.ts ${why} ***\n`)
  return why
}

/** `from` replaced by `to` everywhere, failing when the shipped file no longer contains it. */
function swap(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `deploy/nginx.conf no longer contains "${from}": update this test`)
  return text.split(from).join(to)
}

/**
 * Whether nginx came up on its ports: it writes its pid file only once every listening socket
 * is bound, and exits (after its own bind retries) when one is taken. A connect alone could reach
 * another test's server that took the port after closedPort() released it.
 */
async function nginxListening(child: ChildProcess, pidFile: string): Promise<boolean> {
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null || child.signalCode !== null) return false
    if (fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim() === String(child.pid)) return true
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error('nginx neither listened nor exited within 10 s')
}

describe('deploy/nginx.conf: svc behind nginx', { skip: skip(NGINX, has(NGINX, ['-v'])) }, () => {
  let s: TestServer
  let nginx: ChildProcess | null = null
  let tmp = ''
  let tlsPort = 0
  let httpPort = 0
  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-nginx-'))
    // ports freed by closedPort() may be taken by a parallel test before nginx binds them: try again
    for (let attempt = 1; ; attempt++) {
      if (await startNginx()) return
      await s.close()
      assert.ok(attempt < 5, `nginx could not bind its ports in 5 attempts:\n${fs.readFileSync(path.join(tmp, 'error.log'), 'utf8').slice(-2000)}`)
    }
  })
  async function startNginx(): Promise<boolean> {
    tlsPort = await closedPort()
    do httpPort = await closedPort()
    while (httpPort === tlsPort)
    s = await startServer({ env: { TRUST_PROXY: '1', CONTENT_DOMAIN: 'pages.test', PUBLIC_URL: `https://svc.test:${tlsPort}` } })
    let conf = fs.readFileSync(path.join(root, 'deploy/nginx.conf'), 'utf8')
    conf = swap(conf, 'listen 80;', `listen 127.0.0.1:${httpPort};`)
    conf = swap(conf, 'listen 443 ssl;', `listen 127.0.0.1:${tlsPort} ssl;`)
    conf = swap(conf, 'server 127.0.0.1:8080;', `server 127.0.0.1:${new URL(s.url).port};`)
    conf = swap(conf, '/etc/ssl/svc/svc.example.com.pem', path.join(s.dataDir, 'tls-cert.pem'))
    conf = swap(conf, '/etc/ssl/svc/svc.example.com.key', path.join(s.dataDir, 'tls-key.pem'))
    conf = swap(conf, 'svc.example.com', 'svc.test')
    conf = swap(conf, 'pages.example.net', 'pages.test')
    fs.writeFileSync(path.join(tmp, 'svc.conf'), conf)
    // the main file a Debian install has around conf.d, reduced to a private prefix
    fs.writeFileSync(
      path.join(tmp, 'nginx.conf'),
      `pid ${tmp}/nginx.pid;
error_log ${tmp}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${tmp}/body; proxy_temp_path ${tmp}/proxy; fastcgi_temp_path ${tmp}/fastcgi;
  uwsgi_temp_path ${tmp}/uwsgi; scgi_temp_path ${tmp}/scgi;
  include ${tmp}/svc.conf;
}
`,
    )
    const check = spawnSync(NGINX, ['-t', '-p', tmp, '-c', path.join(tmp, 'nginx.conf')], { encoding: 'utf8' })
    assert.equal(check.status, 0, check.stderr)
    nginx = spawn(NGINX, ['-p', tmp, '-c', path.join(tmp, 'nginx.conf'), '-g', 'daemon off; master_process off;'], { stdio: 'ignore' })
    return nginxListening(nginx, path.join(tmp, 'nginx.pid'))
  }
  after(async () => {
    if (nginx && nginx.exitCode === null) {
      const exited = new Promise((r) => nginx!.once('exit', r))
      nginx.kill('SIGTERM')
      await exited
    }
    await s?.close()
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
  })

  const get = async (host: string, p: string, headers: Record<string, string> = {}, port = tlsPort) => {
    const r = await request(`${port === tlsPort ? 'https' : 'http'}://127.0.0.1:${port}${p}`, { dispatcher: insecureAgent, headers: { host, ...headers } })
    return { status: r.statusCode, headers: r.headers, text: await r.body.text() }
  }

  it('serves the pages, the API and users’ origins through the proxy, and redirects plain HTTP', async () => {
    const u = await s.user()
    // an upload through the proxy (svc itself answers plain HTTP without X-Forwarded-Proto with 1116)
    const mp = multipart([{ name: 'file', filename: 'hello.html', type: 'text/html', data: HTML('through nginx') }])
    const up = await request(`https://127.0.0.1:${tlsPort}/svc_api/upload`, {
      method: 'POST',
      dispatcher: insecureAgent,
      headers: { host: 'svc.test', authorization: `Bearer ${u.key}`, 'content-type': mp.contentType },
      body: mp.body,
    })
    assert.equal(up.statusCode, 200, await up.body.text())

    const login = await get('svc.test', '/login')
    assert.equal(login.status, 200)
    assert.match(String(login.headers['content-security-policy']), /script-src 'nonce-/)
    assert.match(login.text, /<form class="card narrow" method="post" action="\/login">/)

    // svc sees X-Forwarded-Proto: https (the API over plain HTTP would be refused with 1116)
    const me = await get('svc.test', '/svc_api/me', { authorization: `Bearer ${u.key}` })
    assert.equal(me.status, 200, me.text)
    assert.equal(JSON.parse(me.text).data.username, u.username)

    const site = await get(`${u.username}.pages.test`, '/hello.html')
    assert.equal(site.status, 200)
    assert.match(site.text, /through nginx/)

    const metrics = await get('svc.test', '/metrics')
    assert.equal(metrics.status, 404)

    const plain = await get('svc.test', '/dashboard', {}, httpPort)
    assert.equal(plain.status, 301)
    assert.equal(plain.headers.location, 'https://svc.test/dashboard')
    // any other method with 308, which a browser repeats with its body (a form's post)
    const post = await request(`http://127.0.0.1:${httpPort}/${u.username}/hello.html`, {
      method: 'POST',
      headers: { host: 'svc.test', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'form-name=x',
    })
    await post.body.text()
    assert.equal(post.statusCode, 308)
    assert.equal(post.headers.location, `https://svc.test/${u.username}/hello.html`)
  })
})

describe('deploy/svc.service', { skip: skip('systemd-analyze', has('systemd-analyze', ['--version'])) }, () => {
  it('passes systemd-analyze verify', () => {
    const r = spawnSync('systemd-analyze', ['verify', path.join(root, 'deploy/svc.service')], { encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stderr.trim(), '')
  })
})

describe('Dockerfile', () => {
  it('passes dockerfilelint with no issue', () => {
    const r = spawnSync(path.join(root, 'node_modules/.bin/dockerfilelint'), ['-j', path.join(root, 'Dockerfile')], { encoding: 'utf8' })
    const out = JSON.parse(r.stdout) as { totalIssues: number; files: Array<{ issues: unknown[] }> }
    assert.equal(out.totalIssues, 0, JSON.stringify(out.files[0]?.issues))
  })
})
