import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  candidates,
  compileRules,
  hostOf,
  headersFor,
  matchRedirect,
  onServiceOrigin,
  onUserOrigin,
  parseHeaders,
  parseRedirects,
  queryNamesFor,
  refreshLeaves,
  RuleSyntaxError,
  withQuery,
} from '../../src/features/sites/site-rules.js'

describe('_redirects parser', () => {
  const good: Array<[string, string, unknown]> = [
    ['a redirect with the default status', '/old /new', [{ from: '/old', to: '/new', status: 301, force: false, line: 1 }]],
    ['comments, blank lines and CRLF', '# top\r\n\r\n  /a   /b   302  \r\n', [{ from: '/a', to: '/b', status: 302, force: false, line: 3 }]],
    ['the SPA fallback', '/* /index.html 200', [{ from: '/*', to: '/index.html', status: 200, force: false, line: 1 }]],
    ['a forced rule', '/a /b 200!', [{ from: '/a', to: '/b', status: 200, force: true, line: 1 }]],
    [
      'placeholders and a splat',
      '/blog/:year/:slug/* /posts/:year-:slug/:splat 301',
      [{ from: '/blog/:year/:slug/*', to: '/posts/:year-:slug/:splat', status: 301, force: false, line: 1 }],
    ],
    [
      'an external redirect',
      '/docs/* https://docs.example.com/:splat 302',
      [{ from: '/docs/*', to: 'https://docs.example.com/:splat', status: 302, force: false, line: 1 }],
    ],
    [
      'placeholders in the path and query of another site, and a port',
      '/u/:id https://example.com:8443/users/:id?ref=:id&next=https://:id 302',
      [{ from: '/u/:id', to: 'https://example.com:8443/users/:id?ref=:id&next=https://:id', status: 302, force: false, line: 1 }],
    ],
    // Netlify's forward rule: a splat line with a 2xx status and no target serves the path itself
    [
      'a forward rule',
      '/static/* 200\n/api/* 200!',
      [
        { from: '/static/*', to: '/static/:splat', status: 200, force: false, line: 1 },
        { from: '/api/*', to: '/api/:splat', status: 200, force: true, line: 2 },
      ],
    ],
    ['a custom 404 for a section', '/shop/* /shop/404.html 404', [{ from: '/shop/*', to: '/shop/404.html', status: 404, force: false, line: 1 }]],
    ['a byte-order mark', '\uFEFF/a /b', [{ from: '/a', to: '/b', status: 301, force: false, line: 1 }]],
    // a comment may end a line, as Netlify reads it; a target's fragment is no comment
    // Netlify's query matches: the words between from and the target
    [
      'a query match',
      '/store id=:id  /blog/:id  301',
      [{ from: '/store', query: [{ name: 'id', bind: 'id' }], to: '/blog/:id', status: 301, force: false, line: 1 }],
    ],
    [
      'two query matches',
      '/articles id=:id tag=:tag /posts/:tag/:id 301',
      [
        {
          from: '/articles',
          query: [
            { name: 'id', bind: 'id' },
            { name: 'tag', bind: 'tag' },
          ],
          to: '/posts/:tag/:id',
          status: 301,
          force: false,
          line: 1,
        },
      ],
    ],
    [
      'a literal value, decoded as a query is, and a placeholder renamed',
      '/search lang=en q=a%20b+c /en/search 302\n/p/:x page=:n /p/:x/:n 200!',
      [
        {
          from: '/search',
          query: [
            { name: 'lang', equals: 'en' },
            { name: 'q', equals: 'a b c' },
          ],
          to: '/en/search',
          status: 302,
          force: false,
          line: 1,
        },
        { from: '/p/:x', query: [{ name: 'page', bind: 'n' }], to: '/p/:x/:n', status: 200, force: true, line: 2 },
      ],
    ],
    [
      'a parameter named like a condition (Netlify reads it as a query match there)',
      '/a Country=us /b',
      [{ from: '/a', query: [{ name: 'Country', equals: 'us' }], to: '/b', status: 301, force: false, line: 1 }],
    ],
    [
      'comments that end lines',
      '/a /b 302 # moved\n/c /d\t# no status\n/e /f#top 301',
      [
        { from: '/a', to: '/b', status: 302, force: false, line: 1 },
        { from: '/c', to: '/d', status: 301, force: false, line: 2 },
        { from: '/e', to: '/f#top', status: 301, force: false, line: 3 },
      ],
    ],
  ]
  for (const [name, text, want] of good) {
    it(`takes ${name}`, () => assert.deepEqual(parseRedirects(text), want))
  }

  it("takes a target's colon inside a word as its text, as Cloudflare Pages does: Help:Contents, a text fragment", () => {
    const text = [
      '/help https://en.wikipedia.org/wiki/Help:Contents 301',
      '/quote https://example.com/essay#:~:text=first%20line 302',
      '/w/* https://en.wikipedia.org/wiki/Category::splat 301',
      '/t/:id /blog/2020:summer/:id 301',
    ].join('\n')
    const rules = compileRules(parseRedirects(text), [])
    assert.equal(matchRedirect(rules, '/help', false)?.href, 'https://en.wikipedia.org/wiki/Help:Contents')
    assert.equal(matchRedirect(rules, '/quote', false)?.href, 'https://example.com/essay#:~:text=first%20line')
    assert.equal(matchRedirect(rules, '/w/URL', false)?.href, 'https://en.wikipedia.org/wiki/Category:URL')
    assert.deepEqual(matchRedirect(rules, '/t/7', false), { status: 301, to: '/blog/2020:summer/7', href: '/blog/2020:summer/7', force: false })
  })

  it("takes a domain-level line (Netlify's), matched on its host only (decision 171)", () => {
    const lines = parseRedirects('HTTPS://Old.Example.com/* https://example.com/:splat 301!\nhttp://a.example.com /b 302')
    assert.deepEqual(
      lines.map((r) => hostOf(r.from)),
      [
        { host: 'old.example.com', path: '/*' },
        { host: 'a.example.com', path: '/' },
      ],
    )
    const rules = compileRules(lines, parseHeaders('https://:project.pages.dev/*\n  X-Robots-Tag: noindex\n'))
    assert.equal(matchRedirect(rules, '/x', true, '', 'old.example.com')?.href, 'https://example.com/x')
    assert.equal(matchRedirect(rules, '/x', true, '', 'www.example.com'), null)
    assert.equal(matchRedirect(rules, '/x', true), null, 'no host: the site sits under a path')
    assert.equal(matchRedirect(rules, '/', false, '', 'a.example.com')?.href, '/b')
    assert.deepEqual(headersFor(rules, '/a', 'site.pages.dev'), [['X-Robots-Tag', 'noindex']])
    assert.deepEqual(headersFor(rules, '/a', 'pages.dev'), [])
    assert.deepEqual(headersFor(rules, '/a', 'a.b.pages.dev'), [], ':project is one label')
  })

  const bad: Array<[string, string, number, RegExp]> = [
    ['one token', '/only', 1, /expected "from to/],
    ['a condition', '/a /b 200 Country=us', 1, /conditions are not supported/],
    ['a relative from', 'a /b', 1, /must start with \//],
    ['a port in the host of from', 'https://x.com:8443/a /b', 1, /"x.com:8443" is not a host name/],
    ['a user in the host of from', 'https://u@x.com/a /b', 1, /is not a host name/],
    ['an empty host', 'https:///a /b', 1, /is not a host name/],
    ['a splat inside the pattern', '/a/*/b /c', 1, /may only end/],
    ['an unknown status', '/a /b 418', 1, /must be one of/],
    ['a status that is not a number', '/a /b abc', 1, /must be one of/],
    ['a relative target', '/a b', 1, /must start with \/ or be an http/],
    ['a status without a target, but for a forward rule', '/a 200', 1, /no target before "200": only a forward rule \("\/path\/\* 200"\)/],
    ['a redirect without a target', '/a/* 301', 1, /no target before "301"/],
    ['a proxy to another site', '/api/* https://api.example.com/:splat 200', 1, /can only be a redirect/],
    ['an uncaptured placeholder', '/a/:id /b/:name', 1, /does not capture/],
    ['a splat without *', '/a /b/:splat', 1, /does not capture/],
    // where a value would go (a segment, a query value, a fragment), a name is a placeholder
    ['an uncaptured placeholder in a query value', '/a/:id /b?x=:idd', 1, /target uses :idd, which "\/a\/:id" does not capture/],
    ['an uncaptured placeholder after a fragment mark', '/a /b#:top', 1, /target uses :top/],
    ['a bad placeholder', '/a/:1x /b', 1, /bad placeholder/],
    ['a query string in from', '/a?x=1 /b', 1, /query strings/],
    ['the line of the error', '# c\n/a /b\n\n/c', 4, /expected "from to/],
    // Netlify's conditions and query matches are named as such, whatever their place
    ['a line of conditions only', '/a /b\nCountry=us', 2, /"Country=us" is a condition.*no "from to" before it/],
    ['a role without a rule', 'Role=admin', 1, /"Role=admin" is a condition.*no "from to"/],
    ['a query match and no target', '/a Country=us', 1, /no target after "Country=us"/],
    ['a word that is neither a target nor a query match', '/a id /b', 1, /"id" is neither a target .* nor a query match/],
    ['a query match without a value', '/a id= /b', 1, /give the value to match or a :placeholder/],
    ['a query match without a name', '/a =x /b', 1, /has no parameter name/],
    ['two parameters in one word', '/a id=1&x=2 /b', 1, /one name=value per word/],
    ['a bad query placeholder', '/a id=:1 /b', 1, /bad placeholder ":1"/],
    ['a parameter matched twice', '/a id=:x id=:y /b/:x', 1, /"id" is matched twice/],
    ['a placeholder captured twice', '/a/:id id=:id /b/:id', 1, /:id is captured twice/],
    ['a splat captured again', '/a/* s=:splat /b/:splat', 1, /:splat is captured twice/],
    ['a target using what the query does not capture', '/a id=:id /b/:tag', 1, /:tag, which neither "\/a" nor its query matches capture/],
    ['a condition in place of the status', '/a /b Role=admin', 1, /"Role=admin" is a condition/],
    ['a condition after the status', '/a /b 302 Language=en,de', 1, /"Language=en,de" is a condition/],
    ['a query match with no from', 'id=:id /blog/:id 301', 1, /"id=:id" matches a query parameter, and the line has no "from to" before it/],
    ['more words', '/a /b 301 c', 1, /unexpected "c"/],
    // a visitor's value never chooses the host another site's URL names (decision 149)
    ['a placeholder in the host of another site', '/go/:host https://:host.example.com/ 302', 1, /:host is in the host of "https:\/\/:host\.example\.com\/"/],
    ['a splat as the host', '/a /b\n/x/* https://:splat/ 302', 2, /:splat is in the host of/],
    ['a splat right after the host', '/x/* https://example.com:splat 302', 1, /:splat is in the host of/],
    ['a query placeholder in the host', '/q h=:h http://www.:h.example.com/a 301', 1, /:h is in the host of/],
    ['a placeholder in the user part', '/u/:u https://:u@example.com/ 302', 1, /:u is in the host of/],
    ['a line too long', `/a /${'b'.repeat(3000)}`, 1, /longer than/],
  ]
  for (const [name, text, line, msg] of bad) {
    it(`refuses ${name}, naming the file and line`, () => {
      assert.throws(
        () => parseRedirects(text),
        (e: unknown) => {
          assert.ok(e instanceof RuleSyntaxError)
          assert.equal(e.line, line)
          assert.match(e.message, /^_redirects, line \d+: /)
          assert.match(e.message, msg)
          return true
        },
      )
    })
  }

  it('takes 10,000 lines and refuses more (decision 172); _headers keeps 1,000', () => {
    assert.equal(parseRedirects(Array.from({ length: 10000 }, (_, i) => `/a${i} /b`).join('\n')).length, 10000)
    assert.throws(() => parseRedirects(Array.from({ length: 10001 }, (_, i) => `/a${i} /b`).join('\n')), /line 10001: more than 10000 rules/)
    assert.throws(() => parseHeaders(Array.from({ length: 1001 }, (_, i) => `/a${i}\n  X-A: 1`).join('\n')), /more than 1000 rules/)
  })

  it('finds a plain line by its path among the others, the first matching line winning (decision 172)', () => {
    const rules = compileRules(
      parseRedirects(
        [
          '/a/:x /dyn-first 301',
          '/a/b /plain-after 301',
          '/c /plain-first 301',
          '/c/ /plain-second 302',
          '/* /catch-all 200',
          '/late /never 301',
          '/caf%C3%A9 /menu 301',
          '/forced /f 302!',
        ].join('\n'),
      ),
      [],
    )
    assert.equal(matchRedirect(rules, '/a/b', false)?.to, '/dyn-first')
    assert.equal(matchRedirect(rules, '/c/', false)?.to, '/plain-first')
    assert.equal(matchRedirect(rules, '/late', false)?.to, '/catch-all')
    assert.equal(matchRedirect(rules, '/café', false)?.to, '/catch-all', 'a line after the splat never wins')
    assert.equal(matchRedirect(rules, '/forced', true)?.to, '/f', 'a file shadows all but the forced line')
    assert.equal(matchRedirect(rules, '/C', true), null, 'paths are case-sensitive')
    const alone = compileRules(parseRedirects('/caf%C3%A9 /menu 301\n/ /home 302'), [])
    assert.equal(matchRedirect(alone, '/café/', false)?.to, '/menu')
    assert.equal(matchRedirect(alone, '/', false)?.to, '/home')
    assert.equal(matchRedirect(alone, '/x', false), null)
  })
})

describe('_redirects matching', () => {
  const rules = compileRules(
    parseRedirects(
      [
        '/old /new 301',
        '/blog/:year/:slug /posts/:year/:slug.html 200',
        '/docs/* https://docs.example.com/:splat 302',
        '/forced /elsewhere 302!',
        '/search/:q /find?q=:q&src=old#top 301',
        '/app/* /app/index.html 200',
        '/* /index.html 200',
      ].join('\n'),
    ),
    [],
  )
  const cases: Array<[string, boolean, unknown]> = [
    ['/old', false, { status: 301, to: '/new', href: '/new', force: false }],
    ['/old/', false, { status: 301, to: '/new', href: '/new', force: false }],
    ['/blog/2026/hello', false, { status: 200, to: '/posts/2026/hello.html', href: '/posts/2026/hello.html', force: false }],
    ['/docs/a/b', false, { status: 302, to: 'https://docs.example.com/a/b', href: 'https://docs.example.com/a/b', force: false }],
    ['/docs', false, { status: 302, to: 'https://docs.example.com/', href: 'https://docs.example.com/', force: false }],
    // a value keeps its meaning: its ?, #, % and spaces are encoded, never a query or fragment
    ['/docs/a?b#c d%', false, { status: 302, to: 'https://docs.example.com/a?b#c d%', href: 'https://docs.example.com/a%3Fb%23c%20d%25', force: false }],
    ['/search/x y', false, { status: 301, to: '/find', href: '/find?q=x%20y&src=old#top', force: false }],
    ['/app/settings/profile', false, { status: 200, to: '/app/index.html', href: '/app/index.html', force: false }],
    ['/anything/else', false, { status: 200, to: '/index.html', href: '/index.html', force: false }],
    // a file at the path shadows every rule but the forced ones
    ['/old', true, null],
    ['/forced', true, { status: 302, to: '/elsewhere', href: '/elsewhere', force: true }],
  ]
  for (const [path, exists, want] of cases) {
    it(`${path}${exists ? ' (file exists)' : ''} -> ${want ? JSON.stringify(want) : 'no rule'}`, () =>
      assert.deepEqual(matchRedirect(rules, path, exists), want))
  }
  it("keeps a %XX sequence of the rule's own target, encodes its other characters", () => {
    const r = compileRules(parseRedirects('/a /caf%C3%A9 301\n/b /café<x> 301'), [])
    assert.equal(matchRedirect(r, '/a', false)?.href, '/caf%C3%A9')
    assert.equal(matchRedirect(r, '/b', false)?.href, '/caf%C3%A9%3Cx%3E')
  })
  it('compares percent-encoded and NFD rule paths with the decoded NFC path, and finds the decoded target', () => {
    const nfd = 'cafe\u0301'
    const r = compileRules(
      parseRedirects(`/authors/c%C3%A9line /about 301\n/${nfd} /x 301\n/sp /my%20page.html 200\n/keep /a%2Fb 200\n/bad%zz /y 301\n/t/* /caf%C3%A9/:splat 200`),
      parseHeaders('/my%20page.html\n  X-A: 1\n'),
    )
    assert.equal(matchRedirect(r, '/authors/céline', false)?.to, '/about')
    assert.equal(matchRedirect(r, '/café', false)?.to, '/x')
    assert.deepEqual(matchRedirect(r, '/sp', false), { status: 200, to: '/my page.html', href: '/my%20page.html', force: false })
    // an encoded separator names no segment: left as written
    assert.equal(matchRedirect(r, '/keep', false)?.to, '/a%2Fb')
    assert.equal(matchRedirect(r, '/bad%zz', false)?.to, '/y')
    assert.equal(matchRedirect(r, '/t/a b', false)?.to, '/café/a b')
    assert.deepEqual(headersFor(r, '/my page.html'), [['X-A', '1']])
  })
  it("passes the query on, joined to the target's own and before its fragment", () => {
    assert.equal(withQuery('/a', ''), '/a')
    assert.equal(withQuery('/a', '?'), '/a')
    assert.equal(withQuery('/a', '?x=1'), '/a?x=1')
    assert.equal(withQuery('/a?from=q', '?x=1'), '/a?from=q&x=1')
    assert.equal(withQuery('/a#top', '?x=1'), '/a?x=1#top')
    assert.equal(withQuery('https://e.test/a?b=1#c', '?x=1'), 'https://e.test/a?b=1&x=1#c')
  })
  it("resolves a target's dot segments inside the project, written or brought by a value", () => {
    const r = compileRules(
      parseRedirects('/up /../../other/x.html 200\n/enc /a/%2E%2E/%2e./b 301\n/s/* /:splat 301\n/w/* /base/:splat 200\n/e/* https://e.test/:splat 302'),
      [],
    )
    assert.deepEqual(matchRedirect(r, '/up', false), { status: 200, to: '/other/x.html', href: '/other/x.html', force: false })
    assert.equal(matchRedirect(r, '/enc', false)?.href, '/b')
    assert.equal(matchRedirect(r, '/s/../../bob/secret/', false)?.href, '/bob/secret/')
    assert.equal(matchRedirect(r, '/s/a/./b/..', false)?.href, '/a/')
    assert.deepEqual(matchRedirect(r, '/w/../../x.html', false), { status: 200, to: '/x.html', href: '/x.html', force: false })
    // another site's URL is that site's to resolve
    assert.equal(matchRedirect(r, '/e/../x', false)?.href, 'https://e.test/../x')
  })
  it('leaves out a stored redirect whose placeholder is in the host of another site', () => {
    // published before the check: the line is left out and the next one matching applies
    const rules = compileRules(
      [
        { from: '/x/*', to: 'https://:splat/', status: 302, force: false, line: 1 },
        { from: '/go/:h', to: 'https://example.com:h', status: 302, force: false, line: 2 },
        { from: '/*', to: 'https://example.com/:splat', status: 302, force: false, line: 3 },
      ],
      [],
    )
    assert.equal(matchRedirect(rules, '/x/evil.example', false)?.href, 'https://example.com/x/evil.example')
    assert.equal(matchRedirect(rules, '/go/.evil.example', false)?.href, 'https://example.com/go/.evil.example')
  })

  it('first match wins', () => {
    const r = compileRules(parseRedirects('/a /first\n/a /second'), [])
    assert.equal(matchRedirect(r, '/a', false)?.to, '/first')
  })
  it('a pattern never matches across segments or by prefix', () => {
    const r = compileRules(parseRedirects('/a/:x /b\n/old /new'), [])
    assert.equal(matchRedirect(r, '/a/b/c', false), null)
    assert.equal(matchRedirect(r, '/older', false), null)
    assert.equal(matchRedirect(r, '/a.b', false), null)
  })
})

describe('_redirects query matches', () => {
  const rules = compileRules(
    parseRedirects(
      [
        '/store id=:id /blog/:id 301',
        '/articles id=:id tag=:tag /posts/:tag/:id 301',
        '/articles id=:id /posts/:id 301',
        '/articles tag=:tag /posts/tag/:tag 301',
        '/search lang=en /en/search 302',
        '/find q=:q /results/:q 200',
        '/ext to=:t https://e.test/:t 302',
        '/keep id=:id /kept?id=:id 301',
        '/forced id=:id /f/:id 302!',
      ].join('\n'),
    ),
    [],
  )
  const r = (status: number, to: string, href: string, consumed: string[], force = false) => ({ status, to, href, force, consumed })
  const cases: Array<[string, string, boolean, unknown]> = [
    ['/store', '?id=my-post', false, r(301, '/blog/my-post', '/blog/my-post', ['id'])],
    ['/store/', '?id=7', false, r(301, '/blog/7', '/blog/7', ['id'])],
    ['/store', 'id=7', false, r(301, '/blog/7', '/blog/7', ['id'])],
    // the rule applies only when the parameter is there, with a value
    ['/store', '', false, null],
    ['/store', '?id=', false, null],
    ['/store', '?id', false, null],
    ['/store', '?ID=5', false, null],
    ['/store', '?other=1', false, null],
    // values are form-decoded, the first one counts, and they go into the target encoded
    ['/store', '?x=1&id=a%20b', false, r(301, '/blog/a b', '/blog/a%20b', ['id'])],
    ['/store', '?id=a+b', false, r(301, '/blog/a b', '/blog/a%20b', ['id'])],
    ['/store', '?id=1&id=2', false, r(301, '/blog/1', '/blog/1', ['id'])],
    ['/store', '?id=a%3Fb%23c', false, r(301, '/blog/a?b#c', '/blog/a%3Fb%23c', ['id'])],
    ['/store', '?id=%ZZ', false, r(301, '/blog/%ZZ', '/blog/%25ZZ', ['id'])],
    // several matches, in the order Netlify's documentation gives for optional parameters
    ['/articles', '?tag=news&id=5', false, r(301, '/posts/news/5', '/posts/news/5', ['id', 'tag'])],
    ['/articles', '?id=5', false, r(301, '/posts/5', '/posts/5', ['id'])],
    ['/articles', '?tag=news', false, r(301, '/posts/tag/news', '/posts/tag/news', ['tag'])],
    ['/articles', '?page=2', false, null],
    ['/search', '?lang=en&q=x', false, r(302, '/en/search', '/en/search', ['lang'])],
    ['/search', '?lang=de', false, null],
    // a value's dot segments stay inside the project, as a path placeholder's do
    ['/find', '?q=../../x', false, r(200, '/x', '/x', ['q'])],
    ['/ext', '?to=a?b', false, r(302, 'https://e.test/a?b', 'https://e.test/a%3Fb', ['to'])],
    ['/keep', '?id=5', false, r(301, '/kept', '/kept?id=5', ['id'])],
    // a file at the path shadows a query rule too, unless it is forced
    ['/store', '?id=1', true, null],
    ['/forced', '?id=1', true, r(302, '/f/1', '/f/1', ['id'], true)],
  ]
  for (const [path, query, exists, want] of cases) {
    it(`${path}${query ? ` ${query}` : ''}${exists ? ' (file exists)' : ''} -> ${want ? JSON.stringify(want) : 'no rule'}`, () =>
      assert.deepEqual(matchRedirect(rules, path, exists, query), want))
  }
  it('names the parameters the answer of a path depends on', () => {
    assert.deepEqual(queryNamesFor(rules, '/articles'), ['id', 'tag'])
    assert.deepEqual(queryNamesFor(rules, '/store/'), ['id'])
    assert.deepEqual(queryNamesFor(rules, '/about'), [])
  })
  it('passes the query on without the parameters the rule took', () => {
    const cases: Array<[string, string, string[], string]> = [
      ['/blog/5', '?id=5', ['id'], '/blog/5'],
      ['/blog/5', '?utm_source=x&id=5', ['id'], '/blog/5?utm_source=x'],
      ['/kept?id=5', '?id=5&b=2', ['id'], '/kept?id=5&b=2'],
      ['/a', '?a%20b=1&c=%20', ['a b'], '/a?c=%20'],
      ['/a', '?a+b=1&id', ['a b', 'id'], '/a'],
      ['/a#top', '?id=1&x=2', ['id'], '/a?x=2#top'],
      ['/a', '?x=1', [], '/a?x=1'],
    ]
    for (const [location, query, drop, want] of cases) assert.equal(withQuery(location, query, drop), want, `${location} ${query} ${drop.join()}`)
  })
})

describe('_headers parser and matching', () => {
  it('takes path blocks with indented headers, comments and blank lines', () => {
    const text = '# headers\n/*\n  X-Frame-Options: DENY\n  Referrer-Policy: strict-origin\n\n/assets/*\n\tCache-Control: public, max-age=31536000, immutable\n'
    assert.deepEqual(parseHeaders(text), [
      {
        pattern: '/*',
        headers: [
          ['X-Frame-Options', 'DENY'],
          ['Referrer-Policy', 'strict-origin'],
        ],
        line: 2,
      },
      { pattern: '/assets/*', headers: [['Cache-Control', 'public, max-age=31536000, immutable']], line: 6 },
    ])
  })
  it("tells patterns from header lines by what they say, not their indentation, as Netlify's and Cloudflare's parsers do", () => {
    const text = '/*\nX-Frame-Options: DENY\n  /assets/*\n    Cache-Control: max-age=60\n\thttps://:project.pages.dev/*\nX-Robots-Tag: noindex\n'
    assert.deepEqual(parseHeaders(text), [
      { pattern: '/*', headers: [['X-Frame-Options', 'DENY']], line: 1 },
      { pattern: '/assets/*', headers: [['Cache-Control', 'max-age=60']], line: 3 },
      { pattern: 'https://:project.pages.dev/*', headers: [['X-Robots-Tag', 'noindex']], line: 5 },
    ])
  })
  const bad: Array<[string, string, number, RegExp]> = [
    ['a header before any pattern', '  X-A: b', 1, /before any path pattern/],
    ['a header flush left before any pattern', 'X-A: b\n/a\n  X-B: c', 1, /before any path pattern/],
    ['a pattern with no headers', '/a\n/b\n  X-A: 1', 1, /has no headers/],
    ['a last pattern with no headers', '/a\n  X-A: 1\n/b', 3, /has no headers/],
    ['a line without a colon', '/a\n  X-A b', 2, /expected "Name: value"/],
    ['a detached name that is no header name', '/a\n  ! X A', 2, /"X A" is not a valid header name/],
    ['a detach before any pattern', '! X-A', 1, /before any path pattern/],
    ['a bad header name', '/a\n  X A: b', 2, /not a valid header name/],
    ['Set-Cookie', '/a\n  Set-Cookie: a=b', 2, /set by the service/],
    ['Content-Length', '/a\n  content-length: 5', 2, /set by the service/],
    ['X-Content-Type-Options', '/a\n  X-Content-Type-Options: sniff', 2, /set by the service/],
    ['Access-Control-Allow-Credentials', '/a\n  Access-Control-Allow-Credentials: true', 2, /set by the service/],
    ['a control character', '/a\n  X-A: b\u0001c', 2, /control characters/],
    ['a value above U+00FF (Node cannot send it)', '/a\n  X-Note: 5 €', 2, /outside ASCII/],
    ['a Latin-1 value (it would arrive as other characters)', '/a\n  X-Note: café', 2, /outside ASCII/],
    ['Clear-Site-Data (clears the registrable domain)', '/a\n  Clear-Site-Data: "cookies"', 2, /set by the service/],
    ["a proxy's internal redirect", '/a\n  X-Accel-Redirect: /internal/', 2, /set by the service/],
    ["a proxy's cache time", '/a\n  X-Accel-Expires: 99999', 2, /set by the service/],
    ['a pattern with spaces', '/a b\n  X-A: 1', 1, /has no spaces/],
    ['a host with a port', 'https://x.com:80/*\n  X-A: 1', 1, /is not a host name/],
    ['a relative pattern', 'a\n  X-A: 1', 1, /expected "Name: value" or a path pattern \(starting with \/\), got "a"/],
    // a visitor's value never chooses the host a page sends them to (decision 149)
    ['a splat as the host of a Refresh URL', '/x/*\n  X-A: 1\n  Refresh: 0; url=https://:splat', 3, /Refresh puts :splat in the host of a URL/],
    ['a placeholder after a host in a Link', '/l/:h\n  Link: <//cdn.example.com:h>; rel=preconnect', 2, /Link puts :h in the host of a URL/],
    ['a placeholder right after the scheme', '/x/*\n  Refresh: 0; url=https::splat', 2, /puts :splat in the host/],
  ]
  for (const [name, text, line, msg] of bad) {
    it(`refuses ${name}, naming the file and line`, () => {
      assert.throws(
        () => parseHeaders(text),
        (e: unknown) => {
          assert.ok(e instanceof RuleSyntaxError)
          assert.equal(e.line, line)
          assert.match(e.message, /^_headers, line \d+: /)
          assert.match(e.message, msg)
          return true
        },
      )
    })
  }
  it("takes a placeholder in a URL's path, and text that its pattern does not capture", () => {
    const rules = parseHeaders('/x/*\n  Link: <https://cdn.example.com:8443/:splat>; rel=preload\n  X-Note: https://:nope/\n')
    assert.deepEqual(headersFor(compileRules([], rules), '/x/a.css'), [
      ['Link', '<https://cdn.example.com:8443/a.css>; rel=preload'],
      ['X-Note', 'https://:nope/'],
    ])
  })

  it('leaves out a stored value that puts a placeholder in the host of a URL', () => {
    const stored = [
      {
        pattern: '/x/*',
        headers: [
          ['Refresh', '0; url=https://:splat'],
          ['X-Ok', 'yes'],
        ] as Array<[string, string]>,
        line: 1,
      },
    ]
    assert.deepEqual(headersFor(compileRules([], stored), '/x/evil.example/login'), [['X-Ok', 'yes']])
  })

  it('leaves out of stored rules what this release refuses, and on the path form what only own origins take', () => {
    // rules published before a check existed: compiled without the refused lines
    const stored = [
      {
        pattern: '/*',
        headers: [
          ['X-Ok', 'yes'],
          ['X-Note', '5 €'],
          ['Clear-Site-Data', '"cookies"'],
          ['Basic-Auth', 'someuser:somepassword'],
          ['NEL', '{}'],
        ] as Array<[string, string]>,
        line: 1,
      },
    ]
    const rules = compileRules([], stored)
    assert.deepEqual(headersFor(rules, '/x'), [
      ['X-Ok', 'yes'],
      ['NEL', '{}'],
    ])
    const own = parseHeaders('/*\n  NEL: {}\n  Report-To: {}\n  Reporting-Endpoints: a="https://r.example/"\n  Accept-CH: DPR\n  X-Ok: yes\n')
    assert.deepEqual(onServiceOrigin(headersFor(compileRules([], own), '/x')), [['X-Ok', 'yes']])
  })
  it('leaves out on the path form a Refresh that sends the page to another origin, as a browser reads it (298)', () => {
    const leaves = [
      '0; url=https://evil.example/x',
      '0;URL="//evil.example/y"',
      "3, url = 'https://evil.example/'",
      '0 https://evil.example/',
      '1.5;url=/\\evil.example',
      '0; urlhttps://evil.example/',
      '0; url=javascript:alert(1)',
      '0; url=http://[',
    ]
    const stays = ['5', '0;', '0; url=about.html', '0; url=/u/p/other', "0; URL='?page=2'", 'url=https://evil.example/', 'x; url=https://evil.example/', '']
    for (const value of leaves) assert.equal(refreshLeaves(value), true, value)
    for (const value of stays) assert.equal(refreshLeaves(value), false, value)
    const kept = onServiceOrigin([
      ['Refresh', '0; url=https://evil.example/'],
      ['refresh', '5; url=next.html'],
      ['X-Ok', 'https://evil.example/'],
    ])
    assert.deepEqual(kept, [
      ['refresh', '5; url=next.html'],
      ['X-Ok', 'https://evil.example/'],
    ])
  })
  it("reads Service-Worker-Allowed as a path of the project on the user's origin, never above its root", () => {
    const cases: Array<[string, string, string | null]> = [
      ['/', '/assets/sw.js', '/app/'],
      ['/app/', '/sw.js', '/app/app/'],
      ['./', '/assets/sw.js', '/app/assets/'],
      ['../../../', '/assets/sw.js', '/app/'],
      ['/../../x/', '/sw.js', '/app/x/'],
      ['https://other.example/', '/sw.js', '/app/'],
      ['//other.example/y/', '/sw.js', '/app/y/'],
      ['http://[', '/sw.js', null],
    ]
    for (const [value, path, want] of cases) {
      const out = onUserOrigin(
        [
          ['X-Ok', 'yes'],
          ['Service-Worker-Allowed', value],
        ],
        '/app',
        path,
      )
      assert.deepEqual(
        out,
        want === null
          ? [['X-Ok', 'yes']]
          : [
              ['X-Ok', 'yes'],
              ['Service-Worker-Allowed', want],
            ],
        value,
      )
    }
  })
  it('takes one * anywhere in a _headers pattern, matching any characters, as Netlify deploys and Cloudflare Pages do', () => {
    const rules = compileRules(
      [],
      parseHeaders('/*.js\n  X-Js: yes\n/*/payload.json\n  X-Payload: :splat\n/_astro/*.css\n  X-Css: yes\n/blog/:year/*.html\n  X-Year: :year\n'),
    )
    const cases: Array<[string, Array<[string, string]>]> = [
      ['/app.js', [['X-Js', 'yes']]],
      ['/assets/deep/app.js', [['X-Js', 'yes']]],
      ['/app.json', []],
      ['/posts/one/payload.json', [['X-Payload', 'posts/one']]],
      ['/_astro/page.B1c2.css', [['X-Css', 'yes']]],
      ['/_astro/page.css.map', []],
      ['/blog/2024/a/b.html', [['X-Year', '2024']]],
    ]
    for (const [path, want] of cases) assert.deepEqual(headersFor(rules, path), want, path)
    // one * per pattern, so matching stays linear in the path's length; _redirects keeps its final splat
    assert.throws(() => parseHeaders('/**/*.html\n  X-A: 1'), /line 1: .*one \*/)
    assert.throws(() => parseRedirects('/*.js /x 301'), /\* may only end the pattern/)
  })
  it('takes a line asking for the nosniff the service sends, leaving it out of the answer; HSTS only on own origins (decision 156)', () => {
    const rules = compileRules(
      [],
      parseHeaders('/*\n  X-Content-Type-Options: nosniff\n  Strict-Transport-Security: max-age=60\n/a\n  X-Content-Type-Options: NOSNIFF\n'),
    )
    assert.deepEqual(headersFor(rules, '/a'), [['Strict-Transport-Security', 'max-age=60']])
    assert.deepEqual(onServiceOrigin(headersFor(rules, '/a')), [])
  })
  it("fills a value's placeholders with what the pattern matched, encoded, as Cloudflare Pages does", () => {
    const rules = compileRules(
      [],
      parseHeaders(
        '/movies/:title\n  X-Movie: watching ":title"\n  X-Keep: :other and https://e.test:8080/x\n/static/*\n  Link: </cdn/:splat>; rel=canonical\n',
      ),
    )
    const cases: Array<[string, Array<[string, string]>]> = [
      [
        '/movies/up',
        [
          ['X-Movie', 'watching "up"'],
          ['X-Keep', ':other and https://e.test:8080/x'],
        ],
      ],
      // a decoded value is encoded again: a CR LF, a space or a non-ASCII letter never reaches the header raw
      [
        '/movies/a\r\nSet-Cookie: x=1',
        [
          ['X-Movie', 'watching "a%0D%0ASet-Cookie%3A%20x%3D1"'],
          ['X-Keep', ':other and https://e.test:8080/x'],
        ],
      ],
      [
        '/movies/café',
        [
          ['X-Movie', 'watching "caf%C3%A9"'],
          ['X-Keep', ':other and https://e.test:8080/x'],
        ],
      ],
      ['/static/js/app.js', [['Link', '</cdn/js/app.js>; rel=canonical']]],
      ['/static', [['Link', '</cdn/>; rel=canonical']]],
    ]
    for (const [path, want] of cases) assert.deepEqual(headersFor(rules, path), want, path)
  })
  it('applies every matching block in order and joins a repeated name', () => {
    const rules = compileRules([], parseHeaders('/*\n  X-A: 1\n  Link: </a.css>; rel=preload\n/page\n  X-B: 2\n  link: </b.js>; rel=preload\n'))
    assert.deepEqual(headersFor(rules, '/page'), [
      ['X-A', '1'],
      ['Link', '</a.css>; rel=preload, </b.js>; rel=preload'],
      ['X-B', '2'],
    ])
    assert.deepEqual(headersFor(rules, '/other'), [
      ['X-A', '1'],
      ['Link', '</a.css>; rel=preload'],
    ])
  })
  it("detaches what earlier blocks set with Cloudflare Pages' `! Name`, before the block's own lines", () => {
    const text = [
      '/*',
      '  Cache-Control: no-cache',
      '  Link: </a.css>; rel=preload',
      '/assets/*',
      '  ! Cache-Control',
      '  Cache-Control: public, max-age=31536000, immutable',
      '/*.jpg',
      '  ! link',
      '  ! X-Content-Type-Options',
    ].join('\n')
    const parsed = parseHeaders(text)
    assert.deepEqual(parsed[1], {
      pattern: '/assets/*',
      headers: [['Cache-Control', 'public, max-age=31536000, immutable']],
      unset: ['Cache-Control'],
      line: 4,
    })
    assert.deepEqual(parsed[2], { pattern: '/*.jpg', headers: [], unset: ['link', 'X-Content-Type-Options'], line: 7 })
    const rules = compileRules([], parsed)
    assert.deepEqual(headersFor(rules, '/'), [
      ['Cache-Control', 'no-cache'],
      ['Link', '</a.css>; rel=preload'],
    ])
    assert.deepEqual(headersFor(rules, '/assets/app.js'), [
      ['Link', '</a.css>; rel=preload'],
      ['Cache-Control', 'public, max-age=31536000, immutable'],
    ])
    assert.deepEqual(headersFor(rules, '/assets/logo.jpg'), [['Cache-Control', 'public, max-age=31536000, immutable']])
  })
})

// The segment index (SiteRules.dynamic, headerIndex) only narrows which lines' regexes run: for
// any rule set and path, every line whose regex matches must be among the path's candidates.
// Checked on random rule files over a small alphabet (so lines and paths collide often), with
// placeholders, splats, inner stars, encoded and unicode text, hosts, queries and slashes.
describe('the segment index of site rules', () => {
  /** A deterministic generator (mulberry32), so a failure names a seed that repeats it. */
  const random = (seed: number) => () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const LITERALS = ['a', 'b', 'ab', 'c%C3%A9', 'cé', 'x.y', 'B']
  const PATH_SEGMENTS = ['a', 'b', 'ab', 'cé', 'x.y', 'B', 'abc', '']
  const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]

  function pattern(r: () => number, innerStar: boolean): string {
    const n = Math.floor(r() * 4)
    const segs: string[] = []
    let names = 0
    for (let i = 0; i < n; i++) {
      const k = r()
      if (k < 0.5) segs.push(pick(r, LITERALS))
      else if (k < 0.8) segs.push(`:p${names++}`)
      else if (innerStar) segs.push(pick(r, ['*.html', 'a*', '*']))
      else segs.push(pick(r, LITERALS))
    }
    let p = `/${segs.join('/')}`
    const end = r()
    if (end < 0.25) p = `${p === '/' ? '' : p}/*`
    else if (end < 0.35 && !innerStar) p = `${p}*`
    else if (end < 0.5 && p !== '/') p = `${p}/`
    return r() < 0.1 ? `https://:project.pages.test${p}` : p
  }

  function requestPath(r: () => number): string {
    const n = Math.floor(r() * 4)
    const p = `/${Array.from({ length: n }, () => pick(r, PATH_SEGMENTS)).join('/')}`
    return r() < 0.3 && p !== '/' ? `${p}/` : p
  }

  for (let seed = 1; seed <= 40; seed++) {
    it(`finds every line whose regex matches (seed ${seed})`, () => {
      const r = random(seed)
      const redirects: string[] = []
      const headers: string[] = []
      /** Keeps the lines the parser takes (the generator also writes ones it refuses, such as two stars). */
      const valid = (parse: (t: string) => unknown, line: string) => {
        try {
          parse(line)
          return true
        } catch (e) {
          if (e instanceof RuleSyntaxError) return false
          throw e
        }
      }
      while (redirects.length < 60 || headers.length < 60) {
        const line = `${pattern(r, false)}${r() < 0.15 ? ' q=:v' : ''} /to 301`
        if (redirects.length < 60 && valid(parseRedirects, line)) redirects.push(line)
        const block = `${pattern(r, true)}\n  X-Line: ${headers.length}`
        if (headers.length < 60 && valid(parseHeaders, block)) headers.push(block)
      }
      const rules = compileRules(parseRedirects(redirects.join('\n')), parseHeaders(headers.join('\n')))
      let matched = 0
      let skipped = 0
      for (let k = 0; k < 300; k++) {
        const path = requestPath(r)
        const found = new Set(candidates(rules.dynamic, path))
        rules.redirects.forEach((line, i) => {
          if (line.re.source === '$^') return
          if (line.re.test(path)) {
            matched++
            assert.ok(found.has(i), `seed ${seed}: ${path} matches "${line.from}" (line ${i + 1}), not among its candidates`)
          } else if (!found.has(i)) skipped++
        })
        const foundHeaders = new Set(candidates(rules.headerIndex, path))
        rules.headers.forEach((block, i) => {
          if (block.re.test(path)) assert.ok(foundHeaders.has(i), `seed ${seed}: ${path} matches the block "${block.pattern}", not among its candidates`)
        })
        const order = candidates(rules.dynamic, path)
        assert.deepEqual(
          order,
          [...order].sort((a, b) => a - b),
          'candidates come in file order',
        )
      }
      // the rule files are dense enough that paths match lines, and the index spares most others
      assert.ok(matched >= 20, `seed ${seed}: only ${matched} matches`)
      assert.ok(skipped > matched, `seed ${seed}: the index skipped ${skipped} lines`)
    })
  }

  it('answers a path of a file of 10,000 placeholder lines from its own segments', () => {
    const text = Array.from({ length: 10_000 }, (_, i) => `/:lang/x${i} /y/:lang 301`).join('\n')
    const rules = compileRules(parseRedirects(text), [])
    assert.deepEqual(candidates(rules.dynamic, '/en/x5000'), [5000])
    assert.deepEqual(candidates(rules.dynamic, '/nothing/here'), [])
    assert.equal(matchRedirect(rules, '/en/x5000', false)?.href, '/y/en')
    assert.equal(matchRedirect(rules, '/en/x10000', false), null)
  })
})
