import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { makeTree, runCli } from './run.js'

/** svc page and svc kv with the odd but legitimate input of real use. */
for (const engine of ENGINES) {
  describe(`svc page and kv edge cases [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let env: Record<string, string>
    before(async () => {
      s = await startServer({ engine })
      alice = await s.user()
      env = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'none.json') }
    })
    after(async () => {
      await s.close()
    })

    it('svc kv set KEY "" stores the empty text, as --file of an empty file does; no VALUE at all is a usage error', async () => {
      const set = await runCli(['kv', 'set', 'note', ''], { env })
      assert.equal(set.code, 0, set.stderr)
      assert.equal(set.stdout, 'stored note (text, private)\n')
      const get = await runCli(['kv', 'get', 'note', '--json'], { env })
      assert.equal(get.json.data.value, '')
      assert.equal(get.json.data.data_type, 'text')
      const none = await runCli(['kv', 'set', 'other'], { env })
      assert.equal(none.code, 2)
      assert.match(none.stderr, /^error: missing VALUE \(or --file F, or - for stdin\)\nusage: svc kv /)
      assert.equal((await runCli(['kv', 'get', 'other'], { env })).code, 1, 'nothing stored')
    })

    it('svc kv get and rm of a key set would refuse say why it cannot exist, with the rule set names', async () => {
      for (const [key, rule] of [
        [
          'bad key',
          /^"bad key" is not a valid key: a key starts with an ASCII letter and has only a-z, A-Z, 0-9, _ and - \(error 1606\); svc kv set refuses it/,
        ],
        ['k'.repeat(101), /is not a valid key: a key has at most 100 characters \(error 1601\); svc kv set refuses it/],
      ] as const) {
        const set = await runCli(['kv', 'set', key, '1', '--json'], { env })
        assert.equal(set.code, 1)
        for (const args of [
          ['kv', 'get', key],
          ['kv', 'rm', key],
        ]) {
          const r = await runCli([...args, '--json'], { env })
          assert.equal(r.code, 1, r.stderr)
          assert.equal(r.json.error.error_code, 1604, 'the server answer, passed through')
          assert.match(r.json.error.solution, rule)
          assert.equal(set.json.error.error_code, key === 'bad key' ? 1606 : 1601)
          const text = await runCli(args, { env })
          assert.match(text.stderr, /^error 1604 \(DATA_ERROR, HTTP 404\): Key does not exist\n {2}".*" is not a valid key: /)
        }
      }
      // a valid key that is missing keeps the server's own advice
      const missing = await runCli(['kv', 'get', 'nothing_here', '--json'], { env })
      assert.doesNotMatch(missing.json.error.solution, /not a valid key/)
    })

    it('svc kv set --file refuses bytes that are not UTF-8 (nothing stored) and drops a byte-order mark', async () => {
      const dir = makeTree({ 'logo.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0xfe]), 'cfg.json': '\ufeff{"theme":"dark"}' })
      const bin = await runCli(['kv', 'set', 'logo', '--file', path.join(dir, 'logo.png'), '--json'], { env })
      assert.equal(bin.code, 1, bin.stderr)
      assert.equal(bin.json.error.message, `${path.join(dir, 'logo.png')} is not UTF-8 text; a key-value entry holds text, a number or JSON`)
      assert.equal((await runCli(['kv', 'get', 'logo'], { env })).code, 1, 'nothing stored')
      const piped = await runCli(['kv', 'set', 'logo', '-'], { env, input: '\ufffd' })
      assert.equal(piped.code, 0, 'U+FFFD itself is text')
      // a JSON file saved with a BOM (Windows editors) is JSON
      const bom = await runCli(['kv', 'set', 'cfg', '--file', path.join(dir, 'cfg.json')], { env })
      assert.equal(bom.stdout, 'stored cfg (json, private)\n', bom.stderr)
      assert.deepEqual((await runCli(['kv', 'get', 'cfg', '--json'], { env })).json.data.value, { theme: 'dark' })
    })

    it('svc page refuses a file name the upload cannot carry (a double quote), instead of the server seeing %22', async () => {
      const dir = makeTree({ 'say "hi".html': '<!doctype html><h1>hi</h1>', 'plain.html': '<!doctype html><h1>plain</h1>' })
      const r = await runCli(['page', path.join(dir, 'say "hi".html'), '--json'], { env })
      assert.equal(r.code, 1, r.stderr)
      assert.equal(r.json.error.message, 'say "hi".html: the name contains a double quote')
      const files = await s.get('/svc_api/files', { key: alice.key })
      assert.equal(files.json.data.total, 0, 'nothing uploaded')
      const ok = await runCli(['page', path.join(dir, 'plain.html')], { env })
      assert.equal(ok.code, 0, ok.stderr)
    })
  })
}
