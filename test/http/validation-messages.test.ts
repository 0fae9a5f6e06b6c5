import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { expectError, expectErrorInBoth } from '../support/errors.js'
import { svc } from '../support/images.js'

// A request the route's schema refuses answers 400 / 1106 with a message naming the field and
// the limit, wholly in the answer's language (Chinese by default, English on request).
describe('schema validation messages', () => {
  let s: TestServer
  let key: string
  let cookie: string
  let bob: string
  before(async () => {
    s = await startServer()
    key = (await s.user()).key
    const admin = await s.user({ admin: true })
    cookie = await s.login(admin.username, admin.password)
    bob = (await s.user()).username
  })
  after(() => s?.close())

  const store = (json: unknown) => (headers: Record<string, string>) => s.post('/svc_api/data/store', { key, json, headers })
  // [keyword, request, Chinese detail, English detail]
  const cases: Array<[string, (headers: Record<string, string>) => Promise<{ status: number; json: any }>, string, string]> = [
    ['maxItems', store({ key: 'k', value: 1, tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }), 'tags 最多 20 项', 'tags must have at most 20 items'],
    ['minLength', store({ key: 'k', value: 1, tags: ['a', ''] }), 'tags[1] 不能为空', 'tags[1] must not be empty'],
    ['maxLength', store({ key: 'k', value: 1, tags: ['x'.repeat(33)] }), 'tags[0] 最多 32 个字符', 'tags[0] must be at most 32 characters long'],
    ['type', store({ key: 'k', value: 1, is_public: 'yes' }), 'is_public 须为 boolean 类型', 'is_public must be of type boolean'],
    ['type (several)', store({ key: 'k', value: 1, ttl: 'soon' }), 'ttl 须为 integer 或 null 类型', 'ttl must be of type integer or null'],
    ['type (whole body)', store([1]), 'body 须为 object 类型', 'body must be of type object'],
    ['required', store({ key: 'k' }), '缺少必填字段 value', 'value is required'],
    ['minimum', store({ key: 'k', value: 1, ttl: 0 }), 'ttl 不能小于 1', 'ttl must be at least 1'],
    ['maximum', store({ key: 'k', value: 1, ttl: 10 * 365 * 86400 + 1 }), 'ttl 不能大于 315360000', 'ttl must be at most 315360000'],
    [
      'pattern',
      (headers) => s.get('/svc_api/admin/content?hash=zz', { cookie, headers }),
      'hash 格式不符，须匹配 ^[0-9a-fA-F]{64}$',
      'hash must match the pattern ^[0-9a-fA-F]{64}$',
    ],
    [
      'additionalProperties',
      (headers) => s.post(`/svc_api/admin/users/${bob}`, { cookie, json: { disabled: false, colour: 'red' }, headers }),
      '不接受字段 colour',
      'colour is not an accepted field',
    ],
  ]
  for (const [keyword, send, zh, en] of cases) {
    it(`names the field and the limit of ${keyword}, in both languages`, async () => {
      for (const [lang, detail] of [
        ['zh-CN', `参数错误：${zh}`],
        ['en', `Invalid parameter: ${en}`],
      ]) {
        const r = await send({ 'accept-language': lang })
        assert.equal(r.status, 400, JSON.stringify(r.json))
        assert.equal(r.json.error_code, 1106)
        assert.equal(r.json.message, detail)
      }
    })
  }

  it('names each branch of a union the value matched none of, in the language asked (none: Chinese)', async () => {
    const send = (headers: Record<string, string>) => s.post(`/svc_api/admin/users/${bob}`, { cookie, json: { limits: { kv_keys: -1 } }, headers })
    const zh = await send({})
    expectError(zh, 400, 1106)
    assert.equal(zh.json.message, '参数错误：limits.kv_keys 须满足以下之一：不能小于 0；须为 null 类型')
    const en = await send({ 'accept-language': 'en' })
    expectError(en, 400, 1106)
    assert.equal(en.json.message, 'Invalid parameter: limits.kv_keys must satisfy one of: must be at least 0; must be of type null')
  })

  it('stored nothing from the refused writes', async () => {
    assert.equal((await s.get('/svc_api/data/get?key=k', { key })).status, 404)
  })
})

// A request the framework refuses before its route's schema (a body that is not JSON, too
// large or of a type the route does not take, a URL the router cannot read) answers in the
// answer's language too, with no English left in the Chinese.
for (const engine of ENGINES) {
  describe(`framework refusals in both languages [${engine}]`, () => {
    let s: TestServer
    let key: string
    before(async () => {
      s = await startServer({ engine })
      key = (await s.user()).key
    })
    after(() => s?.close())

    const store = (body: string, type: string) => (headers: Record<string, string>) =>
      s.post('/svc_api/data/store', { key, body, headers: { ...headers, 'content-type': type } })

    it('a body that is not JSON', async () => {
      await expectErrorInBoth(store('{"key":', 'application/json'), 400, 1113, '请求体不是有效的 JSON', 'The request body is not valid JSON')
    })

    it("a JSON body over the route's limit", async () => {
      const big = JSON.stringify({ x: 'y'.repeat(1024 * 1024) })
      const send = (headers: Record<string, string>) =>
        s.post('/api/folders/site/publish', { key, body: big, headers: { ...headers, 'content-type': 'application/json' } })
      await expectErrorInBoth(send, 413, 1109, '请求体过大，最大 1 MiB（1048576 字节）', 'Request body too large; the maximum is 1 MiB (1048576 bytes)', true)
    })

    it('a body of a type the route does not take', async () => {
      await expectErrorInBoth(store('<key/>', 'application/xml'), 415, 1112, '不支持的请求内容类型', 'Unsupported request Content-Type', true)
    })

    it('a Content-Type header that is no media type', async () => {
      await expectErrorInBoth(store('{}', 'json;;'), 415, 1112, '不支持的请求内容类型', 'Unsupported request Content-Type', true)
    })

    it('a URL with malformed percent-encoding', async () => {
      const send = (headers: Record<string, string>) => s.get('/api/folders/%zz', { key, headers })
      await expectErrorInBoth(send, 400, 1110, '路径无效：URL 中的百分号编码格式错误', 'Invalid path: malformed percent-encoding in the URL')
    })

    // no route takes a segment over the router's maxParamLength (2048): the URI is too long
    // for the service, whether a route's parameter or the API's catch-all would have met it
    const long = 'a'.repeat(2049)
    for (const path of [`/svc_api/files/${long}`, `/api/folders/${long}/files`, `/svc_api/${long}`])
      it(`a path segment over 2048 characters: 414 (${path.replace(long, '<2049 characters>')})`, async () => {
        const send = (headers: Record<string, string>) => s.get(path, { key, headers })
        await expectErrorInBoth(send, 414, 1110, '路径无效：路径中某一段超过 2048 个字符', 'Invalid path: a path segment is longer than 2048 characters')
      })

    it('a path segment of 2048 characters is no refusal (1404 where no route takes it)', async () => {
      expectError(await s.get(`/svc_api/${'a'.repeat(2048)}`, { key }), 404, 1404)
    })

    it('a path segment over 2048 characters outside the API: 414 in plain text, as its 400 and 404 are', async () => {
      const r = await s.get(`/${long}`)
      assert.equal(r.status, 414, r.text)
      assert.equal(r.text, 'URI Too Long')
      assert.match(String(r.header('content-type')), /^text\/plain/)
    })
  })
}

// The shared validator turns a numeric string such as "1e309" or "Infinity" into Infinity and
// checks no bound on it: such a number is refused by the bound a large finite one breaks, on
// both engines (SQLite failed the admin lists' queries with 500, PostgreSQL with a wrong 1106).
for (const engine of ENGINES) {
  describe(`numbers past the finite range [${engine}]`, () => {
    let s: TestServer
    let cookie: string
    let owner: string
    before(async () => {
      s = await startServer({ engine })
      const admin = await s.user({ admin: true })
      cookie = await s.login(admin.username, admin.password)
      owner = admin.username
    })
    after(() => s?.close())

    const cases: Array<[string, string, string]> = [
      ['/svc_api/admin/users?page=1e309', 'page 不能大于 999999999', 'page must be at most 999999999'],
      ['/svc_api/admin/users?per_page=Infinity', 'per_page 不能大于 200', 'per_page must be at most 200'],
      ['/svc_api/admin/users?per_page=-1e309', 'per_page 不能小于 1', 'per_page must be at least 1'],
      ['/svc_api/admin/reports?page=1e309', 'page 不能大于 999999999', 'page must be at most 999999999'],
      ['/svc_api/admin/reports?per_page=1e999', 'per_page 不能大于 200', 'per_page must be at most 200'],
      ['/svc_api/admin/audit?limit=1e309', 'limit 不能大于 500', 'limit must be at most 500'],
      ['/svc_api/admin/content?limit=Infinity', 'limit 不能大于 500', 'limit must be at most 500'],
    ]
    for (const [path, zh, en] of cases)
      it(`a query number of Infinity is past its bound: ${path}`, async () => {
        await expectErrorInBoth((headers) => s.get(path, { cookie, headers }), 400, 1106, `参数错误：${zh}`, `Invalid parameter: ${en}`)
      })

    it('a body number sent as "1e309" is past its bound too, and changes nothing', async () => {
      await svc(s, 'grant', owner, 'hosted-data')
      const f = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'd.json', content: '{"a":1}' } })
      assert.equal(f.status, 200, f.text)
      const id = f.json.file.id as string
      for (const version of ['1e309', 'Infinity']) {
        const r = await s.post(`/api/hosted-data/files/${id}/default-version`, { cookie, json: { version }, headers: { 'accept-language': 'en' } })
        assert.equal(r.status, 400, r.text)
        assert.deepEqual(r.json, { success: false, message: 'Invalid parameter: version must be at most 2000000000' })
      }
      assert.equal((await s.get(`/api/hosted-data/files/${id}`, { cookie })).json.file.default_version, 1)
    })
  })
}
