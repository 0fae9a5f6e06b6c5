import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { isApiPath } from '../../src/http/api-path.js'

describe('isApiPath (the one API-path matcher of server.ts and app.ts)', () => {
  const cases: [string, boolean][] = [
    ['/api', true],
    ['/api/', true],
    ['/api/me', true],
    ['/api?x=1', true],
    ['/api?', true],
    ['/svc_api', true],
    ['/svc_api/me?x=1', true],
    ['/svc_api?x=1', true],
    ['/svc_api/data/public/alice/k', true],
    ['/mcp', true],
    ['/mcp?x=1', true],
    ['/mcp/', true],
    ['/apix', false],
    ['/api-keys', false],
    ['/api-keys?x=1', false],
    ['/svc_apis', false],
    ['/svc_api_x/y', false],
    ['/API', false],
    ['/alice/api', false],
    ['/', false],
    ['', false],
    ['/healthz', false],
    ['//api', false],
    ['/mcpx', false],
    ['/alice/mcp', false],
  ]
  for (const [url, want] of cases) {
    it(`${JSON.stringify(url)} -> ${want}`, () => assert.equal(isApiPath(url), want))
  }
})
