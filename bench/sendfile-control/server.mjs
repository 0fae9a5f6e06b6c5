// bench only (CONTROL=3 in bench/hosting.sh): a bare node:http server sending the service's
// headers and each page with sendfile(2) from a memfd, through ./sendfile.c, built by the bench
// into a temporary folder. Not part of the service: it measures what zero-copy would buy.
//   node server.mjs ADDON PORT USER HEADER_TEXT FILE...   (serves each FILE at /USER/<its name>)
// Same shortcuts as src/http/prepared-response.ts (head marked sent, request marked drained);
// whatever the kernel did not take at once (EAGAIN) goes through Node's own socket write.
import http from 'node:http'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'

const [addonPath, port, user, headerText, ...files] = process.argv.slice(2)
const sf = createRequire(import.meta.url)(path.resolve(addonPath))
const common = headerText.split('\n').filter(Boolean).map((l) => l + '\r\n').join('')
const pages = new Map(files.map((f) => {
  const body = fs.readFileSync(f)
  const fd = sf.memfdFrom(body)
  if (fd < 0) throw new Error(`memfd: errno ${-fd}`)
  return [`/${user}/${path.basename(f)}`, { body, fd, block: `HTTP/1.1 200 OK\r\n${common}Content-Length: ${body.length}\r\n` }]
}))
let second = -1
let tail = ''
const heads = new Map()
let copied = 0
let answers = 0

http.createServer((req, res) => {
  const e = pages.get(req.url)
  if (!e) { res.writeHead(404, ['Content-Length', '0']); res.end(); return }
  const s = Math.floor(Date.now() / 1000)
  if (s !== second) {
    second = s
    tail = `Date: ${new Date(s * 1000).toUTCString()}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(res._keepAliveTimeout / 1000)}\r\n\r\n`
    heads.clear()
  }
  let head = heads.get(e)
  if (!head) heads.set(e, (head = Buffer.from(e.block + tail, 'latin1')))
  const sock = res.socket
  const fd = sock?._handle?.fd
  // only when nothing is queued on the socket, so the bytes keep their order
  if (typeof fd !== 'number' || fd < 0 || sock.writableLength !== 0 || sock._handle.writeQueueSize !== 0 || !res.shouldKeepAlive || req.method !== 'GET') {
    res.writeHead(200, ['Content-Type', 'text/html', 'Content-Length', String(e.body.length)])
    res.end(e.body)
    return
  }
  res.statusCode = 200
  res._header = 'HTTP/1.1 (sent by sendfile)\r\n\r\n'
  res._headerSent = true
  req._dumped = true
  const n = sf.sendHeadFile(fd, head, e.fd, e.body.length)
  answers++
  if (n < 0) { res.destroy(); return }
  if (n === head.length + e.body.length) { res.end(); return }
  copied++
  res.end(n < head.length ? Buffer.concat([head.subarray(n), e.body]) : e.body.subarray(n - head.length))
}).listen(Number(port), '127.0.0.1')

process.on('SIGTERM', () => {
  process.stderr.write(`sendfile control: ${answers} answers, ${copied} finished by a copy after EAGAIN\n`)
  process.exit(0)
})
