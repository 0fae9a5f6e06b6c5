import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { HIGH_LIMITS } from '../support/hosting.js'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { makeTree, runCli } from './run.js'

/** 'missing' when the server has no such endpoint (its part is not merged yet). */
async function probe(s: TestServer, key: string, p: string): Promise<string | false> {
  const r = await s.get(p, { key })
  return r.status === 404 && r.json?.error_code === 1404 ? `needs ${p} (its part is not merged yet)` : false
}

for (const engine of ENGINES) {
  describe(`svc page, kv, forms, data [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let env: Record<string, string>
    let dir: string
    const missing: Record<string, string | false> = {}
    before(async () => {
      // the counter's and the forms' visitors are anonymous requests of one address: the spec's
      // 10 a minute would refuse the later ones (the limits have their own tests)
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      alice = await s.user()
      env = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'none.json') }
      dir = makeTree({ 'hello.html': '<!doctype html><h1>hello</h1>', 'notes.txt': 'x', 'data.json': '{"v":1}' })
      missing.page = await probe(s, alice.key, '/svc_api/upload/info')
      missing.kv = await probe(s, alice.key, '/svc_api/data/list')
      missing.forms = await probe(s, alice.key, '/svc_api/forms/list')
      missing.data =
        (await s.get('/api/hosted-data/status', { cookie: await s.login(alice.username, alice.password) })).status === 404
          ? 'needs hosted data (not merged yet)'
          : false
    })
    after(async () => {
      await s.close()
      fs.rmSync(dir, { recursive: true, force: true })
    })
    /** Hosted data granted to alice, then `svc login --username` into a config file of its own: the env that uses it. */
    const loginSession = async (configName: string) => {
      await s.deps.db.k
        .insertInto('entitlements')
        .values({ user_id: alice.id, feature: 'hosted-data', source: 'grant', created_at: Date.now() })
        .onConflict((oc) => oc.doNothing())
        .execute()
      const cfg = path.join(s.dataDir, configName)
      const login = await runCli(['login', '--url', s.url, '--insecure', '--username', alice.username, '--password-stdin'], {
        env: { SVC_CONFIG: cfg },
        input: alice.password,
      })
      assert.equal(login.code, 0, login.stderr)
      return { SVC_CONFIG: cfg }
    }

    it('svc page uploads one HTML file, then updates it at the same URL', async (t) => {
      if (missing.page) return t.skip(missing.page)
      const file = path.join(dir, 'hello.html')
      const a = await runCli(['page', file, '--project', 'demo', '--json'], { env })
      assert.equal(a.code, 0, a.stderr)
      assert.equal(a.json.data.is_update, false)
      assert.match(a.json.data.url, new RegExp(`/${alice.username}/hello\\.html$`))
      // the URL to open is the page on the user's own origin
      assert.equal(a.json.data.site_url, `http://${alice.username}.localhost:${new URL(s.httpUrl).port}/hello.html`)
      const b = await runCli(['page', file], { env })
      assert.equal(b.code, 0, b.stderr)
      assert.match(b.stdout, new RegExp(`^updated hello\\.html .*: ${a.json.data.site_url.replace(/[.]/g, '\\.')}`))
      const txt = await runCli(['page', path.join(dir, 'notes.txt')], { env })
      assert.equal(txt.code, 2)
      assert.match(txt.stderr, /only \.html and \.htm/)
    })

    it('svc kv sets, reads, increments (also by a negative step), lists and removes; a missing key prints 1604', async (t) => {
      if (missing.kv) return t.skip(missing.kv)
      const set = await runCli(['kv', 'set', 'cfg', '{"theme":"dark"}', '--public', '--tags', 'a,b'], { env })
      assert.equal(set.code, 0, set.stderr)
      assert.equal(set.stdout, 'stored cfg (json, public)\n')
      const get = await runCli(['kv', 'get', 'cfg', '--json'], { env })
      assert.deepEqual(get.json.data.value, { theme: 'dark' })
      assert.deepEqual(get.json.data.tags, ['a', 'b'])
      assert.equal((await runCli(['kv', 'set', 'hits', '10'], { env })).code, 0)
      const up = await runCli(['kv', 'incr', 'hits', '5'], { env })
      assert.equal(up.stdout, '15\n', up.stderr)
      const down = await runCli(['kv', 'incr', 'hits', '-1'], { env })
      assert.equal(down.stdout, '14\n', down.stderr)
      // --counter: a public counter, which a visitor adds to without a key
      const likes = await runCli(['kv', 'set', 'likes', '0', '--counter'], { env })
      assert.equal(likes.stdout, 'stored likes (number, private, counter)\n', likes.stderr)
      assert.equal((await runCli(['kv', 'incr', 'hits', '0', '--counter'], { env })).code, 0)
      for (const key of ['likes', 'hits']) {
        const r = await s.post(`/svc_api/data/public/${alice.username}/${key}/incr`)
        assert.equal(r.status, 200, `${key}: ${r.text}`)
      }
      assert.equal((await runCli(['kv', 'get', 'likes'], { env })).stdout, '1\n')
      assert.equal((await runCli(['kv', 'rm', 'likes'], { env })).code, 0)
      assert.equal((await runCli(['kv', 'incr', 'hits', '-1'], { env })).stdout, '14\n')
      const ls = await runCli(['kv', 'ls', '--json'], { env })
      assert.deepEqual(ls.json.data.items.map((i: { key: string }) => i.key).sort(), ['cfg', 'hits'])
      const some = await runCli(['kv', 'ls', '--prefix', 'hi', '--json'], { env })
      assert.deepEqual(
        some.json.data.items.map((i: { key: string }) => i.key),
        ['hits'],
      )
      const table = await runCli(['kv', 'ls'], { env: { ...env, TZ: 'UTC' } })
      assert.match(table.stdout, /^KEY +TYPE +READ +UPDATED +VALUE\n/)
      // UPDATED: the API's +08:00 timestamp in the machine's time zone (UTC here)
      const hits = ls.json.data.items.find((i: { key: string }) => i.key === 'hits')
      const updated = new Date(hits.updated_at).toISOString().slice(0, 19).replace('T', ' ')
      assert.match(table.stdout, new RegExp(`^hits +number +private +${updated} +14$`, 'm'))
      assert.equal((await runCli(['kv', 'rm', 'cfg'], { env })).code, 0)
      const gone = await runCli(['kv', 'get', 'cfg'], { env })
      assert.equal(gone.code, 1)
      assert.match(gone.stderr, /^error 1604 \(DATA_ERROR, HTTP 404\): /m)
      // a retry bound that is not a number is a usage error, not an unbounded wait
      const badWait = await runCli(['kv', 'get', 'hits'], { env: { ...env, SVC_MAX_WAIT: 'abc' } })
      assert.equal(badWait.code, 2, badWait.stderr)
      assert.equal(badWait.stderr, 'error: SVC_MAX_WAIT must be a number of seconds, 0 or more, not "abc"\n')
      assert.equal((await runCli(['kv', 'get', 'hits'], { env: { ...env, SVC_MAX_WAIT: '2.5' } })).stdout, '14\n')
    })

    it('svc kv --no-counter unmarks a public counter (a visitor then gets 404 / 1604); without either flag the mark stays', async (t) => {
      if (missing.kv) return t.skip(missing.kv)
      const u = await s.user()
      const uenv = { ...env, SVC_API_KEY: u.key }
      /** A visitor's anonymous increment, as a page on another origin sends it. */
      const visit = () => s.post(`/svc_api/data/public/${u.username}/likes/incr`, { headers: { origin: 'https://elsewhere.example' } })
      const value = async () => (await runCli(['kv', 'get', 'likes'], { env: uenv })).stdout
      const counts = async (n: number) => {
        const r = await visit()
        assert.equal(r.status, 200, r.text)
        assert.equal(r.json.data.value, n)
      }
      const refused = async () => {
        const r = await visit()
        assert.equal(r.status, 404, r.text)
        assert.equal(r.json.error_code, 1604)
      }

      const made = await runCli(['kv', 'set', 'likes', '0', '--counter'], { env: uenv })
      assert.equal(made.stdout, 'stored likes (number, private, counter)\n', made.stderr)
      await counts(1)
      // set without a flag keeps the mark, as the API does without public_incr
      const kept = await runCli(['kv', 'set', 'likes', '5'], { env: uenv })
      assert.equal(kept.stdout, 'stored likes (number, private, counter)\n', kept.stderr)
      await counts(6)
      const off = await runCli(['kv', 'set', 'likes', '5', '--no-counter'], { env: uenv })
      assert.equal(off.code, 0, off.stderr)
      assert.equal(off.stdout, 'stored likes (number, private)\n')
      await refused()
      assert.equal(await value(), '5\n', 'the refused increment changed nothing')
      assert.equal((await runCli(['kv', 'get', 'likes', '--json'], { env: uenv })).json.data.public_incr, undefined)

      // incr: --counter marks, no flag keeps, --no-counter unmarks (by 0: the value as it was)
      assert.equal((await runCli(['kv', 'incr', 'likes', '--counter'], { env: uenv })).stdout, '6\n')
      await counts(7)
      assert.equal((await runCli(['kv', 'incr', 'likes', '0'], { env: uenv })).stdout, '7\n')
      await counts(8)
      const unmarked = await runCli(['kv', 'incr', 'likes', '0', '--no-counter'], { env: uenv })
      assert.equal(unmarked.stdout, '8\n', unmarked.stderr)
      await refused()
      // a plain set or incr does not mark it again
      assert.equal((await runCli(['kv', 'incr', 'likes'], { env: uenv })).stdout, '9\n')
      await refused()

      // both flags: a usage error, nothing sent
      for (const args of [
        ['set', 'likes', '1', '--counter', '--no-counter'],
        ['incr', 'likes', '--no-counter', '--counter'],
      ]) {
        const r = await runCli(['kv', ...args], { env: uenv })
        assert.equal(r.code, 2, r.stderr)
        assert.match(r.stderr, /^error: --counter and --no-counter exclude each other\nusage: svc kv/)
      }
      assert.equal(await value(), '9\n')
      await refused()
    })

    it('svc kv set --no-public makes an entry private again; without either flag it stays as it was', async (t) => {
      if (missing.kv) return t.skip(missing.kv)
      const u = await s.user()
      const uenv = { ...env, SVC_API_KEY: u.key }
      /** A visitor's read, as a page on another origin sends it. */
      const read = () => s.get(`/svc_api/data/public/${u.username}/motd`, { headers: { origin: 'https://elsewhere.example' } })
      const shown = await runCli(['kv', 'set', 'motd', 'hello', '--public'], { env: uenv })
      assert.equal(shown.stdout, 'stored motd (text, public)\n', shown.stderr)
      assert.equal((await read()).json.data.value, 'hello')
      // a set without a flag keeps it public, as the API does without is_public
      assert.equal((await runCli(['kv', 'set', 'motd', 'hi'], { env: uenv })).stdout, 'stored motd (text, public)\n')
      assert.equal((await read()).json.data.value, 'hi')
      const hidden = await runCli(['kv', 'set', 'motd', 'bye', '--no-public'], { env: uenv })
      assert.equal(hidden.stdout, 'stored motd (text, private)\n', hidden.stderr)
      const r = await read()
      assert.equal(r.status, 404, r.text)
      assert.equal(r.json.error_code, 1604)
      const both = await runCli(['kv', 'set', 'motd', 'x', '--public', '--no-public'], { env: uenv })
      assert.equal(both.code, 2, both.stderr)
      assert.match(both.stderr, /^error: --public and --no-public exclude each other\nusage: svc kv/)
      assert.equal((await runCli(['kv', 'get', 'motd'], { env: uenv })).stdout, 'bye\n', 'the refused command sent nothing')
    })

    it("svc kv ls --public USER lists another user's public entries only, every page, as a page without a key reads them", async (t) => {
      if (missing.kv) return t.skip(missing.kv)
      const owner = await s.user()
      const store = (body: unknown) => s.post('/svc_api/data/store', { key: owner.key, json: body })
      for (const key of ['msg-1', 'msg-2', 'msg-3'])
        assert.equal((await store({ key, value: `text of ${key}`, data_type: 'text', is_public: true })).status, 200)
      assert.equal((await store({ key: 'msg-0', value: 'draft', data_type: 'text' })).status, 200)
      assert.equal((await store({ key: 'other', value: 5, data_type: 'number', is_public: true })).status, 200)
      // alice's key lists owner's entries: public ones only, two a request, in key order
      const all = await runCli(['kv', 'ls', '--public', owner.username, '--per-page', '2', '--json'], { env })
      assert.equal(all.code, 0, all.stderr)
      assert.deepEqual(
        all.json.data.items.map((i: { key: string }) => i.key),
        ['msg-1', 'msg-2', 'msg-3', 'other'],
      )
      assert.deepEqual(Object.keys(all.json.data.items[0]).sort(), ['data_type', 'key', 'owner', 'updated_at', 'value'])
      const some = await runCli(['kv', 'ls', '--public', owner.username, '--prefix', 'msg-', '--per-page', '1'], { env: { ...env, TZ: 'UTC' } })
      assert.equal(some.code, 0, some.stderr)
      assert.match(some.stdout, /^KEY +TYPE +UPDATED +VALUE\n/)
      assert.match(some.stdout, /^msg-3 +text +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +text of msg-3$/m)
      assert.ok(!some.stdout.includes('draft') && !some.stdout.includes('other'), some.stdout)
      assert.match(some.stdout, new RegExp(`^3 public keys of ${owner.username}$`, 'm'))
      // an unknown user is the API's 1604; --page does not go with --public
      const gone = await runCli(['kv', 'ls', '--public', 'no-such-user'], { env })
      assert.equal(gone.code, 1)
      assert.match(gone.stderr, /^error 1604 /m)
      const both = await runCli(['kv', 'ls', '--public', owner.username, '--page', '2'], { env })
      assert.equal(both.code, 2, both.stderr)
      assert.match(both.stderr, /--public and --page exclude each other|--page and --public exclude each other/)
    })

    it('svc kv ls lists every key once when keys are deleted between its pages (the key cursor)', async (t) => {
      if (missing.kv) return t.skip(missing.kv)
      const u = await s.user()
      for (const key of ['a', 'b', 'c', 'd', 'e']) assert.equal((await s.post('/svc_api/data/store', { key: u.key, json: { key, value: 1 } })).status, 200)
      // a relay to the service that deletes `a` just before the second page is read: by
      // offset, that page would start at `d` and `c` would never be listed
      const lists: string[] = []
      const relay = http.createServer((req, res) => {
        void (async () => {
          const url = new URL(req.url ?? '/', 'http://relay')
          if (url.pathname === '/svc_api/data/list') {
            lists.push(url.search)
            if (lists.length === 2) assert.equal((await s.request('DELETE', '/svc_api/data/delete?key=a', { key: u.key })).status, 200)
          }
          const r = await s.get(req.url ?? '/', { key: u.key })
          res.writeHead(r.status, { 'content-type': 'application/json' }).end(r.text)
        })().catch(() => res.writeHead(500).end())
      })
      await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r))
      try {
        const relayEnv = { ...env, SVC_URL: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`, SVC_API_KEY: u.key }
        const ls = await runCli(['kv', 'ls', '--per-page', '2', '--json'], { env: relayEnv })
        assert.equal(ls.code, 0, ls.stderr)
        assert.deepEqual(
          ls.json.data.items.map((i: { key: string }) => i.key),
          ['a', 'b', 'c', 'd', 'e'],
        )
        assert.match(lists[1], /[?&]after=b(&|$)/)
      } finally {
        relay.close()
      }
      // a server without the cursor (the spec has none) ignores after and answers no
      // next_after: the client goes on by page, and lists every key once
      const plain = http.createServer((req, res) => {
        void (async () => {
          const url = new URL(req.url ?? '/', 'http://relay')
          url.searchParams.delete('after')
          const r = await s.get(url.pathname + url.search, { key: u.key })
          res.writeHead(r.status, { 'content-type': 'application/json' }).end(r.text)
        })().catch(() => res.writeHead(500).end())
      })
      await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r))
      try {
        const plainEnv = { ...env, SVC_URL: `http://127.0.0.1:${(plain.address() as AddressInfo).port}`, SVC_API_KEY: u.key }
        const ls = await runCli(['kv', 'ls', '--per-page', '2', '--json'], { env: plainEnv })
        assert.equal(ls.code, 0, ls.stderr)
        assert.deepEqual(
          ls.json.data.items.map((i: { key: string }) => i.key),
          ['b', 'c', 'd', 'e'],
        )
      } finally {
        plain.close()
      }
    })

    it('svc forms export prints a table, JSON or CSV', async (t) => {
      if (missing.forms) return t.skip(missing.forms)
      const created = await s.post('/svc_api/forms/create', {
        key: alice.key,
        json: { form_name: 'Contact', fields_config: [{ name: 'email', type: 'email', required: true }, { name: 'msg' }] },
      })
      assert.equal(created.status, 200, created.text)
      const form = created.json.data
      for (const sub of [
        { email: 'a@example.com', msg: 'hi, there' },
        { email: 'b@example.com', msg: '=1+1' },
      ]) {
        const r = await s.post(`/api/forms/submit/${form.form_slug}`, { json: sub })
        assert.equal(r.status, 200, r.text)
      }
      const json = await runCli(['forms', 'export', form.id, '--json'], { env })
      assert.equal(json.code, 0, json.stderr)
      assert.equal(json.json.data.submissions.length, 2)
      const csv = await runCli(['forms', 'export', form.id, '--csv'], { env })
      assert.equal(csv.code, 0, csv.stderr)
      assert.match(csv.stdout, /email/)
      assert.match(csv.stdout, /"hi, there"/)
      const out = path.join(dir, 'subs.csv')
      assert.equal((await runCli(['forms', 'export', form.id, '--csv', '-o', out], { env })).code, 0)
      assert.equal(fs.readFileSync(out, 'utf8'), csv.stdout)
      const human = await runCli(['forms', 'export', form.id], { env })
      assert.match(human.stdout, /^form Contact .*: 2 submissions\n/)
      // a local failure that is no ApiError or CliError: one line, exit 1, still JSON with --json
      const unwritable = await runCli(['forms', 'export', form.id, '--json', '-o', path.join(dir, 'no-such-dir', 'subs.json')], { env })
      assert.equal(unwritable.code, 1)
      assert.match(unwritable.stderr, /^error: ENOENT: no such file or directory, open '.*no-such-dir/m)
      assert.equal(unwritable.json.success, false)
      assert.match(unwritable.json.error.message, /^ENOENT: /)
      const none = await runCli(['forms', 'export', 'no-such-form'], { env })
      assert.equal(none.code, 1)
      assert.match(none.stderr, /^error 1611 /m)
    })

    it('svc forms delete-submission deletes one submission, by the id svc forms export shows', async (t) => {
      if (missing.forms) return t.skip(missing.forms)
      const form = (await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Prune' } })).json.data
      for (const msg of ['keep', 'drop']) assert.equal((await s.post(`/api/forms/submit/${form.form_slug}`, { json: { msg } })).status, 200)
      const exported = await runCli(['forms', 'export', form.id, '--json'], { env })
      const drop = exported.json.data.submissions.find((x: { data: { msg: string } }) => x.data.msg === 'drop').id
      const r = await runCli(['forms', 'delete-submission', drop], { env })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stdout, `submission ${drop} deleted, with its files (form ${form.id})\n`)
      assert.deepEqual(
        (await s.get(`/svc_api/forms/data/${form.id}`, { key: alice.key })).json.data.submissions.map((x: { data: { msg: string } }) => x.data.msg),
        ['keep'],
      )
      const again = await runCli(['forms', 'delete-submission', drop, '--json'], { env })
      assert.equal(again.code, 1)
      assert.match(again.stderr, /^error 1405 /m)
      assert.equal(again.json.success, false)
    })

    it("svc forms export's table shows a visitor's control characters as text, never sends them to the terminal", async (t) => {
      if (missing.forms) return t.skip(missing.forms)
      const created = await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Escapes' } })
      assert.equal(created.status, 200, created.text)
      const form = created.json.data
      // a title change (OSC 0 ... BEL), a clear screen (ESC [ 2 J) and CSI as one C1 character
      const msg = 'hi\u001b]0;pwned\u0007\u001b[2J\u009b31mred'
      const sub = await s.post(`/api/forms/submit/${form.form_slug}`, { json: { msg } })
      assert.equal(sub.status, 200, sub.text)
      const human = await runCli(['forms', 'export', form.id], { env })
      assert.equal(human.code, 0, human.stderr)
      assert.doesNotMatch(human.stdout.replace(/\n/g, ''), /[\u0000-\u001f\u007f-\u009f]/)
      assert.match(human.stdout, /hi\\x1b\]0;pwned\\x07\\x1b\[2J\\x9b31mred/)
      // the JSON keeps the value as it was sent
      const json = await runCli(['forms', 'export', form.id, '--json'], { env })
      assert.equal(json.json.data.submissions[0].data.msg, msg)
    })

    it('svc forms export shows fields named like Object.prototype members only where they were sent', async (t) => {
      if (missing.forms) return t.skip(missing.forms)
      const created = await s.post('/svc_api/forms/create', { key: alice.key, json: { form_name: 'Proto' } })
      assert.equal(created.status, 200, created.text)
      const form = created.json.data
      const subs: Array<Record<string, string>> = [{ msg: 'plain' }, { constructor: 'c1', toString: 't1', hasOwnProperty: 'h1', valueOf: 'v1', msg: 'named' }]
      for (const sub of subs) {
        const r = await s.post(`/api/forms/submit/${form.form_slug}`, { json: sub })
        assert.equal(r.status, 200, r.text)
      }
      // a submit refuses "__proto__", but a row may hold it (an imported archive's data is kept
      // as it is): as such a row, the second submission gets one
      const stored = await s.deps.db.k.selectFrom('form_submissions').select(['id', 'data']).where('form_id', '=', form.id).execute()
      const second = stored.find((r) => r.data.includes('"named"'))
      assert.ok(second)
      await s.deps.db.k
        .updateTable('form_submissions')
        .set({ data: `{"__proto__":"p1",${second.data.slice(1)}` })
        .where('id', '=', second.id)
        .execute()
      const protoNames = ['__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf']
      const human = await runCli(['forms', 'export', form.id], { env })
      assert.equal(human.code, 0, human.stderr)
      const lines = human.stdout.trimEnd().split('\n')
      assert.match(lines[0], /^form Proto .*: 2 submissions$/)
      const head = lines[1].split(/\s{2,}/)
      assert.deepEqual(head.slice(3).sort(), [...protoNames, 'msg'].sort())
      // each row's cells under the header's columns, by position
      const cellsOf = (line: string) => {
        const starts = head.map((h) => lines[1].indexOf(h))
        return Object.fromEntries(head.map((h, i) => [h, line.slice(starts[i], starts[i + 1] ?? undefined).trim()]))
      }
      const rows = lines.slice(2).map(cellsOf)
      const named = rows.find((r) => r.msg === 'named')
      const plain = rows.find((r) => r.msg === 'plain')
      const cellsAt = (r: Record<string, string> | undefined) => protoNames.map((k) => (r && Object.hasOwn(r, k) ? r[k] : 'absent'))
      assert.deepEqual(cellsAt(named), ['p1', 'c1', 'h1', 't1', 'v1'], human.stdout)
      assert.deepEqual(cellsAt(plain), ['', '', '', '', ''], human.stdout)
      // the CSV (the server's): the same cells
      const csv = await runCli(['forms', 'export', form.id, '--csv'], { env })
      assert.equal(csv.code, 0, csv.stderr)
      const [header, ...body] = csv.stdout
        .replace(/^\uFEFF/, '')
        .trimEnd()
        .split('\r\n')
      const cols = header.split(',')
      const byName = body.map((line) => Object.fromEntries(line.split(',').map((c, i) => [cols[i], c])))
      assert.deepEqual(cellsAt(byName.find((r) => r.msg === 'named')), ['p1', 'c1', 'h1', 't1', 'v1'], csv.stdout)
      assert.deepEqual(cellsAt(byName.find((r) => r.msg === 'plain')), ['', '', '', '', ''], csv.stdout)
    })

    it('svc data push needs a login session, then creates a file and pushes versions', async (t) => {
      if (missing.data) return t.skip(missing.data)
      const file = path.join(dir, 'data.json')
      const keyOnly = await runCli(['data', 'push', file], { env })
      assert.equal(keyOnly.code, 2)
      assert.match(keyOnly.stderr, /needs a login session.*svc login --username/)

      const senv = await loginSession('session.json')
      const first = await runCli(['data', 'push', file, '--json'], { env: senv })
      assert.equal(first.code, 0, first.stderr)
      const id = first.json.file.id
      const pub = await s.get(new URL(first.json.file.public_url).pathname)
      assert.equal(pub.text, '{"v":1}')
      fs.writeFileSync(file, '{"v":2}')
      const second = await runCli(['data', 'push', file], { env: senv })
      assert.equal(second.code, 0, second.stderr)
      assert.match(second.stdout, /default version is unchanged/)
      assert.equal((await s.get(new URL(first.json.file.public_url).pathname)).text, '{"v":1}')
      const third = await runCli(['data', 'push', file, '--default', '--json'], { env: senv })
      assert.equal(third.code, 0, third.stderr)
      assert.equal(third.json.file.id, id)
      assert.equal((await s.get(new URL(first.json.file.public_url).pathname)).text, '{"v":2}')
    })

    it('svc data push finds the file again under a decomposed (macOS) name, keeps a BOM, names the version it pushed', async (t) => {
      if (missing.data) return t.skip(missing.data)
      const senv = await loginSession('session-nfd.json')
      // "Städte.csv" as macOS names it (NFD: a + U+0308); the server stores display names in NFC
      const file = path.join(dir, 'Sta\u0308dte.csv')
      const v1 = Buffer.from('\uFEFFname\nKöln\n', 'utf8')
      fs.writeFileSync(file, v1)
      const first = await runCli(['data', 'push', file, '--json'], { env: senv })
      assert.equal(first.code, 0, first.stderr)
      assert.equal(first.json.file.display_name, 'Städte.csv')
      const link = new URL(first.json.file.public_url).pathname
      assert.deepEqual((await s.get(link)).body, v1, 'the byte-order mark is kept')
      fs.writeFileSync(file, 'name\nLiège\n')
      const second = await runCli(['data', 'push', file, '--default', '--json'], { env: senv })
      assert.equal(second.code, 0, second.stderr)
      assert.equal(second.json.file.id, first.json.file.id, 'a new version of the same file, not a second file')
      assert.equal((await s.get(link)).text, 'name\nLiège\n')
      // after a version is deleted, the message names the version pushed, not the count
      const cookie = await s.login(alice.username, alice.password)
      const id = first.json.file.id as string
      assert.equal((await s.post(`/api/hosted-data/files/${id}/versions`, { cookie, json: { content: 'x' } })).status, 200)
      assert.equal((await s.request('DELETE', `/api/hosted-data/files/${id}/versions/1`, { cookie })).status, 200)
      const third = await runCli(['data', 'push', file], { env: senv })
      assert.equal(third.code, 0, third.stderr)
      assert.match(third.stdout, /^pushed version 4 of Städte\.csv /)
    })

    it('svc data push run by concurrent jobs: each names the version it pushed', async (t) => {
      if (missing.data) return t.skip(missing.data)
      const senv = await loginSession('session-jobs.json')
      const first = path.join(dir, 'jobs.json')
      fs.writeFileSync(first, '{"job":0}')
      const created = await runCli(['data', 'push', first, '--json'], { env: senv })
      assert.equal(created.code, 0, created.stderr)
      const link = created.json.file.public_url as string
      const jobs = [1, 2, 3, 4, 5]
      const runs = await Promise.all(
        jobs.map((j) => {
          const f = path.join(dir, `job${j}.json`)
          fs.writeFileSync(f, `{"job":${j}}`)
          return runCli(['data', 'push', f, '--name', 'jobs.json'], { env: senv })
        }),
      )
      const seen = new Set<string>()
      for (const [k, r] of runs.entries()) {
        assert.equal(r.code, 0, r.stderr)
        const n = /^pushed version (\d+) of jobs\.json /.exec(r.stdout)?.[1]
        assert.ok(n, r.stdout)
        seen.add(n)
        assert.equal((await s.get(`${new URL(link).pathname}?v=${n}`)).text, `{"job":${jobs[k]}}`, `job ${jobs[k]} said version ${n}`)
      }
      assert.equal(seen.size, jobs.length)
    })
  })
}
