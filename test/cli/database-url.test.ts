import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { runCli } from './run.js'

// A PostgreSQL that cannot be reached is named in the error: which setting, which server
// (never its password), and why.
describe('an unreachable DATABASE_URL', () => {
  it('svc serve and an admin command both say which server, without its password', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-dburl-'))
    try {
      const env = { DATA_DIR: dir, DATABASE_URL: 'postgres://postgres:hunter22@127.0.0.1:1/test?schema=nowhere', PORT: '0', HTTP_PORT: '0' }
      for (const args of [['serve'], ['user', 'set', 'nobody', '--vip']]) {
        const r = await runCli(args, { env })
        assert.notEqual(r.code, 0, args.join(' '))
        assert.equal(r.code, 1, args.join(' '))
        // one line, as every error: `error: ` and what to check, no stack trace
        assert.match(
          r.stderr,
          /^error: cannot reach PostgreSQL at DATABASE_URL postgres:\/\/postgres@127\.0\.0\.1:1\/test: connect ECONNREFUSED [^\n]+ \(is it running, and does DATABASE_URL name it\?\)\n$/,
        )
        assert.doesNotMatch(r.stderr + r.stdout, /hunter22/)
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
