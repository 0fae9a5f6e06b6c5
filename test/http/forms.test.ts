import { createHash } from 'node:crypto'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import https from 'node:https'
import { expectClientError, expectError, rowLabel } from '../support/errors.js'
import { ENGINES, startServer, multipart, type Res, type TestServer } from '../support/server.js'
import { FakeClock } from '../../src/util/clock.js'
import { formStore } from '../../src/features/forms/store.js'

const HIGH = JSON.stringify(
  Object.fromEntries(['default', 'authenticated', 'vip'].map((t) => [t, { minute: 100000, hour: 100000, day: 100000, concurrent: 200 }])),
)
const BEIJING_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/

type User = Awaited<ReturnType<TestServer['user']>>

for (const engine of ENGINES) {
  describe(`forms [${engine}]`, () => {
    let s: TestServer
    let clock: FakeClock
    let alice: User
    let bob: User
    let seq = 0
    const slug = (p = 'f') => `${p}-${engine}-${++seq}-${Math.random().toString(36).slice(2, 8)}`
    const create = (u: User, body: unknown) => s.post('/svc_api/forms/create', { key: u.key, json: body })
    const make = async (u: User, body: Record<string, unknown> = {}) => {
      const r = await create(u, { form_name: 'Contact', form_slug: slug(), ...body })
      assert.equal(r.status, 200, r.text)
      return r.json.data as { id: string; form_slug: string; submit_url: string }
    }
    const submit = (formSlug: string, o: Parameters<TestServer['post']>[1] = {}) => s.post(`/api/forms/submit/${formSlug}`, o)
    const data = (u: User, id: string, q = '') => s.get(`/svc_api/forms/data/${id}${q}`, { key: u.key })
    /** A refused submission (1614) that names its field, in `field` and in the message. */
    const expectFieldError = (r: Res, field: string) => {
      expectError(r, 400, 1614)
      assert.equal(r.json.field, field)
      assert.ok(r.json.message.includes(field), r.json.message)
    }
    const CONTACT = [
      { name: 'name', label: '姓名', type: 'text', required: true },
      { name: 'email', type: 'email', required: true },
      { name: 'age', type: 'number' },
      { name: 'site', type: 'url' },
      { name: 'phone', type: 'tel' },
      { name: 'day', type: 'date' },
      { name: 'plan', type: 'select', options: ['free', 'pro'] },
      { name: 'agree', type: 'checkbox' },
      { name: 'topics', type: 'checkbox', options: ['a', 'b', 'c'] },
      { name: 'message', type: 'textarea' },
    ]

    before(async () => {
      clock = new FakeClock(Date.UTC(2026, 0, 15, 4, 0, 0))
      s = await startServer({ engine, clock, env: { RATE_LIMITS: HIGH } })
      alice = await s.user()
      bob = await s.user()
    })
    after(() => s.close())

    it('creates a form with every field and answers the documented record', async () => {
      const sl = slug('contact')
      const r = await create(alice, {
        form_name: '联系我们 📮',
        form_slug: sl,
        fields_config: CONTACT,
        allowed_origins: ['https://Example.COM:443', 'null'],
        redirect_url: 'https://example.com/谢谢',
        is_active: true,
        honeypot_field: 'website',
        min_fill_seconds: 3,
      })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      assert.equal(typeof r.json.message, 'string')
      const d = r.json.data
      for (const k of ['id', 'form_name', 'form_slug', 'fields_config', 'allowed_origins', 'redirect_url', 'is_active', 'submit_url', 'created_at'])
        assert.ok(k in d, k)
      assert.equal(d.form_name, '联系我们 📮')
      assert.equal(d.form_slug, sl)
      assert.equal(d.submit_url, `${s.url}/api/forms/submit/${sl}`)
      assert.deepEqual(d.allowed_origins, ['https://example.com', 'null'])
      assert.equal(d.redirect_url, 'https://example.com/谢谢')
      assert.equal(d.is_active, true)
      assert.equal(d.honeypot_field, 'website')
      assert.equal(d.min_fill_seconds, 3)
      assert.match(d.created_at, BEIJING_TIME)
      assert.equal(d.created_at, '2026-01-15 12:00:00')
      assert.deepEqual(d.fields_config[0], { name: 'name', label: '姓名', type: 'text', required: true })
      assert.deepEqual(d.fields_config[1], { name: 'email', label: null, type: 'email', required: true })
      assert.deepEqual(d.fields_config[6].options, ['free', 'pro'])
      const min = await create(alice, { form_name: 'minimal' })
      assert.equal(min.status, 200, min.text)
      assert.match(min.json.data.form_slug, /^[A-Za-z0-9_-]{3,64}$/)
      assert.deepEqual(min.json.data.fields_config, [])
      assert.deepEqual(min.json.data.allowed_origins, [])
      assert.equal(min.json.data.redirect_url, null)
      assert.equal(min.json.data.is_active, true)
      assert.equal(min.json.data.honeypot_field, '_gotcha')
    })

    describe('refuses invalid creation input with a clear 400 and creates nothing', () => {
      let formsBefore: number
      const count = async () => (await s.get('/svc_api/forms/list', { key: bob.key })).json.data.forms.length as number
      before(async () => {
        formsBefore = await count()
      })
      const cases: Array<[unknown, RegExp]> = [
        [{}, /form_name/],
        [{ form_name: '  ' }, /form_name/],
        [{ form_name: 'x', form_slug: 'a b' }, /form_slug/],
        [{ form_name: 'x', form_slug: 'ab' }, /form_slug/],
        [{ form_name: 'x', fields_config: 'name' }, /fields_config/],
        [{ form_name: 'x', fields_config: [{ name: 'a', type: 'image' }] }, /fields_config\[0\]\.type/],
        [{ form_name: 'x', fields_config: [{ name: 'a', type: 'select' }] }, /options/],
        [{ form_name: 'x', fields_config: [{ name: 'a' }, { name: 'A' }] }, /twice/],
        [{ form_name: 'x', fields_config: [{ name: '_hidden' }] }, /name/],
        [{ form_name: 'x', fields_config: [{ name: 'a', required: 'yes' }] }, /required/],
        [{ form_name: 'x', fields_config: [{ name: 'a', type: 'text', options: ['1'] }] }, /options/],
        [{ form_name: 'x', redirect_url: 'javascript:alert(1)' }, /redirect_url/],
        [{ form_name: 'x', redirect_url: 'data:text/html,<script>alert(1)</script>' }, /redirect_url/],
        [{ form_name: 'x', redirect_url: 'ftp://example.com/' }, /redirect_url/],
        [{ form_name: 'x', redirect_url: '/relative' }, /redirect_url/],
        [{ form_name: 'x', allowed_origins: 'https://a.example' }, /allowed_origins/],
        [{ form_name: 'x', allowed_origins: ['https://a.example/path'] }, /allowed_origins/],
        [{ form_name: 'x', allowed_origins: ['*'] }, /allowed_origins/],
        [{ form_name: 'x', allowed_origins: ['javascript:alert(1)'] }, /allowed_origins/],
        [{ form_name: 'x', is_active: 'yes' }, /is_active/],
        [{ form_name: 'x', min_fill_seconds: -1 }, /min_fill_seconds/],
        [{ form_name: 'x', fields_config: [{ name: 'website' }], honeypot_field: 'website' }, /honeypot_field/],
        [{ form_name: 'a\u0000b' }, /NUL/],
        [{ form_name: 'x', fields_config: [{ name: 'a', label: 'l\u0000' }] }, /NUL/],
        [{ form_name: 'bad \ud800 surrogate' }, /surrogate/],
      ]
      for (const [body, re] of cases) {
        it(`${rowLabel(body)}: 400 / 1106`, async () => {
          const r = await s.post('/svc_api/forms/create', { key: bob.key, json: body, headers: { 'accept-language': 'en' } })
          expectError(r, 400, 1106)
          assert.match(r.json.message, re)
        })
      }
      it('an escaped NUL in the JSON text: 400 / 1106', async () => {
        const nul = await s.post('/svc_api/forms/create', { key: bob.key, body: '{"form_name":"a\\u0000b"}', headers: { 'content-type': 'application/json' } })
        expectError(nul, 400, 1106)
      })
      it('after them all, no form was created', async () => {
        assert.equal(await count(), formsBefore)
      })
    })

    it('keeps slugs unique across the whole service, case-insensitively (1610)', async () => {
      const sl = slug('Unique')
      await make(alice, { form_slug: sl })
      expectError(await create(bob, { form_name: 'mine', form_slug: sl.toLowerCase() }), 400, 1610)
      expectError(await create(alice, { form_name: 'again', form_slug: sl }), 400, 1610)
      const other = await make(bob)
      expectError(await s.request('PUT', `/svc_api/forms/update/${other.id}`, { key: bob.key, json: { form_slug: sl.toUpperCase() } }), 400, 1610)
      // renaming to its own slug is fine
      const same = await s.request('PUT', `/svc_api/forms/update/${other.id}`, { key: bob.key, json: { form_slug: other.form_slug } })
      assert.equal(same.status, 200)
    })

    it("holds a deleted or renamed form's slug for its owner: no other account takes it (decision 264)", async () => {
      // accounts of their own: alice's and bob's form quotas are the other tests'
      const [ann, ben] = [await s.user(), await s.user()]
      const gone = slug('Gone')
      const f = await make(ann, { form_slug: gone })
      assert.equal((await s.request('DELETE', `/svc_api/forms/delete/${f.id}`, { key: ann.key })).status, 200)
      // pages that still post to it reach no one; ben cannot take it, in any case
      expectError(await submit(gone, { json: { x: 1 } }), 404, 1611)
      expectError(await create(ben, { form_name: 'mine', form_slug: gone.toUpperCase() }), 400, 1610)
      const other = await make(ben)
      expectError(await s.request('PUT', `/svc_api/forms/update/${other.id}`, { key: ben.key, json: { form_slug: gone } }), 400, 1610)
      // its owner takes it back
      const again = await make(ann, { form_slug: gone })
      assert.equal((await submit(gone, { json: { x: 1 } })).status, 200)
      // a rename leaves the old slug held too, and the new one is the form's
      const renamed = slug('Renamed')
      assert.equal((await s.request('PUT', `/svc_api/forms/update/${again.id}`, { key: ann.key, json: { form_slug: renamed } })).status, 200)
      expectError(await create(ben, { form_name: 'mine', form_slug: gone }), 400, 1610)
      const back = await s.request('PUT', `/svc_api/forms/update/${again.id}`, { key: ann.key, json: { form_slug: gone } })
      assert.equal(back.status, 200, back.text)
      expectError(await create(ben, { form_name: 'mine', form_slug: renamed }), 400, 1610)
    })

    it("requires authentication on management and hides other users' forms (404)", async () => {
      const f = await make(alice)
      const sub = await submit(f.form_slug, { json: { x: 1 } })
      assert.equal(sub.status, 200, sub.text)
      const id = sub.json.data.submission_id
      const endpoints: Array<[string, string, unknown?]> = [
        ['POST', '/svc_api/forms/create', { form_name: 'x' }],
        ['PUT', `/svc_api/forms/update/${f.id}`, { form_name: 'y' }],
        ['GET', '/svc_api/forms/list'],
        ['GET', `/svc_api/forms/data/${f.id}`],
        ['GET', `/svc_api/forms/export/${f.id}`],
        ['DELETE', `/svc_api/forms/delete/${f.id}`],
        ['PUT', `/svc_api/forms/mark_read/${id}`, { is_read: true }],
      ]
      for (const [m, p, body] of endpoints) {
        expectError(await s.request(m, p, body ? { json: body } : {}), 401, 1001)
        expectError(await s.request(m, p, { key: 'svc_' + 'A'.repeat(60), ...(body ? { json: body } : {}) }), 401, 1002)
      }
      for (const [m, p, body] of endpoints.slice(1)) {
        if (p === '/svc_api/forms/list') continue
        const r = await s.request(m, p, { key: bob.key, ...(body ? { json: body } : {}) })
        assert.equal(r.status, 404, `${m} ${p}`)
        assert.ok([1611, 1405].includes(r.json.error_code))
      }
      expectError(await s.get('/svc_api/forms/data/no-such-form', { key: alice.key }), 404, 1611)
      expectError(await s.request('PUT', '/svc_api/forms/mark_read/nope', { key: alice.key, json: { is_read: true } }), 404, 1405)
      // alice's form is untouched
      const d = await data(alice, f.id)
      assert.equal(d.json.data.total, 1)
      assert.equal(d.json.data.submissions[0].is_read, false)
      const bl = await s.get('/svc_api/forms/list', { key: bob.key })
      assert.ok(!bl.json.data.forms.some((x: { id: string }) => x.id === f.id))
    })

    it('accepts JSON, form-encoded and multipart submissions, validated and typed by field', async () => {
      const f = await make(alice, { fields_config: CONTACT })
      const j = await submit(f.form_slug, {
        json: {
          name: 'Zoë 🌸 王',
          email: 'zoe@example.com',
          age: 42,
          site: 'https://zoe.example/',
          phone: '+86 (10) 1234-5678',
          day: '2026-02-28',
          plan: 'pro',
          agree: true,
          topics: ['a', 'c'],
          message: 'مرحبا\nline two',
        },
      })
      assert.equal(j.status, 200, j.text)
      assert.deepEqual(Object.keys(j.json).sort(), ['data', 'message', 'success'])
      assert.equal(j.json.success, true)
      assert.match(j.json.data.submission_id, /^[0-9a-f-]{36}$/)
      clock.advance(1000)
      const u = await submit(f.form_slug, {
        body: 'name=%E6%9D%8E%E5%9B%9B&email=li%40example.cn&age=3.5&agree=on&topics=b&topics=c&plan=free',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      })
      assert.equal(u.status, 200, u.text)
      clock.advance(1000)
      const mp = multipart([
        { name: 'name', data: 'Ünïcödé ✓' },
        { name: 'email', data: 'm@example.org' },
        { name: 'message', data: '多行\r\n文本' },
        { name: '_ts', data: '1' },
      ])
      const m = await submit(f.form_slug, { body: mp.body, headers: { 'content-type': mp.contentType } })
      assert.equal(m.status, 200, m.text)
      const d = await data(alice, f.id)
      assert.equal(d.status, 200)
      assert.equal(d.json.data.total, 3)
      const [third, second, first] = d.json.data.submissions
      assert.equal(first.id, j.json.data.submission_id)
      assert.deepEqual(first.data, {
        name: 'Zoë 🌸 王',
        email: 'zoe@example.com',
        age: 42,
        site: 'https://zoe.example/',
        phone: '+86 (10) 1234-5678',
        day: '2026-02-28',
        plan: 'pro',
        agree: true,
        topics: ['a', 'c'],
        message: 'مرحبا\nline two',
      })
      assert.deepEqual(second.data, { name: '李四', email: 'li@example.cn', age: 3.5, plan: 'free', agree: true, topics: ['b', 'c'] })
      assert.deepEqual(third.data, { name: 'Ünïcödé ✓', email: 'm@example.org', agree: false, topics: [], message: '多行\r\n文本' })
      for (const x of [first, second, third]) {
        assert.deepEqual(Object.keys(x).sort(), ['created_at', 'data', 'files', 'id', 'ip_prefix', 'is_read', 'is_spam', 'spam_reason', 'user_agent'])
        assert.equal(x.is_read, false)
        assert.equal(x.is_spam, false)
        assert.equal(x.ip_prefix, '127.0.0.0/24')
        assert.match(x.created_at, BEIJING_TIME)
      }
    })

    it('reads a form-encoded post in the encoding the browser names (_charset_, charset), and refuses bytes it cannot read', async () => {
      const dan = await s.user()
      const f = await make(dan)
      const form = (body: string, type = 'application/x-www-form-urlencoded') => submit(f.form_slug, { body, headers: { 'content-type': type } })
      // a page in GBK, Latin-1 (accept-charset) or Shift_JIS sends its own bytes; <input type=hidden name=_charset_> names them
      assert.equal((await form('_charset_=GBK&name=%C4%E3%BA%C3&city=%B1%B1%BE%A9')).status, 200)
      assert.equal((await form('name=Ren%E9+M%FCller&_charset_=ISO-8859-1')).status, 200)
      assert.equal((await form('name=%82%A0&c=a&c=b', 'application/x-www-form-urlencoded; charset=Shift_JIS')).status, 200)
      // bytes that are not UTF-8, with nothing naming their encoding, or an encoding nobody knows
      const unnamed = await form('name=%C4%E3%BA%C3')
      expectError(unnamed, 400, 1106)
      assert.match(unnamed.json.message, /_charset_/)
      expectError(await form('name=x&_charset_=klingon'), 400, 1106)
      const d = await data(dan, f.id)
      assert.deepEqual(
        d.json.data.submissions.map((x: { data: unknown }) => x.data),
        [{ name: 'あ', c: ['a', 'b'] }, { name: 'René Müller' }, { name: '你好', city: '北京' }],
      )
    })

    it('reads multipart text fields in the encoding the _charset_ field names, and refuses bytes it cannot read', async () => {
      const eve = await s.user()
      const f = await make(eve)
      const post = (parts: Parameters<typeof multipart>[0]) => {
        clock.advance(7000)
        const mp = multipart(parts)
        return submit(f.form_slug, { body: mp.body, headers: { 'content-type': mp.contentType } })
      }
      // a windows-1252 page names its encoding in _charset_, here after the field it applies to
      const latin = await post([
        { name: 'name', data: Buffer.from([0x52, 0x65, 0x6e, 0xe9]) },
        { name: '_charset_', data: 'windows-1252' },
      ])
      assert.equal(latin.status, 200, latin.text)
      const gbk = await post([
        { name: '_charset_', data: 'GBK' },
        { name: 'city', data: Buffer.from([0xb1, 0xb1, 0xbe, 0xa9]) },
        { name: 'city', data: 'x' },
      ])
      assert.equal(gbk.status, 200, gbk.text)
      // the same bytes with nothing naming their encoding, an unknown encoding, a name whose bytes are lost
      const unnamed = await post([{ name: 'name', data: Buffer.from([0x52, 0x65, 0x6e, 0xe9]) }])
      expectError(unnamed, 400, 1106)
      assert.match(unnamed.json.message, /_charset_/)
      expectError(
        await post([
          { name: 'name', data: 'x' },
          { name: '_charset_', data: 'klingon' },
        ]),
        400,
        1106,
      )
      const latinName = multipart([{ name: 'pr@nom', data: 'x' }])
      latinName.body[latinName.body.indexOf('pr@nom') + 2] = 0xe9
      clock.advance(7000)
      expectError(await submit(f.form_slug, { body: latinName.body, headers: { 'content-type': latinName.contentType } }), 400, 1106)
      const d = await data(eve, f.id)
      assert.deepEqual(
        d.json.data.submissions.map((x: { data: unknown }) => x.data),
        [{ city: ['北京', 'x'] }, { name: 'René' }],
      )
    })

    it('refuses an empty submission on every body type: nothing stored, no quota used', async () => {
      const fay = await s.user()
      const f = await make(fay)
      const later = (o: Parameters<TestServer['post']>[1]) => {
        clock.advance(7000)
        return submit(f.form_slug, o)
      }
      const onlyCharset = multipart([{ name: '_charset_', data: 'UTF-8' }])
      const bodies: Array<[string, Parameters<TestServer['post']>[1]]> = [
        ['no body', {}],
        ['an empty JSON body', { body: '', headers: { 'content-type': 'application/json' } }],
        ['{}', { json: {} }],
        ['control fields only', { json: { _gotcha: '', _ts: 5 } }],
        ['blank values', { json: { a: '  ', b: null, c: [], d: [''] } }],
        ['text/plain {}', { body: '{}', headers: { 'content-type': 'text/plain' } }],
        ['an empty form-encoded body', { body: '', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
        ['form-encoded control fields', { body: '_gotcha=&_ts=1&a=', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
        ['multipart _charset_ only', { body: onlyCharset.body, headers: { 'content-type': onlyCharset.contentType } }],
      ]
      for (const [label, o] of bodies) {
        const r = await later({ ...o, headers: { ...o?.headers, 'accept-language': 'en' } })
        expectError(r, 400, 1106)
        assert.match(r.json.message, /empty/, label)
      }
      // a browser's post gets the page with the reason
      const page = await later({ form: { _gotcha: '' }, headers: { accept: 'text/html', 'accept-language': 'en' } })
      assert.equal(page.status, 400)
      assert.match(page.text, /empty/)
      const list = await s.get('/svc_api/forms/list', { key: fay.key })
      assert.equal(list.json.data.quota.submissions_month.used, 0)
      assert.equal((await data(fay, f.id)).json.data.total, 0)
      // a false checkbox or a 0 is a value
      assert.equal((await later({ json: { agree: false } })).status, 200)
      assert.equal((await later({ form: { n: '0' } })).status, 200)
      assert.equal((await data(fay, f.id)).json.data.total, 2)
    })

    it('answers a __proto__ field name the same on every body type, and keeps other Object.prototype names', async () => {
      const gus = await s.user()
      const f = await make(gus)
      const later = (o: Parameters<TestServer['post']>[1]) => {
        clock.advance(7000)
        return submit(f.form_slug, o)
      }
      const mp = multipart([
        { name: '__proto__', data: 'x' },
        { name: 'a', data: 'y' },
      ])
      const bodies: Array<[string, Parameters<TestServer['post']>[1]]> = [
        ['form-encoded', { body: '__proto__=x&toString=y', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
        ['JSON', { body: '{"__proto__":"x","toString":"y"}', headers: { 'content-type': 'application/json' } }],
        ['text/plain JSON', { body: '{"__proto__":"x","toString":"y"}', headers: { 'content-type': 'text/plain' } }],
        ['multipart', { body: mp.body, headers: { 'content-type': mp.contentType } }],
      ]
      for (const [label, o] of bodies) {
        const r = await later(o)
        expectError(r, 400, 1106)
        assert.match(r.json.message, /__proto__/, label)
      }
      assert.equal((await data(gus, f.id)).json.data.total, 0)
      assert.equal((await later({ body: 'toString=y&constructor=z', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status, 200)
      assert.equal((await later({ json: { toString: 'y' } })).status, 200)
      const d = await data(gus, f.id)
      const stored: unknown[] = [{ toString: 'y' }, { toString: 'y', constructor: 'z' }]
      assert.deepEqual(
        d.json.data.submissions.map((x: { data: unknown }) => x.data),
        stored,
      )
    })

    describe('answers 1614 naming the field for unknown, missing or mistyped fields, and stores nothing', () => {
      let f: Awaited<ReturnType<typeof make>>
      const ok = { name: 'n', email: 'a@b.co' }
      before(async () => {
        f = await make(alice, { fields_config: CONTACT })
      })
      // each submission a few seconds after the last, under the per-address limit of the form
      const later = (o: Parameters<TestServer['post']>[1]) => {
        clock.advance(7000)
        return submit(f.form_slug, o)
      }
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ ...ok, extra: 'x' }, 'extra'],
        [{ email: 'a@b.co' }, 'name'],
        [{ name: '   ', email: 'a@b.co' }, 'name'],
        [{ name: 'n' }, 'email'],
        [{ name: 'n', email: 'not-an-email' }, 'email'],
        [{ ...ok, age: 'forty' }, 'age'],
        [{ ...ok, age: '1e400' }, 'age'],
        [{ ...ok, site: 'javascript:alert(1)' }, 'site'],
        [{ ...ok, site: 'nope' }, 'site'],
        [{ ...ok, phone: 'call me' }, 'phone'],
        [{ ...ok, day: '2026-02-30' }, 'day'],
        [{ ...ok, day: '15/01/2026' }, 'day'],
        [{ ...ok, plan: 'enterprise' }, 'plan'],
        [{ ...ok, agree: 'maybe' }, 'agree'],
        [{ ...ok, topics: ['a', 'z'] }, 'topics'],
        [{ ...ok, name: ['a', 'b'] }, 'name'],
        [{ ...ok, name: { nested: true } }, 'name'],
      ]
      for (const [body, field] of cases) {
        it(`${rowLabel(body)}: 400 / 1614 on ${field}`, async () => expectFieldError(await later({ json: body }), field))
      }
      it('a file part in a field the form does not declare (multipart): 400 / 1614 on cv', async () => {
        const up = multipart([
          { name: 'name', data: 'n' },
          { name: 'email', data: 'a@b.co' },
          { name: 'cv', filename: 'cv.pdf', type: 'application/pdf', data: Buffer.alloc(100, 1) },
        ])
        const fr = await later({ body: up.body, headers: { 'content-type': up.contentType, 'accept-language': 'en' } })
        expectFieldError(fr, 'cv')
        assert.match(fr.json.message, /file/)
      })
      it('a <select multiple> posted to a select field: 400 / 1614 on plan, saying to declare a checkbox with options', async () => {
        const body = 'name=n&email=a%40b.co&plan=free&plan=pro'
        const r = await later({ body, headers: { 'content-type': 'application/x-www-form-urlencoded', 'accept-language': 'en' } })
        expectFieldError(r, 'plan')
        assert.match(r.json.message, /<select multiple>.*checkbox field with options/)
      })
      const refused: Array<[string, Parameters<TestServer['post']>[1], number, number]> = [
        ['a NUL in a value', { json: { ...ok, name: 'a\u0000b' } }, 400, 1106],
        ['a lone surrogate in a value', { json: { ...ok, message: 'x\udc00y' } }, 400, 1106],
        ['an array body', { json: [ok] }, 400, 1106],
        ['text/plain that is not JSON', { body: 'hello', headers: { 'content-type': 'text/plain' } }, 400, 1113],
        ['application/xml', { body: '<x/>', headers: { 'content-type': 'application/xml' } }, 415, 1112],
        ['broken JSON', { body: '{"name":', headers: { 'content-type': 'application/json' } }, 400, 1113],
      ]
      for (const [label, o, status, code] of refused) {
        it(`${label}: ${status} / ${code}`, async () => expectError(await later(o), status, code))
      }
      it('a body type it does not read: the 415 names the types it reads, in each language', async () => {
        for (const [lang, words] of [
          ['en', /application\/x-www-form-urlencoded.*multipart\/form-data.*application\/json/],
          ['zh', /application\/x-www-form-urlencoded.*multipart\/form-data.*application\/json/],
        ] as const) {
          const r = await later({ body: '<x/>', headers: { 'content-type': 'application/xml', 'accept-language': lang } })
          expectError(r, 415, 1112)
          assert.match(r.json.solution, words)
          assert.doesNotMatch(r.json.solution, lang === 'en' ? /[\u4e00-\u9fff]/ : /\bor\b/)
        }
      })
      it('a form posted as text/plain (enctype="text/plain"): 400 / 1106 saying to drop the enctype, to a script and to a browser', async () => {
        const body = 'name=n\r\nemail=a@b.co\r\n'
        const r = await later({ body, headers: { 'content-type': 'text/plain', 'accept-language': 'en' } })
        expectError(r, 400, 1106)
        assert.match(r.json.message, /enctype="text\/plain"/)
        const page = await later({
          body,
          headers: { 'content-type': 'text/plain', 'accept-language': 'en', accept: 'text/html', 'sec-fetch-mode': 'navigate' },
        })
        assert.equal(page.status, 400)
        assert.match(page.text, /<h1>Not sent<\/h1>/)
        assert.match(page.text, /enctype=&quot;text\/plain&quot;/)
      })
      it('after them all, nothing was stored', async () => {
        assert.equal((await data(alice, f.id)).json.data.total, 0)
      })
    })

    it("says what is wrong with a form, a submission or a notification setting in the answer's language", async () => {
      const CJK = /[\u4e00-\u9fff]/
      const hal = await s.user()
      const f = await make(hal, { fields_config: CONTACT })
      const free = await make(hal)
      const ok = { name: 'n', email: 'a@b.co' }
      const formBody = (body: string) => ({ body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
      type Req = [method: string, path: string, o: Parameters<TestServer['post']>[1], code: number]
      const createReq = (json: unknown): Req => ['POST', '/svc_api/forms/create', { key: hal.key, json }, 1106]
      const post = (o: Parameters<TestServer['post']>[1], code = 1106): Req => ['POST', `/api/forms/submit/${f.form_slug}`, o, code]
      const cases: Array<[Req, string]> = [
        [createReq({ form_name: '  ' }), 'Invalid parameter: form_name is required (a non-empty string)'],
        [createReq({ form_name: 'a\u0000b' }), 'Invalid parameter: form_name must not contain the NUL character (\\u0000)'],
        [
          createReq({ form_name: 'x', fields_config: [{ name: 'a', type: 'select' }] }),
          'Invalid parameter: fields_config[0].options is required for a select field',
        ],
        [createReq({ form_name: 'x', fields_config: [{ name: 'a' }, { name: 'A' }] }), 'Invalid parameter: fields_config[1].name "A" is used twice'],
        [createReq({ form_name: 'x', redirect_url: 'ftp://example.com/' }), 'Invalid parameter: redirect_url must be an http(s) URL; "ftp:" is not allowed'],
        [createReq({ form_name: 'x', allowed_origins: ['*'] }), 'Invalid parameter: allowed_origins: leave the list empty to accept any origin instead of "*"'],
        [
          createReq({ form_name: 'x', allowed_origins: ['https://a.example/path'] }),
          'Invalid parameter: allowed_origins[0] must be an origin (scheme://host[:port]) without path, query or credentials',
        ],
        [createReq({ form_name: 'x', min_fill_seconds: -1 }), 'Invalid parameter: min_fill_seconds must be an integer from 0 to 3600'],
        [
          createReq({ form_name: 'x', fields_config: [{ name: 'website' }], honeypot_field: 'website' }),
          `Invalid parameter: honeypot_field "website" must not be one of the form's fields`,
        ],
        [post({ json: { ...ok, extra: 'x' } }, 1614), 'This form has no field "extra".'],
        [post({ json: { name: 'n' } }, 1614), 'The field "email" is required.'],
        [post({ json: { name: 'n', email: 'not-an-email' } }, 1614), 'The field "email" must be an email address.'],
        [post({ json: { ...ok, day: '2026-02-30' } }, 1614), 'The field "day" must be a date (YYYY-MM-DD).'],
        [post({ json: { ...ok, plan: 'enterprise' } }, 1614), 'The field "plan" must be one of its options; "enterprise" is not one of them.'],
        [
          ['POST', `/api/forms/submit/${free.form_slug}`, { json: { a: ' ' } }, 1106],
          'Invalid parameter: the submission is empty: send at least one field with a value',
        ],
        [post({ json: [ok] }), 'Invalid parameter: the body must be an object of fields, e.g. {"email": "a@example.com"}'],
        [post({ json: { ...ok, name: 'a\u0000b' } }), 'Invalid parameter: field "name" must not contain the NUL character (\\u0000)'],
        [post(formBody('name=x&_charset_=klingon')), 'Invalid parameter: the _charset_ field names an unknown character encoding "klingon"'],
        [
          post(formBody('name=%C4%E3')),
          'Invalid parameter: the form data is not valid utf-8: send it as UTF-8 (<form accept-charset="UTF-8">), or add <input type="hidden" name="_charset_"> so the browser names its encoding',
        ],
        [['PUT', `/svc_api/forms/email/${f.id}`, { key: hal.key, json: { enabled: 'yes' } }, 1106], 'Invalid parameter: enabled must be true or false'],
        [
          ['PUT', `/svc_api/forms/email/${f.id}`, { key: hal.key, json: { enabled: false, mode: 'weekly' } }, 1106],
          'Invalid parameter: mode must be "each" or "digest"',
        ],
      ]
      for (const [[method, path, o, code], en] of cases) {
        for (const lang of [undefined, 'zh-CN', 'en']) {
          clock.advance(7000)
          const headers = { ...o?.headers, ...(lang ? { 'accept-language': lang } : {}) }
          const r = await s.request(method, path, { ...o, headers })
          expectError(r, 400, code)
          if (lang === 'en') assert.equal(r.json.message, en)
          else {
            assert.ok(CJK.test(r.json.message), r.json.message)
            // markup the message quotes (<form accept-charset=...>) is not words
            assert.doesNotMatch(r.json.message.replace(/<[^>]*>/g, ''), /[a-z]{4,} [a-z]{2,}/, `no English words: ${r.json.message}`)
          }
        }
      }
      assert.equal((await data(hal, f.id)).json.data.total, 0)
      assert.equal((await data(hal, free.id)).json.data.total, 0)
      assert.equal((await s.get('/svc_api/forms/list', { key: hal.key })).json.data.forms.length, 2)
    })

    describe('a form without fields_config takes any field names; odd JSON is a 4xx, never a 500', () => {
      let free: Awaited<ReturnType<typeof make>>
      before(async () => {
        free = await make(alice)
      })
      const raw = (body: string) => submit(free.form_slug, { body, headers: { 'content-type': 'application/json' } })
      it('stores any field names', async () => {
        const r = await submit(free.form_slug, {
          body: JSON.stringify({ 'any name': 'v', 数字: 3, list: ['x', true], _ts: 5, _gotcha: '' }),
          headers: { 'content-type': 'text/plain;charset=UTF-8' },
        })
        assert.equal(r.status, 200, r.text)
        assert.deepEqual((await data(alice, free.id)).json.data.submissions[0].data, { 'any name': 'v', 数字: 3, list: ['x', true] })
      })
      it('an object value: 400 / 1614', async () => expectError(await submit(free.form_slug, { json: { obj: { a: 1 } } }), 400, 1614))
      it('a number out of range (1e400): 400 / 1614', async () => expectError(await raw('{"n": 1e400}'), 400, 1614))
      it('JSON after a byte order mark, as application/json and text/plain', async () => {
        for (const type of ['application/json', 'text/plain']) {
          const r = await submit(free.form_slug, { body: `\ufeff{"bom": "${type}"}`, headers: { 'content-type': type } })
          assert.equal(r.status, 200, r.text)
        }
      })
      it('text/plain null: 400 / 1106', async () =>
        expectError(await submit(free.form_slug, { body: 'null', headers: { 'content-type': 'text/plain' } }), 400, 1106))
      for (const [label, body] of [
        ['__proto__', '{"__proto__": {"x": 1}}'],
        ['constructor.prototype', '{"a": {"constructor": {"prototype": {"x": 1}}}}'],
        ['arrays 30000 deep', '['.repeat(30000) + ']'.repeat(30000)],
      ]) {
        it(`${label}: 4xx`, async () => expectClientError(await raw(body)))
      }
      it('after them all, only the good submissions are stored', async () => {
        assert.equal((await data(alice, free.id)).json.data.total, 3)
      })
    })

    it('refuses bodies over 64 KB before they reach the database (413)', async () => {
      clock.advance(61_000)
      const f = await make(alice)
      const big = 'x'.repeat(70 * 1024)
      const tooBig = await submit(f.form_slug, { json: { m: big }, headers: { 'accept-language': 'en' } })
      expectError(tooBig, 413, 1109)
      // the message names the route's own limit as people say it, with the exact count
      assert.equal(tooBig.json.message, 'Request body too large; the maximum is 64 KiB (65536 bytes)')
      expectError(await submit(f.form_slug, { form: { m: big } }), 413, 1109)
      const mp = multipart([{ name: 'm', data: big }])
      expectError(await submit(f.form_slug, { body: mp.body, headers: { 'content-type': mp.contentType } }), 413, 1109)
      const many = multipart(Array.from({ length: 40 }, (_, i) => ({ name: `f${i}`, data: 'y'.repeat(2000) })))
      // streamed without Content-Length: counted while parsing
      expectError(await submit(f.form_slug, { body: Readable.from([many.body]) as never, headers: { 'content-type': many.contentType } }), 413, 1109)
      assert.equal((await data(alice, f.id)).json.data.total, 0)
      const fine = await submit(f.form_slug, { json: { m: 'x'.repeat(60 * 1024) } })
      assert.equal(fine.status, 200, fine.text)
    })

    it('answers a browser form post over 64 KB with its page, however the size shows', async () => {
      clock.advance(61_000)
      const ben = await s.user()
      const f = await make(ben)
      const nav = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-mode': 'navigate', 'accept-language': 'en' }
      const big = 'x'.repeat(70 * 1024)
      // a multipart body may carry files (8 MiB): its text fields are held to 64 KB as it is read
      const attached = multipart([
        { name: 'name', data: 'Ann' },
        { name: 'cv', data: big },
      ])
      for (const r of [
        await submit(f.form_slug, { body: attached.body, headers: { ...nav, 'content-type': attached.contentType } }),
        // streamed (refused by the body parser)
        await submit(f.form_slug, {
          body: Readable.from([Buffer.from(`m=${big}`)]) as never,
          headers: { ...nav, 'content-type': 'application/x-www-form-urlencoded' },
        }),
      ]) {
        assert.equal(r.status, 413)
        assert.match(String(r.header('content-type')), /^text\/html/)
        assert.match(r.text, /Not sent/)
        assert.match(r.text, /65536/)
      }
      assert.equal((await data(ben, f.id)).json.data.total, 0)
    })

    it('answers 1611 for a missing form and 1612 for an inactive one', async () => {
      expectError(await submit('no-such-form-here', { json: { a: 1 } }), 404, 1611)
      expectError(await submit('bad%20slug', { json: { a: 1 } }), 404, 1611)
      const f = await make(alice, { is_active: false })
      expectError(await submit(f.form_slug, { json: { a: 1 } }), 403, 1612)
      const up = await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { is_active: true } })
      assert.equal(up.status, 200)
      assert.equal(up.json.data.is_active, true)
      assert.equal((await submit(f.form_slug, { json: { a: 1 } })).status, 200)
      await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { is_active: false } })
      expectError(await submit(f.form_slug, { json: { a: 1 } }), 403, 1612)
      assert.equal((await data(alice, f.id)).json.data.total, 1)
    })

    it('a form without method="post" (a GET with its fields in the query): a browser gets a page saying so, a script the 405; nothing stored', async () => {
      // an owner of its own: alice's forms fill her quota of 20 in this file
      const carol = await s.user()
      const f = await make(carol)
      const q = `/api/forms/submit/${f.form_slug}?name=Ann&message=hi`
      const nav = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-mode': 'navigate', referer: 'https://site.example/contact.html' }
      for (const [lang, words] of [
        ['en', /<h1>Not sent<\/h1>.*method=&quot;post&quot;/s],
        ['zh-CN', /<h1>未能提交<\/h1>.*method=&quot;post&quot;/s],
      ] as const) {
        const page = await s.get(q, { headers: { ...nav, 'accept-language': lang } })
        assert.equal(page.status, 405, page.text)
        assert.match(String(page.header('content-type')), /^text\/html/)
        assert.match(page.text, words)
        assert.match(page.text, /href="https:\/\/site\.example\/contact\.html"/, 'a way back to the form')
        assert.equal(page.header('allow'), 'POST, OPTIONS')
      }
      // a script, and every other method, keep the API's 405 (its Allow does not grow a GET)
      const script = await s.get(q, { headers: { 'accept-language': 'en' } })
      expectError(script, 405, 1404)
      assert.equal(script.header('allow'), 'POST, OPTIONS')
      assert.equal(script.json.message, 'This path does not accept GET')
      const put = await s.request('PUT', q, { headers: { 'accept-language': 'en' } })
      expectError(put, 405, 1404)
      assert.equal(put.header('allow'), 'POST, OPTIONS')
      assert.equal((await data(carol, f.id)).json.data.total, 0)
    })

    it('answers CORS preflights and enforces allowed_origins on Origin and Referer', async () => {
      const open = await make(alice)
      const pre = await s.request('OPTIONS', `/api/forms/submit/${open.form_slug}`, {
        headers: { origin: 'https://any.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      })
      assert.equal(pre.status, 204)
      assert.equal(pre.header('access-control-allow-origin'), 'https://any.example')
      assert.match(pre.header('access-control-allow-methods')!, /POST/)
      assert.match(pre.header('access-control-allow-headers')!, /Content-Type/i)
      assert.match(pre.header('vary')!, /Origin/)
      assert.equal(pre.header('access-control-allow-credentials'), undefined)
      const anyPost = await submit(open.form_slug, { json: { a: 1 }, headers: { origin: 'null' } })
      assert.equal(anyPost.status, 200)
      assert.equal(anyPost.header('access-control-allow-origin'), 'null')
      assert.equal((await submit(open.form_slug, { json: { a: 1 } })).header('access-control-allow-origin'), '*')

      const strict = await make(alice, { allowed_origins: ['https://good.example'] })
      const url = `/api/forms/submit/${strict.form_slug}`
      const good = await s.request('OPTIONS', url, { headers: { origin: 'https://good.example', 'access-control-request-method': 'POST' } })
      assert.equal(good.header('access-control-allow-origin'), 'https://good.example')
      const evilPre = await s.request('OPTIONS', url, { headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } })
      assert.equal(evilPre.header('access-control-allow-origin'), undefined)
      const evil = await submit(strict.form_slug, { json: { a: 1 }, headers: { origin: 'https://evil.example' } })
      expectError(evil, 403, 1620)
      assert.equal(evil.header('access-control-allow-origin'), undefined)
      const ok = await submit(strict.form_slug, { json: { a: 1 }, headers: { origin: 'https://good.example' } })
      assert.equal(ok.status, 200)
      assert.equal(ok.header('access-control-allow-origin'), 'https://good.example')
      assert.equal(ok.header('access-control-allow-credentials'), undefined)
      // a sandboxed page (Origin: null) is judged by its Referer
      const viaRef = await submit(strict.form_slug, { json: { a: 2 }, headers: { origin: 'null', referer: 'https://good.example/contact.html' } })
      assert.equal(viaRef.status, 200, viaRef.text)
      assert.equal(viaRef.header('access-control-allow-origin'), 'null')
      expectError(await submit(strict.form_slug, { json: { a: 3 }, headers: { origin: 'null' } }), 403, 1620)
      expectError(await submit(strict.form_slug, { json: { a: 3 }, headers: { origin: 'null', referer: 'https://evil.example/' } }), 403, 1620)
      expectError(await submit(strict.form_slug, { json: { a: 3 }, headers: { referer: 'https://evil.example/x' } }), 403, 1620)
      // the owner's own origin needs no entry; another user's origin is refused
      const own = `http://${alice.username}.localhost:8080`
      const fromOwn = await submit(strict.form_slug, { json: { a: 4 }, headers: { origin: own } })
      assert.equal(fromOwn.status, 200, fromOwn.text)
      assert.equal(fromOwn.header('access-control-allow-origin'), own)
      expectError(await submit(strict.form_slug, { json: { a: 5 }, headers: { origin: `http://${bob.username}.localhost:8080` } }), 403, 1620)
      // and so do the owner's projects' own origins ({project}.{username}); another user's are refused
      const ownProject = `http://blog.${alice.username}.localhost:8080`
      const fromProject = await submit(strict.form_slug, { json: { a: 6 }, headers: { origin: ownProject } })
      assert.equal(fromProject.status, 200, fromProject.text)
      assert.equal(fromProject.header('access-control-allow-origin'), ownProject)
      expectError(await submit(strict.form_slug, { json: { a: 7 }, headers: { origin: `http://blog.${bob.username}.localhost:8080` } }), 403, 1620)
      // errors the page may read carry ACAO for an allowed origin
      const bad = await submit(strict.form_slug, { body: '{', headers: { origin: 'https://good.example', 'content-type': 'application/json' } })
      expectError(bad, 400, 1113)
      assert.equal(bad.header('access-control-allow-origin'), 'https://good.example')
      assert.equal((await data(alice, strict.id)).json.data.total, 4)

      // the literal "null" origin can be allowed
      const sandboxed = await make(alice, { allowed_origins: ['null'] })
      const n = await submit(sandboxed.form_slug, { json: { a: 1 }, headers: { origin: 'null' } })
      assert.equal(n.status, 200)
      assert.equal(n.header('access-control-allow-origin'), 'null')
      expectError(await submit(sandboxed.form_slug, { json: { a: 1 }, headers: { origin: 'https://good.example' } }), 403, 1620)
      // missing forms still answer readable CORS errors
      const missing = await submit('missing-form-xyz', { json: {}, headers: { origin: 'https://x.example' } })
      assert.equal(missing.header('access-control-allow-origin'), 'https://x.example')
    })

    it('redirects a browser form post (303) when redirect_url is set; AJAX always gets JSON', async () => {
      const f = await make(alice, { redirect_url: 'https://example.com/thanks?from=form' })
      const nav = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
      const r = await submit(f.form_slug, { form: { a: '1' }, headers: { accept: nav } })
      assert.equal(r.status, 303)
      assert.equal(r.header('location'), 'https://example.com/thanks?from=form')
      const ajax = await submit(f.form_slug, { form: { a: '2' }, headers: { accept: '*/*' } })
      assert.equal(ajax.status, 200)
      assert.equal(ajax.json.success, true)
      const json = await submit(f.form_slug, { json: { a: 3 }, headers: { accept: 'application/json, text/html' } })
      assert.equal(json.status, 200)
      for (const h of [{ 'sec-fetch-mode': 'cors' }, { 'x-requested-with': 'XMLHttpRequest' }] as Array<Record<string, string>>) {
        const x = await submit(f.form_slug, { form: { a: '5' }, headers: { accept: nav, ...h } })
        assert.equal(x.status, 200)
        assert.equal(x.json.success, true)
      }
      assert.equal((await submit(f.form_slug, { form: { a: '6' }, headers: { accept: nav, 'sec-fetch-mode': 'navigate' } })).status, 303)
      const plain = await make(alice)
      // without redirect_url a browser lands on the service's short thank-you page, not JSON
      const noRedirect = await submit(plain.form_slug, {
        form: { a: '1' },
        headers: { accept: nav, 'accept-language': 'en', referer: 'https://site.example/contact.html' },
      })
      assert.equal(noRedirect.status, 200)
      assert.match(String(noRedirect.header('content-type')), /^text\/html/)
      assert.match(noRedirect.text, /Your submission was received/)
      assert.match(noRedirect.text, /<a id="back" href="https:\/\/site\.example\/contact\.html">Back<\/a>/)
      const csp = String(noRedirect.header('content-security-policy'))
      assert.match(csp, /default-src 'none'/)
      // one script, the Back link's, run by its hash alone (decision 157)
      const scripts = [...noRedirect.text.matchAll(/<script>([^<]*)<\/script>/g)].map((m) => m[1])
      assert.equal(scripts.length, 1)
      assert.equal(noRedirect.text.split('<script').length, 2)
      const hash = createHash('sha256').update(scripts[0]).digest('base64')
      assert.match(csp, new RegExp(`script-src 'sha256-${hash.replace(/[+/]/g, '\\$&')}';`))
      // a form in an iframe (a widget on a blog) lands in its frame: any page may frame this one
      assert.doesNotMatch(csp, /frame-ancestors/)
      // a refused browser post: a page with the reason and the error's status, framable too
      const refused = await submit('no-such-form-here', { form: { a: '1' }, headers: { accept: nav, 'accept-language': 'en' } })
      assert.equal(refused.status, 404)
      assert.match(String(refused.header('content-type')), /^text\/html/)
      assert.match(refused.text, /Not sent/)
      assert.doesNotMatch(String(refused.header('content-security-policy')), /frame-ancestors/)
      const asGet = await s.get(`/api/forms/submit/${plain.form_slug}?a=1`, { headers: { accept: nav, 'sec-fetch-mode': 'navigate' } })
      assert.equal(asGet.status, 405)
      assert.doesNotMatch(String(asGet.header('content-security-policy')), /frame-ancestors/)
      // the service's other short pages are never framed
      const missing = await s.get('/no-such-page-here', { headers: { accept: nav } })
      assert.equal(missing.status, 404)
      assert.match(String(missing.header('content-security-policy')), /frame-ancestors 'none'/)
      assert.equal((await data(alice, f.id)).json.data.total, 6)
      // redirect_url can be changed and cleared, never to a script URL
      expectError(await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { redirect_url: 'javascript:alert(1)' } }), 400, 1106)
      expectError(await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { redirect_url: 'data:text/html,x' } }), 400, 1106)
      const cleared = await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { redirect_url: null } })
      assert.equal(cleared.json.data.redirect_url, null)
      assert.equal((await submit(f.form_slug, { form: { a: '4' }, headers: { accept: nav } })).status, 200)
    })

    it("keeps Formspree's _replyto and follows its _next back to the submitting site (decision 124)", async () => {
      const nav = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
      // a user of its own: alice's form count is used up by later tests
      const carol = await s.user()
      const free = await make(carol)
      const typed = await make(carol, { fields_config: [{ name: 'message', required: true }], redirect_url: 'https://thanks.example/ok' })
      const latest = async (id: string) => (await data(carol, id)).json.data.submissions[0].data
      // the visitor's address in _replyto is stored, with and without fields_config; _subject and _next are not
      const r = await submit(free.form_slug, { form: { _replyto: 'ann@example.com', message: 'hi', _subject: 'New', _next: 'https://site.example/t' } })
      assert.equal(r.status, 200, r.text)
      assert.deepEqual(await latest(free.id), { _replyto: 'ann@example.com', message: 'hi' })
      assert.equal((await submit(typed.form_slug, { json: { message: 'yo', _replyto: 'bo@example.com' } })).status, 200)
      assert.deepEqual(await latest(typed.id), { _replyto: 'bo@example.com', message: 'yo' })
      // an address alone is content; twice is a 1614 naming it
      assert.equal((await submit(free.form_slug, { json: { _replyto: 'cy@example.com' } })).status, 200)
      const twice = '_replyto=a%40x.example&_replyto=b%40x.example&message=m'
      expectFieldError(await submit(free.form_slug, { body: twice, headers: { 'content-type': 'application/x-www-form-urlencoded' } }), '_replyto')
      const csv = await s.get(`/svc_api/forms/export/${free.id}?format=csv`, { key: carol.key })
      assert.match(csv.text.split('\r\n')[0], /,_replyto,/)
      assert.match(csv.text, /,ann@example\.com,/)

      // _next: a browser post lands where it says when that is the submitting page's site
      const go = async (id: string, fields: Record<string, string>, h: Record<string, string>) =>
        submit(id, { form: { message: 'n', ...fields }, headers: { accept: nav, 'accept-language': 'en', ...h } })
      const site = { origin: 'https://site.example', referer: 'https://site.example/' }
      const own = await go(free.form_slug, { _next: 'https://site.example/thanks.html?x=1' }, site)
      assert.equal(own.status, 303)
      assert.equal(own.header('location'), 'https://site.example/thanks.html?x=1')
      const rel = await go(free.form_slug, { _next: '/thanks.html' }, site)
      assert.equal(rel.header('location'), 'https://site.example/thanks.html')
      // a cross-origin post's Referer is only the page's origin (Chromium's default policy):
      // a relative _next of a page at /contact/ resolves at the root; an absolute one is kept
      // (a form of its own: the per-address limit, 10 a minute per form, stays the other cases')
      const paged = await make(carol, {})
      const relPage = await go(paged.form_slug, { _next: 'thanks.html' }, site)
      assert.equal(relPage.header('location'), 'https://site.example/thanks.html')
      const absPage = await go(paged.form_slug, { _next: 'https://site.example/contact/thanks.html' }, site)
      assert.equal(absPage.header('location'), 'https://site.example/contact/thanks.html')
      // elsewhere (another site, a script URL, no page to compare with): ignored, the usual landing
      for (const [next, h] of [
        ['https://evil.example/phish', site],
        ['javascript:alert(1)', site],
        ['//evil.example/x', site],
        ['https://site.example/thanks.html', {}],
      ] as Array<[string, Record<string, string>]>) {
        const x = await go(free.form_slug, { _next: next }, h)
        assert.equal(x.status, 200, next)
        assert.match(x.text, /Your submission was received/)
        const y = await go(typed.form_slug, { _next: next }, h)
        assert.equal(y.status, 303, next)
        assert.equal(y.header('location'), 'https://thanks.example/ok')
      }
      // on redirect_url's origin, or an origin of allowed_origins, from a sandboxed page (Origin: null)
      const onRedirectSite = await go(typed.form_slug, { _next: 'https://thanks.example/other' }, { origin: 'null' })
      assert.equal(onRedirectSite.header('location'), 'https://thanks.example/other')
      const listed = await make(carol, { allowed_origins: ['null', 'https://listed.example'] })
      const fromSandbox = await go(listed.form_slug, { _next: 'https://listed.example/done' }, { origin: 'null' })
      assert.equal(fromSandbox.header('location'), 'https://listed.example/done')
      // a script gets JSON whatever _next says
      const ajax = await go(free.form_slug, { _next: 'https://site.example/t' }, { ...site, 'sec-fetch-mode': 'cors' })
      assert.equal(ajax.status, 200)
      assert.equal(ajax.json.success, true)
    })

    it('reads a name ending in [] (a checkbox group) as its field, always a list (decision 125)', async () => {
      const dave = await s.user()
      const mk = async (body: Record<string, unknown>) => {
        const r = await create(dave, { form_name: 'Groups', form_slug: slug(), ...body })
        assert.equal(r.status, 200, r.text)
        return r.json.data as { id: string; form_slug: string }
      }
      const typed = await mk({
        fields_config: [
          { name: 'name', required: true },
          { name: 'topics', type: 'checkbox', options: ['a', 'b', 'c'], required: true },
        ],
      })
      const free = await mk({})
      const latest = async (id: string) => (await data(dave, id)).json.data.submissions[0].data
      const form = (id: string, body: string) => submit(id, { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
      // the HTML of a PHP, Rails or Basin form: <input type=checkbox name="topics[]" value=...>
      assert.equal((await form(typed.form_slug, 'name=Ann&topics%5B%5D=a&topics%5B%5D=c')).status, 200)
      assert.deepEqual(await latest(typed.id), { name: 'Ann', topics: ['a', 'c'] })
      const mp = multipart([
        { name: 'name', data: 'Bo' },
        { name: 'topics[]', data: 'b' },
      ])
      assert.equal((await submit(typed.form_slug, { body: mp.body, headers: { 'content-type': mp.contentType } })).status, 200)
      assert.deepEqual(await latest(typed.id), { name: 'Bo', topics: ['b'] })
      assert.equal((await submit(typed.form_slug, { json: { name: 'Cy', 'topics[]': ['c'] } })).status, 200)
      assert.deepEqual(await latest(typed.id), { name: 'Cy', topics: ['c'] })
      // validated as the field: an unknown option, or none of a required group, is 1614 naming it
      expectFieldError(await form(typed.form_slug, 'name=Di&topics%5B%5D=z'), 'topics')
      expectFieldError(await form(typed.form_slug, 'name=Di'), 'topics')
      // without fields_config: one box checked or two, the same list under the same name
      assert.equal((await form(free.form_slug, 'tags%5B%5D=x')).status, 200)
      assert.deepEqual(await latest(free.id), { tags: ['x'] })
      assert.equal((await form(free.form_slug, 'tags%5B%5D=x&tags%5B%5D=y&note=n')).status, 200)
      assert.deepEqual(await latest(free.id), { tags: ['x', 'y'], note: 'n' })
      // only a trailing [] is list syntax; "[]" alone and other brackets are names as sent
      assert.equal((await form(free.form_slug, 'a%5Bb%5D=1&%5B%5D=2')).status, 200)
      assert.deepEqual(await latest(free.id), { 'a[b]': '1', '[]': '2' })
      assert.equal((await data(dave, typed.id)).json.data.total, 3)
    })

    it('takes a form pasted from Netlify: form-name is not stored, bot-field is a honeypot (decision 136)', async () => {
      const eve = await s.user()
      const typed = await make(eve, { fields_config: [{ name: 'email', type: 'email' }, { name: 'message' }] })
      const free = await make(eve)
      const off = await make(eve, { honeypot_field: null, fields_config: [{ name: 'message' }] })
      const declared = await make(eve, { fields_config: [{ name: 'form-name' }, { name: 'bot-field' }] })
      const rows = async (id: string) => (await data(eve, id)).json.data.submissions
      const form = (id: string, body: string) => submit(id, { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
      // the post of <form data-netlify="true" netlify-honeypot="bot-field">, as Netlify's build adds form-name
      assert.equal((await form(typed.form_slug, 'form-name=contact&bot-field=&email=a%40b.example&message=hi')).status, 200)
      const [human] = await rows(typed.id)
      assert.deepEqual(human.data, { email: 'a@b.example', message: 'hi' })
      assert.equal(human.is_spam, false)
      // a filled bot-field is spam, stored flagged like the form's own honeypot, on every body type
      const mp = multipart([
        { name: 'form-name', data: 'contact' },
        { name: 'bot-field', data: 'http://spam.example' },
        { name: 'message', data: 'buy' },
      ])
      assert.equal((await submit(typed.form_slug, { body: mp.body, headers: { 'content-type': mp.contentType } })).status, 200)
      const [bot] = await rows(typed.id)
      assert.deepEqual(bot.data, { message: 'buy' })
      assert.equal(bot.spam_reason, 'honeypot')
      // without fields_config: neither is stored either
      assert.equal((await submit(free.form_slug, { json: { 'form-name': 'contact', 'bot-field': '', note: 'n' } })).status, 200)
      assert.deepEqual((await rows(free.id))[0].data, { note: 'n' })
      // Netlify's fields alone are no content: 400 / 1106, nothing stored
      expectError(await form(free.form_slug, 'form-name=contact&bot-field='), 400, 1106)
      assert.equal((await data(eve, free.id)).json.data.total, 1)
      // honeypots off (honeypot_field null): bot-field is still not a field, and not spam
      assert.equal((await form(off.form_slug, 'form-name=c&bot-field=x&message=m')).status, 200)
      const [plain] = await rows(off.id)
      assert.deepEqual(plain.data, { message: 'm' })
      assert.equal(plain.is_spam, false)
      // a form that declares these names gets them as fields
      assert.equal((await form(declared.form_slug, 'form-name=c&bot-field=x')).status, 200)
      const [kept] = await rows(declared.id)
      assert.deepEqual(kept.data, { 'form-name': 'c', 'bot-field': 'x' })
      assert.equal(kept.is_spam, false)
    })

    it("takes a form pasted with its CAPTCHA widget: the widget's token is not stored nor refused (decision 253)", async () => {
      const ivy = await s.user()
      const typed = await make(ivy, { fields_config: [{ name: 'email', type: 'email' }, { name: 'message' }] })
      const free = await make(ivy)
      const declared = await make(ivy, { fields_config: [{ name: 'g-recaptcha-response' }] })
      const rows = async (id: string) => (await data(ivy, id)).json.data.submissions
      const token = 'x'.repeat(2000)
      const tokens = { 'g-recaptcha-response': token, 'h-captcha-response': token, 'cf-turnstile-response': token }
      // reCAPTCHA's, hCaptcha's and Turnstile's tokens, form-encoded as the widget posts them
      const body = new URLSearchParams({ email: 'a@b.example', message: 'hi', ...tokens }).toString()
      const posted = await submit(typed.form_slug, { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
      assert.equal(posted.status, 200, posted.text)
      assert.deepEqual((await rows(typed.id))[0].data, { email: 'a@b.example', message: 'hi' })
      assert.equal((await submit(free.form_slug, { json: { note: 'n', ...tokens } })).status, 200)
      assert.deepEqual((await rows(free.id))[0].data, { note: 'n' })
      // a token alone is no content: 400 / 1106, nothing stored
      expectError(await submit(free.form_slug, { json: tokens }), 400, 1106)
      assert.equal((await data(ivy, free.id)).json.data.total, 1)
      // a form that declares the name gets it as a field
      assert.equal((await submit(declared.form_slug, { json: { 'g-recaptcha-response': 't' } })).status, 200)
      assert.deepEqual((await rows(declared.id))[0].data, { 'g-recaptcha-response': 't' })
    })

    it("takes a form whose submit button has a name: the button's label is not stored nor refused (decision 265)", async () => {
      const ivy = await s.user()
      const typed = await make(ivy, { fields_config: [{ name: 'email', type: 'email' }] })
      const free = await make(ivy)
      const declared = await make(ivy, { fields_config: [{ name: 'submit' }] })
      const rows = async (id: string) => (await data(ivy, id)).json.data.submissions
      const form = (slug: string, fields: Record<string, string>) =>
        submit(slug, { body: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })
      for (const name of ['submit', 'Submit']) {
        const posted = await form(typed.form_slug, { email: 'a@b.example', [name]: 'Send' })
        assert.equal(posted.status, 200, `${name}: ${posted.text}`)
      }
      assert.deepEqual(
        (await rows(typed.id)).map((r: { data: unknown }) => r.data),
        [{ email: 'a@b.example' }, { email: 'a@b.example' }],
      )
      assert.equal((await form(free.form_slug, { note: 'n', submit: 'Send' })).status, 200)
      assert.deepEqual((await rows(free.id))[0].data, { note: 'n' })
      // the button alone is no content; a form that declares the name gets it as a field
      expectError(await form(free.form_slug, { submit: 'Send' }), 400, 1106)
      assert.equal((await form(declared.form_slug, { submit: 'yes' })).status, 200)
      assert.deepEqual((await rows(declared.id))[0].data, { submit: 'yes' })
    })

    it("lists a script's refusal as Formspree does, errors[].message with its field, in the answer's language (decision 266)", async () => {
      const ivy = await s.user()
      const typed = await make(ivy, { fields_config: [{ name: 'email', type: 'email', required: true }] })
      for (const lang of ['zh', 'en']) {
        const headers = { 'accept-language': lang, accept: 'application/json' }
        const wrong = await submit(typed.form_slug, { json: { email: 'not-an-address' }, headers })
        expectError(wrong, 400, 1614)
        assert.deepEqual(wrong.json.errors, [{ message: wrong.json.message, field: 'email' }])
        const missing = await submit(`no-such-form-${lang}`, { json: { email: 'a@b.example' }, headers })
        expectError(missing, 404, 1611)
        assert.deepEqual(missing.json.errors, [{ message: missing.json.message }])
      }
      // what a Formspree AJAX snippet shows: data.errors.map((e) => e.message).join(', ')
      const r = await submit(typed.form_slug, { json: {}, headers: { 'accept-language': 'en', accept: 'application/json' } })
      assert.equal(r.status, 400)
      assert.match(r.json.errors.map((x: { message: string }) => x.message).join(', '), /email/)
      assert.equal((await data(ivy, typed.id)).json.data.total, 0)
    })

    it('says what is wrong with a field as a person writes it, in both languages; the code and field stay (decision 323)', async () => {
      const una = await s.user()
      const typed = await make(una, {
        fields_config: [
          { name: 'email', type: 'email', required: true },
          { name: 'age', type: 'number' },
          { name: 'site', type: 'url' },
          { name: 'agree', type: 'checkbox', required: true },
          { name: 'plan', type: 'select', options: ['free', 'pro'] },
        ],
      })
      const good = { email: 'a@b.example', agree: 'on' }
      const cases: Array<[body: Record<string, unknown>, field: string, en: string, zh: string]> = [
        [{ ...good, email: 'not-an-address' }, 'email', 'The field "email" must be an email address.', '字段“email”须为邮箱地址。'],
        [{ agree: 'on' }, 'email', 'The field "email" is required.', '字段“email”为必填项。'],
        [{ ...good, age: 'old' }, 'age', 'The field "age" must be a number.', '字段“age”须为数字。'],
        [
          { ...good, site: 'ftp://x.example/' },
          'site',
          'The field "site" must be a web address starting with http:// or https://.',
          '字段“site”须为以 http:// 或 https:// 开头的网址。',
        ],
        [{ email: 'a@b.example' }, 'agree', 'The field "agree" is required: please check it.', '字段“agree”为必填项，请勾选。'],
        [
          { ...good, plan: 'gold' },
          'plan',
          'The field "plan" must be one of its options; "gold" is not one of them.',
          '字段“plan”须为给出的选项之一，“gold”不是。',
        ],
        [{ ...good, extra: 'x' }, 'extra', 'This form has no field "extra".', '此表单没有字段“extra”。'],
      ]
      for (const [body, field, en, zh] of cases) {
        for (const [lang, want] of [
          ['en', en],
          ['zh-CN', zh],
        ]) {
          clock.advance(7000)
          const r = await submit(typed.form_slug, { json: body, headers: { 'accept-language': lang, accept: 'application/json' } })
          expectError(r, 400, 1614)
          assert.equal(r.json.message, want)
          // the machine-readable part: the code, the field, Formspree's errors[] with its field
          assert.equal(r.json.field, field)
          assert.deepEqual(r.json.errors, [{ message: want, field }])
          assert.equal(r.json.solution, lang === 'en' ? `Check the field ${field}` : `检查字段 ${field}`)
        }
      }
      // a visitor's browser post reads the same sentence on the refusal page
      clock.advance(7000)
      const page = await submit(typed.form_slug, {
        form: { email: 'nope', agree: 'on' },
        headers: { 'accept-language': 'en', accept: 'text/html', 'sec-fetch-mode': 'navigate' },
      })
      assert.equal(page.status, 400)
      assert.ok(page.text.includes('The field &quot;email&quot; must be an email address.'), page.text)
      assert.equal((await data(una, typed.id)).json.data.total, 0)
    })

    describe('flags honeypot and too-fast submissions as spam, stores them, and filters them', () => {
      let f: Awaited<ReturnType<typeof make>>
      let now: number
      before(async () => {
        f = await make(alice, { honeypot_field: 'website', min_fill_seconds: 5, fields_config: [{ name: 'msg' }] })
        now = clock.now()
      })
      /** The stored submission whose `msg` field is this. */
      const storedByMsg = async (msg: unknown) => {
        const all = (await data(alice, f.id)).json.data
        return all.submissions.find((x: any) => x.data.msg === msg)
      }
      // [msg, the other fields (from the clock at the start), the spam reason]
      const cases: Array<[string, (now: number) => Record<string, unknown>, string | null]> = [
        ['human', (t) => ({ _ts: String(t - 10_000) }), null],
        ['human, seconds', (t) => ({ _ts: Math.floor((t - 30_000) / 1000) }), null],
        ['bot', (t) => ({ website: 'http://spam.example', _ts: String(t - 10_000) }), 'honeypot'],
        ['fast', (t) => ({ _ts: String(t - 1_000) }), 'too_fast'],
        ['no ts', () => ({}), 'no_timestamp'],
        ['junk ts', () => ({ _ts: 'yesterday' }), 'no_timestamp'],
      ]
      for (const [msg, fields, reason] of cases) {
        it(`${msg}: stored, ${reason ?? 'not spam'}`, async () => {
          const body = { msg, ...fields(now) }
          const r = await submit(f.form_slug, { json: body })
          assert.equal(r.status, 200, r.text)
          assert.equal(r.json.success, true)
          clock.advance(10)
          const x = await storedByMsg(msg)
          assert.ok(x, 'stored')
          assert.equal(x.is_spam, reason !== null)
          assert.equal(x.spam_reason, reason)
          assert.ok(!('website' in x.data) && !('_ts' in x.data))
        })
      }
      it('filters by is_spam, and the owner can clear a false positive', async () => {
        assert.equal((await data(alice, f.id)).json.data.total, cases.length)
        assert.equal((await data(alice, f.id, '?is_spam=true')).json.data.total, 4)
        assert.equal((await data(alice, f.id, '?is_spam=false')).json.data.total, 2)
        assert.equal((await data(alice, f.id, '?is_spam=0&is_read=false')).json.data.total, 2)
        // the unread counter is the inbox's: spam is counted apart, as the dashboard shows it
        const counters = async () => {
          const x = (await s.get('/svc_api/forms/list', { key: alice.key })).json.data.forms.find((y: any) => y.id === f.id)
          return [x.submission_count, x.unread_count, x.spam_count]
        }
        assert.deepEqual(await counters(), [6, 2, 4])
        const fast = await storedByMsg('fast')
        const un = await s.request('PUT', `/svc_api/forms/mark_read/${fast.id}`, { key: alice.key, json: { is_spam: false } })
        assert.equal(un.status, 200)
        assert.equal(un.json.data.is_spam, false)
        assert.equal((await data(alice, f.id, '?is_spam=false')).json.data.total, 3)
        assert.deepEqual(await counters(), [6, 3, 3])
      })
    })

    it('limits submissions per client address and form (429), readable cross-origin', async () => {
      clock.advance(3_600_000)
      const f = await make(alice)
      const other = await make(alice)
      for (let i = 0; i < 10; i++) assert.equal((await submit(f.form_slug, { json: { i } })).status, 200)
      const r = await submit(f.form_slug, { json: { i: 10 }, headers: { origin: 'https://page.example' } })
      expectError(r, 429, 1204)
      assert.ok(Number.isInteger(r.json.retry_after) && r.json.retry_after >= 1)
      assert.equal(r.header('retry-after'), String(r.json.retry_after))
      assert.equal(r.header('access-control-allow-origin'), 'https://page.example')
      // a browser's post gets the page, which says when to try again, in its language
      const nav = { accept: 'text/html', 'sec-fetch-mode': 'navigate' }
      const en = await submit(f.form_slug, { form: { i: '10' }, headers: { ...nav, 'accept-language': 'en' } })
      assert.equal(en.status, 429)
      assert.match(en.text, new RegExp(`Rate limit exceeded \\(per-minute limit 10\\)\\. Retry after ${en.header('retry-after')} seconds`))
      const zh = await submit(f.form_slug, { form: { i: '10' }, headers: { ...nav, 'accept-language': 'zh-CN' } })
      assert.equal(zh.status, 429)
      assert.match(zh.text, new RegExp(`请求过于频繁（每分钟限制 10 次）。${zh.header('retry-after')} 秒后重试`))
      assert.equal((await submit(other.form_slug, { json: { i: 0 } })).status, 200)
      clock.advance(61_000)
      assert.equal((await submit(f.form_slug, { json: { i: 11 } })).status, 200)
      assert.equal((await data(alice, f.id)).json.data.total, 11)
    })

    it('answers the API rate limit (429) of anonymous submitters with CORS headers', async () => {
      const tight = await startServer({ engine, env: { RATE_LIMITS: JSON.stringify({ default: { minute: 2 } }) } })
      try {
        const u = await tight.user()
        const c = await tight.post('/svc_api/forms/create', { key: u.key, json: { form_name: 'x', allowed_origins: ['https://page.example'] } })
        const p = `/api/forms/submit/${c.json.data.form_slug}`
        const headers = { origin: 'https://page.example' }
        assert.equal((await tight.post(p, { json: { a: 1 }, headers })).status, 200)
        assert.equal((await tight.post(p, { json: { a: 2 }, headers })).status, 200)
        const r = await tight.post(p, { json: { a: 3 }, headers })
        expectError(r, 429, 1204)
        assert.equal(r.header('access-control-allow-origin'), 'https://page.example')
        assert.match(r.header('access-control-expose-headers')!, /Retry-After/)
        const evil = await tight.post(p, { json: { a: 3 }, headers: { origin: 'https://evil.example' } })
        assert.equal(evil.status, 429)
        assert.equal(evil.header('access-control-allow-origin'), undefined)
      } finally {
        await tight.close()
      }
    })

    it('pages submissions newest first with is_read filters, and marks them read both ways', async () => {
      const f = await make(alice)
      const ids: string[] = []
      for (let i = 0; i < 7; i++) {
        ids.push((await submit(f.form_slug, { json: { n: i } })).json.data.submission_id)
      }
      const p1 = (await data(alice, f.id, '?page=1&per_page=3')).json.data
      assert.deepEqual([p1.page, p1.per_page, p1.total, p1.total_pages], [1, 3, 7, 3])
      assert.deepEqual(
        p1.submissions.map((x: any) => x.data.n),
        [6, 5, 4],
      )
      const p3 = (await data(alice, f.id, '?page=3&per_page=3')).json.data
      assert.deepEqual(
        p3.submissions.map((x: any) => x.data.n),
        [0],
      )
      assert.deepEqual((await data(alice, f.id, '?page=9')).json.data.submissions, [])
      expectError(await data(alice, f.id, '?per_page=101'), 400, 1108)
      expectError(await data(alice, f.id, '?page=0'), 400, 1107)
      expectError(await data(alice, f.id, '?is_read=maybe'), 400, 1106)
      const mark = (id: string, body?: unknown) =>
        s.request('PUT', `/svc_api/forms/mark_read/${id}`, { key: alice.key, ...(body === undefined ? {} : { json: body }) })
      const m = await mark(ids[0], { is_read: true })
      assert.equal(m.status, 200)
      assert.deepEqual(m.json.data, { id: ids[0], form_id: f.id, is_read: true, is_spam: false })
      assert.equal(typeof m.json.message, 'string')
      assert.equal((await mark(ids[1])).json.data.is_read, true)
      assert.equal((await data(alice, f.id, '?is_read=true')).json.data.total, 2)
      assert.equal((await data(alice, f.id, '?is_read=false')).json.data.total, 5)
      assert.equal((await mark(ids[0], { is_read: false })).json.data.is_read, false)
      assert.equal((await data(alice, f.id, '?is_read=1')).json.data.total, 1)
      expectError(await mark(ids[0], { is_read: 'yes' }), 400, 1106)
      const list = await s.get('/svc_api/forms/list', { key: alice.key })
      const item = list.json.data.forms.find((x: any) => x.id === f.id)
      assert.equal(item.submission_count, 7)
      assert.equal(item.unread_count, 6)
      assert.equal(item.spam_count, 0)
      assert.match(item.last_submission_at, BEIJING_TIME)
    })

    it('lists forms with counters and the quota', async () => {
      const carol = await s.user()
      const empty = await s.get('/svc_api/forms/list', { key: carol.key })
      assert.equal(empty.status, 200)
      assert.deepEqual(empty.json.data.forms, [])
      assert.deepEqual(empty.json.data.quota.forms, { used: 0, limit: 20 })
      assert.equal(empty.json.data.quota.submissions_month.used, 0)
      assert.equal(empty.json.data.quota.submissions_month.limit, 1000)
      assert.equal(empty.json.data.quota.export_rows.limit, 5000)
      const a = await make(carol, { form_name: 'first' })
      clock.advance(1000)
      const b = await make(carol, { form_name: 'second' })
      await submit(a.form_slug, { json: { x: 1 } })
      const r = await s.get('/svc_api/forms/list', { key: carol.key })
      assert.deepEqual(
        r.json.data.forms.map((x: any) => x.id),
        [b.id, a.id],
      )
      const first = r.json.data.forms[1]
      for (const k of [
        'id',
        'form_name',
        'form_slug',
        'is_active',
        'submission_count',
        'unread_count',
        'fields_config',
        'allowed_origins',
        'redirect_url',
        'submit_url',
        'created_at',
      ])
        assert.ok(k in first, k)
      assert.equal(first.submission_count, 1)
      assert.equal(first.unread_count, 1)
      assert.equal(r.json.data.forms[0].last_submission_at, null)
      assert.deepEqual(r.json.data.quota.forms, { used: 2, limit: 20 })
      assert.equal(r.json.data.quota.submissions_month.used, 1)
    })

    it('enforces the form count quota (1613, 429) with the limit in solution', async () => {
      const dave = await s.user()
      await s.deps.users.update(dave.username, { limits: { forms: 2 } })
      const a = await make(dave)
      await make(dave)
      const r = await create(dave, { form_name: 'third' })
      expectError(r, 429, 1613)
      assert.match(r.json.solution, /\b2\b/)
      await s.request('DELETE', `/svc_api/forms/delete/${a.id}`, { key: dave.key })
      assert.equal((await create(dave, { form_name: 'third' })).status, 200)
      const list = await s.get('/svc_api/forms/list', { key: dave.key })
      assert.deepEqual(list.json.data.quota.forms, { used: 2, limit: 2 })
    })

    it('enforces the monthly submission quota per Beijing calendar month (FakeClock across the boundary)', async () => {
      const erin = await s.user()
      await s.deps.users.update(erin.username, { limits: { form_submissions_month: 2 } })
      const saved = clock.now()
      // 2026-01-31 23:58 in Beijing (15:58 UTC)
      clock.set(Date.UTC(2026, 0, 31, 15, 58, 0))
      const f = await make(erin)
      const g = await make(erin)
      assert.equal((await submit(f.form_slug, { json: { n: 1 } })).status, 200)
      assert.equal((await submit(g.form_slug, { json: { n: 2 } })).status, 200)
      const full = await submit(f.form_slug, { json: { n: 3 }, headers: { origin: 'https://page.example' } })
      expectError(full, 429, 1613)
      assert.match(full.json.solution, /\b2\b/)
      assert.equal(full.header('access-control-allow-origin'), 'https://page.example')
      let q = (await s.get('/svc_api/forms/list', { key: erin.key })).json.data.quota.submissions_month
      assert.deepEqual(q, { used: 2, limit: 2, month: '2026-01' })
      // deleting a form does not give the month's submissions back
      await s.request('DELETE', `/svc_api/forms/delete/${g.id}`, { key: erin.key })
      expectError(await submit(f.form_slug, { json: { n: 4 } }), 429, 1613)
      // 16:00 UTC is midnight in Beijing: a new month, though still January in UTC
      clock.set(Date.UTC(2026, 0, 31, 16, 0, 30))
      assert.equal((await submit(f.form_slug, { json: { n: 5 } })).status, 200)
      q = (await s.get('/svc_api/forms/list', { key: erin.key })).json.data.quota.submissions_month
      assert.deepEqual(q, { used: 1, limit: 2, month: '2026-02' })
      assert.equal((await data(erin, f.id)).json.data.total, 2)
      clock.set(Math.max(saved, clock.now()) + 3_600_000)
    })

    it('spam takes no place in the monthly quota; past a count of its own it is answered but not stored (decision 252)', async () => {
      const hana = await s.user()
      await s.deps.users.update(hana.username, { limits: { form_submissions_month: 2 } })
      const f = await make(hana)
      const quota = async () => (await s.get('/svc_api/forms/list', { key: hana.key })).json.data.quota.submissions_month.used
      // a bot filling the honeypot: stored flagged, the visitors' quota untouched
      for (const n of [1, 2]) assert.equal((await submit(f.form_slug, { json: { n, _gotcha: 'bot' } })).status, 200)
      assert.equal(await quota(), 0)
      for (const n of [3, 4]) assert.equal((await submit(f.form_slug, { json: { n } })).status, 200)
      assert.equal(await quota(), 2)
      expectError(await submit(f.form_slug, { json: { n: 5 } }), 429, 1613)
      // more spam, past the month's spam count (the quota's limit): a success to the bot, nothing stored
      const more = await submit(f.form_slug, { json: { n: 6, _gotcha: 'bot' } })
      assert.equal(more.status, 200, more.text)
      assert.equal(more.json.success, true)
      const ns = async (q: string) => (await data(hana, f.id, q)).json.data.submissions.map((x: any) => x.data.n).sort()
      assert.deepEqual(await ns('?is_spam=true'), [1, 2])
      assert.deepEqual(await ns('?is_spam=false'), [3, 4])
    })

    it('checks the monthly quota inside the write transaction under concurrency', async () => {
      const fay = await s.user()
      await s.deps.users.update(fay.username, { limits: { form_submissions_month: 5 } })
      const forms = await Promise.all([make(fay), make(fay)])
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => submit(forms[i % 2].form_slug, { json: { i } })))
      const codes = results.map((r) => r.status)
      assert.equal(codes.filter((c) => c === 200).length, 5, codes.join(','))
      assert.equal(codes.filter((c) => c === 429).length, 11)
      const q = (await s.get('/svc_api/forms/list', { key: fay.key })).json.data
      assert.equal(q.quota.submissions_month.used, 5)
      assert.equal(
        q.forms.reduce((n: number, x: any) => n + x.submission_count, 0),
        5,
      )
    })

    it('60 parallel submissions to one form with 40 left: 40 kept and the spam, numbered in order, the other 8 refused (1613)', async () => {
      const gil = await s.user()
      await s.deps.users.update(gil.username, { limits: { form_submissions_month: 40 } })
      const f = await make(gil)
      // a webhook nobody answers: the deliveries stay queued in the outbox
      const hook = await s.request('PUT', `/svc_api/forms/webhook/${f.id}`, { key: gil.key, json: { url: 'http://127.0.0.1:9/hook' } })
      assert.equal(hook.status, 200, hook.text)
      // 10 a minute per client address: each submission comes from its own loopback address
      const target = new URL(`${s.url}/api/forms/submit/${f.form_slug}`)
      const post = (localAddress: string, body: string) =>
        new Promise<{ status: number; json: any }>((resolve, reject) => {
          const req = https.request(
            {
              host: target.hostname,
              port: target.port,
              path: target.pathname,
              method: 'POST',
              localAddress,
              rejectUnauthorized: false,
              headers: { 'content-type': 'application/json' },
            },
            (res) => {
              const chunks: Buffer[] = []
              res.on('data', (c: Buffer) => chunks.push(c))
              res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }))
            },
          )
          req.on('error', reject)
          req.end(body)
        })
      // every fifth fills the honeypot: stored as spam, in a count of its own, not the quota's
      // (decision 252): 12 spam kept, 40 of the 48 others
      const results = await Promise.all(
        Array.from({ length: 60 }, (_, i) => post(`127.0.1.${i + 1}`, JSON.stringify(i % 5 === 0 ? { i, _gotcha: 'bot' } : { i }))),
      )
      const kept = results.filter((r) => r.status === 200)
      const refused = results.filter((r) => r.status !== 200)
      assert.equal(kept.length, 52, JSON.stringify(refused[0]?.json))
      for (const r of refused) {
        assert.equal(r.status, 429)
        assert.equal(r.json.error_code, 1613)
      }
      const rows = await s.deps.db.k.selectFrom('form_submissions').select(['id', 'seq', 'is_spam']).where('form_id', '=', f.id).orderBy('seq').execute()
      assert.deepEqual(
        rows.map((r) => Number(r.seq)),
        Array.from({ length: 52 }, (_, i) => i + 1),
      )
      const idOf = (r: (typeof results)[number]) => r.json.data.submission_id as string
      assert.deepEqual(new Set(rows.map((r) => r.id)), new Set(kept.map(idOf)))
      assert.ok(results.every((r, i) => i % 5 !== 0 || r.status === 200))
      const spam = results.flatMap((r, i) => (i % 5 === 0 ? [idOf(r)] : []))
      assert.deepEqual(new Set(rows.filter((r) => Number(r.is_spam) === 1).map((r) => r.id)), new Set(spam))
      // one webhook delivery per kept submission that is not spam
      const queued = await s.deps.db.k.selectFrom('notify_deliveries').select('submission_id').where('form_id', '=', f.id).execute()
      assert.deepEqual(
        queued.map((d) => d.submission_id).sort(),
        kept
          .map(idOf)
          .filter((id) => !spam.includes(id))
          .sort(),
      )
      const q = (await s.get('/svc_api/forms/list', { key: gil.key })).json.data.quota.submissions_month
      assert.equal(q.used, 40)
    })

    it('exports JSON and CSV, newest first, capped at form_export_rows', async () => {
      const gus = await s.user()
      const f = await make(gus, {
        fields_config: [
          { name: 'name', required: true },
          { name: 'n', type: 'number' },
          { name: 'tags', type: 'checkbox', options: ['x', 'y'] },
        ],
      })
      const rows = [
        { name: 'plain', n: 1 },
        { name: '=HYPERLINK("http://evil")', n: -2 },
        { name: '中文, "quoted"\nnext', n: 3, tags: ['x', 'y'] },
      ]
      for (const r of rows) {
        assert.equal((await submit(f.form_slug, { json: r })).status, 200)
        clock.advance(1000)
      }
      const ex = await s.get(`/svc_api/forms/export/${f.id}`, { key: gus.key })
      assert.equal(ex.status, 200)
      assert.match(ex.header('content-type')!, /application\/json/)
      assert.equal(ex.json.success, true)
      assert.equal(ex.json.data.form.id, f.id)
      assert.equal(ex.json.data.exported_count, 3)
      assert.equal(ex.json.data.truncated, false)
      assert.deepEqual(
        ex.json.data.submissions.map((x: any) => x.data.n),
        [3, -2, 1],
      )
      assert.equal(ex.json.data.submissions[0].data.name, '中文, "quoted"\nnext')

      await s.deps.users.update(gus.username, { limits: { form_export_rows: 2 } })
      const capped = await s.get(`/svc_api/forms/export/${f.id}`, { key: gus.key })
      assert.equal(capped.json.data.exported_count, 2)
      assert.equal(capped.json.data.total_count, 3)
      assert.equal(capped.json.data.truncated, true)
      assert.equal(capped.json.data.export_limit, 2)
      assert.deepEqual(
        capped.json.data.submissions.map((x: any) => x.data.n),
        [3, -2],
      )

      await s.deps.users.update(gus.username, { limits: { form_export_rows: null } })
      const csv = await s.get(`/svc_api/forms/export/${f.id}?format=csv`, { key: gus.key })
      assert.equal(csv.status, 200)
      assert.match(csv.header('content-type')!, /^text\/csv; charset=utf-8/)
      assert.match(csv.header('content-disposition')!, /^attachment; filename="form-[A-Za-z0-9_-]+-\d{8}\.csv"$/)
      assert.equal(csv.header('x-exported-count'), '3')
      assert.ok(csv.text.startsWith('\uFEFF'))
      const lines = csv.text.slice(1).split('\r\n')
      assert.equal(lines[0], 'submission_id,created_at,is_read,is_spam,spam_reason,name,n,tags,user_agent,ip_prefix')
      assert.ok(lines[1].includes('"中文, ""quoted""\nnext"'.split('\n')[0]))
      assert.ok(csv.text.includes(`"'=HYPERLINK(""http://evil"")",-2,`))
      assert.ok(csv.text.includes(',x; y,'))
      expectError(await s.get(`/svc_api/forms/export/${f.id}?format=xml`, { key: gus.key }), 400, 1106)
      const spamOnly = await s.get(`/svc_api/forms/export/${f.id}?is_spam=true`, { key: gus.key })
      assert.equal(spamOnly.json.data.exported_count, 0)
    })

    it('exports a field named like an Object.prototype member as an empty cell where a submission lacks it', async () => {
      const hal = await s.user()
      const f = await make(hal, { fields_config: [{ name: 'name' }, { name: 'constructor' }, { name: 'toString' }, { name: 'hasOwnProperty' }] })
      assert.equal((await submit(f.form_slug, { json: { name: 'Ann' } })).status, 200)
      const csv = await s.get(`/svc_api/forms/export/${f.id}?format=csv`, { key: hal.key })
      assert.equal(csv.status, 200)
      const lines = csv.text.slice(1).split('\r\n')
      assert.equal(lines[0], 'submission_id,created_at,is_read,is_spam,spam_reason,name,constructor,toString,hasOwnProperty,user_agent,ip_prefix')
      assert.ok(!csv.text.includes('native code'), csv.text)
      assert.match(lines[1], /,Ann,,,,/)
    })

    it('exports a field named like a fixed CSV column under data.<name>, every header once (decision 137)', async () => {
      const jo = await s.user()
      const csvOf = async (id: string) => {
        const r = await s.get(`/svc_api/forms/export/${id}?format=csv`, { key: jo.key })
        assert.equal(r.status, 200, r.text)
        return r.text.slice(1).split('\r\n')
      }
      // a visitor's fields on a form without fields_config, one of them already named data.<fixed>
      const free = await make(jo)
      const sent = {
        submission_id: 'S',
        created_at: 'C',
        is_read: 'R',
        is_spam: 'P',
        spam_reason: 'W',
        user_agent: 'U',
        ip_prefix: 'I',
        'data.ip_prefix': 'D',
        msg: 'hi',
      }
      const ok = await submit(free.form_slug, { json: sent, headers: { 'user-agent': 'agent/1' } })
      assert.equal(ok.status, 200, ok.text)
      const [head, row] = await csvOf(free.id)
      const names = head.split(',')
      assert.equal(new Set(names).size, names.length, head)
      assert.equal(
        head,
        'submission_id,created_at,is_read,is_spam,spam_reason,' +
          'data.submission_id,data.created_at,data.is_read,data.is_spam,data.spam_reason,data.user_agent,data.data.ip_prefix,data.ip_prefix,msg,' +
          'user_agent,ip_prefix',
      )
      const cells = row.split(',')
      assert.equal(cells[0], ok.json.data.submission_id)
      assert.deepEqual(cells.slice(5, 14), ['S', 'C', 'R', 'P', 'W', 'U', 'I', 'D', 'hi'])
      assert.deepEqual(cells.slice(14), ['agent/1', '127.0.0.0/24'])
      // a declared field gets the same header; the JSON export keeps the names as stored
      const typed = await make(jo, { fields_config: [{ name: 'created_at', type: 'date' }, { name: 'note' }] })
      assert.equal((await submit(typed.form_slug, { json: { created_at: '2026-01-02', note: 'n' } })).status, 200)
      const [typedHead] = await csvOf(typed.id)
      assert.equal(typedHead, 'submission_id,created_at,is_read,is_spam,spam_reason,data.created_at,note,user_agent,ip_prefix')
      const json = await s.get(`/svc_api/forms/export/${typed.id}`, { key: jo.key })
      assert.deepEqual(json.json.data.submissions[0].data, { created_at: '2026-01-02', note: 'n' })
    })

    it('keeps fields differing only in case as columns of their own names, each with its values (decision 152)', async () => {
      const kim = await s.user()
      const f = await make(kim)
      const ok = await submit(f.form_slug, { json: { Email: 'upper@example.com', email: 'lower@example.com', Created_At: 'x' } })
      assert.equal(ok.status, 200, ok.text)
      const csv = await s.get(`/svc_api/forms/export/${f.id}?format=csv`, { key: kim.key })
      assert.equal(csv.status, 200)
      const [head, row] = csv.text.slice(1).split('\r\n')
      const headers = head.split(',')
      assert.deepEqual(headers.slice(5, 8).sort(), ['Created_At', 'Email', 'email'])
      const cells = row.split(',')
      assert.equal(cells[headers.indexOf('Email')], 'upper@example.com')
      assert.equal(cells[headers.indexOf('email')], 'lower@example.com')
      assert.equal(cells[headers.indexOf('Created_At')], 'x')
      assert.equal(new Set(headers).size, headers.length, 'every header once')
    })

    it('exports the values of fields since removed from fields_config, as the JSON export does', async () => {
      const ida = await s.user()
      const f = await make(ida, { fields_config: [{ name: 'name' }, { name: 'phone', type: 'tel' }] })
      assert.equal((await submit(f.form_slug, { json: { name: 'Ann', phone: '+1 555 0100' } })).status, 200)
      clock.advance(1000)
      const up = await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: ida.key, json: { fields_config: [{ name: 'name' }, { name: 'company' }] } })
      assert.equal(up.status, 200, up.text)
      assert.equal((await submit(f.form_slug, { json: { name: 'Bo', company: 'Acme' } })).status, 200)
      const csv = await s.get(`/svc_api/forms/export/${f.id}?format=csv`, { key: ida.key })
      assert.equal(csv.status, 200)
      const lines = csv.text.slice(1).split('\r\n')
      assert.equal(lines[0], 'submission_id,created_at,is_read,is_spam,spam_reason,name,company,phone,user_agent,ip_prefix')
      assert.match(lines[1], /,Bo,Acme,,/)
      assert.match(lines[2], /,Ann,,'\+1 555 0100,/)
    })

    it('updates any creation field and keeps the others', async () => {
      const f = await make(alice, { fields_config: [{ name: 'a' }], allowed_origins: ['https://one.example'] })
      const r = await s.request('PUT', `/svc_api/forms/update/${f.id}`, {
        key: alice.key,
        json: { form_name: '新名字 ✨', fields_config: [{ name: 'b', type: 'email', required: true }] },
      })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.success, true)
      assert.equal(typeof r.json.message, 'string')
      assert.equal(r.json.data.form_name, '新名字 ✨')
      assert.deepEqual(r.json.data.allowed_origins, ['https://one.example'])
      assert.equal(r.json.data.form_slug, f.form_slug)
      expectError(await submit(f.form_slug, { json: { a: 'x' }, headers: { origin: 'https://one.example' } }), 400, 1614)
      assert.equal((await submit(f.form_slug, { json: { b: 'b@example.com' }, headers: { origin: 'https://one.example' } })).status, 200)
      const ns = slug('renamed')
      const moved = await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { form_slug: ns, allowed_origins: [] } })
      assert.equal(moved.json.data.submit_url, `${s.url}/api/forms/submit/${ns}`)
      expectError(await submit(f.form_slug, { json: { b: 'b@example.com' } }), 404, 1611)
      assert.equal((await submit(ns, { json: { b: 'b@example.com' }, headers: { origin: 'https://two.example' } })).status, 200)
      expectError(await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { form_name: 'x\u0000' } }), 400, 1106)
      expectError(await s.request('PUT', `/svc_api/forms/update/${f.id}`, { key: alice.key, json: { honeypot_field: 'b' } }), 400, 1106)
      const list = (await s.get('/svc_api/forms/list', { key: alice.key })).json.data.forms.find((x: any) => x.id === f.id)
      assert.equal(list.form_name, '新名字 ✨')
    })

    it('deletes a form with every submission', async () => {
      const f = await make(alice)
      for (let i = 0; i < 3; i++) await submit(f.form_slug, { json: { i } })
      const r = await s.request('DELETE', `/svc_api/forms/delete/${f.id}`, { key: alice.key })
      assert.equal(r.status, 200)
      assert.equal(r.json.success, true)
      assert.equal(typeof r.json.message, 'string')
      expectError(await data(alice, f.id), 404, 1611)
      expectError(await submit(f.form_slug, { json: { i: 9 } }), 404, 1611)
      expectError(await s.request('DELETE', `/svc_api/forms/delete/${f.id}`, { key: alice.key }), 404, 1611)
      const left = await s.deps.db.k.selectFrom('form_submissions').select('id').where('form_id', '=', f.id).execute()
      assert.equal(left.length, 0)
      // the slug stays its owner's (decision 264)
      expectError(await create(bob, { form_name: 'reuse', form_slug: f.form_slug }), 400, 1610)
    })

    it("a submission racing its form's delete is kept and deleted with it, or refused (1611): never a 500", async () => {
      const f = await make(alice)
      // the delete is sent once the submission, under the owner's lock, has found the form
      const claim = formStore.claimMonth.bind(formStore)
      let deleting: Promise<Res> | undefined
      formStore.claimMonth = async (...args) => {
        formStore.claimMonth = claim
        deleting = s.request('DELETE', `/svc_api/forms/delete/${f.id}`, { key: alice.key })
        await Promise.race([deleting, new Promise((resolve) => setTimeout(resolve, 300))])
        return claim(...args)
      }
      let sent: Res
      try {
        sent = await submit(f.form_slug, { json: { name: 'late' } })
      } finally {
        formStore.claimMonth = claim
      }
      assert.ok(sent.status === 200 || sent.status === 404, `${sent.status} ${sent.text}`)
      assert.equal((await deleting!).status, 200)
      const left = await s.deps.db.k.selectFrom('form_submissions').select('id').where('form_id', '=', f.id).execute()
      assert.equal(left.length, 0)
    })

    it('documents the endpoints in /openapi.json', async () => {
      const r = await s.get('/openapi.json')
      for (const p of [
        '/api/forms/submit/{form_slug}',
        '/svc_api/forms/create',
        '/svc_api/forms/update/{form_id}',
        '/svc_api/forms/list',
        '/svc_api/forms/data/{form_id}',
        '/svc_api/forms/export/{form_id}',
        '/svc_api/forms/delete/{form_id}',
        '/svc_api/forms/mark_read/{submission_id}',
      ]) {
        assert.ok(r.json.paths[p], p)
      }
    })
  })
}
