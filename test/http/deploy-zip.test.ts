import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import tls from 'node:tls'
import { createRequire } from 'node:module'
import { once } from 'node:events'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS } from '../support/hosting.js'
import { expectError } from '../support/errors.js'
import { manifestOf, postArchive, tarOf } from '../support/deploys.js'
import { postZip, zipOf, type ZipEntry } from '../support/zips.js'
import { until } from '../support/webhooks.js'

const DEPLOY_MAX = 2 * 1024 * 1024
const FILE_MAX = 1024 * 1024

/** Every blob the store holds. */
async function blobSet(s: TestServer): Promise<string[]> {
  const out: string[] = []
  for await (const b of s.deps.blobs.list()) out.push(b.digest)
  return out.sort()
}

for (const engine of ENGINES) {
  describe(`zip deploys [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DEPLOY_MAX_BYTES: String(DEPLOY_MAX), MAX_UPLOAD_BYTES: String(FILE_MAX) } })
    })
    after(() => s.close())

    const spool = () => path.join(s.deps.config.dataDir, 'tmp', 'zip-deploys')
    const spooled = () => (fs.existsSync(spool()) ? fs.readdirSync(spool()) : [])

    it("deploys a zip's files as the whole site, live at once; dotfiles and __MACOSX/ left out", async () => {
      const u = await s.user()
      const big = crypto.randomBytes(FILE_MAX - 10)
      const zip = zipOf([
        { name: 'index.html', data: HTML('zipped home') },
        { name: 'css/', data: '' },
        { name: 'css/s.css', data: 'body { color: red }', method: 0 },
        { name: 'img/big.bin', data: big },
        { name: 'copy.txt', data: 'same' },
        { name: 'again.txt', data: 'same' },
        { name: '.env', data: 'SECRET=1' },
        { name: '.git/config', data: '[core]' },
        { name: '.well-known/security.txt', data: 'Contact: mailto:a@example.com' },
        { name: '__MACOSX/._index.html', data: 'resource fork' },
      ])
      const r = await postZip(s, u.key, 'zipped', zip, '?message=' + encodeURIComponent('from a zip'))
      assert.equal(r.status, 201, r.text)
      assert.equal(r.json.deploy.file_count, 6)
      assert.equal(r.json.deploy.is_live, true)
      assert.equal(r.json.uploaded_files, 5)
      assert.match(r.json.website_url, /\/zipped\/$/)
      assert.equal((await s.get(`/${u.username}/zipped/`)).text, HTML('zipped home'))
      const css = await s.get(`/${u.username}/zipped/css/s.css`)
      assert.match(String(css.header('content-type')), /^text\/css; charset=utf-8/)
      assert.ok((await s.get(`/${u.username}/zipped/img/big.bin`)).body.equals(big))
      assert.equal((await s.get(`/${u.username}/zipped/.well-known/security.txt`)).status, 200)
      assert.equal((await s.get(`/${u.username}/zipped/.env`)).status, 404)
      const list = (await s.get('/api/folders/zipped/deploys', { key: u.key })).json
      assert.equal(list.deploys.length, 1)
      assert.equal(list.deploys[0].message, 'from a zip')
      assert.equal(list.deploys[0].source, 'api')
      const files = (await s.get('/api/folders/zipped/files', { key: u.key })).json.files.map((f: { path: string }) => f.path).sort()
      assert.deepEqual(files, ['.well-known/security.txt', 'again.txt', 'copy.txt', 'css/s.css', 'img/big.bin', 'index.html'])
      assert.deepEqual(spooled(), [])
    })

    it('inflates each file once: no second read of the zip to store it', async () => {
      const u = await s.user()
      const entries: ZipEntry[] = [
        { name: 'index.html', data: HTML('inflated once') },
        { name: 'a.js', data: 'let a = 1;'.repeat(5000) },
        { name: 'big.bin', data: crypto.randomBytes(FILE_MAX - 10) },
        { name: 'copy.js', data: 'let a = 1;'.repeat(5000) },
        { name: 'stored.txt', data: 'not deflated', method: 0 },
      ]
      // yauzl makes one raw inflate stream per deflated entry it reads, from the zlib module
      // object it required: counted there (a read-only but configurable property)
      const zlib = createRequire(import.meta.url)('node:zlib') as typeof import('node:zlib')
      const real = Object.getOwnPropertyDescriptor(zlib, 'createInflateRaw')!
      let inflates = 0
      Object.defineProperty(zlib, 'createInflateRaw', {
        ...real,
        value: (...args: Parameters<typeof zlib.createInflateRaw>) => {
          inflates++
          return (real.value as typeof zlib.createInflateRaw)(...args)
        },
      })
      let r
      try {
        r = await postZip(s, u.key, 'once', zipOf(entries))
      } finally {
        Object.defineProperty(zlib, 'createInflateRaw', real)
      }
      assert.equal(r.status, 201, r.text)
      assert.equal(inflates, 4, 'one inflate per deflated file')
      for (const e of entries) assert.ok((await s.get(`/${u.username}/once/${e.name}`)).body.equals(Buffer.from(e.data!)), e.name)
      assert.equal(r.json.uploaded_files, 4)
      assert.deepEqual(spooled(), [])
    })

    it('a zip of one folder deploys that folder; application/x-zip-compressed too', async () => {
      const u = await s.user()
      const zip = zipOf([
        { name: 'site/', data: '' },
        { name: 'site/index.html', data: HTML('inside the folder') },
        { name: 'site/a/b.html', data: HTML('b') },
        { name: '__MACOSX/site/._index.html', data: 'x' },
        { name: '.DS_Store', data: 'x' },
      ])
      const r = await postZip(s, u.key, 'folder', zip, '', 'application/x-zip-compressed')
      assert.equal(r.status, 201, r.text)
      assert.equal((await s.get(`/${u.username}/folder/`)).text, HTML('inside the folder'))
      assert.equal((await s.get(`/${u.username}/folder/a/b.html`)).text, HTML('b'))
      assert.equal(r.json.deploy.file_count, 2)
      // a root index.html keeps the root, folders and all
      const kept = zipOf([
        { name: 'index.html', data: HTML('root') },
        { name: 'site/index.html', data: HTML('sub') },
      ])
      assert.equal((await postZip(s, u.key, 'folder', kept)).status, 201)
      assert.equal((await s.get(`/${u.username}/folder/site/`)).text, HTML('sub'))
    })

    it('?preview=true makes a preview; the query is checked, and the tar form takes none', async () => {
      const u = await s.user()
      assert.equal((await postZip(s, u.key, 'pv', zipOf([{ name: 'index.html', data: HTML('v1') }]))).status, 201)
      const r = await postZip(s, u.key, 'pv', zipOf([{ name: 'index.html', data: HTML('v2') }]), '?preview=true')
      assert.equal(r.status, 201, r.text)
      assert.equal(r.json.deploy.is_preview, true)
      assert.equal((await s.get(`/${u.username}/pv/`)).text, HTML('v1'))
      assert.equal((await s.get(`/${u.username}/pv@${r.json.deploy.id}/`)).text, HTML('v2'))
      const z = zipOf([{ name: 'index.html', data: HTML('v3') }])
      expectError(await postZip(s, u.key, 'pv', z, '?preview=yes'), 400, 1106)
      expectError(await postZip(s, u.key, 'pv', z, '?draft=true'), 400, 1106)
      expectError(await postZip(s, u.key, 'pv', z, '?message=a&message=b'), 400, 1106)
      expectError(await postZip(s, u.key, 'pv', z, '?message=' + 'x'.repeat(501)), 400, 1106)
      const site = { 'index.html': HTML('tar') }
      const tar = await tarOf([manifestOf(site), { name: 'index.html', data: site['index.html'] }])
      const q = await s.post('/api/folders/pv/deploys?preview=true', { key: u.key, body: tar, headers: { 'content-type': 'application/x-tar' } })
      expectError(q, 400, 1106)
      assert.equal((await s.get(`/${u.username}/pv/`)).text, HTML('v1'))
      assert.equal((await postArchive(s, u.key, 'pv', tar)).status, 201)
      assert.equal((await s.get('/api/folders/pv/deploys', { key: u.key })).json.deploys.length, 3)
    })

    it('a client gone while the zip is sent leaves no spooled file, and changes nothing', async () => {
      const u = await s.user()
      const zip = zipOf([
        { name: 'index.html', data: HTML('never') },
        { name: 'r.bin', data: crypto.randomBytes(512 * 1024), method: 0 },
      ])
      const sock = tls.connect({ host: '127.0.0.1', port: Number(new URL(s.url).port), rejectUnauthorized: false })
      sock.on('error', () => {})
      await once(sock, 'secureConnect')
      sock.write(
        `POST /api/folders/gone/deploys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${u.key}\r\nContent-Type: application/zip\r\nContent-Length: ${zip.length}\r\n\r\n`,
      )
      sock.write(zip.subarray(0, zip.length / 2))
      await until(() => spooled().length > 0, 5000, 'the zip to be spooled')
      sock.destroy()
      await until(() => spooled().length === 0, 5000, 'the spooled zip to be removed')
      assert.equal((await s.get('/api/folders/gone/deploys', { key: u.key })).status, 403)
    })

    const index: ZipEntry = { name: 'index.html', data: HTML('bad') }
    const good = zipOf([index, { name: 'other.txt', data: 'other' }])
    const refusals: Array<[string, () => Buffer, number, number]> = [
      ['not a zip', () => Buffer.from(HTML('not a zip')), 400, 1326],
      ['an empty body', () => Buffer.alloc(0), 400, 1326],
      ['a truncated zip', () => good.subarray(0, good.length - 30), 400, 1326],
      ['a zip64 locator pointing at no zip64 record', () => zipOf([index], { badZip64: true }), 400, 1326],
      ['a ".." entry (zip slip)', () => zipOf([index, { name: 'a/../../evil.html', data: 'x' }]), 400, 1320],
      ['an absolute entry', () => zipOf([index, { name: '/etc/passwd', data: 'x' }]), 400, 1321],
      ['a backslash entry', () => zipOf([index, { name: '..\\evil.html', data: 'x' }]), 400, 1332],
      ['a symbolic link', () => zipOf([index, { name: 'link', data: '/etc/passwd', mode: 0o120777 }]), 400, 1322],
      ['a FIFO', () => zipOf([index, { name: 'fifo', data: '', mode: 0o010644 }]), 400, 1324],
      ['an encrypted entry', () => zipOf([index, { name: 'secret.txt', data: 'x', encrypted: true }]), 400, 1337],
      ['a name twice', () => zipOf([index, { name: 'a.txt', data: 'one' }, { name: 'a.txt', data: 'two' }]), 400, 1329],
      ['a name twice after NFC', () => zipOf([index, { name: 'caf\u00e9.txt', data: 'one' }, { name: 'cafe\u0301.txt', data: 'two' }]), 400, 1329],
      ['a file that is also a folder', () => zipOf([index, { name: 'a', data: 'one' }, { name: 'a/b', data: 'two' }]), 400, 1332],
      [
        'a bomb that declares its size',
        () => zipOf([index, { name: 'zeros.bin', data: Buffer.alloc(FILE_MAX) }, { name: 'more.bin', data: Buffer.alloc(FILE_MAX) }]),
        413,
        1328,
      ],
      ['a bomb that lies about its size', () => zipOf([index, { name: 'zeros.bin', data: Buffer.alloc(64 * 1024 * 1024), declaredSize: 1000 }]), 400, 1326],
      ['a file over MAX_UPLOAD_BYTES', () => zipOf([index, { name: 'big.bin', data: Buffer.alloc(FILE_MAX + 1) }]), 413, 1333],
      ['too many entries', () => zipOf([index], { entryCount: 100_001 }), 413, 1328],
      ['a body over the zip limit', () => zipOf([index, { name: 'r.bin', data: crypto.randomBytes(DEPLOY_MAX + 1024 * 1024 + 1), method: 0 }]), 413, 1328],
      [
        'no root index.html',
        () =>
          zipOf([
            { name: 'a/index.html', data: 'x' },
            { name: 'b/index.html', data: 'y' },
          ]),
        400,
        1313,
      ],
    ]
    it('refuses each bad zip with its own code, changing and storing nothing', async () => {
      const u = await s.user()
      assert.equal((await postZip(s, u.key, 'safe', zipOf([{ name: 'index.html', data: HTML('safe v1') }]))).status, 201)
      const blobs = await blobSet(s)
      for (const [what, make, status, code] of refusals) {
        const r = await postZip(s, u.key, 'safe', make())
        expectError(r, status, code)
        assert.equal((await s.get(`/${u.username}/safe/`)).text, HTML('safe v1'), what)
        assert.equal((await s.get('/api/folders/safe/deploys', { key: u.key })).json.deploys.length, 1, what)
        assert.deepEqual(await blobSet(s), blobs, `${what}: no blob stored`)
        assert.deepEqual(spooled(), [], `${what}: the spooled zip is removed`)
        expectError(await postZip(s, u.key, `new-${code}`, make()), status, code)
      }
      assert.equal((await s.get('/api/folders/new-1320/deploys', { key: u.key })).status, 403)
    })
  })
}
