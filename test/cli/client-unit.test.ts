import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import fc from 'fast-check'
import { walkFolder } from '../../src/cli/client/files.js'
import { deploy, describeDeploy, multipartSize, planBatches } from '../../src/cli/client/deploy.js'
import { Reporter } from '../../src/cli/client/progress.js'
import { contentTypeFor } from '../../src/util/content-types.js'
import { checkDeployLimits, describeArchive } from '../../src/cli/client/archive.js'
import { normaliseUrl, resolveConnection } from '../../src/cli/client/config.js'
import { parse, sizeOption } from '../../src/cli/client/args.js'
import { kvValue } from '../../src/cli/client/commands/kv.js'
import { submissionRows } from '../../src/cli/client/commands/forms.js'
import { toCsv } from '../../src/util/csv.js'
import { ApiError } from '../../src/cli/client/errors.js'
import { ApiClient } from '../../src/cli/client/api.js'
import { makeTree } from './run.js'

describe('client: folder walk and ignore rules', () => {
  it('honours .gitignore and .svcignore (nested, negation), skips .git/, dotfiles and outside symlinks', async () => {
    const dir = makeTree({
      'index.html': '<h1>hi</h1>',
      'css/site.css': 'body{}',
      '.env': 'SECRET=1',
      '.git/HEAD': 'ref: refs/heads/main',
      '.git/config': '[core]',
      'deep/.git/HEAD': 'x',
      '.cache/x.js': 'x',
      '.gitignore': 'build/\n*.log\n',
      '.svcignore': '!keep.log\ndrafts/\n',
      'build/out.js': 'x',
      'debug.log': 'x',
      'keep.log': 'x',
      'drafts/a.html': 'x',
      'sub/.gitignore': '*.tmp\n',
      'sub/x.tmp': 'x',
      'sub/ok.txt': 'ok',
      'other/y.tmp': 'not ignored here: the rule is sub/ only',
    })
    fs.symlinkSync('/etc/hostname', path.join(dir, 'outside-link'))
    fs.symlinkSync('index.html', path.join(dir, 'inside-link.html'))
    const warnings: string[] = []
    const r = await walkFolder(dir, { warn: (m) => warnings.push(m) })
    assert.deepEqual(r.files.map((f) => f.path).sort(), ['css/site.css', 'index.html', 'inside-link.html', 'keep.log', 'other/y.tmp', 'sub/ok.txt'])
    assert.ok(warnings.some((w) => w.includes('outside-link')))
    // --dotfiles brings dotfiles back, but never .git/
    const withDots = await walkFolder(dir, { dotfiles: true })
    const paths = withDots.files.map((f) => f.path)
    assert.ok(paths.includes('.env') && paths.includes('.cache/x.js') && paths.includes('.gitignore'))
    assert.ok(!paths.some((p) => p.startsWith('.git/') || p.includes('/.git/')))
  })

  it("never sends git's own entry, a folder or the file a worktree or submodule has, whatever --dotfiles or ignore files say", async () => {
    // each row: a place git's entry takes in a site's folder
    const rows: Array<[what: string, tree: Record<string, string>]> = [
      ['a repository folder', { '.git/HEAD': 'ref: refs/heads/main' }],
      ['a worktree (.git is a file)', { '.git': 'gitdir: /home/me/src/site/.git/worktrees/gh-pages\n' }],
      ['a submodule below the root', { 'themes/t/.git': 'gitdir: ../../.git/modules/themes/t\n', 'themes/t/a.css': 'x' }],
      ['a folder of another case', { '.GIT/config': '[core]' }],
    ]
    for (const [what, tree] of rows) {
      const dir = makeTree({ 'index.html': 'x', '.nojekyll': '', '.svcignore': '!.git\n!.git/\n', ...tree })
      for (const dotfiles of [false, true]) {
        const paths = (await walkFolder(dir, { dotfiles })).files.map((f) => f.path)
        assert.ok(!paths.some((p) => /(^|\/)\.git(\/|$)/i.test(p)), `${what}, dotfiles ${dotfiles}: ${paths.join(', ')}`)
        assert.equal(paths.includes('.nojekyll'), dotfiles, `${what}: other dotfiles follow --dotfiles`)
      }
    }
  })

  it('lets .svcignore bring back a dot-directory and normalises names to NFC', async () => {
    const dir = makeTree({ 'index.html': 'x', '.cache/k.json': 'x', '.svcignore': '!.cache/\n', ['e\u0301.txt']: 'x' })
    const r = await walkFolder(dir)
    assert.deepEqual(r.files.map((f) => f.path).sort(), ['.cache/k.json', 'index.html', '\u00e9.txt'].sort())
  })

  it('deploys .well-known/ without --dotfiles (its own dotfiles stay out), unless an ignore file leaves it out', async () => {
    const tree = { 'index.html': 'x', '.well-known/security.txt': 'x', '.well-known/.draft': 'x', 'docs/.well-known/assetlinks.json': 'x', '.env': 'x' }
    const r = await walkFolder(makeTree(tree))
    assert.deepEqual(r.files.map((f) => f.path).sort(), ['.well-known/security.txt', 'docs/.well-known/assetlinks.json', 'index.html'])
    const left = await walkFolder(makeTree({ ...tree, '.svcignore': '.well-known/\n' }))
    assert.deepEqual(left.files.map((f) => f.path).sort(), ['index.html'])
  })

  it('leaves out node_modules/ and __MACOSX/ at any depth, whatever --dotfiles, and lists those no rule of the user named', async () => {
    const tree = {
      'index.html': 'x',
      'node_modules/lib/index.js': 'x',
      'node_modules/.bin/lib': 'x',
      'tools/node_modules/dep/a.js': 'x',
      '__MACOSX/._index.html': 'x',
      'app/main.js': 'x',
    }
    for (const dotfiles of [false, true]) {
      const r = await walkFolder(makeTree(tree), { dotfiles })
      assert.deepEqual(r.files.map((f) => f.path).sort(), ['app/main.js', 'index.html'])
      assert.deepEqual(r.leftOut.sort(), ['__MACOSX/', 'node_modules/', 'tools/node_modules/'])
      assert.equal(r.ignoredCount, 3)
    }
    // a folder the user's own rules leave out is theirs to know: not listed again
    const own = await walkFolder(makeTree({ ...tree, '.gitignore': 'node_modules/\n' }))
    assert.deepEqual(own.leftOut.sort(), ['__MACOSX/'])
    // a negation in .svcignore deploys it (below the root too)
    const back = await walkFolder(makeTree({ ...tree, '.svcignore': '!node_modules/\n' }))
    assert.deepEqual(back.files.map((f) => f.path).sort(), ['app/main.js', 'index.html', 'node_modules/lib/index.js', 'tools/node_modules/dep/a.js'])
    assert.deepEqual(back.leftOut, ['__MACOSX/'])
    // a file of that name is no folder of packages
    const file = await walkFolder(makeTree({ 'index.html': 'x', 'docs/node_modules': 'a page about them' }))
    assert.deepEqual(file.files.map((f) => f.path).sort(), ['docs/node_modules', 'index.html'])
  })

  it('reports names the upload cannot carry instead of sending them', async () => {
    const dir = makeTree({ 'index.html': 'x', 'a"b.html': 'x', 'c\\d.html': 'x', 'p%41.txt': 'x', '100% sure.txt': 'x' })
    const r = await walkFolder(dir)
    assert.deepEqual(r.files.map((f) => f.path).sort(), ['100% sure.txt', 'index.html'])
    assert.deepEqual(r.invalid.map((f) => f.path).sort(), ['a"b.html', 'c\\d.html', 'p%41.txt'])
    assert.match(r.invalid.find((f) => f.path === 'p%41.txt')!.reason, /%XX sequence; rename the file/)
    // a tar entry (an archive deploy) carries a double quote as it is
    const tar = await walkFolder(dir, { multipart: false })
    assert.deepEqual(tar.files.map((f) => f.path).sort(), ['100% sure.txt', 'a"b.html', 'index.html'])
  })

  it('reports a name that is not UTF-8 as it does a control character, unless an ignore rule leaves it out', async (t) => {
    const dir = makeTree({ 'index.html': 'x', 'a\u0001.html': 'x', '.svcignore': 'skip*.txt\n' })
    // names as bytes (0xE9 is Latin-1 é, 0xFF and 0xFE are never UTF-8)
    const bytes = (...parts: Array<string | number>) =>
      Buffer.concat([Buffer.from(dir + path.sep), ...parts.map((p) => (typeof p === 'number' ? Buffer.from([p]) : Buffer.from(p)))])
    try {
      fs.writeFileSync(bytes('caf', 0xe9, '.html'), 'x')
    } catch {
      return t.skip('this file system refuses names that are not UTF-8')
    }
    fs.mkdirSync(bytes('d', 0xff))
    fs.writeFileSync(bytes('d', 0xff, '/in.html'), 'x')
    fs.writeFileSync(bytes('skip', 0xfe, '.txt'), 'x')
    // a link with a UTF-8 name to that folder is walked through the link
    fs.symlinkSync(Buffer.from([0x64, 0xff]), path.join(dir, 'via'))
    const r = await walkFolder(dir)
    assert.deepEqual(r.files.map((f) => f.path).sort(), ['index.html', 'via/in.html'])
    const notUtf8 = 'the name is not valid UTF-8; rename the file'
    assert.deepEqual(
      r.invalid.sort((a, b) => (a.path < b.path ? -1 : 1)),
      [
        { path: 'a\u0001.html', reason: 'the name contains a control character' },
        { path: 'caf\ufffd.html', reason: notUtf8 },
        { path: 'd\ufffd/', reason: notUtf8 },
      ],
    )
  })
})

describe('client: deploy summaries', () => {
  it('count one file as one file', () => {
    const base = { project: 'p', files: 1, bytes: 11, ignored: 0, uploaded: ['index.html'], uploaded_bytes: 11, unchanged: 0, failed: [], dry_run: true }
    assert.match(describeArchive({ ...base, copies: 0 } as unknown as Parameters<typeof describeArchive>[0]), /^p: 1 file \(/)
    assert.match(describeDeploy({ ...base, deleted: [], extra: [] } as unknown as Parameters<typeof describeDeploy>[0]), /^p: 1 file \(/)
    assert.match(describeArchive({ ...base, files: 2, copies: 0 } as unknown as Parameters<typeof describeArchive>[0]), /^p: 2 files \(/)
  })
})

describe('client: archive deploy limits', () => {
  it("asks the server's limits only for a large tree, and refuses one over them by count or bytes", async () => {
    const asked: string[] = []
    const api = {
      get: async (p: string) => {
        asked.push(p)
        return { status: 200, json: { success: true, data: { max_files: 50_000, max_deploy_bytes: 2 ** 31 } } }
      },
    } as unknown as ApiClient
    await checkDeployLimits(api, 10_000, 1000, 'site')
    assert.deepEqual(asked, [], 'a small tree is not asked about')
    await checkDeployLimits(api, 50_000, 2 ** 31, 'site')
    assert.deepEqual(asked, ['/api/folders/deploy_limits'])
    await assert.rejects(checkDeployLimits(api, 50_001, 1000, 'site'), {
      message: /^site is too large to deploy: 50001 files; the server takes at most 50000 per deploy \(error 1328\); nothing was read or sent/,
    })
    await assert.rejects(checkDeployLimits(api, 3, 2 ** 31 + 1, 'site'), { message: /2 GiB in all; the server takes at most 2 GiB \(2147483648 bytes\)/ })
    const none = { get: async () => ({ status: 404, json: { success: false, error_code: 1404 } }) } as unknown as ApiClient
    await checkDeployLimits(none, 60_000, 0, 'site')
  })
})

describe('client: upload batches', () => {
  it('never exceeds the files or bytes per request, keeps every file once, reports what cannot fit', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 5000 }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 800, max: 20000 }),
        fc.option(fc.integer({ min: 1, max: 6000 }), { nil: null }),
        (sizes, maxFiles, maxBytes, maxFile) => {
          const files = sizes.map((size, i) => ({ path: `dir/f${i}.bin`, abs: '', size, sha256: '' }))
          const plan = planBatches(files, { max_files_per_request: maxFiles, max_request_bytes: maxBytes, max_file_bytes: maxFile })
          for (const b of plan.batches) {
            assert.ok(b.length >= 1 && b.length <= maxFiles)
            assert.ok(multipartSize(b) <= maxBytes)
          }
          const seen = [...plan.batches.flat().map((f) => f.path), ...plan.tooLarge.map((f) => f.path)].sort()
          assert.deepEqual(seen, files.map((f) => f.path).sort())
          for (const t of plan.tooLarge) {
            const f = files.find((x) => x.path === t.path)!
            assert.ok((maxFile !== null && f.size > maxFile) || multipartSize([f]) > maxBytes)
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('client: configuration, arguments, values', () => {
  it('takes flags over the environment over the config file, and refuses plain http off loopback', () => {
    const stored = { url: 'https://stored.example', key: 'svc_stored', insecure: true, session: 'session=abc' }
    const c1 = resolveConnection({}, {}, stored)
    assert.equal(c1.url, 'https://stored.example')
    assert.equal(c1.key, 'svc_stored')
    assert.equal(c1.insecure, true)
    assert.equal(c1.session, 'session=abc')
    const c2 = resolveConnection({}, { SVC_URL: 'https://env.example/', SVC_API_KEY: 'svc_env' }, stored)
    assert.deepEqual([c2.url, c2.key, c2.source.key, c2.insecure, c2.session], ['https://env.example', 'svc_env', 'env', false, undefined])
    const c3 = resolveConnection({ key: 'svc_flag' }, { SVC_API_KEY: 'svc_env', SVC_INSECURE: '1' }, stored)
    assert.deepEqual([c3.key, c3.source.key, c3.insecure], ['svc_flag', 'flag', true])
    assert.throws(() => resolveConnection({}, {}, {}), /no server configured/)
    assert.throws(() => normaliseUrl('http://example.com'), /plain http/)
    assert.equal(normaliseUrl('http://127.0.0.1:8080/'), 'http://127.0.0.1:8080')
    assert.throws(() => normaliseUrl('https://user:pw@example.com'), /credentials/)
  })

  it('sends the stored key only to the stored server', () => {
    const stored = { url: 'https://stored.example/', key: 'svc_stored', session: 'session=abc' }
    // another server named by --url or SVC_URL gets no key from the file
    for (const [flags, env] of [
      [{ url: 'https://other.example' }, {}],
      [{}, { SVC_URL: 'https://other.example' }],
    ] as const) {
      const c = resolveConnection(flags, env, stored)
      assert.deepEqual([c.key, c.session, c.keyServer], [undefined, undefined, 'https://stored.example'])
    }
    // the same server however it is written, or a key given for the other one
    assert.equal(resolveConnection({ url: 'HTTPS://Stored.Example' }, {}, stored).key, 'svc_stored')
    assert.equal(resolveConnection({ url: 'https://other.example' }, { SVC_API_KEY: 'svc_env' }, stored).key, 'svc_env')
  })

  it('parses negative numbers as values and sizes with units', () => {
    assert.deepEqual(parse(['hits', '-1'], {}).positionals, ['hits', '-1'])
    assert.equal(parse(['hits', '--by', '-5'], { by: { type: 'string', help: 'x' } }).values.by, '-5')
    assert.equal(sizeOption('5MB', 'x'), 5_000_000)
    assert.equal(sizeOption('4MiB', 'x'), 4 * 1024 * 1024)
    assert.throws(() => parse(['--nope'], {}), /unknown option --nope \(and the connection options/)
    // a mistyped option is named, with the ones the command takes (not Node's '-- "--flag"' advice)
    assert.throws(
      () => parse(['--projcet', 'x'], { project: { type: 'string', help: 'x' }, preview: { type: 'boolean', help: 'x' } }),
      (e: Error) => /unknown option --projcet; this command takes --project, --preview/.test(e.message) && !e.message.includes('-- "'),
    )
  })

  it('infers kv value types', () => {
    assert.deepEqual(kvValue('{"a":1}', undefined), { value: { a: 1 }, data_type: 'json' })
    // a whole number a double cannot hold exactly is refused, never stored as another number
    for (const type of ['number', 'json']) assert.throws(() => kvValue('12345678901234567890', type), /cannot be stored exactly as a number.*--type text/)
    // without a type it is inferred as text, every digit kept
    assert.deepEqual(kvValue('12345678901234567890', undefined), { value: '12345678901234567890', data_type: 'text' })
    assert.deepEqual(kvValue('12345678901234567890', 'text'), { value: '12345678901234567890', data_type: 'text' })
    assert.deepEqual(kvValue('9007199254740991', undefined), { value: 9007199254740991, data_type: 'number' })
    assert.deepEqual(kvValue('hello', undefined), { value: 'hello', data_type: 'text' })
    assert.deepEqual(kvValue('42', 'number'), { value: 42, data_type: 'number' })
    assert.deepEqual(kvValue('-3.5', undefined), { value: -3.5, data_type: 'number' })
    assert.deepEqual(kvValue('42', 'json'), { value: 42, data_type: 'json' })
    assert.deepEqual(kvValue('42', 'text'), { value: '42', data_type: 'text' })
    assert.throws(() => kvValue('x', 'number'))
    assert.throws(() => kvValue('{bad', 'json'))
  })

  it('writes RFC 4180 CSV and defuses formulas', () => {
    const rows = submissionRows({
      form: { fields_config: [{ name: 'email' }] },
      submissions: [{ id: 's1', created_at: 't', is_read: false, data: { email: 'a@b', note: '=HYPERLINK("x")', n: '-3' } }],
    })
    assert.equal(toCsv(rows), 'id,created_at,is_read,email,note,n\r\ns1,t,false,a@b,"\'=HYPERLINK(""x"")",-3\r\n')
  })

  it('names a field like a fixed column data.<name>, every header once (decision 137)', () => {
    const rows = submissionRows({
      form: { fields_config: [] },
      submissions: [{ id: 's1', created_at: 't', is_read: true, data: { id: 'visitor', is_read: 'no', msg: 'hi' } }],
    })
    assert.equal(toCsv(rows), 'id,created_at,is_read,data.id,data.is_read,msg\r\ns1,t,true,visitor,no,hi\r\n')
  })

  it('gives a field named like an Object.prototype member only the values sent in it', () => {
    // as the server's JSON export reads: "__proto__" an own key of the first submission only
    const rows = submissionRows(
      JSON.parse(
        '{"form":{},"submissions":[{"id":"a","created_at":"t","is_read":false,"data":{"__proto__":"p","constructor":"c"}},{"id":"b","created_at":"t","is_read":false,"data":{"msg":"m"}}]}',
      ),
    )
    assert.equal(toCsv(rows), 'id,created_at,is_read,__proto__,constructor,msg\r\na,t,false,p,c,\r\nb,t,false,,,m\r\n')
  })

  it('reads the three error formats and retry_after', () => {
    const a = ApiError.from(429, { success: false, error_code: 1204, error_type: 'QUOTA_ERROR', message: 'slow', solution: 'wait', retry_after: 7 }, '', {})
    assert.equal(a.retryAfter, 7)
    assert.match(a.describe(), /^error 1204 \(QUOTA_ERROR, HTTP 429\): slow\n {2}wait$/)
    const b = ApiError.from(400, { success: false, error_code: 'NO_FILE', message: 'no file' }, '', {})
    assert.equal(b.code, 'NO_FILE')
    const h = ApiError.from(429, {}, 'busy', { 'retry-after': '3' })
    assert.equal(h.retryAfter, 3)
    const r = ApiError.from(302, undefined, '', { location: '/login' })
    assert.match(r.message, /redirect to \/login/)
  })
})

describe('client: which failed requests are sent again', () => {
  // a real HTTP server on loopback that answers each request by the handler's plan
  async function withServer(
    plan: (n: number, req: http.IncomingMessage, res: http.ServerResponse) => void,
    body: (api: ApiClient, seen: string[], notes: string[]) => Promise<void>,
  ) {
    const seen: string[] = []
    const server = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        seen.push(`${req.method} ${req.url}`)
        plan(seen.length, req, res)
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const { port } = server.address() as AddressInfo
    const notes: string[] = []
    const api = new ApiClient(
      { url: `http://127.0.0.1:${port}`, key: 'k', insecure: false, source: { url: 'flag' } },
      { waitScale: 0.001, notify: (m) => notes.push(m) },
    )
    try {
      await body(api, seen, notes)
    } finally {
      await api.close()
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
    }
  }
  const json = (res: http.ServerResponse, status: number, data: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(JSON.stringify(data))
  }
  const ok = (res: http.ServerResponse) => json(res, 200, { success: true, data: { value: 1 } })
  const gateway = (res: http.ServerResponse) => json(res, 504, { success: false, error_code: 'GATEWAY', message: 'upstream timed out' })

  for (const status of [502, 503, 504]) {
    it(`does not repeat an increment after a ${status}: it may have been counted`, async () => {
      await withServer(
        (_n, _req, res) => json(res, status, { success: false, error_code: 'X', message: 'unavailable' }),
        async (api, seen, notes) => {
          const e = await api.post('/svc_api/data/incr', { json: { key: 'k', by: 1 } }).catch((err: unknown) => err)
          assert.ok(e instanceof ApiError)
          assert.equal(e.status, status)
          assert.deepEqual(seen, ['POST /svc_api/data/incr'])
          assert.ok(
            notes.some((m) => /may or may not have taken effect/.test(m)),
            notes.join('\n'),
          )
        },
      )
    })
  }

  it('repeats a read and an idempotent POST after a 504', async () => {
    await withServer(
      (n, _req, res) => (n % 2 === 1 ? gateway(res) : ok(res)),
      async (api, seen) => {
        assert.equal((await api.get('/svc_api/data/get', { query: { key: 'k' } })).status, 200)
        assert.equal((await api.post('/svc_api/data/store', { json: { key: 'k', value: 1 }, idempotent: true })).status, 200)
        assert.deepEqual(seen, ['GET /svc_api/data/get?key=k', 'GET /svc_api/data/get?key=k', 'POST /svc_api/data/store', 'POST /svc_api/data/store'])
      },
    )
  })

  it('does not repeat an increment whose connection broke after it was sent', async () => {
    await withServer(
      (_n, req) => req.socket.destroy(),
      async (api, seen, notes) => {
        await assert.rejects(api.post('/svc_api/data/incr', { json: { key: 'k', by: 1 } }), /failed/)
        assert.deepEqual(seen, ['POST /svc_api/data/incr'])
        assert.ok(
          notes.some((m) => /may or may not have taken effect/.test(m)),
          notes.join('\n'),
        )
      },
    )
  })

  it('repeats an increment refused with 429, and one whose kept-alive connection was reset', async () => {
    await withServer(
      (n, req, res) => {
        if (n === 1) json(res, 429, { success: false, error_code: 1005, message: 'slow down', retry_after: 1 })
        else if (n === 3)
          req.socket.destroy() // the second request on the kept-alive connection
        else ok(res)
      },
      async (api, seen) => {
        assert.equal((await api.post('/svc_api/data/incr', { json: { key: 'k', by: 1 } })).status, 200)
        assert.equal((await api.post('/svc_api/data/incr', { json: { key: 'k', by: 1 } })).status, 200)
        assert.equal(seen.length, 4)
      },
    )
  })
})

describe('client: the batch deploy labels each file part', () => {
  it('with the type the server gives the file (.cjs is JavaScript, a bare "html" has none)', async () => {
    const dir = makeTree({ 'index.html': '<p>x</p>', 'lib.cjs': 'module.exports = 1', 'favicon.ico': Buffer.from([0, 0, 1, 0]), html: 'x', 'a.css': 'b{}' })
    // a loopback server that answers the batch uploads and records each part's header; 404 to the rest
    const parts = new Map<string, string>()
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        res.setHeader('content-type', 'application/json')
        if (req.method === 'POST' && req.url?.endsWith('/batch_upload')) {
          const body = Buffer.concat(chunks).toString('latin1')
          for (const m of body.matchAll(/filename="([^"]*)"\r\nContent-Type: ([^\r]*)\r\n/g)) parts.set(m[1], m[2])
          res.end(JSON.stringify({ success: true, failed_files: [], errors: [] }))
        } else {
          res.statusCode = 404
          res.end(JSON.stringify({ success: false, error_code: 1404, message: 'no such endpoint' }))
        }
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const { port } = server.address() as AddressInfo
    const api = new ApiClient({ url: `http://127.0.0.1:${port}`, key: 'k', insecure: false, source: { url: 'flag' } }, { waitScale: 0.001 })
    const quiet = new Reporter(true, fs.createWriteStream('/dev/null') as unknown as NodeJS.WriteStream)
    try {
      await deploy(api, { dir, project: 'site', publish: false, delete: false, dryRun: false, dotfiles: false, concurrency: 1 }, quiet)
    } finally {
      await api.close()
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
    }
    assert.deepEqual([...parts.keys()].sort(), ['a.css', 'favicon.ico', 'html', 'index.html', 'lib.cjs'])
    // the server's table without the charset (the client does not read the bytes for it)
    for (const [name, type] of parts) assert.equal(type, contentTypeFor(name, false), name)
    assert.equal(parts.get('lib.cjs'), 'text/javascript')
    assert.equal(parts.get('html'), 'application/octet-stream')
  })
})
