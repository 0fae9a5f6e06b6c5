import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import tar from 'tar-stream'
import yauzl from 'yauzl'
import yazl from 'yazl'
import { ENGINES, startServer, type Res, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, batchUpload, uploadFile } from '../support/hosting.js'
import { exifTiff, imageForm, jpegSegment, makeImage, svc } from '../support/images.js'
import { runCli } from './run.js'
import { importFromFile } from '../../src/cli/export.js'
import { assertUsageExact } from '../support/quota-race.js'
import { ExportError, importArchive, verifyArchive } from '../../src/features/export/archive.js'
import type { BlobStore } from '../../src/storage/blob-store.js'

/** The parts of an answer a visitor sees (not Date, request id or per-response values). */
const seen = (r: Res) => ({
  status: r.status,
  type: r.header('content-type'),
  etag: r.header('etag'),
  csp: r.header('content-security-policy'),
  // bytes as latin1 (one char per byte), with the instance's own origin (links in error answers) left out
  body: r.body.toString('latin1').replace(/https:\/\/127\.0\.0\.1:\d+/g, 'ORIGIN'),
})

/** Rewrites a tar.gz entry by entry (`edit` returns the new bytes, or null to drop it), or appends entries. */
async function rewrite(
  src: string,
  dest: string,
  edit: (name: string, body: Buffer) => Buffer | null,
  extra: Array<{ name: string; body: Buffer; type?: 'file' | 'symlink' }> = [],
) {
  const extract = tar.extract()
  const pack = tar.pack()
  const out = fs.createWriteStream(dest)
  const done = new Promise<void>((res, rej) => out.on('close', res).on('error', rej))
  pack.pipe(zlib.createGzip()).pipe(out)
  fs.createReadStream(src).pipe(zlib.createGunzip()).pipe(extract)
  for await (const e of extract) {
    const parts: Buffer[] = []
    for await (const c of e as AsyncIterable<Buffer>) parts.push(c)
    const b = edit(e.header.name, Buffer.concat(parts))
    if (b) pack.entry({ name: e.header.name, size: b.length }, b)
  }
  for (const x of extra) {
    if (x.type === 'symlink') pack.entry({ name: x.name, type: 'symlink', linkname: '/etc/passwd' })
    else pack.entry({ name: x.name, size: x.body.length }, x.body)
  }
  pack.finalize()
  await done
}

/** A forger's tar.gz: data.json edited and manifest.json's checksum of it made to match. */
async function forge(src: string, dest: string, edit: (data: Record<string, any>) => void) {
  let data: Buffer | null = null
  const extract = tar.extract()
  fs.createReadStream(src).pipe(zlib.createGunzip()).pipe(extract)
  for await (const e of extract) {
    const parts: Buffer[] = []
    for await (const c of e as AsyncIterable<Buffer>) parts.push(c)
    if (e.header.name === 'data.json') data = Buffer.concat(parts)
  }
  const d = JSON.parse(String(data)) as Record<string, any>
  edit(d)
  const body = Buffer.from(JSON.stringify(d))
  await rewrite(src, dest, (n, b) => {
    if (n === 'data.json') return body
    if (n !== 'manifest.json') return b
    const m = JSON.parse(b.toString())
    m.data = { sha256: crypto.createHash('sha256').update(body).digest('hex'), size: body.length }
    return Buffer.from(JSON.stringify(m))
  })
}

/** The entries of a zip, in order, with their bytes. */
async function zipEntries(src: string | Buffer): Promise<Array<{ name: string; body: Buffer }>> {
  const zip = await new Promise<yauzl.ZipFile>((res, rej) => {
    const cb = (e: Error | null, z: yauzl.ZipFile) => (e ? rej(e) : res(z))
    if (typeof src === 'string') yauzl.open(src, { lazyEntries: true }, cb)
    else yauzl.fromBuffer(src, { lazyEntries: true }, cb)
  })
  const out: Array<{ name: string; body: Buffer }> = []
  await new Promise<void>((res, rej) => {
    zip.on('error', rej).on('end', res)
    zip.on('entry', (e: yauzl.Entry) =>
      zip.openReadStream(e, (err, s) => {
        if (err) return rej(err)
        const parts: Buffer[] = []
        s.on('data', (c: Buffer) => parts.push(c)).on('error', rej)
        s.on('end', () => {
          out.push({ name: e.fileName, body: Buffer.concat(parts) })
          zip.readEntry()
        })
      }),
    )
    zip.readEntry()
  })
  return out
}

/**
 * Rewrites a zip like `rewrite` does a tar.gz. Names yazl refuses to write ("..", absolute,
 * backslash) are written as a same-length stand-in and patched in the bytes (`rename`).
 */
async function rewriteZip(
  src: string,
  dest: string,
  edit: (name: string, body: Buffer) => Buffer | null,
  extra: Array<{ name: string; body: Buffer; mode?: number }> = [],
  o: { compress?: boolean; rename?: [string, string] } = {},
) {
  const zip = new yazl.ZipFile()
  for (const e of await zipEntries(src)) {
    const b = edit(e.name, e.body)
    if (b) zip.addBuffer(b, e.name, { compress: o.compress ?? true })
  }
  for (const x of extra) zip.addBuffer(x.body, x.name, { mode: x.mode })
  zip.end()
  const parts: Buffer[] = []
  for await (const c of zip.outputStream as AsyncIterable<Buffer>) parts.push(c)
  let out = Buffer.concat(parts)
  if (o.rename) {
    const [from, to] = o.rename.map((x) => Buffer.from(x))
    assert.equal(from.length, to.length)
    for (let i = out.indexOf(from); i >= 0; i = out.indexOf(from, i + 1)) to.copy(out, i)
    out = Buffer.from(out)
  }
  fs.writeFileSync(dest, out)
}

for (const engine of ENGINES) {
  describe(`svc export and import [${engine}]`, () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-export-test-'))
    const servers: TestServer[] = []
    after(async () => {
      for (const s of servers) await s.close()
      fs.rmSync(tmp, { recursive: true, force: true })
    })
    const start = async () => {
      const s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      servers.push(s)
      return s
    }
    // the CLI child reads its configuration from the environment, like `svc serve`
    const cliEnv = (s: TestServer) => ({ DATA_DIR: s.dataDir, DATABASE_URL: s.env.DATABASE_URL, STORAGE_URL: undefined })
    const counts = async (s: TestServer) => {
      const out: Record<string, number> = {}
      for (const t of [
        'users',
        'files',
        'folders',
        'folder_files',
        'kv_entries',
        'forms',
        'form_submissions',
        'images',
        'hosted_files',
        'hosted_versions',
      ] as const) {
        const r = await s.deps.db.k
          .selectFrom(t)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
        out[t] = Number(r.n)
      }
      return out
    }

    it(
      'exports a user and imports it into a fresh instance, where everything answers the same; bad archives are refused and change nothing',
      { timeout: 240_000 },
      async () => {
        const a = await start()
        const alice = await a.user()
        const cookie = await a.login(alice.username, alice.password)
        await svc(a, 'grant', alice.username, 'image-host')
        await svc(a, 'grant', alice.username, 'hosted-data')

        // one of each: single pages, a published project, KV (public and private), a form with submissions, images, hosted data with two versions
        assert.equal((await uploadFile(a, { key: alice.key }, 'index.html', HTML('home'))).status, 200)
        assert.equal((await uploadFile(a, { key: alice.key }, 'about.html', HTML('about'), { description: 'about us' })).status, 200)
        const up = await batchUpload(a, { key: alice.key }, 'site', [
          { filename: 'index.html', data: HTML('site') },
          { filename: 'css/app.css', data: 'body{color:red}' },
          { filename: 'docs/a b.txt', data: 'spaces' },
        ])
        assert.equal(up.status, 200, up.text)
        assert.equal((await a.post('/api/folders/site/publish', { key: alice.key })).status, 200)
        for (const [key, value, is_public] of [
          ['score', { n: 1, list: ['x', '排行'] }, true],
          ['secret', 'hidden text', false],
        ] as const)
          assert.equal((await a.post('/svc_api/data/store', { key: alice.key, json: { key, value, is_public } })).status, 200)
        const form = await a.post('/svc_api/forms/create', {
          key: alice.key,
          json: {
            form_name: 'Contact',
            form_slug: 'contact-x1',
            fields_config: [
              { name: 'email', type: 'email', required: true },
              { name: 'msg', type: 'textarea' },
            ],
          },
        })
        assert.equal(form.status, 200, form.text)
        const formId = form.json.data.id as string
        for (const [email, msg] of [
          ['a@example.com', 'hello'],
          ['b@example.com', '=1+2 你好'],
        ])
          assert.equal((await a.post('/api/forms/submit/contact-x1', { json: { email, msg } })).status, 200)
        const png = await makeImage('png')
        const img = imageForm([{ name: 'dot.png', data: png, type: 'image/png' }])
        const imgUp = await a.post('/api/image-host/upload', { cookie, body: img.body, headers: { 'content-type': img.contentType } })
        assert.equal(imgUp.status, 200, imgUp.text)
        const imgUrl = new URL(imgUp.json.images[0].public_url as string).pathname
        const hd = await a.request('POST', '/api/hosted-data/files', { cookie, json: { display_name: 'data.json', content: '{"v":1}' } })
        assert.equal(hd.status, 200, hd.text)
        const hdUrl = new URL(hd.json.file.public_url as string).pathname
        assert.equal(
          (await a.request('POST', `/api/hosted-data/files/${hd.json.file.id}/versions`, { cookie, json: { content: '{"v":2}', set_default: false } })).status,
          200,
        )

        const urls = [
          `/${alice.username}/index.html`,
          `/${alice.username}/about.html`,
          `/${alice.username}/site/`,
          `/${alice.username}/site/css/app.css`,
          `/${alice.username}/site/docs/a%20b.txt`,
          `/svc_api/data/public/${alice.username}/score`,
          `/svc_api/data/public/${alice.username}/secret`,
          imgUrl,
          hdUrl,
          `${hdUrl}?version=1`,
          `${hdUrl}?version=2`,
        ]
        const owner = ['/svc_api/data/get?key=secret', '/svc_api/data/list', '/svc_api/files', '/api/folders']
        const before = new Map<string, ReturnType<typeof seen>>()
        for (const u of urls) before.set(u, seen(await a.get(u)))
        assert.equal(before.get(urls[0])!.status, 200)
        const subsBefore = (await a.get(`/svc_api/forms/data/${formId}`, { key: alice.key })).json.data.submissions

        // export through the CLI, and through the signed-in user's download: the same content
        const file = path.join(tmp, 'alice.tar.gz')
        const ex = await runCli(['export', alice.username, file], { env: cliEnv(a) })
        assert.equal(ex.code, 0, ex.stderr)
        assert.ok(!fs.existsSync(`${file}.partial`))
        // a user that does not exist: refused, and neither the file nor its .partial left behind
        const none = path.join(tmp, 'nobody.zip')
        const missing = await runCli(['export', 'nobody-here', none], { env: cliEnv(a) })
        assert.equal(missing.code, 1, missing.stderr)
        assert.ok(!fs.existsSync(none) && !fs.existsSync(`${none}.partial`), 'nothing written for a refused export')
        // an account's data handed out is in the audit log, naming the account; the refused one is not
        const exports = await a.deps.db.k.selectFrom('audit_log').select(['via', 'target', 'details']).where('action', '=', 'cli.export').execute()
        assert.deepEqual(
          exports.map((e) => [e.via, e.target, JSON.parse(e.details)]),
          [['cli', alice.username, { args: [alice.username, file] }]],
        )
        const dl = await a.get('/svc_api/me/export', { cookie })
        assert.equal(dl.status, 200)
        assert.equal(dl.header('content-type'), 'application/gzip')
        assert.match(dl.header('content-disposition') ?? '', new RegExp(`attachment; filename="svc-export-${alice.username}-`))
        const names = async (buf: Buffer) => {
          const ex2 = tar.extract()
          const list: string[] = []
          const p = (async () => {
            for await (const e of ex2) {
              list.push(e.header.name)
              e.resume()
            }
          })()
          ex2.end(zlib.gunzipSync(buf))
          await p
          return list
        }
        const inFile = await names(fs.readFileSync(file))
        assert.deepEqual(await names(dl.body), inFile)
        for (const n of [
          'manifest.json',
          'data.json',
          'kv.json',
          'pages/index.html',
          'projects/site/css/app.css',
          'forms/contact-x1/submissions.csv',
          'forms/contact-x1/submissions.json',
        ])
          assert.ok(inFile.includes(n), n)

        // the same entries as a zip, from the CLI (by the file's name) and from the dashboard's link
        const zipFile = path.join(tmp, 'alice.zip')
        const exZip = await runCli(['export', alice.username, zipFile], { env: cliEnv(a) })
        assert.equal(exZip.code, 0, exZip.stderr)
        assert.deepEqual(fs.readFileSync(zipFile).subarray(0, 4), Buffer.from('PK\x03\x04', 'latin1'))
        assert.deepEqual(
          (await zipEntries(zipFile)).map((e) => e.name),
          inFile,
        )
        const page = await a.get('/dashboard/export', { cookie })
        assert.equal(page.status, 200)
        assert.match(page.text, /id="export-download" href="\/svc_api\/me\/export\?format=zip"/)
        assert.match(page.text, /href="\/svc_api\/me\/export\?format=tar.gz"/)
        const dlZip = await a.get('/svc_api/me/export?format=zip', { cookie })
        assert.equal(dlZip.status, 200)
        assert.equal(dlZip.header('content-type'), 'application/zip')
        assert.match(dlZip.header('content-disposition') ?? '', new RegExp(`attachment; filename="svc-export-${alice.username}-\\d{4}-\\d{2}-\\d{2}\\.zip"`))
        const zipped = await zipEntries(dlZip.body)
        assert.deepEqual(
          zipped.map((e) => e.name),
          inFile,
        )
        assert.equal(zipped.find((e) => e.name === 'pages/index.html')?.body.toString(), HTML('home'))
        const dlTar = await a.get('/svc_api/me/export?format=tar.gz', { cookie })
        assert.equal(dlTar.header('content-type'), 'application/gzip')
        assert.deepEqual(await names(dlTar.body), inFile)
        assert.equal((await a.get('/svc_api/me/export?format=rar', { cookie })).status, 400)

        // import into a fresh instance: everything a visitor or the owner sees is the same
        const importInto = async (archive: string) => {
          const b = await start()
          const im = await runCli(['import', archive], { env: cliEnv(b) })
          assert.equal(im.code, 0, im.stderr)
          const password = /password: (\S+)/.exec(im.stdout)?.[1]
          assert.ok(password, im.stdout)
          for (const u of urls) assert.deepEqual(seen(await b.get(u)), before.get(u), `${archive} ${u}`)
          const bCookie = await b.login(alice.username, password)
          for (const u of owner) {
            const x = await a.get(u, { cookie })
            const y = await b.get(u, { cookie: bCookie })
            assert.equal(y.status, 200, u)
            const strip = (j: unknown) =>
              JSON.parse(
                JSON.stringify(j)
                  .replace(/"id":"[^"]*"/g, '"id":""')
                  .replace(/(127\.0\.0\.1|localhost):\d+/g, '$1'),
              )
            assert.deepEqual(strip(y.json), strip(x.json), `${archive} ${u}`)
          }
          const subsAfter = (await b.get('/svc_api/forms/list', { cookie: bCookie })).json.data.forms
          assert.equal(subsAfter.length, 1)
          const subs = (await b.get(`/svc_api/forms/data/${subsAfter[0].id}`, { cookie: bCookie })).json.data.submissions
          assert.deepEqual(
            subs.map((x: any) => [x.data, x.created_at]),
            subsBefore.map((x: any) => [x.data, x.created_at]),
          )
          // the quotas' counters start equal to the imported rows
          const imported = await b.deps.db.k.selectFrom('users').select('id').where('username', '=', alice.username).executeTakeFirstOrThrow()
          await assertUsageExact(b.deps.db.k, imported.id, 'counters after import')
          // the form takes submissions on the new instance under the same slug
          assert.equal((await b.post('/api/forms/submit/contact-x1', { json: { email: 'c@example.com' } })).status, 200)
          return b
        }
        await importInto(zipFile)
        const b = await importInto(file)

        // a second import under another name: links and slugs taken on this instance get new ones
        const again = await runCli(['import', file, '--as', `${alice.username}-2`], { env: cliEnv(b) })
        assert.equal(again.code, 0, again.stderr)
        assert.match(again.stdout, /renamed: form contact-x1 -> contact-x1-/)
        assert.equal((await b.get(`/${alice.username}-2/site/`)).status, 200)
        const exists = await runCli(['import', file], { env: cliEnv(b) })
        assert.equal(exists.code, 1)
        assert.match(exists.stderr, /exists already/)
        // an import creates an account: in the audit log, named by the account it made (the
        // archive's name or --as); the refused one wrote none
        const imports = await b.deps.db.k.selectFrom('audit_log').select(['actor', 'via', 'target']).where('action', '=', 'cli.import').orderBy('at').execute()
        assert.deepEqual(
          imports.map((e) => [e.via, e.target]),
          [
            ['cli', alice.username],
            ['cli', `${alice.username}-2`],
          ],
        )
        assert.match(imports[0].actor, /^cli/)

        // bad archives: refused with a clear message, and nothing is written
        const c = await start()
        const empty = await counts(c)
        const bad: Array<[string, (dest: string) => Promise<void>, RegExp]> = [
          [
            'tampered page',
            (d) => rewrite(file, d, (n, body) => (n === 'pages/index.html' ? Buffer.from(body.toString().replace('home', 'HOME')) : body)),
            /pages\/index\.html does not match its checksum/,
          ],
          [
            'tampered data.json',
            (d) => rewrite(file, d, (n, body) => (n === 'data.json' ? Buffer.from(body.toString().replace('hidden text', 'other text!')) : body)),
            /data\.json does not match its checksum/,
          ],
          ['traversal path', (d) => rewrite(file, d, (_n, body) => body, [{ name: '../evil.txt', body: Buffer.from('x') }]), /unsafe path/],
          ['absolute path', (d) => rewrite(file, d, (_n, body) => body, [{ name: '/tmp/evil.txt', body: Buffer.from('x') }]), /unsafe path/],
          ['symlink', (d) => rewrite(file, d, (_n, body) => body, [{ name: 'link', body: Buffer.alloc(0), type: 'symlink' }]), /only plain files/],
          [
            'unlisted entry',
            (d) => rewrite(file, d, (_n, body) => body, [{ name: 'pages/extra.html', body: Buffer.from('x') }]),
            /not listed in manifest\.json/,
          ],
          ['missing entry', (d) => rewrite(file, d, (n, body) => (n === 'projects/site/css/app.css' ? null : body)), /listed in manifest\.json but missing/],
          // forged rows of the right kinds that the database or the service would not take
          [
            'forged: a KV key twice',
            (d) => forge(file, d, (x) => x.kv.push({ ...x.kv[0] })),
            /^data\.json: rows this instance cannot store \(.*(UNIQUE|unique|duplicate)/,
          ],
          ['forged: a project without a name', (d) => forge(file, d, (x) => (x.folders[0].name = null)), /^data\.json: rows this instance cannot store \(/],
          [
            'forged: an unknown tier',
            (d) => forge(file, d, (x) => (x.user.tier = 'root')),
            /^data\.json: user\.tier must be one of default, authenticated, vip$/,
          ],
          ['forged: limits not JSON', (d) => forge(file, d, (x) => (x.user.limits = '{files:')), /^data\.json: user\.limits must be a JSON object/],
          ['not gzip', async (d) => fs.writeFileSync(d, 'plain text'), /neither a zip nor a gzip'd tar archive/],
          ['truncated', async (d) => fs.writeFileSync(d, fs.readFileSync(file).subarray(0, 200)), /unreadable archive|not a gzip'd tar archive/],
          // the same refusals for a zip, and the zip's own ways to go wrong
          [
            'zip: tampered page',
            (d) => rewriteZip(zipFile, d, (n, body) => (n === 'pages/index.html' ? Buffer.from(body.toString().replace('home', 'HOME')) : body)),
            /pages\/index\.html does not match its checksum/,
          ],
          [
            // one byte flipped in the stored bytes (zip has a CRC, but the manifest's SHA-256 is what import checks)
            'zip: flipped byte',
            async (d) => {
              await rewriteZip(zipFile, d, (_n, body) => body, [], { compress: false })
              const raw = fs.readFileSync(d)
              const at = raw.indexOf(Buffer.from('body{color:red}'))
              assert.ok(at > 0)
              raw[at + 5] ^= 0x01
              fs.writeFileSync(d, raw)
            },
            /projects\/site\/css\/app\.css does not match its checksum/,
          ],
          [
            // one byte flipped inside data.json's deflated bytes: it no longer inflates, or inflates to other bytes
            'zip: flipped deflated byte',
            async (d) => {
              const raw = fs.readFileSync(zipFile)
              const zip = await new Promise<yauzl.ZipFile>((res, rej) => yauzl.fromBuffer(raw, { lazyEntries: true }, (e, z) => (e ? rej(e) : res(z))))
              const entry = await new Promise<yauzl.Entry>((res, rej) => {
                zip.on('entry', (e: yauzl.Entry) => (e.fileName === 'data.json' ? res(e) : zip.readEntry())).on('error', rej)
                zip.readEntry()
              })
              zip.close()
              assert.equal(entry.compressionMethod, 8)
              const at = entry.relativeOffsetOfLocalHeader
              const start = at + 30 + raw.readUInt16LE(at + 26) + raw.readUInt16LE(at + 28)
              raw[start + Math.floor(entry.compressedSize / 2)] ^= 0xff
              fs.writeFileSync(d, raw)
            },
            /unreadable archive|data\.json does not match its checksum/,
          ],
          [
            'zip: tampered data.json',
            (d) => rewriteZip(zipFile, d, (n, body) => (n === 'data.json' ? Buffer.from(body.toString().replace('hidden text', 'other text!')) : body)),
            /data\.json does not match its checksum/,
          ],
          [
            'zip: missing entry',
            (d) => rewriteZip(zipFile, d, (n, body) => (n === 'projects/site/css/app.css' ? null : body)),
            /listed in manifest\.json but missing/,
          ],
          [
            'zip: unlisted entry',
            (d) => rewriteZip(zipFile, d, (_n, body) => body, [{ name: 'pages/extra.html', body: Buffer.from('x') }]),
            /not listed in manifest\.json/,
          ],
          [
            'zip: traversal path',
            (d) => rewriteZip(zipFile, d, (_n, body) => body, [{ name: 'zz/evil.txt', body: Buffer.from('x') }], { rename: ['zz/evil.txt', '../evil.txt'] }),
            /unsafe path/,
          ],
          [
            'zip: absolute path',
            (d) =>
              rewriteZip(zipFile, d, (_n, body) => body, [{ name: 'ttmp/evil.txt', body: Buffer.from('x') }], { rename: ['ttmp/evil.txt', '/tmp/evil.txt'] }),
            /unsafe path/,
          ],
          [
            'zip: backslash',
            (d) => rewriteZip(zipFile, d, (_n, body) => body, [{ name: 'zzXevil.txt', body: Buffer.from('x') }], { rename: ['zzXevil.txt', '..\\evil.txt'] }),
            /unsafe path/,
          ],
          [
            'zip: symlink',
            (d) => rewriteZip(zipFile, d, (_n, body) => body, [{ name: 'link', body: Buffer.from('/etc/passwd'), mode: 0o120777 }]),
            /only plain files/,
          ],
          [
            // a small entry that inflates to far more than the manifest says: refused on its declared size, before it is inflated
            'zip: bomb',
            (d) => rewriteZip(zipFile, d, (n, body) => (n === 'pages/about.html' ? Buffer.alloc(64 * 1024 * 1024) : body)),
            /pages\/about\.html does not match its checksum/,
          ],
          ['zip: truncated', async (d) => fs.writeFileSync(d, fs.readFileSync(zipFile).subarray(0, 200)), /unreadable archive/],
        ]
        for (const [i, [what, make, message]] of bad.entries()) {
          const d = path.join(tmp, `bad-${what.replace(/\W+/g, '-')}.${what.startsWith('zip') ? 'zip' : 'tar.gz'}`)
          await make(d)
          // the first through the CLI (exit status, message without a stack), the rest in-process
          if (i === 0) {
            const r = await runCli(['import', d], { env: cliEnv(c) })
            assert.equal(r.code, 1, `${what}: ${r.stdout} ${r.stderr}`)
            assert.match(r.stderr, message, what)
            assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`)
          } else {
            await assert.rejects(importArchive(c.deps.db, c.deps.blobs, d), (e: Error) => e instanceof ExportError && message.test(e.message), what)
          }
        }
        assert.deepEqual(await counts(c), empty, 'nothing written by refused archives')
        assert.ok(!fs.existsSync(path.join(tmp, '..', 'evil.txt')))

        // small files go to the store in batches when it has putBatch (the disk driver), one put
        // each when it has not (S3): the same blobs and rows either way
        const { data } = await verifyArchive(file)
        const nBlobs = new Set(
          [...data.files, ...data.folders.flatMap((f) => f.files), ...data.images, ...data.hosted_data.flatMap((f) => f.versions)].map((r) => r.content),
        ).size
        const calls = { put: 0, putBatch: 0 }
        const store = c.deps.blobs
        const counting = (batch: boolean): BlobStore =>
          Object.assign(Object.create(store) as BlobStore, {
            put: (...a: Parameters<BlobStore['put']>) => (calls.put++, store.put(...a)),
            putBatch: batch ? (b: Buffer[]) => (calls.putBatch++, store.putBatch!(b)) : undefined,
          })
        const batched = await importArchive(c.deps.db, counting(true), file, 'batched')
        assert.deepEqual(calls, { put: 0, putBatch: 1 })
        calls.putBatch = 0
        const single = await importArchive(c.deps.db, counting(false), file, 'single')
        assert.deepEqual(calls, { put: nBlobs, putBatch: 0 })
        assert.deepEqual(single.counts, batched.counts)
        for (const u of ['batched', 'single']) {
          assert.equal((await c.get(`/${u}/index.html`)).text, HTML('home'), u)
          assert.equal((await c.get(`/${u}/site/css/app.css`)).text, 'body{color:red}', u)
        }
      },
    )

    it("carries the KV store's retired version, so a deleted key's versions never come back (decision 150)", { timeout: 120_000 }, async () => {
      const a = await start()
      const u = await a.user()
      const cookie = await a.login(u.username, u.password)
      const put = (c: string, key: string) => a.post('/svc_api/data/store', { cookie: c, json: { key, value: 1 } })
      const version = async (c: string, key: string) => {
        const r = await put(c, key)
        assert.equal(r.status, 200, r.text)
        return r.json.data.version as number
      }
      const exported = async (name: string) => {
        const dl = await a.get('/svc_api/me/export', { cookie })
        assert.equal(dl.status, 200)
        const f = path.join(tmp, `${name}.tar.gz`)
        fs.writeFileSync(f, dl.body)
        return f
      }
      const imported = async (file: string, as: string) => {
        const r = await importArchive(a.deps.db, a.deps.blobs, file, as)
        return a.login(as, r.password)
      }
      // 'gone' reaches version 3 and is deleted: the user's retired version is 3; 'kept' is at 1
      for (let i = 0; i < 3; i++) await version(cookie, 'gone')
      assert.equal(await version(cookie, 'kept'), 1)
      assert.equal((await a.request('DELETE', '/svc_api/data/delete?key=gone', { cookie })).status, 200)
      const file = await exported('retired')
      const { data } = await verifyArchive(file)
      assert.equal(data.kv_retired_version, 3)

      // the imported account creates 'gone' above every version it had; 'kept' keeps its own
      const copy = await imported(file, 'retired-copy')
      assert.equal(await version(copy, 'gone'), 4)
      assert.equal(await version(copy, 'kept'), 2)

      // every entry deleted: the counter still travels (no entries, version 3 retired)
      assert.equal((await a.request('DELETE', '/svc_api/data/delete?key=kept', { cookie })).status, 200)
      const empty = await exported('retired-empty')
      assert.equal((await verifyArchive(empty)).data.kv.length, 0)
      assert.equal(await version(await imported(empty, 'retired-empty'), 'kept'), 4)

      // an archive from before the field imports with the counter at 0, as before
      const old = path.join(tmp, 'retired-old.tar.gz')
      await forge(file, old, (d) => delete d.kv_retired_version)
      const oldCopy = await imported(old, 'retired-old')
      assert.equal(await version(oldCopy, 'gone'), 1)
      // a value that is no version is refused, and nothing is written
      for (const bad of [-1, 1.5, '3', null]) {
        const d = path.join(tmp, 'retired-bad.tar.gz')
        await forge(file, d, (x) => (x.kv_retired_version = bad))
        await assert.rejects(
          importArchive(a.deps.db, a.deps.blobs, d, 'retired-bad'),
          (e: Error) => e instanceof ExportError && /kv_retired_version/.test(e.message),
          String(bad),
        )
      }
      assert.equal(await a.deps.db.k.selectFrom('users').select('id').where('username', '=', 'retired-bad').executeTakeFirst(), undefined)

      // the new account's name follows sign-up's rule (decision 198): a name refused for new
      // accounts, a bad one, or one this configuration reserves; nothing is written
      for (const [as, reserved, refusal] of [
        ['wpad', new Set<string>(), /^"wpad" is reserved$/],
        ['Mta-Sts', new Set<string>(), /^"mta-sts" is reserved$/],
        ['x', new Set<string>(), /^username must be 2-32 characters/],
        ['ab--c', new Set<string>(), /^username must not end with "-"/],
        ['svc-host', new Set(['svc-host']), /^"svc-host" is reserved$/],
      ] as const) {
        await assert.rejects(importArchive(a.deps.db, a.deps.blobs, file, as, reserved), (e: Error) => e instanceof ExportError && refusal.test(e.message), as)
        assert.equal(await a.deps.db.k.selectFrom('users').select('id').where('username', '=', as.toLowerCase()).executeTakeFirst(), undefined, as)
      }
    })

    it("carries which project is the user site, which answers the imported account's origin root (decision 277)", { timeout: 120_000 }, async () => {
      const a = await start()
      const u = await a.user()
      const cookie = await a.login(u.username, u.password)
      for (const [p, text] of [
        ['home', 'my home'],
        ['blog', 'my blog'],
      ]) {
        assert.equal((await batchUpload(a, { key: u.key }, p, [{ filename: 'index.html', data: `<p>${text}</p>` }])).status, 200)
        assert.equal((await a.post(`/api/folders/${p}/publish`, { key: u.key })).status, 200)
      }
      assert.equal((await a.request('PUT', '/api/folders/blog/user_site', { key: u.key })).status, 200)
      const dl = await a.get('/svc_api/me/export', { cookie })
      assert.equal(dl.status, 200)
      const file = path.join(tmp, 'user-site.tar.gz')
      fs.writeFileSync(file, dl.body)
      assert.equal((await verifyArchive(file)).data.user_site, 'blog')
      /** The root of an account's own origin, over HTTP as a visitor asks it. */
      const root = (name: string) => a.get('/', { headers: { host: `${name}.localhost` } })
      const chosen = async (name: string) =>
        (
          await a.deps.db.k
            .selectFrom('folders')
            .innerJoin('users', 'users.id', 'folders.user_id')
            .select('folders.name')
            .where('users.username', '=', name)
            .where('folders.user_site', '=', 1)
            .execute()
        ).map((r) => r.name)

      await importArchive(a.deps.db, a.deps.blobs, file, 'us-copy')
      assert.deepEqual(await chosen('us-copy'), ['blog'])
      const r = await root('us-copy')
      assert.equal(r.status, 200, r.text)
      assert.equal(r.text, '<p>my blog</p>')

      // an archive from before the field imports as before: no user site, the root a 404
      const old = path.join(tmp, 'user-site-old.tar.gz')
      await forge(file, old, (d) => delete d.user_site)
      await importArchive(a.deps.db, a.deps.blobs, old, 'us-old')
      assert.deepEqual(await chosen('us-old'), [])
      assert.equal((await root('us-old')).status, 404)
      // none chosen (null): none imported
      const none = path.join(tmp, 'user-site-none.tar.gz')
      await forge(file, none, (d) => (d.user_site = null))
      await importArchive(a.deps.db, a.deps.blobs, none, 'us-none')
      assert.deepEqual(await chosen('us-none'), [])

      // a value naming no project of the archive is refused, and nothing is written
      for (const bad of ['gone', 'Blog', 1, true, ['blog']]) {
        const d = path.join(tmp, 'user-site-bad.tar.gz')
        await forge(file, d, (x) => (x.user_site = bad))
        await assert.rejects(
          importArchive(a.deps.db, a.deps.blobs, d, 'us-bad'),
          (e: Error) => e instanceof ExportError && /user_site must be null or the name of one of its folders/.test(e.message),
          String(bad),
        )
      }
      assert.equal(await a.deps.db.k.selectFrom('users').select('id').where('username', '=', 'us-bad').executeTakeFirst(), undefined)
    })

    it('carries public counters; an archive from before them imports its entries as no counter', { timeout: 120_000 }, async () => {
      const a = await start()
      const u = await a.user()
      const put = (key: string, public_incr: boolean) =>
        a.post('/svc_api/data/store', { key: u.key, json: { key, value: 1, data_type: 'number', public_incr } })
      assert.equal((await put('likes', true)).status, 200)
      assert.equal((await put('plain', false)).status, 200)
      const dl = await a.get('/svc_api/me/export', { cookie: await a.login(u.username, u.password) })
      assert.equal(dl.status, 200)
      const file = path.join(tmp, 'counters.tar.gz')
      fs.writeFileSync(file, dl.body)
      const flags = async (name: string) => {
        const id = (await a.deps.db.k.selectFrom('users').select('id').where('username', '=', name).executeTakeFirstOrThrow()).id
        const rows = await a.deps.db.k.selectFrom('kv_entries').select(['key', 'public_incr']).where('user_id', '=', id).orderBy('key').execute()
        return rows.map((r) => [r.key, Number(r.public_incr)])
      }
      await importArchive(a.deps.db, a.deps.blobs, file, 'counters-copy')
      assert.deepEqual(await flags('counters-copy'), [
        ['likes', 1],
        ['plain', 0],
      ])
      // the imported counter takes visitors' increments, as the original does
      assert.equal((await a.post('/svc_api/data/public/counters-copy/likes/incr')).json.data.value, 2)
      const old = path.join(tmp, 'counters-old.tar.gz')
      await forge(file, old, (d) => d.kv.forEach((r: Record<string, unknown>) => delete r.public_incr))
      await importArchive(a.deps.db, a.deps.blobs, old, 'counters-old')
      assert.deepEqual(await flags('counters-old'), [
        ['likes', 0],
        ['plain', 0],
      ])
    })

    it('imports an account past its site_bytes limit whole, and says so (decision 241)', { timeout: 120_000 }, async () => {
      const a = await start()
      const u = await a.user()
      const cookie = await a.login(u.username, u.password)
      const page = `<!doctype html><p>${'x'.repeat(3000)}</p>`
      assert.equal((await batchUpload(a, { key: u.key }, 'big', [{ filename: 'index.html', data: page }])).status, 200)
      assert.equal((await a.post('/api/folders/big/publish', { key: u.key })).status, 200)
      const dl = await a.get('/svc_api/me/export', { cookie })
      assert.equal(dl.status, 200)
      const file = path.join(tmp, 'site-bytes.tar.gz')
      fs.writeFileSync(file, dl.body)
      // within its limit: nothing said
      const within = await importFromFile(a.deps.db, a.deps.config, file, 'sb-within')
      assert.doesNotMatch(within.text, /site_bytes/)
      // exported with a limit below what its projects hold: imported whole, and the operator told
      const small = path.join(tmp, 'site-bytes-small.tar.gz')
      await forge(file, small, (d) => (d.user.limits = JSON.stringify({ site_bytes: 1000 })))
      const r = await importArchive(a.deps.db, a.deps.blobs, small, 'sb-over')
      assert.deepEqual(r.overQuota, [{ quota: 'site_bytes', used: Buffer.byteLength(page), limit: 1000 }])
      const cli = await importFromFile(a.deps.db, a.deps.config, small, 'sb-over-cli')
      assert.match(
        cli.text,
        new RegExp(
          `warning: its folder projects hold ${Buffer.byteLength(page)} bytes, over its site_bytes limit of 1000: .*svc user set sb-over-cli --limit site_bytes=N`,
        ),
      )
      assert.equal((await a.get('/sb-over/big/')).text, page)
    })

    it(
      "a deleted account's form slugs stay held: an import under its name takes them back, another gets new ones (decision 264)",
      { timeout: 120_000 },
      async () => {
        const a = await start()
        const u = await a.user()
        const admin = await a.user({ admin: true })
        const cookie = await a.login(u.username, u.password)
        const slug = `held-${u.username}`
        assert.equal((await a.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Contact', form_slug: slug } })).status, 200)
        const dl = await a.get('/svc_api/me/export', { cookie })
        assert.equal(dl.status, 200)
        const file = path.join(tmp, 'held-slugs.tar.gz')
        fs.writeFileSync(file, dl.body)
        const del = await a.request('DELETE', `/svc_api/admin/users/${u.username}`, { cookie: await a.login(admin.username, admin.password) })
        assert.equal(del.status, 200, del.text)
        assert.equal((await a.post(`/api/forms/submit/${slug}`, { json: { x: 1 } })).status, 404)
        // another account's import does not take the held slug
        const other = await importArchive(a.deps.db, a.deps.blobs, file, `${u.username}-x`)
        assert.ok(
          other.renamed.some((r) => r.startsWith(`form ${slug} -> `)),
          other.renamed.join(' | '),
        )
        // the operator restoring the account under its name takes it back: old pages post again
        const back = await importArchive(a.deps.db, a.deps.blobs, file, u.username)
        assert.deepEqual(
          back.renamed.filter((r) => r.startsWith('form ')),
          [],
        )
        assert.equal((await a.post(`/api/forms/submit/${slug}`, { json: { x: 1 } })).status, 200)
      },
    )

    it('an archive holding content taken down here is refused, also when the takedown comes while its blobs are stored', { timeout: 120_000 }, async () => {
      const s = await start()
      const owner = await s.user()
      const admin = await s.user({ admin: true })
      const cookie = await s.login(admin.username, admin.password)
      const page = HTML('wallet', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)
      const digest = crypto.createHash('sha256').update(page).digest('hex')
      assert.equal((await uploadFile(s, { key: owner.key }, 'seed.html', page)).status, 200)
      assert.equal((await uploadFile(s, { key: owner.key }, 'index.html', HTML('home'))).status, 200)
      const file = path.join(tmp, 'taken-down.tar.gz')
      assert.equal((await runCli(['export', owner.username, file], { env: cliEnv(s) })).code, 0)
      const user = (name: string) => s.deps.db.k.selectFrom('users').select('id').where('username', '=', name).executeTakeFirst()
      const refusal = /content taken down on this instance: pages\/seed\.html/

      // the import stops right after storing the page's blob (checked: not blocked yet), the
      // page is taken down, then the import goes on to its transaction
      const blobs = s.deps.blobs
      let reached!: () => void
      const stored = new Promise<void>((r) => (reached = r))
      let release!: () => void
      const released = new Promise<void>((r) => (release = r))
      const pausing: BlobStore = Object.assign(Object.create(blobs) as BlobStore, {
        putBatch: undefined,
        put: async (...a: Parameters<BlobStore['put']>) => {
          const out = await blobs.put(...a)
          if (out.digest === digest) {
            reached()
            await released
          }
          return out
        },
      })
      const imported = importArchive(s.deps.db, pausing, file, 'copy').then(
        () => null,
        (e: unknown) => e,
      )
      try {
        await stored
        const rep = await s.post('/svc_api/admin/reports', { cookie, json: { url: `${s.url}/${owner.username}/seed.html`, category: 'phishing' } })
        assert.equal(rep.status, 201, rep.text)
        assert.equal((await s.post(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, { cookie, json: {} })).status, 200)
      } finally {
        release()
      }
      const err = await imported
      assert.ok(err instanceof ExportError && refusal.test(err.message), String(err))
      assert.equal(await user('copy'), undefined, 'no user imported')

      // once taken down, refused before anything is stored, through the CLI too (whose blob
      // store asks no blocklist)
      const r = await runCli(['import', file, '--as', 'copy2'], { env: cliEnv(s) })
      assert.equal(r.code, 1, r.stdout + r.stderr)
      assert.match(r.stderr, refusal)
      assert.equal(await user('copy2'), undefined, 'no user imported')
      assert.equal((await s.get('/copy2/seed.html')).status, 404)
    })

    it('an image kept with its metadata is refused when its metadata-free form was taken down here, as an upload is', { timeout: 120_000 }, async () => {
      const s = await start()
      const admin = await s.user({ admin: true })
      const adminCookie = await s.login(admin.username, admin.password)
      const [owner, other] = await Promise.all([s.user(), s.user()])
      const cookieOf = async (u: typeof owner) => {
        await svc(s, 'grant', u.username, 'image-host')
        return s.login(u.username, u.password)
      }
      const upload = async (cookie: string, data: Buffer, keep: boolean) => {
        const form = imageForm([{ name: 'photo.jpg', data }], { keep_metadata: String(keep) })
        const r = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
        assert.equal(r.status, 200, r.text)
        return r.json.images[0].public_token as string
      }
      // one picture (pixels unique to this test) with a camera's EXIF: kept so by its owner
      const pixels = await makeImage('jpeg', { width: 12, height: 12, color: `#${crypto.randomBytes(3).toString('hex')}` })
      const exif = jpegSegment(0xffe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), exifTiff('CAMERA-A', 1)]))
      const photo = Buffer.concat([pixels.subarray(0, 2), exif, pixels.subarray(2)])
      await upload(await cookieOf(owner), photo, true)
      const file = path.join(tmp, 'kept-metadata.tar.gz')
      assert.equal((await runCli(['export', owner.username, file], { env: cliEnv(s) })).code, 0)
      // another user's upload of it without metadata is taken down: that form is blocked
      const token = await upload(await cookieOf(other), photo, false)
      const rep = await s.post('/svc_api/admin/reports', { cookie: adminCookie, json: { url: `${s.url}/svc-img/pub/${token}`, category: 'copyright' } })
      assert.equal(rep.status, 201, rep.text)
      assert.equal((await s.post(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, { cookie: adminCookie, json: {} })).status, 200)

      const err = await importArchive(s.deps.db, s.deps.blobs, file, 'kept-copy').then(
        () => null,
        (e: unknown) => e,
      )
      assert.ok(err instanceof ExportError && /content taken down on this instance: images\//.test(String(err.message)), String(err))
      assert.equal(await s.deps.db.k.selectFrom('users').select('id').where('username', '=', 'kept-copy').executeTakeFirst(), undefined, 'no user imported')
    })
  })
}
