import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { ENGINES, startServer, multipart, type Res, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { expectError, expectErrorInBoth, rowLabel } from '../support/errors.js'

const ISO_LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex')
const sha = (b: string | Buffer) => crypto.createHash('sha256').update(b).digest('hex')

/** Every file under a directory, relative. */
function walk(dir: string, base = dir): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? walk(p, base) : [path.relative(base, p)]
  })
}

/** Path payloads from the checklist (B1/B2), as multipart file names. */
const EVIL_NAMES = [
  '../x',
  '..\\x',
  '/etc/passwd',
  'C:\\x',
  'C:x',
  '\\\\srv\\s',
  'a\u0000.html',
  '..%2fx',
  '%2e%2e/x',
  '%2e%2e%2fx',
  '%252e%252e%252f',
  '..%5cx',
  '%c0%ae%c0%ae/',
  '．．／x',
  'a//b',
  './a',
  'a/./b',
  'a/../b',
  'x'.repeat(256),
  Array.from({ length: 1000 }, () => 'd').join('/') + '/f',
  'a\u202etxt.html',
  'a\u0001b',
  'a/',
  '',
]

for (const engine of ENGINES) {
  describe(`folder projects [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      u = await s.user()
    })
    after(() => s.close())

    const files = (folderPath: string, auth = { key: u.key }) => s.get(`/api/folders/${folderPath}/files`, auth)
    const paths = (r: Res) => r.json.files.map((f: any) => f.path)

    it('keeps directories in multipart file names (filename= and filename*=) and creates the project', async () => {
      const r = await batchUpload(s, { key: u.key }, 'site', [
        { filename: 'index.html', data: HTML('home') },
        { filename: 'css/site.css', data: 'body{color:red}' },
        { filenameStar: 'js%2Fapp%20one.js', data: 'console.log(1)' },
        { filename: 'img/deep/dir/p.png', data: PNG },
      ])
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.json, { success: true, message: r.json.message, uploaded_count: 4, failed_count: 0, failed_files: [], errors: [], warnings: [] })
      const l = await files('site')
      assert.equal(l.status, 200)
      assert.deepEqual(Object.keys(l.json).sort(), ['files', 'folder_path', 'recursive', 'success', 'total_files'])
      assert.deepEqual(paths(l), ['css/site.css', 'img/deep/dir/p.png', 'index.html', 'js/app one.js'])
      assert.equal(l.json.total_files, 4)
      assert.equal(l.json.folder_path, 'site')
      assert.equal(l.json.recursive, true)
      const css = l.json.files[0]
      assert.deepEqual(Object.keys(css).sort(), ['modified', 'name', 'path', 'size', 'type', 'url'])
      assert.deepEqual([css.type, css.name, css.size], ['file', 'site.css', 15])
      assert.match(css.modified, ISO_LOCAL)
      assert.equal(css.url, `/${u.username}/site/css/site.css`)
      assert.equal(l.json.files[3].url, `/${u.username}/site/js/app%20one.js`)
    })

    it('answers a conflict: 400 with errors[] when every file exists, 200 with failed_count when some do, overwrites on request', async () => {
      await batchUpload(s, { key: u.key }, 'conf', [
        { filename: 'a.txt', data: 'a1' },
        { filename: 'b.txt', data: 'b1' },
      ])
      const all = await batchUpload(s, { key: u.key }, 'conf', [
        { filename: 'a.txt', data: 'a2' },
        { filename: 'b.txt', data: 'b2' },
      ])
      assert.equal(all.status, 400, all.text)
      assert.equal(all.json.success, false)
      assert.equal(all.json.error_code, 1312)
      assert.equal(all.json.uploaded_count, 0)
      assert.equal(all.json.failed_count, 2)
      assert.deepEqual(all.json.failed_files, ['a.txt', 'b.txt'])
      for (const e of all.json.errors) {
        assert.deepEqual(Object.keys(e).sort(), ['error_code', 'file', 'message', 'type'])
        assert.equal(e.type, 'duplicate')
        assert.equal(e.error_code, 1312)
      }
      const explicitFalse = await batchUpload(s, { key: u.key }, 'conf', [{ filename: 'a.txt', data: 'a2' }], false)
      assert.equal(explicitFalse.status, 400)
      const partial = await batchUpload(s, { key: u.key }, 'conf', [
        { filename: 'a.txt', data: 'a2' },
        { filename: 'c.txt', data: 'c1' },
      ])
      assert.equal(partial.status, 200, partial.text)
      assert.equal(partial.json.success, true)
      assert.equal(partial.json.uploaded_count, 1)
      assert.equal(partial.json.failed_count, 1)
      assert.deepEqual(partial.json.failed_files, ['a.txt'])
      assert.equal(partial.json.errors[0].type, 'duplicate')
      const read = async (p: string) => (await s.get(`/api/folders/conf/file/${p}`, { key: u.key })).json.content
      assert.equal(await read('a.txt'), 'a1', 'a conflict leaves the file as it was')
      const over = await batchUpload(s, { key: u.key }, 'conf', [{ filename: 'a.txt', data: 'a3' }], true)
      assert.equal(over.status, 200)
      assert.equal(over.json.uploaded_count, 1)
      assert.equal(await read('a.txt'), 'a3')
      const bad = await batchUpload(s, { key: u.key }, 'conf', [{ filename: 'd.txt', data: 'd' }], 'maybe')
      assert.equal(bad.status, 400)
      assert.equal(bad.json.error_code, 1106)
      assert.equal(bad.json.message, '参数错误：overwrite_files 须为 true 或 false')
      const badEn = await batchUpload(s, { key: u.key }, 'conf', [{ filename: 'd.txt', data: 'd' }], 'maybe', { 'accept-language': 'en' })
      assert.equal(badEn.json.message, 'Invalid parameter: overwrite_files must be true or false')
      const none = multipart([{ name: 'overwrite_files', data: 'true' }])
      const empty = await s.post('/api/folders/conf/batch_upload', { key: u.key, body: none.body, headers: { 'content-type': none.contentType } })
      assert.equal(empty.status, 400)
      assert.equal(empty.json.error_code, 1101)
    })

    it('never lets a path be both a file and a folder, in one batch or across batches', async () => {
      const files = async () => (await s.get('/api/folders/tree/files', { key: u.key })).json.files.map((f: { path: string }) => f.path)
      const en = { 'accept-language': 'en' }
      const first = await batchUpload(
        s,
        { key: u.key },
        'tree',
        [
          { filename: 'docs/index.html', data: 'd' },
          { filename: 'a.txt', data: 'a' },
          { filename: 'docs', data: 'a file named as the folder' },
        ],
        undefined,
        en,
      )
      assert.equal(first.status, 200, first.text)
      assert.deepEqual(first.json.failed_files, ['docs'])
      assert.equal(first.json.errors[0].type, 'duplicate')
      assert.equal(first.json.errors[0].error_code, 1312)
      assert.match(first.json.errors[0].message, /docs is a folder of this project, so it cannot also be a file/)
      for (const overwrite of [false, true]) {
        const later = await batchUpload(
          s,
          { key: u.key },
          'tree',
          [
            { filename: 'docs', data: 'x' },
            { filename: 'a.txt/b.txt', data: 'x' },
          ],
          overwrite,
          en,
        )
        assert.equal(later.status, 400, later.text)
        assert.equal(later.json.error_code, 1312)
        assert.deepEqual(later.json.failed_files, ['docs', 'a.txt/b.txt'])
        assert.match(later.json.errors[1].message, /a\.txt is a file of this project, so it cannot also be a folder/)
        // the answer's message says what happened to each, not that they all exist
        assert.equal(
          later.json.message,
          'Conflicting files: docs is a folder of this project, so it cannot also be a file; a.txt is a file of this project, so it cannot also be a folder (of a.txt/b.txt)',
        )
      }
      const zh = await batchUpload(
        s,
        { key: u.key },
        'tree',
        [
          { filename: 'a.txt', data: 'x' },
          { filename: 'docs', data: 'x' },
        ],
        false,
      )
      expectError(zh, 400, 1312)
      assert.equal(zh.json.message, '文件冲突：文件已存在：a.txt；docs 是本项目的文件夹，不能同时是文件')
      // only files that exist: the message names them as before
      const exist = await batchUpload(s, { key: u.key }, 'tree', [{ filename: 'a.txt', data: 'x' }], false, en)
      expectError(exist, 400, 1312)
      assert.equal(exist.json.message, 'File already exists: a.txt')
      assert.deepEqual(await files(), ['a.txt', 'docs/index.html'])
      // an existing file is still overwritten, and deeper new paths in an existing folder are fine
      const ok = await batchUpload(
        s,
        { key: u.key },
        'tree',
        [
          { filename: 'a.txt', data: 'a2' },
          { filename: 'docs/deep/x.html', data: 'x' },
        ],
        true,
      )
      assert.equal(ok.json.uploaded_count, 2, ok.text)
    })

    it("says each failed file's reason in the answer's language and names the file as sent", async () => {
      await batchUpload(s, { key: u.key }, 'langs', [
        { filename: 'a.txt', data: 'a' },
        { filename: 'docs/index.html', data: 'd' },
      ])
      const CJK = /[\u4e00-\u9fff]/
      const nfd = 'e\u0301.txt'
      for (const lang of ['zh', 'en'] as const) {
        const sent = ['ok.txt', 'a.txt', '../x', 'b.txt', 'b.txt', 'docs', 'c\u202e.txt', nfd, nfd.normalize('NFC')]
        const r = await batchUpload(
          s,
          { key: u.key },
          'langs',
          sent.map((filename) => ({ filename, data: filename })),
          undefined,
          { 'accept-language': lang === 'en' ? 'en-US,en;q=0.9' : 'zh-CN' },
        )
        assert.equal(r.status, 200, r.text)
        assert.equal(CJK.test(r.json.message), lang === 'zh', r.json.message)
        const failed = ['a.txt', '../x', 'b.txt', 'docs', 'c\u202e.txt', nfd.normalize('NFC')]
        assert.deepEqual([...r.json.failed_files].sort(), failed.sort(), 'the names as the request sent them')
        assert.deepEqual(
          r.json.errors.map((e: { file: string }) => e.file),
          r.json.failed_files,
        )
        for (const e of r.json.errors) {
          assert.deepEqual(Object.keys(e).sort(), ['error_code', 'file', 'message', 'type'])
          assert.equal(CJK.test(e.message), lang === 'zh', `${lang}: ${e.message}`)
          if (lang === 'zh') assert.doesNotMatch(e.message, /[a-z]{4,} [a-z]{2,}/, `no English words: ${e.message}`)
        }
        const by = (f: string) => r.json.errors.find((e: { file: string }) => e.file === f).message
        assert.equal(by('a.txt'), lang === 'zh' ? '文件已存在：a.txt' : 'File already exists: a.txt')
        assert.match(by('../x'), lang === 'zh' ? /^路径无效：/ : /^Invalid path: /)
        assert.match(by('docs'), /docs/)
        // the second é.txt (NFC) is the first one (NFD) again: it names the stored path
        assert.match(by(nfd.normalize('NFC')), new RegExp(nfd.normalize('NFC')))
        await s.request('DELETE', `/api/folders/langs/file/ok.txt`, { key: u.key })
        await s.request('DELETE', `/api/folders/langs/file/${encodeURIComponent(nfd.normalize('NFC'))}`, { key: u.key })
        await s.request('DELETE', `/api/folders/langs/file/b.txt`, { key: u.key })
      }
      // nothing stored: the answer's own message is in its language too, with the reason
      for (const lang of ['zh', 'en'] as const) {
        const r = await batchUpload(s, { key: u.key }, 'langs', [{ filename: '../x', data: 'x' }], undefined, { 'accept-language': lang })
        expectError(r, 400, 1110)
        assert.equal(CJK.test(r.json.message), lang === 'zh', r.json.message)
        if (lang === 'zh') assert.doesNotMatch(r.json.message, /[a-z]{4,} [a-z]{2,}/, r.json.message)
        assert.equal(CJK.test(r.json.errors[0].message), lang === 'zh', r.json.errors[0].message)
      }
    })

    it('skips the part of a file input left empty (no file name, no bytes); only such parts: 400 / 1101, nothing created', async () => {
      const empty = { filename: '', data: '' }
      const r = await batchUpload(s, { key: u.key }, 'blanks', [empty, { filename: 'index.html', data: HTML('home') }, empty, { filename: 'a.txt', data: 'a' }])
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.json, { success: true, message: r.json.message, uploaded_count: 2, failed_count: 0, failed_files: [], errors: [], warnings: [] })
      assert.deepEqual(paths(await files('blanks')), ['a.txt', 'index.html'])
      const only = await batchUpload(s, { key: u.key }, 'blanks-only', [empty, empty])
      expectError(only, 400, 1101)
      expectError(await files('blanks-only'), 403, 1312)
    })

    it('refuses every traversal payload as a failed file, stores nothing outside the project', async () => {
      const before = new Set(walk(s.dataDir))
      const r = await batchUpload(s, { key: u.key }, 'evil', [
        { filename: 'ok.txt', data: 'fine' },
        ...EVIL_NAMES.map((n) => ({ filename: n, data: 'x' })),
        ...EVIL_NAMES.filter((n) => n !== '').map((n) => ({ filenameStar: encodeURIComponent(n), data: 'x' })),
      ])
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.uploaded_count, 1)
      assert.equal(r.json.failed_count, EVIL_NAMES.length * 2 - 1)
      for (const e of r.json.errors) assert.equal(e.error_code, 1110, JSON.stringify(e))
      assert.deepEqual(paths(await files('evil')), ['ok.txt'])
      // every new file under DATA_DIR is a content-addressed blob (or the database's own files)
      for (const f of walk(s.dataDir)) {
        if (before.has(f)) continue
        assert.match(f, /^(blobs\/[0-9a-f]{2}\/[0-9a-f]{64}|svc\.db.*)$/, f)
      }
    })

    describe('refuses bad {folder_path} and {filepath} URL forms with 400/403/404, never 500', () => {
      before(async () => {
        await batchUpload(s, { key: u.key }, 'safe', [
          { filename: 'index.html', data: HTML('safe') },
          { filename: 'sub/a.txt', data: 'a' },
        ])
      })
      /** A bad path in a URL: 400, 403 or 404 in the error shape, and no file content. */
      const expectPathRefused = (r: Res, url: string) => {
        // a dot segment the client resolves can leave /api/folders/{name}, a DELETE-only path: 405
        const onProject = new URL(url, 'https://x').pathname.split('/').length === 4
        assert.ok([400, 403, 404].includes(r.status) || (onProject && r.status === 405), `${url}: ${r.status} ${r.text}`)
        assert.equal(r.json?.success, false, url)
        assert.ok(!r.text.includes('"content"'), url)
      }
      const payloads = [
        '..',
        '..%2fx',
        '%2e%2e',
        '%2e%2e%2fx',
        '%252e%252e%252f',
        '..%5cx',
        '..%5C',
        '%2Fetc%2Fpasswd',
        'C%3A%5Cx',
        '%5C%5Csrv%5Cs',
        'a%00.html',
        '%c0%ae%c0%ae',
        '%EF%BC%8E%EF%BC%8E%EF%BC%8Fx',
        'x'.repeat(256),
        '%E0%A4%A',
        '.',
        'a%0Ab',
      ]
      for (const p of payloads) {
        it(`${rowLabel(p, 60)}: as a project, a file and a sub-folder file, 400/403/404`, async () => {
          for (const url of [`/api/folders/${p}/files`, `/api/folders/safe/file/${p}`, `/api/folders/safe/file/sub/${p}`, `/api/folders/${p}/publish`]) {
            expectPathRefused(await s.request(url.endsWith('publish') ? 'POST' : 'GET', url, { key: u.key }), url)
          }
        })
      }
      it('a file path 1000 segments deep: 400', async () => {
        const deep = await s.get(`/api/folders/safe/file/${Array.from({ length: 1000 }, () => 'd').join('/')}`, { key: u.key })
        assert.equal(deep.status, 400)
      })
      it('an empty segment (sub//a.txt): 400', async () => {
        const dbl = await s.get('/api/folders/safe/file/sub//a.txt', { key: u.key })
        assert.equal(dbl.status, 400)
      })
    })

    it('reads files: text content, null for binary, omitted over 5 MB; 404 / 403 for missing ones', async () => {
      const big = Buffer.alloc(5 * 1024 * 1024 + 1, 0x61)
      await batchUpload(s, { key: u.key }, 'read', [
        { filename: 'docs/readme.md', data: '# 标题\n' },
        { filename: 'p.png', data: PNG },
        { filename: 'big.txt', data: big },
        { filename: 'exact.txt', data: big.subarray(1) },
      ])
      const t = await s.get('/api/folders/read/file/docs/readme.md', { key: u.key })
      assert.equal(t.status, 200, t.text)
      assert.deepEqual(Object.keys(t.json).sort(), ['content', 'folder_path', 'modified', 'name', 'path', 'size', 'success'])
      assert.equal(t.json.content, '# 标题\n')
      assert.equal(t.json.name, 'readme.md')
      assert.equal(t.json.path, 'docs/readme.md')
      assert.equal(t.json.size, Buffer.byteLength('# 标题\n'))
      assert.equal(typeof t.json.modified, 'number')
      assert.ok(Math.abs(t.json.modified - Date.now() / 1000) < 600)
      assert.equal(t.json.folder_path, 'read')
      const p = await s.get('/api/folders/read/file/p.png', { key: u.key })
      assert.equal(p.json.content, null)
      const b = await s.get('/api/folders/read/file/big.txt', { key: u.key })
      assert.equal(b.status, 200)
      assert.ok(!('content' in b.json), 'content omitted over 5 MB')
      assert.equal(b.json.size, big.length)
      const e = await s.get('/api/folders/read/file/exact.txt', { key: u.key })
      assert.equal(e.json.content.length, 5 * 1024 * 1024)
      const missing = await s.get('/api/folders/read/file/nope.txt', { key: u.key })
      assert.equal(missing.status, 404)
      assert.equal(missing.json.error_code, 1301)
      const noFolder = await s.get('/api/folders/nothing-here/file/a.txt', { key: u.key })
      assert.equal(noFolder.status, 403)
      assert.equal(noFolder.json.error_code, 1312)
    })

    describe("answers 403 / 1312 (format A with details.info) for a missing or another user's project", () => {
      let other: Awaited<ReturnType<TestServer['user']>>
      before(async () => {
        other = await s.user()
        await batchUpload(s, { key: other.key }, 'theirs', [{ filename: 'index.html', data: HTML('t') }])
      })
      const cases: Array<[string, () => Promise<Res>]> = [
        ['list a missing project', () => files('does-not-exist')],
        ['list theirs by its bare name', () => files('theirs')],
        ['list user/project', () => files(`${other.username}/theirs`)],
        ['list user%2Fproject', () => files(`${other.username}%2Ftheirs`)],
        ['read a file of user/project', () => s.get(`/api/folders/${other.username}/theirs/file/index.html`, { key: u.key })],
        ['publish user/project', () => s.post(`/api/folders/${other.username}/theirs/publish`, { key: u.key })],
        ['publish theirs by its bare name', () => s.post('/api/folders/theirs/publish', { key: u.key })],
        ['batch upload into user/project', () => batchUpload(s, { key: u.key }, `${other.username}/theirs`, [{ filename: 'x.txt', data: 'x' }])],
      ]
      for (const [label, run] of cases) {
        it(`${label}: 403 / 1312`, async () => {
          const r = await run()
          expectError(r, 403, 1312)
          assert.equal(r.json.error_type, 'FILE_ERROR')
          assert.equal(typeof r.json.details?.info, 'string')
        })
      }
      it('details.info names the project in the language asked, for the project routes and the deploy routes', async () => {
        for (const [route, name] of [
          [(h: Record<string, string>) => s.get('/api/folders/does-not-exist/files', { key: u.key, headers: h }), 'does-not-exist'],
          [(h: Record<string, string>) => s.get(`/api/folders/${other.username}/theirs/deploys`, { key: u.key, headers: h }), `${other.username}/theirs`],
        ] as const) {
          const zh = await route({})
          expectError(zh, 403, 1312)
          assert.equal(zh.json.details.info, `文件夹项目 "${name}" 不存在或不属于当前用户`)
          const en = await route({ 'accept-language': 'en' })
          expectError(en, 403, 1312)
          assert.equal(en.json.details.info, `folder project "${name}" does not exist or does not belong to the caller`)
        }
      })
      it('after them all, nothing was written into the other project', async () => {
        assert.deepEqual(paths(await files('theirs', { key: other.key })), ['index.html'])
      })
      it('no credentials: 401 / 1001', async () => expectError(await s.get('/api/folders/theirs/files'), 401, 1001))
    })

    it('publishes with its preconditions, idempotently, in both {folder_path} forms; unpublishes', async () => {
      await batchUpload(s, { key: u.key }, 'pub', [
        { filename: 'Index.html', data: HTML('wrong case') },
        { filename: 'sub/index.html', data: HTML('sub') },
      ])
      const noIndex = await s.post('/api/folders/pub/publish', { key: u.key })
      assert.equal(noIndex.status, 400)
      assert.equal(noIndex.json.success, false)
      assert.equal(noIndex.json.error_code, 1313)
      await batchUpload(s, { key: u.key }, 'pub', [{ filename: 'index.html', data: HTML('home') }])
      const first = await s.post(`/api/folders/${u.username}/pub/publish`, { key: u.key })
      assert.equal(first.status, 200, first.text)
      assert.deepEqual(first.json, {
        success: true,
        message: first.json.message,
        website_url: `${s.url}/${u.username}/pub/`,
        site_url: `http://${u.username}.localhost:${new URL(s.httpUrl).port}/pub/`,
        origin_url: `http://pub.${u.username}.localhost:${new URL(s.httpUrl).port}/`,
        is_published: true,
        already_published: false,
        access_control_type: 'public',
      })
      const again = await s.post('/api/folders/pub/publish', { key: u.key })
      assert.equal(again.status, 200)
      assert.equal(again.json.already_published, true)
      assert.equal(again.json.is_published, true)
      const un = await s.post(`/api/folders/${u.username}%2Fpub/unpublish`, { key: u.key })
      assert.equal(un.status, 200)
      assert.equal(un.json.is_published, false)
      assert.equal(un.json.was_published, true)
      const un2 = await s.post('/api/folders/pub/unpublish', { key: u.key })
      assert.equal(un2.json.was_published, false)
      const re = await s.post('/api/folders/pub/publish', { key: u.key })
      assert.equal(re.json.already_published, false)
      const missing = await s.post('/api/folders/never/publish', { key: u.key })
      assert.equal(missing.status, 403)
      assert.equal(missing.json.error_code, 1312)
    })

    it('an unpublish racing a file delete of the live project leaves it unpublished', async () => {
      // every serial order of the two ends unpublished: the delete redeploys only a live project
      const rounds = 12
      const files = Array.from({ length: rounds }, (_, i) => ({ filename: `f${i}.txt`, data: `f${i}` }))
      assert.equal((await batchUpload(s, { key: u.key }, 'racy', [{ filename: 'index.html', data: HTML('racy') }, ...files])).status, 200)
      const republished: number[] = []
      for (let i = 0; i < rounds; i++) {
        assert.equal((await s.post('/api/folders/racy/publish', { key: u.key })).status, 200)
        const [del, un] = await Promise.all([
          s.request('DELETE', `/api/folders/racy/file/f${i}.txt`, { key: u.key }),
          s.post('/api/folders/racy/unpublish', { key: u.key }),
        ])
        assert.equal(del.status, 200, del.text)
        assert.equal(un.json.was_published, true, un.text)
        const list = await s.get('/api/folders', { key: u.key })
        if (list.json.folders.find((f: any) => f.name === 'racy').is_published) republished.push(i)
      }
      assert.deepEqual(republished, [], 'rounds whose unpublish was undone by the delete')
      assert.equal((await s.get(`/${u.username}/racy/`)).status, 404)
    })

    it('applies one case and Unicode policy: case-sensitive names, NFC = NFD', async () => {
      const nfc = 'caf\u00e9.html'
      const nfd = 'cafe\u0301.html'
      const r = await batchUpload(s, { key: u.key }, 'uni', [
        { filename: 'Index.html', data: 'A' },
        { filename: 'index.html', data: 'b' },
        { filename: nfc, data: 'nfc' },
        { filename: nfd, data: 'nfd' },
      ])
      assert.equal(r.status, 200)
      assert.equal(r.json.uploaded_count, 3)
      assert.deepEqual(r.json.failed_files, [nfd])
      const later = await batchUpload(s, { key: u.key }, 'uni', [{ filenameStar: encodeURIComponent(nfd), data: 'nfd2' }])
      assert.equal(later.status, 400, 'the NFD spelling names the same file')
      const l = await files('uni')
      assert.deepEqual(paths(l), ['Index.html', nfc, 'index.html'].sort())
      const viaNfd = await s.get(`/api/folders/uni/file/${encodeURIComponent(nfd)}`, { key: u.key })
      assert.equal(viaNfd.json.content, 'nfc')
      const nfdFolder = await batchUpload(s, { key: u.key }, encodeURIComponent('d\u0301ir'), [{ filename: 'a.txt', data: 'a' }])
      assert.equal(nfdFolder.status, 200)
      assert.equal((await files(encodeURIComponent('\u1e0bir'))).status, 403, 'a different character is a different project')
      assert.equal((await files(encodeURIComponent('d\u0301ir'))).json.folder_path, 'd\u0301ir')
    })

    it('enforces the per-request limits: nothing is stored past a limit, and exposes them', async () => {
      const lim = await s.get('/api/folders/limits', { key: u.key })
      assert.deepEqual(lim.json, { success: true, data: { max_files_per_request: 200, max_request_bytes: 64 * 1024 * 1024, max_file_bytes: 16 * 1024 * 1024 } })
      const many = Array.from({ length: 201 }, (_, i) => ({ filename: `f${i}.txt`, data: String(i) }))
      await expectErrorInBoth(
        (headers) => batchUpload(s, { key: u.key }, 'lim1', many, undefined, headers),
        413,
        1111,
        '单次请求的文件或字段过多：每个请求最多 200 个文件',
        'Too many files or fields in one request: at most 200 files per request',
        true,
      )
      const exact = await batchUpload(
        s,
        { key: u.key },
        'lim2',
        Array.from({ length: 200 }, (_, i) => ({ filename: `f${i}.txt`, data: String(i) })),
      )
      assert.equal(exact.status, 200)
      assert.equal(exact.json.uploaded_count, 200)
      const oneBig = Buffer.alloc(16 * 1024 * 1024 + 1, 0x62)
      const tooBig = await batchUpload(s, { key: u.key }, 'lim3', [
        { filename: 'small.txt', data: 's' },
        { filename: 'big.bin', data: oneBig },
      ])
      // the spec's status for 1104 (file too large) is 400, as a single upload answers
      assert.equal(tooBig.status, 400, tooBig.text)
      assert.equal(tooBig.json.error_code, 1104)
      const chunk = Buffer.alloc(13 * 1024 * 1024, 0x63)
      const total = await batchUpload(
        s,
        { key: u.key },
        'lim4',
        Array.from({ length: 5 }, (_, i) => ({ filename: `c${i}.bin`, data: chunk })),
      )
      assert.equal(total.status, 413, total.text)
      assert.equal(total.json.error_code, 1109)
      for (const f of ['lim1', 'lim3', 'lim4']) assert.equal((await files(f)).status, 403, `${f} was never created`)
      const rows = await s.deps.db.k.selectFrom('folders').select('name').where('name', 'in', ['lim1', 'lim3', 'lim4']).execute()
      assert.deepEqual(rows, [])
      assert.deepEqual(fs.readdirSync(path.join(s.dataDir, 'blobs', 'tmp')), [], 'no temp file left')
    })

    it('diffs a local tree against the project, and deletes single files (beyond the spec, for deploy)', async () => {
      await batchUpload(s, { key: u.key }, 'dep', [
        { filename: 'index.html', data: 'v1' },
        { filename: 'a/b.txt', data: 'b' },
        { filename: 'old.txt', data: 'o' },
      ])
      const d = await s.post('/api/folders/dep/diff', {
        key: u.key,
        json: { files: { 'index.html': sha('v2'), 'a/b.txt': sha('b').toUpperCase(), 'new.txt': sha('n') } },
      })
      assert.equal(d.status, 200, d.text)
      assert.deepEqual(d.json, { success: true, data: { upload: ['index.html', 'new.txt'], unchanged: ['a/b.txt'], extra: ['old.txt'] } })
      const none = await s.post('/api/folders/fresh-project/diff', { key: u.key, json: { files: { 'x.txt': sha('x') } } })
      assert.deepEqual(none.json.data, { upload: ['x.txt'], unchanged: [], extra: [] })
      for (const bad of [{ files: { '../x': sha('x') } }, { files: { 'x.txt': 'nothex' } }, { files: [] }, {}]) {
        const r = await s.post('/api/folders/dep/diff', { key: u.key, json: bad })
        assert.equal(r.status, 400, JSON.stringify(bad))
      }
      const del = await s.request('DELETE', '/api/folders/dep/file/old.txt', { key: u.key })
      assert.equal(del.status, 200, del.text)
      assert.equal(del.json.success, true)
      const again = await s.request('DELETE', '/api/folders/dep/file/old.txt', { key: u.key })
      assert.equal(again.status, 404)
      assert.deepEqual(paths(await files('dep')), ['a/b.txt', 'index.html'])
    })
  })
}
