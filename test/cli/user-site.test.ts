import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { runCli } from './run.js'

// svc user-site [PROJECT] [--project NAME] [--off], as a child process against a real server: the
// project answers the root of its user's origin, then no longer.
const engine = ENGINES[0]
describe(`svc user-site [${engine}]`, () => {
  let s: TestServer
  let alice: Awaited<ReturnType<TestServer['user']>>
  let env: Record<string, string>
  const root = async () => {
    const r = await s.get('/', { headers: { host: `${alice.username}.localhost` } })
    return r.status === 200 ? r.text : r.status
  }

  before(async () => {
    s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
    alice = await s.user()
    env = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1' }
    assert.equal((await batchUpload(s, { key: alice.key }, 'home', [{ filename: 'index.html', data: '<p>cli home</p>' }])).status, 200)
    assert.equal((await s.post('/api/folders/home/publish', { key: alice.key })).status, 200)
  })
  after(() => s?.close())

  it('makes the project the user site, prints its address, and stops it with --off', async () => {
    assert.equal(await root(), 404)
    const on = await runCli(['user-site', '--project', 'home'], { env })
    assert.equal(on.code, 0, on.stderr)
    const port = new URL(s.httpUrl).port
    assert.equal(on.stdout, `home is your user site: it answers http://${alice.username}.localhost:${port}/ while it is published\n`)
    assert.equal(await root(), '<p>cli home</p>')
    const off = await runCli(['user-site', '-p', 'home', '--off', '--json'], { env })
    assert.equal(off.code, 0, off.stderr)
    assert.equal(off.json.user_site, false)
    assert.equal(await root(), 404)
    // another user's or a missing project: the server's refusal, nothing changed
    const missing = await runCli(['user-site', '--project', 'nope'], { env })
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /^error 1312 /m)
    // the project named as svc deploys names it; --project may repeat it, not contradict it
    const named = await runCli(['user-site', 'home'], { env })
    assert.equal(named.code, 0, named.stderr)
    assert.equal(await root(), '<p>cli home</p>')
    assert.equal((await runCli(['user-site', 'home', '--project', 'home', '--off'], { env })).code, 0)
    assert.equal(await root(), 404)
    const two = await runCli(['user-site', 'home', '--project', 'other'], { env })
    assert.equal(two.code, 2)
    assert.match(two.stderr, /two projects named: "home" and --project "other"/)
    assert.equal((await runCli(['user-site', 'home', 'other'], { env })).code, 2)
    assert.equal(await root(), 404)
  })
})
