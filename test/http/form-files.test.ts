import { createHash } from 'node:crypto'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { PassThrough, Readable } from 'node:stream'
import { expectError } from '../support/errors.js'
import { ENGINES, startServer, multipart, type TestServer } from '../support/server.js'
import { sweepBlobs } from '../../src/storage/sweeper.js'
import { BLOB_COLUMNS } from '../../src/features/tables.js'
import { deleteAccount } from '../../src/features/accounts/delete.js'
import { importArchive, writeExport } from '../../src/features/export/archive.js'
import { until, webhookReceiver } from '../support/webhooks.js'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const HIGH = JSON.stringify(
  Object.fromEntries(['default', 'authenticated', 'vip'].map((t) => [t, { minute: 100000, hour: 100000, day: 100000, concurrent: 200 }])),
)
const MiB = 1024 * 1024
/** A 1x1 PNG: its type is read from these bytes, whatever the sender names. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64')
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')
/** Bytes of `n` that no other test stores (content-addressed: a shared blob would stay). */
const unique = (n: number, tag: string) => {
  const b = Buffer.alloc(n, 0x61)
  b.write(`${tag}-${Math.random()}`)
  return b
}

/** Rows of an RFC 4180 text: quoted cells may hold commas, quotes and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [[]]
  let cell = ''
  let quoted = false
  const endCell = () => {
    rows[rows.length - 1].push(cell)
    cell = ''
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"'
      i++
    } else if (quoted) {
      if (c === '"') quoted = false
      else cell += c
    } else if (c === '"') quoted = true
    else if (c === ',') endCell()
    else if (c === '\r' && text[i + 1] === '\n') {
      endCell()
      rows.push([])
      i++
    } else cell += c
  }
  if (cell !== '' || rows[rows.length - 1].length > 0) endCell()
  return rows
}

type User = Awaited<ReturnType<TestServer['user']>>

for (const engine of ENGINES) {
  describe(`form files [${engine}]`, () => {
    let s: TestServer
    let alice: User
    let bob: User
    let seq = 0
    const slug = () => `ff-${engine}-${++seq}-${Math.random().toString(36).slice(2, 8)}`
    const make = async (u: User, body: Record<string, unknown> = {}) => {
      const r = await s.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Jobs', form_slug: slug(), ...body } })
      assert.equal(r.status, 200, r.text)
      return r.json.data as { id: string; form_slug: string }
    }
    /** A multipart post; `streamed`: without a Content-Length, so only the reading stops it. */
    const post = (formSlug: string, parts: Parameters<typeof multipart>[0], streamed = false) => {
      const mp = multipart(parts)
      const body = streamed ? (Readable.from([mp.body]) as never) : mp.body
      return s.post(`/api/forms/submit/${formSlug}`, { body, headers: { 'content-type': mp.contentType } })
    }
    const data = (u: User, id: string) => s.get(`/svc_api/forms/data/${id}`, { key: u.key })
    const fileRows = (userId: string) => s.deps.db.k.selectFrom('form_files').selectAll().where('user_id', '=', userId).execute()
    const sweep = () => sweepBlobs(s.deps.db, s.deps.blobs, BLOB_COLUMNS, 0, Date.now() + 1000)

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH } })
      alice = await s.user()
      bob = await s.user()
    })
    after(() => s.close())

    it('keeps a file with its submission; the owner lists and downloads it, as an attachment; another account gets 404', async () => {
      const f = await make(alice)
      // a browser that sends the client's path, and a type the bytes do not bear out
      const r = await post(f.form_slug, [
        { name: 'name', data: 'Ann' },
        { name: 'photo', filename: 'C:\\Users\\ann\\me\u202egnp.png', type: 'text/html', data: PNG },
        { name: 'empty', filename: '', data: '' },
      ])
      assert.equal(r.status, 200, r.text)
      const list = await data(alice, f.id)
      assert.equal(list.status, 200)
      const sub = list.json.data.submissions[0]
      assert.deepEqual(sub.data, { name: 'Ann' })
      assert.equal(sub.files.length, 1)
      const file = sub.files[0]
      assert.equal(file.field, 'photo')
      assert.equal(file.filename, 'megnp.png')
      assert.equal(file.content_type, 'image/png')
      assert.equal(file.size, PNG.length)
      assert.equal(file.url, `${s.url}/svc_api/forms/files/${file.id}`)

      const dl = await s.get(new URL(file.url).pathname, { key: alice.key })
      assert.equal(dl.status, 200)
      assert.ok(dl.body.equals(PNG))
      assert.equal(dl.header('content-type'), 'image/png')
      assert.match(String(dl.header('content-disposition')), /^attachment; filename="megnp.png"/)
      assert.equal(dl.header('x-content-type-options'), 'nosniff')
      assert.match(String(dl.header('content-security-policy')), /sandbox/)

      expectError(await s.get(new URL(file.url).pathname, { key: bob.key }), 404, 1405)
      expectError(await s.get('/svc_api/forms/files/no-such-file', { key: alice.key }), 404, 1405)
      assert.equal((await s.get(new URL(file.url).pathname)).status, 401)

      // the exports: the file in the JSON, its download URL in the CSV
      const json = await s.get(`/svc_api/forms/export/${f.id}`, { key: alice.key })
      assert.equal(json.json.data.submissions[0].files[0].url, file.url)
      const csv = await s.get(`/svc_api/forms/export/${f.id}?format=csv`, { key: alice.key })
      const [head, row] = csv.text.replace(/^\uFEFF/, '').split('\r\n')
      assert.ok(head.split(',').includes('files'), head)
      assert.ok(row.includes(file.url), row)
      // the account's file bytes
      const forms = await s.get('/svc_api/forms/list', { key: alice.key })
      assert.equal(forms.json.data.quota.file_bytes.used, PNG.length)
    })

    it('a form that declares its fields takes files in its file fields only; refused posts keep nothing and their blobs are swept', async () => {
      const f = await make(alice, {
        fields_config: [
          { name: 'name', type: 'text', required: true },
          { name: 'resume', type: 'file', required: true },
        ],
      })
      const stray = unique(1000, 'stray')
      const refused = await post(f.form_slug, [
        { name: 'name', data: 'Ann' },
        { name: 'resume', filename: 'cv.txt', data: 'my cv' },
        { name: 'photo', filename: 'p.bin', data: stray },
      ])
      expectError(refused, 400, 1614)
      assert.equal(refused.json.field, 'photo')
      const asText = await post(f.form_slug, [
        { name: 'name', data: 'Ann' },
        { name: 'resume', data: 'not a file' },
      ])
      expectError(asText, 400, 1614)
      assert.equal(asText.json.field, 'resume')
      const missing = await post(f.form_slug, [
        { name: 'name', data: 'Ann' },
        { name: 'resume', filename: '', data: '' },
      ])
      expectError(missing, 400, 1614)
      assert.equal(missing.json.field, 'resume')
      const onText = await post(f.form_slug, [{ name: 'name', filename: 'n.txt', data: 'Ann' }])
      expectError(onText, 400, 1614)
      assert.equal(onText.json.field, 'name')
      assert.equal((await data(alice, f.id)).json.data.total, 0)
      assert.equal(await s.deps.blobs.exists(sha(stray)), true)
      await sweep()
      assert.equal(await s.deps.blobs.exists(sha(stray)), false)

      const ok = await post(f.form_slug, [
        { name: 'name', data: 'Ann' },
        { name: 'resume', filename: 'cv.txt', data: 'my cv' },
      ])
      assert.equal(ok.status, 200, ok.text)
      const sub = (await data(alice, f.id)).json.data.submissions[0]
      assert.deepEqual(
        sub.files.map((x: { field: string; content_type: string }) => [x.field, x.content_type]),
        [['resume', 'text/plain']],
      )
      // the field type is answered as declared
      const forms = await s.get('/svc_api/forms/list', { key: alice.key })
      const form = forms.json.data.forms.find((x: { id: string }) => x.id === f.id)
      assert.equal(form.fields_config[1].type, 'file')
    })

    it('over the per-file or per-submission size, or too many files: 413, no row, and the blobs go to the sweeper', async () => {
      const carol = await s.user()
      const f = await make(carol)
      const big = unique(8 * MiB + 1, 'big')
      const one = await post(f.form_slug, [
        { name: 'name', data: 'Ann' },
        { name: 'cv', filename: 'big.bin', data: big },
      ])
      expectError(one, 413, 1109)
      assert.match(one.json.message, new RegExp(String(8 * MiB)))
      const first = unique(5 * MiB, 'first')
      const second = unique(5 * MiB, 'second')
      const parts = [
        { name: 'a', filename: 'a.bin', data: first },
        { name: 'b', filename: 'b.bin', data: second },
      ]
      // announced by its Content-Length: refused before reading
      expectError(await post(f.form_slug, parts), 413, 1109)
      assert.equal(await s.deps.blobs.exists(sha(first)), false)
      // streamed: the first file is read and stored, the second stops at what the submission leaves
      const two = await post(f.form_slug, parts, true)
      expectError(two, 413, 1109)
      assert.match(two.json.message, new RegExp(String(8 * MiB)))
      const many = await post(
        f.form_slug,
        Array.from({ length: 6 }, (_, i) => ({ name: `f${i}`, filename: `${i}.txt`, data: `file ${i}` })),
      )
      expectError(many, 413, 1111)
      assert.equal((await data(carol, f.id)).json.data.total, 0)
      assert.equal((await fileRows(carol.id)).length, 0)
      // the whole first file was stored, then left without a row
      assert.equal(await s.deps.blobs.exists(sha(first)), true)
      await sweep()
      assert.equal(await s.deps.blobs.exists(sha(first)), false)
      assert.equal(await s.deps.blobs.exists(sha(second)), false)
      assert.equal(await s.deps.blobs.exists(sha(big)), false)
      // at the limits exactly: kept
      const fits = await post(f.form_slug, [
        { name: 'a', filename: 'a.bin', data: unique(4 * MiB, 'fa') },
        { name: 'b', filename: 'b.bin', data: unique(4 * MiB, 'fb') },
      ])
      assert.equal(fits.status, 200, fits.text)
      assert.equal((await fileRows(carol.id)).length, 2)
    })

    it('a file over the limit is refused in sizes people read, with the exact count, in both languages (decision 322)', async () => {
      const f = await make(alice)
      const parts = [
        { name: 'name', data: 'Ann' },
        { name: 'cv', filename: 'big.bin', data: unique(9 * MiB, 'nine') },
      ]
      const mp = multipart(parts)
      const send = (headers: Record<string, string>) =>
        s.post(`/api/forms/submit/${f.form_slug}`, { body: mp.body, headers: { 'content-type': mp.contentType, ...headers } })
      // a script (fetch): JSON, its message and Formspree's errors[] say "8 MiB"; the code stays
      const en = await send({ accept: 'application/json', 'accept-language': 'en' })
      expectError(en, 413, 1109)
      assert.equal(en.json.message, 'Request body too large; the maximum is 8 MiB (8388608 bytes)')
      assert.deepEqual(en.json.errors, [{ message: en.json.message }])
      const zh = await send({ accept: 'application/json', 'accept-language': 'zh-CN' })
      expectError(zh, 413, 1109)
      assert.equal(zh.json.message, '请求体过大，最大 8 MiB（8388608 字节）')
      // a browser's form post: the refusal page a visitor reads
      const page = await send({ accept: 'text/html', 'accept-language': 'en' })
      assert.equal(page.status, 413)
      assert.match(page.header('content-type') ?? '', /^text\/html/)
      assert.ok(page.text.includes('the maximum is 8 MiB (8388608 bytes)'), page.text)
      assert.ok(!/8388608 bytes;|maximum is 8388608/.test(page.text), page.text)
      assert.equal((await data(alice, f.id)).json.data.total, 0)
    })

    it("the account's stored file bytes stay within form_file_bytes (1613)", async () => {
      const dan = await s.user()
      await s.deps.db.k
        .updateTable('users')
        .set({ limits: JSON.stringify({ form_file_bytes: 1000 }) })
        .where('id', '=', dan.id)
        .execute()
      const f = await make(dan)
      assert.equal((await post(f.form_slug, [{ name: 'a', filename: 'a.bin', data: unique(600, 'q1') }])).status, 200)
      const over = await post(f.form_slug, [{ name: 'a', filename: 'b.bin', data: unique(600, 'q2') }])
      expectError(over, 429, 1613)
      assert.equal(over.json.details.quota, 'form_file_bytes')
      assert.equal((await post(f.form_slug, [{ name: 'a', filename: 'c.bin', data: unique(400, 'q3') }])).status, 200)
      // a submission without files still goes in
      assert.equal((await post(f.form_slug, [{ name: 'a', data: 'text only' }])).status, 200)
      assert.equal((await data(dan, f.id)).json.data.total, 3)
      const rows = await fileRows(dan.id)
      assert.equal(
        rows.reduce((n, r) => n + Number(r.size), 0),
        1000,
      )
    })

    it('a file in a control field (`_`, form-name, the honeypot) is dropped, as text there is never stored', async () => {
      const f = await make(alice)
      const dropped = unique(300, 'control')
      const r = await post(f.form_slug, [
        { name: 'name', data: 'Ann' },
        { name: '_attachment', filename: 'x.bin', data: dropped },
        { name: 'form-name', filename: 'y.bin', data: dropped },
      ])
      assert.equal(r.status, 200, r.text)
      const sub = (await data(alice, f.id)).json.data.submissions[0]
      assert.deepEqual(sub.data, { name: 'Ann' })
      assert.deepEqual(sub.files, [])
      // control fields only: as empty as a post of control text fields only
      expectError(await post(f.form_slug, [{ name: '_attachment', filename: 'x.bin', data: dropped }]), 400, 1106)
    })

    it('spam keeps no file', async () => {
      const f = await make(alice)
      const bait = unique(500, 'spam')
      const r = await post(f.form_slug, [
        { name: 'name', data: 'bot' },
        { name: '_gotcha', data: 'filled' },
        { name: 'cv', filename: 'cv.bin', data: bait },
      ])
      assert.equal(r.status, 200, r.text)
      const sub = (await data(alice, f.id)).json.data.submissions[0]
      assert.equal(sub.is_spam, true)
      assert.deepEqual(sub.files, [])
      await sweep()
      assert.equal(await s.deps.blobs.exists(sha(bait)), false)
    })

    it("the CSV export puts each file's link in its field's column, as the dashboard shows it", async () => {
      // a declared file field, which the form's markup offers, and a form without fields_config
      const declared = await make(alice, { fields_config: [{ name: 'name' }, { name: 'resume', type: 'file' }] })
      const open = await make(alice)
      const cells = async (f: { id: string }) => {
        const csv = await s.get(`/svc_api/forms/export/${f.id}?format=csv`, { key: alice.key })
        assert.equal(csv.status, 200, csv.text)
        const [head, ...rows] = parseCsv(csv.text.replace(/^\uFEFF/, ''))
        return rows.filter((r) => r.length > 1).map((r) => Object.fromEntries(head.map((h, i) => [h, r[i]])))
      }
      for (const f of [declared, open]) {
        const one = unique(100, 'csv-a')
        const two = unique(100, 'csv-b')
        const r = await post(f.form_slug, [
          { name: 'name', data: 'Ann' },
          { name: 'resume', filename: 'cv.txt', data: one },
          { name: 'resume', filename: 'letter.txt', data: two },
        ])
        assert.equal(r.status, 200, r.text)
        const urls = (await data(alice, f.id)).json.data.submissions[0].files.map((x: { url: string }) => x.url)
        assert.equal(urls.length, 2)
        const [row] = await cells(f)
        assert.equal(row.name, 'Ann')
        assert.equal(row.resume, urls.join('\n'), "the field column holds its files' links")
        assert.equal(row.files, urls.join('\n'), 'the files column keeps every file')
      }
      // a field that sent text and a file (a form without fields_config): the text, then the link
      const mixed = await make(alice)
      const r = await post(mixed.form_slug, [
        { name: 'photo', data: '=see file' },
        { name: 'photo', filename: 'me.png', data: PNG },
      ])
      assert.equal(r.status, 200, r.text)
      const [url] = (await data(alice, mixed.id)).json.data.submissions[0].files.map((x: { url: string }) => x.url)
      const [row] = await cells(mixed)
      assert.equal(row.photo, `'=see file\n${url}`, 'the formula guard still applies to the cell')
    })

    it("a webhook names each file with its id and the owner's download link, never its bytes", async () => {
      const rx = await webhookReceiver()
      rx.status.value = 200
      try {
        const f = await make(alice)
        const hook = await s.request('PUT', `/svc_api/forms/webhook/${f.id}`, { key: alice.key, json: { url: rx.url } })
        assert.equal(hook.status, 200, hook.text)
        const bytes = unique(300, 'hook')
        const r = await post(f.form_slug, [
          { name: 'name', data: 'Ann' },
          { name: 'resume', filename: 'cv.txt', data: bytes },
        ])
        assert.equal(r.status, 200, r.text)
        await until(() => rx.hits.length === 1, 10_000, 'the delivery')
        const event = JSON.parse(rx.hits[0].body)
        const [file] = (await data(alice, f.id)).json.data.submissions[0].files
        assert.deepEqual(event.submission.files, [
          { id: file.id, url: file.url, field: 'resume', filename: 'cv.txt', content_type: 'text/plain', size: bytes.length },
        ])
        assert.ok(!rx.hits[0].body.includes(bytes.toString('latin1', 0, 40)), 'no bytes of the file')
        // the receiver fetches the file with the owner's key, from the link it was given
        assert.equal(new URL(event.submission.files[0].url).origin, s.url)
        const dl = await s.get(new URL(event.submission.files[0].url).pathname, { key: alice.key })
        assert.equal(dl.status, 200)
        assert.ok(dl.body.equals(bytes))
      } finally {
        await rx.close()
      }
    })

    it("an account's export carries its submissions' files, and an import brings them back to download", async () => {
      const gus = await s.user()
      const f = await make(gus)
      const bytes = unique(900, 'export')
      assert.equal(
        (
          await post(f.form_slug, [
            { name: 'name', data: 'Gus' },
            { name: 'cv', filename: 'gus.bin', data: bytes },
          ])
        ).status,
        200,
      )
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-form-files-'))
      try {
        const file = path.join(dir, 'gus.tar.gz')
        await writeExport(s.deps.db, s.deps.blobs, gus.username, fs.createWriteStream(file))
        const r = await importArchive(s.deps.db, s.deps.blobs, file, `${gus.username}-copy`)
        const copy = await s.deps.db.k.selectFrom('users').select('id').where('username', '=', `${gus.username}-copy`).executeTakeFirstOrThrow()
        assert.ok(r)
        const rows = await fileRows(copy.id)
        assert.deepEqual(
          rows.map((x) => [x.field, x.filename, x.digest]),
          [['cv', 'gus.bin', sha(bytes)]],
        )
        const { key } = await s.deps.apiKeys.create(copy.id, { name: 'test' })
        const dl = await s.get(`/svc_api/forms/files/${rows[0].id}`, { key })
        assert.equal(dl.status, 200)
        assert.ok(dl.body.equals(bytes))
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })

    it("deleting a form or the account removes its files' rows, and the sweeper frees the bytes", async () => {
      const erin = await s.user()
      const f = await make(erin)
      const g = await make(erin)
      const a = unique(700, 'del-form')
      const b = unique(700, 'del-account')
      assert.equal((await post(f.form_slug, [{ name: 'cv', filename: 'a.bin', data: a }])).status, 200)
      assert.equal((await post(g.form_slug, [{ name: 'cv', filename: 'b.bin', data: b }])).status, 200)
      await sweep()
      assert.equal(await s.deps.blobs.exists(sha(a)), true)
      assert.equal((await s.request('DELETE', `/svc_api/forms/delete/${f.id}`, { key: erin.key })).status, 200)
      assert.equal((await fileRows(erin.id)).length, 1)
      await sweep()
      assert.equal(await s.deps.blobs.exists(sha(a)), false)
      assert.equal(await s.deps.blobs.exists(sha(b)), true)
      assert.notEqual(await deleteAccount(s.deps.db, Date.now(), erin.id, 'test'), null)
      assert.equal((await fileRows(erin.id)).length, 0)
      await sweep()
      assert.equal(await s.deps.blobs.exists(sha(b)), false)
    })

    it("the owner deletes one submission with its files: its bytes and the form's counters give their place back, the month's count does not", async () => {
      const hal = await s.user()
      await s.deps.db.k
        .updateTable('users')
        .set({ limits: JSON.stringify({ form_file_bytes: 2300 }) })
        .where('id', '=', hal.id)
        .execute()
      const f = await make(hal)
      const kept = unique(700, 'sub-kept')
      const gone = unique(900, 'sub-gone')
      assert.equal(
        (
          await post(f.form_slug, [
            { name: 'name', data: 'Keep' },
            { name: 'cv', filename: 'k.bin', data: kept },
          ])
        ).status,
        200,
      )
      const sent = await post(f.form_slug, [
        { name: 'name', data: 'Drop' },
        { name: 'cv', filename: 'd.bin', data: gone },
        // the same bytes as the kept submission's file: one blob for both
        { name: 'cover', filename: 'k2.bin', data: kept },
      ])
      assert.equal(sent.status, 200, sent.text)
      const id = sent.json.data.submission_id as string
      const listed = (await data(hal, f.id)).json.data.submissions.find((x: { id: string }) => x.id === id)
      const download = new URL(listed.files[0].url).pathname
      const before = (await s.get('/svc_api/forms/list', { key: hal.key })).json.data
      assert.equal(before.quota.file_bytes.used, 2300)
      assert.equal(before.quota.submissions_month.used, 2)
      // the quota is full: a new file is refused
      expectError(await post(f.form_slug, [{ name: 'cv', filename: 'n.bin', data: unique(500, 'sub-new') }]), 429, 1613)

      // another account's delete, an id of nothing: 404 / 1405, and nothing changes
      const del = (u: User, sid: string) => s.request('DELETE', `/svc_api/forms/delete_submission/${encodeURIComponent(sid)}`, { key: u.key })
      expectError(await del(bob, id), 404, 1405)
      expectError(await del(hal, 'no-such-submission'), 404, 1405)
      expectError(await del(hal, 'x'.repeat(65)), 404, 1405)
      assert.equal((await data(hal, f.id)).json.data.total, 2)
      assert.equal((await fileRows(hal.id)).length, 3)

      const r = await del(hal, id)
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(r.json.data, { id, form_id: f.id })
      assert.deepEqual(
        (await data(hal, f.id)).json.data.submissions.map((x: { data: { name: string } }) => x.data.name),
        ['Keep'],
      )
      assert.deepEqual(
        (await fileRows(hal.id)).map((x) => x.filename),
        ['k.bin'],
      )
      const after = (await s.get('/svc_api/forms/list', { key: hal.key })).json.data
      assert.equal(after.quota.file_bytes.used, 700)
      const counters = after.forms.find((x: { id: string }) => x.id === f.id)
      assert.deepEqual([counters.submission_count, counters.unread_count, counters.spam_count], [1, 1, 0])
      // the month counts what came in, as a deleted form leaves it
      assert.equal(after.quota.submissions_month.used, 2)
      expectError(await s.get(download, { key: hal.key }), 404, 1405)
      expectError(await del(hal, id), 404, 1405)
      // the freed bytes take a new file
      assert.equal((await post(f.form_slug, [{ name: 'cv', filename: 'n.bin', data: unique(500, 'sub-new2') }])).status, 200)
      // the sweeper frees the bytes only the deleted submission held; the shared ones stay
      await sweep()
      assert.equal(await s.deps.blobs.exists(sha(gone)), false)
      assert.equal(await s.deps.blobs.exists(sha(kept)), true)
    })

    it('the file limits are settings: lowered ones refuse what the defaults take, in the API error format', async () => {
      const own = await startServer({
        engine,
        env: { RATE_LIMITS: HIGH, FORM_FILE_MAX_BYTES: '1000', FORM_SUBMISSION_FILE_BYTES: '1500', FORM_SUBMISSION_FILES: '2', FORM_FILE_QUOTA_BYTES: '2000' },
      })
      try {
        const u = await own.user()
        const created = await own.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'Small', form_slug: slug() } })
        assert.equal(created.status, 200, created.text)
        const small = created.json.data as { form_slug: string }
        const send = (parts: Parameters<typeof multipart>[0], streamed = false) => {
          const mp = multipart(parts)
          const body = streamed ? (Readable.from([mp.body]) as never) : mp.body
          return own.post(`/api/forms/submit/${small.form_slug}`, { body, headers: { 'content-type': mp.contentType } })
        }
        const dflt = await make(alice)
        const file = (tag: string, n: number) => ({ name: tag, filename: `${tag}.bin`, data: unique(n, `setting-${tag}`) })

        // one file over FORM_FILE_MAX_BYTES, which the default (8 MiB) takes
        const one = [file('a', 1001)]
        assert.equal((await post(dflt.form_slug, one)).status, 200)
        const big = await send(one)
        expectError(big, 413, 1109)
        assert.match(big.json.message, /\b1000\b/)
        // two files, each within its limit, over FORM_SUBMISSION_FILE_BYTES together
        const two = [file('b', 800), file('c', 800)]
        assert.equal((await post(dflt.form_slug, two)).status, 200)
        for (const streamed of [false, true]) {
          const r = await send(two, streamed)
          expectError(r, 413, 1109)
          assert.match(r.json.message, /\b1500\b/)
        }
        // more files than FORM_SUBMISSION_FILES
        const three = [file('d', 10), file('e', 10), file('f', 10)]
        assert.equal((await post(dflt.form_slug, three)).status, 200)
        const many = await send(three)
        expectError(many, 413, 1111)
        assert.match(many.json.message, /at most 2 files|最多 2 个文件/)
        const stored = await own.get(`/svc_api/forms/data/${created.json.data.id}`, { key: u.key })
        assert.equal(stored.json.data.total, 0, 'nothing refused is stored')

        // FORM_FILE_QUOTA_BYTES: the default of an account's form_file_bytes
        assert.equal((await send([file('g', 1000), file('h', 500)])).status, 200)
        const over = await send([file('i', 600)])
        expectError(over, 429, 1613)
        assert.deepEqual([over.json.details.quota, over.json.details.used, over.json.details.limit], ['form_file_bytes', 1500, 2000])
        const list = await own.get('/svc_api/forms/list', { key: u.key })
        assert.deepEqual(list.json.data.quota.file_bytes, { used: 1500, limit: 2000 })
        // an account's own limit wins over the setting
        await own.deps.db.k
          .updateTable('users')
          .set({ limits: JSON.stringify({ form_file_bytes: 3000 }) })
          .where('id', '=', u.id)
          .execute()
        assert.equal((await send([file('j', 600)])).status, 200)
      } finally {
        await own.close()
      }
    })

    it("a sweep while the body is read spares the file (the request's lease), and the submission keeps it", async () => {
      const ivy = await s.user()
      const f = await make(ivy)
      // a file and the start of the part after it, then the rest held back: the file is stored, the submission not yet taken
      const bytes = unique(3000, 'slow-leased')
      const mp = multipart([
        { name: 'cv', filename: 'cv.bin', data: bytes },
        { name: 'note', data: 'LAST-PART' },
      ])
      const cut = mp.body.indexOf('LAST-PART')
      const body = new PassThrough()
      body.write(mp.body.subarray(0, cut))
      const answer = s.post(`/api/forms/submit/${f.form_slug}`, { body: body as never, headers: { 'content-type': mp.contentType } })
      await until(() => s.deps.blobs.exists(sha(bytes)), 20_000, 'the file stored')
      // past the grace (none), no row yet: the lease taken before the file's put spares it
      await sweep()
      assert.equal(await s.deps.blobs.exists(sha(bytes)), true)
      body.end(mp.body.subarray(cut))
      const r = await answer
      assert.equal(r.status, 200, r.text)
      const sub = (await data(ivy, f.id)).json.data.submissions[0]
      const dl = await s.get(new URL(sub.files[0].url).pathname, { key: ivy.key })
      assert.equal(dl.status, 200)
      assert.ok(dl.body.equals(bytes))
      assert.deepEqual(await s.deps.db.k.selectFrom('blob_leases').selectAll().execute(), [], 'the submission removed its lease')
    })
  })
}
