import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fc from 'fast-check'
import path from 'node:path'
import { promisify } from 'node:util'
import zlib from 'node:zlib'
import { expectError, expectErrorInBoth } from '../support/errors.js'
import { ENGINES, REDIS_URL, multipart, needs, startServer, type TestServer, startSecond } from '../support/server.js'
import { referencedDigests, sweepBlobs } from '../../src/storage/sweeper.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'
import { BUS_CHANNEL } from '../../src/features/hosted-data/cache.js'
import { createHostedData } from '../../src/features/hosted-data/service.js'
import { FakeClock } from '../../src/util/clock.js'

const run = promisify(execFile)
const ROOT = path.resolve(import.meta.dirname, '..', '..')

/** Runs the real operator CLI (bin/svc) against a test server's database. */
async function cli(s: TestServer, ...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [path.join(ROOT, 'bin', 'svc'), ...args], { env: { ...process.env, ...s.env } })
  return stdout.trim()
}

/** Percent-encodes UTF-8 bytes (a lone surrogate becomes U+FFFD, as a client would send it). */
const pct = (v: string) =>
  [...Buffer.from(v)].map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`)).join('')

type User = Awaited<ReturnType<TestServer['user']>> & { cookie: string }

const F = '/api/hosted-data/files'
const RATE_LIMITS = JSON.stringify(
  Object.fromEntries(['default', 'authenticated', 'vip'].map((t) => [t, { minute: 100000, hour: 100000, day: 100000, concurrent: 1000 }])),
)

async function counts(s: TestServer) {
  const rows = await s.deps.db.k
    .selectFrom('hosted_versions')
    .select((e) => e.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  let blobs = 0
  for await (const _ of s.deps.blobs.list()) blobs++
  return { versions: Number(rows.n), blobs }
}

for (const engine of ENGINES) {
  describe(`hosted data [${engine}]`, () => {
    let s: TestServer
    let alice: User
    let bob: User
    const json = (u: User, method: string, p: string, body?: unknown) =>
      s.request(method, p, { cookie: u.cookie, ...(body === undefined ? {} : { json: body }), headers: { 'accept-language': 'en' } })
    const create = async (u: User, body: Record<string, unknown>) => {
      const r = await json(u, 'POST', F, body)
      assert.equal(r.status, 200, r.text)
      return r.json.file
    }
    const pub = (url: string, headers: Record<string, string> = {}) => s.get(new URL(url).pathname + new URL(url).search, { headers })

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS } })
      const mk = async () => {
        const u = await s.user()
        return { ...u, cookie: await s.login(u.username, u.password) }
      }
      alice = await mk()
      bob = await mk()
      await cli(s, 'grant', bob.username, 'hosted-data')
    })
    after(() => s.close())

    it('answers status 200 entitled:false before an entitlement, and 403 on every other endpoint', async () => {
      const st = await json(alice, 'GET', '/api/hosted-data/status')
      assert.equal(st.status, 200)
      assert.equal(st.json.success, true)
      assert.equal(st.json.entitled, false)
      assert.deepEqual(st.json.quota, { max_files: 50, used_files: 0, max_file_bytes: 10485760, max_versions: 20 })
      assert.ok(st.header('x-ratelimit-limit'))
      for (const [m, p, b] of [
        ['GET', F],
        ['POST', F, { display_name: 'a', content: 'x' }],
        ['GET', `${F}/x`],
        ['POST', `${F}/x/versions`, { content: 'x' }],
        ['POST', `${F}/x/default-version`, { version: 1 }],
        ['PUT', `${F}/x/meta`, { display_name: 'y' }],
        ['DELETE', `${F}/x`],
      ] as const) {
        expectError(await json(alice, m, p, b), 403, 'plain')
      }
    })

    it('refuses an API key with 403 {success:false, message}, even with the entitlement', async () => {
      const f = await create(bob, { display_name: 'k.txt', content: 'k' })
      for (const [m, p, b] of [
        ['GET', '/api/hosted-data/status'],
        ['GET', F],
        ['POST', F, { display_name: 'a', content: 'x' }],
        ['GET', `${F}/${f.id}`],
        ['POST', `${F}/${f.id}/versions`, { content: 'x' }],
        ['POST', `${F}/${f.id}/default-version`, { version: 1 }],
        ['PUT', `${F}/${f.id}/meta`, { display_name: 'y' }],
        ['DELETE', `${F}/${f.id}`],
      ] as const) {
        const r = await s.request(m, p, { key: bob.key, ...(b ? { json: b } : {}) })
        expectError(r, 403, 'plain')
      }
      assert.equal((await json(bob, 'GET', `${F}/${f.id}`)).status, 200)
      expectError(await s.get(F), 401, 'plain')
    })

    it('enables hosted data with a one-time redeem code from the CLI', async () => {
      const code = await cli(s, 'redeem-code', 'create', 'hosted-data')
      assert.match(code, /^DATA-/)
      const r = await json(alice, 'POST', '/api/redeem', { code })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.feature, 'hosted-data')
      const st = await json(alice, 'GET', '/api/hosted-data/status')
      assert.equal(st.json.entitled, true)
      expectError(await json(bob, 'POST', '/api/redeem', { code }), 400, 'plain')
      assert.equal((await json(alice, 'GET', F)).status, 200)
    })

    it('creates from JSON and serves the exact bytes with the content type, nosniff, CORS *, ETag and 304', async () => {
      const content = '{"name":"数据 ✓","list":[1,2,3]}\n'
      const f = await create(alice, { display_name: 'data.json', content, content_type: 'application/json' })
      assert.match(f.id, /^[A-Za-z0-9-]+$/)
      assert.equal(f.display_name, 'data.json')
      assert.equal(f.content_type, 'application/json')
      assert.equal(f.default_version, 1)
      assert.equal(f.version_count, 1)
      assert.equal(f.locked, false)
      assert.equal(f.size, Buffer.byteLength(content))
      assert.match(f.public_url, /^https:\/\/127\.0\.0\.1:\d+\/svc-data\/pub\/[A-Za-z0-9]{16,}$/)
      assert.equal(f.versions.length, 1)
      assert.equal(f.versions[0].is_default, true)

      const r = await pub(f.public_url)
      assert.equal(r.status, 200)
      assert.deepEqual(r.body, Buffer.from(content))
      assert.equal(r.header('content-type'), 'application/json; charset=utf-8')
      assert.equal(r.header('x-content-type-options'), 'nosniff')
      assert.equal(r.header('access-control-allow-origin'), '*')
      assert.equal(r.header('access-control-allow-credentials'), undefined)
      assert.equal(r.header('set-cookie'), undefined)
      assert.equal(r.header('x-ratelimit-limit'), undefined, 'public links are not rate limited')
      const etag = r.header('etag')!
      assert.match(etag, /^"[0-9a-f.]+"$/)
      const nm = await pub(f.public_url, { 'if-none-match': etag })
      assert.equal(nm.status, 304)
      assert.equal(nm.body.length, 0)
      assert.equal((await pub(f.public_url, { 'if-none-match': '"other"' })).status, 200)
      const head = await s.request('HEAD', new URL(f.public_url).pathname)
      assert.equal(head.status, 200)
      assert.equal(head.header('content-length'), String(Buffer.byteLength(content)))
      assert.equal(head.body.length, 0)
      const alias = await s.get(new URL(f.public_url).pathname.replace('/svc-data/pub/', '/hosted-data/pub/'))
      assert.deepEqual(alias.body, Buffer.from(content))
      assert.equal(alias.header('etag'), etag)
      // a logged-in visitor gets the same bytes and headers (cookies are never read)
      const withCookie = await s.get(new URL(f.public_url).pathname, { cookie: alice.cookie })
      assert.deepEqual(withCookie.body, r.body)
      assert.equal(withCookie.header('content-security-policy'), r.header('content-security-policy'))
      const pre = await s.request('OPTIONS', new URL(f.public_url).pathname, {
        headers: { origin: 'https://elsewhere.test', 'access-control-request-method': 'GET' },
      })
      assert.equal(pre.status, 204)
      assert.equal(pre.header('access-control-allow-origin'), '*')
    })

    it('lists files with public_url and a version summary, and shows every version in details', async () => {
      const f = await create(alice, { display_name: 'list-me.csv', content: 'a,b\n1,2\n' })
      assert.equal(f.content_type, 'text/csv', 'type from the display name')
      const l = await json(alice, 'GET', F)
      assert.equal(l.status, 200)
      assert.equal(l.json.success, true)
      const item = l.json.files.find((x: { id: string }) => x.id === f.id)
      for (const k of ['id', 'display_name', 'content_type', 'public_url', 'default_version', 'version_count', 'updated_at', 'locked']) assert.ok(k in item, k)
      assert.equal(l.json.files[0].id, f.id, 'most recently updated first')
      assert.ok(!l.json.files.some((x: { display_name: string }) => x.display_name === 'k.txt'), "only the caller's files")
      const d = await json(alice, 'GET', `${F}/${f.id}`)
      assert.deepEqual(Object.keys(d.json.file.versions[0]).sort(), ['content_type', 'created_at', 'is_default', 'size', 'url', 'version'])
      assert.match(d.json.file.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+08:00$/)
    })

    it('serves a switched default version on the very next request; ?v=N pins one version', async () => {
      const f = await create(alice, { display_name: 'switch.txt', content: 'version A' })
      assert.equal((await pub(f.public_url)).text, 'version A') // warms the cache
      const v2 = await json(alice, 'POST', `${F}/${f.id}/versions`, { content: 'version B' })
      assert.equal(v2.status, 200, v2.text)
      assert.equal(v2.json.file.default_version, 1, 'a new version is not the default unless asked')
      assert.equal(v2.json.file.latest_version, 2)
      assert.equal(v2.json.file.version_count, 2)
      assert.equal((await pub(f.public_url)).text, 'version A')
      const pinned = await pub(`${f.public_url}?v=2`)
      assert.equal(pinned.text, 'version B')
      assert.equal(pinned.header('x-data-version'), '2')
      assert.match(pinned.header('cache-control')!, /immutable/)
      assert.match((await pub(f.public_url)).header('cache-control')!, /no-cache/)
      assert.equal((await pub(`${f.public_url}?v=9`)).status, 404)
      assert.equal((await pub(`${f.public_url}?v=abc`)).status, 400)
      assert.equal((await pub(`${f.public_url}?v=0`)).status, 400)

      const sw = await json(alice, 'POST', `${F}/${f.id}/default-version`, { version: 2 })
      assert.equal(sw.status, 200, sw.text)
      assert.equal(sw.json.file.default_version, 2)
      assert.deepEqual(
        sw.json.file.versions.map((v: { is_default: boolean }) => v.is_default),
        [false, true],
      )
      const after = await pub(f.public_url)
      assert.equal(after.text, 'version B')
      assert.equal(after.header('x-data-version'), '2')
      assert.equal((await pub(`${f.public_url}?v=1`)).text, 'version A')

      const v3 = await json(alice, 'POST', `${F}/${f.id}/versions`, { content: 'version C', set_default: true })
      assert.equal(v3.json.file.default_version, 3)
      assert.equal((await pub(f.public_url)).text, 'version C')
      expectError(await json(alice, 'POST', `${F}/${f.id}/default-version`, { version: 7 }), 400, 'plain')
      expectError(await json(alice, 'POST', `${F}/${f.id}/default-version`, { version: 'x' }), 400, 'plain')
      expectError(await json(alice, 'POST', `${F}/${f.id}/default-version`, {}), 400, 'plain')

      // deleting one version (beyond the spec): never the default one
      expectError(await json(alice, 'DELETE', `${F}/${f.id}/versions/3`), 409, 'plain')
      const dv = await json(alice, 'DELETE', `${F}/${f.id}/versions/1`)
      assert.equal(dv.status, 200, dv.text)
      assert.deepEqual(
        dv.json.file.versions.map((v: { version: number }) => v.version),
        [2, 3],
      )
      assert.equal((await pub(`${f.public_url}?v=1`)).status, 404)
      expectError(await json(alice, 'DELETE', `${F}/${f.id}/versions/1`), 404, 'plain')
    })

    it('compresses a link for clients that accept it (made off the request path); ranges and 304s stay right', async () => {
      const rows = Array.from({ length: 4000 }, (_, i) => ({ i, city: i % 2 ? 'Zürich' : '北京', v: i / 2 }))
      const content = JSON.stringify(rows)
      const f = await create(bob, { display_name: 'rows.json', content })
      const p = new URL(f.public_url).pathname
      const identity = await s.get(p)
      assert.deepEqual(identity.body, Buffer.from(content))
      assert.equal(identity.header('content-encoding'), undefined)
      assert.equal(identity.header('vary'), 'Accept-Encoding', 'a shared cache keeps one answer per encoding')
      const idTag = identity.header('etag')!
      const drop = () => s.deps.services.get(createHostedData).cache.drop(f.public_token)
      for (const [enc, decode] of [
        ['gzip', zlib.gunzipSync],
        ['br', zlib.brotliDecompressSync],
      ] as const) {
        const ae = { 'accept-encoding': enc }
        // the first request that could take the form gets identity and asks for it
        let r = await s.get(p, { headers: ae })
        for (let i = 0; i < 200 && r.header('content-encoding') !== enc; i++) {
          await new Promise((ok) => setTimeout(ok, 25))
          r = await s.get(p, { headers: ae })
        }
        assert.equal(r.header('content-encoding'), enc)
        assert.deepEqual(decode(r.body), Buffer.from(content), 'the same bytes once decoded')
        assert.ok(r.body.length < content.length / 3, `${r.body.length} of ${content.length}`)
        assert.equal(r.header('content-length'), String(r.body.length))
        assert.equal(r.header('vary'), 'Accept-Encoding')
        assert.equal(r.header('content-type'), 'application/json; charset=utf-8')
        assert.equal(r.header('x-data-version'), '1')
        assert.equal(r.header('access-control-allow-origin'), '*')
        const tag = r.header('etag')!
        assert.notEqual(tag, idTag, 'another representation, another validator')
        // the route (a link not cached yet) answers the same as the fast path
        drop()
        const routed = await s.get(p, { headers: ae })
        assert.equal(routed.header('content-encoding'), enc)
        assert.deepEqual(routed.body, r.body)
        assert.equal(routed.header('etag'), tag)
        assert.equal(routed.header('vary'), 'Accept-Encoding')
        const head = await s.request('HEAD', p, { headers: ae })
        assert.equal(head.header('content-encoding'), enc)
        assert.equal(head.header('content-length'), String(r.body.length))
        // either validator revalidates: 304 with the tag of what would be sent
        for (const inm of [tag, idTag]) {
          for (const fresh of [false, true]) {
            if (fresh) drop()
            const nm = await s.get(p, { headers: { ...ae, 'if-none-match': inm } })
            assert.equal(nm.status, 304)
            assert.equal(nm.header('etag'), tag)
          }
        }
        // a range is of the identity bytes
        const part = await s.get(p, { headers: { ...ae, range: 'bytes=0-9' } })
        assert.equal(part.status, 206)
        assert.equal(part.header('content-encoding'), undefined)
        assert.equal(part.text, content.slice(0, 10))
        // a pinned link of the same bytes shares the form
        const pinned = await s.get(`${p}?v=1`, { headers: ae })
        assert.equal(pinned.header('content-encoding'), enc)
        assert.deepEqual(decode(pinned.body), Buffer.from(content))
      }
      const refused = await s.get(p, { headers: { 'accept-encoding': 'gzip;q=0, br;q=0' } })
      assert.equal(refused.header('content-encoding'), undefined)
      assert.deepEqual(refused.body, Buffer.from(content))
      // a tiny file is not worth it
      const small = await create(bob, { display_name: 'small.json', content: '{"a":1}' })
      for (let i = 0; i < 3; i++) {
        const r = await s.get(new URL(small.public_url).pathname, { headers: { 'accept-encoding': 'gzip' } })
        assert.equal(r.header('content-encoding'), undefined)
        assert.equal(r.text, '{"a":1}')
      }
    })

    it("a new version's answer names the version it created, whatever was pushed at the same time", async () => {
      const f = await create(bob, { display_name: 'pushed.json', content: '{"run":0}' })
      // concurrent pushers (CI jobs): each must learn its own number, to pin ?v=N
      const runs = Array.from({ length: 6 }, (_, i) => i + 1)
      const answers = await Promise.all(runs.map((i) => json(bob, 'POST', `${F}/${f.id}/versions`, { content: `{"run":${i}}`, set_default: i % 2 === 0 })))
      const numbers = new Set<number>()
      for (const [k, r] of answers.entries()) {
        assert.equal(r.status, 200, r.text)
        const v = r.json.version
        assert.equal(typeof v?.version, 'number', r.text)
        numbers.add(v.version)
        assert.equal(v.size, Buffer.byteLength(`{"run":${runs[k]}}`))
        assert.equal(v.content_type, 'application/json')
        assert.equal(v.url, `${f.public_url}?v=${v.version}`)
        assert.equal(typeof v.is_default, 'boolean')
        assert.equal((await pub(v.url)).text, `{"run":${runs[k]}}`, 'the pinned link of the version this request pushed')
      }
      assert.deepEqual([...numbers].sort(), [2, 3, 4, 5, 6, 7])
    })

    it('latest_version names the newest version that exists; numbers of deleted versions are never reused', async () => {
      const f = await create(alice, { display_name: 'numbering.txt', content: 'one' })
      await json(alice, 'POST', `${F}/${f.id}/versions`, { content: 'two' })
      await json(alice, 'POST', `${F}/${f.id}/versions`, { content: 'three' })
      // the newest version goes: the summary points at the newest one left, whose link answers
      const dv = await json(alice, 'DELETE', `${F}/${f.id}/versions/3`)
      assert.equal(dv.status, 200, dv.text)
      assert.equal(dv.json.file.latest_version, 2)
      assert.equal(dv.json.file.version_count, 2)
      const listed = (await json(alice, 'GET', F)).json.files.find((x: { id: string }) => x.id === f.id)
      assert.equal(listed.latest_version, 2)
      assert.equal((await pub(`${f.public_url}?v=${listed.latest_version}`)).text, 'two')
      // the next upload still gets a number never used before (a link to ?v=3 never shows other bytes)
      const v4 = await json(alice, 'POST', `${F}/${f.id}/versions`, { content: 'four' })
      assert.equal(v4.json.file.latest_version, 4)
      assert.deepEqual(
        v4.json.file.versions.map((v: { version: number }) => v.version),
        [1, 2, 4],
      )
      assert.equal((await pub(`${f.public_url}?v=3`)).status, 404)
      assert.equal((await pub(`${f.public_url}?v=4`)).text, 'four')
    })

    it('?v=latest serves the newest version whatever the default, revalidated on every use', async () => {
      const f = await create(alice, { display_name: 'latest.json', content: '{"n":1}' })
      const latest = `${f.public_url}?v=latest`
      const one = await pub(latest)
      assert.equal(one.status, 200, one.text)
      assert.equal(one.text, '{"n":1}')
      assert.equal(one.header('x-data-version'), '1')
      assert.equal(one.header('cache-control'), 'public, no-cache')
      assert.equal(one.header('content-type'), 'application/json; charset=utf-8')
      assert.equal(one.header('access-control-allow-origin'), '*')
      // a new version that is not the default: the plain link keeps v1, latest shows v2 at once
      // (each read twice: the route, then the cached fast path)
      await json(alice, 'POST', `${F}/${f.id}/versions`, { content: '{"n":2}' })
      for (let i = 0; i < 2; i++) {
        assert.equal((await pub(f.public_url)).text, '{"n":1}')
        const two = await pub(latest)
        assert.equal(two.text, '{"n":2}')
        assert.equal(two.header('x-data-version'), '2')
        assert.equal(two.header('etag'), (await pub(`${f.public_url}?v=2`)).header('etag'))
        assert.equal((await pub(latest, { 'if-none-match': two.header('etag')! })).status, 304)
      }
      // the newest version deleted: latest is the newest one left
      await json(alice, 'POST', `${F}/${f.id}/versions`, { content: '{"n":3}' })
      assert.equal((await pub(latest)).text, '{"n":3}')
      assert.equal((await json(alice, 'DELETE', `${F}/${f.id}/versions/3`)).status, 200)
      for (let i = 0; i < 2; i++) assert.equal((await pub(latest)).header('x-data-version'), '2')
      const alias = await s.get(`${new URL(f.public_url).pathname.replace('/svc-data/pub/', '/hosted-data/pub/')}?v=latest`)
      assert.equal(alias.text, '{"n":2}')
      // other words are still refused, and say what is accepted
      for (const v of ['Latest', 'newest', 'latest1']) {
        const bad = await pub(`${f.public_url}?v=${v}`)
        assert.equal(bad.status, 400, v)
        assert.match(bad.text, /latest/, v)
      }
      assert.equal((await pub(`${f.public_url.replace(/pub\/\w+/, 'pub/AAAAAAAAAAAAAAAAAAAAAA')}?v=latest`)).status, 404)
    })

    it('readers during default-version switches always get A or B, never a 404 or mixed bytes', async () => {
      const A = 'A'.repeat(200_000)
      const B = 'B'.repeat(150_000)
      const f = await create(alice, { display_name: 'race.txt', content: A })
      await json(alice, 'POST', `${F}/${f.id}/versions`, { content: B })
      let stop = false
      const seen = { A: 0, B: 0 }
      const reader = async () => {
        while (!stop) {
          const r = await pub(f.public_url)
          assert.equal(r.status, 200)
          if (r.text === A) seen.A++
          else if (r.text === B) seen.B++
          else assert.fail(`mixed or truncated body of ${r.body.length} bytes`)
        }
      }
      const readers = [reader(), reader(), reader()]
      for (let i = 0; i < 12; i++) {
        const r = await json(alice, 'POST', `${F}/${f.id}/default-version`, { version: (i % 2) + 1 })
        assert.equal(r.status, 200)
      }
      stop = true
      await Promise.all(readers)
      assert.ok(seen.A + seen.B > 0)
    })

    it("says what is wrong with a file's fields in the answer's language", async () => {
      const CJK = /[\u4e00-\u9fff]/
      const cases: Array<[Record<string, unknown>, string]> = [
        [
          { display_name: 'a\u202eb', content: 'x' },
          'display_name must not contain invisible format characters (bidi overrides or isolates, zero-width characters)',
        ],
        [{ display_name: '   ', content: 'x' }, 'display_name must be 1-255 characters'],
        [{ display_name: 'a\u0085b', content: 'x' }, 'display_name must not contain control characters'],
        [{ display_name: 'd.txt', content: 'x', description: 'a\u0001b' }, 'description must not contain control characters'],
        [{ display_name: 'd.txt', content: 'x', description: 'x'.repeat(2001) }, 'description must be at most 2000 characters'],
        [{ display_name: 'd.txt', content: '' }, 'content is empty'],
        [{ display_name: 'd.txt' }, 'content is required'],
        [{ display_name: 'd.txt', content: 'x', content_type: 'text/plain; charset=latin1' }, 'content is always UTF-8: charset must be utf-8'],
        [{ display_name: 'd.txt', content: 'x', content_type: 'text/plain; q=1' }, 'content_type parameter "q=1" is not allowed (only charset=utf-8)'],
      ]
      for (const [body, en] of cases) {
        for (const lang of ['zh-CN', 'en']) {
          const r = await s.request('POST', F, { cookie: bob.cookie, json: body, headers: { 'accept-language': lang } })
          assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`)
          if (lang === 'en') assert.equal(r.json.message, `Invalid parameter: ${en}`)
          else {
            assert.ok(CJK.test(r.json.message), r.json.message)
            assert.doesNotMatch(r.json.message, /[a-z]{4,} [a-z]{2,}/, `no English words: ${r.json.message}`)
          }
        }
      }
    })

    describe('refusals of quotas and versions are wholly Chinese by default and English on request', () => {
      let carl: User
      let id: string
      before(async () => {
        const u = await s.user()
        carl = { ...u, cookie: await s.login(u.username, u.password) }
        await cli(s, 'grant', carl.username, 'hosted-data')
        await s.deps.users.update(carl.username, { limits: { hosted_files: 1, hosted_versions: 1 } })
        id = (await create(carl, { display_name: 'only.txt', content: 'one' })).id
      })
      const send = (method: string, p: string, body?: unknown) => (headers: Record<string, string>) =>
        s.request(method, p, { cookie: carl.cookie, ...(body === undefined ? {} : { json: body }), headers })
      // [label, request, status, Chinese message, English message]
      const cases: Array<[string, () => ReturnType<typeof send>, number, string, string]> = [
        [
          'the file quota',
          () => send('POST', F, { display_name: 'two.txt', content: 'two' }),
          400,
          '配额已满：托管数据文件数已达上限（1/1）',
          'Quota exceeded: hosted data files 1/1',
        ],
        [
          'the version quota',
          () => send('POST', `${F}/${id}/versions`, { content: 'v2' }),
          400,
          '配额已满：此文件的版本数已达上限（1/1），请先删除旧版本',
          'Quota exceeded: versions of this file 1/1; delete an old version first',
        ],
        [
          'a default version that does not exist',
          () => send('POST', `${F}/${id}/default-version`, { version: 7 }),
          400,
          '参数错误：版本 7 不存在',
          'Invalid parameter: version 7 does not exist',
        ],
        [
          'deleting a version that does not exist',
          () => send('DELETE', `${F}/${id}/versions/9`),
          404,
          '参数错误：版本 9 不存在',
          'Invalid parameter: version 9 does not exist',
        ],
        [
          'deleting a version past the integer range',
          () => send('DELETE', `${F}/${id}/versions/2147483648`),
          404,
          '参数错误：版本 2147483648 不存在',
          'Invalid parameter: version 2147483648 does not exist',
        ],
        [
          'deleting the default version',
          () => send('DELETE', `${F}/${id}/versions/1`),
          409,
          '参数错误：不能删除默认版本，请先切换默认版本',
          'Invalid parameter: the default version cannot be deleted; switch the default first',
        ],
      ]
      for (const [label, request, status, zh, en] of cases) {
        it(label, async () => {
          await expectErrorInBoth(request(), status, 'plain', zh, en, true)
        })
      }
    })

    it('refuses a display_name with a bidi override, an isolate, a C1 control or a stray zero-width character; a file name drops them', async () => {
      for (const bad of ['photo\u202etxt.exe', 'a\u2066b', 'a\u2069', 'a\u0085b', '\u009fa', 'a\u200bb', 'a\ufeffb']) {
        const r = await json(bob, 'POST', F, { display_name: bad, content: 'x' })
        assert.equal(r.status, 400, `${JSON.stringify(bad)}: ${r.text}`)
        assert.equal(r.json.success, false)
        assert.match(r.json.message, /display_name/)
        const f = await create(bob, { display_name: 'meta-target.txt', content: 'x' })
        const m = await json(bob, 'PUT', `${F}/${f.id}/meta`, { display_name: bad })
        assert.equal(m.status, 400, `meta ${JSON.stringify(bad)}: ${m.text}`)
        await json(bob, 'DELETE', `${F}/${f.id}`)
      }
      // a joiner inside a word is writing, as in site paths and image names
      assert.equal((await create(bob, { display_name: 'می\u200cخواهم.txt', content: 'x' })).display_name, 'می\u200cخواهم.txt')
      // a name taken from the uploaded file is cleaned as an image's is
      const m = multipart([{ name: 'file', filename: 'report\u202etxt.json', type: 'application/octet-stream', data: '{}' }])
      const r = await s.post(F, { cookie: bob.cookie, body: m.body, headers: { 'content-type': m.contentType } })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.file.display_name, 'reporttxt.json')
    })

    it('creates from a multipart UTF-8 text file, with the type from the field, the file name or the default', async () => {
      const m1 = multipart([{ name: 'file', filename: 'table.csv', type: 'application/octet-stream', data: 'x,y\n1,2\n' }])
      const r1 = await s.post(F, { cookie: alice.cookie, body: m1.body, headers: { 'content-type': m1.contentType } })
      assert.equal(r1.status, 200, r1.text)
      assert.equal(r1.json.file.display_name, 'table.csv')
      assert.equal(r1.json.file.content_type, 'text/csv')
      assert.equal((await pub(r1.json.file.public_url)).text, 'x,y\n1,2\n')

      const m2 = multipart([
        { name: 'file', filename: 'notes', data: '# Title\n' },
        { name: 'display_name', data: 'Readme ✓' },
        { name: 'content_type', data: 'text/markdown; charset=UTF-8' },
      ])
      const r2 = await s.post(F, { cookie: alice.cookie, body: m2.body, headers: { 'content-type': m2.contentType } })
      assert.equal(r2.status, 200, r2.text)
      assert.equal(r2.json.file.display_name, 'Readme ✓')
      assert.equal(r2.json.file.content_type, 'text/markdown')

      const m3 = multipart([
        { name: 'file', filename: 'v2.csv', data: 'x,y\n3,4\n' },
        { name: 'set_default', data: 'true' },
      ])
      const r3 = await s.post(`${F}/${r1.json.file.id}/versions`, { cookie: alice.cookie, body: m3.body, headers: { 'content-type': m3.contentType } })
      assert.equal(r3.status, 200, r3.text)
      assert.equal(r3.json.file.default_version, 2)
      assert.equal(r3.json.file.content_type, 'text/csv', "a version keeps the file's type unless it declares one")
      assert.equal((await pub(r1.json.file.public_url)).text, 'x,y\n3,4\n')

      const none = multipart([{ name: 'display_name', data: 'x' }])
      expectError(
        await s.post(F, { cookie: alice.cookie, body: none.body, headers: { 'content-type': none.contentType, 'accept-language': 'en' } }),
        400,
        'plain',
      )
      expectError(
        await s.post(F, { cookie: alice.cookie, body: 'display_name=a&content=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
        415,
        'plain',
      )
    })

    it('refuses invalid UTF-8, NUL, bad JSON, CRLF or unknown content types with a clear 400, storing nothing', async () => {
      const before = await counts(s)
      const invalid = [Buffer.from([0x61, 0xff, 0x62]), Buffer.from([0xc0, 0xae]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xe4, 0xb8])]
      for (const data of invalid) {
        const m = multipart([{ name: 'file', filename: 'bad.txt', data }])
        const r = await s.post(F, { cookie: alice.cookie, body: m.body, headers: { 'content-type': m.contentType, 'accept-language': 'en' } })
        expectError(r, 400, 'plain')
        assert.match(r.json.message, /UTF-8/)
      }
      const lone = await s.post(F, {
        cookie: alice.cookie,
        body: '{"display_name":"x","content":"a\\ud800b"}',
        headers: { 'content-type': 'application/json', 'accept-language': 'en' },
      })
      expectError(lone, 400, 'plain')
      assert.match(lone.json.message, /UTF-8/)
      const nul = await json(alice, 'POST', F, { display_name: 'x', content: 'a\u0000b' })
      expectError(nul, 400, 'plain')
      const badJson = await json(alice, 'POST', F, { display_name: 'x.json', content: '{"a":', content_type: 'application/json' })
      expectError(badJson, 400, 'plain')
      assert.match(badJson.json.message, /JSON/)
      const implied = await json(alice, 'POST', F, { display_name: 'implied.json', content: '{"a":' })
      expectError(implied, 400, 'plain') // the type implied by the name is checked too
      for (const ct of [
        'text/plain\r\nSet-Cookie: a=b',
        'text/html\nX: y',
        'text/plain; boundary=x',
        'text/plain; charset=latin1',
        'application/octet-stream',
        'image/png',
        'text/plain\u0000',
      ]) {
        const r = await json(alice, 'POST', F, { display_name: 'x', content: 'hi', content_type: ct })
        expectError(r, 400, 'plain')
        assert.match(r.json.message, /content_type|charset/)
      }
      for (const body of [
        { content: 'no name' },
        { display_name: 'x' },
        { display_name: '', content: 'x' },
        { display_name: 'a\nb', content: 'x' },
        { display_name: 'x'.repeat(256), content: 'x' },
        { display_name: 'x', content: '' },
        { display_name: 'x', content: 5 },
        { display_name: 'x', content: { a: 1 }, content_type: 'text/plain' },
      ]) {
        expectError(await json(alice, 'POST', F, body), 400, 'plain')
      }
      expectError(await s.post(F, { cookie: alice.cookie, body: '{"display_name":', headers: { 'content-type': 'application/json' } }), 400, 'plain')
      assert.deepEqual(await counts(s), before, 'nothing stored')
      // an object is accepted for JSON types and stored as JSON
      const obj = await create(alice, { display_name: 'obj', content: { a: [1, 'β'] } })
      assert.equal(obj.content_type, 'application/json')
      assert.equal((await pub(obj.public_url)).text, '{"a":[1,"β"]}')
      // a UTF-8 byte-order mark is kept, and a BOM-prefixed JSON document still counts as JSON
      const bom = multipart([{ name: 'file', filename: 'bom.json', data: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('[1]')]) }])
      const rb = await s.post(F, { cookie: alice.cookie, body: bom.body, headers: { 'content-type': bom.contentType } })
      assert.equal(rb.status, 200, rb.text)
      assert.deepEqual((await pub(rb.json.file.public_url)).body, Buffer.from([0xef, 0xbb, 0xbf, 0x5b, 0x31, 0x5d]))
    })

    it('refuses object content JSON cannot hold (nested too deeply, a number out of range) with a 400, on create and on a new version, storing nothing', async () => {
      const f = await create(alice, { display_name: 'deep.json', content: '[]' })
      const before = await counts(s)
      const deep = '['.repeat(10_000) + ']'.repeat(10_000)
      for (const [p, body] of [
        [F, `{"display_name":"deep.json","content":${deep}}`],
        [`${F}/${f.id}/versions`, `{"content":${deep}}`],
      ]) {
        const r = await s.post(p, { cookie: alice.cookie, body, headers: { 'content-type': 'application/json', 'accept-language': 'en' } })
        expectError(r, 400, 'plain')
        assert.equal(r.json.message, 'Invalid parameter: content nests too deeply to store as JSON; send it as a string')
      }
      // a number out of range (the parser reads it as Infinity) would be stored as null
      for (const [p, body] of [
        [F, '{"display_name":"big.json","content":{"a":[1,1e309]}}'],
        [`${F}/${f.id}/versions`, '{"content":{"a":-1e400}}'],
      ]) {
        const r = await s.post(p, { cookie: alice.cookie, body, headers: { 'content-type': 'application/json', 'accept-language': 'en' } })
        expectError(r, 400, 'plain')
        assert.equal(r.json.message, 'Invalid parameter: content holds a number out of range (numbers must be finite doubles)')
      }
      assert.deepEqual(await counts(s), before, 'nothing stored')
      // the same document as a string is a file like any other
      const asText = await create(alice, { display_name: 'deep.json', content: deep })
      assert.equal((await pub(asText.public_url)).text, deep)
    })

    it('updates display name and description with PUT meta', async () => {
      const f = await create(alice, { display_name: 'old name', content: 'm' })
      const r = await json(alice, 'PUT', `${F}/${f.id}/meta`, { display_name: '  new name  ', description: 'line 1\nline 2' })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      assert.equal(r.json.file.display_name, 'new name')
      assert.equal(r.json.file.description, 'line 1\nline 2')
      assert.equal(r.json.file.default_version, 1)
      expectError(await json(alice, 'PUT', `${F}/${f.id}/meta`, {}), 400, 'plain')
      expectError(await json(alice, 'PUT', `${F}/${f.id}/meta`, { display_name: 'a\u0007' }), 400, 'plain')
      expectError(await json(alice, 'PUT', `${F}/${f.id}/meta`, { display_name: '   ' }), 400, 'plain')
      assert.equal((await json(alice, 'GET', `${F}/${f.id}`)).json.file.display_name, 'new name')
    })

    it("answers 404 for a missing file and for another user's file, changing nothing", async () => {
      const f = await create(alice, { display_name: 'mine.txt', content: 'alice only' })
      for (const id of [f.id, '00000000-0000-0000-0000-000000000000', 'no%2Fpe', 'x'.repeat(65)]) {
        for (const [m, p, b] of [
          ['GET', `${F}/${id}`],
          ['POST', `${F}/${id}/versions`, { content: 'x' }],
          ['POST', `${F}/${id}/default-version`, { version: 1 }],
          ['PUT', `${F}/${id}/meta`, { display_name: 'stolen' }],
          ['DELETE', `${F}/${id}`],
          ['DELETE', `${F}/${id}/versions/1`],
        ] as const) {
          expectError(await json(bob, m, p, b), 404, 'plain')
        }
      }
      expectError(await json(bob, 'GET', `${F}/no%00pe`), 400, 'plain') // NUL: refused by the API guard
      const d = await json(alice, 'GET', `${F}/${f.id}`)
      assert.equal(d.json.file.display_name, 'mine.txt')
      assert.equal(d.json.file.version_count, 1)
      assert.equal((await pub(f.public_url)).text, 'alice only')
      for (const t of ['doesnotexist0000000000', 'short', 'a%2F..%2Fb']) assert.equal((await s.get(`/svc-data/pub/${t}`)).status, 404)
    })

    it("a missing version or token of a public link answers 404 in the feature's error format, {success:false, message}", async () => {
      const f = await create(bob, { display_name: 'versions.txt', content: 'one' })
      assert.equal((await json(bob, 'POST', `${F}/${f.id}/versions`, { content: 'two' })).status, 200)
      // an existing version still serves, warming the cache (the fast path) for the misses below
      for (const [q, body] of [
        ['', 'one'],
        ['?v=1', 'one'],
        ['?v=2', 'two'],
        ['?v=latest', 'two'],
      ]) {
        const ok = await pub(`${f.public_url}${q}`)
        assert.equal(ok.status, 200, q)
        assert.equal(ok.text, body, q)
      }
      const unknown = f.public_url.replace(/pub\/\w+/, 'pub/AAAAAAAAAAAAAAAAAAAAAA')
      const cases = [`${f.public_url}?v=3`, `${f.public_url}?v=2147483648`, `${f.public_url}?v=9999999999`, unknown, `${unknown}?v=1`, `${unknown}?v=latest`]
      for (const url of cases) {
        for (const [lang, message] of [
          [{}, '资源不存在'],
          [{ 'accept-language': 'en' }, 'Not found'],
        ] as const) {
          const r = await pub(url, lang)
          assert.equal(r.status, 404, url)
          assert.match(r.header('content-type') ?? '', /^application\/json/, url)
          assert.deepEqual(r.json, { success: false, message }, url)
          // as inert and uncached as the link's content, readable by a page on another origin
          assert.equal(r.header('cache-control'), 'no-store', url)
          assert.match(r.header('content-security-policy') ?? '', /sandbox/, url)
          assert.equal(r.header('x-content-type-options'), 'nosniff', url)
          assert.equal(r.header('access-control-allow-origin'), '*', url)
          for (const h of ['etag', 'x-data-version', 'last-modified']) assert.equal(r.header(h), undefined, `${url} ${h}`)
        }
        const head = await s.request('HEAD', new URL(url).pathname + new URL(url).search)
        assert.equal(head.status, 404, url)
        assert.equal(head.text, '', url)
      }
      // a malformed token or v: the same format
      for (const t of ['short', 'a%2F..%2Fb'])
        assert.deepEqual((await s.get(`/svc-data/pub/${t}`, { headers: { 'accept-language': 'en' } })).json, { success: false, message: 'Not found' })
      const bad = await pub(`${f.public_url}?v=abc`, { 'accept-language': 'en' })
      assert.equal(bad.status, 400)
      assert.deepEqual(bad.json, { success: false, message: 'Invalid parameter: v must be a version number (1, 2, ...) or latest' })
      // a deleted version is missing too; the others still serve
      assert.equal((await json(bob, 'DELETE', `${F}/${f.id}/versions/2`)).status, 200)
      const gone = await pub(`${f.public_url}?v=2`, { 'accept-language': 'en' })
      assert.equal(gone.status, 404)
      assert.deepEqual(gone.json, { success: false, message: 'Not found' })
      assert.equal((await pub(`${f.public_url}?v=1`)).text, 'one')
    })

    it('refuses to delete a locked file with 423 (svc lock), deletes it once unlocked', async () => {
      const f = await create(alice, { display_name: 'locked.txt', content: 'keep me' })
      assert.equal(await cli(s, 'lock', 'hosted-data', f.id), `locked hosted-data ${f.id}`)
      const l = await json(alice, 'GET', `${F}/${f.id}`)
      assert.equal(l.json.file.locked, true)
      expectError(await json(alice, 'DELETE', `${F}/${f.id}`), 423, 'plain')
      // twice: the second answer is the fast path's (cached lookup, the blob's open file)
      for (let i = 0; i < 2; i++) assert.equal((await pub(f.public_url)).text, 'keep me')
      await cli(s, 'unlock', 'hosted-data', f.id)
      const d = await json(alice, 'DELETE', `${F}/${f.id}`)
      assert.equal(d.status, 200)
      // the message in the caller's language (this helper asks for English)
      assert.deepEqual(d.json, { success: true, message: 'Deleted' })
      assert.equal((await pub(f.public_url)).status, 404)
      expectError(await json(alice, 'GET', `${F}/${f.id}`), 404, 'plain')
    })

    it('refuses content over the per-version limit with 413 while it streams, storing nothing', async () => {
      const before = await counts(s)
      const big = Buffer.alloc(10 * 1024 * 1024 + 1, 0x61)
      const m = multipart([{ name: 'file', filename: 'big.txt', data: big }])
      const r = await s.post(F, { cookie: alice.cookie, body: m.body, headers: { 'content-type': m.contentType, 'accept-language': 'en' } })
      expectError(r, 413, 'plain')
      assert.match(r.json.message, /10485760/)
      const rj = await json(alice, 'POST', F, { display_name: 'big', content: big.toString() })
      expectError(rj, 413, 'plain')
      assert.deepEqual(await counts(s), before, 'no row, no blob')

      const u = await s.user()
      const carol = { ...u, cookie: await s.login(u.username, u.password) }
      await s.deps.db.k.insertInto('entitlements').values({ user_id: carol.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() }).execute()
      await cli(s, 'user', 'set', carol.username, '--limit', 'hosted_file_bytes=1000', '--limit', 'hosted_files=2', '--limit', 'hosted_versions=2')
      const st = await json(carol, 'GET', '/api/hosted-data/status')
      assert.deepEqual(st.json.quota, { max_files: 2, used_files: 0, max_file_bytes: 1000, max_versions: 2 })
      const exact = await create(carol, { display_name: 'exact.txt', content: 'x'.repeat(1000) })
      assert.equal(exact.size, 1000)
      const c0 = await counts(s)
      expectError(await json(carol, 'POST', F, { display_name: 'over', content: 'é'.repeat(501) }), 413, 'plain')
      const m2 = multipart([{ name: 'file', filename: 'o.txt', data: 'y'.repeat(1001) }])
      expectError(await s.post(`${F}/${exact.id}/versions`, { cookie: carol.cookie, body: m2.body, headers: { 'content-type': m2.contentType } }), 413, 'plain')
      expectError(await json(carol, 'POST', `${F}/${exact.id}/versions`, { content: 'z'.repeat(1001) }), 413, 'plain')
      // a JSON body far past the limit is refused while it streams (limit + 64 KiB, counted as stored)
      expectError(await json(carol, 'POST', F, { display_name: 'huge', content: 'z'.repeat(100_000) }), 413, 'plain')
      assert.deepEqual(await counts(s), c0)

      // quotas: files per user and versions per file, checked before anything is stored
      await create(carol, { display_name: 'second', content: 'two' })
      const third = await json(carol, 'POST', F, { display_name: 'third', content: 'three, unique' })
      expectError(third, 400, 'plain')
      assert.match(third.json.message, /2\/2/)
      assert.equal((await json(carol, 'POST', `${F}/${exact.id}/versions`, { content: 'v2' })).status, 200)
      const c1 = await counts(s)
      expectError(await json(carol, 'POST', `${F}/${exact.id}/versions`, { content: 'v3, unique bytes' }), 400, 'plain')
      assert.deepEqual(await counts(s), c1)
      assert.equal((await json(carol, 'GET', '/api/hosted-data/status')).json.quota.used_files, 2)
    })

    it('applies the per-version limit to JSON content as decoded: \\u escapes and indentation do not count against it', async () => {
      const u = await s.user()
      const dave = { ...u, cookie: await s.login(u.username, u.password) }
      await cli(s, 'grant', dave.username, 'hosted-data')
      await cli(s, 'user', 'set', dave.username, '--limit', 'hosted_file_bytes=100000')
      // JSON with every non-ASCII character escaped, as Python's json.dumps writes it
      const ascii = (v: unknown) => JSON.stringify(v, null, 2).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
      const post = (p: string, body: unknown) =>
        s.post(p, { cookie: dave.cookie, body: ascii(body), headers: { 'content-type': 'application/json', 'accept-language': 'en' } })
      const c0 = await counts(s)
      // exactly the limit: 2-byte, 4-byte (a surrogate pair) and 1-byte control characters, 3 to 6 times longer escaped
      for (const content of ['é'.repeat(50_000), '😀'.repeat(25_000), '\u0001'.repeat(100_000)]) {
        const r = await post(F, { display_name: 'escaped.txt', content })
        assert.equal(r.status, 200, r.text.slice(0, 300))
        assert.equal(r.json.file.size, 100_000)
        assert.equal((await pub(r.json.file.public_url)).text, content)
        const v = await post(`${F}/${r.json.file.id}/versions`, { content: content.slice(0, -2) + 'ab' })
        assert.equal(v.status, 200, v.text.slice(0, 300))
      }
      // an object content: the stored JSON.stringify form is what counts, not the indented body
      const obj = { rows: Array.from({ length: 1000 }, (_, i) => ({ id: i, name: 'ü'.repeat(38) })) }
      const ro = await post(F, { display_name: 'rows.json', content: obj })
      assert.equal(ro.status, 200, ro.text.slice(0, 300))
      assert.ok(ascii({ display_name: 'rows.json', content: obj }).length > 2 * 100_000 + 64 * 1024, 'the body is larger than the old raw cap')
      const c1 = await counts(s)
      // one byte more, escaped or not: 413 as a multipart file gets it, nothing stored
      for (const content of ['é'.repeat(50_000) + 'x', '\u0001'.repeat(100_001)])
        expectError(await post(F, { display_name: 'over.txt', content }), 413, 'plain')
      // far past it: refused while the body streams
      expectError(await post(F, { display_name: 'huge.txt', content: '\u0001'.repeat(1_000_000) }), 413, 'plain')
      assert.equal((await counts(s)).versions, c1.versions)
      assert.ok(c1.versions > c0.versions)
    })

    it("lets exactly the quota's worth of concurrent creates and versions through", async () => {
      const u = await s.user()
      const dave = { ...u, cookie: await s.login(u.username, u.password) }
      await s.deps.db.k.insertInto('entitlements').values({ user_id: dave.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() }).execute()
      await s.deps.users.update(dave.username, { limits: { hosted_files: 3, hosted_versions: 4 } })
      const creates = await Promise.all(Array.from({ length: 8 }, (_, i) => json(dave, 'POST', F, { display_name: `c${i}`, content: `concurrent ${i}` })))
      assert.deepEqual(creates.map((r) => r.status).sort(), [200, 200, 200, 400, 400, 400, 400, 400])
      const id = creates.find((r) => r.status === 200)!.json.file.id
      const versions = await Promise.all(Array.from({ length: 6 }, (_, i) => json(dave, 'POST', `${F}/${id}/versions`, { content: `v ${i}` })))
      assert.equal(versions.filter((r) => r.status === 200).length, 3)
      const d = await json(dave, 'GET', `${F}/${id}`)
      assert.deepEqual(
        d.json.file.versions.map((v: { version: number }) => v.version),
        [1, 2, 3, 4],
      )
      assert.equal((await json(dave, 'GET', '/api/hosted-data/status')).json.quota.used_files, 3)
    })

    it("keeps referenced blobs through a sweep and lets a deleted file's blob go", async () => {
      const f = await create(alice, { display_name: 'sweep.txt', content: 'sweep me, unique 1f3a' })
      const digest = (await s.deps.db.k.selectFrom('hosted_versions').select('digest').where('file_id', '=', f.id).executeTakeFirstOrThrow()).digest
      assert.ok((await referencedDigests(s.deps.db, BLOB_COLUMNS)).has(digest))
      await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
      assert.equal((await pub(f.public_url)).text, 'sweep me, unique 1f3a')
      await json(alice, 'DELETE', `${F}/${f.id}`)
      await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
      assert.equal(await s.deps.blobs.exists(digest), false)
    })

    it('serves HTML, SVG and XML data inert: sandbox without allow-scripts, default-src none, nosniff', async () => {
      const html = '<!doctype html><title>orig</title><script>document.title="ran"</script>'
      for (const [ct, content] of [
        ['text/html', html],
        ['image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'],
        ['application/xhtml+xml', `<html xmlns="http://www.w3.org/1999/xhtml"><body><script>alert(1)</script></body></html>`],
        ['application/xml', '<a/>'],
        ['text/plain', 'x'],
      ]) {
        const f = await create(alice, { display_name: 'page', content, content_type: ct })
        const r = await pub(f.public_url)
        assert.equal(r.header('content-type'), `${ct}; charset=utf-8`)
        const csp = r.header('content-security-policy')!
        assert.match(csp, /(^|;)\s*sandbox\s*(;|$)/)
        assert.ok(!csp.includes('allow-scripts') && !csp.includes('allow-same-origin'), csp)
        assert.match(csp, /default-src 'none'/)
        assert.equal(r.header('x-content-type-options'), 'nosniff')
        assert.equal(r.header('cross-origin-resource-policy'), 'cross-origin')
        assert.equal((await s.get(new URL(f.public_url).pathname, { headers: { 'service-worker': 'script' } })).status, 403)
      }
    })

    it('never answers 5xx to naughty ids, bodies and types from an entitled session (fast-check)', async () => {
      const f = await create(bob, { display_name: 'fuzz.json', content: '{}', content_type: 'application/json' })
      const naughty = fc.constantFrom(
        '',
        ' ',
        '0',
        '-1',
        '1.5',
        '1e400',
        'null',
        '__proto__',
        '../../etc/passwd',
        '%00',
        '\ud800',
        '😀',
        '\u202e',
        'a'.repeat(300),
        '<script>alert(1)</script>',
        'text/html\r\nX: y',
        'application/json; charset=latin1',
        f.id,
      )
      const value = fc.oneof(
        naughty,
        fc.integer(),
        fc.double(),
        fc.boolean(),
        fc.constant(null),
        fc.array(naughty, { maxLength: 3 }),
        fc.dictionary(naughty, naughty, { maxKeys: 3 }),
      )
      const routes = [
        ['POST', F],
        ['GET', `${F}/{id}`],
        ['POST', `${F}/{id}/versions`],
        ['POST', `${F}/{id}/default-version`],
        ['PUT', `${F}/{id}/meta`],
        ['DELETE', `${F}/{id}/versions/{id}`],
      ] as const
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...routes),
          naughty,
          fc.record({ display_name: value, content: value, content_type: value, version: value, set_default: value, description: value }, { requiredKeys: [] }),
          async ([method, route], id, body) => {
            const r = await s.request(method, route.replaceAll('{id}', pct(id) || 'x'), {
              cookie: bob.cookie,
              ...(method === 'GET' || method === 'DELETE' ? {} : { json: body }),
            })
            assert.ok(r.status < 500, `${method} ${route} ${id} ${JSON.stringify(body).slice(0, 200)} -> ${r.status} ${r.text.slice(0, 200)}`)
            assert.equal(typeof r.json?.success, 'boolean')
            if (!r.json.success) assert.equal(typeof r.json.message, 'string')
          },
        ),
        { numRuns: 150, seed: 20261122 },
      )
      // the file the fuzzer could reach is still served, whatever happened to it
      const d = await json(bob, 'GET', `${F}/${f.id}`)
      assert.equal((await pub(d.json.file.public_url)).status, 200)
    })

    it('documents the endpoints in /openapi.json', async () => {
      const doc = (await s.get('/openapi.json')).json
      for (const p of [
        '/api/hosted-data/status',
        '/api/hosted-data/files',
        '/api/hosted-data/files/{file_id}',
        '/api/hosted-data/files/{file_id}/versions',
        '/api/hosted-data/files/{file_id}/default-version',
        '/api/hosted-data/files/{file_id}/meta',
        '/svc-data/pub/{token}',
      ])
        assert.ok(doc.paths[p], p)
    })
  })
  describe(`hosted data links' Last-Modified [${engine}]`, () => {
    it('a pinned version dates from its creation; the default link only moves forward, switched back or not', async () => {
      const t0 = Math.floor(Date.now() / 1000) * 1000
      const clock = new FakeClock(t0)
      const s = await startServer({ engine, clock, env: { RATE_LIMITS } })
      try {
        const u = await s.user()
        await cli(s, 'grant', u.username, 'hosted-data')
        const cookie = await s.login(u.username, u.password)
        const date = (ms: number) => new Date(ms).toUTCString()
        const c = await s.post(F, { cookie, json: { display_name: 'dated.txt', content: 'version A' } })
        assert.equal(c.status, 200, c.text)
        const link = new URL(c.json.file.public_url).pathname
        /** Two reads (the route, which fills the cache, then the answer from memory), alike. */
        const twice = async (path: string, headers: Record<string, string> = {}) => {
          const r1 = await s.get(path, { headers })
          const r2 = await s.get(path, { headers })
          assert.equal(r2.status, r1.status, path)
          assert.equal(r2.header('last-modified'), r1.header('last-modified'), path)
          assert.equal(r2.text, r1.text, path)
          return r1
        }
        clock.advance(60_000)
        assert.equal((await s.post(`${F}/${c.json.file.id}/versions`, { cookie, json: { content: 'version B' } })).status, 200)

        const v1 = await twice(`${link}?v=1`)
        assert.equal(v1.header('last-modified'), date(t0))
        assert.equal((await twice(`${link}?v=2`)).header('last-modified'), date(t0 + 60_000))
        assert.equal((await twice(`${link}?v=1`, { 'if-modified-since': date(t0) })).status, 304)
        assert.equal((await twice(`${link}?v=1`, { 'if-modified-since': date(t0 - 1000) })).status, 200)
        // the default link: the later of its version's creation and the file's last change
        const a = await twice(link)
        assert.equal(a.text, 'version A')
        assert.equal(a.header('last-modified'), date(t0 + 60_000))
        assert.equal((await twice(link, { 'if-modified-since': date(t0 + 60_000) })).status, 304)
        assert.equal((await twice(link, { 'if-modified-since': date(Date.now() + 86_400_000) })).status, 304)
        // If-None-Match decides alone when present
        assert.equal((await twice(link, { 'if-none-match': '"other"', 'if-modified-since': date(t0 + 60_000) })).status, 200)

        clock.advance(60_000)
        assert.equal((await s.post(`${F}/${c.json.file.id}/default-version`, { cookie, json: { version: 2 } })).status, 200)
        const b = await twice(link)
        assert.equal(b.text, 'version B')
        assert.equal(b.header('last-modified'), date(t0 + 120_000))
        // switched back to a version older than the answer a client holds: a date-only
        // revalidation gets the bytes, not a 304 that would keep version B
        clock.advance(60_000)
        assert.equal((await s.post(`${F}/${c.json.file.id}/default-version`, { cookie, json: { version: 1 } })).status, 200)
        const back = await twice(link, { 'if-modified-since': b.header('last-modified')! })
        assert.equal(back.status, 200)
        assert.equal(back.text, 'version A')
        assert.equal(back.header('last-modified'), date(t0 + 180_000))
        // a pinned version's date never moves
        assert.equal((await twice(`${link}?v=1`)).header('last-modified'), date(t0))
      } finally {
        await s.close()
      }
    })
  })
  describe(`hosted data across instances (shared database, Redis bus) [${engine}]`, needs('redis'), () => {
    it('a default switched on one instance is what the other instance serves next', async () => {
      const a = await startServer({ engine, keepData: true, env: { REDIS_URL, RATE_LIMITS } })
      const clock = new FakeClock() // b's cache lines never age out during the test
      const b = await startSecond(a, { clock })
      try {
        const u = await a.user()
        const cookie = await a.login(u.username, u.password)
        await a.deps.db.k.insertInto('entitlements').values({ user_id: u.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() }).execute()
        const c = await a.post(F, { cookie, json: { display_name: 'x.txt', content: 'one' } })
        const url = new URL(c.json.file.public_url).pathname
        await a.post(`${F}/${c.json.file.id}/versions`, { cookie, json: { content: 'two' } })
        assert.equal((await b.get(url)).text, 'one') // b caches version 1
        // proof that b answers from its cache: a change behind the service's back is not seen
        await a.deps.db.k.updateTable('hosted_files').set({ default_version: 2 }).where('id', '=', c.json.file.id).execute()
        assert.equal((await b.get(url)).text, 'one')
        await a.deps.db.k.updateTable('hosted_files').set({ default_version: 1 }).where('id', '=', c.json.file.id).execute()
        // wait (deterministically) for b to receive the invalidation of this token
        const delivered = new Promise<void>((resolve) =>
          b.deps.bus.subscribe(BUS_CHANNEL, (t) => {
            if (url.endsWith(t)) resolve()
          }),
        )
        const sw = await a.post(`${F}/${c.json.file.id}/default-version`, { cookie, json: { version: 2 } })
        assert.equal(sw.status, 200)
        await delivered
        assert.equal((await b.get(url)).text, 'two')
        assert.equal((await a.get(url)).text, 'two')
        // a change made outside the service (an account disabled) shows once b's line ages out
        await a.deps.db.k.updateTable('users').set({ disabled: 1 }).where('id', '=', u.id).execute()
        assert.equal((await b.get(url)).status, 200)
        clock.advance(5_001)
        assert.equal((await b.get(url)).status, 404)
      } finally {
        await a.close() // keeps the shared data; b's close removes it
        await b.close()
      }
    })
  })
}
