import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startServer, type TestServer } from '../support/server.js'
import { svc } from '../support/images.js'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch']
const LIMITS = { minute: 100000, hour: 100000, day: 100000, concurrent: 100 }

type Op = { method: string; path: string; operationId: string; security: Array<Record<string, string[]>>; responses: Record<string, unknown> }

/**
 * The OpenAPI document is clean (Redocly's recommended rules, as `npm run lint:openapi` runs
 * them) and its security requirements are the ones the API guard enforces.
 */
describe('the OpenAPI document', () => {
  let s: TestServer
  let doc: any
  const ops: Op[] = []
  let tmp = ''
  before(async () => {
    s = await startServer({ engine: 'sqlite', env: { RATE_LIMITS: JSON.stringify({ default: LIMITS, authenticated: LIMITS }) } })
    doc = (await s.get('/openapi.json')).json
    for (const [p, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const m of METHODS) if (item[m]) ops.push({ method: m.toUpperCase(), path: p, ...item[m] })
    }
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-openapi-'))
  })
  after(async () => {
    await s.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  it("compiles every route's input and answer schemas (they compile on first use)", () => {
    // a schema that cannot compile would otherwise show only on the first request that uses it
    assert.doesNotThrow(() => s.app.compileSchemas())
  })

  it("passes Redocly's recommended rules with no error (offline)", () => {
    const file = path.join(tmp, 'openapi.json')
    fs.writeFileSync(file, JSON.stringify(doc))
    const r = spawnSync(
      path.join(root, 'node_modules', '.bin', 'redocly'),
      ['lint', file, '--config', path.join(root, 'redocly.yaml'), '--format', 'json', '--max-problems', '1000'],
      {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
    )
    const out = JSON.parse(r.stdout.slice(r.stdout.indexOf('{')))
    const problems = (out.problems as Array<{ ruleId: string; severity: string; message: string }>).map((p) => `${p.severity} ${p.ruleId}: ${p.message}`)
    assert.equal(out.totals.errors, 0, problems.join('\n'))
    // the one warning left: the project has not chosen a license to declare
    assert.deepEqual(
      problems.filter((p) => !p.includes('info-license')),
      [],
    )
  })

  it('gives every operation a unique operationId, a security requirement and a 4xx answer', () => {
    assert.ok(ops.length >= 50, `${ops.length} operations`)
    assert.equal(new Set(ops.map((o) => o.operationId)).size, ops.length)
    for (const o of ops) {
      assert.ok(Array.isArray(o.security), `${o.method} ${o.path}: security`)
      assert.ok(
        Object.keys(o.responses).some((c) => c.startsWith('4')),
        `${o.method} ${o.path}: 4xx`,
      )
    }
    assert.ok(doc.servers?.length >= 1)
  })

  it('declares the 304 and 412 of conditional reads, with the generic 4XX kept', () => {
    const op = (method: string, p: string) => ops.find((o) => o.method === method && o.path === p) as any
    const headersOf = (o: any) =>
      (o.parameters ?? [])
        .filter((x: any) => x.in === 'header')
        .map((x: any) => x.name.toLowerCase())
        .sort()
    const get = op('GET', '/svc_api/data/get')
    assert.deepEqual(Object.keys(get.responses).sort(), ['200', '304', '412', '4XX', '5XX'])
    assert.equal(get.responses['4XX'].$ref, '#/components/responses/Error')
    // the service's own failures (503 with the database down) answer in the same format
    assert.equal(get.responses['5XX'].$ref, '#/components/responses/Error')
    assert.deepEqual(headersOf(get), ['if-match', 'if-none-match'])
    // the reads and links that answer 304 and 412: no body, the ETag they send
    const tagged = [
      ['GET', '/svc_api/data/get'],
      ['GET', '/svc_api/data/public/{username}/{key}'],
      ['GET', '/svc_api/data/public-list/{username}'],
      ...['/image-host/pub/{token}', '/svc-img/pub/{token}', '/hosted-data/pub/{token}', '/svc-data/pub/{token}'].flatMap((p) => [
        ['GET', p],
        ['HEAD', p],
      ]),
    ]
    for (const [m, p] of tagged) {
      const o = op(m, p)
      assert.ok(o, `${m} ${p}`)
      for (const code of ['304', '412']) {
        assert.ok(o.responses[code], `${m} ${p}: ${code}`)
        assert.equal(o.responses[code].content, undefined, `${m} ${p}: ${code} has no body`)
        assert.ok(o.responses[code].headers?.ETag, `${m} ${p}: ${code} ETag`)
      }
      assert.ok(o.responses['4XX'], `${m} ${p}: 4XX`)
      for (const h of ['if-match', 'if-none-match']) assert.ok(headersOf(o).includes(h), `${m} ${p}: ${h}`)
    }
    // the legacy read has no ETag: If-Match other than * fails, nothing is ever unchanged
    const legacy = op('GET', '/svc_api/data/public/{key}')
    assert.deepEqual(Object.keys(legacy.responses).sort(), ['200', '412', '4XX', '5XX'])
    assert.equal(legacy.responses['412'].headers, undefined)
    assert.deepEqual(headersOf(legacy), ['if-match'])
  })

  it('declares the multipart form of every upload, with its file parts', () => {
    // without a request body a generated client cannot send the upload at all
    const forms = ops.filter((o: any) => o.requestBody?.content?.['multipart/form-data'])
    assert.deepEqual(forms.map((o) => `${o.method} ${o.path}`).sort(), [
      'POST /api/folders/{folder_path}/batch_upload',
      'POST /api/hosted-data/files',
      'POST /api/hosted-data/files/{file_id}/versions',
      'POST /api/image-host/images/{public_token}/replace',
      'POST /api/image-host/upload',
      'POST /svc_api/upload',
    ])
    for (const o of forms as any[]) {
      const form = o.requestBody.content['multipart/form-data'].schema
      const binary = (p: any) => p?.format === 'binary' || p?.items?.format === 'binary'
      assert.ok(form.required.length === 1 && binary(form.properties[form.required[0]]), `${o.method} ${o.path}: its file part`)
    }
  })

  it('declares the query parameters every public link reads', () => {
    // a generated client builds the query from these: ?v=N and ?v=latest on data links, the
    // variants and the versioned URL's v on image links
    const want: Record<string, string[]> = {
      'svc-data': ['v'],
      'hosted-data': ['v'],
      'svc-img': ['format', 'h', 'v', 'w'],
      'image-host': ['format', 'h', 'v', 'w'],
    }
    for (const l of ops.filter((o) => o.path.includes('/pub/'))) {
      const query = ((l as any).parameters ?? []).filter((x: any) => x.in === 'query')
      assert.deepEqual(query.map((x: any) => x.name).sort(), want[l.path.split('/')[1]], `${l.method} ${l.path}`)
      for (const q of query) assert.equal(q.required, false, `${l.method} ${l.path}: ${q.name} is optional`)
    }
  })

  it("declares the data link's X-Data-Version on every answer it sends it with", async () => {
    // the header a page reads to pin the version it got (exposed to other origins)
    const u = await s.user()
    const cookie = await s.login(u.username, u.password)
    await svc(s, 'grant', u.username, 'hosted-data')
    const f = await s.request('POST', '/api/hosted-data/files', { cookie, json: { display_name: 'v.txt', content: 'hello' } })
    const link = new URL(f.json.file.public_url as string).pathname
    const tag = (await s.get(link)).headers.etag as string
    const sent: Record<string, Record<string, string>> = {
      '200': {},
      '206': { range: 'bytes=0-1' },
      '304': { 'if-none-match': tag },
      '412': { 'if-match': '"x"' },
      '416': { range: 'bytes=99-' },
    }
    for (const [status, headers] of Object.entries(sent)) {
      const r = await s.get(link, { headers })
      assert.equal(String(r.status), status)
      assert.equal(r.headers['x-data-version'], '1', status)
      for (const p of ['/svc-data/pub/{token}', '/hosted-data/pub/{token}'])
        for (const m of ['get', 'head'])
          assert.equal(doc.paths[p][m].responses[status].headers?.['X-Data-Version']?.schema?.type, 'integer', `${m} ${p} ${status}`)
    }
  })

  it('declares Range and If-Range, the 206 and the 416 on every public link that honours them', () => {
    // the public links answer ranges (src/http/representation.ts replyRange); the sites' public
    // host is no operation of the document
    const links = ops.filter((o) => o.path.includes('/pub/'))
    assert.deepEqual(links.map((o) => `${o.method} ${o.path}`).sort(), [
      'GET /hosted-data/pub/{token}',
      'GET /image-host/pub/{token}',
      'GET /svc-data/pub/{token}',
      'GET /svc-img/pub/{token}',
      'HEAD /hosted-data/pub/{token}',
      'HEAD /image-host/pub/{token}',
      'HEAD /svc-data/pub/{token}',
      'HEAD /svc-img/pub/{token}',
    ])
    for (const l of links) {
      const o = l as any
      const what = `${l.method} ${l.path}`
      const headers = new Map<string, any>((o.parameters ?? []).filter((x: any) => x.in === 'header').map((x: any) => [x.name.toLowerCase(), x]))
      for (const h of ['range', 'if-range']) {
        assert.ok(headers.get(h), `${what}: ${h}`)
        assert.equal(headers.get(h).required, false, `${what}: ${h} is optional`)
        assert.equal(headers.get(h).schema.type, 'string', `${what}: ${h}`)
      }
      const ok = o.responses['200']
      const partial = o.responses['206']
      assert.ok(partial, `${what}: 206`)
      // a HEAD answer has no body (checked below); a GET's 206 is bytes of the 200's media type
      if (l.method === 'GET') {
        assert.deepEqual(Object.keys(partial.content ?? {}), Object.keys(ok.content), `${what}: 206 is of the 200's media type`)
        for (const media of Object.values<any>(partial.content)) assert.deepEqual(media.schema, { type: 'string', format: 'binary' }, what)
      }
      assert.ok(partial.headers?.['Content-Range'], `${what}: 206 Content-Range`)
      assert.match(partial.headers['Content-Range'].description, /`bytes first-last\/size`/, what)
      assert.ok(partial.headers.ETag, `${what}: 206 ETag`)
      const unsatisfiable = o.responses['416']
      assert.ok(unsatisfiable, `${what}: 416`)
      assert.equal(unsatisfiable.content, undefined, `${what}: 416 has no body`)
      assert.ok(unsatisfiable.headers?.['Content-Range'], `${what}: 416 Content-Range`)
      assert.match(unsatisfiable.headers['Content-Range'].description, /`bytes \*\/size`/, what)
      // the errors keep their shared answer beside the route's own 4xx
      assert.ok(o.responses['4XX'], `${what}: 4XX`)
      // the 200 says ranges are taken
      assert.equal(ok.headers?.['Accept-Ranges']?.schema?.const, 'bytes', `${what}: Accept-Ranges`)
    }
  })

  it('declares no body on any HEAD answer, with the status codes and headers of its GET', () => {
    const heads = ops.filter((o) => o.method === 'HEAD')
    assert.ok(heads.length >= 4, `${heads.length} HEAD operations`)
    /** A response as declared, or the shared one it refers to. */
    const resolve = (r: any) => (typeof r?.$ref === 'string' ? doc.components.responses[r.$ref.split('/').pop()] : r)
    for (const h of heads) {
      const get = ops.find((o) => o.method === 'GET' && o.path === h.path) as any
      assert.ok(get, `GET ${h.path}`)
      assert.deepEqual(Object.keys(h.responses).sort(), Object.keys(get.responses).sort(), `HEAD ${h.path}: the GET's status codes`)
      for (const [code, r] of Object.entries<any>(h.responses)) {
        assert.equal(resolve(r).content, undefined, `HEAD ${h.path}: ${code} declares no body`)
        assert.deepEqual(resolve(r).headers, resolve(get.responses[code]).headers, `HEAD ${h.path}: ${code} headers`)
      }
    }
    // the GETs keep their bodies: the 200 and 206 of a link, the shared error
    const get = ops.find((o) => o.method === 'GET' && o.path === '/svc-img/pub/{token}') as any
    for (const code of ['200', '206']) assert.ok(get.responses[code].content, `GET: ${code} body`)
    assert.ok(resolve(get.responses['4XX']).content, 'GET: 4XX body')
  })

  it('declares the security the guard enforces: none, API key or session, or session only', async () => {
    const u = await s.user()
    const api = ops.filter((o) => /^\/(svc_api|api)\//.test(o.path))
    assert.ok(api.length >= 40)
    for (const o of api) {
      const url = o.path.replace(/\{[^}]+\}/g, 'x')
      const schemes = o.security
        .flatMap((r) => Object.keys(r))
        .sort()
        .join(',')
      const anon = await s.request(o.method, url, { headers: { accept: 'application/json' } })
      const withKey = await s.request(o.method, url, { key: u.key, headers: { accept: 'application/json' } })
      const what = `${o.method} ${o.path} [${schemes || 'public'}]: ${anon.status} / ${withKey.status} ${withKey.text.slice(0, 120)}`
      if (schemes === '') {
        assert.notEqual(anon.status, 401, what)
      } else if (schemes === 'apiKey,session') {
        assert.equal(anon.status, 401, what)
        assert.notEqual(withKey.status, 401, what)
        assert.notEqual(withKey.json?.error_code, 1009, what)
      } else if (schemes === 'session') {
        assert.equal(anon.status, 401, what)
        assert.equal(withKey.status, 403, what)
        if (withKey.json?.error_code !== undefined) assert.equal(withKey.json.error_code, 1009, what)
      } else {
        assert.fail(`unexpected security ${schemes}: ${what}`)
      }
    }
  })

  it("names every path of the document in docs/, but the spec's own endpoints it only points to", () => {
    // the spec's endpoints that docs/api/ describes by reference to the spec (docs/api/README.md)
    const SPEC_ONLY = ['/api/folders/{}/batch_upload', '/api/folders/{}/publish']
    const norm = (s: string): string => s.replace(/\{[^}]*\}/g, '{}')
    const docs: string[] = []
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(path.join(d, e.name))
        else if (e.name.endsWith('.md')) docs.push(fs.readFileSync(path.join(d, e.name), 'utf8'))
      }
    }
    walk(path.join(root, 'docs'))
    // `/x/{id}/enable|disable` names both paths
    const text = norm(docs.join('\n')).replace(/(\/[^\s`|]*\/)([a-z_]+)\|([a-z_]+)/g, '$1$2 $1$3')
    const missing = Object.keys(doc.paths as Record<string, unknown>)
      .map(norm)
      .filter((p) => !SPEC_ONLY.includes(p))
      .filter((p) => {
        if (text.includes(p)) return false
        // a page's table may give a route as `.../rest` under the prefix it names once
        const parts = p.split('/')
        return !parts.slice(3).some((_, i) => text.includes(`.../${parts.slice(3 + i).join('/')}`))
      })
    assert.deepEqual(missing, [], 'paths of /openapi.json that no page of docs/ names')
  })
})
