import fs from 'node:fs'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { REDIS_URL, needs, startServer, dropSchema, type TestServer } from '../support/server.js'
import { HIGH_LIMITS } from '../support/hosting.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { deploySite, type Site } from '../support/deploys.js'
import { clearRedisPrefix } from '../support/redis.js'

/** Polls (every 10 ms, at most 10 s) until `cond` holds. */
async function until(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await cond()) return
    await new Promise((r) => setTimeout(r, 10))
  }
  assert.fail(`timed out waiting for ${what}`)
}

const site = (v: string): Site => ({
  'index.html': `<h1>${v}</h1>`,
  'app.js': `console.log(${JSON.stringify(v)})`,
  'big.bin': Buffer.concat([Buffer.from(v), crypto.randomBytes(1_200_000)]),
})

/** Deploys, rollback and promote across two instances over one PostgreSQL schema, Redis and S3. */
describe('deploys on two instances over one PostgreSQL, Redis and S3', needs('postgres', 'redis'), () => {
  let a: TestServer
  let b: TestServer
  let s3: TestS3
  const pgSchema = `t_${crypto.randomBytes(5).toString('hex')}`
  const redisPrefix = `svc-test-${crypto.randomBytes(5).toString('hex')}:`

  before(async () => {
    s3 = await startS3()
    const env = { REDIS_URL, REDIS_PREFIX: redisPrefix, STORAGE_URL: s3.storageUrl(), RATE_LIMITS: HIGH_LIMITS }
    a = await startServer({ engine: 'postgres', pgSchema, keepData: true, env })
    b = await startServer({ engine: 'postgres', pgSchema, keepData: true, env })
    assert.equal(a.deps.blobs.kind, 's3')
  })

  after(async () => {
    await Promise.allSettled([a?.close(), b?.close()])
    for (const s of [a, b]) if (s) fs.rmSync(s.dataDir, { recursive: true, force: true })
    await dropSchema(pgSchema)
    await s3?.close()
    await clearRedisPrefix(REDIS_URL, redisPrefix)
  })

  it('a deploy, a rollback and a promote on A are what B serves next', async () => {
    const u = await a.user()
    const v1 = site('one')
    const v2 = site('two')
    assert.equal((await deploySite(a, u.key, 'app', v1)).res.status, 201)
    const onB = async (p = '') => (await b.get(`/${u.username}/app/${p}`)).body
    assert.equal((await onB()).toString(), v1['index.html'])
    assert.ok((await onB('big.bin')).equals(v1['big.bin'] as Buffer), 'a streamed file from S3')
    // B has v1 cached; a deploy on A replaces it there
    const second = await deploySite(a, u.key, 'app', v2)
    assert.equal(second.res.status, 201)
    await until(async () => (await onB()).toString() === v2['index.html'], 'B to serve the new deploy')
    // rollback on A: B serves the previous deploy, every file of it
    const back = await a.post('/api/folders/app/rollback', { key: u.key })
    assert.equal(back.status, 200, back.text)
    await until(async () => (await onB()).toString() === v1['index.html'], 'B to serve the rollback')
    assert.equal((await onB('app.js')).toString(), v1['app.js'])
    assert.ok((await onB('big.bin')).equals(v1['big.bin'] as Buffer))
    // a preview made through B, promoted on A
    const pv = await deploySite(b, u.key, 'app', site('three'), { preview: true })
    assert.equal((await a.get(`/${u.username}/app@${pv.res.json.deploy.id}/`)).text, '<h1>three</h1>')
    assert.equal((await a.post(`/api/folders/app/deploys/${pv.res.json.deploy.id}/promote`, { key: u.key })).status, 200)
    await until(async () => (await onB()).toString() === '<h1>three</h1>', 'B to serve the promoted preview')
    const list = await b.get('/api/folders/app/deploys', { key: u.key })
    assert.equal(list.json.live_deploy_id, pv.res.json.deploy.id)
    assert.equal(list.json.deploys.length, 3)
  })
})
