import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { ConfigError, loadConfig } from '../../src/config.js'
import { QUOTA_DEFAULTS, quotaOf } from '../../src/limits/quotas.js'

/** The rows of docs/operations/configuration.md's table: each variable it names, with the default cell. */
function documentedSettings(): Map<string, string> {
  const doc = fs.readFileSync(path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'docs', 'operations', 'configuration.md'), 'utf8')
  const rows = new Map<string, string>()
  for (const line of doc.split('\n')) {
    const cells = line.split('|').map((c) => c.trim())
    if (cells.length < 4 || !/^[A-Z]/.test(cells[1]) || cells[1] === 'variable') continue
    for (const name of cells[1].split(',').map((n) => n.trim())) rows.set(name, cells[2].replace(/^`(.*)`$/, '$1'))
  }
  return rows
}

/** The variables loadConfig reads, seen through an environment that records every read. */
function settingsRead(): Set<string> {
  const read = new Set<string>()
  const env: NodeJS.ProcessEnv = new Proxy(
    {},
    {
      get(_target, name) {
        if (typeof name === 'string') read.add(name)
        return undefined
      },
    },
  )
  loadConfig(env)
  return read
}

describe('configuration', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({})
    assert.equal(c.port, 8443)
    assert.equal(c.httpPort, 8080)
    assert.equal(c.host, '127.0.0.1')
    assert.match(c.dataDir, /\/data$/)
    assert.equal(c.databaseUrl, null)
    assert.equal(c.storageUrl, null)
    assert.equal(c.redisUrl, null)
    assert.equal(c.trustProxy, false)
    assert.equal(c.maxUploadBytes, 16777216)
    assert.equal(c.smtpTimeoutMs, 20_000)
    assert.equal(c.webhookTimeoutMs, 10_000)
    assert.deepEqual([c.formFileMaxBytes, c.formSubmissionFileBytes, c.formSubmissionFiles], [8 * 1024 * 1024, 8 * 1024 * 1024, 5])
    assert.deepEqual(c.quotaDefaults, QUOTA_DEFAULTS)
    assert.ok(Object.isFrozen(c))
  })

  it('takes the form file limits and the form_file_bytes default from the environment (decision 296)', () => {
    const c = loadConfig({ FORM_FILE_MAX_BYTES: '1000', FORM_SUBMISSION_FILE_BYTES: '1500', FORM_SUBMISSION_FILES: '0', FORM_FILE_QUOTA_BYTES: '2000' })
    assert.deepEqual([c.formFileMaxBytes, c.formSubmissionFileBytes, c.formSubmissionFiles], [1000, 1500, 0])
    // the quota's default only: every other quota keeps the table's
    assert.deepEqual(c.quotaDefaults, { ...QUOTA_DEFAULTS, form_file_bytes: 2000 })
    assert.equal(quotaOf('{}', 'form_file_bytes', c.quotaDefaults), 2000)
    assert.equal(quotaOf('{"form_file_bytes": 5}', 'form_file_bytes', c.quotaDefaults), 5, "an account's own limit wins")
  })

  it('reads exactly the variables docs/operations/configuration.md lists, with their documented defaults', () => {
    const documented = documentedSettings()
    const read = settingsRead()
    // the S3 driver's credentials are read by the AWS SDK, not by loadConfig
    const bySdk = [...documented.keys()].filter((n) => n.startsWith('AWS_'))
    assert.deepEqual([...read].filter((n) => !documented.has(n)).sort(), [], 'read but not documented')
    assert.deepEqual([...documented.keys()].filter((n) => !read.has(n) && !bySdk.includes(n)).sort(), [], 'documented but not read')
    // a default written as a value gives the configuration that leaving the variable unset gives
    const unset = loadConfig({})
    for (const [name, def] of documented) {
      if (bySdk.includes(name) || /^(unset|from |\(|DATA_DIR\/)/.test(def)) continue
      assert.deepEqual(loadConfig({ [name]: def }), unset, `${name}: documented default "${def}"`)
    }
  })

  it('blocks webhooks to private addresses and retries notifications for 24 h by default, in production too', () => {
    for (const env of [{}, { NODE_ENV: 'production' }]) {
      const c = loadConfig(env)
      assert.equal(c.webhookBlockPrivate, true, JSON.stringify(env))
      assert.equal(c.notifyMaxAgeMs, 24 * 3_600_000, JSON.stringify(env))
      assert.equal(c.notifyRetryBaseMs, 30_000, JSON.stringify(env))
    }
    // the operator's switches (the test suite's servers turn the SSRF block off)
    assert.equal(loadConfig({ WEBHOOK_BLOCK_PRIVATE: '0' }).webhookBlockPrivate, false)
    assert.equal(loadConfig({ NOTIFY_MAX_AGE: '2h' }).notifyMaxAgeMs, 2 * 3_600_000)
  })

  const bad: Array<[Record<string, string>, string]> = [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ HTTP_PORT: '-1' }, 'HTTP_PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://u@h/db?schema=Bad-Name' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://u@h:port/db' }, 'DATABASE_URL'],
    [{ STORAGE_URL: 'ftp://x' }, 'STORAGE_URL'],
    [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
    [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY'],
    [{ TLS_CERT: '/x.pem' }, 'TLS_KEY'],
    [{ PUBLIC_URL: 'not a url' }, 'PUBLIC_URL'],
    [{ PUBLIC_URL: 'https://x.test/path' }, 'PUBLIC_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ RATE_LIMITS: '{"gold":{}}' }, 'RATE_LIMITS'],
    [{ RATE_LIMITS: 'not json' }, 'RATE_LIMITS'],
    [{ MAX_UPLOAD_BYTES: '0' }, 'MAX_UPLOAD_BYTES'],
    [{ FORM_FILE_MAX_BYTES: '0' }, 'FORM_FILE_MAX_BYTES'],
    [{ FORM_SUBMISSION_FILE_BYTES: '8M' }, 'FORM_SUBMISSION_FILE_BYTES'],
    [{ FORM_SUBMISSION_FILES: '101' }, 'FORM_SUBMISSION_FILES'],
    [{ FORM_FILE_QUOTA_BYTES: '-1' }, 'FORM_FILE_QUOTA_BYTES'],
    [{ WEBHOOK_BLOCK_PRIVATE: 'maybe' }, 'WEBHOOK_BLOCK_PRIVATE'],
    [{ NOTIFY_MAX_AGE: '24' }, 'NOTIFY_MAX_AGE'],
    [{ SMTP_TIMEOUT: '20' }, 'SMTP_TIMEOUT'],
    [{ WEBHOOK_TIMEOUT: '50ms' }, 'WEBHOOK_TIMEOUT'],
  ]
  for (const [env, name] of bad) {
    it(`refuses ${JSON.stringify(env)} naming ${name}`, () => {
      assert.throws(
        () => loadConfig(env),
        (e: unknown) => e instanceof ConfigError && e.message.includes(name),
      )
    })
  }

  it('reports every problem at once and never prints a password from a URL', () => {
    try {
      loadConfig({ PORT: 'x', DATABASE_URL: 'mysql://root:hunter2@db/x' })
      assert.fail('should throw')
    } catch (e) {
      assert.ok(e instanceof ConfigError)
      assert.equal(e.problems.length, 2)
      assert.ok(!e.message.includes('hunter2'))
    }
  })
})
