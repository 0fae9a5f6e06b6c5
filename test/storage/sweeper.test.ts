import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import url from 'node:url'
import { spawn } from 'node:child_process'
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
import { imageForm, makeImage, svc } from '../support/images.js'
import { startS3, type TestS3 } from '../support/s3.js'
import { until } from '../support/webhooks.js'
import { LEASE_EXPIRY_MS, LEASE_MAX_MS, LEASE_TIMING, withBlobLease } from '../../src/storage/leases.js'
import { AppError } from '../../src/errors/app-error.js'

const root = path.resolve(path.dirname(url.fileURLToPath(import.meta.url)), '../..')

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

/**
 * Long writes (an archive deploy, a batch upload, a form submission's or an image upload's
 * files) put blobs long before their rows commit: their lease keeps every sweep off those
 * blobs, on disk and on S3 alike (docs/decisions.md 313). A sweep with no grace at the
 * real time finds every unreferenced blob old, as one would two hours into a slow upload.
 */
for (const engine of ENGINES) {
  for (const store of ['disk', 's3'] as const) {
    describe(`long writes hold a lease on the sweeper (real ${engine}, ${store})`, () => {
      let s: TestServer
      let s3: TestS3 | undefined
      before(async () => {
        if (store === 's3') s3 = await startS3()
        s = await startServer({ engine, env: s3 ? { STORAGE_URL: s3.storageUrl() } : {} })
      })
      after(async () => {
        await s?.close()
        await s3?.close()
      })

      const leases = () => s.deps.db.k.selectFrom('blob_leases').selectAll().execute()
      const sweepNow = () => sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0)
      const stored = (digest: string) => until(() => s.deps.blobs.exists(digest), 20_000, `blob ${digest}`)
      const digests = async () => {
        const all = new Set<string>()
        for await (const b of s.deps.blobs.list()) all.add(b.digest)
        return all
      }

      it('an archive deploy that a sweep meets in flight keeps its blobs and goes live whole; its lease goes with it', async () => {
        const k = await s.user()
        const big = Buffer.alloc(1536 * 1024, crypto.randomUUID())
        const site = { 'index.html': HTML(`leased ${crypto.randomUUID()}`), 'big.bin': big }
        const tar = await tarOf([manifestOf(site), { name: 'big.bin', data: big }, { name: 'index.html', data: site['index.html'] }])
        const body = new PassThrough()
        const answer = postArchive(s, k.key, 'leased', body as unknown as Buffer)
        // everything but the archive's end: the big file is stored, no row yet
        body.write(tar.subarray(0, tar.length - 1024))
        await stored(sha(big))
        const held = await leases()
        assert.equal(held.length, 1, 'the deploy holds one lease')
        const r = await sweepNow()
        assert.equal(r.skipped, false)
        assert.equal(await s.deps.blobs.exists(sha(big)), true, 'the sweep spared the blob of the write in flight')
        body.end(tar.subarray(tar.length - 1024))
        const done = await answer
        assert.equal(done.status, 201, done.text)
        assert.deepEqual((await s.get(`/${k.username}/leased/big.bin`)).body, big)
        assert.equal((await s.get(`/${k.username}/leased/`)).text, site['index.html'])
        assert.deepEqual(await leases(), [], 'the commit removed the lease')
      })

      it('a batch upload that a sweep from another process meets in flight keeps its files', async () => {
        const k = await s.user()
        const big = Buffer.alloc(1536 * 1024, crypto.randomUUID())
        const { body: whole, contentType } = multipart([
          { name: 'files[]', filename: 'big.bin', data: big },
          { name: 'files[]', filename: 'index.html', data: HTML('leased batch') },
        ])
        const body = new PassThrough()
        const answer = s.post('/api/folders/leased-batch/batch_upload', {
          key: k.key,
          body: body as unknown as Buffer,
          headers: { 'content-type': contentType },
        })
        const cut = whole.indexOf('index.html') + 200
        body.write(whole.subarray(0, cut))
        await stored(sha(big))
        // `svc sweep` beside the server: it reads the lease from the database
        const cli = await runCli(['sweep', '--grace-seconds', '0'], { env: s.env })
        assert.equal(cli.code, 0, cli.stderr)
        assert.match(cli.stdout, /^deleted \d+ unreferenced blobs/)
        assert.equal(await s.deps.blobs.exists(sha(big)), true)
        body.end(whole.subarray(cut))
        const r = await answer
        assert.equal(r.status, 200, r.text)
        assert.equal((await s.post('/api/folders/leased-batch/publish', { key: k.key })).status, 200)
        assert.deepEqual((await s.get(`/${k.username}/leased-batch/big.bin`)).body, big)
        assert.deepEqual(await leases(), [])
      })

      it("a form submission's file and an image upload's first image, stored while the rest streams, outlive a sweep", async () => {
        const k = await s.user()
        const form = await s.post('/svc_api/forms/create', {
          key: k.key,
          json: { form_name: 'Leased', form_slug: `leased-${crypto.randomBytes(4).toString('hex')}` },
        })
        assert.equal(form.status, 200, form.text)
        const cv = Buffer.alloc(64 * 1024, crypto.randomUUID())
        const mp = multipart([
          { name: 'cv', filename: 'cv.bin', data: cv },
          { name: 'note', data: 'LAST-PART' },
        ])
        const cut = mp.body.indexOf('LAST-PART')
        const body = new PassThrough()
        body.write(mp.body.subarray(0, cut))
        const answer = s.post(`/api/forms/submit/${form.json.data.form_slug}`, { body: body as never, headers: { 'content-type': mp.contentType } })
        await stored(sha(cv))
        await sweepNow()
        assert.equal(await s.deps.blobs.exists(sha(cv)), true)
        body.end(mp.body.subarray(cut))
        const r = await answer
        assert.equal(r.status, 200, r.text)
        const sub = (await s.get(`/svc_api/forms/data/${form.json.data.id}`, { key: k.key })).json.data.submissions[0]
        assert.deepEqual((await s.get(new URL(sub.files[0].url).pathname, { key: k.key })).body, cv)

        // images: the first one is stored (as ingested) while the second is still on its way
        await svc(s, 'grant', k.username, 'image-host')
        const cookie = await s.login(k.username, k.password)
        const pngs = [await makeImage('png', { color: '#cc3366' }), await makeImage('png', { color: '#33cc66', width: 20 })]
        const img = imageForm(pngs.map((data, i) => ({ name: `${i}.png`, data, type: 'image/png' })))
        const second = img.body.lastIndexOf('1.png')
        const before = await digests()
        const up = new PassThrough()
        up.write(img.body.subarray(0, second))
        const uploaded = s.post('/api/image-host/upload', { cookie, body: up as never, headers: { 'content-type': img.contentType } })
        let first = ''
        await until(async () => {
          first = [...(await digests())].find((d) => !before.has(d)) ?? ''
          return first !== ''
        })
        await sweepNow()
        assert.equal(await s.deps.blobs.exists(first), true)
        up.end(img.body.subarray(second))
        const u = await uploaded
        assert.equal(u.status, 200, u.text)
        for (const i of u.json.images as Array<{ public_token: string }>) assert.equal((await s.get(`/svc-img/pub/${i.public_token}`)).status, 200)
        assert.deepEqual(await leases(), [])
      })

      it("a visitor's form post is spared for an hour at most, an owner's deploy for a day; a slow post within its hour commits", async () => {
        const k = await s.user()
        const form = await s.post('/svc_api/forms/create', {
          key: k.key,
          json: { form_name: 'Visitor', form_slug: `visitor-${crypto.randomBytes(4).toString('hex')}` },
        })
        assert.equal(form.status, 200, form.text)
        // a lease as old as `ms` (its start moved back) and renewed just now: the one lease held
        const ageLease = async (ms: number) => {
          const [l] = await leases()
          assert.ok(l, 'the request holds a lease')
          await s.deps.db.k
            .updateTable('blob_leases')
            .set({ started_at: Number(l.started_at) - ms, renewed_at: Date.now() })
            .where('id', '=', l.id)
            .execute()
        }
        // a visitor's post whose file is stored while its last field has not come
        const slowPost = async (signal?: AbortSignal) => {
          const cv = Buffer.alloc(64 * 1024, crypto.randomUUID())
          const mp = multipart([
            { name: 'cv', filename: 'cv.bin', data: cv },
            { name: 'note', data: 'LAST-PART' },
          ])
          const cut = mp.body.indexOf('LAST-PART')
          const body = new PassThrough()
          body.write(mp.body.subarray(0, cut))
          const answer = s.post(`/api/forms/submit/${form.json.data.form_slug}`, { body: body as never, headers: { 'content-type': mp.contentType }, signal })
          await stored(sha(cv))
          return { cv, answer, finish: () => body.end(mp.body.subarray(cut)) }
        }

        // 45 minutes into a slow post: spared, and it commits whole
        const slow = await slowPost()
        await ageLease(45 * 60_000)
        await sweepNow()
        assert.equal(await s.deps.blobs.exists(sha(slow.cv)), true, 'a post within its hour keeps its file')
        slow.finish()
        const r = await slow.answer
        assert.equal(r.status, 200, r.text)
        const sub = (await s.get(`/svc_api/forms/data/${form.json.data.id}`, { key: k.key })).json.data.submissions[0]
        assert.deepEqual((await s.get(new URL(sub.files[0].url).pathname, { key: k.key })).body, slow.cv)

        // past its hour, however renewed: a visitor's lease pins nothing and the sweep removes it
        const ac = new AbortController()
        const late = await slowPost(ac.signal)
        await ageLease(61 * 60_000)
        await sweepNow()
        assert.equal(await s.deps.blobs.exists(sha(late.cv)), false, "a visitor's lease past its hour spares nothing")
        assert.deepEqual(await leases(), [])
        ac.abort()
        await late.answer.catch(() => {})

        // an owner's archive deploy as old: still spared, and it goes live whole
        const big = Buffer.alloc(1536 * 1024, crypto.randomUUID())
        const site = { 'index.html': HTML(`owner ${crypto.randomUUID()}`), 'big.bin': big }
        const tar = await tarOf([manifestOf(site), { name: 'big.bin', data: big }, { name: 'index.html', data: site['index.html'] }])
        const body = new PassThrough()
        const answer = postArchive(s, k.key, 'owned-long', body as unknown as Buffer)
        body.write(tar.subarray(0, tar.length - 1024))
        await stored(sha(big))
        await ageLease(61 * 60_000)
        await sweepNow()
        assert.equal(await s.deps.blobs.exists(sha(big)), true, "an owner's lease an hour old still spares its blobs")
        body.end(tar.subarray(tar.length - 1024))
        const done = await answer
        assert.equal(done.status, 201, done.text)
        assert.deepEqual((await s.get(`/${k.username}/owned-long/big.bin`)).body, big)
        assert.deepEqual(await leases(), [])
      })

      it('a failed or cut-off request removes its lease, and the sweep then takes what it stored', async () => {
        const k = await s.user()
        const big = Buffer.alloc(1536 * 1024, crypto.randomUUID())
        const site = { 'index.html': HTML('never'), 'big.bin': big }
        // a refused archive: an entry the manifest does not name, after the big file was stored
        const bad = await tarOf([manifestOf(site), { name: 'big.bin', data: big }, { name: 'stray.txt', data: 'stray' }])
        expectError(await postArchive(s, k.key, 'failed', bad), 400, 1329)
        assert.deepEqual(await leases(), [])
        // a client that goes away in the middle
        const big2 = Buffer.alloc(1536 * 1024, crypto.randomUUID())
        const tar = await tarOf([manifestOf({ ...site, 'big.bin': big2 }), { name: 'big.bin', data: big2 }])
        const body = new PassThrough()
        const ac = new AbortController()
        const answer = postArchive(s, k.key, 'failed', body as unknown as Buffer, false, ac.signal).catch((e: unknown) => e)
        body.write(tar.subarray(0, tar.length - 1024))
        await stored(sha(big2))
        assert.equal((await leases()).length, 1)
        ac.abort()
        await answer
        await until(async () => (await leases()).length === 0, 20_000, 'the lease of the cut-off deploy removed')
        await sweepNow()
        assert.equal(await s.deps.blobs.exists(sha(big)), false, "no lease pins the refused deploy's blob")
        assert.equal(await s.deps.blobs.exists(sha(big2)), false, "nor the cut-off one's")
      })

      it('a lease whose process was killed pins nothing once it expires, and the sweep removes it', async () => {
        const orphan = await s.deps.blobs.put(Buffer.from(`orphan under a dead lease ${crypto.randomUUID()}`))
        // a process (another instance) takes a lease, then dies with kill -9: no finally runs
        const src = (f: string) => JSON.stringify(url.pathToFileURL(path.join(root, 'src', f)).href)
        const code = [
          `const { openDatabase } = await import(${src('db/kysely.ts')})`,
          `const { withBlobLease } = await import(${src('storage/leases.ts')})`,
          `const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL ?? null, dataDir: process.env.DATA_DIR })`,
          `setInterval(() => {}, 1000)`,
          `await withBlobLease(db, async (lease) => { await lease.take(); process.stdout.write('held\\n'); await new Promise(() => {}) })`,
        ].join('\n')
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
          cwd: root,
          env: { ...process.env, ...s.env },
          stdio: ['ignore', 'pipe', 'inherit'],
        })
        try {
          await new Promise<void>((resolve, reject) => {
            child.stdout.on('data', (d: Buffer) => String(d).includes('held') && resolve())
            child.once('exit', (c) => reject(new Error(`the lease holder exited (${c})`)))
          })
        } finally {
          child.kill('SIGKILL')
        }
        const [dead] = await leases()
        assert.ok(dead, 'the killed process left its lease')
        // while it would still be live, it spares the orphan put before it (the clock-skew margin)
        await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)
        assert.equal(await s.deps.blobs.exists(orphan.digest), true)
        assert.equal((await leases()).length, 1)
        // past its expiry with no renewal: the orphan goes, and so does the lease
        await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + LEASE_EXPIRY_MS + 60_000)
        assert.equal(await s.deps.blobs.exists(orphan.digest), false)
        assert.deepEqual(await leases(), [])
      })

      it('a lease a sweep found dead refuses its commit (503 / 1503) rather than rows without their bytes', async () => {
        const bytes = Buffer.from(`under a stalled lease ${crypto.randomUUID()}`)
        let digest = ''
        const lapsed = withBlobLease(
          s.deps.db,
          async (lease) => {
            await lease.take()
            digest = (await s.deps.blobs.put(bytes)).digest
            // the holder stalls past the expiry (fake time for the sweep): the sweep counts the
            // lease dead, removes it and takes the blob; the holder's next renewal finds no row
            await sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 3_600_000, Date.now() + 2 * 3_600_000)
            assert.equal(await s.deps.blobs.exists(digest), false)
            await until(() => lease.lapsed(), 20_000, 'the renewal finds its lease gone')
            lease.check()
          },
          // the first renewal comes after the sweep, which finds the lease as the stalled holder left it
          { ...LEASE_TIMING, renewMs: 1000 },
        )
        await assert.rejects(lapsed, (e: unknown) => e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE')
        assert.deepEqual(await leases(), [])
        // no renewal got through for longer than the holder may count on (a stall, the
        // database away): refused too, whether or not a sweep came
        const stalled = withBlobLease(
          s.deps.db,
          async (lease) => {
            await lease.take()
            assert.equal(lease.lapsed(), false)
            await new Promise((r) => setTimeout(r, 100))
            lease.check()
          },
          { ...LEASE_TIMING, holdMs: 50 },
        )
        await assert.rejects(stalled, (e: unknown) => e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE')
        // renewed all along, but older than a lease may live: refused too
        const aged = withBlobLease(
          s.deps.db,
          async (lease) => {
            await lease.take()
            await new Promise((r) => setTimeout(r, 100))
            lease.check()
          },
          { ...LEASE_TIMING, renewMs: 20, lifeMs: 50 },
        )
        await assert.rejects(aged, (e: unknown) => e instanceof AppError && e.key === 'STORAGE_UNAVAILABLE')
        assert.deepEqual(await leases(), [])
      })

      it('a lease renewed for longer than a lease may live (a body trickled for a day) pins nothing', async () => {
        const orphan = await s.deps.blobs.put(Buffer.from(`orphan beside a day-old lease ${crypto.randomUUID()}`))
        // started 25 hours ago and renewed just now: live by its renewals, too old by its start
        const now = Date.now()
        await s.deps.db.k
          .insertInto('blob_leases')
          .values({ id: crypto.randomUUID(), started_at: now - LEASE_MAX_MS - 3_600_000, renewed_at: now })
          .execute()
        await sweepNow()
        assert.equal(await s.deps.blobs.exists(orphan.digest), false)
        assert.deepEqual(await leases(), [])
      })
    })
  }
}
