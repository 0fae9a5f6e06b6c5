#!/usr/bin/env node
// The service as `svc serve` runs it (self-signed HTTPS on PORT, HTTP_PORT redirecting), plus a
// plain-HTTP listener on PLAIN_PORT that hands every request to the same Fastify app, as a
// TLS-terminating proxy in front of it would. Used by bench/hosting.sh so the comparison with
// nginx measures the public host, not TLS. Prints one JSON line when ready.
import http from 'node:http'
import { startService } from './lib/service.mjs'

const { listening: l, handler, stop: stopService, SERVER_TIMEOUTS } = await startService()
const plainPort = Number(process.env.PLAIN_PORT ?? 19002)
// the same request handler as the HTTPS server (the app's fast paths, then its router)
const plain = http.createServer({ ...SERVER_TIMEOUTS }, handler)
plain.keepAliveTimeout = SERVER_TIMEOUTS.keepAliveTimeout
await new Promise((resolve) => plain.listen(plainPort, '127.0.0.1', resolve))
process.stdout.write(JSON.stringify({ https: l.httpsUrl, plain: `http://127.0.0.1:${plainPort}`, pid: process.pid }) + '\n')
const stop = () => stopService([plain])
// SIGUSR2: one JSON line of the process's memory on stderr, after a full GC when --expose-gc
process.on('SIGUSR2', () => {
  const before = process.memoryUsage()
  globalThis.gc?.()
  const after = process.memoryUsage()
  const mb = (m) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Math.round(v / 1048576)]))
  process.stderr.write(`MEMORY ${JSON.stringify({ before: mb(before), afterGc: globalThis.gc ? mb(after) : null })}\n`)
})
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
