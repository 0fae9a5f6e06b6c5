import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import pg from 'pg'
import { PG_URL, needs, startServer, multipart, dropSchema, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { deploySite, type Site } from '../support/deploys.js'
import { FLUSH_ALL, isReliable, postgresBusChannel } from '../../src/infra/bus.js'
import { HOSTING_CHANNEL } from '../../src/features/sites/invalidate.js'
import { runCli } from '../cli/run.js'

/** Polls (every 10 ms, at most 10 s) until `cond` holds. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  assert.fail(`timed out waiting for ${what}`)
}

const site = (v: string): Site => ({ 'index.html': `<h1>${v}</h1>`, 'app.js': `console.log(${JSON.stringify(v)})` })

/**
 * Two instances over one PostgreSQL schema and one blob folder, without REDIS_URL (decision
 * NEW-PGBUS-1): their caches hear each other's writes through PostgreSQL LISTEN/NOTIFY, as
 * they do through Redis in two-instances.test.ts, deploys-two-instances.test.ts and
 * domains-two-instances.test.ts, whose cases these are. Every read right after a write is
 * checked at once, never polled: the writer's answer waits for the other's acknowledgement.
 */
describe('two instances over one PostgreSQL without Redis', needs('postgres'), () => {
  let a: TestServer
  let b: TestServer
  const pgSchema = `t_${crypto.randomBytes(5).toString('hex')}`
  const blobs = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pgbus-blobs-'))
  const admin = new pg.Client({ connectionString: PG_URL })
  /** The pids of the instances' bus connections (named after the schema). */
  const busPids = async () =>
    (await admin.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [postgresBusChannel(pgSchema)])).rows.map((r) => r.pid)

  before(async () => {
    await admin.connect()
    const env = { REDIS_URL: '', STORAGE_URL: `file://${blobs}`, RATE_LIMITS: HIGH_LIMITS }
    a = await startServer({ engine: 'postgres', pgSchema, keepData: true, env })
    b = await startServer({ engine: 'postgres', pgSchema, keepData: true, env })
    assert.equal(a.deps.limits.kind, 'memory')
    await until(() => isReliable(a.deps.bus) && isReliable(b.deps.bus), 'both buses listening')
  })

  after(async () => {
    await Promise.allSettled([a?.close(), b?.close()])
    for (const s of [a, b]) if (s) fs.rmSync(s.dataDir, { recursive: true, force: true })
    await dropSchema(pgSchema)
    await admin.end()
    fs.rmSync(blobs, { recursive: true, force: true })
  })

  const upload = (s: TestServer, key: string, name: string, html: string) => {
    const mp = multipart([{ name: 'file', filename: name, type: 'text/html', data: html }])
    return s.post('/svc_api/upload', { key, body: mp.body, headers: { 'content-type': mp.contentType } })
  }

  it('each instance listens on one connection of its own, named after the schema', async () => {
    assert.equal((await busPids()).length, 2)
  })

  it('an upload through A is served by B at once, and an updated file is never served stale by either', async () => {
    const u = await a.user()
    const page = `/${u.username}/page.html`
    // both instances have looked the page up (and cached its absence)
    for (const s of [a, b]) assert.equal((await s.get(page)).status, 404)
    const v1 = `<!doctype html><p>first ${crypto.randomUUID()}</p>`
    assert.equal((await upload(a, u.key, 'page.html', v1)).status, 200)
    assert.equal((await b.get(page)).text, v1)
    for (let i = 2; i <= 5; i++) {
      for (const s of [a, b]) assert.equal((await s.get(page)).status, 200) // warm both
      const html = `<!doctype html><p>version ${i} ${crypto.randomUUID()}</p>`
      const r = await upload(i % 2 ? a : b, u.key, 'page.html', html)
      assert.equal(r.status, 200, r.text)
      for (const s of [b, a]) assert.equal((await s.get(page)).text, html, `version ${i} through ${i % 2 ? 'A' : 'B'}`)
    }
  })

  it('a deploy, a rollback and a promote on A are what B serves next', async () => {
    const u = await a.user()
    const onB = async (p = '') => (await b.get(`/${u.username}/app/${p}`)).text
    assert.equal((await deploySite(a, u.key, 'app', site('one'))).res.status, 201)
    assert.equal(await onB(), '<h1>one</h1>')
    assert.equal((await deploySite(a, u.key, 'app', site('two'))).res.status, 201)
    assert.equal(await onB(), '<h1>two</h1>')
    assert.equal((await a.post('/api/folders/app/rollback', { key: u.key })).status, 200)
    assert.equal(await onB(), '<h1>one</h1>')
    assert.equal(await onB('app.js'), 'console.log("one")')
    const pv = await deploySite(b, u.key, 'app', site('three'), { preview: true })
    assert.equal((await a.post(`/api/folders/app/deploys/${pv.res.json.deploy.id}/promote`, { key: u.key })).status, 200)
    assert.equal(await onB(), '<h1>three</h1>')
  })

  it("a key-value write through either instance shows at once in the other's public reads", async () => {
    const u = await a.user()
    const kv = `/svc_api/data/public/${u.username}/score`
    const write = (s: TestServer, body: unknown, route = 'store') => s.post(`/svc_api/data/${route}`, { key: u.key, json: body })
    for (const s of [a, b]) assert.equal((await s.get(kv)).status, 404)
    assert.equal((await write(a, { key: 'score', value: 0, data_type: 'number', is_public: true })).status, 200)
    for (let i = 1; i <= 6; i++) {
      const by = i % 2 ? a : b
      const r = i % 3 === 0 ? await write(by, { key: 'score', value: 10 * i, data_type: 'number' }) : await write(by, { key: 'score', by: 1 }, 'incr')
      assert.equal(r.status, 200, r.text)
      for (const s of [b, a]) assert.equal((await s.get(kv)).json.data?.value, r.json.data.value, `write ${i}, read on ${s === a ? 'A' : 'B'}`)
    }
    assert.equal((await b.request('DELETE', '/svc_api/data/delete?key=score', { key: u.key })).status, 200)
    for (const s of [a, b]) assert.equal((await s.get(kv)).status, 404)
  })

  it('a password set on A protects at once on B, and its removal opens at once', async () => {
    const u = await a.user({ vip: true })
    assert.equal((await upload(a, u.key, 'locked.html', '<p>locked</p>')).status, 200)
    const locked = `/${u.username}/locked.html`
    for (const s of [a, b]) assert.equal((await s.get(locked)).status, 200) // cached open on both
    assert.equal((await a.request('PUT', '/api/access/locked.html', { key: u.key, json: { password: 'open-sesame' } })).status, 200)
    const onB = await b.get(locked)
    assert.equal(onB.status, 401)
    assert.ok(!onB.text.includes('<p>locked</p>'))
    assert.equal((await b.request('DELETE', '/api/access/locked.html', { key: u.key })).status, 200)
    assert.equal((await a.get(locked)).status, 200)
  })

  it('svc user set --disable from the CLI, without REDIS_URL, takes the pages offline on both instances at once', async () => {
    const u = await a.user()
    assert.equal((await upload(a, u.key, 'cli.html', '<p>cli</p>')).status, 200)
    const page = `/${u.username}/cli.html`
    for (const s of [a, b]) for (let k = 0; k < 2; k++) assert.equal((await s.get(page)).status, 200) // cached on both
    const env = { DATA_DIR: a.dataDir, DATABASE_URL: a.env.DATABASE_URL, STORAGE_URL: `file://${blobs}`, REDIS_URL: '' }
    const off = await runCli(['user', 'set', u.username, '--disable'], { env })
    assert.equal(off.code, 0, off.stderr)
    assert.doesNotMatch(off.stdout, /within 5 minutes/)
    for (const s of [a, b]) assert.equal((await s.get(page)).status, 404, 'offline at once')
    const on = await runCli(['user', 'set', u.username, '--enable'], { env })
    assert.equal(on.code, 0, on.stderr)
    for (const s of [a, b]) assert.equal((await s.get(page)).status, 200, 'back at once')
  })

  it('svc import, without REDIS_URL, tells both instances: a page they answered 404 before is served at once', async () => {
    const u = await a.user()
    assert.equal((await upload(a, u.key, 'index.html', '<p>imported</p>')).status, 200)
    const archive = path.join(blobs, '..', `${path.basename(blobs)}-export.zip`)
    const env = { DATA_DIR: a.dataDir, DATABASE_URL: a.env.DATABASE_URL, STORAGE_URL: `file://${blobs}`, REDIS_URL: '' }
    try {
      const ex = await runCli(['export', u.username, archive], { env })
      assert.equal(ex.code, 0, ex.stderr)
      const name = `im${crypto.randomBytes(4).toString('hex')}`
      // asked for before the import on both: not there, and each public host keeps that answer
      for (const s of [a, b]) for (let i = 0; i < 2; i++) assert.equal((await s.get(`/${name}/index.html`)).status, 404)
      const im = await runCli(['import', archive, '--as', name], { env })
      assert.equal(im.code, 0, im.stderr)
      assert.match(im.stdout, /running servers were told \(PostgreSQL at DATABASE_URL\)/)
      for (const s of [a, b]) assert.equal((await s.get(`/${name}/index.html`)).text, '<p>imported</p>')
    } finally {
      fs.rmSync(archive, { force: true })
    }
  })

  it('the LISTEN connections terminated: both flush and stop trusting the bus, never serve stale, and come back', async () => {
    const u = await a.user()
    const page = `/${u.username}/lost.html`
    let html = `<!doctype html><p>v1 ${crypto.randomUUID()}</p>`
    assert.equal((await upload(a, u.key, 'lost.html', html)).status, 200)
    for (const s of [a, b]) assert.equal((await s.get(page)).text, html) // cached on both
    const flushes = new Map<TestServer, number>([
      [a, 0],
      [b, 0],
    ])
    for (const s of [a, b])
      s.deps.bus.subscribe(HOSTING_CHANNEL, (m) => {
        if (m === FLUSH_ALL) flushes.set(s, flushes.get(s)! + 1)
      })
    const pids = await busPids()
    assert.equal(pids.length, 2)
    for (const pid of pids) await admin.query('select pg_terminate_backend($1)', [pid])
    await until(() => flushes.get(a)! >= 1 && flushes.get(b)! >= 1, 'both instances noticed the loss')
    html = `<!doctype html><p>v2 ${crypto.randomUUID()}</p>`
    assert.equal((await upload(a, u.key, 'lost.html', html)).status, 200)
    for (const s of [b, a]) assert.equal((await s.get(page)).text, html, 'fresh while the connections are down or just back')
    await until(() => isReliable(a.deps.bus) && isReliable(b.deps.bus), 'listening again')
    for (const s of [a, b]) assert.ok(flushes.get(s)! >= 2, 'flushed again once back')
    const now = await busPids()
    assert.equal(now.length, 2)
    assert.ok(!now.some((p) => pids.includes(p)), 'new connections')
    for (const s of [b, a]) assert.equal((await s.get(page)).text, html) // cached again on both
    html = `<!doctype html><p>v3 ${crypto.randomUUID()}</p>`
    assert.equal((await upload(b, u.key, 'lost.html', html)).status, 200)
    for (const s of [a, b]) assert.equal((await s.get(page)).text, html, 'invalidation flows again')
  })
})
