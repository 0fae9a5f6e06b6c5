import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import tar from 'tar-stream'
import yazl from 'yazl'
import { startServer, type TestServer } from '../support/server.js'
import { makeTree, runCli } from './run.js'

/** A zip as `zip -r` makes one: folder entries, then files; `mode` 0o120777 makes a symbolic link. */
async function makeZip(file: string, entries: Array<{ name: string; body?: string | Buffer; mode?: number }>): Promise<void> {
  const zip = new yazl.ZipFile()
  for (const e of entries)
    if (e.body === undefined) zip.addEmptyDirectory(e.name)
    else zip.addBuffer(Buffer.from(e.body), e.name, { mode: e.mode ?? 0o100644 })
  zip.end()
  await new Promise<void>((resolve, reject) => zip.outputStream.pipe(fs.createWriteStream(file)).on('finish', resolve).on('error', reject))
}

describe('svc deploy of a .zip, .tar.gz or .tar file', () => {
  let s: TestServer
  let env: Record<string, string>
  let alice: Awaited<ReturnType<TestServer['user']>>
  let tmp: string
  let unpackDir: string
  before(async () => {
    s = await startServer({ engine: 'sqlite', env: { RATE_LIMITS: '{"authenticated":{"minute":1000}}', DEPLOY_MAX_BYTES: '100000' } })
    alice = await s.user()
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-archive-file-'))
    // the CLI's temporary folders go here, so the test sees that each is removed
    unpackDir = path.join(tmp, 'unpack')
    fs.mkdirSync(unpackDir)
    env = { SVC_URL: s.url, SVC_API_KEY: alice.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(tmp, 'no-config.json'), TMPDIR: unpackDir }
  })
  after(async () => {
    await s.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })
  const live = async (project: string, p = '') => {
    const r = await s.get(`/${alice.username}/${project}/${p}`)
    return `${r.status} ${r.text}`
  }

  it('deploys a zip with a top-level folder, named after the file; a redeploy sends only changed files', async () => {
    const file = path.join(tmp, 'shop.zip')
    await makeZip(file, [
      { name: 'shop/' },
      { name: 'shop/index.html', body: '<h1>shop</h1>' },
      { name: 'shop/a b/c#d.css', body: 'h1{}' },
      { name: 'shop/empty.txt', body: '' },
      // macOS Finder's resource forks are left out
      { name: '__MACOSX/shop/._index.html', body: 'junk' },
    ])
    const r = await runCli(['deploy', file, '--json'], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.json.project, 'shop')
    assert.equal(r.json.files, 3)
    assert.equal(await live('shop'), '200 <h1>shop</h1>')
    assert.equal(await live('shop', 'a%20b/c%23d.css'), '200 h1{}')
    assert.equal(await live('shop', 'empty.txt'), '200 ')
    assert.deepEqual(fs.readdirSync(unpackDir), [], 'the unpacked folder is removed')

    await makeZip(file, [
      { name: 'shop/index.html', body: '<h1>shop 2</h1>' },
      { name: 'shop/a b/c#d.css', body: 'h1{}' },
    ])
    const again = await runCli(['deploy', file, '--json'], { env })
    assert.equal(again.code, 0, again.stderr)
    assert.deepEqual(again.json.uploaded, ['index.html'])
    assert.equal(await live('shop'), '200 <h1>shop 2</h1>')
    assert.equal((await live('shop', 'empty.txt')).slice(0, 3), '404', 'a file not in the archive is not in the deploy')
  })

  it("deploys a build folder's archive as that folder deploys: to the repository's project; --project wins", async () => {
    const repo = path.join(tmp, 'my-app')
    fs.mkdirSync(repo)
    const file = path.join(repo, 'dist.zip')
    await makeZip(file, [{ name: 'dist/' }, { name: 'dist/index.html', body: '<h1>my app</h1>' }])
    const r = await runCli(['deploy', 'dist.zip', '--json'], { env, cwd: repo })
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.json.project, 'my-app')
    assert.equal(
      r.stderr,
      "note: project my-app, named after the folder that holds dist.zip (a build folder's name is not the site's); choose another with --project NAME\n",
    )
    assert.equal(await live('my-app'), '200 <h1>my app</h1>')
    assert.equal((await s.get('/api/folders/dist/deploys', { key: alice.key })).status, 403, 'no project named after the file')

    // a tar.gz of a nested build folder (.output/public) names the same project
    const site = makeTree({ 'index.html': '<h1>nuxt</h1>' })
    fs.mkdirSync(path.join(repo, '.output'))
    execFileSync('tar', ['-czf', path.join(repo, '.output', 'public.tar.gz'), '-C', site, '.'])
    const nested = await runCli(['deploy', path.join(repo, '.output', 'public.tar.gz'), '--json'], { env })
    assert.equal(nested.code, 0, nested.stderr)
    assert.equal(nested.json.project, 'my-app')
    assert.match(nested.stderr, /named after the folder that holds \.output\/public\.tar\.gz/)
    assert.equal(await live('my-app'), '200 <h1>nuxt</h1>')

    // --project is taken as given, and said nothing of
    const named = await runCli(['deploy', file, '--project', 'dist', '--json'], { env })
    assert.equal(named.code, 0, named.stderr)
    assert.equal(named.json.project, 'dist')
    assert.equal(named.stderr, '')
    // a project named after the build folder is left as it is, and the note says how to deploy there
    const again = await runCli(['deploy', file, '--json'], { env })
    assert.equal(again.json.project, 'my-app')
    assert.match(again.stderr, /your project dist is left as it is: --project dist deploys there/)
  })

  it("deploys a tar.gz made by the system's tar, flat or with a folder, and a preview of one", async () => {
    const site = makeTree({ 'index.html': '<h1>tar</h1>', 'img/x.txt': 'x' })
    const flat = path.join(tmp, 'flat.tar.gz')
    execFileSync('tar', ['-czf', flat, '-C', site, '.'])
    const r = await runCli(['deploy', flat], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /flat: 2 files/)
    assert.equal(await live('flat', 'img/x.txt'), '200 x')

    const nested = path.join(tmp, 'nested.tgz')
    execFileSync('tar', ['-czf', nested, '-C', path.dirname(site), path.basename(site)])
    const p = await runCli(['deploy', nested, '--project', 'flat', '--preview', '--json'], { env })
    assert.equal(p.code, 0, p.stderr)
    assert.equal(p.json.files, 2)
    assert.equal(p.json.preview, true)
    assert.deepEqual(fs.readdirSync(unpackDir), [])
  })

  it('refuses links, names that leave the folder, entries twice and more than the deploy limit, sending nothing', async () => {
    const cases: Array<[string, Array<{ name: string; body?: string | Buffer; mode?: number }>, RegExp]> = [
      [
        'link',
        [
          { name: 'index.html', body: 'x' },
          { name: 'pw', body: '/etc/passwd', mode: 0o120777 },
        ],
        /"pw" is a symbolic link/,
      ],
      [
        'twice',
        [
          { name: 'index.html', body: 'x' },
          { name: 'index.html', body: 'y' },
        ],
        /"index.html" is in the archive twice/,
      ],
      // inflates past DEPLOY_MAX_BYTES: stopped while unpacking
      [
        'bomb',
        [
          { name: 'index.html', body: 'x' },
          { name: 'zeros.bin', body: Buffer.alloc(1024 * 1024) },
        ],
        /unpacks to more than 100000 bytes.*error 1328/,
      ],
    ]
    for (const [name, entries, message] of cases) {
      const file = path.join(tmp, `${name}.zip`)
      await makeZip(file, entries)
      const r = await runCli(['deploy', file], { env })
      assert.equal(r.code, 1, `${name}: ${r.stdout}`)
      assert.match(r.stderr, message, name)
      assert.deepEqual(fs.readdirSync(unpackDir), [], `${name}: the unpacked folder is removed`)
      assert.equal((await s.get(`/api/folders/${name}/deploys`, { key: alice.key })).status, 403, `${name}: no project made`)
    }
    const tarLink = makeTree({ 'index.html': 'x' })
    fs.symlinkSync('/etc/passwd', path.join(tarLink, 'pw'))
    const file = path.join(tmp, 'tarlink.tar')
    execFileSync('tar', ['-cf', file, '-C', tarLink, '.'])
    const r = await runCli(['deploy', file], { env })
    assert.equal(r.code, 1)
    assert.match(r.stderr, /"\.\/pw" is a symbolic link/)

    // GNU tar strips a leading "../" when it packs: tar-stream keeps it
    const pack = tar.pack()
    pack.entry({ name: 'index.html' }, 'x')
    pack.entry({ name: '../evil.html' }, 'x')
    pack.finalize()
    const up = path.join(tmp, 'up.tar')
    await new Promise<void>((resolve, reject) => pack.pipe(fs.createWriteStream(up)).on('finish', resolve).on('error', reject))
    const u = await runCli(['deploy', up], { env })
    assert.equal(u.code, 1)
    assert.match(u.stderr, /"\.\.\/evil\.html" has a "\.\." segment/)
    assert.ok(!fs.existsSync(path.join(path.dirname(unpackDir), 'evil.html')))

    // a build folder deeper down: named, with what to do
    const deep = path.join(tmp, 'deep.zip')
    await makeZip(deep, [
      { name: 'app/src/main.js', body: 'x' },
      { name: 'app/dist/index.html', body: 'x' },
    ])
    const d = await runCli(['deploy', deep], { env })
    assert.equal(d.code, 1)
    assert.match(d.stderr, /deep\.zip has no index\.html at its root.*error 1313.*dist\/index\.html is in it: make the archive of dist\/ alone/)
    assert.doesNotMatch(d.stderr, new RegExp(unpackDir))

    const notArchive = path.join(tmp, 'notes.txt')
    fs.writeFileSync(notArchive, 'hello')
    const n = await runCli(['deploy', notArchive], { env })
    assert.equal(n.code, 1)
    assert.match(n.stderr, /notes\.txt is not a folder, nor a \.zip, \.tar\.gz or \.tar archive/)
  })

  it('removes its unpacked folder on Ctrl-C, and a folder a killed deploy left once it is a day old', async () => {
    // left behind by a deploy killed with kill -9: two days old, and one of a deploy running now
    const stale = path.join(unpackDir, 'svc-deploy-stale1')
    const fresh = path.join(unpackDir, 'svc-deploy-fresh1')
    for (const d of [stale, fresh]) fs.mkdirSync(path.join(d, 'site'), { recursive: true })
    const old = new Date(Date.now() - 2 * 24 * 3600 * 1000)
    fs.utimesSync(stale, old, old)
    // a server that accepts and never answers: the CLI waits on it with its folder made
    let asked = 0
    const silent = net.createServer(() => asked++)
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const port = (silent.address() as net.AddressInfo).port
    const file = path.join(tmp, 'hang.zip')
    await makeZip(file, [{ name: 'index.html', body: 'x' }])
    try {
      let child: ChildProcess | undefined
      const run = runCli(['deploy', file], { env: { ...env, SVC_URL: `http://127.0.0.1:${port}` }, onSpawn: (c) => (child = c) })
      const mine = () => fs.readdirSync(unpackDir).filter((n) => !/^svc-deploy-(fresh|stale)1$/.test(n))
      for (let i = 0; i < 200 && mine().length === 0; i++) await new Promise((r) => setTimeout(r, 50))
      assert.equal(mine().length, 1, 'the CLI made its folder')
      assert.ok(!fs.existsSync(stale), 'the stale folder is gone')
      // Ctrl-C once it waits on the server, its folder unpacked (not while it is being made)
      for (let i = 0; i < 200 && asked === 0; i++) await new Promise((r) => setTimeout(r, 50))
      assert.ok(asked > 0, 'the CLI asked the server')
      child!.kill('SIGINT')
      const r = await run
      assert.notEqual(r.code, 0)
      assert.deepEqual(fs.readdirSync(unpackDir), ['svc-deploy-fresh1'], 'its own folder is removed, a recent one is kept')
    } finally {
      silent.close()
      fs.rmSync(fresh, { recursive: true, force: true })
    }
  })

  it('deploys a downloaded deploy as the files it holds, without its manifest', async () => {
    const site = makeTree({ 'index.html': '<h1>orig</h1>', 'css/s.css': 'h1{}' })
    const r = await runCli(['deploy', site, '--project', 'orig', '--json'], { env })
    assert.equal(r.code, 0, r.stderr)
    const dl = await s.get(`/api/folders/orig/deploys/${r.json.deploy_id}/archive`, { key: alice.key })
    assert.equal(dl.status, 200)
    const file = path.join(tmp, 'orig-copy.tar.gz')
    fs.writeFileSync(file, dl.body)
    const copy = await runCli(['deploy', file, '--json'], { env })
    assert.equal(copy.code, 0, copy.stderr)
    assert.equal(copy.json.project, 'orig-copy')
    assert.equal(copy.json.files, 2)
    assert.equal(await live('orig-copy'), '200 <h1>orig</h1>')
    assert.equal(await live('orig-copy', 'css/s.css'), '200 h1{}')
    // svc-deploy.json described the files: it is not one of them
    assert.equal((await s.get(`/${alice.username}/orig-copy/svc-deploy.json`)).status, 404)
  })
})
