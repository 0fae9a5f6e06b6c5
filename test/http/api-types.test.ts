import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startServer, type TestServer } from '../support/server.js'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..')
const committed = path.join(root, 'test', 'support', 'api-types.ts')

/**
 * The committed client types are what the served document gives today: a route, parameter or
 * schema change without `npm run gen:api-types` fails here (and the typed client tests, which
 * compile against those types, cannot drift from the API either).
 */
describe('generated API types', () => {
  let s: TestServer
  let tmp = ''
  before(async () => {
    s = await startServer({ engine: 'sqlite' })
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-api-types-'))
  })
  after(async () => {
    await s.close()
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  it('test/support/api-types.ts matches GET /openapi.json', async () => {
    const doc = await s.get('/openapi.json')
    assert.equal(doc.status, 200)
    fs.writeFileSync(path.join(tmp, 'openapi.json'), doc.text)
    const out = path.join(tmp, 'api-types.ts')
    const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'gen-api-types.mjs'), path.join(tmp, 'openapi.json'), out], {
      cwd: root,
      encoding: 'utf8',
    })
    assert.equal(r.status, 0, r.stderr)
    const want = fs.readFileSync(out, 'utf8')
    const have = fs.readFileSync(committed, 'utf8')
    if (have !== want) {
      const a = have.split('\n')
      const b = want.split('\n')
      const i = a.findIndex((line, n) => line !== b[n])
      assert.fail(
        `test/support/api-types.ts is stale (first difference at line ${i + 1}: ${JSON.stringify(a[i])} vs ${JSON.stringify(b[i])}): run npm run gen:api-types`,
      )
    }
  })
})
