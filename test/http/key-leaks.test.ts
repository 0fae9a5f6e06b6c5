import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { HTML, HIGH_LIMITS, batchUpload, uploadFile } from '../support/hosting.js'
import { expectError } from '../support/errors.js'
import { deploySite } from '../support/deploys.js'
import { mcpHttpClient, textOf } from '../support/mcp.js'
import { svc } from '../support/images.js'
import { ContentWatcher } from '../../src/features/sites/sniff.js'

// A page, script or data file that carries a live API key able to write is refused on every
// way onto a site (decision 223): anyone who opens the page could use the key. Read-only,
// disabled and expired keys pass; so does text that only looks like a key.

/** A page's script that calls the API with `key`, as a hand-made page does. */
const pageWith = (key: string) =>
  HTML('counter', `<script>const KEY = "${key}"; fetch('/svc_api/data/incr', { headers: { Authorization: 'Bearer ' + KEY } })</script>`)

for (const engine of ENGINES) {
  describe(`a live write key in a site's files [${engine}]`, () => {
    let s: TestServer
    let u: Awaited<ReturnType<TestServer['user']>>
    let readOnly = ''
    let disabled = ''
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: HIGH_LIMITS } })
      u = await s.user()
      readOnly = (await s.deps.apiKeys.create(u.id, { name: 'page', readOnly: true })).key
      const off = await s.deps.apiKeys.create(u.id, { name: 'old' })
      await s.deps.apiKeys.setEnabled(u.id, off.info.id, false)
      disabled = off.key
    })
    after(() => s.close())

    const fileCount = async () => Number((await s.get('/svc_api/upload/info', { key: u.key })).json.data.current_file_count)

    it('a single file: 400 / 1444 naming the file and the key, nothing stored', async () => {
      const before = await fileCount()
      const r = await uploadFile(s, { key: u.key }, 'counter.html', pageWith(u.key), {}, { 'accept-language': 'en' })
      expectError(r, 400, 'VALIDATION_FAILED')
      assert.match(r.json.message, /counter\.html holds a live API key that can write \("test", svc_…[A-Za-z0-9]{4}\)/)
      assert.equal(await fileCount(), before)
      assert.equal((await s.get(`/${u.username}/counter.html`)).status, 404)
    })

    it('a read-only, a disabled or a made-up key passes', async () => {
      const madeUp = `svc_${'x'.repeat(60)}`
      for (const [name, key] of [
        ['ro.html', readOnly],
        ['off.html', disabled],
        ['fake.html', madeUp],
      ]) {
        const r = await uploadFile(s, { key: u.key }, name, pageWith(key))
        assert.equal(r.status, 200, r.text)
        assert.ok((await s.get(`/${u.username}/${name}`)).text.includes(key))
      }
    })

    it("another user's key is refused too, named by its last characters only", async () => {
      const other = await s.user()
      const r = await uploadFile(s, { key: u.key }, 'theirs.html', pageWith(other.key), {}, { 'accept-language': 'en' })
      expectError(r, 400, 'VALIDATION_FAILED')
      assert.match(r.json.message, /holds a live API key that can write \(svc_…[A-Za-z0-9]{4}\)/)
      assert.ok(!r.json.message.includes('"test"'), 'their key name is not shown')
    })

    it('a folder batch: the file with the key fails (1444), the others are stored; alone it is 400 / 1444', async () => {
      const r = await batchUpload(s, { key: u.key }, 'batch', [
        { filename: 'index.html', data: HTML('home') },
        { filename: 'assets/app.js', data: `export const key = '${u.key}'\n` },
      ])
      assert.equal(r.status, 200, r.text)
      assert.equal(r.json.uploaded_count, 1)
      assert.deepEqual(r.json.failed_files, ['assets/app.js'])
      assert.equal(r.json.errors[0].type, 'key_in_content')
      assert.equal(r.json.errors[0].error_code, 1444)
      const alone = await batchUpload(s, { key: u.key }, 'batch', [{ filename: 'config.json', data: JSON.stringify({ apiKey: u.key }) }], true)
      expectError(alone, 400, 1444)
      assert.equal(alone.json.failed_count, 1)
      const files = (await s.get('/api/folders/batch/files', { key: u.key })).json.files.map((f: { path: string }) => f.path)
      assert.deepEqual(files.sort(), ['index.html'])
    })

    it("deploy_files over MCP: the whole call is refused with the key's own 1444 and its advice, nothing stored", async () => {
      const client = await mcpHttpClient(s.url, u.key)
      try {
        const r = (await client.callTool({
          name: 'deploy_files',
          arguments: {
            project: 'agent-site',
            files: [
              { path: 'index.html', content: HTML('home') },
              { path: 'assets/app.js', content: `export const key = '${u.key}'\n` },
            ],
          },
        })) as { isError?: boolean; content: Array<{ type: string; text: string }>; structuredContent: { error_code: number } }
        assert.equal(r.isError, true)
        assert.equal(r.structuredContent.error_code, 1444)
        assert.match(textOf(r), /assets\/app\.js holds a live API key that can write/)
        assert.match(textOf(r), /Remove the key from the file/)
      } finally {
        await client.close()
      }
      const projects = (await s.get('/api/folders', { key: u.key })).json.folders.map((f: { name: string }) => f.name)
      assert.ok(!projects.includes('agent-site'), 'no project made')
    })

    it('an archive deploy (a built site whose bundle inlined the key): 400 / 1444, nothing published', async () => {
      const site = { 'index.html': HTML('app', '<script type="module" src="/assets/index-3f2a.js"></script>'), 'assets/index-3f2a.js': `const e="${u.key}";` }
      const { res } = await deploySite(s, u.key, 'built', site)
      expectError(res, 400, 1444)
      assert.match(res.json.message, /assets\/index-3f2a\.js holds a live API key/)
      const projects = async () => (await s.get('/api/folders', { key: u.key })).json.folders.map((f: { name: string }) => f.name)
      assert.ok(!(await projects()).includes('built'), 'no project made')
      // with the key taken out, the same deploy goes through
      const fixed = await deploySite(s, u.key, 'built', { ...site, 'assets/index-3f2a.js': 'const e=null;' })
      assert.equal(fixed.res.status, 201, fixed.res.text)
      assert.ok((await projects()).includes('built'))
    })

    it('a hosted data file or version (public at its link): 400 naming the file, nothing stored', async () => {
      await svc(s, 'grant', u.username, 'hosted-data')
      const cookie = await s.login(u.username, u.password)
      const post = (p: string, body: unknown) => s.post(p, { cookie, json: body, headers: { 'accept-language': 'en' } })
      const list = async () => (await s.get('/api/hosted-data/files', { cookie })).json.total as number
      const before = await list()
      // a page's settings read from the data link, with the key written in
      const r = await post('/api/hosted-data/files', { display_name: 'config.json', content: { apiKey: u.key, theme: 'dark' } })
      assert.equal(r.status, 400, r.text)
      assert.deepEqual(Object.keys(r.json).sort(), ['message', 'success'])
      assert.match(r.json.message, /config\.json holds a live API key that can write \("test", svc_…[A-Za-z0-9]{4}\)/)
      assert.equal(await list(), before)
      // a read-only key passes; a new version carrying a write key is refused, the file unchanged
      const ok = await post('/api/hosted-data/files', { display_name: 'settings.json', content: { apiKey: readOnly } })
      assert.equal(ok.status, 200, ok.text)
      const v = await post(`/api/hosted-data/files/${ok.json.file.id}/versions`, { content: { apiKey: u.key }, set_default: true })
      assert.equal(v.status, 400, v.text)
      assert.match(v.json.message, /settings\.json holds a live API key that can write/)
      // hosted data is a file anyone can read, not a page anyone opens
      assert.match(v.json.message, /anyone who can read the file could use it/)
      const link = new URL(ok.json.file.public_url)
      assert.equal((await s.get(link.pathname)).json.apiKey, readOnly)
      assert.equal((await s.get(`/api/hosted-data/files/${ok.json.file.id}`, { cookie })).json.file.version_count, 1)
    })
  })
}

describe('ContentWatcher: key-shaped tokens', () => {
  const key = `svc_${'A1b2C3'.repeat(10)}`
  it('finds a key cut by a chunk edge at any place, once', async () => {
    const text = Buffer.from(`let a = 1;\nconst k = "${key}";\n`)
    for (let cut = 1; cut < text.length; cut++) {
      const w = new ContentWatcher(0)
      for await (const _ of Readable.from([text.subarray(0, cut), text.subarray(cut)]).pipe(w));
      assert.deepEqual([...w.keyTokens], [key], `cut at ${cut}`)
    }
  })
  it('finds a key spread over three chunks, the middle one short', async () => {
    const text = Buffer.from(`x = "${key}"`)
    for (let cut = 1; cut + 5 < text.length; cut++) {
      const w = new ContentWatcher(0)
      for await (const _ of Readable.from([text.subarray(0, cut), text.subarray(cut, cut + 5), text.subarray(cut + 5)]).pipe(w));
      assert.deepEqual([...w.keyTokens], [key], `cut at ${cut}`)
    }
  })
  it('keeps at most 16 tokens of a file', async () => {
    const w = new ContentWatcher(0)
    const many = Array.from({ length: 40 }, (_, i) => `svc_${String(i).padStart(60, 'z')}`).join(' ')
    for await (const _ of Readable.from([Buffer.from(many)]).pipe(w));
    assert.equal(w.keyTokens.size, 16)
  })
})
