import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HIGH_LIMITS, batchUpload } from '../support/hosting.js'
import { startDns, type TestDns } from '../support/dns.js'
import { makeTree, runCli } from './run.js'
import { expiryOf } from '../../src/cli/client/commands/domains.js'

// svc domain add|verify|primary|list|remove and svc access set|clear|list, as child processes against
// a real server whose DNS checks go to a DNS server on loopback.
for (const engine of ENGINES) {
  describe(`svc domain and svc access [${engine}]`, () => {
    let s: TestServer
    let dns: TestDns
    let alice: Awaited<ReturnType<TestServer['user']>>
    let env: Record<string, string>
    const at = (host: string, p: string, headers: Record<string, string> = {}) => s.get(p, { headers: { host, ...headers } })

    before(async () => {
      dns = await startDns()
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS, DNS_RESOLVER: dns.addr } })
      alice = await s.user({ name: 'alice' })
      env = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1' }
      assert.equal((await batchUpload(s, { key: alice.key }, 'site', [{ filename: 'index.html', data: '<p>cli site</p>' }])).status, 200)
      assert.equal((await s.post('/api/folders/site/publish', { key: alice.key })).status, 200)
    })
    after(async () => {
      await s?.close()
      await dns?.close()
    })

    it('adds, lists with the DNS record, verifies and removes a domain', async () => {
      const add = await runCli(['domain', 'add', 'blog.example.test', '--project', 'site'], { env })
      assert.equal(add.code, 0, add.stderr)
      const rec = /(_svc-challenge\.blog\.example\.test)\s+TXT\s+"(svc-verify=[0-9a-f]{32})"/.exec(add.stdout)
      assert.ok(rec, add.stdout)
      const early = await runCli(['domain', 'verify', 'blog.example.test'], { env })
      assert.equal(early.code, 1)
      assert.match(early.stderr, /^error 1343 /m)
      dns.txt.set(rec[1], [rec[2]])
      const list = await runCli(['domain', 'list', '--json'], { env })
      assert.equal(list.code, 0, list.stderr)
      assert.equal(list.json.data.domains[0].verified, false)
      const ok = await runCli(['domain', 'verify', 'blog.example.test'], { env })
      assert.equal(ok.code, 0, ok.stderr)
      assert.match(ok.stdout, /verified blog\.example\.test: it serves site/)
      assert.equal((await at('blog.example.test', '/')).text, '<p>cli site</p>')
      const table = await runCli(['domain', 'list'], { env })
      assert.match(table.stdout, /blog\.example\.test\s+site\s+verified/)
      // primary: browsers opening the project's other URLs are sent there, until --off
      const primary = await runCli(['domain', 'primary', 'blog.example.test'], { env })
      assert.equal(primary.code, 0, primary.stderr)
      assert.match(primary.stdout, /blog\.example\.test is the primary domain of site/)
      assert.match((await runCli(['domain', 'list'], { env })).stdout, /blog\.example\.test\s+site\s+primary/)
      const nav = await at(`${alice.username}.localhost`, '/site/', { 'sec-fetch-dest': 'document' })
      assert.equal(nav.header('location'), 'https://blog.example.test/')
      const off = await runCli(['domain', 'primary', 'blog.example.test', '--off', '--json'], { env })
      assert.equal(off.code, 0, off.stderr)
      assert.equal(off.json.data.primary, false)
      const rm = await runCli(['domain', 'remove', 'blog.example.test'], { env })
      assert.equal(rm.code, 0, rm.stderr)
      assert.notEqual((await at('blog.example.test', '/')).text, '<p>cli site</p>')
      const usage = await runCli(['domain', 'add', 'x.example.test'], { env })
      assert.equal(usage.code, 2)
      assert.match(usage.stderr, /--project/)
    })

    it('svc deploy of a folder from GitHub Pages says how to serve the domain its CNAME names, until that domain serves the project', async () => {
      const deploy = async (cname: string | null, project = 'ghp', extra: string[] = []) => {
        const dir = makeTree({ 'index.html': '<p>moved</p>', ...(cname === null ? {} : { CNAME: cname }) })
        const r = await runCli(['deploy', dir, '--project', project, ...extra], { env })
        assert.equal(r.code, 0, r.stderr)
        return r.stderr
      }
      const add = 'To serve the site there: svc domain add www.moved.test --project ghp'
      // each row: the CNAME file (null: none), the options, what stderr says of it (null: nothing)
      const rows: Array<[cname: string | null, extra: string[], note: string | null]> = [
        ['www.moved.test\n', [], add],
        ['www.moved.test\n', ['--batch'], add],
        // the first line that is not blank, in any case, with or without the root's final dot
        ['\n  WWW.Moved.TEST.  \r\n', [], add],
        // no note where nothing went live
        ['www.moved.test\n', ['--dry-run'], null],
        ['www.moved.test\n', ['--preview'], null],
        // not a host name (GitHub Pages takes none of these either), or no CNAME at all
        ['https://www.moved.test/\n', [], null],
        ['localhost\n', [], null],
        [null, [], null],
      ]
      for (const [cname, extra, note] of rows) {
        const err = await deploy(cname, 'ghp', extra)
        if (note === null) assert.doesNotMatch(err, /CNAME/, `${JSON.stringify(cname)} ${extra.join(' ')}`)
        else
          assert.ok(
            err.includes(`note: CNAME names www.moved.test, the site's domain on GitHub Pages; here that file is served as it is and sets nothing. ${note}`),
            err,
          )
      }
      // the file is served as GitHub Pages serves it: bytes as they are, no type of its own
      await deploy('www.moved.test\n')
      const file = await at(`ghp.${alice.username}.localhost`, '/CNAME')
      assert.deepEqual([file.status, file.header('content-type'), file.text], [200, 'application/octet-stream', 'www.moved.test\n'])
      // once the domain is the project's, nothing to say; another project is told whose it is
      assert.equal((await runCli(['domain', 'add', 'www.moved.test', '--project', 'ghp'], { env })).code, 0)
      assert.doesNotMatch(await deploy('www.moved.test\n'), /CNAME/)
      assert.match(await deploy('www.moved.test\n', 'other'), /CNAME names www\.moved\.test, .* www\.moved\.test serves your project ghp\n/)
      assert.equal((await runCli(['domain', 'remove', 'www.moved.test'], { env })).code, 0)
    })

    it('sets a visitor password from stdin and an expiry, lists and clears them', async () => {
      const set = await runCli(['access', 'set', 'site', '--password-stdin', '--expires', '7d'], { env, input: 'cli-secret\n' })
      assert.equal(set.code, 0, set.stderr)
      assert.match(set.stdout, /^site: password, expires \d{4}-/)
      assert.equal((await s.get('/alice/site/')).status, 401)
      const auth = `Basic ${Buffer.from('v:cli-secret').toString('base64')}`
      assert.equal((await s.get('/alice/site/', { headers: { authorization: auth } })).status, 200)
      const past = await runCli(['access', 'set', 'site', '--expires', '2020-01-01T00:00:00Z', '--json'], { env })
      assert.equal(past.code, 0, past.stderr)
      assert.equal(past.json.data.expired, true)
      assert.equal((await s.get('/alice/site/', { headers: { authorization: auth } })).status, 410)
      const list = await runCli(['access', 'list'], { env })
      assert.match(list.stdout, /site: password, expired 2020-01-01T00:00:00\.000Z/)
      const bad = await runCli(['access', 'set', 'site', '--expires', 'soon'], { env })
      assert.equal(bad.code, 2)
      const none = await runCli(['access', 'set', 'nope', '--no-password'], { env })
      assert.equal(none.code, 1)
      assert.match(none.stderr, /^error 1346 /m)
      const clear = await runCli(['access', 'clear', 'site'], { env })
      assert.equal(clear.code, 0, clear.stderr)
      assert.equal((await s.get('/alice/site/')).status, 200)
    })

    it('reads expiries as ISO times or durations', () => {
      assert.equal(expiryOf('2h', Date.UTC(2026, 0, 1)), '2026-01-01T02:00:00.000Z')
      assert.equal(expiryOf('2026-12-31T23:00:00Z'), '2026-12-31T23:00:00Z')
      assert.throws(() => expiryOf('2026-12-31'), /ISO 8601/)
    })
  })
}
