import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import tls from 'node:tls'
import { once } from 'node:events'
import { gunzipSync, gzipSync } from 'node:zlib'
import { Readable } from 'node:stream'
import { Agent, request } from 'undici'
import tar from 'tar-stream'
import os from 'node:os'
import crypto from 'node:crypto'
import { Migrator, sql, type Kysely } from 'kysely'
import { openDatabase } from '../../src/db/kysely.js'
import { allMigrations } from '../../src/db/migrate.js'
import { FEATURE_TABLES } from '../../src/features/tables.js'
import { ENGINES, PG_URL, startServer, type ReqOptions, type Res, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { expectClientError, expectError } from '../support/errors.js'
import { deploySite, manifestOf, postArchive, sha, tarOf, type Site, type TarEntry } from '../support/deploys.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'
import { sweepBlobs } from '../../src/storage/sweeper.js'
import { until } from '../support/webhooks.js'
import { FakeClock } from '../../src/util/clock.js'
import { createFoldersService } from '../../src/features/sites/folders-service.js'

/** A small site whose every page and asset carries a version marker. */
const site = (v: string, extra: Site = {}): Site => ({
  'index.html': HTML(`home ${v}`, '<link rel="stylesheet" href="s.css">'),
  's.css': `/* ${v} */ body { color: red }`,
  'docs/a.html': HTML(`a ${v}`),
  'shared.txt': 'the same in every version',
  ...extra,
})

async function blobSet(s: TestServer): Promise<Set<string>> {
  const out = new Set<string>()
  for await (const b of s.deps.blobs.list()) out.add(b.digest)
  return out
}

for (const engine of ENGINES) {
  describe(`archive deploys [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DEPLOYS_KEEP: '4' } })
      u = await s.user()
    })
    after(() => s.close())

    const page = (project: string, p = '') => s.get(`/${u.username}/${project}/${p}`)
    const list = async (project: string) => (await s.get(`/api/folders/${project}/deploys`, { key: u.key })).json

    it('the check counts files held only by a kept deploy as known, and asks for new ones only', async () => {
      const k = await s.user()
      const v1 = site('v1')
      await deploySite(s, k.key, 'kept', v1)
      const v2 = { ...v1, 'index.html': HTML('kept v2') }
      assert.equal((await deploySite(s, k.key, 'kept', v2)).res.status, 201)
      // v1's home page is in the first deploy only (the working set holds v2's); two new files
      const v3 = { ...v1, 'n1.txt': 'one', 'n2.txt': 'two' }
      const third = await deploySite(s, k.key, 'kept', v3)
      assert.deepEqual([...third.check.json.missing].sort(), [sha('one'), sha('two')].sort())
      assert.equal(third.check.json.known_count, Object.keys(v1).length)
      assert.equal(third.res.json.uploaded_files, 2)
      assert.equal((await s.get(`/${k.username}/kept/`)).text, v1['index.html'])
    })

    it("a new project sends nothing the user's other projects hold; another user's files count for nothing", async () => {
      const k = await s.user()
      const original = site('copy', { 'data.json': '{"a":1}', 'img/x.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>' })
      assert.equal((await deploySite(s, k.key, 'original', original)).res.status, 201)
      // the same site under a new name (and a new path for one file): no file is sent again
      const copy = { ...original, 'renamed.json': original['data.json'] }
      const { check, res } = await deploySite(s, k.key, 'copy', copy)
      assert.deepEqual(check.json.missing, [])
      assert.equal(check.json.known_count, new Set(Object.values(copy).map(sha)).size)
      assert.equal(res.status, 201, res.text)
      assert.equal(res.json.uploaded_files, 0)
      assert.equal(res.json.deploy.file_count, Object.keys(copy).length)
      // every file answers with its own bytes and the type of its own path
      for (const [p, body] of Object.entries(copy)) {
        const r = await s.get(`/${k.username}/copy/${p}`)
        assert.equal(r.status, 200, p)
        assert.equal(r.text, String(body), p)
      }
      assert.match(String((await s.get(`/${k.username}/copy/renamed.json`)).header('content-type')), /^application\/json/)
      assert.match(String((await s.get(`/${k.username}/copy/img/x.svg`)).header('content-type')), /^image\/svg\+xml/)
      // the original replaced by other content: a third copy finds the files in the copy
      assert.equal((await deploySite(s, k.key, 'original', site('other'))).res.status, 201)
      assert.equal((await s.get(`/${k.username}/copy/data.json`)).text, original['data.json'])
      const third = await deploySite(s, k.key, 'third', original)
      assert.deepEqual(third.check.json.missing, [])
      assert.equal(third.res.status, 201, third.res.text)
      // another user with the same bytes: an archive without them is refused, naming a file,
      // and the check asks for every file, which the archive then carries
      const other = await s.user()
      expectError(await postArchive(s, other.key, 'bare', await tarOf([manifestOf(original)])), 400, 1330)
      const theirs = await deploySite(s, other.key, 'copy', original)
      assert.equal(theirs.check.json.missing.length, new Set(Object.values(original).map(sha)).size)
      assert.equal(theirs.res.status, 201, theirs.res.text)
    })

    it('deploys a whole site in two requests, then only what changed; gzip or plain tar', async () => {
      const { check, res } = await deploySite(s, u.key, 'web', site('v1'), { gzip: true, message: 'first' })
      assert.equal(check.status, 200)
      assert.equal(check.json.missing.length, 4)
      assert.equal(res.status, 201, res.text)
      assert.equal(res.json.uploaded_files, 4)
      assert.equal(res.json.deploy.file_count, 4)
      assert.equal(res.json.deploy.is_live, true)
      assert.equal((await page('web')).text, site('v1')['index.html'])
      assert.equal((await page('web', 'docs/a.html')).text, site('v1')['docs/a.html'])
      const css = await page('web', 's.css')
      assert.match(String(css.header('content-type')), /^text\/css; charset=utf-8/)

      // the project lists the deployed files through the spec's API too
      const files = (await s.get('/api/folders/web/files', { key: u.key })).json
      assert.deepEqual(files.files.map((f: { path: string }) => f.path).sort(), Object.keys(site('v1')).sort())

      // one changed file: the check names only its digest; the archive carries one file
      const v2 = { ...site('v1'), 'index.html': HTML('home v2') }
      const again = await deploySite(s, u.key, 'web', v2)
      assert.deepEqual(again.check.json.missing, [sha(v2['index.html'])])
      assert.equal(again.res.status, 201, again.res.text)
      assert.equal(again.res.json.uploaded_files, 1)
      assert.equal((await page('web')).text, HTML('home v2'))
      assert.equal((await page('web', 's.css')).text, site('v1')['s.css'])

      const l = await list('web')
      assert.equal(l.deploys.length, 2)
      assert.equal(l.live_deploy_id, again.res.json.deploy.id)
      assert.deepEqual(
        l.deploys.map((d: { source: string; is_live: boolean; message: string }) => [d.source, d.is_live, d.message]),
        [
          ['api', true, ''],
          ['api', false, 'first'],
        ],
      )
      // a file removed from the manifest is gone from the live site
      const v3 = { 'index.html': HTML('home v3') }
      assert.equal((await deploySite(s, u.key, 'web', v3)).res.status, 201)
      assert.equal((await page('web', 'docs/a.html')).status, 404)
    })

    it('takes a tar made the usual way (`tar -czf site.tgz svc-deploy.json -C site .`): its "./" and folders are skipped', async () => {
      const files = { 'index.html': HTML('made by tar'), 'css/a.css': 'a { color: red }' }
      // the entries and names GNU tar writes: the root "./" first, then "./" before every name
      const entries: TarEntry[] = [
        manifestOf(files),
        { name: './', type: 'directory' },
        { name: './index.html', data: files['index.html'] },
        { name: './css/', type: 'directory' },
        { name: './css/a.css', data: files['css/a.css'] },
      ]
      for (const gz of [true, false]) {
        const project = gz ? 'tar-gz' : 'tar-plain'
        const r = await postArchive(s, u.key, project, await tarOf(entries, gz), gz)
        assert.equal(r.status, 201, r.text)
        assert.equal(r.json.deploy.file_count, 2)
        assert.equal((await page(project)).text, files['index.html'])
        assert.equal((await page(project, 'css/a.css')).text, files['css/a.css'])
      }
      // the manifest named as `tar -czf site.tgz ./svc-deploy.json -C site .` names it
      const dotted = await postArchive(s, u.key, 'tar-dotted', await tarOf([{ ...manifestOf(files), name: './svc-deploy.json' }, ...entries.slice(1)]))
      assert.equal(dotted.status, 201, dotted.text)
      assert.equal((await page('tar-dotted', 'css/a.css')).text, files['css/a.css'])
    })

    it('a manifest over 16 MiB to deploys/missing: 413 / 1328, as in an archive; at the limit it is read', async () => {
      const limit = (await s.get('/api/folders/deploy_limits', { key: u.key })).json.data.max_manifest_bytes
      assert.equal(limit, 16 * 1024 * 1024)
      // valid JSON padded with spaces: only the size decides
      const manifest = (n: number) => Buffer.alloc(n, ' ').fill('{"files": {}}', 0, 13)
      const post = (body: Buffer | Readable) =>
        s.post('/api/folders/huge/deploys/missing', {
          key: u.key,
          body: body as Buffer,
          headers: { 'content-type': 'application/json', 'accept-language': 'en' },
          signal: AbortSignal.timeout(20_000),
        })
      // with a Content-Length (refused before it is read), and chunked (refused as it passes)
      for (const body of [manifest(limit + 1), Readable.from([manifest(limit + 1)])]) {
        const r = await post(body)
        expectError(r, 413, 1328)
        assert.match(r.json.message, /manifest is larger than 16 MiB \(16777216 bytes\)/)
      }
      expectError(await post(manifest(limit)), 400, 1327)
    })

    it('rolls back (by default to the previous deploy) and promotes, as a pointer switch; the file API follows', async () => {
      await deploySite(s, u.key, 'rb', site('r1'))
      await deploySite(s, u.key, 'rb', site('r2'))
      const [live, prev] = (await list('rb')).deploys
      const back = await s.post('/api/folders/rb/rollback', { key: u.key })
      assert.equal(back.status, 200, back.text)
      assert.equal(back.json.live_deploy_id, prev.id)
      assert.equal((await page('rb')).text, site('r1')['index.html'])
      const read = await s.get('/api/folders/rb/file/index.html', { key: u.key })
      assert.equal(read.json.content, site('r1')['index.html'])
      const fwd = await s.post(`/api/folders/${u.username}/rb/deploys/${live.id}/promote`, { key: u.key })
      assert.equal(fwd.status, 200, fwd.text)
      assert.equal((await page('rb')).text, site('r2')['index.html'])
      // an explicit id, an unknown one, another user's
      assert.equal((await s.post('/api/folders/rb/rollback', { key: u.key, json: { deploy_id: prev.id } })).json.live_deploy_id, prev.id)
      const unknown = await s.post('/api/folders/rb/deploys/zzzzzzzzzzzz/promote', { key: u.key })
      assert.equal(unknown.status, 404)
      assert.equal(unknown.json.error_code, 1331)
      const other = await s.user()
      const theirs = await s.post(`/api/folders/rb/deploys/${live.id}/promote`, { key: other.key })
      assert.equal(theirs.status, 403)
      assert.equal((await page('rb')).text, site('r1')['index.html'])
      // nothing before the first deploy
      await deploySite(s, u.key, 'one', site('o1'))
      const none = await s.post('/api/folders/one/rollback', { key: u.key })
      assert.equal(none.status, 409)
      assert.equal(none.json.error_code, 1334)
    })

    it("downloads a kept deploy as a gzip'd tar that deploys the same files again", async () => {
      const k = await s.user()
      const v1: Site = { ...site('v1'), 'img/dot.bin': Buffer.from([0, 1, 2, 255]), 'café/ü.txt': 'unicode' }
      assert.equal((await deploySite(s, k.key, 'dl', v1, { message: 'first' })).res.status, 201)
      assert.equal((await deploySite(s, k.key, 'dl', site('v2'))).res.status, 201)
      const [, first] = (await s.get('/api/folders/dl/deploys', { key: k.key })).json.deploys
      // the older deploy, not the live one
      const res = await s.get(`/api/folders/dl/deploys/${first.id}/archive`, { key: k.key })
      assert.equal(res.status, 200)
      assert.equal(res.header('content-type'), 'application/gzip')
      assert.equal(res.header('cache-control'), 'no-store')
      assert.match(
        res.header('content-disposition') ?? '',
        new RegExp(`^attachment; filename="${first.id}\\.tar\\.gz"; filename\\*=UTF-8''dl-${first.id}\\.tar\\.gz$`),
      )
      const entries = new Map<string, Buffer>()
      const extract = tar.extract()
      extract.on('entry', (h, stream, next) => {
        const chunks: Buffer[] = []
        stream.on('data', (c) => chunks.push(c as Buffer))
        stream.on('end', () => {
          entries.set(h.name, Buffer.concat(chunks))
          next()
        })
      })
      const done = once(extract, 'finish')
      extract.end(gunzipSync(res.body))
      await done
      // the manifest first, then every file of that deploy with its bytes
      assert.equal([...entries.keys()][0], 'svc-deploy.json')
      assert.deepEqual(JSON.parse(entries.get('svc-deploy.json')!.toString()), JSON.parse(String(manifestOf(v1, { message: 'first' }).data)))
      assert.deepEqual([...entries.keys()].slice(1).sort(), Object.keys(v1).sort())
      for (const [p, d] of Object.entries(v1)) assert.deepEqual(entries.get(p), Buffer.from(d), p)
      // posted back as it came, to another account's project: the same site goes live there
      const other = await s.user()
      assert.equal((await postArchive(s, other.key, 'copy', res.body, true)).status, 201)
      assert.equal((await s.get(`/${other.username}/copy/`)).text, v1['index.html'])
      assert.deepEqual((await s.get(`/${other.username}/copy/img/dot.bin`)).body, v1['img/dot.bin'])
      // a deploy the project does not keep, another user's project, no credentials
      expectError(await s.get('/api/folders/dl/deploys/zzzzzzzzzzzz/archive', { key: k.key }), 404, 1331)
      expectError(await s.get(`/api/folders/dl/deploys/${first.id}/archive`, { key: other.key }), 403, 1312)
      expectError(await s.get(`/api/folders/dl/deploys/${first.id}/archive`), 401, 1001)
      // taken-down bytes are not handed out again (451 / 1701), as a promote of that deploy is refused
      await s.deps.db.k
        .insertInto('blocked_digests')
        .values({ digest: sha(v1['s.css']), report_id: 'r-dl', created_at: Date.now(), created_by: 'test' })
        .execute()
      try {
        expectError(await s.get(`/api/folders/dl/deploys/${first.id}/archive`, { key: k.key }), 451, 1701)
      } finally {
        await s.deps.db.k.deleteFrom('blocked_digests').where('report_id', '=', 'r-dl').execute()
      }
    })

    it('a rollback body other than {"deploy_id"} is refused (400 / 1106) and rolls nothing back', async () => {
      await deploySite(s, u.key, 'rbbody', site('x1'))
      await deploySite(s, u.key, 'rbbody', site('x2'))
      const before = await list('rbbody')
      const prev = before.deploys[1].id
      const bodies: Array<[string, ReqOptions, RegExp]> = [
        ['a misnamed field', { json: { id: prev } }, /^Invalid parameter: unknown field "id" \(send deploy_id\)$/],
        ['camelCase', { json: { deployId: prev } }, /unknown field "deployId"/],
        ['an array', { json: [prev] }, /the body must be a JSON object, \{"deploy_id": "\.\.\."\}, or empty/],
        ['a JSON string', { json: prev }, /must be a JSON object/],
        ['a text body', { body: prev, headers: { 'content-type': 'text/plain' } }, /must be a JSON object/],
      ]
      for (const [what, o, message] of bodies) {
        const r = await s.post('/api/folders/rbbody/rollback', { key: u.key, ...o, headers: { 'accept-language': 'en', ...o.headers } })
        expectError(r, 400, 1106)
        assert.match(r.json.message, message, what)
      }
      assert.deepEqual(await list('rbbody'), before)
      assert.equal((await page('rbbody')).text, site('x2')['index.html'])
      // no body, an empty one and {} still go back one deploy
      for (const [i, o] of ([{}, { json: {} }, { body: '', headers: { 'content-type': 'application/json' } }] as ReqOptions[]).entries()) {
        await deploySite(s, u.key, 'rbbody', site(`y${i}`))
        await deploySite(s, u.key, 'rbbody', site(`z${i}`))
        const r = await s.post('/api/folders/rbbody/rollback', { key: u.key, ...o })
        assert.equal(r.status, 200, r.text)
        assert.equal((await page('rbbody')).text, site(`y${i}`)['index.html'])
      }
    })

    it('a rollback of an unpublished project is refused (409 / 1336) and leaves it unpublished (decision 158)', async () => {
      await deploySite(s, u.key, 'stopped', site('s1'))
      await deploySite(s, u.key, 'stopped', site('s2'))
      const [, prev] = (await list('stopped')).deploys
      assert.equal((await s.post('/api/folders/stopped/unpublish', { key: u.key })).status, 200)
      for (const json of [undefined, { deploy_id: prev.id }]) {
        const r = await s.post('/api/folders/stopped/rollback', { key: u.key, json })
        expectError(r, 409, 1336)
        assert.match(r.json.message, /"stopped"/)
      }
      assert.equal((await list('stopped')).live_deploy_id, null)
      assert.equal((await page('stopped')).status, 404)
      // published again, the rollback works as before
      assert.equal((await s.post('/api/folders/stopped/publish', { key: u.key })).status, 200)
      assert.equal((await s.post('/api/folders/stopped/rollback', { key: u.key })).status, 200)
      assert.equal((await page('stopped')).text, site('s2')['index.html'])
    })

    it('batch uploads to a live project make partial deploys, which a plain rollback skips (decisions 159, 178)', async () => {
      const d1 = (await deploySite(s, u.key, 'flood', site('b1'))).res.json.deploy.id
      const d2 = (await deploySite(s, u.key, 'flood', site('b2'))).res.json.deploy.id
      // svc deploy --batch --batch-files 1: one request per changed file, then the publish
      const v3 = site('b3')
      for (const f of ['index.html', 's.css', 'docs/a.html'])
        assert.equal((await batchUpload(s, { key: u.key }, 'flood', [{ filename: f, data: String(v3[f]) }], true)).status, 200)
      assert.equal((await page('flood')).text, v3['index.html'], 'each write still shows at once')
      assert.equal((await s.post('/api/folders/flood/publish', { key: u.key })).status, 200)
      const l = await list('flood')
      const ids = (l.deploys as Array<{ id: string }>).map((d) => d.id)
      assert.equal(ids.length, 6, 'the publish, a partial deploy per write, and the two before: none pushed out')
      assert.deepEqual(ids.slice(4), [d2, d1])
      assert.deepEqual(
        l.deploys.map((d: { is_partial: boolean }) => d.is_partial),
        [false, true, true, true, false, false],
      )
      // the plain rollback goes back to the deploy before the writes, whole
      const back = await s.post('/api/folders/flood/rollback', { key: u.key })
      assert.equal(back.json.live_deploy_id, d2, back.text)
      assert.equal((await page('flood')).text, site('b2')['index.html'])
      assert.equal((await page('flood', 's.css')).text, site('b2')['s.css'])
    })

    it("a partial deploy's preview keeps its own files after later writes, until retention prunes it (decision 178)", async () => {
      const k = await s.user()
      const ids = async () => (await s.get('/api/folders/perma/deploys', { key: k.key })).json.deploys as Array<{ id: string; is_partial: boolean }>
      const at = (id: string, p: string) => s.get(`/${k.username}/perma@${id}/${p}`)
      const write = async (name: string, data: string, more: Array<{ filename: string; data: string }> = []) =>
        assert.equal((await batchUpload(s, { key: k.key }, 'perma', [{ filename: name, data }, ...more], true)).status, 200)
      const whole = (await deploySite(s, k.key, 'perma', { 'index.html': HTML('whole 4e1a'), 'a.txt': 'a0', 'b.txt': 'b0' })).res.json.deploy.id
      await write('a.txt', 'a1')
      const first = (await ids())[0]
      assert.equal(first.is_partial, true)
      assert.equal((await at(first.id, 'a.txt')).text, 'a1')
      // the next write of the run: the first write's state is still served at its own URL
      await write('b.txt', 'b2', [{ filename: 'a.txt', data: 'a2' }])
      const second = (await ids())[0]
      assert.notEqual(second.id, first.id)
      for (const [id, a, b] of [
        [first.id, 'a1', 'b0'],
        [second.id, 'a2', 'b2'],
      ]) {
        const ra = await at(id, 'a.txt')
        assert.equal(ra.status, 200, `${id} a.txt`)
        assert.equal(ra.text, a)
        assert.equal((await at(id, 'b.txt')).text, b)
      }
      await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
      assert.equal((await at(first.id, 'a.txt')).text, 'a1', 'bytes only it holds outlive a sweep while it is kept')
      // a plain rollback still skips every partial deploy: it goes to the whole one
      assert.equal((await s.post('/api/folders/perma/rollback', { key: k.key })).json.live_deploy_id, whole)
      // partial deploys have a retention of their own (DEPLOYS_KEEP is 4 here): more writes
      // push out the oldest partial deploy, never the whole one
      for (let i = 3; i <= 5; i++) await write('a.txt', `a${i}`)
      const kept = await ids()
      assert.equal(kept.filter((d) => d.is_partial).length, 4)
      assert.ok(
        kept.some((d) => d.id === whole && !d.is_partial),
        'the whole deploy is kept',
      )
      assert.ok(!kept.some((d) => d.id === first.id), 'the oldest partial deploy is pruned')
      assert.equal((await at(first.id, 'a.txt')).status, 404)
      assert.equal((await at(second.id, 'b.txt')).text, 'b2')
    })

    it('a plain rollback goes back to a promoted preview that was live, never to one that was not', async () => {
      await deploySite(s, u.key, 'flow', site('f1'))
      // checked as a preview, then made live: the version visitors had
      const checked = (await deploySite(s, u.key, 'flow', site('f2'), { preview: true })).res.json.deploy.id
      assert.equal((await s.post(`/api/folders/flow/deploys/${checked}/promote`, { key: u.key })).status, 200)
      // a preview nobody promoted, then the next live deploy
      const unseen = (await deploySite(s, u.key, 'flow', site('draft'), { preview: true })).res.json.deploy.id
      await deploySite(s, u.key, 'flow', site('f3'))
      const back = await s.post('/api/folders/flow/rollback', { key: u.key })
      assert.equal(back.status, 200, back.text)
      assert.equal(back.json.live_deploy_id, checked)
      assert.equal((await page('flow')).text, site('f2')['index.html'])
      assert.notEqual(back.json.live_deploy_id, unseen)
      // the list tells them apart: the promoted preview has the time it went live, the other none
      const listed = new Map(((await list('flow')).deploys as Array<{ id: string; promoted_at: string | null }>).map((d) => [d.id, d.promoted_at]))
      assert.match(String(listed.get(checked)), /^\d{4}-\d\d-\d\dT/)
      assert.equal(listed.get(unseen), null)
      assert.ok([...listed].every(([id, at]) => id === checked || at === null))
      // and once more: the deploy before it
      await s.post('/api/folders/flow/rollback', { key: u.key })
      assert.equal((await page('flow')).text, site('f1')['index.html'])
    })

    it('a plain rollback racing a deploy or a promote goes back from the deploy live when it runs', async () => {
      const ids: string[] = []
      for (const v of ['g1', 'g2', 'g3']) ids.push((await deploySite(s, u.key, 'gated', site(v))).res.json.deploy.id)
      // the rollback stops once it has read the live deploy (at the blocklist's early check);
      // another request makes a deploy live meanwhile
      const blobs = s.deps.blobs
      const admit = blobs.admit!.bind(blobs)
      const race = async (other: () => Promise<unknown>): Promise<Res> => {
        let reached!: () => void
        const atAdmit = new Promise<void>((resolve) => (reached = resolve))
        let release!: () => void
        const gate = new Promise<void>((resolve) => (release = resolve))
        blobs.admit = async (digests) => {
          blobs.admit = admit
          reached()
          await gate
          return admit(digests)
        }
        try {
          const back = s.post('/api/folders/gated/rollback', { key: u.key })
          await atAdmit
          await other()
          release()
          return await back
        } finally {
          blobs.admit = admit
        }
      }
      // a deploy went live first: the rollback takes it back, to the one that was live before it
      const g4 = await race(() => deploySite(s, u.key, 'gated', site('g4')))
      assert.equal(g4.status, 200, g4.text)
      assert.equal(g4.json.live_deploy_id, ids[2])
      assert.equal((await list('gated')).live_deploy_id, ids[2])
      assert.equal((await page('gated')).text, site('g3')['index.html'])
      // the first deploy was promoted first: nothing older went live before it (409 / 1334)
      const first = await race(() => s.post(`/api/folders/gated/deploys/${ids[0]}/promote`, { key: u.key }))
      expectError(first, 409, 1334)
      assert.equal((await list('gated')).live_deploy_id, ids[0])
      assert.equal((await page('gated')).text, site('g1')['index.html'])
    })

    it('bytes on the blocklist are refused however a deploy, its check, a publish or a promote names them (451 / 1701)', async () => {
      const k = await s.user()
      const bad = HTML('taken down', '<p>phish</p>')
      const good = HTML('fine')
      const at = (project: string) => s.get(`/${k.username}/${project}/`)
      // before the takedown: the bytes live in a published project, an unpublished one and a kept preview
      assert.equal((await deploySite(s, k.key, 'evil', { 'index.html': bad })).res.status, 201)
      assert.equal((await batchUpload(s, { key: k.key }, 'stash', [{ filename: 'index.html', data: bad }])).status, 200)
      assert.equal((await deploySite(s, k.key, 'prev', { 'index.html': good })).res.status, 201)
      assert.equal((await deploySite(s, k.key, 'prev', { 'index.html': bad }, { preview: true })).res.status, 201)
      const [preview, live] = (await s.get('/api/folders/prev/deploys', { key: k.key })).json.deploys
      // as a takedown leaves it: the digest on the blocklist
      await s.deps.db.k
        .insertInto('blocked_digests')
        .values({ digest: sha(bad), report_id: 'r-test', created_at: Date.now(), created_by: 'test' })
        .execute()
      try {
        const manifest = JSON.parse(String(manifestOf({ 'index.html': bad, 'ok.txt': 'ok' }).data))
        expectError(await s.post('/api/folders/again/deploys/missing', { key: k.key, json: manifest }), 451, 1701)
        // the manifest names the digest without the bytes (the user holds them in two projects)
        const onlyNamed = await postArchive(s, k.key, 'again', await tarOf([manifestOf({ 'index.html': bad, 'ok.txt': 'ok' }), { name: 'ok.txt', data: 'ok' }]))
        expectError(onlyNamed, 451, 1701)
        // the bytes carried, and a project whose own files hold them unchanged, preview or not
        expectError(await postArchive(s, k.key, 'again', await tarOf([manifestOf({ 'index.html': bad }), { name: 'index.html', data: bad }])), 451, 1701)
        expectError((await deploySite(s, k.key, 'stash', { 'index.html': bad, 'new.txt': 'new' })).res, 451, 1701)
        expectError((await deploySite(s, k.key, 'stash', { 'index.html': bad }, { preview: true })).res, 451, 1701)
        assert.equal((await at('again')).status, 404)
        assert.equal(await s.deps.db.k.selectFrom('folders').select('id').where('name', '=', 'again').executeTakeFirst(), undefined)
        // publishing the project that still holds them, and making the preview live
        expectError(await s.post('/api/folders/stash/publish', { key: k.key }), 451, 1701)
        assert.equal((await at('stash')).status, 404)
        assert.equal((await s.get('/api/folders/stash/deploys', { key: k.key })).json.deploys.length, 0)
        expectError(await s.post(`/api/folders/prev/deploys/${preview.id}/promote`, { key: k.key }), 451, 1701)
        expectError(await s.post('/api/folders/prev/rollback', { key: k.key, json: { deploy_id: preview.id } }), 451, 1701)
        assert.equal((await at('prev')).text, good)
        assert.equal((await s.get('/api/folders/prev/deploys', { key: k.key })).json.live_deploy_id, live.id)
        // other bytes still deploy
        assert.equal((await deploySite(s, k.key, 'again', { 'index.html': good })).res.status, 201)
      } finally {
        await s.deps.db.k.deleteFrom('blocked_digests').where('report_id', '=', 'r-test').execute()
      }
      // once lifted, the same requests go through
      assert.equal((await s.post('/api/folders/stash/publish', { key: k.key })).status, 200)
      assert.equal((await at('stash')).text, bad)
      assert.equal((await s.post(`/api/folders/prev/deploys/${preview.id}/promote`, { key: k.key })).status, 200)
    })

    it('deletes a project whole (DELETE /api/folders/{project}): live site, kept deploys and previews go offline at once', async () => {
      const k = await s.user()
      const other = await s.user()
      await deploySite(s, k.key, 'gone', site('v1'))
      const { res } = await deploySite(s, k.key, 'gone', site('v2'), { preview: true })
      const preview = `/${k.username}/gone@${res.json.deploy.id}/`
      await deploySite(s, k.key, 'kept', site('k1'))
      assert.equal((await s.get(`/${k.username}/gone/`)).status, 200)
      assert.equal((await s.get(preview)).status, 200)
      // refusals change nothing: no key, another user's key, a project that does not exist
      expectError(await s.request('DELETE', '/api/folders/gone'), 401, 1001)
      expectError(await s.request('DELETE', '/api/folders/gone', { key: other.key }), 403, 1312)
      expectError(await s.request('DELETE', `/api/folders/${k.username}%2Fnever`, { key: k.key }), 403, 1312)
      // no two-segment form: it would take /api/folders/{project}/publish and every such path
      expectError(await s.request('DELETE', `/api/folders/${k.username}/gone`, { key: k.key }), 404, 1404)
      const cookie = await s.login(k.username, k.password)
      const reader = await s.post('/svc_api/api-keys', {
        cookie,
        headers: { 'x-csrf-token': await s.csrfToken(cookie) },
        json: { name: 'reader', read_only: true },
      })
      assert.equal(reader.status, 200, reader.text)
      expectError(await s.request('DELETE', '/api/folders/gone', { key: reader.json.data.key }), 403, 1440)
      assert.equal((await s.get(`/${k.username}/gone/`)).status, 200)
      const del = await s.request('DELETE', `/api/folders/${k.username}%2Fgone`, { key: k.key })
      assert.equal(del.status, 200, del.text)
      assert.equal(del.json.success, true)
      assert.equal(del.json.deleted_files, Object.keys(site('v1')).length)
      for (const url of [`/${k.username}/gone/`, `/${k.username}/gone/s.css`, preview]) assert.equal((await s.get(url)).status, 404, url)
      const names = (await s.get('/api/folders', { key: k.key })).json.folders.map((f: { name: string }) => f.name)
      assert.deepEqual(names, ['kept'])
      assert.equal((await s.get(`/${k.username}/kept/`)).status, 200)
      expectError(await s.get('/api/folders/gone/deploys', { key: k.key }), 403, 1312)
      // the name is free again: a new deploy starts a new history
      assert.equal((await deploySite(s, k.key, 'gone', site('v3'))).res.status, 201)
      assert.equal((await s.get('/api/folders/gone/deploys', { key: k.key })).json.deploys.length, 1)
    })

    it('previews: a URL of their own, noindex, not live until promoted', async () => {
      await deploySite(s, u.key, 'pv', site('live'))
      const { res } = await deploySite(s, u.key, 'pv', site('preview'), { preview: true })
      assert.equal(res.status, 201, res.text)
      assert.equal(res.json.deploy.is_live, false)
      const id = res.json.deploy.id
      assert.ok(res.json.preview_url.endsWith(`/${u.username}/pv@${id}/`))
      assert.equal((await page('pv')).text, site('live')['index.html'])
      const p = await s.get(`/${u.username}/pv@${id}/`)
      assert.equal(p.text, site('preview')['index.html'])
      assert.equal(p.header('x-robots-tag'), 'noindex')
      assert.equal((await s.get(`/${u.username}/pv@${id}/s.css`)).header('x-robots-tag'), 'noindex')
      assert.equal((await page('pv')).header('x-robots-tag'), undefined)
      // on the user's own origin too
      const onSite = await request(`${s.httpUrl}/pv@${id}/docs/a.html`, { headers: { host: `${u.username}.localhost` } })
      assert.equal(onSite.statusCode, 200)
      assert.equal(onSite.headers['x-robots-tag'], 'noindex')
      assert.equal(await onSite.body.text(), site('preview')['docs/a.html'])
      // another user's project under the same id is not found
      const other = await s.user()
      assert.equal((await s.get(`/${other.username}/pv@${id}/`)).status, 404)
      const promote = await s.post(`/api/folders/pv/deploys/${id}/promote`, { key: u.key })
      assert.equal(promote.status, 200)
      assert.equal((await page('pv')).text, site('preview')['index.html'])
      // a preview of a project that was never published works, and the project stays unpublished
      const draft = await deploySite(s, u.key, 'draft', site('d'), { preview: true })
      assert.equal((await s.get(`/${u.username}/draft@${draft.res.json.deploy.id}/`)).status, 200)
      assert.equal((await page('draft')).status, 404)
    })

    it("a preview stays noindex whatever the site's _headers say of X-Robots-Tag", async () => {
      const files = site('robots', { _headers: '/*\n  X-Robots-Tag: index, follow\n' })
      assert.equal((await deploySite(s, u.key, 'robots', files)).res.status, 201)
      assert.equal((await page('robots')).header('x-robots-tag'), 'index, follow')
      const { res } = await deploySite(s, u.key, 'robots', files, { preview: true })
      assert.equal(res.status, 201, res.text)
      const id = res.json.deploy.id
      assert.equal((await s.get(`/${u.username}/robots@${id}/`)).header('x-robots-tag'), 'noindex')
      const onSite = await request(`${s.httpUrl}/robots@${id}/s.css`, { headers: { host: `${u.username}.localhost` } })
      assert.equal(onSite.headers['x-robots-tag'], 'noindex')
      await onSite.body.text()
    })

    it("the spec's publish and writes to a live project each make a deploy (source api)", async () => {
      await batchUpload(s, { key: u.key }, 'spec', [{ filename: 'index.html', data: HTML('s1') }])
      assert.equal((await list('spec')).deploys.length, 0)
      assert.equal((await s.post('/api/folders/spec/publish', { key: u.key })).json.already_published, false)
      assert.equal((await page('spec')).text, HTML('s1'))
      await batchUpload(s, { key: u.key }, 'spec', [{ filename: 'index.html', data: HTML('s2') }], true)
      assert.equal((await page('spec')).text, HTML('s2'))
      const l = await list('spec')
      assert.equal(l.deploys.length, 2)
      assert.ok(l.deploys.every((d: { source: string }) => d.source === 'api'))
      assert.equal((await s.post('/api/folders/spec/rollback', { key: u.key })).status, 200)
      assert.equal((await page('spec')).text, HTML('s1'))
      assert.equal((await s.post('/api/folders/spec/publish', { key: u.key })).json.already_published, true)
      assert.equal((await list('spec')).deploys.length, 3)
    })

    it("a publish racing a rollback or a delete makes one version's deploy (its files with their own rules), or none", async () => {
      const rules = '/old /index.html 301\n'
      const v1 = (await deploySite(s, u.key, 'race', { 'index.html': HTML('race v1') })).res.json.deploy.id
      assert.equal((await deploySite(s, u.key, 'race', { 'index.html': HTML('race v2'), _redirects: rules })).res.status, 201)
      await batchUpload(s, { key: u.key }, 'gone', [
        { filename: 'index.html', data: HTML('gone') },
        { filename: '_redirects', data: rules },
      ])
      // the publish stops while it reads the project's _redirects; the other request goes meanwhile
      const blobs = s.deps.blobs
      const read = blobs.read.bind(blobs)
      const race = async (project: string, other: () => Promise<{ status: number; text: string }>) => {
        let reached!: () => void
        const atRules = new Promise<void>((resolve) => (reached = resolve))
        let release!: () => void
        const gate = new Promise<void>((resolve) => (release = resolve))
        blobs.read = async (digest, ...rest) => {
          if (digest === sha(rules)) {
            reached()
            await gate
          }
          return read(digest, ...rest)
        }
        try {
          const publish = s.post(`/api/folders/${project}/publish`, { key: u.key })
          await atRules
          const second = other()
          await new Promise((resolve) => setTimeout(resolve, 300))
          release()
          return [await publish, await second]
        } finally {
          blobs.read = read
        }
      }
      const [pub, back] = await race('race', () => s.post('/api/folders/race/rollback', { key: u.key, json: { deploy_id: v1 } }))
      assert.equal(pub.status, 200, pub.text)
      assert.equal(back.status, 200, back.text)
      // every kept deploy has rules exactly when its files hold _redirects
      const folder = await s.deps.db.k.selectFrom('folders').select('id').where('user_id', '=', u.id).where('name', '=', 'race').executeTakeFirstOrThrow()
      for (const d of await s.deps.db.k.selectFrom('deploys').select(['id', 'site_rules']).where('folder_id', '=', folder.id).execute()) {
        const paths = (await s.deps.db.k.selectFrom('deploy_files').select('path').where('deploy_id', '=', d.id).execute()).map((r) => r.path)
        assert.equal(d.site_rules !== null, paths.includes('_redirects'), `deploy ${d.id}: ${paths.join(', ')}`)
      }
      assert.equal((await page('race', 'old')).status, 404)
      // a project deleted while it is being published: the publish refuses or comes first, never 500
      // (as MCP's delete_site does it: the service, which has no route of its own)
      const owner = (await s.deps.users.byId(u.id))!
      const remove = () => s.deps.services.get(createFoldersService).remove(owner, { name: 'gone', display: 'gone' })
      const [pub2] = await race('gone', () => remove().then(() => ({ status: 200, text: '' })))
      assert.ok(pub2.status === 200 || pub2.status === 403, `${pub2.status} ${pub2.text}`)
      assert.equal((await page('gone')).status, 404)
    })

    it('keeps the last DEPLOYS_KEEP deploys (and the live one); the sweeper frees what only old ones used', async () => {
      const ids: string[] = []
      for (let i = 0; i < 6; i++) ids.push((await deploySite(s, u.key, 'keep', { 'index.html': HTML(`keep unique ${i} 9d1c`) })).res.json.deploy.id)
      let l = await list('keep')
      assert.deepEqual(
        l.deploys.map((d: { id: string }) => d.id),
        ids.slice(2).reverse(),
      )
      // roll back to the oldest kept, deploy more: the live one stays although it is old
      await s.post('/api/folders/keep/rollback', { key: u.key, json: { deploy_id: ids[2] } })
      for (let i = 6; i < 10; i++) await deploySite(s, u.key, 'keep', { 'index.html': HTML(`keep unique ${i} 9d1c`) }, { preview: true })
      l = await list('keep')
      assert.equal(l.deploys.length, 5)
      assert.ok(l.deploys.some((d: { id: string; is_live: boolean }) => d.id === ids[2] && d.is_live))
      await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
      const blobs = await blobSet(s)
      assert.ok(!blobs.has(sha(HTML('keep unique 0 9d1c'))), 'a pruned deploy only')
      assert.ok(blobs.has(sha(HTML('keep unique 2 9d1c'))), 'the live deploy')
      assert.ok(blobs.has(sha(HTML('keep unique 9 9d1c'))), 'a kept preview')
      assert.equal((await page('keep')).text, HTML('keep unique 2 9d1c'))
    })

    it("names each page's form whose file input a browser would send as its name alone, in warnings; the deploy goes live", async () => {
      const k = await s.user()
      const form = (attrs: string, inner = '<input type="file" name="cv">') =>
        HTML('apply', `<form ${attrs}><input name="who">${inner}<button>Send</button></form>`)
      const files: Site = {
        'index.html': form('id="apply" method="post" action="https://formspree.io/f/abc"'),
        'jobs/get.html': form('name="search" action="/find"'),
        'jobs/svc.html': form('method="post" action="https://example.com/api/forms/submit/jobs"'),
        'jobs/netlify.html': form(
          'name="contact" method="POST" data-netlify="true"',
          '<input type="hidden" name="form-name" value="contact"><input type=file>',
        ),
        // sent whole: enctype on the form, or formenctype on its button; no file input; in a comment
        'ok/enctype.html': form('method="post" enctype="multipart/form-data" action="https://formspree.io/f/abc"'),
        'ok/button.html': form('method="post"', '<input type="file" name="cv"><button formenctype="multipart/form-data">Up</button>'),
        'ok/text.html': form('method="post"', '<input type="text" name="file">'),
        'ok/comment.html': HTML('c', '<!-- <form method="post"><input type="file"></form> -->'),
      }
      const { res } = await deploySite(s, k.key, 'jobs', files)
      assert.equal(res.status, 201, res.text)
      assert.deepEqual(res.json.warnings, [
        {
          path: 'index.html',
          message:
            'index.html: the form id="apply" has a file input (name="cv") but no enctype="multipart/form-data": a browser sends only the file\'s name, not the file. Add enctype="multipart/form-data" to the <form>',
        },
        {
          path: 'jobs/get.html',
          message:
            'jobs/get.html: the form name="search" has a file input (name="cv") but is sent by GET, which carries only the file\'s name, not the file. Use method="post" and enctype="multipart/form-data"',
        },
        {
          path: 'jobs/netlify.html',
          message:
            'jobs/netlify.html: the form name="contact" has a file input (a file input) but no enctype="multipart/form-data": a browser sends only the file\'s name, not the file. Add enctype="multipart/form-data" to the <form>',
        },
        {
          path: 'jobs/svc.html',
          message:
            'jobs/svc.html: the form action="https://example.com/api/forms/submit/jobs" has a file input (name="cv") but no enctype="multipart/form-data": a browser sends only the file\'s name, not the file. Add enctype="multipart/form-data" to the <form>',
        },
      ])
      assert.equal((await s.get(`/${k.username}/jobs/`)).text, files['index.html'])
      // in the caller's language
      const zh = await s.post('/api/folders/jobs-zh/deploys', {
        key: k.key,
        body: await tarOf([manifestOf({ 'index.html': files['index.html'] }), { name: 'index.html', data: files['index.html'] }]),
        headers: { 'content-type': 'application/x-tar', 'accept-language': 'zh' },
      })
      assert.equal(zh.status, 201, zh.text)
      assert.match(zh.json.warnings[0].message, /^index\.html：表单 id="apply" 有文件输入框（name="cv"），但没有 enctype="multipart\/form-data"/)
      // a page deployed again unchanged is not read again, and a site without such a form has none
      const again = await deploySite(s, k.key, 'jobs', { ...files, 'new.html': HTML('new') })
      assert.deepEqual(again.res.json.warnings, [])
    })

    it('a deploy without a root index.html is refused at the check and at the manifest, before any file is stored', async () => {
      // a build folder sent from one level up: its index.html is under site/
      const nested = { 'site/index.html': HTML('nested 5e0d'), 'site/app.js': 'console.log("nested 5e0d")' }
      const manifest = manifestOf(nested)
      const check = await s.post('/api/folders/nested/deploys/missing', {
        key: u.key,
        json: JSON.parse(String(manifest.data)),
        headers: { 'accept-language': 'en' },
      })
      expectError(check, 400, 1313)
      const before = await blobSet(s)
      const entries = [manifest, ...Object.entries(nested).map(([name, data]) => ({ name, data }))]
      for (const preview of [false, true]) {
        const body = await tarOf([manifestOf(nested, preview ? { preview: true } : {}), ...entries.slice(1)])
        expectError(await postArchive(s, u.key, 'nested', body), 400, 1313)
      }
      // refused before the entries were read: none of their bytes reached the blob store
      assert.deepEqual([...(await blobSet(s))].sort(), [...before].sort())
      for (const data of Object.values(nested)) assert.ok(!before.has(sha(data)))
      assert.equal((await s.get('/api/folders/nested/deploys', { key: u.key })).status, 403, 'no project made')
    })

    it('a message over 500 characters is refused at the manifest, before any file entry is read', async () => {
      const files = { 'index.html': HTML('long message 7c1f'), 'app.js': 'console.log("long message 7c1f")' }
      const before = await blobSet(s)
      const body = await tarOf([manifestOf(files, { message: 'm'.repeat(501) }), ...Object.entries(files).map(([name, data]) => ({ name, data }))])
      const r = await postArchive(s, u.key, 'longmsg', body)
      expectError(r, 413, 1328)
      assert.deepEqual([...(await blobSet(s))].sort(), [...before].sort())
      for (const data of Object.values(files)) assert.ok(!before.has(sha(data)))
      // the answer comes while the rest of the archive is still on its way: the manifest, then a stream that never ends
      const alone = manifestOf(files, { message: 'm'.repeat(501) })
      const manifest = (await tarOf([alone])).subarray(0, 512 + Math.ceil(Buffer.byteLength(String(alone.data)) / 512) * 512)
      const endless = new Readable({ read() {} })
      endless.push(manifest)
      const insecure = new Agent({ connect: { rejectUnauthorized: false } })
      const res = await request(`${s.url}/api/folders/longmsg/deploys`, {
        dispatcher: insecure,
        method: 'POST',
        headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/x-tar' },
        body: endless,
        signal: AbortSignal.timeout(10_000),
      })
      const answer = await res.body.text()
      assert.equal(res.statusCode, 413, answer)
      assert.equal(JSON.parse(answer).error_code, 1328)
      endless.destroy()
      await insecure.close()
    })

    describe('refuses each bad archive with its own error and changes nothing', () => {
      const good = site('g1')
      const next = { ...good, 'index.html': HTML('never live'), 'new.txt': 'never stored 4b1e' }
      const m = manifestOf(next)
      // what must not change: the live site, the deploys, the files, and (after a sweep) the blobs
      let deploysBefore: unknown
      let filesBefore: unknown
      let blobsBefore: Set<string>
      before(async () => {
        await deploySite(s, u.key, 'bad', good)
        deploysBefore = await list('bad')
        filesBefore = (await s.get('/api/folders/bad/files', { key: u.key })).json.files
        await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
        blobsBefore = await blobSet(s)
      })

      const cases: Array<[string, TarEntry[], number, number, RegExp]> = [
        ['dot-dot', [m, { name: 'new.txt', data: next['new.txt'] }, { name: '../index.html', data: 'x' }], 400, 1320, /"\.\.\/index\.html"/],
        ['nested dot-dot', [m, { name: 'docs/../../x', data: 'x' }], 400, 1320, /docs\/\.\.\/\.\.\/x/],
        ['absolute', [m, { name: '/etc/passwd', data: 'x' }], 400, 1321, /"\/etc\/passwd"/],
        // a folder entry "./" is skipped, but a file needs a name
        ['file named "."', [m, { name: '.', data: 'x' }], 400, 1332, /"\."/],
        ['file with an empty name', [m, { name: '', data: 'x' }], 400, 1332, /""/],
        ['folder entry with dot-dot', [m, { name: './../', type: 'directory' }], 400, 1320, /"\.\/\.\.\/"/],
        ['symlink', [m, { name: 'index.html', type: 'symlink', linkname: '/etc/passwd' }], 400, 1322, /"index\.html"/],
        ['hard link', [m, { name: 'new.txt', data: next['new.txt'] }, { name: 'index.html', type: 'link', linkname: 'new.txt' }], 400, 1323, /"index\.html"/],
        ['char device', [m, { name: 'dev', type: 'character-device' }], 400, 1324, /"dev".*character-device/],
        ['fifo', [m, { name: 'pipe', type: 'fifo' }], 400, 1324, /"pipe"/],
        ['hash mismatch', [m, { name: 'new.txt', data: next['new.txt'] }, { name: 'index.html', data: HTML('other bytes') }], 400, 1325, /"index\.html"/],
        [
          'big hash mismatch',
          [manifestOf({ ...next, 'big.bin': Buffer.alloc(2 * 1024 * 1024, 1) }), { name: 'big.bin', data: Buffer.alloc(2 * 1024 * 1024, 2) }],
          400,
          1325,
          /"big\.bin"/,
        ],
        ['not in manifest', [m, { name: 'extra.txt', data: 'x' }], 400, 1329, /"extra\.txt".*not in the manifest/],
        ['missing file', [m, { name: 'new.txt', data: next['new.txt'] }], 400, 1330, /"index\.html"/],
        ['no manifest first', [{ name: 'index.html', data: 'x' }, m], 400, 1327, /svc-deploy\.json/],
        ['bad manifest json', [{ name: 'svc-deploy.json', data: '{"files":' }], 400, 1327, /not valid JSON/],
        ['bad manifest path', [{ name: 'svc-deploy.json', data: JSON.stringify({ files: { '../x': sha('x') } }) }], 400, 1327, /"\.\.\/x"/],
        ['bad manifest digest', [{ name: 'svc-deploy.json', data: JSON.stringify({ files: { 'index.html': 'abc' } }) }], 400, 1327, /sha256/],
        [
          'a path both a file and a folder',
          [{ name: 'svc-deploy.json', data: JSON.stringify({ files: { 'index.html': sha('i'), 'docs/index.html': sha('d'), docs: sha('f') } }) }],
          400,
          1327,
          /docs is a folder of this project, so it cannot also be a file/,
        ],
        [
          'too many files',
          [{ name: 'svc-deploy.json', data: JSON.stringify({ files: Object.fromEntries(Array.from({ length: 50_001 }, (_, i) => [`f${i}`, sha('x')])) }) }],
          413,
          1328,
          /50001 files/,
        ],
        ['message too long', [manifestOf(next, { message: 'm'.repeat(501) })], 413, 1328, /message/],
        // Netlify's name for a deploy that does not go live: ignored, it made this one live
        [
          'a field the service does not know',
          [manifestOf(next, { draft: true }), { name: 'new.txt', data: next['new.txt'] }, { name: 'index.html', data: next['index.html'] }],
          400,
          1327,
          /unknown field "draft" \(send files, message, preview, source\)/,
        ],
        [
          'bad rule file',
          [
            manifestOf({ ...next, _redirects: '/a /b 418\n' }),
            { name: '_redirects', data: '/a /b 418\n' },
            { name: 'index.html', data: next['index.html'] },
            { name: 'new.txt', data: next['new.txt'] },
          ],
          400,
          1314,
          /_redirects, line 1/,
        ],
      ]
      for (const [label, entries, status, code, detail] of cases) {
        it(`${label}: ${status} / ${code}`, async () => {
          const r = await postArchive(s, u.key, 'bad', await tarOf(entries), false)
          expectError(r, status, code)
          assert.match(r.json.message, detail)
        })
      }

      // [label, archive, status, code, Chinese message (no Accept-Language), English message]
      const spoken: Array<[string, () => Promise<Buffer>, number, number, string, string]> = [
        [
          'cut short',
          async () => {
            const w = await tarOf([m, { name: 'new.txt', data: next['new.txt'] }, { name: 'index.html', data: next['index.html'] }])
            return w.subarray(0, w.length - 1100)
          },
          400,
          1326,
          '归档不完整或无法读取：数据意外结束',
          'The archive is truncated or unreadable: unexpected end of data (Unexpected end of data)',
        ],
        [
          'manifest not first',
          () => tarOf([{ name: 'index.html', data: 'x' }, m]),
          400,
          1327,
          '部署清单无效：归档的第一个条目须为文件 svc-deploy.json',
          "Invalid deploy manifest: the archive's first entry must be the file svc-deploy.json",
        ],
        [
          'bad digest',
          () => tarOf([{ name: 'svc-deploy.json', data: JSON.stringify({ files: { 'index.html': 'abc' } }) }]),
          400,
          1327,
          '部署清单无效："index.html"：值须为十六进制的 SHA-256 摘要',
          'Invalid deploy manifest: "index.html": value must be a sha256 hex digest',
        ],
        [
          'bad source',
          () => tarOf([manifestOf(next, { source: 'web' })]),
          400,
          1327,
          '部署清单无效：source 须为 "cli" 或 "api"',
          'Invalid deploy manifest: source must be "cli" or "api"',
        ],
        [
          'message too long',
          () => tarOf([manifestOf(next, { message: 'm'.repeat(501) })]),
          413,
          1328,
          '部署清单超出限制：message 超过 500 个字符',
          'The deploy manifest is over the limits: message longer than 500 characters',
        ],
        [
          'not in the manifest',
          () => tarOf([m, { name: 'extra.txt', data: 'x' }]),
          400,
          1329,
          '归档条目 "extra.txt"：不在清单中',
          'Archive entry "extra.txt": not in the manifest',
        ],
        [
          'bad rule file',
          () =>
            tarOf([
              manifestOf({ ...next, _redirects: '/a /b 418\n' }),
              { name: '_redirects', data: '/a /b 418\n' },
              { name: 'index.html', data: next['index.html'] },
              { name: 'new.txt', data: next['new.txt'] },
            ]),
          400,
          1314,
          '站点规则无效：_redirects 第 1 行：状态码 "418" 须为 200、301、302、303、307、308、404、410 之一（后面可加 !）',
          'Invalid site rules: _redirects, line 1: status "418" must be one of 200, 301, 302, 303, 307, 308, 404, 410 (optionally followed by !)',
        ],
      ]
      for (const [label, body, status, code, zh, en] of spoken) {
        it(`${label}: the message is wholly Chinese by default, English on request`, async () => {
          const send = async (headers: Record<string, string>) =>
            s.post('/api/folders/bad/deploys', { key: u.key, body: await body(), headers: { 'content-type': 'application/x-tar', ...headers } })
          const r = await send({})
          expectError(r, status, code)
          assert.equal(r.json.message, zh)
          if (label === 'cut short') assert.doesNotMatch(r.json.message, /[A-Za-z]{4,}/)
          const e = await send({ 'accept-language': 'en' })
          expectError(e, status, code)
          assert.equal(e.json.message, en)
        })
      }

      it('a rollback naming a deploy_id that is no string: 400 / 1106 in the language asked', async () => {
        const send = (headers: Record<string, string>) => s.post('/api/folders/bad/rollback', { key: u.key, json: { deploy_id: 5 }, headers })
        const r = await send({})
        expectError(r, 400, 1106)
        assert.equal(r.json.message, '参数错误：deploy_id 须为字符串')
        const e = await send({ 'accept-language': 'en' })
        expectError(e, 400, 1106)
        assert.equal(e.json.message, 'Invalid parameter: deploy_id must be a string')
      })

      // a stream cut in the middle of a file (plain and gzip), or no tar at all
      const whole = () => tarOf([m, { name: 'new.txt', data: next['new.txt'] }, { name: 'index.html', data: next['index.html'] }])
      const unreadable: Array<[string, () => Promise<Buffer>, boolean]> = [
        [
          'truncated tar',
          async () => {
            const w = await whole()
            return w.subarray(0, w.length - 1100)
          },
          false,
        ],
        ['truncated gzip', async () => (await tarOf([m, { name: 'index.html', data: next['index.html'] }], true)).subarray(0, 60), true],
        ['not a tar', async () => Buffer.from('hello, this is not a tar archive at all'.repeat(20)), false],
        ['empty', async () => Buffer.alloc(0), false],
      ]
      for (const [label, body, gz] of unreadable) {
        it(`${label}: 400 / 1326`, async () => expectError(await postArchive(s, u.key, 'bad', await body(), gz), 400, 1326))
      }

      // an entry over 1 MiB streams into the blob store: an archive cut inside it, or a client
      // gone while it is sent, must end the store's write (once it waited forever for bytes that
      // never came: no answer, a temp file and a descriptor left behind)
      const big = Buffer.alloc(1536 * 1024, 'big entry 7c2a ')
      const withBig = () => tarOf([manifestOf({ ...next, 'big.bin': big }), { name: 'big.bin', data: big }])
      const tmpFiles = () => fs.readdirSync(path.join(s.dataDir, 'blobs', 'tmp'))
      for (const gz of [false, true]) {
        it(`truncated inside an entry over 1 MiB${gz ? ' (gzip)' : ''}: 400 / 1326 at once, no temp file left`, async () => {
          const w = await withBig()
          // the big entry is last: cut half of its bytes (and the tar's end blocks)
          const cut = w.subarray(0, w.length - 1024 - big.length / 2)
          const r = await postArchive(s, u.key, 'bad', gz ? gzipSync(cut) : cut, gz, AbortSignal.timeout(5000))
          expectError(r, 400, 1326)
          assert.match(r.json.message, /unexpected end/i)
          assert.deepEqual(tmpFiles(), [])
        })
      }

      it('a client gone inside an entry over 1 MiB leaves no temp file', async () => {
        const w = await withBig()
        const sock = tls.connect({ host: '127.0.0.1', port: Number(new URL(s.url).port), rejectUnauthorized: false })
        sock.on('error', () => {})
        await once(sock, 'secureConnect')
        const head = `POST /api/folders/bad/deploys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${u.key}\r\nContent-Type: application/x-tar\r\nContent-Length: ${w.length}\r\n\r\n`
        sock.write(head)
        sock.write(w.subarray(0, w.length - 1024 - big.length / 2))
        // the store has begun the big entry (its temp file exists): then the client goes
        await until(() => tmpFiles().length > 0, 5000, 'the temp file of the big entry')
        sock.destroy()
        await until(() => tmpFiles().length === 0, 5000, 'the temp file to be removed')
      })

      it('a body that is not a tar type: 4xx', async () => {
        const wrongType = await s.post('/api/folders/bad/deploys', { key: u.key, body: await whole(), headers: { 'content-type': 'text/plain' } })
        expectClientError(wrongType)
        // any type it does not take answers the deploy's own error, which names the types it does
        for (const type of ['text/plain', 'application/octet-stream']) {
          const r = await s.post('/api/folders/bad/deploys', { key: u.key, body: await whole(), headers: { 'content-type': type, 'accept-language': 'en' } })
          expectError(r, 415, 1335)
          assert.match(r.json.message, /a tar, a gzipped tar or a zip/)
        }
        // a tar sent as a zip is read as a zip, and is none
        const asZip = await s.post('/api/folders/bad/deploys', {
          key: u.key,
          body: await whole(),
          headers: { 'content-type': 'application/zip', 'accept-language': 'en' },
        })
        expectError(asZip, 400, 1326)
      })

      it('after them all, nothing changed: the live site, the deploys, the files, the blobs', async () => {
        assert.equal((await page('bad')).text, good['index.html'])
        assert.deepEqual(await list('bad'), deploysBefore)
        assert.deepEqual((await s.get('/api/folders/bad/files', { key: u.key })).json.files, filesBefore)
        await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
        assert.deepEqual([...(await blobSet(s))].sort(), [...blobsBefore].sort())
      })
    })

    it('a switch is atomic for visitors: every answer is one whole version, and none older after it', async () => {
      const a = site('AAAA')
      const b = site('BBBB')
      await deploySite(s, u.key, 'atom', a)
      await deploySite(s, u.key, 'atom', b)
      const [vb, va] = (await list('atom')).deploys.map((d: { id: string }) => d.id)
      const seen = { A: 0, B: 0 }
      for (let round = 0; round < 6; round++) {
        const target = round % 2 === 0 ? { id: va, v: 'AAAA', old: 'BBBB' } : { id: vb, v: 'BBBB', old: 'AAAA' }
        let switched = false
        const loop = async () => {
          for (let i = 0; i < 25; i++) {
            const startedAfter = switched
            const [p, c] = await Promise.all([page('atom'), page('atom', 's.css')])
            for (const body of [p.text, c.text]) {
              const v = body.includes('AAAA') ? 'AAAA' : body.includes('BBBB') ? 'BBBB' : null
              assert.ok(v, `an answer of neither version: ${body.slice(0, 80)}`)
              seen[v === 'AAAA' ? 'A' : 'B']++
              if (startedAfter) assert.equal(v, target.v, 'an old answer after the switch')
            }
          }
        }
        const loops = Promise.all([loop(), loop(), loop()])
        const r = await s.post(`/api/folders/atom/deploys/${target.id}/promote`, { key: u.key })
        assert.equal(r.status, 200)
        switched = true
        await loops
        const after = await Promise.all([page('atom'), page('atom', 's.css'), page('atom', 'docs/a.html')])
        for (const x of after) assert.ok(x.text.includes(target.v) && !x.text.includes(target.old))
      }
      assert.ok(seen.A > 0 && seen.B > 0)
    })
  })
}

// Last-Modified at a URL never moves back: a rollback or promote serves files older than the
// answers before it, and a client revalidating by date alone must not get 304 for other bytes.
for (const engine of ENGINES) {
  describe(`archive deploys: Last-Modified after a rollback or promote [${engine}]`, () => {
    const clock = new FakeClock()
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      s = await startServer({ engine, clock, env: { RATE_LIMITS: HIGH_LIMITS } })
      u = await s.user()
    })
    after(() => s.close())

    it('a file rolled back to older bytes answers 200 to If-Modified-Since of the newer ones', async () => {
      const css = (p: string) => s.get(`/${u.username}/lm/${p}`)
      await deploySite(s, u.key, 'lm', site('v1'))
      clock.advance(60_000)
      await deploySite(s, u.key, 'lm', site('v2'))
      const newer = await css('s.css')
      assert.ok(newer.text.includes('v2'))
      const seen = newer.header('last-modified')!
      assert.equal((await css('s.css')).status, 200)
      assert.equal((await s.get(`/${u.username}/lm/s.css`, { headers: { 'if-modified-since': seen } })).status, 304)
      clock.advance(60_000)
      const back = await s.post('/api/folders/lm/rollback', { key: u.key })
      assert.equal(back.status, 200, back.text)
      const r = await s.get(`/${u.username}/lm/s.css`, { headers: { 'if-modified-since': seen } })
      assert.equal(r.status, 200, 'the bytes changed since that date')
      assert.ok(r.text.includes('v1'))
      assert.ok(Date.parse(r.header('last-modified')!) > Date.parse(seen), 'Last-Modified moved forward')
      // and it holds from then on: the rolled-back bytes validate by their new date
      assert.equal((await s.get(`/${u.username}/lm/s.css`, { headers: { 'if-modified-since': r.header('last-modified')! } })).status, 304)
      // promote (forward again, to the newer deploy): the same rule
      clock.advance(60_000)
      const v2 = (await s.get('/api/folders/lm/deploys', { key: u.key })).json.deploys.find((d: { id: string; is_live: boolean }) => !d.is_live)
      assert.equal((await s.post(`/api/folders/lm/deploys/${v2.id}/promote`, { key: u.key })).status, 200)
      const fwd = await s.get(`/${u.username}/lm/s.css`, { headers: { 'if-modified-since': r.header('last-modified')! } })
      assert.equal(fwd.status, 200)
      assert.ok(fwd.text.includes('v2'))
      // a kept deploy's own URL never changes: its files keep their own dates
      const own = await s.get(`/${u.username}/lm@${v2.id}/s.css`)
      assert.equal(own.header('last-modified'), seen)
    })
  })
}

// A deploy's total (DEPLOY_MAX_BYTES) is checked as the archive streams: a small gzip that
// inflates past it is refused at the entry that crosses it, before the rest reach the disk.
describe('archive deploys: the total is checked as the archive streams', () => {
  let s: TestServer
  before(async () => {
    s = await startServer({ engine: 'sqlite', env: { RATE_LIMITS: HIGH_LIMITS, DEPLOY_MAX_BYTES: String(3 * 1024 * 1024) } })
  })
  after(() => s?.close())

  it('refuses with 413 / 1328 at the entry past the limit; the entries after it are never stored', async () => {
    const u = await s.user()
    // ten distinct 1 MiB files of zeros but one byte: 10 MiB, a few KiB gzipped
    const files: Site = { 'index.html': HTML('big') }
    for (let i = 0; i < 10; i++) {
      const b = Buffer.alloc(1024 * 1024)
      b[0] = i + 1
      files[`f${i}.bin`] = b
    }
    const body = await tarOf([manifestOf(files), ...Object.entries(files).map(([name, data]) => ({ name, data }))], true)
    assert.ok(body.length < 100 * 1024, `${body.length} bytes gzipped`)
    const before = await blobSet(s)
    const r = await postArchive(s, u.key, 'bomb', body, true)
    expectError(r, 413, 1328)
    assert.match(r.json.message, /over 3 MiB \(3145728 bytes\) in all/)
    const stored = [...(await blobSet(s))].filter((d) => !before.has(d))
    assert.ok(stored.length <= 3, `${stored.length} new blobs: stored past the limit`)
    assert.equal((await s.get(`/${u.username}/bomb/`)).status, 404)
  })

  // the tar reader skips empty blocks and a folder entry's data, which count toward no file:
  // zeros there inflated without end from a few KiB of gzip (decision 230)
  for (const [what, extra] of [
    ['a folder entry declaring 32 MiB of data', () => Buffer.concat([rawHeader('assets/', 32 * 1024 * 1024, '5'), Buffer.alloc(32 * 1024 * 1024)])],
    ['32 MiB of empty blocks after the end of the archive', () => Buffer.alloc(32 * 1024 * 1024)],
  ] as const) {
    it(`refuses ${what} with 413 / 1328, whatever the total says`, async () => {
      const u = await s.user()
      const files: Site = { 'index.html': HTML('zeros') }
      const tarred = await tarOf([manifestOf(files), { name: 'index.html', data: files['index.html'] }])
      // the extra bytes go before the end blocks (a folder entry) or after them (zeros)
      const body = what.startsWith('a folder')
        ? gzipSync(Buffer.concat([tarred.subarray(0, tarred.length - 1024), extra(), Buffer.alloc(1024)]))
        : gzipSync(Buffer.concat([tarred, extra()]))
      assert.ok(body.length < 100 * 1024, `${body.length} bytes gzipped`)
      const r = await postArchive(s, u.key, 'zeros', body, true)
      expectError(r, 413, 1328)
      assert.match(r.json.message, /belong to no file/)
      assert.equal((await s.get(`/${u.username}/zeros/`)).status, 404)
    })
  }
})

/** A ustar header as other tar writers make it, `type` its one-character flag ('5': a folder). */
function rawHeader(name: string, size: number, type: string): Buffer {
  const b = Buffer.alloc(512)
  b.write(name, 0)
  b.write('0000755\0', 100)
  b.write('0000000\0', 108)
  b.write('0000000\0', 116)
  b.write(`${size.toString(8).padStart(11, '0')}\0`, 124)
  b.write('00000000000\0', 136)
  b.write(' '.repeat(8), 148)
  b.write(type, 156)
  b.write('ustar\0', 257)
  b.write('00', 263)
  let sum = 0
  for (const x of b) sum += x
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148)
  return b
}

for (const engine of ENGINES) {
  describe(`archive deploys: the promoted_at migration [${engine}]`, () => {
    it('marks the previews live at that moment as promoted, and no other deploy', async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-promoted-'))
      const db = await openDatabase({ databaseUrl: engine === 'postgres' ? `${PG_URL}?schema=t_prom_${crypto.randomBytes(4).toString('hex')}` : null, dataDir })
      try {
        const migrator = new Migrator({
          db: db.k,
          provider: { getMigrations: async () => allMigrations(FEATURE_TABLES) },
          ...(db.schema ? { migrationTableSchema: db.schema } : {}),
        })
        assert.equal((await migrator.migrateTo('0798-kv-retired-version')).error, undefined)
        const k = db.k as Kysely<any>
        const now = Date.now()
        await k.insertInto('users').values({ id: 'u', username: 'u', password_hash: 'x', created_at: now, updated_at: now }).execute()
        // two projects: one whose live deploy is a promoted preview, one whose live deploy is not a preview
        for (const [f, live] of [
          ['f1', 'p1live'],
          ['f2', 'd2live'],
        ])
          await k
            .insertInto('folders')
            .values({ id: f, user_id: 'u', name: f, is_published: 1, created_at: now, updated_at: now, live_deploy_id: live })
            .execute()
        const deploys: Array<[string, string, number]> = [
          ['d1', 'f1', 0],
          ['p1live', 'f1', 1],
          ['p1other', 'f1', 1],
          ['d2live', 'f2', 0],
          ['p2', 'f2', 1],
        ]
        for (const [i, [id, folder, preview]] of deploys.entries())
          await k
            .insertInto('deploys')
            .values({ id, folder_id: folder, seq: i + 1, created_at: now + i, file_count: 0, bytes: 0, source: 'cli', is_preview: preview })
            .execute()
        assert.equal((await migrator.migrateToLatest()).error, undefined)
        const rows = await k.selectFrom('deploys').select(['id', 'created_at', 'promoted_at']).orderBy('id').execute()
        assert.deepEqual(
          rows.map((r) => [r.id, r.promoted_at === null ? null : Number(r.promoted_at) === Number(r.created_at)]),
          [
            ['d1', null],
            ['d2live', null],
            ['p1live', true],
            ['p1other', null],
            ['p2', null],
          ],
        )
      } finally {
        if (db.schema) await sql`drop schema if exists ${sql.id(db.schema)} cascade`.execute(db.k)
        await db.close()
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })
}
