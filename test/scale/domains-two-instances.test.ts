import fs from 'node:fs'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { REDIS_URL, needs, startServer, dropSchema, type TestServer } from '../support/server.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { startDns, type TestDns } from '../support/dns.js'
import { clearRedisPrefix } from '../support/redis.js'

/**
 * Custom domains and visitor access on two instances over one PostgreSQL schema, one Redis
 * and one S3 server: what one changes (a verify, a takeover, a removal, a password), the
 * other serves on its very next request (its caches dropped through the Redis bus), and
 * wrong passwords count across both.
 */
describe('custom domains and visitor access on two instances', needs('postgres', 'redis'), () => {
  let a: TestServer
  let b: TestServer
  let s3: TestS3
  let dns: TestDns
  let alice: Awaited<ReturnType<TestServer['user']>>
  const pgSchema = `t_${crypto.randomBytes(5).toString('hex')}`
  const redisPrefix = `svc-test-${crypto.randomBytes(5).toString('hex')}:`
  const at = (s: TestServer, p: string, headers: Record<string, string> = {}) => s.get(p, { headers: { host: 'www.example.test', ...headers } })
  const basic = (pw: string) => `Basic ${Buffer.from(`v:${pw}`).toString('base64')}`

  before(async () => {
    s3 = await startS3()
    dns = await startDns()
    const env = { REDIS_URL, REDIS_PREFIX: redisPrefix, STORAGE_URL: s3.storageUrl(), RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr }
    a = await startServer({ engine: 'postgres', pgSchema, keepData: true, env })
    b = await startServer({ engine: 'postgres', pgSchema, keepData: true, env })
    alice = await a.user({ name: 'alice' })
    const up = await batchUpload(a, { key: alice.key }, 'site', [{ filename: 'index.html', data: '<p>alice site</p>' }])
    assert.equal(up.status, 200, up.text)
    assert.equal((await a.post('/api/folders/site/publish', { key: alice.key })).status, 200)
  })

  after(async () => {
    await Promise.allSettled([a?.close(), b?.close()])
    for (const s of [a, b]) if (s) fs.rmSync(s.dataDir, { recursive: true, force: true })
    await dropSchema(pgSchema)
    await s3?.close()
    await dns?.close()
    await clearRedisPrefix(REDIS_URL, redisPrefix)
  })

  it('a domain verified on A serves on B; removed on A, B stops on its next request', async () => {
    // B caches "not a domain" first: the verify on A must drop that too
    assert.notEqual((await at(b, '/')).text, '<p>alice site</p>')
    const add = await a.post('/api/domains', { key: alice.key, json: { domain: 'www.example.test', project: 'site' } })
    assert.equal(add.status, 200, add.text)
    dns.txt.set('_svc-challenge.www.example.test', [add.json.data.verification.value])
    assert.equal((await a.post('/api/domains/www.example.test/verify', { key: alice.key })).status, 200)
    for (let i = 0; i < 3; i++) assert.equal((await at(b, '/')).text, '<p>alice site</p>')
    assert.equal((await b.get('/.well-known/svc/tls-allowed?domain=www.example.test')).status, 200)

    // B caches "no primary domain" first; made primary on A, B sends browsers there at once
    const nav = { host: 'alice.localhost', 'sec-fetch-dest': 'document' }
    assert.equal((await b.get('/site/', { headers: nav })).text, '<p>alice site</p>')
    assert.equal((await a.request('PUT', '/api/domains/www.example.test/primary', { key: alice.key })).status, 200)
    const sent = await b.get('/site/', { headers: nav })
    assert.equal(sent.status, 302)
    assert.equal(sent.header('location'), 'https://www.example.test/')

    const del = await a.request('DELETE', '/api/domains/www.example.test', { key: alice.key })
    assert.equal(del.status, 200, del.text)
    const after = await at(b, '/')
    assert.notEqual(after.text, '<p>alice site</p>')
    assert.equal((await at(b, '/index.html')).status, 404)
    assert.equal((await b.get('/.well-known/svc/tls-allowed?domain=www.example.test')).status, 404)
    assert.equal((await b.get('/site/', { headers: nav })).text, '<p>alice site</p>', 'removed on A: B stops sending browsers there')
  })

  it("a domain taken over on B (its new owner's TXT token) moves on A at once, with its primary redirects", async () => {
    const bob = await a.user({ name: 'bob' })
    const up = await batchUpload(a, { key: bob.key }, 'blog', [{ filename: 'index.html', data: '<p>bob blog</p>' }])
    assert.equal(up.status, 200, up.text)
    assert.equal((await a.post('/api/folders/blog/publish', { key: bob.key })).status, 200)
    const add = await a.post('/api/domains', { key: alice.key, json: { domain: 'www.example.test', project: 'site' } })
    assert.equal(add.status, 200, add.text)
    dns.txt.set('_svc-challenge.www.example.test', [add.json.data.verification.value])
    assert.equal((await a.post('/api/domains/www.example.test/verify', { key: alice.key })).status, 200)
    assert.equal((await a.request('PUT', '/api/domains/www.example.test/primary', { key: alice.key })).status, 200)
    // both instances cache the host as alice's, and alice's project as sent there
    const nav = { host: 'alice.localhost', 'sec-fetch-dest': 'document' }
    for (const s of [a, b]) {
      assert.equal((await at(s, '/')).text, '<p>alice site</p>')
      assert.equal((await s.get('/site/', { headers: nav })).status, 302)
    }

    const claim = await b.post('/api/domains', { key: bob.key, json: { domain: 'www.example.test', project: 'blog' } })
    assert.equal(claim.status, 200, claim.text)
    dns.txt.set('_svc-challenge.www.example.test', [claim.json.data.verification.value])
    const verify = await b.post('/api/domains/www.example.test/verify', { key: bob.key })
    assert.equal(verify.status, 200, verify.text)
    for (const s of [a, b]) {
      assert.equal((await at(s, '/')).text, '<p>bob blog</p>')
      assert.equal((await s.get('/.well-known/svc/tls-allowed?domain=www.example.test')).status, 200)
      const own = await s.get('/site/', { headers: nav })
      assert.equal(own.status, 200, 'alice lost the domain: her project is served in place')
      assert.equal(own.text, '<p>alice site</p>')
    }
    assert.equal((await a.request('DELETE', '/api/domains/www.example.test', { key: bob.key })).status, 200)
    assert.equal((await a.request('DELETE', '/api/domains/www.example.test', { key: alice.key })).status, 200)
  })

  it('a password set on A protects at once on B, and wrong passwords count on both', async () => {
    assert.equal((await b.get('/alice/site/')).status, 200)
    const put = await a.request('PUT', '/api/access/site', { key: alice.key, json: { password: 'hunter22' } })
    assert.equal(put.status, 200, put.text)
    const onB = await b.get('/alice/site/')
    assert.equal(onB.status, 401)
    assert.ok(!onB.text.includes('alice site'))
    assert.equal((await b.get('/alice/site/', { headers: { authorization: basic('hunter22') } })).status, 200)
    for (let i = 0; i < 10; i++) {
      const s = i % 2 === 0 ? a : b
      assert.equal((await s.get('/alice/site/', { headers: { authorization: basic(`guess-${i}`) } })).status, 401)
    }
    assert.equal((await a.get('/alice/site/', { headers: { authorization: basic('hunter22x') } })).status, 429)
    assert.equal((await b.get('/alice/site/', { headers: { authorization: basic('another') } })).status, 429)
  })
})
