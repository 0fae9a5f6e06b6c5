import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { request } from 'undici'
import { insecureAgent, PG_URL, dropSchema, needs } from '../support/server.js'
import crypto from 'node:crypto'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const bin = path.join(root, 'bin', 'svc')

/** Runs bin/svc without blocking the event loop (a blocked loop breaks the test's keep-alive sockets). */
const svc = (args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
    })
    child.on('close', (status) => resolve({ status, stdout, stderr }))
  })

/** Starts `svc serve` and resolves with its printed URL once it is listening. */
function serve(env: Record<string, string>, logFile: string): Promise<{ child: ChildProcess; url: string; httpUrl: string }> {
  return new Promise((resolve, reject) => {
    const out = fs.openSync(logFile, 'a')
    const child = spawn(process.execPath, [bin, 'serve'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', out] })
    let buf = ''
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${buf}`)), 30_000)
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString()
      fs.appendFileSync(logFile, d)
      const m = /svc listening on (https:\/\/\S+) \(HTTP on (http:\/\/\S+) /.exec(buf)
      if (m) {
        clearTimeout(timer)
        resolve({ child, url: m[1].replace('localhost', '127.0.0.1'), httpUrl: m[2].replace('localhost', '127.0.0.1') })
      }
    })
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${buf}`)))
  })
}

for (const engine of ['sqlite', 'postgres'] as const) {
  describe(`operator CLI against a running server [${engine}]`, engine === 'postgres' ? needs('postgres') : {}, () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-'))
    const schema = `cli_${crypto.randomBytes(4).toString('hex')}`
    const logFile = path.join(dataDir, 'server.log')
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      PORT: '0',
      HTTP_PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...(engine === 'postgres' ? { DATABASE_URL: `${PG_URL}?schema=${schema}` } : {}),
    }
    let server: { child: ChildProcess; url: string; httpUrl: string }
    const password = 'Sup3r-secret-passw0rd'
    let key = ''

    before(async () => {
      server = await serve(env, logFile)
    })
    after(async () => {
      server?.child.kill('SIGTERM')
      await new Promise((r) => server?.child.once('exit', r))
      if (engine === 'postgres') await dropSchema(schema)
      fs.rmSync(dataDir, { recursive: true, force: true })
    })

    it('logs the HTTPS address it listens on (never an http:// address for the TLS port)', async () => {
      // the JSON log line and the printed URL share stdout but need not arrive in that order
      const want = `"Server listening at ${server.url.replace('localhost', '127.0.0.1')}"`
      for (let i = 0; i < 100 && !fs.readFileSync(logFile, 'utf8').includes(want); i++) await new Promise((r) => setTimeout(r, 50))
      const log = fs.readFileSync(logFile, 'utf8')
      assert.ok(log.includes(want), log)
      assert.doesNotMatch(log, /Server listening at http:/)
    })

    it('adds a user and creates a key while the server runs; the key works at once', async () => {
      const add = await svc(['user', 'add', 'carol', '--password', password], env)
      assert.equal(add.status, 0, add.stderr)
      const k = await svc(['key', 'create', 'carol', '--name', 'ci'], env)
      assert.equal(k.status, 0, k.stderr)
      key = k.stdout.trim()
      assert.match(key, /^[A-Za-z0-9_]{64}$/)
      const r = await request(`${server.url}/svc_api/me`, { headers: { authorization: `Bearer ${key}` }, dispatcher: insecureAgent })
      assert.equal(r.statusCode, 200)
      assert.equal(((await r.body.json()) as any).data.username, 'carol')
    })

    it('changes the tier, API access and limits of a running account', async () => {
      assert.equal((await svc(['user', 'set', 'carol', '--vip'], env)).status, 0)
      const r = await request(`${server.url}/svc_api/me`, { headers: { authorization: `Bearer ${key}` }, dispatcher: insecureAgent })
      assert.equal(r.headers['x-ratelimit-limit'], '300')
      await r.body.dump()
      assert.equal((await svc(['user', 'set', 'carol', '--api-access', 'off'], env)).status, 0)
      const denied = await request(`${server.url}/svc_api/me`, { headers: { authorization: `Bearer ${key}` }, dispatcher: insecureAgent })
      assert.equal(denied.statusCode, 403)
      assert.equal(((await denied.body.json()) as any).error_code, 1007)
      assert.equal((await svc(['user', 'set', 'carol', '--api-access', 'on', '--limit', 'files=5', '--limit', 'kv_keys=7'], env)).status, 0)
      // names of Object.prototype are no limits either
      for (const name of ['bogus', 'constructor', '__proto__', 'toString']) {
        const bad = await svc(['user', 'set', 'carol', '--limit', `${name}=1`], env)
        assert.notEqual(bad.status, 0, name)
        assert.match(bad.stderr, /--limit|unknown limit/, name)
      }
    })

    it('says so when the running servers cannot be told of a disabled account (Redis unreachable)', async () => {
      assert.equal((await svc(['user', 'add', 'dora', '--password', password], env)).status, 0)
      // a closed port: the command changes the account, and must not claim the servers know
      const r = await svc(['user', 'set', 'dora', '--disable'], { ...env, REDIS_URL: 'redis://127.0.0.1:1' })
      assert.equal(r.status, 0, r.stderr)
      assert.match(r.stdout, /updated dora: .*disabled/)
      assert.match(r.stdout, /could not tell the running servers .*within 5 minutes/)
    })

    it('refuses reserved and malformed usernames and a second user of the same name', async () => {
      for (const name of ['login', 'API-Keys', 'svc_api', '.well-known', 'healthz', 'favicon.ico', 'a', 'has space']) {
        const r = await svc(['user', 'add', name, '--password', password], env)
        assert.notEqual(r.status, 0, name)
      }
      assert.notEqual((await svc(['user', 'add', 'carol', '--password', password], env)).status, 0)
    })

    it('answers 1116 on the plain HTTP port and redirects pages there', async () => {
      const r = await request(`${server.httpUrl}/svc_api/me`, { headers: { authorization: `Bearer ${key}` } })
      assert.equal(r.statusCode, 400)
      assert.equal(((await r.body.json()) as any).error_code, 1116)
      const p = await request(`${server.httpUrl}/`)
      assert.equal(p.statusCode, 301)
      assert.match(String(p.headers.location), /^https:\/\//)
      await p.body.dump()
    })

    it("serves the dashboard's pages, browser scripts and API reference from the bundle", async () => {
      const get = async (p: string) => {
        const r = await request(`${server.url}${p}`, { dispatcher: insecureAgent })
        return { status: r.statusCode, type: String(r.headers['content-type']), body: await r.body.text() }
      }
      const login = await get('/login')
      assert.equal(login.status, 200)
      assert.match(login.type, /^text\/html/)
      // the scripts are src/ files read at start (web/assets.ts), not modules of the bundle
      for (const [url, file] of [
        ['/static/common.js', 'src/features/pages/static/common.js'],
        ['/static/app.css', 'src/features/pages/static/app.css'],
        ['/static/kv.js', 'src/features/kv/static/kv.js'],
      ]) {
        const r = await get(url)
        assert.equal(r.status, 200, url)
        assert.equal(r.body, fs.readFileSync(path.join(root, file), 'utf8'), url)
      }
      const docs = await get('/docs')
      assert.equal(docs.status, 200)
      const asset = /src="(\/docs\/assets\/[^"]+\.js)"/.exec(docs.body)?.[1]
      assert.ok(asset, docs.body)
      assert.equal((await get(asset)).status, 200, asset)
    })

    it('grants entitlements and creates redeem codes', async () => {
      assert.equal((await svc(['grant', 'carol', 'image-host'], env)).status, 0)
      const code = await svc(['redeem-code', 'create', 'hosted-data'], env)
      assert.equal(code.status, 0)
      assert.match(code.stdout.trim(), /^DATA-[A-Za-z0-9]{20}$/)
      assert.notEqual((await svc(['grant', 'carol', 'everything'], env)).status, 0)
    })

    it('keeps no password or key in clear in the database or the logs', async () => {
      // a login and a failed login put the password through the server too
      await (
        await request(`${server.url}/login`, {
          method: 'POST',
          body: `username=carol&password=${password}`,
          headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          dispatcher: insecureAgent,
        })
      ).body.dump()
      await (
        await request(`${server.url}/svc_api/me?key=${key}`, {
          headers: { authorization: `Bearer ${key}`, cookie: `session=${key}` },
          dispatcher: insecureAgent,
        })
      ).body.dump()
      const log = fs.readFileSync(logFile, 'utf8')
      assert.ok(log.length > 0)
      assert.ok(!log.includes(password), 'password in log')
      assert.ok(!log.includes(key), 'key in log')
      let dump: string
      if (engine === 'sqlite') {
        dump = ''
        for (const f of fs.readdirSync(dataDir)) if (f.startsWith('svc.db')) dump += fs.readFileSync(path.join(dataDir, f)).toString('latin1')
      } else {
        const r = spawnSync('pg_dump', ['-d', PG_URL, '-n', schema], { encoding: 'utf8' })
        assert.equal(r.status, 0, r.stderr)
        dump = r.stdout
      }
      assert.ok(dump.includes('carol'))
      assert.ok(!dump.includes(password), 'password in database')
      assert.ok(!dump.includes(key), 'key in database')
      assert.match(dump, /\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
    })
  })
}

describe('start-up with a bad configuration', () => {
  it('stops with a message naming the variable', async () => {
    const r = await svc(['serve'], { PORT: 'not-a-port', DATA_DIR: os.tmpdir() })
    assert.equal(r.status, 78)
    assert.match(r.stderr, /PORT/)
    const r2 = await svc(['user', 'add', 'x1', '--password', 'whatever1'], { DATABASE_URL: 'mysql://nope' })
    assert.notEqual(r2.status, 0)
    assert.match(r2.stderr, /DATABASE_URL/)
  })
})
