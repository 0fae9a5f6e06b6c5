import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { ENGINES, startServer, type TestServer } from '../support/server.js'
import { makeTree, runCli } from './run.js'

/**
 * Real build trees deployed with the CLI while things go wrong around it: files that change
 * while the archive is sent, a proxy that answers with its own HTML pages.
 */

type Hook = (req: http.IncomingMessage) => void

/**
 * A plain-HTTP proxy on loopback in front of the test server (the CLI allows http:// there).
 * `hooks.request` runs when a request's headers arrive, before any of its body is read or
 * forwarded, so the CLI is still streaming the body while it runs; `hooks.answer` when the
 * server's answer arrives, before the CLI gets it; `hooks.path` gives the path forwarded in
 * place of the request's own.
 */
async function proxyTo(target: string, hooks: { request?: Hook; answer?: Hook; path?: (url: string) => string }) {
  const server = http.createServer((req, res) => {
    hooks.request?.(req)
    const up = https.request(
      `${target}${hooks.path ? hooks.path(req.url ?? '/') : req.url}`,
      { method: req.method, headers: { ...req.headers, host: new URL(target).host }, rejectUnauthorized: false },
      (r) => {
        hooks.answer?.(req)
        res.writeHead(r.statusCode ?? 502, r.headers)
        r.pipe(res)
      },
    )
    up.on('error', () => res.destroy())
    req.on('error', () => up.destroy())
    req.on('aborted', () => up.destroy())
    req.pipe(up)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(r)) }
}

/** A server answering every request with `status` and an nginx-like HTML page. */
async function htmlServer(status: number) {
  const server = http.createServer((req, res) => {
    req.resume().on('end', () => {
      res.writeHead(status, { 'content-type': 'text/html' })
      res.end(
        `<html>\r\n<head><title>${status} ${http.STATUS_CODES[status]}</title></head>\r\n<body>\r\n<center><h1>${status} ${http.STATUS_CODES[status]}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`,
      )
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(r)) }
}

const page = (v: string) => `<!doctype html><title>${v}</title><script type="module" src="/assets/index-${v}.js"></script><h1>${v}</h1>`
const linkingTo = (href: string) => `<!doctype html><link rel="stylesheet" href="${href}"><p>moved</p>`
/** A tree's files under the folder `dir`. */
const prefixed = (dir: string, files: Record<string, string>) => Object.fromEntries(Object.entries(files).map(([p, c]) => [`${dir}/${p}`, c]))

for (const engine of ENGINES) {
  describe(`svc deploy of real trees [${engine}]`, () => {
    let s: TestServer
    let alice: Awaited<ReturnType<TestServer['user']>>
    let env: Record<string, string>
    before(async () => {
      s = await startServer({ engine, env: { RATE_LIMITS: '{"authenticated":{"minute":1000}}' } })
      alice = await s.user()
      env = { SVC_API_KEY: alice.key, SVC_INSECURE: '1', SVC_CONFIG: path.join(s.dataDir, 'no-config.json'), SVC_CACHE_DIR: path.join(s.dataDir, 'cache') }
    })
    after(async () => {
      await s.close()
    })
    const deployCount = async (project: string) => ((await s.get(`/api/folders/${project}/deploys`, { key: alice.key })).json?.deploys ?? []).length

    it('a file that shrinks or vanishes while the archive is sent fails the deploy cleanly; the live one stays', async () => {
      // a Vite-like dist/: hashed assets and a large file streamed from disk
      const dir = makeTree({ 'index.html': page('one'), 'assets/index-one.js': 'console.log(1)', 'media/video.bin': crypto.randomBytes(12 << 20) })
      const first = await runCli(['deploy', dir, '--project', 'vite'], { env: { ...env, SVC_URL: s.url } })
      assert.equal(first.code, 0, first.stderr)
      const live = async () => (await s.get(`/${alice.username}/vite/`)).text
      assert.equal(await live(), page('one'))
      fs.writeFileSync(path.join(dir, 'index.html'), page('two'))
      const video = path.join(dir, 'media/video.bin')

      // shrinks while streamed: cut to 1 KiB as the archive's headers arrive (the socket's
      // buffers hold a few MiB of it at most, so its read is then under way)
      fs.writeFileSync(video, crypto.randomBytes(12 << 20))
      let proxy = await proxyTo(s.url, {
        request: (req) => {
          if (req.method === 'POST' && req.url?.endsWith('/deploys')) fs.truncateSync(video, 1024)
        },
      })
      try {
        const r = await runCli(['deploy', dir, '--project', 'vite', '--json'], { env: { ...env, SVC_URL: proxy.url } })
        assert.equal(r.code, 1, r.stderr)
        assert.equal(r.json?.success, false, r.stdout)
        assert.match(r.json.error.message, /^media\/video\.bin changed while deploying \(12582912 bytes when hashed, \d+ read\); run svc deploy again$/)
        assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')
      } finally {
        await proxy.close()
      }
      assert.equal(await live(), page('one'))
      assert.equal(await deployCount('vite'), 1)

      // vanishes after the check said it is missing, before the archive reads it
      fs.writeFileSync(video, crypto.randomBytes(2 << 20))
      proxy = await proxyTo(s.url, {
        answer: (req) => {
          if (req.url?.endsWith('/deploys/missing')) fs.rmSync(video)
        },
      })
      try {
        const r = await runCli(['deploy', dir, '--project', 'vite'], { env: { ...env, SVC_URL: proxy.url } })
        assert.equal(r.code, 1, r.stderr)
        assert.match(r.stderr, /^error: media\/video\.bin changed while deploying \(it is gone\); run svc deploy again$/m)
        assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')
      } finally {
        await proxy.close()
      }
      assert.equal(await live(), page('one'))
      assert.equal(await deployCount('vite'), 1)
    })

    it('a file that vanishes or becomes a folder after hashing fails the deploy naming it, archive and --batch; nothing goes live', async () => {
      const dir = makeTree({ 'index.html': page('one'), 'assets/index-one.js': 'console.log(1)', 'assets/logo.svg': '<svg/>' })
      const first = await runCli(['deploy', dir, '--project', 'gone'], { env: { ...env, SVC_URL: s.url } })
      assert.equal(first.code, 0, first.stderr)
      const live = async () => (await s.get(`/${alice.username}/gone/`)).text
      const js = path.join(dir, 'assets/index-one.js')
      const logo = path.join(dir, 'assets/logo.svg')
      for (const batch of [false, true]) {
        fs.writeFileSync(path.join(dir, 'index.html'), page(`two-${batch}`))
        fs.writeFileSync(js, `console.log(${batch})`)
        fs.writeFileSync(logo, `<svg id="${batch}"/>`)
        // once the server was asked which files it lacks: as a build tool cleaning its output would
        const proxy = await proxyTo(s.url, {
          answer: (req) => {
            if (!/\/(deploys\/missing|diff)$/.test(req.url ?? '')) return
            fs.rmSync(js)
            fs.rmSync(logo)
            fs.mkdirSync(logo)
          },
        })
        try {
          const r = await runCli(['deploy', dir, '--project', 'gone', '--json', ...(batch ? ['--batch'] : [])], { env: { ...env, SVC_URL: proxy.url } })
          assert.equal(r.code, 1, r.stderr)
          assert.equal(r.json.success, false)
          assert.doesNotMatch(r.stdout + r.stderr, /ENOENT|EISDIR|\n\s+at /, 'no raw error, no stack')
          if (batch) {
            assert.deepEqual(r.json.failed, [
              { path: 'assets/index-one.js', reason: 'changed while deploying (it is gone); run svc deploy again' },
              { path: 'assets/logo.svg', reason: 'changed while deploying (it is now a folder); run svc deploy again' },
            ])
            assert.equal(r.json.published, false)
          } else assert.equal(r.json.error.message, 'assets/index-one.js changed while deploying (it is gone); run svc deploy again')
        } finally {
          await proxy.close()
          fs.rmSync(logo, { recursive: true, force: true })
        }
        assert.equal(await live(), page('one'))
      }
      assert.equal(await deployCount('gone'), 1)
    })

    it('a server without archive deploys: the batch uploads it falls back to warn that they record no -m message', async () => {
      const dir = makeTree({ 'index.html': page('one'), 'assets/index-one.js': 'console.log(1)' })
      // such a server answers the archive check as a route it does not have (404 / 1404)
      const proxy = await proxyTo(s.url, { path: (url) => (url.endsWith('/deploys/missing') ? '/api/no-archive-deploys' : url) })
      try {
        const e = { ...env, SVC_URL: proxy.url }
        const r = await runCli(['deploy', dir, '--project', 'noarchive', '-m', 'release 1.2', '--json'], { env: e })
        assert.equal(r.code, 0, r.stderr)
        assert.equal(r.json.published, true, r.stdout)
        assert.deepEqual(r.json.uploaded, ['assets/index-one.js', 'index.html'])
        assert.match(
          r.stderr,
          /^this server has no archive deploys: uploading in batches\nwarning: the deploy message \(-m\) is not recorded: batch uploads and their publish take none\n/m,
        )
        fs.writeFileSync(path.join(dir, 'index.html'), page('two'))
        const plain = await runCli(['deploy', dir, '--project', 'noarchive'], { env: e })
        assert.equal(plain.code, 0, plain.stderr)
        assert.match(plain.stderr, /no archive deploys: uploading in batches/)
        assert.doesNotMatch(plain.stderr, /deploy message/, 'no message, no warning')
      } finally {
        await proxy.close()
      }
      assert.equal((await s.get(`/${alice.username}/noarchive/`)).text, page('two'))
      const listed = (await s.get('/api/folders/noarchive/deploys', { key: alice.key })).json.deploys
      assert.ok(listed.length > 0)
      for (const d of listed) assert.equal(d.message, '', 'the server recorded no message')
    })

    it('--batch --dry-run names the files it would upload and, with --delete, delete; it changes nothing', async () => {
      // an Astro/Docusaurus-like tree: folder/index.html pages
      const dir = makeTree({ 'index.html': page('one'), 'docs/intro/index.html': '<p>intro</p>', 'blog/2024/post/index.html': '<p>post</p>' })
      const e = { ...env, SVC_URL: s.url }
      assert.equal((await runCli(['deploy', dir, '--project', 'docs', '--batch'], { env: e })).code, 0)
      fs.rmSync(path.join(dir, 'blog'), { recursive: true })
      fs.writeFileSync(path.join(dir, 'docs/intro/index.html'), '<p>intro 2</p>')
      fs.mkdirSync(path.join(dir, 'docs/next'))
      fs.writeFileSync(path.join(dir, 'docs/next/index.html'), '<p>next</p>')
      const dry = await runCli(['deploy', dir, '--project', 'docs', '--batch', '--delete', '--dry-run'], { env: e })
      assert.equal(dry.code, 0, dry.stderr)
      assert.match(dry.stdout, /^would upload 2 files \(.*\), 1 unchanged\n {2}docs\/intro\/index\.html\n {2}docs\/next\/index\.html\n/m)
      assert.match(dry.stdout, /^would delete 1 file not in the folder\n {2}delete blog\/2024\/post\/index\.html\n/m)
      const kept = await runCli(['deploy', dir, '--project', 'docs', '--batch', '--dry-run'], { env: e })
      assert.match(kept.stdout, /^1 file on the server is not in the folder \(kept; --delete removes them\)\n/m)
      assert.doesNotMatch(kept.stdout, /delete blog/)
      assert.equal((await s.get(`/${alice.username}/docs/blog/2024/post/`)).text, '<p>post</p>')
      assert.equal((await s.get(`/${alice.username}/docs/docs/intro/`)).text, '<p>intro</p>')
    })

    it('leaves out symbolic links that loop back to a folder containing them, with a warning; other links inside are copies', async () => {
      const dir = makeTree({ 'index.html': page('one'), 'a/x.html': '<p>x</p>', 'docs/intro/index.html': '<p>intro</p>' })
      fs.symlinkSync('../a', path.join(dir, 'a/up'))
      fs.symlinkSync('.', path.join(dir, 'here'))
      fs.symlinkSync('docs', path.join(dir, 'guide'))
      fs.symlinkSync('ping', path.join(dir, 'pong'))
      fs.symlinkSync('pong', path.join(dir, 'ping'))
      fs.symlinkSync('nowhere', path.join(dir, 'dangling'))
      const r = await runCli(['deploy', dir, '--project', 'links', '--json'], { env: { ...env, SVC_URL: s.url } })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.json.files, 4, r.stdout)
      assert.match(r.stderr, /^warning: skipping a\/up: symbolic link to a folder that contains it \(a loop\)$/m)
      assert.match(r.stderr, /^warning: skipping here: symbolic link to a folder that contains it \(a loop\)$/m)
      assert.match(r.stderr, /^warning: skipping ping: symbolic links that point at each other \(a loop\)$/m)
      assert.match(r.stderr, /^warning: skipping pong: symbolic links that point at each other \(a loop\)$/m)
      assert.match(r.stderr, /^warning: skipping dangling: broken symbolic link$/m)
      const get = async (p: string) => (await s.get(`/${alice.username}/links/${p}`)).status
      assert.equal(await get('a/x.html'), 200)
      assert.equal(await get('guide/intro/'), 200)
      assert.equal(await get('a/up/x.html'), 404)
    })

    it("takes every project name the server takes (a leading dot, spaces, NFD) and refuses the others with the server's rule", async () => {
      const e = { ...env, SVC_URL: s.url }
      // a folder whose own name starts with "." names its project, as on the server
      const parent = makeTree({ '.site/index.html': page('dot') })
      const dot = await runCli(['deploy', path.join(parent, '.site'), '--json'], { env: e })
      assert.equal(dot.code, 0, dot.stderr)
      assert.equal(dot.json.project, '.site')
      assert.equal((await s.get(`/${alice.username}/.site/`)).text, page('dot'))
      const dir = makeTree({ 'index.html': page('one') })
      for (const [name, flags] of [
        ['.hidden site', []],
        ['.batch', ['--batch']],
      ] as const) {
        const r = await runCli(['deploy', dir, '--project', name, '--json', ...flags], { env: e })
        assert.equal(r.code, 0, `${name}: ${r.stderr}`)
        assert.equal((await s.get(`/${alice.username}/${encodeURIComponent(name)}/`)).text, page('one'), name)
      }
      // a decomposed name is the server's composed one, as the server stores it
      const nfd = await runCli(['deploy', dir, '--project', 'cafe\u0301', '--json'], { env: e })
      assert.equal(nfd.code, 0, nfd.stderr)
      assert.equal(nfd.json.project, 'caf\u00e9')
      // what the server refuses is refused before any request, with its reason and its rule
      for (const [bad, why] of [
        ['..', /dot segment/],
        ['a%20b', /a %XX sequence in a name/],
        ['a\u202eb', /invisible Unicode format character/],
      ] as const) {
        const r = await runCli(['deploy', dir, '--project', bad], { env: e })
        assert.equal(r.code, 1, bad)
        assert.match(r.stderr, why)
        assert.match(r.stderr, /A project name is one name, case-sensitive, spaces and any script's letters allowed;.*; pass --project NAME$/m)
      }
    })

    it("names each file whose path the server refuses (too deep, an invisible character) by the server's rule; nothing goes live", async () => {
      const e = { ...env, SVC_URL: s.url }
      const deep = `${'d/'.repeat(32)}f.txt`
      const dir = makeTree({ 'index.html': page('one'), [deep]: 'deep', '\u200bz/a.txt': 'z', 'ok.txt': 'ok' })
      for (const flags of [[], ['--batch']]) {
        const r = await runCli(['deploy', dir, '--project', 'paths', '--json', ...flags], { env: e })
        assert.equal(r.code, 1, r.stderr)
        assert.equal(r.json.success, false, r.stdout)
        assert.deepEqual(r.json.failed, [
          { path: deep, reason: 'the server refuses this path (path deeper than 32 levels); rename or move it' },
          { path: '\u200bz/', reason: 'the server refuses this path (invisible Unicode format character); rename or move it' },
        ])
      }
      // the batch uploads sent the other files, as for any failed file, and published nothing
      assert.equal((await s.get(`/${alice.username}/paths/`)).status, 404)
    })

    it('a file name with a double quote goes in an archive deploy, as GitHub Pages serves it; --batch, whose multipart cannot carry it, names it', async () => {
      const e = { ...env, SVC_URL: s.url }
      const dir = makeTree({ 'index.html': page('quoted'), 'say "hi".html': '<p>hi</p>' })
      const r = await runCli(['deploy', dir, '--project', 'quoted', '--json'], { env: e })
      assert.equal(r.code, 0, r.stderr)
      const served = await s.get(`/${alice.username}/quoted/say%20%22hi%22.html`)
      assert.equal(served.status, 200)
      assert.equal(served.text, '<p>hi</p>')
      const batch = await runCli(['deploy', dir, '--project', 'quoted-batch', '--batch', '--json'], { env: e })
      assert.equal(batch.code, 1, batch.stderr)
      assert.deepEqual(batch.json.failed, [{ path: 'say "hi".html', reason: 'the name contains a double quote' }])
    })

    it('a folder of dotfiles alone says its files are left out and how to keep them; an empty one says it is empty', async () => {
      const e = { ...env, SVC_URL: s.url }
      const dots = makeTree({ '.env': 'SECRET=1', '.cache/x.js': 'x' })
      const empty = makeTree({})
      for (const flags of [[], ['--batch']]) {
        const r = await runCli(['deploy', dots, '--project', 'dots', ...flags], { env: e })
        assert.equal(r.code, 1, r.stderr)
        assert.equal(
          r.stderr,
          `error: nothing to deploy: every file of ${dots} is left out (2 files or folders): .git/, dotfiles (--dotfiles deploys them), node_modules/ and what .gitignore and .svcignore name\n`,
        )
        const none = await runCli(['deploy', empty, '--project', 'dots', ...flags], { env: e })
        assert.equal(none.code, 1, none.stderr)
        assert.equal(none.stderr, `error: nothing to deploy: ${empty} has no files\n`)
      }
      assert.equal((await s.get('/api/folders/dots/files', { key: alice.key })).status, 403, 'nothing sent')
    })

    it('a folder holding node_modules/ (no .gitignore) deploys without it and says so; a page loading from it is refused, .svcignore deploys it', async () => {
      const e = { ...env, SVC_URL: s.url }
      // a hand-made site whose folder got an `npm install` (a formatter, a CSS tool)
      const site = {
        'index.html': '<!doctype html><title>shop</title><script src="app.js"></script>',
        'app.js': 'console.log(1)',
        'package.json': '{"devDependencies":{"prettier":"^3.0.0"}}',
        'node_modules/prettier/index.mjs': 'export default 1',
        'node_modules/.package-lock.json': '{}',
      }
      const note =
        "note: left out node_modules/: installed packages and a Mac zip's __MACOSX/ stay local unless .svcignore says otherwise (a line !node_modules/ there deploys node_modules/)\n"
      let n = 0
      for (const flags of [[], ['--batch']]) {
        const dir = makeTree(site)
        const project = `packages${n++}`
        const r = await runCli(['deploy', dir, '--project', project, '--json', ...flags], { env: e })
        assert.equal(r.code, 0, r.stderr)
        assert.equal(r.stderr, note)
        assert.deepEqual(r.json.left_out, ['node_modules/'])
        const listed = (await s.get(`/api/folders/${project}/files`, { key: alice.key })).json.files.map((f: { path: string }) => f.path).sort()
        assert.deepEqual(listed, ['app.js', 'index.html', 'package.json'])
        assert.equal((await s.get(`/${alice.username}/${project}/node_modules/prettier/index.mjs`)).status, 404)
        // a page that loads its library from node_modules/ would go live without it: refused first
        const cdnless = makeTree({
          ...site,
          'index.html': '<!doctype html><script src="./node_modules/alpinejs/dist/cdn.min.js" defer></script><div x-data="{}"></div>',
          'node_modules/alpinejs/dist/cdn.min.js': 'window.Alpine = {}',
        })
        const refused = await runCli(['deploy', cdnless, '--project', `${project}-alpine`, ...flags], { env: e })
        assert.equal(refused.code, 1, refused.stderr)
        assert.equal(
          refused.stderr,
          `${note}error: ${cdnless}: its pages load node_modules/alpinejs/dist/cdn.min.js, in a folder that is left out, so the site would go live without it. Add a line !node_modules/ to the .svcignore file at its root to deploy that folder too, or copy the files the site needs into it; nothing was sent\n`,
        )
        assert.equal((await s.get(`/api/folders/${project}-alpine/files`, { key: alice.key })).status, 403, 'nothing sent')
        fs.writeFileSync(path.join(cdnless, '.svcignore'), '!node_modules/\n')
        const kept = await runCli(['deploy', cdnless, '--project', `${project}-alpine`, '--json', ...flags], { env: e })
        assert.equal(kept.code, 0, kept.stderr)
        assert.equal(kept.stderr, '')
        assert.deepEqual(kept.json.left_out, [])
        assert.equal((await s.get(`/${alice.username}/${project}-alpine/node_modules/alpinejs/dist/cdn.min.js`)).text, 'window.Alpine = {}')
      }
    })

    it("a Jekyll site's source, which GitHub Pages would build, is refused before anything is sent; a build or .nojekyll deploys", async () => {
      const e = { ...env, SVC_URL: s.url }
      const config = 'title: Moved\ntheme: minima\n'
      const matter = '---\nlayout: home\n---\n{{ content }}\n'
      // each row: the folder, why it is a source (null: it deploys as it is)
      const rows: Array<[tree: Record<string, string>, why: string | null]> = [
        [{ '_config.yml': config, 'index.html': matter }, '_config.yml, and index.html starts with front matter'],
        [
          { '_config.yml': config, 'index.html': `\uFEFF---\r\ntitle: x\r\n---\r\n<p>{{ site.title }}</p>` },
          '_config.yml, and index.html starts with front matter',
        ],
        [{ '_config.yml': config, 'index.md': '# Home\n', 'about.md': '# About\n' }, '_config.yml and index.md'],
        [{ '_config.yml': config, 'index.markdown': matter, 'index.html': '<p>x</p>' }, '_config.yml and index.markdown'],
        // GitHub Pages' own switch: serve the files as they are
        [{ '_config.yml': config, 'index.html': matter, '.nojekyll': '' }, null],
        // a page without front matter, or a build (Jekyll writes no _config.yml into _site/)
        [{ '_config.yml': config, 'index.html': '<p>hand made</p>' }, null],
        [{ 'index.html': '---\n<p>a rule first</p>', 'feed.xml': '<feed/>' }, null],
      ]
      let n = 0
      for (const [tree, why] of rows) {
        const dir = makeTree(tree)
        for (const flags of [[], ['--batch']]) {
          const project = `jekyll${n++}`
          const r = await runCli(['deploy', dir, '--project', project, ...flags], { env: e })
          if (why === null) {
            assert.equal(r.code, 0, r.stderr)
            continue
          }
          assert.equal(r.code, 1, r.stderr)
          assert.equal(
            r.stderr,
            `error: ${dir} is the source of a Jekyll site (${why}): GitHub Pages builds such a folder, svc serves files as they are, so its pages would show their templates. Build it (bundle exec jekyll build) and deploy the build, its _site/ folder, or add an empty .nojekyll file to deploy the folder as it is; nothing was sent\n`,
          )
          assert.equal((await s.get(`/api/folders/${project}/files`, { key: alice.key })).status, 403, 'nothing sent')
        }
      }
    })

    it("an app's source (svc deploy . in a Vite project) is refused before anything is sent, naming its build; the build deploys", async () => {
      const e = { ...env, SVC_URL: s.url }
      const entry = (src: string) => `<!doctype html><div id="root"></div><script type="module" src="${src}"></script>`
      const vitePkg = JSON.stringify({ scripts: { dev: 'vite', build: 'vite build' }, devDependencies: { vite: '^8.0.0' } })
      // each row: the folder, why it is a source, whether Vite's (null why: it deploys as it is)
      const rows: Array<[tree: Record<string, string>, why: string | null, vite?: boolean]> = [
        // `npm create vite` with React: JSX, and a package.json whose build runs vite
        [
          { 'index.html': entry('/src/main.jsx'), 'src/main.jsx': 'x', 'package.json': vitePkg },
          'index.html loads /src/main.jsx, which browsers do not run before a build',
          true,
        ],
        // Parcel's: a relative TypeScript entry, no Vite
        [{ 'index.html': entry('./src/index.tsx'), 'src/index.tsx': 'x' }, 'index.html loads ./src/index.tsx, which browsers do not run before a build', false],
        // Vue's and Svelte's: a .js entry that imports components, in a project with vite.config
        [{ 'index.html': entry('/src/main.js'), 'src/main.js': 'x', 'vite.config.js': 'x' }, 'vite.config.js, and index.html loads /src/main.js', true],
        // vanilla: no vite.config, the build script says it
        [
          { 'index.html': entry('/src/main.js'), 'src/main.js': 'x', 'package.json': vitePkg },
          `package.json's build script "vite build", and index.html loads /src/main.js`,
          true,
        ],
        // the builds: hashed assets, no package.json; a hand-made module site; an entry on a CDN
        [{ 'index.html': entry('/assets/index-Bx1.js'), 'assets/index-Bx1.js': 'x' }, null],
        [{ 'index.html': entry('/app.js'), 'app.js': 'x', 'package.json': '{"scripts":{"build":"eleventy"}}' }, null],
        [{ 'index.html': entry('https://esm.sh/app.tsx'), 'package.json': vitePkg }, null],
      ]
      let n = 0
      for (const [tree, why, vite] of rows) {
        const dir = makeTree(tree)
        for (const flags of [[], ['--batch']]) {
          const project = `bundled${n++}`
          const r = await runCli(['deploy', dir, '--project', project, ...flags], { env: e })
          if (why === null) {
            assert.equal(r.code, 0, r.stderr)
            continue
          }
          assert.equal(r.code, 1, r.stderr)
          assert.equal(
            r.stderr,
            `error: ${dir} is the source of ${vite ? 'a Vite app' : 'an app a bundler builds'} (${why}): Netlify and GitHub Pages' workflows build such a folder, svc serves files as they are, so its pages would stay blank. Build it (npm run build) and deploy its build: svc deploy ${path.join(dir, 'dist')}; nothing was sent\n`,
          )
          assert.equal((await s.get(`/api/folders/${project}/files`, { key: alice.key })).status, 403, 'nothing sent')
        }
      }
      // built already: the error names the build folder to deploy, which deploys
      const app = makeTree({
        'index.html': entry('/src/main.tsx'),
        'src/main.tsx': 'x',
        'vite.config.ts': 'x',
        'dist/index.html': entry('/assets/i.js'),
        'dist/assets/i.js': 'x',
      })
      const r = await runCli(['deploy', app, '--project', 'bundled-app'], { env: e })
      assert.equal(r.code, 1, r.stderr)
      assert.match(
        r.stderr,
        new RegExp(
          `\\(index.html loads /src/main.tsx, which browsers do not run before a build\\):.* Deploy its build: svc deploy ${path.join(app, 'dist')}; nothing was sent\n$`,
        ),
      )
      const built = await runCli(['deploy', path.join(app, 'dist'), '--project', 'bundled-app'], { env: e })
      assert.equal(built.code, 0, built.stderr)
      assert.equal((await s.get(`/${alice.username}/bundled-app/assets/i.js`)).text, 'x')
    })

    it("a Netlify site's netlify.toml rules, which svc does not read, are told as _redirects and _headers lines that then work", async () => {
      const e = { ...env, SVC_URL: s.url }
      // a rule whose condition no line here can say
      const conditional = '[[redirects]]\n  from = "/us/*"\n  to = "/us.html"\n  conditions = {Country = ["US"]}\n'
      const toml = (conditional: string) => `[build]
  command = "npm run build"
  publish = "dist"

# the single-page app's fallback, as Netlify's docs write it
[[redirects]]
  from = "/old"
  to = "/new"
  force = true
[[redirects]]
  from = "/store"
  to = '/blog/:id'
  query = {id = ":id"}
[[redirects]]
  from = "/*"
  to = "/index.html"
  status = 200
${conditional}[[headers]]
  for = "/assets/*"
  [headers.values]
    Cache-Control = "public, max-age=31536000, immutable"
`
      const repo = makeTree({ 'netlify.toml': toml(conditional), ...prefixed('dist', { 'index.html': page('spa'), 'assets/index-spa.js': 'x' }) })
      const dist = path.join(repo, 'dist')
      const redirects = ['/old /new 301!', '/store id=:id /blog/:id 301', '/* /index.html 200']
      const headers = ['/assets/*', '  Cache-Control: public, max-age=31536000, immutable']
      const note = (dir: string, file: string, built: boolean) => {
        const where = (name: string) => `${path.join(dir, name)}${built ? ' (or the folder your build copies into it, such as public/)' : ''}`
        return [
          `note: ${file} holds rules that svc does not read: it reads _redirects and _headers at the root of the deployed folder, as Netlify also does, so these do not apply here`,
          `  the same rules as lines of ${where('_redirects')}:`,
          ...redirects.map((l) => `    ${l}`),
          `  the same rules as lines of ${where('_headers')}:`,
          ...headers.map((l) => `    ${l}`),
          "  1 rule(s) there use what these lines cannot say (conditions, signed proxies, a redirect's own headers): write them by hand\n",
        ].join('\n')
      }
      // the build folder: the repository's netlify.toml, one folder up, is the one Netlify reads
      for (const flags of [[], ['--batch']]) {
        const r = await runCli(['deploy', dist, '--project', 'netlify-spa', ...flags], { env: e })
        assert.equal(r.code, 0, r.stderr)
        assert.ok(r.stderr.endsWith(note(dist, path.join(repo, 'netlify.toml'), true)), r.stderr)
      }
      const route = `/${alice.username}/netlify-spa/dashboard/settings`
      assert.equal((await s.get(route)).status, 404, 'the fallback of netlify.toml does not apply')
      // the lines said, in the build: the note has nothing more to say, and the rules answer
      fs.writeFileSync(path.join(dist, '_redirects'), redirects.join('\n') + '\n')
      fs.writeFileSync(path.join(dist, '_headers'), headers.join('\n') + '\n')
      fs.writeFileSync(path.join(repo, 'netlify.toml'), toml(''))
      const again = await runCli(['deploy', dist, '--project', 'netlify-spa'], { env: e })
      assert.equal(again.code, 0, again.stderr)
      assert.doesNotMatch(again.stderr, /netlify\.toml/)
      const spa = await s.get(route)
      assert.equal(spa.status, 200)
      assert.equal(spa.text, page('spa'))
      assert.equal((await s.get(`/${alice.username}/netlify-spa/assets/index-spa.js`)).headers['cache-control'], 'public, max-age=31536000, immutable')
      const old = await s.get(`/${alice.username}/netlify-spa/old`)
      assert.equal(old.status, 301)
      assert.equal(old.headers.location, `/${alice.username}/netlify-spa/new`)
      // a folder deployed as it is, with its own netlify.toml: its own _redirects to write
      const plain = makeTree({ 'index.html': page('plain'), 'netlify.toml': toml(conditional) })
      const own = await runCli(['deploy', plain, '--project', 'netlify-plain', '--dry-run'], { env: e })
      assert.equal(own.code, 0, own.stderr)
      assert.ok(own.stderr.endsWith(note(plain, path.join(plain, 'netlify.toml'), false)), own.stderr)
      // no rule in it (build settings only): nothing to say
      const settings = makeTree({ 'index.html': page('set'), 'netlify.toml': '[build]\n  publish = "."\n' })
      const none = await runCli(['deploy', settings, '--project', 'netlify-set'], { env: e })
      assert.equal(none.code, 0, none.stderr)
      assert.doesNotMatch(none.stderr, /netlify\.toml/)
    })

    it('a site built for a project base other than its own (a GitHub Pages baseurl) is told the project that serves it there', async () => {
      const e = { ...env, SVC_URL: s.url }
      const css = { 'assets/main.css': 'p{}' }
      const linking = (href: string) => `<!doctype html><link rel="stylesheet" href="${href}"><p>moved</p>`
      // each row: the folder, the project, the options, the base the note names (null: no note)
      const rows: Array<[tree: Record<string, string>, project: string, flags: string[], base: string | null]> = [
        // `jekyll build` with baseurl: /blog, sent from _site without --project
        [{ 'index.html': linking('/blog/assets/main.css'), ...css }, '_site', [], 'blog'],
        [{ 'index.html': linking('/blog/assets/main.css'), ...css }, '_site', ['--batch'], 'blog'],
        [{ 'index.html': linking('/blog/assets/main.css'), ...css }, '_site', ['--dry-run'], 'blog'],
        [{ 'index.html': `<script src="/caf%C3%A9/js/app.js"></script>`, 'js/app.js': '1' }, 'public', [], 'café'],
        // the right project, a build for / or for relative paths, a file that is at that path
        [{ 'index.html': linking('/blog/assets/main.css'), ...css }, 'blog', [], null],
        [{ 'index.html': linking('/assets/main.css'), ...css }, 'rooted', [], null],
        [{ 'index.html': linking('assets/main.css'), ...css }, 'relative', [], null],
        [{ 'index.html': linking('/vendor/assets/main.css'), ...css, 'vendor/assets/main.css': 'p{}' }, 'vendored', [], null],
      ]
      for (const [tree, project, flags, base] of rows) {
        const dir = makeTree(tree)
        const r = await runCli(['deploy', dir, '--project', project, ...flags], { env: e })
        assert.equal(r.code, 0, r.stderr)
        const note = `note: the site loads its files from /${base}/, the base it was built for (as a GitHub Pages project site is served under /{repository}/), so under /${project}/ its pages find none of them. Deploy it as the project ${base}: svc deploy ${dir} --project ${base}\n`
        if (base === null) assert.doesNotMatch(r.stderr, /note: the site loads/, `${project} ${flags.join(' ')}`)
        else assert.ok(r.stderr.endsWith(note), `${project} ${flags.join(' ')}: ${r.stderr}`)
      }
    })

    it("a build folder (dist, _site, .output/public) deploys as the repository's project, said on stderr; deploys and rollback there name it too", async () => {
      // an account of its own: what the file's other tests deployed (a project public) is not its
      const u = await s.user()
      const e = { ...env, SVC_API_KEY: u.key, SVC_URL: s.url }
      const built = (base: string) => ({ 'index.html': linkingTo(`/${base}/assets/main.css`), 'assets/main.css': 'p{}' })
      const root = makeTree({
        ...prefixed('my-app/dist', { 'index.html': page('one') }),
        ...prefixed('nuxt-app/.output/public', { 'index.html': page('nuxt') }),
        // a GitHub Pages project site: Jekyll's baseurl is the repository's name
        ...prefixed('blog/_site', built('blog')),
        ...prefixed('dist', { 'index.html': page('tmp') }),
      })
      const note = (name: string, from: string) =>
        `note: project ${name}, named after the folder that holds ${from}/ (a build folder's name is not the site's); choose another with --project NAME\n`
      const cases: Array<[dir: string, flags: string[], project: string, from: string]> = [
        ['my-app/dist', [], 'my-app', 'dist'],
        ['my-app/dist', ['--batch'], 'my-app', 'dist'],
        ['nuxt-app/.output/public', ['--dry-run'], 'nuxt-app', '.output/public'],
        ['blog/_site', [], 'blog', '_site'],
      ]
      for (const [dir, flags, project, from] of cases) {
        const r = await runCli(['deploy', path.join(root, dir), '--json', ...flags], { env: e })
        assert.equal(r.code, 0, r.stderr)
        assert.equal(r.json.project, project, `${dir} ${flags.join(' ')}`)
        assert.equal(r.stderr, note(project, from), `${dir} ${flags.join(' ')}`)
      }
      // the site built for /blog/ is served as the project blog: the base note has nothing to say
      assert.equal((await s.get(`/${u.username}/blog/assets/main.css`)).text, 'p{}')
      assert.equal((await s.get(`/${u.username}/my-app/`)).text, page('one'))
      assert.equal((await s.get('/api/folders/dist/deploys', { key: u.key })).status, 403, 'no project dist')

      // run in the build folder, deploy . and then deploys and rollback name the same project
      const cwd = path.join(root, 'my-app/dist')
      fs.writeFileSync(path.join(cwd, 'index.html'), page('two'))
      const again = await runCli(['deploy', '.'], { env: e, cwd })
      assert.equal(again.code, 0, again.stderr)
      assert.ok(again.stderr.startsWith(note('my-app', 'dist')), again.stderr)
      const list = await runCli(['deploys', '--json'], { env: e, cwd })
      assert.equal(list.code, 0, list.stderr)
      assert.equal(list.json.project, 'my-app')
      assert.ok(list.json.deploys.length >= 2, list.stdout)
      assert.equal(list.stderr, note('my-app', 'dist'))
      const back = await runCli(['rollback'], { env: e, cwd })
      assert.equal(back.code, 0, back.stderr)
      assert.equal((await s.get(`/${u.username}/my-app/`)).text, page('one'))

      // --project is taken as it is, with nothing said
      const named = await runCli(['deploy', cwd, '--project', 'dist', '--json'], { env: e })
      assert.equal(named.code, 0, named.stderr)
      assert.equal(named.json.project, 'dist')
      assert.equal(named.stderr, '')
      // a project of the build folder's own name exists (deployed so before): left as it is, and said
      const kept = `${note('my-app', 'dist').trimEnd()}; your project dist is left as it is: --project dist deploys there\n`
      const existing = await runCli(['deploy', cwd, '--json'], { env: e })
      assert.equal(existing.code, 0, existing.stderr)
      assert.equal(existing.json.project, 'my-app')
      assert.equal(existing.stderr, kept)
      const listed = await runCli(['deploys', '--json'], { env: e, cwd })
      assert.equal(listed.json.project, 'my-app', listed.stderr)
      assert.equal(listed.stderr, kept)
      // a build folder right in the temporary (or home) folder keeps its own name
      const tmp = await runCli(['deploy', path.join(root, 'dist'), '--json', '--dry-run'], { env: { ...e, TMPDIR: root } })
      assert.equal(tmp.code, 0, tmp.stderr)
      assert.equal(tmp.json.project, 'dist')
      assert.equal(tmp.stderr, '')
    })

    it("prints the server's warning for a form that would send a file's name alone, and deploys", async () => {
      const html = '<!doctype html><form id="apply" method="post" action="https://formspree.io/f/x"><input type="file" name="cv"><button>Send</button></form>'
      const dir = makeTree({ 'index.html': html })
      const r = await runCli(['deploy', dir, '--project', 'apply', '--json'], { env: { ...env, SVC_URL: s.url } })
      assert.equal(r.code, 0, r.stderr)
      const message = `index.html: the form id="apply" has a file input (name="cv") but no enctype="multipart/form-data": a browser sends only the file's name, not the file. Add enctype="multipart/form-data" to the <form>`
      assert.deepEqual(r.json.warnings, [{ path: 'index.html', message }])
      assert.equal(r.stderr, `warning: ${message}\n`)
      assert.equal((await s.get(`/${alice.username}/apply/`)).text, html)
    })

    it("--batch prints each batch's warnings on stderr and lists them in --json; svc page prints its page's", async () => {
      const html = (id: string) =>
        `<!doctype html><form id="${id}" method="post" action="https://formspree.io/f/x"><input type="file" name="cv"><button>Send</button></form>`
      const message = (p: string, id: string) =>
        `${p}: the form id="${id}" has a file input (name="cv") but no enctype="multipart/form-data": a browser sends only the file's name, not the file. Add enctype="multipart/form-data" to the <form>`
      const dir = makeTree({ 'index.html': html('apply'), 'b/later.html': html('later'), 'c.css': 'p {}' })
      const e = { ...env, SVC_URL: s.url }
      // one file per batch: the warnings come from two answers, in path order in the result
      const r = await runCli(['deploy', dir, '--project', 'apply-batch', '--batch', '--batch-files', '1', '--concurrency', '1', '--json'], { env: e })
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.json.warnings, [
        { path: 'b/later.html', message: message('b/later.html', 'later') },
        { path: 'index.html', message: message('index.html', 'apply') },
      ])
      assert.ok(r.stderr.split('\n').includes(`warning: ${message('index.html', 'apply')}`), r.stderr)
      assert.ok(r.stderr.split('\n').includes(`warning: ${message('b/later.html', 'later')}`), r.stderr)
      assert.equal((await s.get(`/${alice.username}/apply-batch/`)).text, html('apply'))
      // plain output: the same lines on stderr, none on stdout
      const plain = await runCli(['deploy', makeTree({ 'index.html': html('apply') }), '--project', 'apply-plain', '--batch'], { env: e })
      assert.equal(plain.code, 0, plain.stderr)
      assert.ok(plain.stderr.split('\n').includes(`warning: ${message('index.html', 'apply')}`), plain.stderr)
      assert.doesNotMatch(plain.stdout, /warning/)
      const page = path.join(makeTree({ 'form.html': html('apply') }), 'form.html')
      const one = await runCli(['page', page], { env: e })
      assert.equal(one.code, 0, one.stderr)
      assert.equal(one.stderr, `warning: ${message('form.html', 'apply')}\n`)
    })

    it('--batch without a root index.html uploads nothing to a project it could not publish', async () => {
      const e = { ...env, SVC_URL: s.url }
      const docs = makeTree({ 'docs/index.html': '<p>docs</p>', 'docs/a.html': '<p>a</p>' })
      const r = await runCli(['deploy', docs, '--project', 'noindex', '--batch', '--json'], { env: e })
      assert.equal(r.code, 1, r.stderr)
      assert.match(r.json.error.message, /has no index\.html at its root, and a project is published only with one \(error 1313\); nothing was uploaded/)
      assert.ok(r.json.error.message.endsWith(`; docs/index.html is in it: deploy that folder, svc deploy ${path.join(docs, 'docs')}`), r.json.error.message)
      assert.equal((await s.get('/api/folders/noindex/files', { key: alice.key })).status, 403, 'no project, no files')
      // a live project keeps its index.html: a folder without one still deploys (its other files)
      const site = makeTree({ 'index.html': page('one') })
      assert.equal((await runCli(['deploy', site, '--project', 'withindex', '--batch'], { env: e })).code, 0)
      const more = await runCli(['deploy', docs, '--project', 'withindex', '--batch'], { env: e })
      assert.equal(more.code, 0, more.stderr)
      assert.equal((await s.get(`/${alice.username}/withindex/docs/a.html`)).text, '<p>a</p>')
    })

    it('a folder whose index.html is one level down sends nothing and names the folder to deploy', async () => {
      const e = { ...env, SVC_URL: s.url }
      // a build sent from its parent: dist/index.html, not index.html
      const parent = makeTree({ 'dist/index.html': page('one'), 'dist/assets/index-one.js': 'console.log(1)', 'README.md': '# app' })
      for (const extra of [[], ['--preview'], ['--dry-run']]) {
        const r = await runCli(['deploy', parent, '--project', 'parent', '--json', ...extra], { env: e })
        assert.equal(r.code, 1, r.stderr)
        assert.equal(r.json.success, false)
        assert.match(r.json.error.message, /has no index\.html at its root, and a deploy needs one \(error 1313\); nothing was sent/)
        assert.ok(r.json.error.message.includes(`dist/index.html is in it: deploy that folder, svc deploy ${path.join(parent, 'dist')}`), r.json.error.message)
      }
      assert.equal((await s.get('/api/folders/parent/deploys', { key: alice.key })).status, 403, 'no project')
      // the folder it names deploys
      assert.equal((await runCli(['deploy', path.join(parent, 'dist'), '--project', 'parent'], { env: e })).code, 0)
      assert.equal((await s.get(`/${alice.username}/parent/`)).text, page('one'))
    })

    it('two files whose names differ only in NFC/NFD form are named in both forms; nothing is deployed', async () => {
      // a tree copied from macOS (decomposed) next to one written on Linux (composed); names
      // that differ only in case are two files, as on the server
      const dir = makeTree({ 'index.html': page('one'), 'caf\u00e9.html': 'composed', 'cafe\u0301.html': 'decomposed', 'About.html': 'A', 'about.html': 'a' })
      const r = await runCli(['deploy', dir, '--project', 'forms', '--json'], { env: { ...env, SVC_URL: s.url } })
      assert.equal(r.code, 1, r.stderr)
      assert.deepEqual(r.json.failed, [
        {
          path: 'caf\u00e9.html',
          reason:
            'two local files have this name in Unicode NFC, "cafe\\u0301.html" and "caf\\u00e9.html" (the same letters, composed and decomposed); keep one',
        },
      ])
      assert.equal((await s.get('/api/folders/forms/deploys', { key: alice.key })).status, 403, 'no project')
    })

    it("an https:// URL naming the server's plain-HTTP port says so, instead of OpenSSL's words", async () => {
      const dir = makeTree({ 'index.html': page('one') })
      const wrong = `https://127.0.0.1:${new URL(s.httpUrl).port}`
      const r = await runCli(['deploy', dir, '--project', 'x', '--json'], { env: { ...env, SVC_URL: wrong } })
      assert.equal(r.code, 1, r.stderr)
      assert.equal(
        r.json.error.message,
        `cannot make a TLS connection to ${wrong}: the port answers without TLS (a plain-HTTP port?); use the server's HTTPS address`,
      )
    })

    it('an http:// URL naming the HTTPS port says the server answered with TLS, at once, for every command', async () => {
      const dir = makeTree({ 'index.html': page('one') })
      const wrong = `http://127.0.0.1:${new URL(s.url).port}`
      for (const args of [
        ['deploy', dir, '--project', 'x', '--json'],
        ['kv', 'get', 'k', '--json'],
      ]) {
        const r = await runCli(args, { env: { ...env, SVC_URL: wrong } })
        assert.equal(r.code, 1, r.stderr)
        assert.equal(r.json.error.message, `cannot talk plain HTTP to ${wrong}: the server answered with TLS; use https://127.0.0.1:${new URL(s.url).port}`)
        assert.doesNotMatch(r.stderr, /retrying/, 'no retries of a request that cannot work')
      }
    })

    it('a tree over the server limits is refused before any file is read; nothing is sent', async () => {
      // 3 GiB in all, over the 2 GiB of a deploy: a sparse file, which costs the disk nothing
      const dir = makeTree({ 'index.html': page('one') })
      fs.closeSync(fs.openSync(path.join(dir, 'disk.img'), 'w'))
      fs.truncateSync(path.join(dir, 'disk.img'), 3 * 1024 ** 3)
      const cache = path.join(s.dataDir, 'cache-limit')
      const r = await runCli(['deploy', dir, '--project', 'huge', '--json'], { env: { ...env, SVC_URL: s.url, SVC_CACHE_DIR: cache } })
      assert.equal(r.code, 1, r.stderr)
      assert.match(
        r.json.error.message,
        /is too large to deploy: 3 GiB in all; the server takes at most 2 GiB \(2147483648 bytes\) per deploy \(error 1328\); nothing was read or sent/,
      )
      // the hashes are cached once the files are read: no cache, no file read
      assert.ok(!fs.existsSync(cache), 'no file was hashed')
      assert.equal((await s.get('/api/folders/huge/deploys', { key: alice.key })).status, 403, 'no project')
    })

    it("names a proxy's HTML error page by its title, with the request and the likely cause, not its markup", async () => {
      const dir = makeTree({ 'index.html': page('one'), 'assets/index-one.js': 'console.log(1)' })
      for (const [status, hint] of [
        [413, /a proxy in front of the server may limit the size of request bodies \(nginx: client_max_body_size\)$/],
        [502, /a proxy's page: is the svc server behind it running\?$/],
        [404, /a proxy's or another server's page: is http:\/\/127\.0\.0\.1:\d+ the address of an svc server\?$/],
      ] as const) {
        const html = await htmlServer(status)
        try {
          for (const args of [
            ['deploy', dir, '--project', 'x'],
            ['deploy', dir, '--project', 'x', '--batch'],
            ['kv', 'get', 'k'],
          ]) {
            const r = await runCli([...args, '--json'], { env: { ...env, SVC_URL: html.url, SVC_RETRY_WAIT_SCALE: '0.01' } })
            const what = `${status} ${args.join(' ')}`
            assert.equal(r.code, 1, what)
            assert.equal(r.json?.success, false, `${what}: ${r.stdout}`)
            const m = r.json.error.message as string
            assert.equal(r.json.error.status, status, what)
            assert.ok(m.startsWith(`GET ${html.url}/`) || m.startsWith(`POST ${html.url}/`), `${what}: ${m}`)
            assert.ok(m.includes(`answered HTTP ${status} with text/html, not JSON ("${status} ${http.STATUS_CODES[status]}"); `), `${what}: ${m}`)
            assert.match(m, hint, what)
            assert.ok(!m.includes('<'), `${what}: no markup: ${m}`)
          }
        } finally {
          await html.close()
        }
      }
    })
  })
}
