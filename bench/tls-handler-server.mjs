#!/usr/bin/env node
// bench/hosting-server.mjs (the service with its own HTTPS port), plus HTTPS servers in the
// same process that take one part of the service's TLS answer each, for bench/tls-handler.sh.
// All use the service's certificate; BARE_FILE is the page (and BARE_FILE.headers, a JSON
// header list, the service's own headers for it, read on first use).
//   PORT+10  a bare handler (writeHead + end of the page from memory) on a default server
//   PORT+11  the same handler on a server made as the service makes its own (timeouts, guards)
//   PORT+12  the service's own request listener on a default server
//   PORT+13  prepared responses alone: the page's file read per request (the TLS path's answer)
//   PORT+14  the same with the service's header list for the page
//   PORT+15  prepared responses with the body in memory (a shared whole answer)
import fs from 'node:fs'
import https from 'node:https'
import { dist, startService } from './lib/service.mjs'

const { tls, listening: l, handler, stop: stopService, SERVER_TIMEOUTS } = await startService()
const { guardHttpServer } = await dist('http/errors.js')
const { prepare, sendPrepared, sendPreparedFile } = await dist('http/prepared-response.js')
const base = Number(process.env.PORT)
const file = process.env.BARE_FILE
const body = fs.readFileSync(file)
const fd = fs.openSync(file, 'r')
const one = ['Content-Type', 'text/html; charset=utf-8', 'Content-Length', String(body.length)]
const bare = (req, res) => {
  res.writeHead(200, one)
  res.end(body)
}
const servers = []
const serve = (port, handler, made = false) => {
  const s = https.createServer(made ? { ...tls, ...SERVER_TIMEOUTS } : { ...tls }, handler)
  if (made) {
    s.keepAliveTimeout = SERVER_TIMEOUTS.keepAliveTimeout
    guardHttpServer(s, '')
  }
  servers.push(s)
  return new Promise((resolve) => s.listen(port, '127.0.0.1', resolve))
}
const ownFile = prepare(200, one)
let svcHeaders = null
const inMemory = prepare(200, one)
await serve(base + 10, bare)
await serve(base + 11, bare, true)
await serve(base + 12, handler)
await serve(base + 13, (req, res) => sendPreparedFile(req, res, ownFile, fd, body.length, false))
await serve(base + 14, (req, res) => {
  svcHeaders ??= prepare(200, JSON.parse(fs.readFileSync(`${file}.headers`, 'utf8')))
  sendPreparedFile(req, res, svcHeaders, fd, body.length, false)
})
await serve(base + 15, (req, res) => sendPrepared(req, res, inMemory, body))
process.stdout.write(JSON.stringify({ https: l.httpsUrl, pid: process.pid }) + '\n')
const stop = () => stopService(servers)
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
