import net from 'node:net'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { URL } from 'node:url'
import { PG_URL, needs, startServer, type TestServer } from '../support/server.js'
import { sample } from '../support/metrics.js'

/**
 * A relay to the real PostgreSQL that can answer as a server that is shutting down or starting
 * up does: every new connection gets FATAL 57P03 ("the database system is shutting down") in
 * reply to its startup message, and the open ones are dropped (a fast shutdown ends them).
 */
async function startPgRelay(target: number) {
  let stopping = false
  const open = new Set<net.Socket>()
  const server = net.createServer((client) => {
    open.add(client)
    client.on('close', () => open.delete(client)).on('error', () => client.destroy())
    if (stopping) {
      // the startup message (int32 length first), then the ErrorResponse and the close
      client.once('data', () => {
        const fields = ['SFATAL', 'VFATAL', 'C57P03', 'Mthe database system is shutting down'].map((f) => Buffer.from(`${f}\0`))
        const body = Buffer.concat([...fields, Buffer.from([0])])
        const head = Buffer.alloc(5)
        head.write('E', 0)
        head.writeInt32BE(body.length + 4, 1)
        client.end(Buffer.concat([head, body]))
      })
      return
    }
    const upstream = net.connect(target, '127.0.0.1')
    upstream.on('error', () => client.destroy()).on('close', () => client.destroy())
    client.on('close', () => upstream.destroy())
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    port: (server.address() as net.AddressInfo).port,
    stop() {
      stopping = true
      for (const s of open) s.destroy()
    },
    start() {
      stopping = false
    },
    close: () => {
      for (const s of open) s.destroy()
      return new Promise<void>((r) => server.close(() => r()))
    },
  }
}

// A PostgreSQL restart (an upgrade, a failover) refuses connections with 57P03 while it stops
// and starts: the API must say the database is briefly unavailable (503 / 1504, as when it is
// unreachable), never 500 / 1501 "internal error", count it in svc_db_errors_total, and work
// again once it is back.
describe('PostgreSQL restarting under a running instance', needs('postgres'), () => {
  let s: TestServer
  let relay: Awaited<ReturnType<typeof startPgRelay>>
  before(async () => {
    relay = await startPgRelay(Number(new URL(PG_URL).port || 5432))
    const u = new URL(PG_URL)
    u.port = String(relay.port)
    s = await startServer({ engine: 'postgres', pgUrl: u.toString() })
  })
  after(async () => {
    await s?.close()
    await relay?.close()
  })

  it('answers 503 / 1504 while it shuts down, and 200 once it is back', async () => {
    const u = await s.user()
    const store = () => s.post('/svc_api/data/store', { key: u.key, json: { key: 'k', value: 'v' } })
    assert.equal((await store()).status, 200)
    const dbErrors = async () => sample((await s.get('/metrics')).text, 'svc_db_errors_total', { engine: 'postgres', kind: 'other' })
    const before = await dbErrors()
    relay.stop()
    for (const r of [await store(), await s.get('/svc_api/data/list', { key: u.key })]) {
      assert.equal(r.status, 503, r.text)
      assert.equal(r.json.error_code, 1504)
    }
    // each query that got no connection is a database error the metrics count
    assert.ok((await dbErrors()) >= before + 2, `svc_db_errors_total went from ${before} to ${await dbErrors()}`)
    relay.start()
    const back = await store()
    assert.equal(back.status, 200, back.text)
  })
})
