import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { FakeClock } from '../../src/util/clock.js'
import { makeTree, runCli } from './run.js'

/**
 * These suites need the folders part (limits, diff, batch upload, publish). A server without
 * it answers 1404 on /api/folders/limits; the tests then say so and skip instead of failing.
 */
async function foldersMissing(s: TestServer): Promise<string | false> {
  const r = await s.get('/api/folders/limits')
  return r.status === 404 && r.json?.error_code === 1404 ? 'needs the folders feature (not merged yet)' : false
}

/** Requests this key has made in the current minute window, read from the server's own counter. */
async function requestsCounted(s: TestServer, key: string): Promise<number> {
  const r = await s.get('/svc_api/me', { key })
  assert.equal(r.header('x-ratelimit-window'), 'minute')
  return Number(r.header('x-ratelimit-limit')) - Number(r.header('x-ratelimit-remaining'))
}

/** The server's listing of a project: path -> modified. */
async function listing(s: TestServer, key: string, project: string): Promise<Map<string, string>> {
  const r = await s.get(`/api/folders/${encodeURIComponent(project)}/files`, { key })
  assert.equal(r.status, 200, r.text)
  return new Map((r.json.files as Array<{ path: string; modified: string }>).map((f) => [f.path, f.modified]))
}

const SITE = {
  'index.html': '<!doctype html><title>t</title><link rel="stylesheet" href="css/site.css"><h1>hello</h1>',
  'css/site.css': 'body { color: #333 }',
  'img/logo.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>',
  'docs/guide/intro.html': '<p>intro</p>',
  // deployed without --dotfiles, as Netlify's CLI deploys it
  '.well-known/security.txt': 'Contact: mailto:security@example.org\n',
  // everything below must stay local
  '.env': 'SECRET=1',
  '.git/HEAD': 'ref: refs/heads/main',
  '.git/objects/ab/cdef': 'blob',
  '.cache/tmp.js': 'x',
  '.gitignore': 'node_modules/\n*.log\n',
  '.svcignore': 'drafts/\n',
  'node_modules/lib/index.js': 'module.exports = 1',
  'debug.log': 'log',
  'drafts/next.html': '<p>draft</p>',
}
const DEPLOYED = ['.well-known/security.txt', 'css/site.css', 'docs/guide/intro.html', 'img/logo.svg', 'index.html']

for (const engine of ENGINES) {
  describe(`svc deploy [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let env: Record<string, string>
    const clock = new FakeClock()
    let dir: string
    let missing: string | false = false
    before(async () => {
      // a still clock keeps every request of the suite in one rate-limit minute, so the
      // server's counter tells how many requests each deploy made
      s = await startServer({ engine, clock, env: { RATE_LIMITS: '{"authenticated":{"minute":500}}' } })
      alice = await s.user()
      env = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'no-config.json') }
      dir = makeTree(SITE)
      missing = await foldersMissing(s)
    })
    after(async () => {
      await s.close()
      fs.rmSync(dir, { recursive: true, force: true })
    })

    it('deploys a folder without its ignored files, publishes it and prints the site URL', async (t) => {
      if (missing) return t.skip(missing)
      const r = await runCli(['deploy', dir, '--batch', '--project', 'site', '--json'], { env })
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.json.uploaded, DEPLOYED)
      assert.deepEqual(r.json.failed, [])
      assert.equal(r.json.published, true)
      assert.match(r.json.website_url, new RegExp(`/${alice.username}/site/?$`))
      const files = await listing(s, alice.key, 'site')
      assert.deepEqual([...files.keys()].sort(), DEPLOYED)
      // the published site serves what was deployed
      const page = await s.get(new URL(r.json.website_url).pathname)
      assert.equal(page.status, 200)
      assert.match(page.text, /<h1>hello<\/h1>/)
      // the human form prints the URL
      const again = await runCli(['deploy', dir, '--batch', '--project', 'site'], { env })
      assert.equal(again.code, 0, again.stderr)
      assert.ok(again.stdout.includes(r.json.website_url))
    })

    it('uploads nothing when nothing changed (the server counts no upload request, no file rewritten)', async (t) => {
      if (missing) return t.skip(missing)
      const before = await listing(s, alice.key, 'site')
      const n0 = await requestsCounted(s, alice.key)
      clock.advance(5_000)
      const r = await runCli(['deploy', dir, '--batch', '--project', 'site', '--json'], { env })
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.json.uploaded, [])
      assert.equal(r.json.unchanged, DEPLOYED.length)
      // limits + diff + publish, and nothing else (+1 for our own /me call)
      assert.equal((await requestsCounted(s, alice.key)) - n0, 3 + 1)
      assert.deepEqual(await listing(s, alice.key, 'site'), before)
    })

    it('uploads exactly the one file that changed', async (t) => {
      if (missing) return t.skip(missing)
      const before = await listing(s, alice.key, 'site')
      fs.writeFileSync(path.join(dir, 'css/site.css'), 'body { color: #111 }')
      const n0 = await requestsCounted(s, alice.key)
      clock.advance(5_000)
      const r = await runCli(['deploy', dir, '--batch', '--project', 'site', '--json'], { env })
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.json.uploaded, ['css/site.css'])
      assert.equal(r.json.upload_requests, 1)
      assert.equal((await requestsCounted(s, alice.key)) - n0, 4 + 1)
      const after = await listing(s, alice.key, 'site')
      for (const p of DEPLOYED) {
        if (p === 'css/site.css') assert.notEqual(after.get(p), before.get(p))
        else assert.equal(after.get(p), before.get(p), p)
      }
      const css = await s.get(`/api/folders/site/file/css/site.css`, { key: alice.key })
      assert.equal(css.json.content, 'body { color: #111 }')
    })

    it('keeps files deleted locally unless --delete, then removes them', async (t) => {
      if (missing) return t.skip(missing)
      fs.rmSync(path.join(dir, 'img'), { recursive: true })
      const keep = await runCli(['deploy', dir, '--batch', '--project', 'site', '--json'], { env })
      assert.equal(keep.code, 0, keep.stderr)
      assert.deepEqual(keep.json.extra, ['img/logo.svg'])
      assert.ok((await listing(s, alice.key, 'site')).has('img/logo.svg'))
      const del = await runCli(['deploy', dir, '--batch', '--project', 'site', '--delete', '--json'], { env })
      assert.equal(del.code, 0, del.stderr)
      assert.deepEqual(del.json.deleted, ['img/logo.svg'])
      assert.ok(!(await listing(s, alice.key, 'site')).has('img/logo.svg'))
    })

    it('splits uploads into batches within the limits and keeps a project unpublished with --no-publish', async (t) => {
      if (missing) return t.skip(missing)
      const many: Record<string, string> = { 'index.html': '<p>many</p>' }
      for (let i = 0; i < 12; i++) many[`p/${String(i).padStart(2, '0')}.txt`] = `file ${i}`
      const d = makeTree(many)
      try {
        const r = await runCli(['deploy', d, '--batch', '--project', 'many', '--batch-files', '5', '--no-publish', '--json'], { env })
        assert.equal(r.code, 0, r.stderr)
        assert.equal(r.json.uploaded.length, 13)
        assert.equal(r.json.upload_requests, 3)
        assert.equal(r.json.published, false)
        assert.equal((await listing(s, alice.key, 'many')).size, 13)
        const page = await s.get(`/${alice.username}/many/`)
        assert.equal(page.status, 404)
        // once it is live, --no-publish cannot hold batch uploads back: refused, nothing sent
        assert.equal((await runCli(['deploy', d, '--batch', '--project', 'many'], { env })).code, 0)
        fs.writeFileSync(path.join(d, 'index.html'), '<p>changed</p>')
        const held = await runCli(['deploy', d, '--batch', '--project', 'many', '--no-publish'], { env })
        assert.equal(held.code, 1)
        assert.match(held.stderr, /many is live: batch uploads to it go live file by file/)
        assert.equal((await s.get(`/${alice.username}/many/`)).text, '<p>many</p>')
      } finally {
        fs.rmSync(d, { recursive: true, force: true })
      }
    })

    it('names the publish refusal (1313) and exits non-zero when the project could not be published', async (t) => {
      if (missing) return t.skip(missing)
      const d = makeTree({ 'about.html': '<p>no index</p>' })
      try {
        const r = await runCli(['deploy', d, '--batch', '--project', 'noindex'], { env })
        assert.equal(r.code, 1)
        // known before any upload: nothing is sent (test/cli/deploy-trees.test.ts)
        assert.match(r.stderr, /^error: .* has no index\.html at its root, .* \(error 1313\); nothing was uploaded/m)
      } finally {
        fs.rmSync(d, { recursive: true, force: true })
      }
    })

    it('reports a file over the server per-file limit, uploads the rest and does not publish', async (t) => {
      if (missing) return t.skip(missing)
      const lim = await s.get('/api/folders/limits', { key: alice.key })
      assert.equal(lim.status, 200, lim.text)
      const max = lim.json.data.max_file_bytes as number
      const d = makeTree({ 'index.html': '<p>x</p>', 'big.bin': Buffer.alloc(max + 1, 1) })
      try {
        const r = await runCli(['deploy', d, '--batch', '--project', 'big', '--json'], { env })
        assert.equal(r.code, 1)
        assert.deepEqual(r.json.uploaded, ['index.html'])
        assert.equal(r.json.failed.length, 1)
        assert.equal(r.json.failed[0].path, 'big.bin')
        assert.match(r.json.failed[0].reason, /too large/)
        assert.equal(r.json.published, false)
      } finally {
        fs.rmSync(d, { recursive: true, force: true })
      }
    })
  })

  describe(`svc deploy under a low rate limit [${engine}]`, () => {
    let s: TestServer
    const clock = new FakeClock()
    let missing: string | false = false
    before(async () => {
      s = await startServer({ engine, clock, env: { RATE_LIMITS: '{"authenticated":{"minute":3}}' } })
      missing = await foldersMissing(s)
      clock.advance(61_000)
    })
    after(() => s.close())

    it('waits out 429 answers (1204) using retry_after and still deploys everything', async (t) => {
      if (missing) return t.skip(missing)
      const bob = await s.user()
      const files: Record<string, string> = { 'index.html': '<p>rl</p>' }
      for (let i = 0; i < 5; i++) files[`f${i}.txt`] = `f${i}`
      const d = makeTree(files)
      const waits: string[] = []
      try {
        const r = await runCli(['deploy', d, '--batch', '--project', 'rl', '--batch-files', '1', '--json'], {
          env: {
            SVC_URL: s.url,
            SVC_API_KEY: bob.key,
            SVC_INSECURE: '1',
            SVC_CONFIG: path.join(s.dataDir, 'none.json'),
            // the server's clock is fake: the CLI waits 1/50 of retry_after, and the test moves the clock on
            SVC_RETRY_WAIT_SCALE: '0.02',
          },
          onStderrLine: (line) => {
            if (/^rate limited/.test(line)) {
              waits.push(line)
              clock.advance(61_000)
            }
          },
        })
        assert.equal(r.code, 0, r.stderr)
        assert.ok(waits.length >= 1)
        assert.match(waits[0], /^rate limited \(error 1204\): waiting \d+ s before retry 1\/10$/)
        assert.equal(r.json.rate_limit_waits, waits.length)
        assert.equal(r.json.uploaded.length, 6)
        assert.equal(r.json.published, true)
        clock.advance(61_000)
        const list = await s.get('/api/folders/rl/files', { key: bob.key })
        assert.equal(list.json.total_files, 6)
      } finally {
        fs.rmSync(d, { recursive: true, force: true })
      }
    })
  })
}
