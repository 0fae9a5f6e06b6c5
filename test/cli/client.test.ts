import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import selfsigned from 'selfsigned'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { makeTree, runCli } from './run.js'

for (const engine of ENGINES) {
  describe(`svc client: login, whoami, errors [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let tmp: string
    before(async () => {
      s = await startServer({ engine })
      alice = await s.user()
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-cfg-'))
    })
    after(async () => {
      await s.close()
      fs.rmSync(tmp, { recursive: true, force: true })
    })

    it('logs in with a key (checked by the server), stores it 0600 and answers whoami from the file', async () => {
      const cfg = path.join(tmp, 'nested', 'config.json')
      const r = await runCli(['login', '--url', s.url, '--key', alice.key, '--insecure'], { env: { SVC_CONFIG: cfg } })
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`logged in to ${s.url.replace(/[.]/g, '\\.')} \\(API key of ${alice.username}\\)`))
      assert.equal(fs.statSync(cfg).mode & 0o777, 0o600)
      assert.equal(fs.statSync(path.dirname(cfg)).mode & 0o777, 0o700)
      const stored = JSON.parse(fs.readFileSync(cfg, 'utf8'))
      assert.deepEqual(stored, { url: s.url, key: alice.key, insecure: true })
      // the key never appears in the output
      assert.ok(!r.stdout.includes(alice.key) && !r.stderr.includes(alice.key))

      const who = await runCli(['whoami', '--json'], { env: { SVC_CONFIG: cfg } })
      assert.equal(who.code, 0, who.stderr)
      assert.equal(who.json.username, alice.username)
      assert.equal(who.json.key_source, 'config')
      assert.ok(!who.stdout.includes(alice.key))

      // a second login keeps the file private even if someone loosened it
      fs.chmodSync(cfg, 0o644)
      const again = await runCli(['login', '--key', alice.key], { env: { SVC_CONFIG: cfg } })
      assert.equal(again.code, 0, again.stderr)
      assert.match(again.stderr, /readable by other users/)
      assert.equal(fs.statSync(cfg).mode & 0o777, 0o600)
    })

    it('SVC_INSECURE lets a login through a self-signed certificate without turning checks off in the file', async () => {
      const cfg = path.join(tmp, 'env-insecure.json')
      const r = await runCli(['login', '--url', s.url, '--key', alice.key], { env: { SVC_CONFIG: cfg, SVC_INSECURE: '1' } })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(JSON.parse(fs.readFileSync(cfg, 'utf8')).insecure, undefined)
      // a later command without it meets the certificate check, and says so
      const who = await runCli(['whoami'], { env: { SVC_CONFIG: cfg } })
      assert.notEqual(who.code, 0)
      assert.match(who.stderr, /certificate/i)
      // --insecure is kept, as asked
      const flag = await runCli(['login', '--url', s.url, '--key', alice.key, '--insecure'], { env: { SVC_CONFIG: cfg } })
      assert.equal(flag.code, 0, flag.stderr)
      assert.equal(JSON.parse(fs.readFileSync(cfg, 'utf8')).insecure, true)
    })

    it('a config file that is not JSON: login replaces it and logout removes it', async () => {
      const cfg = path.join(tmp, 'corrupt.json')
      fs.writeFileSync(cfg, 'not json', { mode: 0o600 })
      const who = await runCli(['whoami'], { env: { SVC_CONFIG: cfg } })
      assert.equal(who.code, 2)
      assert.match(who.stderr, /run svc login again/)
      const login = await runCli(['login', '--url', s.url, '--key', alice.key, '--insecure'], { env: { SVC_CONFIG: cfg } })
      assert.equal(login.code, 0, login.stderr)
      assert.match(login.stderr, /is not a config file .* it is replaced/)
      assert.equal(JSON.parse(fs.readFileSync(cfg, 'utf8')).url, s.url)
      fs.writeFileSync(cfg, '{broken', { mode: 0o600 })
      const out = await runCli(['logout'], { env: { SVC_CONFIG: cfg } })
      assert.equal(out.code, 0, out.stderr)
      assert.ok(!fs.existsSync(cfg))
    })

    it('a config path that cannot be read names it, as JSON with --json; exit 2', async () => {
      const cfg = path.join(tmp, 'a-folder.json')
      fs.mkdirSync(cfg)
      const who = await runCli(['whoami', '--json'], { env: { SVC_CONFIG: cfg } })
      assert.equal(who.code, 2)
      assert.equal(who.json.success, false)
      assert.equal(who.json.error.message, `cannot read ${cfg}: EISDIR: illegal operation on a directory, read`)
    })

    it('refuses a bad key at login without writing the file, printing the server code; exit 1', async () => {
      const cfg = path.join(tmp, 'bad.json')
      const r = await runCli(['login', '--url', s.url, '--key', `svc_${'x'.repeat(60)}`, '--insecure'], { env: { SVC_CONFIG: cfg } })
      assert.equal(r.code, 1)
      assert.match(r.stderr, /^error 1002 \(AUTH_ERROR, HTTP 401\): /m)
      assert.ok(!fs.existsSync(cfg))
    })

    it('uses SVC_URL / SVC_API_KEY over the config file, and reports errors as JSON with --json', async () => {
      const bob = await s.user()
      const cfg = path.join(tmp, 'env.json')
      fs.writeFileSync(cfg, JSON.stringify({ url: 'https://unused.invalid', key: alice.key }), { mode: 0o600 })
      const env = { SVC_CONFIG: cfg, SVC_URL: s.url, SVC_API_KEY: bob.key, SVC_INSECURE: '1' }
      const who = await runCli(['whoami'], { env })
      assert.equal(who.code, 0, who.stderr)
      assert.match(who.stdout, new RegExp(`^${bob.username} \\(authenticated tier\\) .* from SVC_API_KEY`))

      const bad = await runCli(['whoami', '--json'], { env: { ...env, SVC_API_KEY: `svc_${'y'.repeat(60)}` } })
      assert.equal(bad.code, 1)
      assert.equal(bad.json.success, false)
      assert.equal(bad.json.error.error_code, 1002)
      assert.equal(bad.json.error.status, 401)
    })

    it('does not send the stored key to a server named by --url or SVC_URL', async () => {
      const cfg = path.join(tmp, 'other-server.json')
      fs.writeFileSync(cfg, JSON.stringify({ url: s.url, key: alice.key, insecure: true }), { mode: 0o600 })
      const seen: Array<string | undefined> = []
      const other = http.createServer((req, res) => {
        seen.push(req.headers.authorization)
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"success":false,"message":"no"}')
      })
      await new Promise<void>((r) => other.listen(0, '127.0.0.1', r))
      const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
      try {
        for (const o of [
          { args: ['--url', otherUrl], env: {} },
          { args: [], env: { SVC_URL: otherUrl } },
        ]) {
          const r = await runCli(['whoami', '--json', ...o.args], { env: { SVC_CONFIG: cfg, ...o.env } })
          assert.equal(r.code, 2, r.stderr)
          assert.match(r.json.error.message, /^no API key for http:\/\/127\.0\.0\.1:\d+: the stored key is for https:/)
        }
        assert.deepEqual(seen, [])
      } finally {
        other.close()
      }
    })

    it('fails, with valid JSON, when the URL answers 2xx pages that are not JSON (not an svc server)', async () => {
      const page = http.createServer((req, res) => {
        req.resume().on('end', () => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><p>a website</p>'))
      })
      await new Promise<void>((r) => page.listen(0, '127.0.0.1', r))
      const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}`
      const cfg = path.join(tmp, 'website.json')
      const env = { SVC_CONFIG: cfg, SVC_URL: pageUrl, SVC_API_KEY: alice.key }
      try {
        const site = makeTree({ 'index.html': '<h1>hi</h1>' })
        for (const args of [
          ['deploy', site, '--project', 'x'],
          ['deploy', site, '--batch'],
          ['rollback', '--project', 'x'],
          ['kv', 'get', 'k'],
        ]) {
          const r = await runCli([...args, '--json'], { env })
          assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}`)
          assert.equal(r.json.success, false)
          assert.match(r.json.error.message, /answered HTTP 200 with text\/html, not JSON: is http:\/\/127\.0\.0\.1:\d+ the address of an svc server\?/)
        }
        const login = await runCli(['login', '--url', pageUrl, '--key', alice.key], { env: { SVC_CONFIG: cfg } })
        assert.equal(login.code, 1)
        assert.match(login.stderr, /^error: GET .*\/svc_api\/me answered HTTP 200 with text\/html, not JSON/m)
        assert.ok(!fs.existsSync(cfg))
      } finally {
        page.close()
      }
    })

    it('explains a self-signed certificate, missing configuration and bad usage (exit 2)', async () => {
      const cert = await runCli(['whoami'], { env: { SVC_URL: s.url, SVC_API_KEY: alice.key } })
      assert.equal(cert.code, 1)
      assert.match(cert.stderr, /cannot verify the TLS certificate .* --insecure or SVC_INSECURE=1/)
      const none = await runCli(['whoami'], { env: { SVC_CONFIG: path.join(tmp, 'missing.json') } })
      assert.equal(none.code, 2)
      assert.match(none.stderr, /no server configured: run `svc login/)
      const usage = await runCli(['deploy'], { env: { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1' } })
      assert.equal(usage.code, 2)
      assert.match(usage.stderr, /missing the folder to deploy/)
    })

    it('stores a login session with --username/--password-stdin and logs out', async () => {
      const cfg = path.join(tmp, 'session.json')
      const r = await runCli(['login', '--url', s.url, '--insecure', '--username', alice.username, '--password-stdin'], {
        env: { SVC_CONFIG: cfg },
        input: `${alice.password}\n`,
      })
      assert.equal(r.code, 0, r.stderr)
      const stored = JSON.parse(fs.readFileSync(cfg, 'utf8'))
      assert.match(stored.session, /^session=[A-Za-z0-9_-]{43}$/)
      assert.equal(stored.username, alice.username)
      assert.equal(fs.statSync(cfg).mode & 0o777, 0o600)
      // the session works on the API (whoami falls back to it without a key)
      const who = await runCli(['whoami', '--json'], { env: { SVC_CONFIG: cfg } })
      assert.equal(who.json.via, 'session', who.stderr)
      const out = await runCli(['logout'], { env: { SVC_CONFIG: cfg } })
      assert.equal(out.code, 0)
      assert.ok(!fs.existsSync(cfg))
      // the server ended the session
      const me = await s.get('/svc_api/me', { cookie: stored.session })
      assert.equal(me.status, 401)
    })
  })
}

// A certificate its CA vouches for, but of another name: --insecure (what a self-signed one
// calls for) would only hide the mistake, so the message names the certificate's names instead.
describe('svc client: a trusted certificate of another name', () => {
  let dir: string
  let server: https.Server
  let url: string
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-altname-'))
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'example.test' }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'example.test' }] }],
    })
    fs.writeFileSync(path.join(dir, 'ca.pem'), pems.cert)
    server = https.createServer({ cert: pems.cert, key: pems.private }, (_req, res) => res.end('{}'))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(async () => {
    await new Promise((r) => server.close(r))
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('says the certificate is for another name and which, without advising --insecure', async () => {
    const r = await runCli(['whoami', '--url', url, '--key', 'svc_x'], { env: { NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.pem') } })
    assert.equal(r.code, 1)
    assert.equal(
      r.stderr,
      `error: the TLS certificate of ${url} is not for 127.0.0.1 (its names: DNS:example.test); use the server's address with a name its certificate holds\n`,
    )
  })
})
