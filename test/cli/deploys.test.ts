import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ChildProcess } from 'node:child_process'
import { gzipSync } from 'node:zlib'
import https from 'node:https'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { FakeClock } from '../../src/util/clock.js'
import { makeTree, runCli } from './run.js'
import { batchUpload } from '../support/hosting.js'

/** Requests this key has made in the current minute window, read from the server's own counter. */
async function requestsCounted(s: TestServer, key: string): Promise<number> {
  const r = await s.get('/svc_api/me', { key })
  return Number(r.header('x-ratelimit-limit')) - Number(r.header('x-ratelimit-remaining'))
}

const page = (v: string) => `<!doctype html><title>${v}</title><link rel="stylesheet" href="css/site.css"><h1>${v}</h1>`

for (const engine of ENGINES) {
  describe(`svc deploy (archive), deploys, rollback, promote [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let env: Record<string, string>
    const clock = new FakeClock()
    let dir: string
    before(async () => {
      // a still clock keeps the suite in one rate-limit minute: the counter tells each command's requests
      s = await startServer({ engine, clock, env: { RATE_LIMITS: '{"authenticated":{"minute":1000}}' } })
      alice = await s.user()
      env = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'no-config.json') }
      const files: Record<string, string> = { 'index.html': page('one'), 'css/site.css': 'body { color: #333 }', '.env': 'SECRET=1' }
      for (let i = 0; i < 300; i++) files[`pages/d${i % 10}/p${i}.html`] = `<p>page ${i}</p>`
      dir = makeTree(files)
    })
    after(async () => {
      await s.close()
      fs.rmSync(dir, { recursive: true, force: true })
    })
    const live = async (p = '') => (await s.get(`/${alice.username}/site/${p}`)).text

    it('--dry-run lists what would go and changes nothing; a deploy costs two requests and prints plain progress', async () => {
      const dry = await runCli(['deploy', dir, '--project', 'site', '--dry-run', '--json'], { env })
      assert.equal(dry.code, 0, dry.stderr)
      assert.equal(dry.json.uploaded.length, 302)
      assert.ok(!dry.json.uploaded.includes('.env'))
      assert.equal((await s.get('/api/folders/site/deploys', { key: alice.key })).status, 403, 'no project yet')

      const before = await requestsCounted(s, alice.key)
      const r = await runCli(['deploy', dir, '--project', 'site', '-m', 'first'], { env })
      assert.equal(r.code, 0, r.stderr)
      assert.equal((await requestsCounted(s, alice.key)) - before, 3, 'the check, the archive, and this count')
      assert.match(r.stdout, /uploaded 302 files/)
      assert.match(r.stdout, /deploy [0-9a-z]{12} is live: /)
      // not a terminal: no carriage returns, plain lines
      assert.ok(!r.stderr.includes('\r'))
      assert.equal(await live(), page('one'))
      assert.equal(await live('pages/d3/p13.html'), '<p>page 13</p>')
    })

    it('a one-file change sends one file; --json describes the deploy', async () => {
      fs.writeFileSync(path.join(dir, 'index.html'), page('two'))
      const r = await runCli(['deploy', dir, '--project', 'site', '--json'], { env })
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.json.uploaded, ['index.html'])
      assert.equal(r.json.unchanged, 301)
      assert.equal(r.json.requests, 2)
      assert.match(r.json.deploy_id, /^[0-9a-z]{12}$/)
      assert.equal(await live(), page('two'))
    })

    it('new files with the same bytes are sent once, and the summary counts every file', async () => {
      const copies = ['copy-a.html', 'copy-b.html', 'copy-c.html']
      for (const c of copies) fs.writeFileSync(path.join(dir, c), page('copied'))
      try {
        const r = await runCli(['deploy', dir, '--project', 'site', '--dry-run', '--json'], { env })
        assert.equal(r.code, 0, r.stderr)
        assert.equal(r.json.uploaded.length, 1)
        assert.equal(r.json.copies, 2)
        assert.equal(r.json.uploaded.length + r.json.copies + r.json.unchanged, r.json.files)
        const text = await runCli(['deploy', dir, '--project', 'site', '--dry-run'], { env })
        assert.match(text.stdout, /would upload 1 file \(.*\), 2 more with the same bytes as one of those, 302 unchanged/)
        // a file the CLI refuses: nothing is sent, and the summary does not say "uploaded"
        fs.writeFileSync(path.join(dir, 'bad\\name.txt'), 'x')
        try {
          const refused = await runCli(['deploy', dir, '--project', 'site'], { env })
          assert.equal(refused.code, 1)
          assert.match(refused.stdout, /would upload 1 file/)
          assert.doesNotMatch(refused.stdout, /^uploaded/m)
          assert.match(refused.stdout, /1 file failed; nothing deployed/)
        } finally {
          fs.rmSync(path.join(dir, 'bad\\name.txt'))
        }
      } finally {
        for (const c of copies) fs.rmSync(path.join(dir, c))
      }
    })

    it('svc deploys lists them; svc rollback goes back, to the previous one or an ID', async () => {
      const list = await runCli(['deploys', '--project', 'site', '--json'], { env })
      assert.equal(list.code, 0, list.stderr)
      assert.equal(list.json.deploys.length, 2)
      const [second, first] = list.json.deploys
      assert.equal(second.is_live, true)
      assert.equal(first.message, 'first')
      assert.equal(first.source, 'cli')
      const human = await runCli(['deploys', 'list', '--project', 'site'], { env: { ...env, TZ: 'UTC' } })
      assert.match(human.stdout, new RegExp(`live\\s+${second.id}`))
      // the API's +08:00 timestamp, shown in the machine's own time zone
      const utc = new Date(second.created_at).toISOString().slice(0, 19).replace('T', ' ')
      assert.match(human.stdout, new RegExp(`${second.id}\\s+${utc}\\s`), `${second.created_at} as UTC`)
      // the project as the argument, with or without "list"; two different names are refused
      for (const args of [
        ['deploys', 'site'],
        ['deploys', 'list', 'site'],
        ['deploys', 'site', '--project', 'site'],
      ]) {
        const named = await runCli([...args, '--json'], { env })
        assert.equal(named.code, 0, named.stderr)
        assert.deepEqual(named.json.deploys, list.json.deploys, args.join(' '))
      }
      const two = await runCli(['deploys', 'site', '--project', 'other'], { env })
      assert.equal(two.code, 2)
      assert.match(two.stderr, /two projects named: "site" and --project "other"/)
      const back = await runCli(['rollback', '--project', 'site'], { env })
      assert.equal(back.code, 0, back.stderr)
      assert.match(back.stdout, new RegExp(`deploy ${first.id} is live`))
      assert.equal(await live(), page('one'))
      const to = await runCli(['rollback', second.id, '--project', 'site', '--json'], { env })
      assert.equal(to.json.live_deploy_id, second.id)
      assert.equal(await live(), page('two'))
      const bad = await runCli(['rollback', 'nosuchdeploy', '--project', 'site'], { env })
      assert.equal(bad.code, 1)
      assert.match(bad.stderr, /1331/)
      // the project's name where the deploy's id goes, from a folder of another name
      const elsewhere = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-rb-')), 'elsewhere')
      fs.mkdirSync(elsewhere)
      try {
        const named = await runCli(['rollback', 'site'], { env, cwd: elsewhere })
        assert.equal(named.code, 1, named.stderr)
        assert.match(named.stderr, /1312/)
        assert.match(named.stderr, /"elsewhere".*svc rollback --project site/s)
        assert.equal(await live(), page('two'), 'nothing rolled back')
      } finally {
        fs.rmSync(path.dirname(elsewhere), { recursive: true, force: true })
      }
    })

    it('svc deploys download saves a kept deploy as its archive, never over a file without --force', async () => {
      const [, first] = (await s.get('/api/folders/site/deploys', { key: alice.key })).json.deploys
      const api = await s.get(`/api/folders/site/deploys/${first.id}/archive`, { key: alice.key })
      assert.equal(api.status, 200)
      const out = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-dl-'))
      try {
        const file = path.join(out, 'site.tar.gz')
        const r = await runCli(['deploys', 'download', first.id, '--project', 'site', '-o', file, '--json'], { env })
        assert.equal(r.code, 0, r.stderr)
        assert.deepEqual(r.json, { success: true, project: 'site', deploy_id: first.id, file, bytes: api.body.length })
        assert.deepEqual(fs.readFileSync(file), api.body, 'the bytes the API answers')
        // an existing file is kept, with or without a change to it; --force replaces it
        fs.writeFileSync(file, 'mine')
        const kept = await runCli(['deploys', 'download', first.id, '--project', 'site', '-o', file], { env })
        assert.equal(kept.code, 1)
        assert.match(kept.stderr, /site\.tar\.gz exists; --force replaces it/)
        assert.equal(fs.readFileSync(file, 'utf8'), 'mine')
        const forced = await runCli(['deploys', 'download', first.id, '--project', 'site', '-o', file, '--force'], { env })
        assert.equal(forced.code, 0, forced.stderr)
        assert.match(forced.stdout, new RegExp(`site: deploy ${first.id} saved to .*site\\.tar\\.gz`))
        assert.deepEqual(fs.readFileSync(file), api.body)
        // into a folder: PROJECT-ID.tar.gz there (and, without -o, in the current folder)
        const named = await runCli(['deploys', 'download', first.id, '--project', 'site', '-o', out], { env })
        assert.equal(named.code, 0, named.stderr)
        const here = await runCli(['deploys', 'download', first.id, '--project', 'site'], { env, cwd: path.join(out) })
        assert.equal(here.code, 1, 'the file of the run before is there')
        assert.match(here.stderr, /exists/)
        assert.deepEqual(fs.readFileSync(path.join(out, `site-${first.id}.tar.gz`)), api.body)
        // a deploy the project does not keep: the server's refusal, and no file at all
        const none = await runCli(['deploys', 'download', 'nosuchdeploy', '--project', 'site', '-o', path.join(out, 'x.tar.gz')], { env })
        assert.equal(none.code, 1)
        assert.match(none.stderr, /1331/)
        assert.deepEqual(fs.readdirSync(out).sort(), [`site-${first.id}.tar.gz`, 'site.tar.gz'], 'no other file, partial or whole')
        // the options of download are download's
        const wrong = await runCli(['deploys', 'list', 'site', '--force'], { env })
        assert.equal(wrong.code, 2)
        const empty = await runCli(['deploys', 'download', first.id, '--project', 'site', '-o', ''], { env })
        assert.equal(empty.code, 2)
        assert.match(empty.stderr, /-o takes a file or folder name/)
      } finally {
        fs.rmSync(out, { recursive: true, force: true })
      }
    })

    it('svc deploy --preview leaves the live site; svc promote makes it live', async () => {
      fs.writeFileSync(path.join(dir, 'index.html'), page('three'))
      const r = await runCli(['deploy', dir, '--project', 'site', '--preview', '--json'], { env })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.json.preview, true)
      assert.equal(await live(), page('two'))
      const pv = await s.get(`/${alice.username}/site@${r.json.deploy_id}/`)
      assert.equal(pv.text, page('three'))
      assert.equal(pv.header('x-robots-tag'), 'noindex')
      const human = await runCli(['deploy', dir, '--project', 'site', '--preview'], { env })
      assert.match(human.stdout, /svc promote [0-9a-z]{12} --project site/)
      // batch uploads cannot make a preview: refused before anything is sent, the live site kept
      const batch = await runCli(['deploy', dir, '--project', 'site', '--preview', '--batch'], { env })
      assert.equal(batch.code, 1)
      assert.match(batch.stderr, /--preview needs the archive deploy/)
      assert.equal(await live(), page('two'))
      // nor record a message: refused rather than dropped, nothing sent
      const before = (await s.get('/api/folders/site/deploys', { key: alice.key })).json.deploys.length
      for (const flags of [
        ['--batch', '-m', 'batched'],
        ['--delete', '--message', 'batched'],
      ]) {
        const msg = await runCli(['deploy', dir, '--project', 'site', ...flags], { env })
        assert.equal(msg.code, 1, flags.join(' '))
        assert.match(msg.stderr, /-m\/--message needs the archive deploy: leave out --batch/)
      }
      assert.equal((await s.get('/api/folders/site/deploys', { key: alice.key })).json.deploys.length, before)
      assert.equal(await live(), page('two'))
      // a project name the server would read as a path is refused here, with the reason
      for (const bad of ['a/b', 'bad name/..']) {
        const r2 = await runCli(['deploy', dir, '--project', bad], { env })
        assert.equal(r2.code, 1, bad)
        assert.match(r2.stderr, /invalid project name .*(a name cannot contain "\/"|dot segment)/)
        assert.doesNotMatch(r2.stderr, /no archive deploys/)
      }
      const p = await runCli(['promote', r.json.deploy_id, '--project', 'site'], { env })
      assert.equal(p.code, 0, p.stderr)
      assert.equal(await live(), page('three'))
      // once replaced, the list calls it promoted (a plain rollback goes back to it), the other preview stays one
      fs.writeFileSync(path.join(dir, 'index.html'), page('four'))
      assert.equal((await runCli(['deploy', dir, '--project', 'site'], { env })).code, 0)
      const listed = (await runCli(['deploys', 'site'], { env })).stdout
      assert.match(listed, new RegExp(`promoted\\s+${r.json.deploy_id}`))
      assert.match(listed, /\npreview\s+[0-9a-z]{12}/)
      const back = await runCli(['rollback', '--project', 'site', '--json'], { env })
      assert.equal(back.json.live_deploy_id, r.json.deploy_id)
      assert.equal(await live(), page('three'))
    })

    it('reuses the hashes of unchanged files from the last deploy, never those of a changed or recent file', async () => {
      const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cache-'))
      const sha = (t: string) => crypto.createHash('sha256').update(t).digest('hex')
      const d = makeTree({ 'index.html': page('cached'), 'a.html': 'AAAA', 'b.html': 'BBBB' })
      const e = { ...env, SVC_CACHE_DIR: cacheDir }
      const served = async (p: string) => (await s.get(`/${alice.username}/cached/${p}`)).text
      const deploy = async () => assert.equal((await runCli(['deploy', d, '--project', 'cached'], { env: e })).code, 0)
      try {
        // files last changed an hour ago: well before the walk that records them
        const hourAgo = new Date(Date.now() - 3_600_000)
        for (const f of ['index.html', 'a.html', 'b.html']) fs.utimesSync(path.join(d, f), hourAgo, hourAgo)
        await deploy()
        const dir = path.join(cacheDir, 'deploy-hashes')
        const file = path.join(dir, fs.readdirSync(dir)[0])
        const edit = (fn: (c: any) => void) => {
          const c = JSON.parse(fs.readFileSync(file, 'utf8'))
          fn(c)
          fs.writeFileSync(file, JSON.stringify(c))
        }
        assert.equal(JSON.parse(fs.readFileSync(file, 'utf8')).files['a.html'][4], sha('AAAA'))
        // used: a hash recorded for an unchanged file is believed without reading it (a wrong
        // one planted here makes b's bytes go live under a's name). The files' ctimes are from
        // just now (utimes sets them), so the recording walk is moved 10 s later: else every
        // file counts as changed too close to it, and is read again
        edit((c) => {
          c.files['a.html'][4] = sha('BBBB')
          c.at = Date.now() + 10_000
        })
        await deploy()
        assert.equal(await served('a.html'), 'BBBB')
        // a changed file is read again, even with its size and mtime put back: its ctime moved
        fs.writeFileSync(path.join(d, 'a.html'), 'CCCC')
        fs.utimesSync(path.join(d, 'a.html'), hourAgo, hourAgo)
        await deploy()
        assert.equal(await served('a.html'), 'CCCC')
        // an entry recorded by a walk that began less than 3 s after the file's last change
        // is not trusted (a change in the same timestamp tick would look unchanged)
        const bStat = fs.statSync(path.join(d, 'b.html'))
        edit((c) => {
          c.files['b.html'][4] = sha('AAAA')
          c.at = Math.max(bStat.mtimeMs, bStat.ctimeMs) + 1000
        })
        await deploy()
        assert.equal(await served('b.html'), 'BBBB')
      } finally {
        fs.rmSync(cacheDir, { recursive: true, force: true })
      }
    })

    it('reports a file name that is not UTF-8 as it does a control character, and deploys nothing', async (t) => {
      const d = makeTree({ 'index.html': page('bytes'), 'a\u0001.html': 'x' })
      try {
        // caf\xE9.html: a Latin-1 name, not UTF-8
        fs.writeFileSync(Buffer.concat([Buffer.from(path.join(d, 'caf')), Buffer.from([0xe9]), Buffer.from('.html')]), 'x')
      } catch {
        return t.skip('this file system refuses names that are not UTF-8')
      }
      try {
        const r = await runCli(['deploy', d, '--project', 'bytes'], { env })
        assert.equal(r.code, 1, r.stderr)
        assert.ok(!/ENOENT/.test(r.stdout + r.stderr), r.stderr)
        assert.match(r.stdout, /^ {2}failed: a\u0001\.html: the name contains a control character$/m)
        assert.match(r.stdout, /^ {2}failed: caf\ufffd\.html: the name is not valid UTF-8; rename the file$/m)
        assert.match(r.stdout, /^2 files failed; nothing deployed$/m)
        const j = await runCli(['deploy', d, '--project', 'bytes', '--json'], { env })
        assert.equal(j.code, 1, j.stderr)
        assert.equal(j.json.success, false)
        assert.deepEqual(j.json.failed, [
          { path: 'a\u0001.html', reason: 'the name contains a control character' },
          { path: 'caf\ufffd.html', reason: 'the name is not valid UTF-8; rename the file' },
        ])
        // no project, no deploy: not even index.html went out
        assert.equal((await s.get('/api/folders/bytes/deploys', { key: alice.key })).status, 403)
        assert.equal((await s.get(`/${alice.username}/bytes/`)).status, 404)
      } finally {
        fs.rmSync(d, { recursive: true, force: true })
      }
    })

    it('refuses a message over 500 characters before reading or sending anything (1328)', async () => {
      const before = await requestsCounted(s, alice.key)
      const r = await runCli(['deploy', dir, '--project', 'longmsg', '-m', 'é'.repeat(501)], { env })
      assert.equal(r.code, 1)
      assert.match(r.stderr, /1328/)
      assert.match(r.stderr, /501 characters; the server takes at most 500/)
      assert.equal((await requestsCounted(s, alice.key)) - before, 1, 'only this count')
      // 500 is taken
      const ok = await runCli(['deploy', dir, '--project', 'longmsg', '-m', 'é'.repeat(500), '--json'], { env })
      assert.equal(ok.code, 0, ok.stderr)
      assert.equal((await s.get('/api/folders/longmsg/deploys', { key: alice.key })).json.deploys[0].message, 'é'.repeat(500))
    })

    it('asks the check again once when a file it was told is held went meanwhile (1330), and deploys', async () => {
      // the bytes are held by another project when the check runs, and gone when the archive
      // arrives: a loopback proxy deletes them just before it forwards the first deploy
      const shared = `held elsewhere ${crypto.randomUUID()}`
      assert.equal((await batchUpload(s, { key: alice.key }, 'holder', [{ filename: 'shared.txt', data: shared }])).status, 200)
      let deploys = 0
      const proxy = http.createServer((req, res) => {
        void (async () => {
          if (req.method === 'POST' && req.url?.endsWith('/redo/deploys') && deploys++ === 0)
            assert.equal((await s.request('DELETE', '/api/folders/holder/file/shared.txt', { key: alice.key })).status, 200)
          const up = https.request(`${s.url}${req.url}`, { method: req.method, headers: req.headers, rejectUnauthorized: false }, (r) => {
            res.writeHead(r.statusCode ?? 502, r.headers)
            r.pipe(res)
          })
          req.pipe(up)
        })()
      })
      proxy.listen(0, '127.0.0.1')
      await new Promise((r) => proxy.once('listening', r))
      const d = makeTree({ 'index.html': page('redo'), 'shared.txt': shared })
      try {
        const url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`
        const r = await runCli(['deploy', d, '--project', 'redo'], { env: { ...env, SVC_URL: url } })
        assert.equal(r.code, 0, r.stderr)
        assert.equal(deploys, 2, 'the refused archive, then the one after the second check')
        assert.match(r.stderr, /1330/)
        assert.equal((await s.get(`/${alice.username}/redo/shared.txt`)).text, shared)
        assert.equal((await s.get('/api/folders/redo/deploys', { key: alice.key })).json.deploys.length, 1)
      } finally {
        proxy.close()
        fs.rmSync(d, { recursive: true, force: true })
      }
    })

    it('reports a server refusal with its code and path, and deploys nothing', async () => {
      const d = makeTree({ 'index.html': page('x'), _redirects: '/a /b 418\n' })
      try {
        const r = await runCli(['deploy', d, '--project', 'rules'], { env })
        assert.equal(r.code, 1)
        assert.match(r.stderr, /1314/)
        assert.match(r.stderr, /_redirects, line 1/)
        assert.equal((await s.get(`/${alice.username}/rules/`)).status, 404)
      } finally {
        fs.rmSync(d, { recursive: true, force: true })
      }
    })

    it('svc delete removes a named project only with --force, its kept deploys too', async () => {
      const d = makeTree({ 'index.html': page('doomed'), 'a.txt': 'a' })
      try {
        assert.equal((await runCli(['deploy', d, '--project', 'doomed'], { env })).code, 0)
        assert.equal((await runCli(['deploy', d, '--project', 'doomed', '--preview'], { env })).code, 0)
        // without --force, or without a name (the current folder never stands for it): nothing sent
        const refused = await runCli(['delete', 'doomed'], { env })
        assert.equal(refused.code, 2)
        assert.match(refused.stderr, /add --force/)
        assert.equal((await runCli(['delete', '--force'], { env, cwd: d })).code, 2)
        assert.equal((await s.get(`/${alice.username}/doomed/`)).status, 200)
        const r = await runCli(['delete', 'doomed', '--force', '--json'], { env })
        assert.equal(r.code, 0, r.stderr)
        assert.deepEqual(JSON.parse(r.stdout), { success: true, project: 'doomed', deleted_files: 2 })
        assert.equal((await s.get(`/${alice.username}/doomed/`)).status, 404)
        const again = await runCli(['delete', 'doomed', '--force'], { env })
        assert.equal(again.code, 1)
        assert.match(again.stderr, /1312/)
      } finally {
        fs.rmSync(d, { recursive: true, force: true })
      }
    })
  })
}

// the archive comes from a server that breaks it off or stops: no file is left, partial or whole
describe('svc deploys download: a cut-short or interrupted download leaves no file', () => {
  let out = ''
  let server: http.Server
  let url = ''
  let mode: 'cut' | 'hang' = 'cut'
  const gz = gzipSync(Buffer.alloc(200_000, 'a'))
  before(async () => {
    out = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-dl-cut-'))
    server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/gzip' })
      // half of a gzip stream, then the end of the answer (cut) or nothing more (hang)
      res.write(gz.subarray(0, gz.length >> 1))
      if (mode === 'cut') res.end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => {
    server.closeAllConnections()
    server.close()
    fs.rmSync(out, { recursive: true, force: true })
  })
  const env = () => ({ SVC_URL: url, SVC_API_KEY: 'svc_' + 'k'.repeat(40), SVC_CONFIG: path.join(out, 'no-config.json') })

  it('an answer that is not a whole gzip archive is refused', async () => {
    mode = 'cut'
    const r = await runCli(['deploys', 'download', 'abc', '--project', 'site', '-o', path.join(out, 'a.tar.gz')], { env: env() })
    assert.equal(r.code, 1)
    assert.match(r.stderr, /not a whole gzip archive/)
    assert.deepEqual(fs.readdirSync(out), [])
  })

  it('Ctrl-C removes the partial file', async () => {
    mode = 'hang'
    let child: ChildProcess | undefined
    const run = runCli(['deploys', 'download', 'abc', '--project', 'site', '-o', path.join(out, 'b.tar.gz')], { env: env(), onSpawn: (c) => (child = c) })
    for (let i = 0; i < 200 && fs.readdirSync(out).length === 0; i++) await new Promise((r) => setTimeout(r, 50))
    assert.match(fs.readdirSync(out).join(), /^\.b\.tar\.gz\.\d+\.partial$/, 'the partial file, beside the one asked for')
    child!.kill('SIGINT')
    const r = await run
    assert.notEqual(r.code, 0)
    assert.deepEqual(fs.readdirSync(out), [])
  })
})
