import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, type TestServer } from '../support/server.js'
import { usernameProblem } from '../../src/auth/account-rules.js'

// The path form serves /{username}/..., so no user may take the first segment of one of the
// service's own routes: the list of reserved names must cover every route the app registers.
describe('reserved usernames', () => {
  let s: TestServer
  before(async () => {
    s = await startServer({ engine: 'sqlite' })
  })
  after(() => s?.close())

  it("covers the first segment of every route of the service's own", () => {
    // printRoutes draws a tree: each line extends the path of the line above it one level up
    const firsts = new Set<string>()
    const stack: string[] = []
    for (const line of s.app.printRoutes({ commonPrefix: false }).split('\n')) {
      const m = /^([│ ]*)[├└]── (\S+)/.exec(line)
      if (!m) continue
      const depth = m[1].length / 4
      const parent = depth === 0 ? '' : stack[depth - 1]
      const full = parent.endsWith('/') || m[2].startsWith('/') ? parent + m[2] : `${parent}/${m[2]}`
      stack[depth] = full
      const first = full.split('/')[1]
      if (first !== undefined && first !== '' && !first.startsWith(':') && !first.startsWith('*')) firsts.add(first)
    }
    assert.ok(firsts.size > 15, [...firsts].join(' '))
    const takeable = [...firsts].filter((f) => usernameProblem(f) === null)
    assert.deepEqual(takeable, [], 'route segments a user could register as a name')
  })

  it('refuses names that cannot be a DNS label of a per-user origin, or that mail and autoconfiguration use', () => {
    for (const name of [
      'ab-',
      'ab--cd',
      'xn--80ak6aa92e',
      'wpad',
      'autodiscover',
      'autoconfig',
      'isatap',
      'postmaster',
      'abuse',
      'hostmaster',
      'webmaster',
      'report',
      'mcp',
      // a host of the content domain that claims the domain's own mail: OpenPGP keys of every
      // address (Web Key Directory, advanced method, needs no DNS record) and MTA-STS policy
      'openpgpkey',
      'mta-sts',
      // device and client enrollment discovery for the domain's accounts
      'enterpriseenrollment',
      'enterpriseregistration',
      'lyncdiscover',
    ])
      assert.notEqual(usernameProblem(name), null, name)
    for (const name of ['ab', 'a-b', 'alice_2', '9lives']) assert.equal(usernameProblem(name), null, name)
  })

  it("refuses a new account named as the service's host under the content domain", async () => {
    const t = await startServer({ engine: 'sqlite', env: { PUBLIC_URL: 'https://svc.example.test', CONTENT_DOMAIN: 'example.test' } })
    try {
      // its origin would be the service's host, its projects' hosts the service's children
      assert.equal(t.deps.users.nameIssue('svc'), 'reserved')
      assert.equal(t.deps.users.nameIssue('SVC'), 'reserved')
      await assert.rejects(t.deps.users.create('svc', 'a long enough password'), /"svc" is reserved/)
      assert.equal(t.deps.users.nameIssue('carol'), null)
      assert.equal((await t.user({ name: 'carol' })).username, 'carol')
    } finally {
      await t.close()
    }
  })

  it("a service path asked for in another case never becomes a user's path", async () => {
    const u = await s.user()
    for (const [upper, lower] of [
      ['/SVC_API/files', '/svc_api/files'],
      ['/API/folders', '/api/folders'],
      ['/DOCS/errors', '/docs/errors'],
    ]) {
      assert.equal((await s.get(upper)).status, 404, upper)
      const r = await s.get(lower, { key: u.key })
      assert.equal(r.status, 200, `${lower} after ${upper}: ${r.status} ${r.text.slice(0, 80)}`)
      assert.match(String(r.header('content-type')), /json|html/)
    }
  })
})
