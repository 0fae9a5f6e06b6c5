import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import tar from 'tar-stream'
import { ENGINES, startServer, type Res, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, HTML, batchUpload, uploadFile } from '../support/hosting.js'
import { imageForm, makeImage, svc } from '../support/images.js'
import { runCli } from './run.js'
import { assertUsageExact } from '../support/quota-race.js'
import { ExportError, importArchive } from '../../src/features/export/archive.js'

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

        // import into a fresh instance: everything a visitor or the owner sees is the same
        const b = await start()
        const im = await runCli(['import', file], { env: cliEnv(b) })
        assert.equal(im.code, 0, im.stderr)
        const password = /password: (\S+)/.exec(im.stdout)?.[1]
        assert.ok(password, im.stdout)
        for (const u of urls) assert.deepEqual(seen(await b.get(u)), before.get(u), u)
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
          assert.deepEqual(strip(y.json), strip(x.json), u)
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

        // a second import under another name: links and slugs taken on this instance get new ones
        const again = await runCli(['import', file, '--as', `${alice.username}-2`], { env: cliEnv(b) })
        assert.equal(again.code, 0, again.stderr)
        assert.match(again.stdout, /renamed: form contact-x1 -> contact-x1-/)
        assert.equal((await b.get(`/${alice.username}-2/site/`)).status, 200)
        const exists = await runCli(['import', file], { env: cliEnv(b) })
        assert.equal(exists.code, 1)
        assert.match(exists.stderr, /exists already/)

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
          ['not gzip', async (d) => fs.writeFileSync(d, 'plain text'), /not a gzip'd tar archive|unreadable archive/],
          ['truncated', async (d) => fs.writeFileSync(d, fs.readFileSync(file).subarray(0, 200)), /unreadable archive|not a gzip'd tar archive/],
        ]
        for (const [i, [what, make, message]] of bad.entries()) {
          const d = path.join(tmp, `bad-${what.replace(/\W+/g, '-')}.tar.gz`)
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
      },
    )
  })
}
