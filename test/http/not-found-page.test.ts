import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type Res, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { startDns, verifiedDomain, type TestDns } from '../support/dns.js'
import { expectError } from '../support/errors.js'
import { HOSTED_PAGE_CSP } from '../../src/http/content-headers.js'

// The public host's own 404 page (decision 193): where a site has no 404.html, a missing path
// answers a small HTML page in the visitor's language with a link to the root of the site they
// were on, on every URL form; a site's own 404.html still wins, and API paths keep format A.

const OWN_404 = '<!doctype html><title>own</title><h1>our own 404</h1>'
const WORDS = {
  en: { lang: 'en', title: '404 - page not found', link: "Go to the site's home page" },
  zh: { lang: 'zh-CN', title: '404 - 页面不存在', link: '前往网站首页' },
} as const

for (const engine of ENGINES) {
  describe(`the public host's 404 page [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let u: Awaited<ReturnType<TestServer['user']>>
    let port = ''
    /** GET or HEAD of `p` on `host` (null: the service's own host, the path form). */
    const at = (host: string | null, p: string, lang: 'en' | 'zh' | null, method = 'GET'): Promise<Res> =>
      s.request(method, p, {
        headers: { ...(host === null ? {} : { host }), ...(lang === null ? {} : { 'accept-language': lang === 'en' ? 'en-GB,en;q=0.9' : 'zh-CN,zh;q=0.9' }) },
      })
    const userHost = () => `${u.username}.localhost:${port}`

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr } })
      port = new URL(s.url).port
      u = await s.user()
      const plain = await batchUpload(s, { key: u.key }, 'plain', [{ filename: 'index.html', data: '<p>plain home</p>' }])
      assert.equal(plain.status, 200, plain.text)
      const own = await batchUpload(s, { key: u.key }, 'own', [
        { filename: 'index.html', data: '<p>own home</p>' },
        { filename: '404.html', data: OWN_404 },
      ])
      assert.equal(own.status, 200, own.text)
      for (const p of ['plain', 'own']) assert.equal((await s.post(`/api/folders/${p}/publish`, { key: u.key })).status, 200)
      await verifiedDomain(s, dns, u.key, 'plain.example.test', 'plain')
      await verifiedDomain(s, dns, u.key, 'own.example.test', 'own')
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    /** Checks the service's 404 page: headers, language, the link (null: none) and nothing it would load. */
    function assertPage(r: Res, lang: 'en' | 'zh', link: string | null, what: string): void {
      assert.equal(r.status, 404, what)
      assert.equal(r.header('content-type'), 'text/html; charset=utf-8', what)
      // the headers every answer of the public host has (the sandbox, as the plain 404 had)
      assert.equal(r.header('content-security-policy'), HOSTED_PAGE_CSP, what)
      assert.equal(r.header('x-content-type-options'), 'nosniff', what)
      assert.equal(r.header('cross-origin-resource-policy'), 'cross-origin', what)
      assert.equal(r.header('referrer-policy'), 'no-referrer', what)
      assert.equal(r.header('access-control-allow-origin'), '*', what)
      assert.equal(r.header('cache-control'), 'no-cache', what)
      assert.match(r.header('vary') ?? '', /Accept-Language/i, `${what}: the body depends on the language`)
      assert.equal(r.header('set-cookie'), undefined, what)
      const w = WORDS[lang]
      assert.match(r.text, new RegExp(`^<!doctype html>\\s*<html lang="${w.lang}">`), what)
      assert.ok(r.text.includes('<meta name="robots" content="noindex">'), what)
      assert.ok(r.text.includes(`<title>${w.title}</title>`), `${what}: ${r.text}`)
      // self-contained: no script, no resource to load (its icon is empty, so a browser asks
      // for no /favicon.ico either), no other site named
      assert.ok(r.text.includes('<link rel="icon" href="data:,">'), what)
      assert.doesNotMatch(r.text.replace('<link rel="icon" href="data:,">', ''), /<script|<link|<img|<iframe|\bsrc=|url\(|@import|https?:\/\//i, what)
      const links = [...r.text.matchAll(/<a href="([^"]*)">([^<]*)<\/a>/g)]
      if (link === null) assert.equal(links.length, 0, `${what}: no link to the page itself`)
      else {
        assert.equal(links.length, 1, what)
        assert.equal(links[0][1], link, what)
        assert.equal(links[0][2], w.link, what)
      }
      assert.equal(Number(r.header('content-length')), r.body.length, what)
    }

    // [form, host, path, link]: the missing path and the root of the project it is in; no link
    // outside a project (a user's root is a 404 itself) nor at the root itself
    const missing = (): Array<[string, string | null, string, string | null]> => [
      ['path form, a project', null, `/${u.username}/plain/nope.html`, `/${u.username}/plain/`],
      ['path form, deep in a project', null, `/${u.username}/plain/a/b/`, `/${u.username}/plain/`],
      ['path form, no such project', null, `/${u.username}/nothing/x`, null],
      ['path form, no such single file', null, `/${u.username}/nothing.html`, null],
      ['path form, no such user', null, '/nobody-here/site/x', null],
      ["user's origin, a project", userHost(), '/plain/nope', '/plain/'],
      ["user's origin, no such project", userHost(), '/nothing/x', null],
      ["user's origin, its root", userHost(), '/', null],
      ["project's origin", `plain.${u.username}.localhost:${port}`, '/nope/x.js', '/'],
      ["project's origin, its root unpublished", `nothing.${u.username}.localhost:${port}`, '/', null],
      ['custom domain', 'plain.example.test', '/nope', '/'],
    ]

    it('answers a missing path of a site without 404.html with the page, in English or Chinese, with a link to its root', async () => {
      for (const [form, host, p, link] of missing())
        for (const lang of ['en', 'zh'] as const)
          // twice: the lookup's answer, then the cached one
          for (const round of [1, 2]) assertPage(await at(host, p, lang), lang, link, `${form} ${p} ${lang} #${round}`)
    })

    it('answers HEAD with the same headers and no body', async () => {
      for (const [form, host, p] of missing())
        for (const lang of ['en', 'zh'] as const) {
          const get = await at(host, p, lang)
          const head = await at(host, p, lang, 'HEAD')
          assert.equal(head.status, 404, form)
          assert.equal(head.header('content-type'), 'text/html; charset=utf-8', form)
          assert.equal(head.body.length, 0, form)
          for (const name of ['content-type', 'content-length', 'content-security-policy', 'x-content-type-options', 'cache-control', 'vary'])
            assert.equal(head.header(name), get.header(name), `${form} ${lang}: ${name}`)
        }
    })

    it("speaks Chinese without an Accept-Language naming English, as the service's other answers do", async () => {
      const p = `/${u.username}/plain/nope`
      assertPage(await at(null, p, null), 'zh', `/${u.username}/plain/`, 'no Accept-Language')
      const fr = await s.get(p, { headers: { 'accept-language': 'fr-FR,fr;q=0.9' } })
      assertPage(fr, 'zh', `/${u.username}/plain/`, 'French only')
      const enLater = await s.get(p, { headers: { 'accept-language': 'zh;q=0.5,en;q=0.8' } })
      assertPage(enLater, 'en', `/${u.username}/plain/`, 'English preferred')
    })

    it('answers a content-domain host that names no site with the page, without a link', async () => {
      assertPage(await at(`a.b.${u.username}.localhost:${port}`, '/x', 'en'), 'en', null, 'deeper name')
    })

    it("leaves a site's own 404.html in place on every form", async () => {
      for (const [form, host, p] of [
        ['path form', null, `/${u.username}/own/nope`],
        ["user's origin", userHost(), '/own/nope'],
        ["project's origin", `own.${u.username}.localhost:${port}`, '/nope'],
        ['custom domain', 'own.example.test', '/nope'],
      ] as const)
        for (const method of ['GET', 'HEAD']) {
          const r = await at(host, p, 'en', method)
          assert.equal(r.status, 404, `${form} ${method}`)
          assert.equal(r.header('content-type'), 'text/html; charset=utf-8', form)
          assert.equal(r.header('content-length'), String(Buffer.byteLength(OWN_404)), form)
          assert.equal(r.text, method === 'HEAD' ? '' : OWN_404, `${form} ${method}`)
        }
    })

    it("keeps the API paths' 404 in format A", async () => {
      for (const p of ['/svc_api/no-such-endpoint', '/api/no/such/thing']) {
        const r = await at(null, p, 'en')
        expectError(r, 404, 1404)
        assert.match(r.header('content-type') ?? '', /^application\/json/)
      }
    })
  })
}
