import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { ENGINES, startServer, multipart, type Res, type TestServer } from '../support/server.js'
import { expectError, expectErrorInBoth } from '../support/errors.js'
import { HTML, HIGH_LIMITS, uploadFile } from '../support/hosting.js'
import { svc } from '../support/images.js'
import { FakeClock } from '../../src/util/clock.js'

const BEIJING = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/
const ISO_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+08:00$/
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201e2a0b1500000000049454e44ae426082',
  'hex',
)

/** A 1x1 24-bit BMP whose pixel row reads `<p>` (markup-like bytes after a binary header). */
const BMP = Buffer.concat([
  Buffer.from('424d3a0000000000000036000000280000000100000001000000010018000000000004000000130b0000130b00000000000000000000', 'hex'),
  Buffer.from('<p>\n'),
])

for (const engine of ENGINES) {
  describe(`single files [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    const clock = new FakeClock()
    before(async () => {
      s = await startServer({ engine, clock, env: { RATE_LIMITS: HIGH_LIMITS } })
      alice = await s.user()
    })
    after(() => s.close())

    it('creates a file: exactly the spec fields, Beijing time, is_update false, updated_at null', async () => {
      const r = await uploadFile(s, { key: alice.key }, 'hello.html', HTML('hello'), { description: 'secret description' })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      assert.equal(typeof r.json.message, 'string')
      const d = r.json.data
      // the spec's fields, and site_url beside url: the page on the user's own origin
      assert.deepEqual(Object.keys(d).sort(), ['created_at', 'file_name', 'file_size', 'is_update', 'project_name', 'site_url', 'updated_at', 'url'])
      assert.equal(d.site_url, `http://${alice.username}.localhost:${new URL(s.httpUrl).port}/hello.html`)
      assert.equal(d.file_name, 'hello.html')
      assert.equal(d.project_name, 'hello.html')
      assert.equal(d.file_size, Buffer.byteLength(HTML('hello')))
      assert.equal(d.url, `${s.url}/${alice.username}/hello.html`)
      assert.match(d.created_at, BEIJING)
      assert.equal(d.created_at, '2026-01-15 12:00:00') // FakeClock 04:00 UTC = 12:00 Beijing
      assert.equal(d.updated_at, null)
      assert.equal(d.is_update, false)
      assert.ok(!r.text.includes('secret description'), 'description is never returned')
    })

    it('updates the file of the same name: same URL, project name and description kept, updated_at set', async () => {
      const a = await uploadFile(s, { key: alice.key }, 'keep.html', HTML('v1'), { project_name: 'My Project', description: 'd1' })
      assert.equal(a.json.data.project_name, 'My Project')
      clock.advance(61_000)
      const b = await uploadFile(s, { key: alice.key }, 'keep.html', HTML('version two'), { project_name: 'Other', description: 'd2' })
      assert.equal(b.status, 200, b.text)
      assert.equal(b.json.data.is_update, true)
      assert.equal(b.json.data.url, a.json.data.url)
      assert.equal(b.json.data.project_name, 'My Project')
      assert.equal(b.json.data.created_at, a.json.data.created_at)
      assert.match(b.json.data.updated_at, BEIJING)
      assert.notEqual(b.json.data.updated_at, b.json.data.created_at)
      assert.equal(b.json.data.file_size, Buffer.byteLength(HTML('version two')))
      assert.notEqual(a.json.message, b.json.message)
      const row = await s.deps.db.k.selectFrom('files').select(['description', 'project_name']).where('file_name', '=', 'keep.html').executeTakeFirstOrThrow()
      assert.deepEqual(row, { description: 'd1', project_name: 'My Project' })
    })

    describe('answers each upload error in its format (scenario table)', () => {
      let noPerm: Awaited<ReturnType<TestServer['user']>>
      let rowsBefore: number
      const rowCount = async () => (await s.deps.db.k.selectFrom('files').select('id').execute()).length
      before(async () => {
        noPerm = await s.user()
        await s.deps.users.update(noPerm.username, { api_access: false })
        rowsBefore = await rowCount()
      })
      const nameOnly = multipart([{ name: 'project_name', data: 'x' }])
      const cases: Array<{ name: string; run: () => Promise<Res>; status: number; code: string | number; detail?: RegExp }> = [
        {
          name: 'no file part',
          status: 400,
          code: 'NO_FILE',
          run: () => s.post('/svc_api/upload', { key: alice.key, body: nameOnly.body, headers: { 'content-type': nameOnly.contentType } }),
        },
        { name: 'not multipart', status: 400, code: 'NO_FILE', run: () => s.post('/svc_api/upload', { key: alice.key, json: { file: 'x' } }) },
        { name: 'empty file name', status: 400, code: 'NO_FILE', run: () => uploadFile(s, { key: alice.key }, '', HTML('x')) },
        { name: 'empty file', status: 400, code: 'EMPTY_FILE', run: () => uploadFile(s, { key: alice.key }, 'empty.html', '') },
        {
          name: 'PNG bytes named .html',
          status: 400,
          code: 'VALIDATION_FAILED',
          detail: /image\/png/,
          run: () => uploadFile(s, { key: alice.key }, 'x.html', PNG),
        },
        {
          name: 'a real BMP named .html, markup-like bytes in its pixels',
          status: 400,
          code: 'VALIDATION_FAILED',
          detail: /image\/bmp/,
          run: () => uploadFile(s, { key: alice.key }, 'x.html', BMP),
        },
        {
          name: 'a real EXE header named .html',
          status: 400,
          code: 'VALIDATION_FAILED',
          detail: /application\/x-msdownload/,
          run: () =>
            uploadFile(s, { key: alice.key }, 'x.html', Buffer.concat([Buffer.from('4d5a90000300000004000000ffff0000', 'hex'), Buffer.from('<p>x</p>')])),
        },
        {
          name: 'a vCard without markup named .html',
          status: 400,
          code: 'VALIDATION_FAILED',
          detail: /text\/vcard/,
          run: () => uploadFile(s, { key: alice.key }, 'x.html', 'BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Bob\r\nEND:VCARD\r\n'),
        },
        {
          name: 'plain text named .html',
          status: 400,
          code: 'VALIDATION_FAILED',
          detail: /text\/plain/,
          run: () => uploadFile(s, { key: alice.key }, 'x.html', 'just words, no markup'),
        },
        {
          name: 'JSON named .html',
          status: 400,
          code: 'VALIDATION_FAILED',
          detail: /application\/json/,
          run: () => uploadFile(s, { key: alice.key }, 'x.html', '{"a": 1}'),
        },
        {
          name: 'NUL bytes',
          status: 400,
          code: 'VALIDATION_FAILED',
          detail: /octet-stream/,
          run: () => uploadFile(s, { key: alice.key }, 'x.html', Buffer.from('<p>a\u0000b</p>')),
        },
        {
          name: 'UTF-16 text without markup',
          status: 400,
          code: 'VALIDATION_FAILED',
          detail: /text\/plain/,
          run: () => uploadFile(s, { key: alice.key }, 'x.html', Buffer.from('\ufeffjust words, no markup', 'utf16le')),
        },
        { name: '.txt extension', status: 400, code: 'VALIDATION_FAILED', detail: /\.txt/, run: () => uploadFile(s, { key: alice.key }, 'x.txt', HTML('x')) },
        { name: 'API permission disabled', status: 403, code: 'API_PERMISSION_DENIED', run: () => uploadFile(s, { key: noPerm.key }, 'x.html', HTML('x')) },
        { name: 'no credentials', status: 401, code: 1001, run: () => uploadFile(s, {}, 'x.html', HTML('x')) },
        { name: 'traversal in the name', status: 400, code: 1110, run: () => uploadFile(s, { key: alice.key }, '../x.html', HTML('x')) },
        { name: 'NUL in the name', status: 400, code: 1110, run: () => uploadFile(s, { key: alice.key }, 'a\u0000.html', HTML('x')) },
        {
          name: 'control char in project_name',
          status: 400,
          code: 1106,
          run: () => uploadFile(s, { key: alice.key }, 'pn.html', HTML('x'), { project_name: 'a\u0000b' }),
        },
      ]
      for (const c of cases) {
        it(`${c.name}: ${c.status} / ${c.code}`, async () => {
          const r = await c.run()
          expectError(r, c.status, c.code)
          // format B carries nothing but these three
          if (typeof c.code === 'string') assert.deepEqual(Object.keys(r.json).sort(), ['error_code', 'message', 'success'])
          if (c.detail) assert.match(r.json.message, c.detail)
        })
      }
      it('after them all, no row was written by a refused upload', async () => {
        assert.equal(await rowCount(), rowsBefore)
      })
    })

    it("says a name without an extension, or a second file, is refused in the answer's language", async () => {
      await expectErrorInBoth(
        (headers) => uploadFile(s, { key: alice.key }, 'noext', HTML('x'), {}, headers),
        400,
        'VALIDATION_FAILED',
        '不支持的文件类型：（无扩展名）',
        'Unsupported file type: (no extension)',
        true,
      )
      const two = multipart([
        { name: 'file', filename: 'a.html', type: 'text/html', data: HTML('a') },
        { name: 'file', filename: 'b.html', type: 'text/html', data: HTML('b') },
      ])
      await expectErrorInBoth(
        (headers) => s.post('/svc_api/upload', { key: alice.key, body: two.body, headers: { 'content-type': two.contentType, ...headers } }),
        413,
        1111,
        '单次请求的文件或字段过多：每个请求只能发送一个文件',
        'Too many files or fields in one request: send one file per request',
        true,
      )
    })

    it('accepts .htm, upper-case extensions and non-UTF-8 HTML (served without a charset)', async () => {
      const gbk = Buffer.concat([Buffer.from('<html><meta charset="gbk"><body>'), Buffer.from([0xc4, 0xe3, 0xba, 0xc3]), Buffer.from('</body></html>')])
      for (const [name, data] of [
        ['a.htm', HTML('a')],
        ['B.HTML', HTML('b')],
        ['gbk.html', gbk],
      ] as const) {
        const r = await uploadFile(s, { key: alice.key }, name, data)
        assert.equal(r.status, 200, `${name}: ${r.text}`)
      }
      const row = await s.deps.db.k.selectFrom('files').select('content_type').where('file_name', '=', 'gbk.html').executeTakeFirstOrThrow()
      assert.equal(row.content_type, 'text/html')
    })

    it('accepts pages whose first letters spell a binary signature (BM, MZ, ID3, BEGIN:VCARD)', async () => {
      for (const [name, page] of [
        ['bmw.html', 'BMW cars\n<p>fast ones</p>'],
        ['mz.html', 'MZ fans\n<ul><li>one</li></ul>'],
        ['id3.html', 'ID3 tag notes <br> for MP3 files'],
        ['card.html', 'BEGIN:VCARD is how a vCard starts: <b>example</b>'],
      ] as const) {
        const r = await uploadFile(s, { key: alice.key }, name, page)
        assert.equal(r.status, 200, `${name}: ${r.text}`)
        const served = await s.get(`/${alice.username}/${name}`)
        assert.equal(served.text, page)
      }
    })

    it('accepts UTF-16 HTML with its byte order mark (as Windows PowerShell writes it), served as it came', async () => {
      const page = '\ufeff<!DOCTYPE html><html><body>h\u00e9llo \u4f60\u597d</body></html>\r\n'
      const le = Buffer.from(page, 'utf16le')
      const be = Buffer.from(le).swap16()
      for (const [name, data] of [
        ['utf16le.html', le],
        ['utf16be.html', be],
      ] as const) {
        const r = await uploadFile(s, { key: alice.key }, name, data)
        assert.equal(r.status, 200, `${name}: ${r.text}`)
        const served = await s.get(`/${alice.username}/${name}`)
        assert.equal(served.status, 200)
        // no charset: browsers take the encoding from the byte order mark
        assert.equal(served.headers['content-type'], 'text/html')
        assert.ok(served.body.equals(data), `${name} served byte-identical`)
      }
    })

    it('reports the upload configuration', async () => {
      const bob = await s.user()
      await uploadFile(s, { key: bob.key }, 'one.html', HTML('1'))
      const r = await s.get('/svc_api/upload/info', { key: bob.key })
      assert.equal(r.status, 200)
      assert.deepEqual(r.json, {
        success: true,
        data: {
          max_file_size: 16777216,
          max_file_size_mb: 16,
          max_files_per_user: 100,
          current_file_count: 1,
          remaining_quota: 99,
          allowed_extensions: ['.html', '.htm'],
          api_version: '1.1.2',
        },
      })
    })

    describe('lists newest first with page, per_page, search and the four is_featured spellings', () => {
      let carol: Awaited<ReturnType<TestServer['user']>>
      const names = ['alpha.html', 'beta.html', 'gamma.html', 'Delta_1.html', 'epsilon.html']
      const list = (q = '') => s.get(`/svc_api/files${q}`, { key: carol.key })
      before(async () => {
        carol = await s.user()
        for (const n of names) {
          clock.advance(1000)
          const r = await uploadFile(s, { key: carol.key }, n, HTML(n), n === 'gamma.html' ? { project_name: 'Landing 100%' } : {})
          assert.equal(r.status, 200, r.text)
        }
        await s.deps.db.k
          .updateTable('files')
          .set({ is_featured: 1 })
          .where('user_id', '=', carol.id)
          .where('file_name', 'in', ['beta.html', 'epsilon.html'])
          .execute()
      })

      it('lists every file newest first, each with the spec fields', async () => {
        const all = await list()
        assert.equal(all.status, 200)
        assert.deepEqual(Object.keys(all.json.data).sort(), ['files', 'page', 'per_page', 'total', 'total_pages'])
        assert.deepEqual(
          all.json.data.files.map((f: any) => f.file_name),
          [...names].reverse(),
        )
        assert.equal(all.json.data.per_page, 20)
        const item = all.json.data.files[0]
        assert.deepEqual(Object.keys(item).sort(), ['created_at', 'file_name', 'file_size', 'is_featured', 'project_name', 'site_url', 'updated_at', 'url'])
        assert.match(item.created_at, ISO_MICROS)
        assert.equal(item.updated_at, null)
        assert.equal(item.url, `${s.url}/${carol.username}/epsilon.html`)
      })

      const table: Array<[string, string[]]> = [
        ['?page=1&per_page=2', ['epsilon.html', 'Delta_1.html']],
        ['?page=2&per_page=2', ['gamma.html', 'beta.html']],
        ['?page=3&per_page=2', ['alpha.html']],
        ['?page=9&per_page=2', []],
        ['?search=ALP', ['alpha.html']],
        ['?search=landing', ['gamma.html']],
        ['?search=100%25', ['gamma.html']],
        ['?search=a_1', ['Delta_1.html']],
        ['?search=_', ['Delta_1.html']],
        ['?search=zzz', []],
        ['?is_featured=true', ['epsilon.html', 'beta.html']],
        ['?is_featured=1', ['epsilon.html', 'beta.html']],
        ['?is_featured=false', ['Delta_1.html', 'gamma.html', 'alpha.html']],
        ['?is_featured=0', ['Delta_1.html', 'gamma.html', 'alpha.html']],
        ['?is_featured=1&search=eps', ['epsilon.html']],
      ]
      for (const [q, want] of table) {
        it(`${q}: ${want.join(', ') || 'none'}`, async () => {
          const r = await list(q)
          assert.equal(r.status, 200, r.text)
          assert.deepEqual(
            r.json.data.files.map((f: any) => f.file_name),
            want,
          )
        })
      }

      it('finds a name by its NFC or NFD spelling, as uploads store it (NFC)', async () => {
        const dave = await s.user()
        const r = await uploadFile(s, { key: dave.key }, 'cafe\u0301.html', HTML('café'))
        assert.equal(r.status, 200, r.text)
        assert.equal(r.json.data.file_name, 'caf\u00e9.html')
        for (const q of ['caf\u00e9', 'cafe\u0301', 'e\u0301.HTML']) {
          const found = await s.get(`/svc_api/files?search=${encodeURIComponent(q)}`, { key: dave.key })
          assert.equal(found.status, 200, found.text)
          assert.deepEqual(
            found.json.data.files.map((f: any) => f.file_name),
            ['caf\u00e9.html'],
            q,
          )
        }
      })

      it("refuses another is_featured spelling, or a control character, in the answer's language", async () => {
        for (const [lang, want] of [
          ['zh-CN', '参数错误：is_featured 须为 true、false、1 或 0'],
          ['en', 'Invalid parameter: is_featured must be true, false, 1 or 0'],
        ]) {
          const r = await s.get('/svc_api/files?is_featured=maybe', { key: carol.key, headers: { 'accept-language': lang } })
          assert.equal(r.status, 400, r.text)
          assert.equal(r.json.message, want)
        }
        for (const [lang, want] of [
          ['zh-CN', '参数错误：project_name 包含控制字符'],
          ['en', 'Invalid parameter: project_name contains control characters'],
        ]) {
          const r = await uploadFile(s, { key: carol.key }, 'ctl.html', HTML('ctl'), { project_name: 'a\u0001b' }, { 'accept-language': lang })
          assert.equal(r.status, 400, r.text)
          assert.equal(r.json.message, want)
        }
      })

      it('pages count the whole list; is_featured is a boolean', async () => {
        const all = await list()
        const paged = await list('?page=2&per_page=2')
        assert.deepEqual([paged.json.data.page, paged.json.data.per_page, paged.json.data.total, paged.json.data.total_pages], [2, 2, 5, 3])
        assert.equal(all.json.data.files.find((f: any) => f.file_name === 'beta.html').is_featured, true)
        assert.equal(all.json.data.files.find((f: any) => f.file_name === 'alpha.html').is_featured, false)
      })

      const bad: Array<[string, number]> = [
        ['?page=0', 1107],
        ['?page=-1', 1107],
        ['?page=abc', 1107],
        ['?page=1.5', 1107],
        ['?per_page=0', 1108],
        ['?per_page=101', 1108],
        ['?per_page=x', 1108],
        ['?is_featured=yes', 1106],
        ['?search=%00', 1106],
      ]
      for (const [q, code] of bad) {
        it(`${q}: 400 / ${code}`, async () => expectError(await list(q), 400, code))
      }

      it("says a NUL in the query is refused in the answer's language", async () => {
        const zh = await list('?search=%00')
        expectError(zh, 400, 1106)
        assert.match(zh.json.message, /路径和查询参数中不能有 NUL 字符/)
        assert.doesNotMatch(zh.json.message, /[A-Za-z]{4,}/, zh.json.message)
        const en = await s.get('/svc_api/files?search=%00', { key: carol.key, headers: { 'accept-language': 'en' } })
        expectError(en, 400, 1106)
        assert.match(en.json.message, /NUL characters are not allowed in paths or query strings/)
      })

      it('a page past the nine-digit bound is refused with that bound in the message', async () => {
        const r = await s.get('/svc_api/files?page=1234567890', { key: carol.key, headers: { 'accept-language': 'en' } })
        expectError(r, 400, 1107)
        assert.equal(r.json.message, 'page must be an integer from 1 to 999999999')
        const last = await list('?page=999999999')
        assert.equal(last.status, 200, last.text)
        assert.deepEqual(last.json.data.files, [])
      })

      it("lists only the caller's files", async () => {
        const other = await s.get('/svc_api/files', { key: alice.key })
        assert.ok(!other.json.data.files.some((f: any) => f.file_name === 'gamma.html'), "only the caller's files")
      })
    })

    it('svc feature finds a file by a decomposed (NFD) spelling of its name, as the upload does', async () => {
      const nfd = 'cafe\u0301-featured.html'
      const up = await uploadFile(s, { key: alice.key }, nfd, HTML('café'))
      assert.equal(up.status, 200, up.text)
      assert.equal(up.json.data.file_name, nfd.normalize('NFC'))
      await svc(s, 'feature', alice.username, nfd)
      const listed = await s.get(`/svc_api/files?search=featured&is_featured=true`, { key: alice.key })
      assert.deepEqual(
        listed.json.data.files.map((f: any) => f.file_name),
        [nfd.normalize('NFC')],
      )
      await svc(s, 'feature', alice.username, nfd, '--off')
      assert.equal((await s.get(`/svc_api/files?search=featured&is_featured=true`, { key: alice.key })).json.data.files.length, 0)
    })

    it("deletes a file (beyond the spec); a missing or another user's file is 404", async () => {
      const dave = await s.user()
      await uploadFile(s, { key: dave.key }, 'gone soon.html', HTML('x'))
      const other = await s.request('DELETE', '/svc_api/files/gone%20soon.html', { key: alice.key })
      assert.equal(other.status, 404)
      assert.equal(other.json.error_code, 1301)
      const r = await s.request('DELETE', '/svc_api/files/gone%20soon.html', { key: dave.key })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      const again = await s.request('DELETE', '/svc_api/files/gone%20soon.html', { key: dave.key })
      assert.equal(again.status, 404)
      const info = await s.get('/svc_api/upload/info', { key: dave.key })
      assert.equal(info.json.data.current_file_count, 0)
    })

    it('enforces the file count quota (1201), lets updates through at the limit, honours per-user overrides', async () => {
      const erin = await s.user()
      await s.deps.users.update(erin.username, { limits: { files: 2 } })
      for (const n of ['a.html', 'b.html']) assert.equal((await uploadFile(s, { key: erin.key }, n, HTML(n))).status, 200)
      const third = await uploadFile(s, { key: erin.key }, 'c.html', HTML('c'))
      assert.equal(third.status, 400)
      assert.equal(third.json.error_code, 1201)
      assert.equal(third.json.error_type, 'QUOTA_ERROR')
      const upd = await uploadFile(s, { key: erin.key }, 'a.html', HTML('a2'))
      assert.equal(upd.status, 200)
      assert.equal(upd.json.data.is_update, true)
      const info = await s.get('/svc_api/upload/info', { key: erin.key })
      assert.equal(info.json.data.max_files_per_user, 2)
      assert.equal(info.json.data.remaining_quota, 0)
    })

    it('lets exactly the remaining quota through when uploads race at the edge', async () => {
      const fred = await s.user()
      await s.deps.users.update(fred.username, { limits: { files: 10 } })
      for (let i = 0; i < 5; i++) assert.equal((await uploadFile(s, { key: fred.key }, `pre${i}.html`, HTML(String(i)))).status, 200)
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => uploadFile(s, { key: fred.key }, `race${i}.html`, HTML(`r${i}`))))
      const ok = results.filter((r) => r.status === 200).length
      const quota = results.filter((r) => r.json?.error_code === 1201).length
      assert.equal(ok, 5, results.map((r) => r.status).join(','))
      assert.equal(quota, 7)
      const info = await s.get('/svc_api/upload/info', { key: fred.key })
      assert.equal(info.json.data.current_file_count, 10)
      // the same new name raced: one create, the others update; never two rows
      const same = await Promise.all(Array.from({ length: 4 }, () => uploadFile(s, { key: alice.key }, 'same.html', HTML('same'))))
      assert.deepEqual(same.map((r) => r.json.data.is_update).sort(), [false, true, true, true])
    })

    it('accepts exactly MAX_UPLOAD_BYTES byte-identical, refuses one byte more with 1104 and leaves no temp file', async () => {
      const max = 16 * 1024 * 1024
      const body = Buffer.alloc(max, 0x61)
      body.write('<!doctype html><html><body><p>', 0)
      const tail = '</p></body></html>'
      body.write(tail, max - tail.length)
      const ok = await uploadFile(s, { key: alice.key }, 'big.html', body)
      assert.equal(ok.status, 200, ok.text)
      assert.equal(ok.json.data.file_size, max)
      const row = await s.deps.db.k.selectFrom('files').select(['digest', 'size']).where('file_name', '=', 'big.html').executeTakeFirstOrThrow()
      assert.equal(row.digest, crypto.createHash('sha256').update(body).digest('hex'))
      assert.ok((await s.deps.blobs.read(row.digest)).equals(body))
      const served = await s.get(`/${alice.username}/big.html`)
      assert.equal(served.status, 200)
      assert.ok(served.body.equals(body), 'served byte-identical by the public host')

      const over = Buffer.concat([body, Buffer.from('x')])
      const r = await uploadFile(s, { key: alice.key }, 'bigger.html', over)
      assert.equal(r.status, 400, r.text)
      assert.equal(r.json.error_code, 1104)
      assert.equal(r.json.error_type, 'PARAM_ERROR')
      const none = await s.deps.db.k.selectFrom('files').select('id').where('file_name', '=', 'bigger.html').execute()
      assert.equal(none.length, 0)
      const tmp = path.join(s.dataDir, 'blobs', 'tmp')
      assert.deepEqual(fs.readdirSync(tmp), [], 'no temp file left')
    })
  })
}
