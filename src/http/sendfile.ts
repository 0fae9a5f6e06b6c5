import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import type { ServerResponse } from 'node:http'

/**
 * Zero-copy sending: the public host's files go to the socket with sendfile(2) from their blob
 * files (held open by src/storage/open-files.ts), as nginx sends files, instead of being copied
 * from a Buffer.
 *
 * Why: Node can only write() a Buffer, and the kernel copies every byte of it into the socket
 * buffer; for large bodies that copy costs more than all of the service's own code. sendfile
 * hands the socket references to the file's pages instead, as nginx does (measured with
 * bench/hosting.sh: docs/benchmarks/2026-11-24-public-host-machines-e-f.md). For small bodies
 * the copy is cheap, but the read into a Buffer and Node's stream write around it are not.
 *
 * How: `sendPreparedFile` (prepared-response.ts) calls `sendWithFile` for every
 * non-empty body; it sends the head and the body in one call of the addon
 * (native/sendfile/sendfile.c: sendmsg with MSG_MORE, then sendfile) on the socket's own
 * non-blocking descriptor, and only when nothing is queued on that socket (Node's stream buffer
 * and libuv's write queue both empty), so bytes keep their order. Whatever the kernel did not
 * take at once (socket buffer full: EAGAIN) is read from the file and goes through Node's
 * ordinary socket write, which then waits for the socket as usual. Node's bookkeeping runs
 * unchanged: the answer ends with `res.end()`, as prepared answers do.
 *
 * When it does not apply, bodies are copied as before: the addon not built (not Linux, no
 * compiler: `npm install` prints why), SENDFILE=0, a TLS connection (the default HTTPS listener
 * encrypts in user space, so there is nothing to hand over; this path is for a service behind a
 * TLS-terminating proxy, TRUST_PROXY=1), per-request headers, HEAD, a response queued behind a
 * pipelined one, a socket with bytes still queued.
 *
 * Relies on Node's `socket._handle.fd` and `socket._handle.writeQueueSize` (libuv stream
 * handles, unchanged since Node 0.x), checked on every use: if they are ever missing, the
 * answer is copied.
 */
interface Addon {
  sendHeadFile(sock: number, block: Buffer, tail: Buffer, fd: number, len: number): number
}

/**
 * Bodies of at least this many bytes go by sendfile: every non-empty one. Even for a 2 KB page
 * it skips the read into a Buffer and Node's stream write (docs/benchmarks/2026-11-29-sendfile-small-bodies.md).
 */
export const SENDFILE_MIN_BODY = 1

const ADDON_FILE = path.join('native', 'sendfile', 'build', 'Release', 'svc_sendfile.node')

function loadAddon(): Addon | null {
  if (process.platform !== 'linux') return null
  // from dist/src/http (compiled) or src/http: the addon is under the repository's root
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++, dir = path.dirname(dir)) {
    const file = path.join(dir, ADDON_FILE)
    if (!fs.existsSync(file)) continue
    try {
      const a = createRequire(import.meta.url)(file) as Partial<Addon>
      return typeof a.sendHeadFile === 'function' ? (a as Addon) : null
    } catch {
      return null
    }
  }
  return null
}

const addon = loadAddon()

/** What the sendfile path did, for tests and /metrics. */
export const sendfileStats = {
  /** Answers sent whole by the kernel from the blob file. */
  whole: 0,
  /** Answers the kernel took part of (socket full, or it refused sendfile); Node wrote the rest. */
  finishedByCopy: 0,
  /** Answers whose send failed (connection gone): the socket was destroyed. */
  failed: 0,
}

/** Whether the native addon is loaded (built by `npm install`, Linux only). */
export function sendfileAvailable(): boolean {
  return addon !== null
}

interface StreamHandle {
  fd?: unknown
  writeQueueSize?: unknown
}
interface NodeSocket {
  _handle?: StreamHandle | null
  encrypted?: boolean
  writable: boolean
  writableLength: number
}

/**
 * Sends `block` + `tail` + `len` body bytes read from `fd` (a blob file) on the response's
 * socket, and ends the response; what the kernel did not take is then read from `fd` and
 * written by Node. Returns false, having done nothing, when the socket cannot take it this way
 * (TLS, not yet assigned, bytes queued): the caller then writes as usual. The response's head
 * must already be marked sent (prepared-response.ts does that).
 */
export function sendWithFile(res: ServerResponse, block: Buffer, tail: Buffer, fd: number, len: number): boolean {
  if (addon === null) return false
  const sock = res.socket as unknown as NodeSocket | null
  if (sock === null || sock.encrypted === true || !sock.writable || sock.writableLength !== 0) return false
  const h = sock._handle
  if (h == null || typeof h.fd !== 'number' || h.fd < 0 || h.writeQueueSize !== 0) return false
  const n = addon.sendHeadFile(h.fd, block, tail, fd, len)
  const headLen = block.length + tail.length
  if (n === headLen + len) {
    sendfileStats.whole++
    res.end()
    return true
  }
  if (n < 0) {
    // EPIPE, ECONNRESET: the peer is gone (a part of the answer may have been sent)
    sendfileStats.failed++
    res.destroy()
    return true
  }
  sendfileStats.finishedByCopy++
  if (n < block.length) res.write(block.subarray(n))
  if (n < headLen) res.write(tail.subarray(Math.max(0, n - block.length)))
  const from = Math.max(0, n - headLen)
  const rest = Buffer.allocUnsafe(len - from)
  if (!readFully(fd, rest, 0, rest.length, from)) {
    // the file is shorter than its blob: never send a torn answer
    sendfileStats.failed++
    res.destroy()
    return true
  }
  res.end(rest)
  return true
}

/** Reads `n` bytes at `position` of `fd` into `into` at `at`; false when the file ends first. */
export function readFully(fd: number, into: Buffer, at: number, n: number, position: number): boolean {
  let done = 0
  while (done < n) {
    const k = fs.readSync(fd, into, at + done, n - done, position + done)
    if (k === 0) return false
    done += k
  }
  return true
}
