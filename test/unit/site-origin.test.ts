import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { loadConfig } from '../../src/config.js'
import { hostName, isContentOnlyHost, originUrl, previewOriginUrl, serviceLabels, siteOf, siteUserOf, userSiteOrigin } from '../../src/http/site-origin.js'

describe("users' origins: which host names a user", () => {
  const auto = loadConfig({})
  const set = loadConfig({ CONTENT_DOMAIN: 'pages.example.net', PUBLIC_URL: 'https://svc.example.net' })
  const under = loadConfig({ CONTENT_DOMAIN: 'example.net', PUBLIC_URL: 'https://svc.example.net' })
  const off = loadConfig({ CONTENT_DOMAIN: 'off' })
  const deeper = loadConfig({ CONTENT_DOMAIN: 'example.net', PUBLIC_URL: 'https://a.b.example.net' })
  const cases: Array<[string, ReturnType<typeof loadConfig>, string | undefined, string | null]> = [
    ['a loopback user host (auto)', auto, 'alice.localhost:8080', 'alice'],
    ['upper case and a trailing dot', auto, 'ALICE.localhost.:8443', 'alice'],
    ['localhost itself', auto, 'localhost:8443', null],
    ['an IP', auto, '127.0.0.1:8443', null],
    ['a project of a user (two labels deep)', auto, 'a.b.localhost', 'b'],
    ['three labels deep', auto, 'a.b.c.localhost', null],
    ['a label that cannot be a username', auto, 'a!b.localhost', null],
    ['no Host', auto, undefined, null],
    ['a configured domain', set, 'bob.pages.example.net', 'bob'],
    ['a look-alike suffix', set, 'bob.evilpages.example.net', null],
    ['the bare content domain', set, 'pages.example.net', null],
    ['*.localhost when a domain is configured', set, 'bob.localhost', null],
    ['the service host under the content domain', under, 'svc.example.net', null],
    ['a user next to it', under, 'carol.example.net', 'carol'],
    // the service's label is no user's, nor its project hosts (a child of the service's host)
    ['a project host under the service host', under, 'blog.svc.example.net', null],
    ['a parent of a deeper service host', deeper, 'b.example.net', null],
    ['the deeper service host', deeper, 'a.b.example.net', null],
    ['a user next to a deeper service host', deeper, 'carol.example.net', 'carol'],
    ["users' origins off", off, 'alice.localhost', null],
  ]
  for (const [name, config, host, want] of cases) it(`${name}: ${host} -> ${want}`, () => assert.equal(siteUserOf(host, config), want))
  it("reserves the service host's label under the content domain, and gives that name no site URL", () => {
    assert.deepEqual([...serviceLabels(under)], ['svc'])
    assert.deepEqual([...serviceLabels(deeper)], ['b'])
    assert.deepEqual([...serviceLabels(set)], [], 'the service outside the content domain')
    assert.deepEqual([...serviceLabels(loadConfig({ CONTENT_DOMAIN: 'example.net', PUBLIC_URL: 'https://example.net' }))], [], 'the apex')
    assert.deepEqual([...serviceLabels(off)], [])
    const ports = { main: 8443, http: null }
    assert.equal(userSiteOrigin('svc', { headers: { host: 'svc.example.net' } }, under, ports), null)
    assert.equal(userSiteOrigin('carol', { headers: { host: 'svc.example.net' } }, under, ports), 'https://carol.example.net')
  })

  const projects: Array<[string, ReturnType<typeof loadConfig>, string, { username: string; project: string | null; deploy: string | null } | null]> = [
    ['a user origin', auto, 'alice.localhost:8080', { username: 'alice', project: null, deploy: null }],
    ['a project origin', auto, 'blog.alice.localhost:8080', { username: 'alice', project: 'blog', deploy: null }],
    ['a project origin under a configured domain', set, 'my-app.bob.pages.example.net', { username: 'bob', project: 'my-app', deploy: null }],
    ['a kept deploy of a project', auto, '0a1b2c3d4e5f--blog.alice.localhost', { username: 'alice', project: 'blog', deploy: '0a1b2c3d4e5f' }],
    [
      'a kept deploy of a project with a dash',
      set,
      'zzzzzzzzzzzz--my-app.bob.pages.example.net',
      { username: 'bob', project: 'my-app', deploy: 'zzzzzzzzzzzz' },
    ],
    ['a deploy id of 11 characters', auto, '0a1b2c3d4e5--blog.alice.localhost', null],
    [
      'a deploy id with a capital (hosts are lowercased first)',
      auto,
      '0A1B2C3D4E5F--blog.alice.localhost',
      { username: 'alice', project: 'blog', deploy: '0a1b2c3d4e5f' },
    ],
    ['a project label with "--"', auto, 'my--blog.alice.localhost', null],
    ['a deploy of a project label with "--"', auto, '0a1b2c3d4e5f--my--blog.alice.localhost', null],
    ['a deploy of an empty project', auto, '0a1b2c3d4e5f--.alice.localhost', null],
    ['a deploy label over 63 characters', auto, `0a1b2c3d4e5f--${'b'.repeat(50)}.alice.localhost`, null],
    [
      'a deploy label of 63 characters',
      auto,
      `0a1b2c3d4e5f--${'b'.repeat(49)}.alice.localhost`,
      { username: 'alice', project: 'b'.repeat(49), deploy: '0a1b2c3d4e5f' },
    ],
    ['a project label ending in -', auto, 'blog-.alice.localhost', null],
    ['an IDN-shaped project label', auto, 'xn--80ak6aa92e.alice.localhost', null],
    ['a project label with "_" (no public CA certifies it)', auto, 'my_blog.alice.localhost', null],
    ['an empty project label', auto, '.alice.localhost', null],
    ['a project of an impossible user', auto, 'blog.a!b.localhost', null],
  ]
  for (const [name, config, host, want] of projects) it(`${name}: ${host}`, () => assert.deepEqual(siteOf(host, config), want))

  // hosts of the content domain that name nobody serve nothing, and never the service
  const contentOnly: Array<[ReturnType<typeof loadConfig>, string, boolean]> = [
    [auto, 'a.b.alice.localhost', true],
    [auto, '_x.alice.localhost', true],
    [auto, 'a!b.localhost', true],
    [auto, 'my--blog.alice.localhost', true],
    [auto, '0a1b2c3d4e5f--blog.alice.localhost', false],
    [auto, 'localhost:8443', false],
    [auto, 'alice.localhost', false],
    [auto, 'blog.alice.localhost', false],
    [auto, '127.0.0.1:8443', false],
    [set, 'pages.example.net', true],
    [loadConfig({ CONTENT_DOMAIN: 'pages.example.net' }), 'pages.example.net', false],
    [loadConfig({ CONTENT_DOMAIN: 'pages.example.net' }), 'x.y.bob.pages.example.net', true],
    [set, 'x.y.bob.pages.example.net', true],
    [set, 'svc.example.net', false],
    [set, 'bob.pages.example.net', false],
    [under, 'svc.example.net', false],
    [off, 'a.b.alice.localhost', false],
  ]
  for (const [config, host, want] of contentOnly) it(`content only: ${host} -> ${want}`, () => assert.equal(isContentOnlyHost(host, config), want))

  it('hostName drops the port, case and trailing dot, and keeps IPv6 brackets', () => {
    assert.equal(hostName('Example.COM.:443'), 'example.com')
    assert.equal(hostName('[::1]:8443'), '[::1]')
    assert.equal(hostName(undefined), '')
  })
})

describe("users' origins: the URL of a user's site", () => {
  const req = (host: string) => ({ headers: { host } })
  it('on loopback, the plain-HTTP listener when there is one, else HTTPS on the same port', () => {
    const c = loadConfig({})
    assert.equal(userSiteOrigin('alice', req('localhost:8443'), c, { main: 8443, http: 8080 }), 'http://alice.localhost:8080')
    assert.equal(userSiteOrigin('alice', req('127.0.0.1:8443'), c, { main: 8443, http: null }), 'https://alice.localhost:8443')
  })
  it('a public host without CONTENT_DOMAIN has none (no guessing a domain for remote visitors)', () => {
    assert.equal(userSiteOrigin('alice', req('svc.example.net'), loadConfig({}), { main: 443, http: 80 }), null)
  })
  it("a configured domain, with PUBLIC_URL's port", () => {
    const c = loadConfig({ CONTENT_DOMAIN: 'pages.test', PUBLIC_URL: 'https://svc.test:9443', TRUST_PROXY: '1' })
    assert.equal(userSiteOrigin('bob', req('internal:8080'), c, { main: 8080, http: null }), 'https://bob.pages.test:9443')
  })
  it("a project's own origin: one label more than its user's, only for names that are host labels", () => {
    assert.equal(originUrl('http://alice.localhost:8080', 'blog'), 'http://blog.alice.localhost:8080/')
    assert.equal(originUrl('https://bob.pages.test:9443', 'my-app'), 'https://my-app.bob.pages.test:9443/')
    for (const name of ['Blog', 'my site', 'a.b', 'x@y', 'blog-', 'ab--c', 'é', 'my_blog', '_x', '-x'])
      assert.equal(originUrl('http://alice.localhost:8080', name), null, name)
    assert.equal(originUrl(null, 'blog'), null)
  })
  it("a kept deploy's own origin: {deploy id}--{project}, one label, at most 63 characters", () => {
    assert.equal(previewOriginUrl('http://alice.localhost:8080', 'blog', '0a1b2c3d4e5f'), 'http://0a1b2c3d4e5f--blog.alice.localhost:8080/')
    assert.equal(previewOriginUrl('https://bob.pages.test', 'my-app', 'zzzzzzzzzzzz'), 'https://zzzzzzzzzzzz--my-app.bob.pages.test/')
    assert.equal(
      previewOriginUrl('http://alice.localhost:8080', 'b'.repeat(49), '0a1b2c3d4e5f'),
      `http://0a1b2c3d4e5f--${'b'.repeat(49)}.alice.localhost:8080/`,
    )
    assert.equal(previewOriginUrl('http://alice.localhost:8080', 'b'.repeat(50), '0a1b2c3d4e5f'), null, 'label over 63')
    assert.equal(previewOriginUrl('http://alice.localhost:8080', 'Blog', '0a1b2c3d4e5f'), null, 'no project origin')
    assert.equal(previewOriginUrl('http://alice.localhost:8080', 'blog', 'short'), null, 'not a deploy id')
    assert.equal(previewOriginUrl(null, 'blog', '0a1b2c3d4e5f'), null)
  })
  it('refuses a CONTENT_DOMAIN that is not a domain name', () => {
    assert.throws(() => loadConfig({ CONTENT_DOMAIN: 'https://x.com/' }), /CONTENT_DOMAIN/)
  })
})
