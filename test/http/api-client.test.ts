import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, multipart, startServer, type TestServer } from '../support/server.js'
import { apiClient } from '../support/api-client.js'
import { imageForm, makeImage, redeemCode, svc } from '../support/images.js'
import { answerChecker } from '../support/openapi-answers.js'
import { decodeQp, smtpSink } from '../support/smtp.js'

/** The JSON body of an answer the document also declares in a text media type (CSV, HTML). */
const jsonOf = <T>(data: T) => data as Exclude<T, string | undefined>

/**
 * The API through a client typed by its own OpenAPI document (openapi-typescript +
 * openapi-fetch): paths, parameters, bodies and answers that the document gets wrong fail to
 * compile or fail here. api-types.test.ts keeps the types in step with the document.
 */
for (const engine of ENGINES) {
  describe(`typed API client from the OpenAPI document [${engine}]`, () => {
    let s: TestServer
    let smtp: Awaited<ReturnType<typeof smtpSink>>
    let key = ''
    before(async () => {
      smtp = await smtpSink()
      s = await startServer({ engine, env: { SMTP_URL: smtp.url, SMTP_FROM: 'svc <svc@localhost>' } })
      key = (await s.user()).key
    })
    after(async () => {
      await s.close()
      await smtp.close()
    })
    /** An admin and their typed client, and a user with a one-page project of that name (`upload` makes another). */
    const adminAndProject = async (project: string, html: string) => {
      const a = await s.user({ admin: true })
      const api = apiClient(s, { cookie: await s.login(a.username, a.password) })
      const u = await s.user()
      const form = multipart([{ name: 'files[]', filename: 'index.html', data: html }])
      const upload = async (name: string) => {
        const r = await s.post(`/api/folders/${name}/batch_upload`, { key: u.key, body: form.body, headers: { 'content-type': form.contentType } })
        assert.equal(r.status, 200, r.text)
      }
      await upload(project)
      return { a, api, u, upload }
    }
    /** The served document's checker, and `seen`, which asserts that a typed client's answer is one it describes. */
    const documentChecked = async () => {
      const check = answerChecker((await s.get('/openapi.json')).json)
      const seen = (method: string, template: string, r: { response: Response; data?: unknown; error?: unknown }) =>
        assert.equal(check(method, template, r.response.status, r.data ?? r.error), null)
      return { check, seen }
    }

    it('reads the upload limits', async () => {
      const { data, error, response } = await apiClient(s, { key }).GET('/svc_api/upload/info')
      assert.equal(response.status, 200, JSON.stringify(error))
      assert.equal(data!.success, true)
      assert.ok(data!.data.max_file_size > 0)
      assert.ok(data!.data.allowed_extensions.includes('.html'))
      assert.equal(data!.data.current_file_count, 0)
    })

    it('stores, reads and increments key-value entries, and gets the documented error answer', async () => {
      const api = apiClient(s, { key })
      const put = await api.POST('/svc_api/data/store', { body: { key: 'typed', value: { n: [1, 'two'] }, tags: ['t'], is_public: true } })
      assert.equal(put.response.status, 200, JSON.stringify(put.error))
      assert.equal(put.data!.data.version, 1)
      assert.deepEqual(put.data!.data.tags, ['t'])

      const got = await api.GET('/svc_api/data/get', { params: { query: { key: 'typed' } } })
      assert.deepEqual(got.data!.data.value, { n: [1, 'two'] })
      assert.equal(got.data!.data.is_public, true)

      const inc = await api.POST('/svc_api/data/incr', { body: { key: 'hits', by: 2 } })
      assert.equal(inc.data!.data.value, 2)

      // errors come back in the shared Error schema (4XX)
      const missing = await api.GET('/svc_api/data/get', { params: { query: { key: 'nope' } } })
      assert.equal(missing.response.status, 404)
      assert.equal(missing.error!.success, false)
      assert.equal(missing.error!.error_code, 1604)
      assert.match(missing.error!.doc_link!, /\/docs\/errors#1604$/)
      // a body the schema refuses (no coercion: "true" is not a boolean)
      const bad = await api.POST('/svc_api/data/store', { body: { key: 'typed', value: 1, is_public: 'true' as unknown as boolean } })
      assert.equal(bad.response.status, 400)
      assert.equal(bad.error!.error_code, 1106)

      // the public read needs no credentials (security: [])
      const pub = await apiClient(s).GET('/svc_api/data/public/{key}', { params: { path: { key: 'typed' } } })
      assert.equal(pub.response.status, 200, JSON.stringify(pub.error))
      assert.deepEqual(pub.data!.data.value, { n: [1, 'two'] })
    })

    it('revalidates an entry: 304 for its ETag, 412 for another version', async () => {
      const api = apiClient(s, { key })
      const put = await api.POST('/svc_api/data/store', { body: { key: 'cond', value: 'v1', is_public: true } })
      assert.equal(put.response.status, 200, JSON.stringify(put.error))
      const etag = put.response.headers.get('etag')!
      assert.equal(etag, '"1"')
      const query = { key: 'cond' }
      const same = await api.GET('/svc_api/data/get', { params: { query, header: { 'if-none-match': etag } } })
      assert.equal(same.response.status, 304)
      assert.equal(same.response.headers.get('etag'), etag)
      assert.equal(same.data, undefined)
      const moved = await api.GET('/svc_api/data/get', { params: { query, header: { 'if-match': '"7"' } } })
      assert.equal(moved.response.status, 412)
      assert.equal(moved.response.headers.get('etag'), etag)
      assert.equal(await moved.response.text(), '')
      const pub = await apiClient(s).GET('/svc_api/data/public/{key}', { params: { path: { key: 'cond' }, header: { 'if-match': '"1"' } } })
      assert.equal(pub.response.status, 412)
    })

    it('reads part of a public image or data link: 206 for a range, 416 past the end', async () => {
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      await svc(s, 'grant', u.username, 'image-host')
      await svc(s, 'grant', u.username, 'hosted-data')
      const form = imageForm([{ name: 'r.png', data: await makeImage('png') }])
      const up = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      assert.equal(up.status, 200, up.text)
      const imgToken = new URL(up.json.images[0].public_url as string).pathname.split('/').pop()!
      const content = JSON.stringify({ rows: [1, 2, 3] })
      const f = await s.request('POST', '/api/hosted-data/files', { cookie, json: { display_name: 'r.json', content, content_type: 'application/json' } })
      assert.equal(f.status, 200, f.text)
      const dataToken = new URL(f.json.file.public_url as string).pathname.split('/').pop()!

      const pub = apiClient(s)
      const data = await pub.GET('/svc-data/pub/{token}', { params: { path: { token: dataToken }, header: { range: 'bytes=2-5' } }, parseAs: 'arrayBuffer' })
      assert.equal(data.response.status, 206)
      assert.equal(data.response.headers.get('content-range'), `bytes 2-5/${content.length}`)
      assert.equal(Buffer.from(data.data!).toString(), content.slice(2, 6))
      const etag = data.response.headers.get('etag')!
      // If-Range naming the current ETag keeps the range; another one gives the whole body
      const kept = await pub.GET('/hosted-data/pub/{token}', {
        params: { path: { token: dataToken }, header: { range: 'bytes=-3', 'if-range': etag } },
        parseAs: 'arrayBuffer',
      })
      assert.equal(kept.response.status, 206)
      assert.equal(Buffer.from(kept.data!).toString(), content.slice(-3))
      const stale = await pub.GET('/svc-data/pub/{token}', {
        params: { path: { token: dataToken }, header: { range: 'bytes=-3', 'if-range': '"stale"' } },
        parseAs: 'text',
      })
      assert.equal(stale.response.status, 200)
      assert.equal(stale.data, content)
      const past = await pub.GET('/svc-data/pub/{token}', { params: { path: { token: dataToken }, header: { range: `bytes=${content.length}-` } } })
      assert.equal(past.response.status, 416)
      assert.equal(past.response.headers.get('content-range'), `bytes */${content.length}`)

      const whole = Buffer.from((await pub.GET('/svc-img/pub/{token}', { params: { path: { token: imgToken } }, parseAs: 'arrayBuffer' })).data!)
      const img = await pub.GET('/image-host/pub/{token}', { params: { path: { token: imgToken }, header: { range: 'bytes=0-7' } }, parseAs: 'arrayBuffer' })
      assert.equal(img.response.status, 206)
      assert.equal(img.response.headers.get('content-range'), `bytes 0-7/${whole.length}`)
      assert.ok(Buffer.from(img.data!).equals(whole.subarray(0, 8)))
    })

    it('manages hosted data, every answer the one the document describes', async () => {
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      await svc(s, 'grant', u.username, 'hosted-data')
      const api = apiClient(s, { cookie })
      const { seen } = await documentChecked()
      const status = await api.GET('/api/hosted-data/status')
      seen('GET', '/api/hosted-data/status', status)
      assert.equal(status.data!.quota.used_files, 0)
      const made = await api.POST('/api/hosted-data/files', { body: { display_name: 'rows.csv', content: 'a,b\n1,2\n' } })
      seen('POST', '/api/hosted-data/files', made)
      const file = made.data!.file
      assert.equal(file.versions[0].is_default, true)
      const path = { file_id: file.id }
      const v2 = await api.POST('/api/hosted-data/files/{file_id}/versions', { params: { path }, body: { content: 'a,b\n3,4\n' } })
      seen('POST', '/api/hosted-data/files/{file_id}/versions', v2)
      assert.equal(v2.data!.version.version, 2)
      const switched = await api.POST('/api/hosted-data/files/{file_id}/default-version', { params: { path }, body: { version: 2 } })
      seen('POST', '/api/hosted-data/files/{file_id}/default-version', switched)
      assert.equal(switched.data!.file.default_version, 2)
      const meta = await api.PUT('/api/hosted-data/files/{file_id}/meta', { params: { path }, body: { description: 'rows' } })
      seen('PUT', '/api/hosted-data/files/{file_id}/meta', meta)
      const listed = await api.GET('/api/hosted-data/files')
      seen('GET', '/api/hosted-data/files', listed)
      assert.equal(listed.data!.files[0].description, 'rows')
      const details = await api.GET('/api/hosted-data/files/{file_id}', { params: { path } })
      seen('GET', '/api/hosted-data/files/{file_id}', details)
      assert.deepEqual(
        details.data!.file.versions.map((v) => v.version),
        [1, 2],
      )
      const dropped = await api.DELETE('/api/hosted-data/files/{file_id}/versions/{version}', { params: { path: { ...path, version: '1' } } })
      seen('DELETE', '/api/hosted-data/files/{file_id}/versions/{version}', dropped)
      assert.equal(dropped.data!.file.version_count, 1)
      const missing = await api.GET('/api/hosted-data/files/{file_id}', { params: { path: { file_id: 'nope' } } })
      seen('GET', '/api/hosted-data/files/{file_id}', missing)
      assert.equal(missing.response.status, 404)
      const gone = await api.DELETE('/api/hosted-data/files/{file_id}', { params: { path } })
      seen('DELETE', '/api/hosted-data/files/{file_id}', gone)
      assert.equal(gone.data!.success, true)
    })

    it('manages API keys and redeems a code, every answer the one the document describes', async () => {
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      const api = apiClient(s, { cookie })
      const { seen } = await documentChecked()
      const made = await api.POST('/svc_api/api-keys', { body: { name: 'reader', read_only: true, expires_days: 30 } })
      seen('POST', '/svc_api/api-keys', made)
      const key = made.data!.data
      assert.equal(key.read_only, true)
      assert.ok(key.expires_at! > key.created_at)
      const me = await apiClient(s, { key: key.key }).GET('/svc_api/me')
      seen('GET', '/svc_api/me', me)
      assert.deepEqual([me.data!.data.via, me.data!.data.read_only], ['key', true])
      const path = { id: key.id }
      seen('POST', '/svc_api/api-keys/{id}/disable', await api.POST('/svc_api/api-keys/{id}/disable', { params: { path } }))
      const listed = await api.GET('/svc_api/api-keys')
      seen('GET', '/svc_api/api-keys', listed)
      assert.equal(listed.data!.data.keys.find((k) => k.id === key.id)!.enabled, false)
      seen('POST', '/svc_api/api-keys/{id}/enable', await api.POST('/svc_api/api-keys/{id}/enable', { params: { path } }))
      seen('DELETE', '/svc_api/api-keys/{id}', await api.DELETE('/svc_api/api-keys/{id}', { params: { path } }))
      const redeemed = await api.POST('/api/redeem', { body: { code: await redeemCode(s, 'hosted-data') } })
      seen('POST', '/api/redeem', redeemed)
      assert.equal(redeemed.data!.feature, 'hosted-data')
      const changed = await api.POST('/svc_api/account/password', { body: { current_password: u.password, new_password: 'another long password' } })
      seen('POST', '/svc_api/account/password', changed)
      assert.equal(changed.data!.success, true)
    })

    it('uploads a page with the multipart form the document declares', async () => {
      const page = '<!doctype html><title>typed</title><h1>typed</h1>'
      const up = await apiClient(s, { key }).POST('/svc_api/upload', {
        body: { file: page, project_name: 'Typed' },
        bodySerializer: (b) => {
          const fd = new FormData()
          fd.append('file', new Blob([b.file], { type: 'text/html' }), 'typed.html')
          fd.append('project_name', b.project_name ?? '')
          return fd
        },
      })
      assert.equal(up.response.status, 200, JSON.stringify(up.error))
      assert.equal(up.data!.data.file_name, 'typed.html')
      assert.equal((await s.get(new URL(up.data!.data.url).pathname)).text, page)
    })

    it("reads and deletes a project's nested file by the file_path the document declares", async () => {
      // a generated client encodes a path parameter whole: file_path css/a.css goes out as css%2Fa.css
      const form = multipart([
        { name: 'files[]', filename: 'index.html', data: '<!doctype html><p>x</p>' },
        { name: 'files[]', filename: 'css/a.css', data: 'body{}' },
      ])
      const up = await s.post('/api/folders/nested/batch_upload', { key, body: form.body, headers: { 'content-type': form.contentType } })
      assert.equal(up.status, 200, up.text)
      const api = apiClient(s, { key })
      const path = { folder_path: 'nested', file_path: 'css/a.css' }
      const read = await api.GET('/api/folders/{folder_path}/file/{file_path}', { params: { path } })
      assert.equal(read.response.status, 200, JSON.stringify(read.error))
      assert.deepEqual([read.data!.path, read.data!.content], ['css/a.css', 'body{}'])
      const gone = await api.DELETE('/api/folders/{folder_path}/file/{file_path}', { params: { path } })
      assert.equal(gone.response.status, 200, JSON.stringify(gone.error))
      assert.equal((await api.GET('/api/folders/{folder_path}/file/{file_path}', { params: { path } })).response.status, 404)
      // decoded, it is checked as any stored path: an encoded separator cannot climb out
      const out = await api.GET('/api/folders/{folder_path}/file/{file_path}', { params: { path: { folder_path: 'nested', file_path: '../index.html' } } })
      assert.equal(out.error!.error_code, 1110)
    })

    it('creates a form and lists it', async () => {
      const api = apiClient(s, { key })
      const made = await api.POST('/svc_api/forms/create', {
        body: { form_name: 'Typed contact', fields_config: [{ name: 'email', type: 'email', required: true }], allowed_origins: [] },
      })
      assert.equal(made.response.status, 200, JSON.stringify(made.error))
      const form = made.data!.data
      assert.equal(form.form_name, 'Typed contact')
      assert.equal(form.fields_config[0].type, 'email')
      const listed = await api.GET('/svc_api/forms/list')
      assert.equal(listed.response.status, 200, JSON.stringify(listed.error))
      assert.ok(JSON.stringify(listed.data).includes(form.form_slug))
    })

    it("exports a form's submissions, drops its webhook and verifies an address, every answer the one the document describes", async () => {
      const api = apiClient(s, { key })
      const { seen, check } = await documentChecked()
      const made = await api.POST('/svc_api/forms/create', { body: { form_name: 'Answers', fields_config: [{ name: 'email', type: 'email' }] } })
      const path = { form_id: made.data!.data.id }
      assert.equal((await s.post(`/api/forms/submit/${made.data!.data.form_slug}`, { json: { email: 'a@example.com' } })).status, 200)
      const exported = await api.GET('/svc_api/forms/export/{form_id}', { params: { path } })
      seen('GET', '/svc_api/forms/export/{form_id}', exported)
      assert.equal(jsonOf(exported.data).data.submissions[0].data.email, 'a@example.com')
      assert.equal(jsonOf(exported.data).data.exported_count, 1)
      const csv = await api.GET('/svc_api/forms/export/{form_id}', { params: { path, query: { format: 'csv' } }, parseAs: 'text' })
      assert.equal(check('GET', '/svc_api/forms/export/{form_id}', csv.response.status, null, csv.response.headers.get('content-type')), null)
      assert.match(csv.data!, /a@example\.com/)
      await api.PUT('/svc_api/forms/webhook/{form_id}', { params: { path }, body: { url: 'http://127.0.0.1:9/hook' } })
      const unhooked = await api.DELETE('/svc_api/forms/webhook/{form_id}', { params: { path } })
      seen('DELETE', '/svc_api/forms/webhook/{form_id}', unhooked)
      assert.equal(unhooked.data!.success, true)

      const added = await api.POST('/svc_api/notify/addresses', { body: { address: `answers-${engine}@example.com` } })
      seen('POST', '/svc_api/notify/addresses', added)
      for (let i = 0; i < 400 && smtp.mails.length === 0; i++) await new Promise((r) => setTimeout(r, 25))
      const token = /verify\?token=([A-Za-z0-9]{40})/.exec(decodeQp(smtp.mails.at(-1)!.raw))![1]
      const pub = apiClient(s)
      const look = await pub.GET('/svc_api/notify/verify', { params: { query: { token } } })
      seen('GET', '/svc_api/notify/verify', look)
      assert.deepEqual(jsonOf(look.data).data, { address: `answers-${engine}@example.com`, verified: false })
      // a browser (fetch would send Sec-Fetch-Mode: cors) gets a page, declared as text/html
      const page = await s.get(`/svc_api/notify/verify?token=${token}`, { headers: { accept: 'text/html', 'sec-fetch-mode': 'navigate' } })
      assert.match(page.text, /<form method="post"/)
      assert.equal(check('GET', '/svc_api/notify/verify', page.status, null, String(page.header('content-type'))), null)
      const verified = await pub.POST('/svc_api/notify/verify', { body: { token } })
      seen('POST', '/svc_api/notify/verify', verified)
      assert.equal(jsonOf(verified.data).data.verified, true)
      const removed = await api.DELETE('/svc_api/notify/addresses/{id}', { params: { path: { id: added.data!.data.id } } })
      seen('DELETE', '/svc_api/notify/addresses/{id}', removed)
      assert.equal(removed.data!.success, true)
    })

    it('runs the admin console, every answer the one the document describes', async () => {
      const { api, u } = await adminAndProject('looked-at', '<!doctype html><p>admin</p>')
      const { seen, check } = await documentChecked()

      const users = await api.GET('/svc_api/admin/users', { params: { query: { search: u.username } } })
      seen('GET', '/svc_api/admin/users', users)
      const row = users.data!.data.users[0]
      // what the console's row shows: state, usage, overrides and the quota beside each name
      assert.deepEqual([row.username, row.pending, row.is_admin, row.usage.folders, row.quotas.files], [u.username, false, false, 1, 100])
      assert.equal(users.data!.data.per_page, 50)
      const changed = await api.POST('/svc_api/admin/users/{username}', {
        params: { path: { username: u.username } },
        body: { tier: 'vip', limits: { files: 7 } },
      })
      seen('POST', '/svc_api/admin/users/{username}', changed)
      assert.deepEqual([changed.data!.data.tier, changed.data!.data.limits], ['vip', { files: 7 }])
      const keys = await api.GET('/svc_api/admin/users/{username}/keys', { params: { path: { username: u.username } } })
      seen('GET', '/svc_api/admin/users/{username}/keys', keys)
      const k = keys.data!.data.keys[0]
      assert.equal(k.hint, u.key.slice(-4))
      const revoked = await api.DELETE('/svc_api/admin/users/{username}/keys/{id}', { params: { path: { username: u.username, id: k.id } } })
      seen('DELETE', '/svc_api/admin/users/{username}/keys/{id}', revoked)
      assert.deepEqual(revoked.data!.data, { id: k.id, name: k.name })
      const invite = await api.POST('/svc_api/admin/invites')
      seen('POST', '/svc_api/admin/invites', invite)
      assert.match(invite.data!.data.code, /^INV-/)

      const content = await api.GET('/svc_api/admin/content', { params: { query: { user: u.username } } })
      seen('GET', '/svc_api/admin/content', content)
      const item = content.data!.data.items[0]
      assert.deepEqual([item.kind, item.name, item.path, item.hold, item.blocked], ['folder', 'looked-at', 'index.html', null, false])
      assert.match(item.digest, /^[0-9a-f]{64}$/)

      const settings = await api.GET('/svc_api/admin/settings')
      seen('GET', '/svc_api/admin/settings', settings)
      assert.ok(settings.data!.data.settings.find((x) => x.name === 'brand_words')!.description)
      const set = await api.POST('/svc_api/admin/settings', { body: { abuse_contact: 'abuse@example.com' } })
      seen('POST', '/svc_api/admin/settings', set)
      assert.equal(set.data!.data.settings.abuse_contact, 'mailto:abuse@example.com')

      const audit = await api.GET('/svc_api/admin/audit', { params: { query: { limit: 2 } } })
      seen('GET', '/svc_api/admin/audit', audit)
      const page = jsonOf(audit.data) as Exclude<typeof audit.data, unknown[] | string | undefined>
      assert.deepEqual(page.data.entries[0].details, { value: 'mailto:abuse@example.com' })
      assert.equal(page.data.next, page.data.entries[1].id)
      const download = await api.GET('/svc_api/admin/audit', { params: { query: { format: 'json' } } })
      seen('GET', '/svc_api/admin/audit', download)
      assert.ok(Array.isArray(download.data))
      const csv = await api.GET('/svc_api/admin/audit', { params: { query: { format: 'csv' } }, parseAs: 'text' })
      assert.equal(check('GET', '/svc_api/admin/audit', csv.response.status, null, csv.response.headers.get('content-type')), null)

      const health = await api.GET('/svc_api/admin/health')
      seen('GET', '/svc_api/admin/health', health)
      assert.deepEqual(
        health.data!.data.checks.map((c) => c.name),
        ['database', 'storage'],
      )
      assert.equal(health.data!.data.disks[0].what, 'data_dir')
      assert.equal(health.data!.data.database.engine, engine)
    })

    it('takes a report through the abuse queue, every answer the one the document describes', async () => {
      const { a, api, u, upload } = await adminAndProject('reported', '<!doctype html><p>reported</p>')
      const { seen, check } = await documentChecked()
      const url = `${s.url}/${u.username}/reported/`

      const reported = await apiClient(s).POST('/svc_api/abuse/reports', { body: { url, category: 'phishing', details: 'a fake login' } })
      seen('POST', '/svc_api/abuse/reports', reported)
      assert.equal(reported.response.status, 201)
      const path = { id: reported.data!.data.id }
      const queue = await api.GET('/svc_api/admin/reports', { params: { query: { status: 'open' } } })
      seen('GET', '/svc_api/admin/reports', queue)
      // what the console's row shows and acts on
      const row = queue.data!.data.reports.find((x) => x.id === path.id)!
      assert.deepEqual([row.url, row.owner, row.category, row.details, row.source, row.hold], [url, u.username, 'phishing', 'a fake login', 'public', null])
      const one = await api.GET('/svc_api/admin/reports/{id}', { params: { path } })
      seen('GET', '/svc_api/admin/reports/{id}', one)
      assert.deepEqual(one.data!.data.evidence, [])
      const held = await api.POST('/svc_api/admin/reports/{id}/quarantine', { params: { path } })
      seen('POST', '/svc_api/admin/reports/{id}/quarantine', held)
      const ev = held.data!.data.evidence[0]
      assert.deepEqual([held.data!.data.status, ev.path], ['quarantined', 'reported/index.html'])
      const bytes = await api.GET('/svc_api/admin/reports/{id}/evidence/{digest}', { params: { path: { ...path, digest: ev.digest } }, parseAs: 'text' })
      assert.equal(bytes.data, '<!doctype html><p>reported</p>')
      const media = bytes.response.headers.get('content-type')
      assert.equal(check('GET', '/svc_api/admin/reports/{id}/evidence/{digest}', bytes.response.status, null, media), null)
      seen('POST', '/svc_api/admin/reports/{id}/restore', await api.POST('/svc_api/admin/reports/{id}/restore', { params: { path } }))
      const down = await api.POST('/svc_api/admin/reports/{id}/takedown', { params: { path }, body: { disable_account: false } })
      seen('POST', '/svc_api/admin/reports/{id}/takedown', down)
      assert.equal(down.data!.data.status, 'taken_down')
      const blocked = await api.GET('/svc_api/admin/blocklist')
      seen('GET', '/svc_api/admin/blocklist', blocked)
      assert.equal(blocked.data!.data.digests.find((d) => d.digest === ev.digest)!.report_id, path.id)
      const lifted = await api.POST('/svc_api/admin/reports/{id}/lift', { params: { path } })
      seen('POST', '/svc_api/admin/reports/{id}/lift', lifted)
      assert.equal(lifted.data!.data.resolved_by, a.username)

      // a case an admin opens on content still there (the takedown removed the project)
      await upload('other')
      const opened = await api.POST('/svc_api/admin/reports', { body: { url: `${s.url}/${u.username}/other/`, category: 'spam' } })
      seen('POST', '/svc_api/admin/reports', opened)
      assert.equal(opened.response.status, 201, JSON.stringify(opened.error))
      assert.deepEqual([opened.data!.data.source, opened.data!.data.status], ['admin', 'open'])
      const dismissed = await api.POST('/svc_api/admin/reports/{id}/dismiss', { params: { path: { id: opened.data!.data.id } } })
      seen('POST', '/svc_api/admin/reports/{id}/dismiss', dismissed)
      assert.equal(dismissed.data!.data.status, 'dismissed')
    })

    it("downloads the caller's data in either container the document declares", async () => {
      const check = answerChecker((await s.get('/openapi.json')).json)
      const api = apiClient(s, { key })
      for (const [format, magic] of [
        [undefined, '1f8b'],
        ['zip', '504b'],
      ] as const) {
        const r = await api.GET('/svc_api/me/export', { params: { query: { format } }, parseAs: 'arrayBuffer' })
        assert.equal(Buffer.from(r.data!).subarray(0, 2).toString('hex'), magic)
        assert.equal(check('GET', '/svc_api/me/export', r.response.status, null, r.response.headers.get('content-type')), null)
      }
    })

    it('answers an MCP request and a notification as the document describes', async () => {
      const doc = (await s.get('/openapi.json')).json
      const check = answerChecker(doc)
      const rpc = (body: unknown) => s.post('/mcp', { key, json: body, headers: { accept: 'application/json, text/event-stream' } })
      const init = await rpc({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'typed', version: '1' } },
      })
      assert.equal(check('POST', '/mcp', init.status, init.json), null)
      assert.equal(init.json.result.serverInfo.name, 'svc')
      const unknown = await rpc({ jsonrpc: '2.0', id: 'x', method: 'no/such/method' })
      assert.equal(check('POST', '/mcp', unknown.status, unknown.json), null)
      assert.equal(typeof unknown.json.error.code, 'number')
      const note = await rpc({ jsonrpc: '2.0', method: 'notifications/initialized' })
      assert.equal(note.status, 202)
      assert.ok(doc.paths['/mcp'].post.responses['202'])
    })

    it('answers 401 in the documented Error shape without credentials', async () => {
      const r = await apiClient(s).GET('/svc_api/upload/info')
      assert.equal(r.response.status, 401)
      assert.equal(r.error!.error_code, 1001)
    })
  })
}
