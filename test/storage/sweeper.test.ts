import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { PassThrough } from 'node:stream'
import SQLite from 'better-sqlite3'
import { sql, type KyselyPlugin } from 'kysely'
import { ENGINES, multipart, startServer, type TestServer } from '../support/server.js'
import type { BlobStore } from '../../src/storage/blob-store.js'
import { sweepBlobs } from '../../src/storage/sweeper.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'
import { createFoldersService } from '../../src/features/sites/folders-service.js'
import { runCli } from '../cli/run.js'
import { manifestOf, postArchive, sha, tarOf } from '../support/deploys.js'
import { expectError } from '../support/errors.js'
import { HTML } from '../support/hosting.js'

for (const engine of ENGINES) {
  describe(`blob sweeper (real ${engine} and disk)`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine })
    })
    after(() => s.close())

    const blobFile = (digest: string) => path.join(s.dataDir, 'blobs', digest.slice(0, 2), digest)
    const age = (digest: string, ms: number) => {
      const t = new Date(Date.now() - ms)
      fs.utimesSync(blobFile(digest), t, t)
    }

    it('spares an unreferenced old blob that an upload of the same bytes touched after the listing, and deletes one nobody touched', async () => {
      const reused = Buffer.from(`orphan, then uploaded again ${crypto.randomUUID()}`)
      const orphan = Buffer.from(`orphan for good ${crypto.randomUUID()}`)
      const a = await s.deps.blobs.put(reused)
      const b = await s.deps.blobs.put(orphan)
      age(a.digest, 2 * 3600_000)
      age(b.digest, 2 * 3600_000)
      // an upload of `reused` lands after the sweeper listed the blobs (and before its row commits,
      // so the sweeper's reference query cannot see it): the store touches the existing blob
      const racing: BlobStore = {
        ...s.deps.blobs,
        async *list() {
          for await (const e of s.deps.blobs.list()) yield e
          await s.deps.blobs.put(reused)
        },
      }
      const r = await sweepBlobs(s.deps.db, racing, BLOB_COLUMNS, 3600_000)
      assert.equal(await s.deps.blobs.exists(a.digest), true, 'the touched blob is kept for the upload about to reference it')
      assert.deepEqual(await s.deps.blobs.read(a.digest), reused)
      assert.equal(await s.deps.blobs.exists(b.digest), false, 'the untouched orphan goes')
      assert.ok(r.deleted >= 1)
      assert.equal(await s.deps.blobs.modifiedMs(b.digest), null)
    })

    it('spares a blob that an upload of the same bytes touches after every check the sweeper made but before the delete', async () => {
      const bytes = Buffer.from(`uploaded again during the delete ${crypto.randomUUID()}`)
      const { digest } = await s.deps.blobs.put(bytes)
      age(digest, 2 * 3600_000)
      // the upload lands between the sweeper's last look and the store's delete: it found the
      // blob, touched it, and commits its row after the sweep read the references
      const racing: BlobStore = {
        ...s.deps.blobs,
        async delete(d, ifNotModifiedAfter) {
          if (d === digest) await s.deps.blobs.put(bytes)
          return s.deps.blobs.delete(d, ifNotModifiedAfter)
        },
      }
      await sweepBlobs(s.deps.db, racing, BLOB_COLUMNS, 3600_000)
      assert.deepEqual(await s.deps.blobs.read(digest), bytes, 'the blob the upload is about to reference is kept')
    })

    it('a deploy whose carried blob a sweep took during a long upload fails with 1330 instead of going live without it', async () => {
      const k = await s.user()
      const v1 = { 'index.html': HTML(`v1 ${crypto.randomUUID()}`) }
      assert.equal((await postArchive(s, k.key, 'slow', await tarOf([manifestOf(v1), { name: 'index.html', data: v1['index.html'] }]))).status, 201)
      // v2 keeps the home page (not carried: held) and carries a file large enough to be put as
      // it streams in, long before the archive ends
      const big = Buffer.alloc(1536 * 1024, crypto.randomUUID())
      const v2 = { ...v1, 'big.bin': big }
      const tar = await tarOf([manifestOf(v2), { name: 'big.bin', data: big }])
      const body = new PassThrough()
      const answer = postArchive(s, k.key, 'slow', body as unknown as Buffer)
      // everything but the archive's end (two zero blocks): the big file is stored, no row yet
      body.write(tar.subarray(0, tar.length - 1024))
      while (!(await s.deps.blobs.exists(sha(big)))) await new Promise((r) => setTimeout(r, 20))
      // the upload goes on for two hours: a sweep then (fake time: 2 h later, 1 h grace) finds
      // the file's blob old and referenced by nothing, and deletes it
      const swept = await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 3600_000, Date.now() + 2 * 3600_000)
      assert.ok(swept.deleted >= 1)
      assert.equal(await s.deps.blobs.exists(sha(big)), false)
      body.end(tar.subarray(tar.length - 1024))
      const r = await answer
      expectError(r, 400, 1330)
      assert.match(r.json.message, /big\.bin/)
      // nothing changed: the live site is v1, no row points at the missing bytes
      assert.equal((await s.get(`/${k.username}/slow/`)).text, v1['index.html'])
      assert.equal((await s.get(`/${k.username}/slow/big.bin`)).status, 404)
      for (const table of ['folder_files', 'deploy_files'] as const) {
        const rows = await s.deps.db.k.selectFrom(table).select('digest').where('digest', '=', sha(big)).execute()
        assert.deepEqual(rows, [], table)
      }
      // the check asks for the file again, and a deploy that carries it goes live whole
      const check = await s.post('/api/folders/slow/deploys/missing', { key: k.key, json: JSON.parse(String(manifestOf(v2).data)) })
      assert.deepEqual(check.json.missing, [sha(big)])
      assert.equal((await postArchive(s, k.key, 'slow', tar)).status, 201)
      assert.deepEqual((await s.get(`/${k.username}/slow/big.bin`)).body, big)
    })

    it('a batch upload whose first file a sweep took while the rest streamed fails with 503 and writes nothing', async () => {
      const k = await s.user()
      const big = Buffer.alloc(1536 * 1024, crypto.randomUUID())
      const { body: whole, contentType } = multipart([
        { name: 'files[]', filename: 'big.bin', data: big },
        { name: 'files[]', filename: 'index.html', data: HTML('slow batch') },
      ])
      const body = new PassThrough()
      const answer = s.post('/api/folders/slow-batch/batch_upload', { key: k.key, body: body as unknown as Buffer, headers: { 'content-type': contentType } })
      // the first part whole and the second part's start: big.bin is stored, no row yet
      const cut = whole.indexOf('index.html') + 200
      body.write(whole.subarray(0, cut))
      while (!(await s.deps.blobs.exists(sha(big)))) await new Promise((r) => setTimeout(r, 20))
      // the rest takes two hours: a sweep then (fake time, 1 h grace) deletes big.bin's blob
      await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 3600_000, Date.now() + 2 * 3600_000)
      assert.equal(await s.deps.blobs.exists(sha(big)), false)
      body.end(whole.subarray(cut))
      const r = await answer
      expectError(r, 503, 1503)
      assert.equal(r.json.details.reason, 'big.bin 已存储的内容在读取请求期间被删除：请重新发送')
      const rows = await s.deps.db.k.selectFrom('folder_files').select('digest').where('digest', '=', sha(big)).execute()
      assert.deepEqual(rows, [])
      // sent again, the batch goes through whole
      const again = await s.post('/api/folders/slow-batch/batch_upload', { key: k.key, body: whole, headers: { 'content-type': contentType } })
      assert.equal(again.status, 200, again.text)
      const listed = (await s.get('/api/folders/slow-batch/files', { key: k.key })).json.files.map((f: { path: string }) => f.path)
      assert.deepEqual(listed.sort(), ['big.bin', 'index.html'])
      assert.deepEqual(await s.deps.blobs.read(sha(big)), big)
    })

    it('a deploy told a file is held, whose only holder goes before the sweep, is refused (1330) rather than pointing at swept bytes', async () => {
      const k = await s.user()
      const shared = `held only by one project ${crypto.randomUUID()}`
      const holder = { 'index.html': HTML('holder'), 'd.txt': shared }
      const taker = { 'index.html': HTML(`taker ${crypto.randomUUID()}`) }
      for (const [name, files] of [
        ['holder', holder],
        ['taker', taker],
      ] as const)
        assert.equal(
          (await postArchive(s, k.key, name, await tarOf([manifestOf(files), ...Object.entries(files).map(([n, d]) => ({ name: n, data: d }))]))).status,
          201,
        )
      age(sha(shared), 2 * 3600_000)
      const next = { ...taker, 'd.txt': shared }
      const check = await s.post('/api/folders/taker/deploys/missing', { key: k.key, json: JSON.parse(String(manifestOf(next).data)) })
      assert.deepEqual(check.json.missing, [])
      // the holder (project deleted whole) goes after the sweeper listed the blobs; the deploy, carrying nothing as it
      // was told, lands after every check the sweeper made and before the store's delete
      let deploy: Awaited<ReturnType<typeof postArchive>> | null = null
      const racing: BlobStore = {
        ...s.deps.blobs,
        async *list() {
          for await (const e of s.deps.blobs.list()) yield e
          await s.deps.services.get(createFoldersService).remove((await s.deps.users.byId(k.id))!, { name: 'holder', display: 'holder' })
        },
        async delete(d, ifNotModifiedAfter) {
          if (d === sha(shared)) deploy = await postArchive(s, k.key, 'taker', await tarOf([manifestOf(next)]))
          return s.deps.blobs.delete(d, ifNotModifiedAfter)
        },
      }
      await sweepBlobs(s.deps.db, racing, BLOB_COLUMNS, 3600_000)
      assert.ok(deploy, 'the deploy ran during the sweep')
      expectError(deploy, 400, 1330)
      assert.equal(await s.deps.blobs.exists(sha(shared)), false)
      assert.equal((await s.get(`/${k.username}/taker/`)).text, taker['index.html'])
      assert.equal((await s.get(`/${k.username}/taker/d.txt`)).status, 404)
    })

    it('runs one sweep at a time: a second one in this process or from svc sweep skips and says so', async () => {
      const orphan = await s.deps.blobs.put(Buffer.from(`orphan ${crypto.randomUUID()}`))
      age(orphan.digest, 2 * 3600_000)
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      let listing!: () => void
      const started = new Promise<void>((r) => (listing = r))
      // the first sweep stays in its listing until the others have tried
      const slow: BlobStore = {
        ...s.deps.blobs,
        async *list() {
          listing()
          await held
          yield* s.deps.blobs.list()
        },
      }
      const first = sweepBlobs(s.deps.db, slow, BLOB_COLUMNS, 3600_000)
      try {
        await started
        const second = await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 3600_000)
        assert.deepEqual(second, { skipped: true, deleted: 0, temp: 0 })
        const cli = await runCli(['sweep'], { env: s.env })
        assert.equal(cli.code, 0, cli.stderr)
        assert.match(cli.stdout, /^skipped: another sweep/)
        assert.equal(await s.deps.blobs.exists(orphan.digest), true, 'neither skipped sweep deleted anything')
      } finally {
        release()
      }
      const r = await first
      assert.equal(r.skipped, false)
      assert.ok(r.deleted >= 1)
      assert.equal(await s.deps.blobs.exists(orphan.digest), false)
      // the lock is released: the next sweep runs, here and from the command
      assert.equal((await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 3600_000)).skipped, false)
      const cli = await runCli(['sweep'], { env: s.env })
      assert.equal(cli.code, 0, cli.stderr)
      assert.match(cli.stdout, /^deleted \d+ unreferenced blobs/)
    })

    it('reads every reference table in one snapshot: a row moved from a table read later to one read earlier keeps its blob', async () => {
      const moved = await s.deps.blobs.put(Buffer.from(`moved between tables ${crypto.randomUUID()}`))
      age(moved.digest, 2 * 3600_000)
      const k = s.deps.db.k
      await sql`create table sweep_a (d text)`.execute(k)
      await sql`create table sweep_b (d text)`.execute(k)
      try {
        await sql`insert into sweep_b (d) values (${moved.digest})`.execute(k)
        // the move commits on another connection (PostgreSQL: the pool's; SQLite: a second
        // connection to the file, as `svc sweep` beside the server has), right after the
        // sweeper's read of sweep_a
        const move = async () => {
          if (engine === 'postgres') {
            await k.transaction().execute(async (trx) => {
              await sql`delete from sweep_b where d = ${moved.digest}`.execute(trx)
              await sql`insert into sweep_a (d) values (${moved.digest})`.execute(trx)
            })
            return
          }
          const other = new SQLite(path.join(s.dataDir, 'svc.db'))
          try {
            other.pragma('busy_timeout = 5000')
            other.transaction(() => {
              other.prepare('delete from sweep_b where d = ?').run(moved.digest)
              other.prepare('insert into sweep_a (d) values (?)').run(moved.digest)
            })()
          } finally {
            other.close()
          }
        }
        const readsA = new Set<unknown>()
        let done = false
        const hook: KyselyPlugin = {
          transformQuery(args) {
            if (JSON.stringify(args.node).includes('sweep_a')) readsA.add(args.queryId)
            return args.node
          },
          async transformResult(args) {
            if (readsA.has(args.queryId) && !done) {
              done = true
              await move()
            }
            return args.result
          },
        }
        const columns = [
          { table: 'sweep_a', column: 'd' },
          { table: 'sweep_b', column: 'd' },
        ]
        await sweepBlobs({ ...s.deps.db, k: k.withPlugin(hook) }, s.deps.blobs, columns, 3600_000)
        assert.equal(done, true, 'the row moved while the sweeper read')
        assert.deepEqual((await sql<{ d: string }>`select d from sweep_a`.execute(k)).rows, [{ d: moved.digest }])
        assert.equal(await s.deps.blobs.exists(moved.digest), true, 'the blob the moved row references is kept')
      } finally {
        await sql`drop table sweep_a`.execute(k)
        await sql`drop table sweep_b`.execute(k)
      }
    })
  })
}
