import { STATUS_CODES, validateHeaderName, validateHeaderValue, type IncomingMessage, type ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { readFully, sendfileAvailable, sendWithFile, SENDFILE_MIN_BODY } from './sendfile.js'
import { systemClock, type Clock } from '../util/clock.js'

/**
 * Precomputed HTTP/1.1 answers for the hot serving paths (the public host's cached files, the
 * KV public read), written to the socket as bytes instead of going through
 * `res.writeHead(status, headers)`.
 *
 * Why: Node validates every header name and value and builds the header block as a string on
 * every `writeHead`. With the dozen headers a hosted page carries (CSP sandbox, nosniff, ETag,
 * Last-Modified, Cache-Control, Vary...) that is most of a cached hit's cost, and writing a
 * block prepared once avoids it (measured: docs/benchmarks/2026-11-21-public-host-machine-a.md).
 *
 * How: `prepare()` validates and encodes the status line and headers once. `sendPrepared()`
 * marks the ServerResponse's header as already sent (Node's `_header` / `_headerSent` fields,
 * unchanged since Node 0.x and relied on by widely used middleware), then writes the prepared
 * block, a per-second shared tail (Date, Connection, Keep-Alive: what Node adds itself) and the
 * body through `res.end` (or `res.write` of each part): one socket write, and Node's own
 * bookkeeping (pipelined requests queued behind this one, keep-alive timers, 'finish' and
 * 'close') runs unchanged. It also marks the request drained (`skipDrain` below).
 *
 * Whole answers: a small body (up to WHOLE_MAX_BODY) is sent as one Buffer holding the block,
 * the tail and the body, joined once per prepared answer and second and shared by the answers
 * of that second (with per-request `extra` headers, or past the budget, joined for that answer
 * alone); a larger body goes out in parts. One `res.end(buffer)` is
 * fewer stream operations than three writes gathered into a writev (measured:
 * docs/benchmarks/2026-11-22-public-host-machines-b-c.md). The joined copies are bounded:
 * at most WHOLE_BUDGET bytes of shared copies are made per second, and every one is dropped
 * when the second (and so the Date) changes, so they never hold more than that budget.
 *
 * Zero copy: `sendPreparedFile()` sends a body held in an open file (a blob file): the block,
 * the tail and the body go out through sendfile(2) when the body is not empty and the socket
 * allows it (plain HTTP, nothing queued); see sendfile.ts. Otherwise (TLS) the body is read
 * into a whole answer, shared like the others: a hot file is read once a second, not once a
 * request. A Prepared names one blob (its ETag and Content-Length), whose file never changes.
 *
 * Falls back to the ordinary `writeHead` whenever the shortcut would differ from Node's own
 * answer: HEAD (Node drops a HEAD response's body writes, which would drop the block too),
 * a connection that is to close after this answer (HTTP/1.0 without keep-alive,
 * `Connection: close`, max requests per socket), or a Node whose response object no longer
 * has those fields in their initial state.
 */
export interface Prepared {
  readonly status: number
  /**
   * Raw header list (name, value, ...), for the fallback path (headerList): every header, or
   * with a `prefix`, the lines shared with other answers (one array for all of them).
   */
  readonly headers: readonly string[]
  /**
   * "HTTP/1.1 <status> <reason>\r\n" and every header line, latin1 (after `prefix`, if any).
   * prepareShared keeps its own lines as a latin1 string: a cache holds one per entry, and a
   * short string costs a third of a Buffer with its ArrayBuffer and backing store.
   */
  readonly block: Buffer | string
  /** The status line and header lines shared by many answers (prepareShared), or undefined. */
  readonly prefix: Buffer | undefined
  /** This second's whole answer (block + tail + body), when one was joined. */
  whole: Whole | null
}

/**
 * An answer's whole raw header list (name, value, ...), for `res.writeHead`: with a shared
 * prefix, its shared list then its own lines read back from `block` (a cache keeps no second
 * copy of them as an array; these answers are the rare ones: HEAD, closing connections).
 */
export function headerList(p: Prepared): string[] {
  if (p.prefix === undefined) return p.headers as string[]
  return [...p.headers, ...linesOf(p.block.toString('latin1'))]
}

/** "Name: value\r\n" lines (validated when encoded) back to a raw list (name, value, ...). */
export function linesOf(block: string): string[] {
  const list: string[] = []
  for (let at = 0; at < block.length;) {
    const end = block.indexOf('\r\n', at)
    const colon = block.indexOf(': ', at)
    list.push(block.slice(at, colon), block.slice(colon + 2, end))
    at = end + 2
  }
  return list
}

interface Whole {
  /**
   * The tail and the body it was joined with: a new second or another body makes it stale.
   * FROM_FILE: the body was read from the answer's file (sendPreparedFile), which a Prepared
   * names alone: its ETag and Content-Length are those of one blob.
   */
  readonly tail: Buffer
  readonly body: Buffer | typeof FROM_FILE
  readonly bytes: Buffer
}
const FROM_FILE = Symbol('from the answer file')

/** Bodies up to this size are sent as one joined Buffer (see the module comment). */
export const WHOLE_MAX_BODY = 64 * 1024
/** Bytes of shared copies made per second, at most; past it, each answer is joined for itself. */
export const WHOLE_BUDGET = 8 * 1024 * 1024
let wholeBytes = 0
let holders: Prepared[] = []

/** Validates (as writeHead would) and encodes an answer's status line and headers once. */
export function prepare(status: number, headers: readonly string[]): Prepared {
  const reason = STATUS_CODES[status]
  if (reason === undefined) throw new Error(`no reason phrase for status ${status}`)
  let s = `HTTP/1.1 ${status} ${reason}\r\n`
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]
    const value = headers[i + 1]
    validateHeaderName(name)
    validateHeaderValue(name, value)
    s += `${name}: ${value}\r\n`
  }
  // its own memory, not a slice of Node's shared 8 KiB pool: a kept slice would keep the whole
  // slab alive, and caches keep one block per entry
  const block = Buffer.allocUnsafeSlow(Buffer.byteLength(s, 'latin1'))
  block.write(s, 0, 'latin1')
  return { status, headers, block, prefix: undefined, whole: null }
}

/** A status line and header lines shared by many answers, encoded once (sharedHead). */
export interface SharedHead {
  readonly status: number
  readonly bytes: Buffer
  readonly shared: readonly string[]
}

/** Shared heads by their text: the encoded bytes and the header list they were made from. */
const prefixes = new Map<string, SharedHead>()
/** Distinct shared prefixes kept at most; past it, answers get their own. */
const MAX_PREFIXES = 4096

/** Encodes header lines (validated as writeHead would) into their own memory. */
function headerLines(start: string, headers: readonly string[]): string {
  let s = start
  for (let i = 0; i < headers.length; i += 2) {
    validateHeaderName(headers[i])
    validateHeaderValue(headers[i], headers[i + 1])
    s += `${headers[i]}: ${headers[i + 1]}\r\n`
  }
  return s
}
const ownBuffer = (s: string) => {
  const b = Buffer.allocUnsafeSlow(Buffer.byteLength(s, 'latin1'))
  b.write(s, 0, 'latin1')
  return b
}

/**
 * The status line and `shared` headers, validated and encoded once for every answer that has
 * the same ones (one copy per distinct text). A caller that makes many answers with the same
 * shared headers may keep the result and skip even this lookup.
 */
export function sharedHead(status: number, shared: readonly string[]): SharedHead {
  const reason = STATUS_CODES[status]
  if (reason === undefined) throw new Error(`no reason phrase for status ${status}`)
  const text = headerLines(`HTTP/1.1 ${status} ${reason}\r\n`, shared)
  let head = prefixes.get(text)
  if (head === undefined) {
    head = { status, bytes: ownBuffer(text), shared }
    if (prefixes.size < MAX_PREFIXES) prefixes.set(text, head)
  }
  return head
}

/**
 * A prepared answer of a shared head (a cache of many entries keeps one copy of its common
 * headers, bytes and list, and per entry only the `own` lines: type, dates, ETag, length).
 * Sent as prepare()'s answers are. A plain object of one shape: a cache holds tens of
 * thousands of them.
 */
export function prepareShared(head: SharedHead, own: readonly string[]): Prepared {
  return { status: head.status, headers: head.shared, block: headerLines('', own), prefix: head.bytes, whole: null }
}

/** Writes an answer's own block into `b` at `at` (a string block is latin1: one byte a character). */
function copyBlock(p: Prepared, b: Buffer, at: number): void {
  if (typeof p.block === 'string') b.write(p.block, at, 'latin1')
  else p.block.copy(b, at)
}

/** The whole head block of an answer (its shared prefix and its own lines joined, when it has a prefix). */
function headOf(p: Prepared): Buffer {
  if (p.prefix === undefined && typeof p.block !== 'string') return p.block
  const pre = p.prefix?.length ?? 0
  const b = Buffer.allocUnsafe(pre + p.block.length)
  if (p.prefix !== undefined) p.prefix.copy(b, 0)
  copyBlock(p, b, pre)
  return b
}

/** The private fields of Node's OutgoingMessage this module relies on. */
interface NodeResponse extends ServerResponse {
  _header: string | null
  _headerSent: boolean
  _keepAliveTimeout?: number
  _maxRequestsPerSocket?: number
}

/** The private field of Node's IncomingMessage this module relies on. */
interface NodeRequest extends IncomingMessage {
  _dumped?: boolean
}

/**
 * Tells Node this request's body (if any) is not wanted, before the answer instead of after.
 * When a response finishes and nobody read the request, Node calls `req._dump()`: resume, read
 * to the end, 'end', destroy, 'close': three more ticks and half a dozen events per request,
 * even for a GET without a body. Setting `_dumped` first has the same effect on the wire (Node's
 * parser drops the body bytes of a dumped request as they arrive) without that chain. The hot
 * paths answer GET and HEAD without reading a body (measured:
 * docs/benchmarks/2026-11-22-public-host-machines-b-c.md).
 * The request then emits no 'end' or 'close' (the response still emits 'finish' and 'close'),
 * so this is done only when nothing listens for them (a routed request may have Fastify's
 * abort listeners).
 */
function skipDrain(req: NodeRequest): void {
  if (req._dumped === false && req.listenerCount('close') === 0 && req.listenerCount('end') === 0) req._dumped = true
}

// a truthy `_header` tells Node the head is out; the real one is in the bytes we write
const SENT_BY_PREPARED = 'HTTP/1.1 (prepared)\r\n\r\n'

let tailSecond = -1
let tailKeepAlive = -1
let tail = Buffer.alloc(0)

/**
 * "Date: ...\r\nConnection: keep-alive\r\n[Keep-Alive: timeout=N\r\n]\r\n", rebuilt when the
 * second of `now` (the service clock) changes, either way.
 */
function tailFor(keepAliveMs: number, now: number): Buffer {
  const second = Math.floor(now / 1000)
  if (second !== tailSecond || keepAliveMs !== tailKeepAlive) {
    if (second !== tailSecond) {
      // last second's whole answers carry the old Date: let them go
      for (const p of holders) p.whole = null
      holders = []
      wholeBytes = 0
    }
    tailSecond = second
    tailKeepAlive = keepAliveMs
    const ka = keepAliveMs > 0 ? `Keep-Alive: timeout=${Math.floor(keepAliveMs / 1000)}\r\n` : ''
    tail = Buffer.from(`Date: ${new Date(second * 1000).toUTCString()}\r\nConnection: keep-alive\r\n${ka}\r\n`, 'latin1')
  }
  return tail
}

/** The whole answer of `p` with `body` for this second's tail, joined if the budget allows. */
function wholeFor(p: Prepared, t: Buffer, body: Buffer): Buffer | null {
  const w = p.whole
  if (w !== null && w.tail === t && w.body === body) return w.bytes
  const block = headOf(p)
  const size = block.length + t.length + body.length
  if (!takeBudget(p, size)) return null
  p.whole = { tail: t, body, bytes: Buffer.concat([block, t, body], size) }
  return p.whole.bytes
}

/** Counts `size` bytes of a new shared copy for `p` against this second's budget; false past it. */
function takeBudget(p: Prepared, size: number): boolean {
  if (wholeBytes + size > WHOLE_BUDGET) return false
  wholeBytes += size
  if (p.whole === null) holders.push(p)
  return true
}

/** One Buffer of an answer's parts, for this answer alone (per-request headers, or past the budget). */
function joinOnce(block: Buffer, lines: string, t: Buffer, body: Buffer | undefined): Buffer {
  const b = Buffer.allocUnsafe(block.length + lines.length + t.length + (body?.length ?? 0))
  let at = block.copy(b, 0)
  at += b.write(lines, at, 'latin1')
  at += t.copy(b, at)
  if (body !== undefined) body.copy(b, at)
  return b
}

/** Bytes currently held in joined whole answers (for tests). */
export function wholeBytesHeld(): number {
  let n = 0
  for (const p of holders) n += p.whole?.bytes.length ?? 0
  return n
}

/**
 * Whether this response can take the prepared bytes (see the module comment). Only over a
 * real socket: `app.inject` hands a response whose writes are the body, not the wire.
 */
function canWriteRaw(req: IncomingMessage, res: NodeResponse): boolean {
  return (
    res._header === null &&
    res._headerSent === false &&
    res.shouldKeepAlive === true &&
    req.method !== 'HEAD' &&
    !res._maxRequestsPerSocket &&
    req.socket instanceof Socket
  )
}

/**
 * Sends a prepared answer with `body` (whose length the prepared Content-Length must state;
 * omit it for a bodiless answer). HEAD requests get the same headers and no body. `extra`
 * adds a few headers that change per request (name, value, ...: e.g. X-RateLimit-*); they
 * are not validated, so they must come from the service, never from the request. `clock`:
 * the service clock (Deps.clock), which dates the answer and so decides when shared whole
 * answers go.
 */
export function sendPrepared(
  req: IncomingMessage,
  res: ServerResponse,
  p: Prepared,
  body?: Buffer,
  extra?: readonly string[],
  clock: Clock = systemClock,
): void {
  const r = res as NodeResponse
  if (canWriteRaw(req, r)) {
    r.statusCode = p.status
    r._header = SENT_BY_PREPARED
    r._headerSent = true
    skipDrain(req)
    const t = tailFor(r._keepAliveTimeout ?? 0, clock.now())
    let lines = ''
    if (extra !== undefined) for (let i = 0; i < extra.length; i += 2) lines += `${extra[i]}: ${extra[i + 1]}\r\n`
    if (body === undefined || body.length <= WHOLE_MAX_BODY) {
      // this second's shared copy when there is one to share, else one joined for this answer
      r.end((lines === '' && body !== undefined && wholeFor(p, t, body)) || joinOnce(headOf(p), lines, t, body))
      return
    }
    r.write(headOf(p))
    if (lines !== '') r.write(lines, 'latin1')
    r.write(t)
    r.end(body)
    return
  }
  res.writeHead(p.status, extra !== undefined && extra.length > 0 ? [...headerList(p), ...extra] : headerList(p))
  res.end(req.method === 'HEAD' ? undefined : body)
}

/**
 * Sends a prepared answer whose body is `size` bytes of the open file `fd` (a blob file from
 * the open-file cache): with sendfile(2) when `sendfile` is on, the body is not empty and
 * the socket allows it; otherwise read (pread, as nginx reads a file it does not sendfile)
 * straight into one Buffer after the head. A short file never goes out as a whole answer: read,
 * it throws with nothing sent; sent by sendfile, its connection is closed (./sendfile.ts). HEAD
 * gets the head alone, read nothing.
 */
export function sendPreparedFile(
  req: IncomingMessage,
  res: ServerResponse,
  p: Prepared,
  fd: number,
  size: number,
  sendfile: boolean,
  clock: Clock = systemClock,
): void {
  const r = res as NodeResponse
  if (canWriteRaw(req, r)) {
    const t = tailFor(r._keepAliveTimeout ?? 0, clock.now())
    // never over TLS (the kernel cannot encrypt): there the file goes by the shared whole
    // answer below, read once a second and written as one Buffer
    const zeroCopy = sendfile && size >= SENDFILE_MIN_BODY && (req.socket as { encrypted?: boolean }).encrypted !== true && sendfileAvailable()
    const pre = p.prefix?.length ?? 0
    const head = pre + p.block.length + t.length
    // read once a second: this second's whole answer, when it was joined already
    const w = zeroCopy ? null : p.whole
    const shared = w !== null && w.tail === t && w.body === FROM_FILE ? w.bytes : null
    const keep = !zeroCopy && shared === null && size <= WHOLE_MAX_BODY && takeBudget(p, head + size)
    const b = zeroCopy || shared !== null ? shared : Buffer.allocUnsafe(head + size)
    if (b !== null && b !== shared && !readFully(fd, b, head, size, 0)) throw new Error('blob file shorter than its blob')
    r.statusCode = p.status
    r._header = SENT_BY_PREPARED
    r._headerSent = true
    skipDrain(req)
    if (b === null) {
      const block = headOf(p)
      if (sendWithFile(r, block, t, fd, size)) return
      const body = Buffer.allocUnsafe(size)
      if (!readFully(fd, body, 0, size, 0)) throw new Error('blob file shorter than its blob')
      r.write(block)
      r.write(t)
      r.end(body)
      return
    }
    if (b !== shared) {
      if (p.prefix !== undefined) p.prefix.copy(b, 0)
      copyBlock(p, b, pre)
      t.copy(b, pre + p.block.length)
      if (keep) p.whole = { tail: t, body: FROM_FILE, bytes: b }
    }
    r.end(b)
    return
  }
  let body: Buffer | undefined
  if (req.method !== 'HEAD') {
    body = Buffer.allocUnsafe(size)
    if (!readFully(fd, body, 0, size, 0)) throw new Error('blob file shorter than its blob')
  }
  res.writeHead(p.status, headerList(p))
  res.end(body)
}
