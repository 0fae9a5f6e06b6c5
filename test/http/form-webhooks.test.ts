import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { ENGINES, dropSchema, startServer, type TestServer } from '../support/server.js'
import { expectError } from '../support/errors.js'

interface Hit {
  headers: http.IncomingHttpHeaders
  body: string
  answered: number
}

/** A webhook receiver on loopback: records every request and answers the next status of `script` (then the last one). */
async function receiver(script: number[]) {
  const hits: Hit[] = []
  const plan = [...script]
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const status = plan.length > 1 ? plan.shift()! : plan[0]
      hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered: status })
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'fail')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    hits,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    setPlan: (p: number[]) => plan.splice(0, plan.length, ...p),
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

async function until(check: () => boolean | Promise<boolean>, ms = 15_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Checks X-Svc-Signature the way a receiver should: HMAC-SHA256 of "<t>.<body>", compared in constant time. */
function verify(h: Hit, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(h.headers['x-svc-signature']))
  if (!m || m[1] !== h.headers['x-svc-timestamp']) return false
  if (Math.abs(Date.now() / 1000 - Number(m[1])) > 300) return false
  const want = crypto.createHmac('sha256', secret).update(`${m[1]}.${h.body}`).digest()
  return crypto.timingSafeEqual(want, Buffer.from(m[2], 'hex'))
}

// the tests poll the delivery log: lift the request limits
const RATE_LIMITS = JSON.stringify(
  Object.fromEntries(['default', 'authenticated', 'vip'].map((t) => [t, { minute: 100000, hour: 100000, day: 100000, concurrent: 1000 }])),
)
const FAST = { NOTIFY_RETRY_BASE: '50ms', NOTIFY_POLL: '20ms', NOTIFY_MAX_AGE: '3s', WEBHOOK_TIMEOUT: '1s', RATE_LIMITS }

for (const engine of ENGINES) {
  describe(`form webhooks [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    const newForm = async (extra: Record<string, unknown> = {}) =>
      (await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Contact', ...extra } })).json.data as { id: string; form_slug: string }
    const submit = (slug: string, json: unknown) => s.post(`/api/forms/submit/${slug}`, { json })
    const deliveries = async (formId: string) => (await s.get(`/svc_api/forms/deliveries/${formId}`, { key: alice.key })).json.data as any[]

    before(async () => {
      s = await startServer({ engine, env: FAST })
      alice = await s.user()
    })
    after(() => s.close())

    it('signs each delivery, retries 500, 500, then 200, and logs 3 tries', async () => {
      const rx = await receiver([500, 500, 200])
      try {
        const form = await newForm()
        const set = await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url: rx.url } })
        assert.equal(set.status, 200, set.text)
        const secret: string = set.json.data.secret
        assert.match(secret, /^whsec_[A-Za-z0-9]{40}$/)
        const shown = await s.get(`/svc_api/forms/webhook/${form.id}`, { key: alice.key })
        assert.equal(shown.json.data.secret, undefined)
        assert.equal(shown.json.data.url, rx.url)

        const sub = await submit(form.form_slug, { name: 'Ann', msg: '<b>hi</b>' })
        assert.equal(sub.status, 200, sub.text)
        await until(async () => (await deliveries(form.id))[0]?.status === 'delivered', 15_000, 'delivery')
        assert.deepEqual(
          rx.hits.map((h) => h.answered),
          [500, 500, 200],
        )
        const ids = new Set(rx.hits.map((h) => h.headers['x-svc-delivery']))
        assert.equal(ids.size, 1)
        for (const h of rx.hits) {
          assert.ok(verify(h, secret), 'signature')
          assert.ok(!verify(h, `${secret}x`))
          assert.equal(h.headers['x-svc-event'], 'form.submission')
          const body = JSON.parse(h.body)
          assert.equal(body.submission.id, sub.json.data.submission_id)
          assert.deepEqual(body.submission.data, { name: 'Ann', msg: '<b>hi</b>' })
          assert.equal(body.form.id, form.id)
        }
        const [d] = await deliveries(form.id)
        assert.equal(d.tries, 3)
        assert.equal(d.last_status, 200)
        assert.equal(d.kind, 'webhook')
        assert.equal(d.id, [...ids][0])
      } finally {
        await rx.close()
      }
    })

    it('a spam submission triggers nothing; a rotated secret signs the next delivery', async () => {
      const rx = await receiver([200])
      try {
        const form = await newForm()
        const first = (await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url: rx.url } })).json.data.secret
        const spam = await submit(form.form_slug, { name: 'bot', _gotcha: 'filled' })
        assert.equal(spam.status, 200)
        await sleep(300)
        assert.equal(rx.hits.length, 0)
        assert.deepEqual(await deliveries(form.id), [])

        const rotated = await s.post(`/svc_api/forms/webhook/${form.id}/rotate`, { key: alice.key })
        const second: string = rotated.json.data.secret
        assert.notEqual(second, first)
        await submit(form.form_slug, { name: 'Bo' })
        await until(() => rx.hits.length === 1, 15_000, 'delivery')
        assert.ok(verify(rx.hits[0], second))
        assert.ok(!verify(rx.hits[0], first))
      } finally {
        await rx.close()
      }
    })

    it('retries go to the URL the webhook has now, signed with its secret', async () => {
      const old = await receiver([500])
      const fixed = await receiver([200])
      try {
        const form = await newForm()
        const secret = (await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url: old.url } })).json.data.secret
        const sub = await submit(form.form_slug, { name: 'Cy' })
        await until(() => old.hits.length >= 1, 15_000, 'a first try')
        // the owner corrects the URL while the delivery is being retried
        assert.equal((await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url: fixed.url } })).status, 200)
        await until(async () => (await deliveries(form.id))[0]?.status !== 'pending', 15_000, 'the end of the retries')
        const [d] = await deliveries(form.id)
        assert.equal(d.status, 'delivered', JSON.stringify(d))
        assert.equal(d.target, fixed.url)
        assert.equal(fixed.hits.length, 1)
        assert.ok(verify(fixed.hits[0], secret))
        assert.equal(JSON.parse(fixed.hits[0].body).submission.id, sub.json.data.submission_id)
      } finally {
        await old.close()
        await fixed.close()
      }
    })

    it('a paused webhook is not called: its pending delivery fails at once, and is redelivered once resumed', async () => {
      const rx = await receiver([500])
      try {
        const form = await newForm()
        await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url: rx.url } })
        await submit(form.form_slug, { name: 'Dee' })
        await until(() => rx.hits.length >= 1, 15_000, 'a first try')
        assert.equal((await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url: rx.url, enabled: false } })).status, 200)
        await until(async () => (await deliveries(form.id))[0]?.status !== 'pending', 15_000, 'the end of the retries')
        const [d] = await deliveries(form.id)
        assert.equal(d.status, 'failed')
        assert.match(d.last_error, /paused/)
        const calls = rx.hits.length

        rx.setPlan([200])
        assert.equal((await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url: rx.url, enabled: true } })).status, 200)
        assert.equal((await s.post(`/svc_api/forms/redeliver/${d.id}`, { key: alice.key })).status, 200)
        await until(async () => (await deliveries(form.id))[0]?.status === 'delivered', 15_000, 'the redelivery')
        assert.equal(rx.hits.length, calls + 1)
      } finally {
        await rx.close()
      }
    })

    it('gives up after NOTIFY_MAX_AGE, and a redelivery then succeeds', async () => {
      const rx = await receiver([503])
      try {
        const form = await newForm()
        await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url: rx.url } })
        await submit(form.form_slug, { a: '1' })
        await until(async () => (await deliveries(form.id))[0]?.status === 'failed', 15_000, 'failure')
        const [failed] = await deliveries(form.id)
        assert.ok(failed.tries >= 2, JSON.stringify(failed))
        assert.match(failed.last_error, /503/)
        const tries = rx.hits.length

        const early = await s.post(`/svc_api/forms/redeliver/${failed.id}`, { key: alice.key })
        assert.equal(early.status, 200, early.text)
        rx.setPlan([200])
        await until(async () => (await deliveries(form.id))[0]?.status === 'delivered', 15_000, 'redelivery')
        assert.equal(rx.hits.length, tries + 1)
        const again = await s.post(`/svc_api/forms/redeliver/${failed.id}`, { key: alice.key })
        assert.equal(again.status, 409)
        assert.equal(again.json.error_code, 1427)
      } finally {
        await rx.close()
      }
    })

    it('a receiver that trickles its answer fails the try at WEBHOOK_TIMEOUT and holds up no other delivery', async () => {
      // answers 200 at once, then a byte every 100 ms and never ends: only a deadline on the
      // whole try (1 s here) ends it, a socket idle timeout never fires
      const drips = new Set<NodeJS.Timeout>()
      const slow = http.createServer((req, res) => {
        req.resume()
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'text/plain' })
          const t = setInterval(() => res.write('.'), 100)
          drips.add(t)
          res.on('close', () => clearInterval(t))
        })
      })
      await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r))
      const rx = await receiver([200])
      try {
        const stuck = await newForm()
        await s.request('PUT', `/svc_api/forms/webhook/${stuck.id}`, {
          key: alice.key,
          json: { url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/hook` },
        })
        const other = await newForm()
        await s.request('PUT', `/svc_api/forms/webhook/${other.id}`, { key: alice.key, json: { url: rx.url } })
        await submit(stuck.form_slug, { a: '1' })
        await until(() => drips.size === 1, 15_000, 'the slow receiver reached')
        await submit(other.form_slug, { b: '2' })
        await until(() => rx.hits.length === 1, 20_000, 'the other delivery')
        const [d] = await deliveries(stuck.id)
        assert.equal(d.tries, 1, JSON.stringify(d))
        assert.match(d.last_error, /within 1 s/)
      } finally {
        for (const t of drips) clearInterval(t)
        slow.closeAllConnections()
        await new Promise<void>((r) => slow.close(() => r()))
        await rx.close()
      }
    })

    it('saves at once on a form without a webhook make one webhook, never a 500; the one that made it shows the secret', async () => {
      for (let round = 0; round < 3; round++) {
        const form = await newForm()
        const rs = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url: `http://127.0.0.1:9/h${i}` } }),
          ),
        )
        for (const r of rs) assert.equal(r.status, 200, r.text)
        const made = rs.filter((r) => r.json.data.secret !== undefined)
        assert.equal(made.length, 1, rs.map((r) => JSON.stringify(r.json.data)).join('\n'))
        const now = (await s.get(`/svc_api/forms/webhook/${form.id}`, { key: alice.key })).json.data
        assert.equal(now.secret_hint, made[0].json.data.secret_hint)
        assert.ok(rs.some((r) => r.json.data.url === now.url))
      }
    })

    describe('refuses a non-http URL and another user reaching the form', () => {
      let form: Awaited<ReturnType<typeof newForm>>
      before(async () => {
        form = await newForm()
      })
      for (const url of ['ftp://example.com/x', 'javascript:alert(1)', 'not a url', 'http://user:pw@example.com/']) {
        it(`${url}: 400 / 1420`, async () => {
          expectError(await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: alice.key, json: { url } }), 400, 1420)
        })
      }
      it('another user: 1611', async () => {
        const bob = await s.user()
        const r = await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: bob.key, json: { url: 'http://example.com/' } })
        assert.equal(r.json.error_code, 1611)
      })
      it('after them all, the form has no webhook (1422)', async () => {
        assert.equal((await s.get(`/svc_api/forms/webhook/${form.id}`, { key: alice.key })).json.error_code, 1422)
      })
    })
  })

  describe(`form webhooks: SSRF guard on [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine, env: { ...FAST, WEBHOOK_BLOCK_PRIVATE: '1' } })
    })
    after(() => s.close())

    it('refuses at delivery an address written as an IP literal, saved before the guard was on', async () => {
      const rx = await receiver([200])
      try {
        const u = await s.user()
        const form = (await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Old' } })).json.data
        // as saved by an instance with WEBHOOK_BLOCK_PRIVATE=0: a loopback literal (no name to resolve)
        const now = Date.now()
        await s.deps.db.k
          .insertInto('form_webhooks')
          .values({ form_id: form.id, user_id: u.id, url: rx.url, secret: 'whsec_test', enabled: 1, created_at: now, updated_at: now })
          .execute()
        assert.match(rx.url, /^http:\/\/127\.0\.0\.1:/)
        await s.post(`/api/forms/submit/${form.form_slug}`, { json: { x: '1' } })
        const log = async () => (await s.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key })).json.data as any[]
        await until(async () => ((await log())[0]?.tries ?? 0) >= 1, 15_000, 'a try')
        const [d] = await log()
        assert.notEqual(d.status, 'delivered')
        assert.match(d.last_error ?? d.error ?? JSON.stringify(d), /forbidden/)
        assert.equal(rx.hits.length, 0, 'nothing reached the loopback receiver')
      } finally {
        await rx.close()
      }
    })

    describe('refuses private, loopback and link-local targets and stores nothing', () => {
      let u: Awaited<ReturnType<TestServer['user']>>
      let form: { id: string }
      before(async () => {
        u = await s.user()
        form = (await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'F' } })).json.data
      })
      for (const url of [
        'http://127.0.0.1:9/x',
        'http://localhost/x',
        'http://169.254.169.254/latest/meta-data',
        'http://[::1]/',
        'http://10.1.2.3/',
        'https://192.168.0.1/',
        'http://[::ffff:127.0.0.1]/',
        // IPv4 embedded in IPv6 (compatible, translated, 6to4, Teredo), deprecated and documentation ranges
        'http://[::127.0.0.1]/',
        'http://[::ffff:0:7f00:1]/',
        'http://[2002:7f00:1::]/',
        'http://[2001::1]/',
        'http://[fec0::1]/',
        'http://[100::1]/',
        'http://192.0.2.1/',
        'http://203.0.113.9/',
      ]) {
        it(`${url}: 400 / 1421`, async () => {
          const r = await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: u.key, json: { url }, headers: { 'accept-language': 'en' } })
          expectError(r, 400, 1421)
          assert.match(r.json.message, /private, loopback or reserved/)
        })
      }
      it("says what is wrong with a webhook URL in the answer's language", async () => {
        const cases: Array<[unknown, number, string]> = [
          ['http://10.1.2.3/', 1421, 'Webhook URL not allowed: 10.1.2.3 resolves to 10.1.2.3, a private, loopback or reserved address'],
          ['', 1420, 'Invalid webhook URL: url is required (an http or https URL)'],
          ['nope', 1420, 'Invalid webhook URL: not an absolute URL'],
          ['ftp://example.com/', 1420, 'Invalid webhook URL: only http and https are allowed, not "ftp:"'],
          ['https://a:b@example.com/', 1420, 'Invalid webhook URL: credentials in the URL are not allowed; check the signature instead'],
          ['https://a b.example/', 1420, 'Invalid webhook URL: at most 2048 characters, without spaces or control characters'],
        ]
        for (const [url, code, en] of cases) {
          for (const lang of [undefined, 'en']) {
            const headers: Record<string, string> = lang ? { 'accept-language': lang } : {}
            const r = await s.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: u.key, json: { url }, headers })
            expectError(r, 400, code)
            if (lang === 'en') assert.equal(r.json.message, en)
            else {
              assert.match(r.json.message, /[\u4e00-\u9fff]/)
              assert.doesNotMatch(r.json.message, /[a-z]{4,} [a-z]{2,}/, `no English words: ${r.json.message}`)
            }
          }
        }
      })
      it('after them all, no webhook is stored', async () => {
        const got = await s.get(`/svc_api/forms/webhook/${form.id}`, { key: u.key })
        assert.equal(got.status, 404)
        const rows = await s.deps.db.k.selectFrom('form_webhooks').selectAll().where('form_id', '=', form.id).execute()
        assert.deepEqual(rows, [])
      })
    })
  })

  describe(`form webhooks across restarts and instances [${engine}]`, () => {
    it('a restart mid-retry still delivers, exactly once', { timeout: 60_000 }, async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-hook-'))
      const pgSchema = `t_${crypto.randomBytes(5).toString('hex')}`
      const env = { NOTIFY_RETRY_BASE: '500ms', NOTIFY_POLL: '20ms', RATE_LIMITS }
      const rx = await receiver([500, 500, 200])
      let a: TestServer | null = await startServer({ engine, env, dataDir, pgSchema, keepData: true })
      let b: TestServer | null = null
      try {
        const u = await a.user()
        const form = (await a.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'F' } })).json.data
        await a.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: u.key, json: { url: rx.url } })
        await a.post(`/api/forms/submit/${form.form_slug}`, { json: { x: '1' } })
        // the second try fails; the third is due 1 s later: stop the instance before it
        await until(() => rx.hits.length === 2, 15_000, 'two tries')
        await a.close()
        a = null
        b = await startServer({ engine, env, dataDir, pgSchema, keepData: true })
        await until(() => rx.hits.length === 3, 15_000, 'third try')
        await sleep(200)
        assert.deepEqual(
          rx.hits.map((h) => h.answered),
          [500, 500, 200],
        )
        assert.equal(new Set(rx.hits.map((h) => h.headers['x-svc-delivery'])).size, 1)
        const log = (await b.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key })).json.data
        assert.equal(log.length, 1)
        assert.equal(log[0].status, 'delivered')
        assert.equal(log[0].tries, 3)
      } finally {
        await a?.close()
        await b?.close()
        await rx.close()
        fs.rmSync(dataDir, { recursive: true, force: true })
        if (engine === 'postgres') await dropSchema(pgSchema)
      }
    })

    it('two instances on one database deliver each submission once', { timeout: 60_000 }, async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-hook-'))
      const pgSchema = `t_${crypto.randomBytes(5).toString('hex')}`
      const env = { NOTIFY_POLL: '10ms', RATE_LIMITS }
      const rx = await receiver([200])
      const a = await startServer({ engine, env, dataDir, pgSchema, keepData: true })
      const b = await startServer({ engine, env, dataDir, pgSchema, keepData: true })
      try {
        const u = await a.user()
        const form = (await a.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'F' } })).json.data
        await a.request('PUT', `/svc_api/forms/webhook/${form.id}`, { key: u.key, json: { url: rx.url } })
        // the public submit allows 10 a minute per client and form on each instance
        const N = 16
        for (let i = 0; i < N; i++) await (i % 2 ? a : b).post(`/api/forms/submit/${form.form_slug}`, { json: { i: String(i) } })
        await until(
          async () => (await a.get(`/svc_api/forms/deliveries/${form.id}`, { key: u.key })).json.data.every((d: any) => d.status === 'delivered'),
          30_000,
          'all delivered',
        )
        await sleep(300)
        assert.equal(rx.hits.length, N)
        assert.equal(new Set(rx.hits.map((h) => h.headers['x-svc-delivery'])).size, N)
        assert.deepEqual(
          rx.hits.map((h) => Number(JSON.parse(h.body).submission.data.i)).sort((x, y) => x - y),
          [...Array(N).keys()],
        )
      } finally {
        await a.close()
        await b.close()
        await rx.close()
        fs.rmSync(dataDir, { recursive: true, force: true })
        if (engine === 'postgres') await dropSchema(pgSchema)
      }
    })
  })
}
