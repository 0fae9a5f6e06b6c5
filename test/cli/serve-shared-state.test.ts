import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { SVC_BIN } from './run.js'
import { PG_URL, REDIS_URL, dropSchema, needs } from '../support/server.js'

// The shipped `svc serve`'s start lines say what the instances share besides the database
// (decision 318): an instance on PostgreSQL without REDIS_URL, among others that have
// it, serves pages stale after their deploys; the operator is told so at start.

/** Starts bin/svc serve with `env`, waits for its start line, stops it: its stdout and stderr. */
async function startLines(env: Record<string, string>): Promise<{ out: string; err: string }> {
  const child = spawn(process.execPath, [SVC_BIN, 'serve'], {
    env: { ...process.env, PORT: '0', HTTP_PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  const exited = new Promise((r) => child.once('exit', r))
  try {
    for (let i = 0; i < 600 && !/only this machine can connect/.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50))
    assert.match(out, /svc listening on/, `the server did not start:\n${out}\n${err}`)
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM')
    await exited
  }
  return { out, err }
}

describe('svc serve names the shared state at start', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-shared-state-'))
  const schemas: string[] = []
  const pgUrl = () => {
    const schema = `t_shared_${crypto.randomBytes(4).toString('hex')}`
    schemas.push(schema)
    return `${PG_URL}?schema=${schema}`
  }
  after(async () => {
    for (const s of schemas) await dropSchema(s)
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  it('warns on PostgreSQL without REDIS_URL, on stderr and in the log', needs('postgres'), async () => {
    const url = pgUrl()
    const { out, err } = await startLines({ DATA_DIR: path.join(tmp, 'a'), DATABASE_URL: url, REDIS_URL: '' })
    assert.match(err, /^warning: DATABASE_URL without REDIS_URL: .*serves pages stale.*give every instance the same REDIS_URL$/m)
    const line = out.split('\n').find((l) => l.includes('DATABASE_URL without REDIS_URL'))
    assert.ok(line, `no log line:\n${out}`)
    const json = JSON.parse(line) as { level: number; databaseUrl: string }
    assert.equal(json.level, 40)
    assert.equal(json.databaseUrl, url.replace(/^postgres:\/\/[^@]*@/, 'postgres://***@'))
  })

  it('names Redis and its key prefix with REDIS_URL, and warns of nothing', needs('postgres', 'redis'), async () => {
    const prefix = `t_shared_${crypto.randomBytes(4).toString('hex')}:`
    const { out, err } = await startLines({ DATA_DIR: path.join(tmp, 'b'), DATABASE_URL: pgUrl(), REDIS_URL, REDIS_PREFIX: prefix })
    assert.ok(out.includes(`rate limits and cache invalidation: Redis ${REDIS_URL} (keys under ${prefix})\n`), out)
    assert.doesNotMatch(out + err, /without REDIS_URL/)
  })

  it('says nothing of Redis on SQLite, one instance by design', async () => {
    const { out, err } = await startLines({ DATA_DIR: path.join(tmp, 'c'), DATABASE_URL: '', REDIS_URL: '' })
    assert.doesNotMatch(out + err, /REDIS_URL|rate limits and cache invalidation/)
  })
})
