import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import type { ServerResponse } from 'node:http'

/**
 * Zero-copy sending of hot bodies: the public host's cached files go to the socket with
 * sendfile(2) from a sealed memfd, as nginx sends files, instead of being copied from a Buffer.
 *
 * Why: Node can only write() a Buffer, and the kernel copies every byte of it into the socket
 * buffer. On a 50 KB hosted page that copy (`_copy_from_iter`) was a quarter of the service's
 * CPU under load (perf, 2-core machine, 2026-11-23), more than all of the service's own code;
 * sendfile hands the socket references to the memfd's pages instead. Measured with
 * bench/hosting.sh (README, "public host"): a bare server sending this way did 0.98 of nginx's
 * requests per second on the 50 KB page against 0.82 for the best copying server, same run.
 *
 * How: `bodyFd(buffer)` makes a memfd holding the bytes, sealed so they can never change (a
 * socket may still hold references to the pages after the answer). The host cache makes one per
 * hot identity body of SENDFILE_MIN_BODY bytes or more, counts its bytes in the cache's budget
 * (the memfd is a second copy in memory) and closes it when the body is evicted. `sendWithFile`
 * is called by `sendPrepared` for such a body; it sends the head and the body in one call of
 * the addon (native/sendfile/sendfile.c: sendmsg with MSG_MORE, then sendfile) on the socket's
 * own non-blocking descriptor, and only when nothing is queued on that socket (Node's stream
 * buffer and libuv's write queue both empty), so bytes keep their order. Whatever the kernel
 * did not take at once (socket buffer full: EAGAIN) goes through Node's ordinary socket write,
 * which then waits for the socket as usual. Node's bookkeeping runs unchanged: the answer ends
 * with `res.end()`, as prepared answers do.
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
  memfdFrom(b: Buffer): number
  sendHeadFile(sock: number, block: Buffer, tail: Buffer, fd: number, len: number): number
}

/** Bodies smaller than this are copied: for them one write is as cheap (bench/hosting.sh, 2 KB). */
export const SENDFILE_MIN_BODY = 16 * 1024
/**
 * At most this many memfds are open at once (the host cache asks for one per hot body): 1,024,
 * or a quarter of the process's open-file limit when that is lower, so memfds never keep the
 * server from accepting connections.
 */
export const SENDFILE_MAX_FDS = Math.min(1024, Math.floor(openFileLimit() / 4))

/** The soft limit on open files (Node raises it to the hard limit at start), from /proc. */
function openFileLimit(): number {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'))
    return m === null ? 4096 : m[1] === 'unlimited' ? Infinity : Number(m[1])
  } catch {
    return 4096
  }
}

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
      return typeof a.memfdFrom === 'function' && typeof a.sendHeadFile === 'function' ? a as Addon : null
    } catch {
      return null
    }
  }
  return null
}

const addon = loadAddon()
let openFds = 0

/** What the sendfile path did, for tests and /metrics. */
export const sendfileStats = {
  /** Answers sent whole by the kernel from the memfd. */
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

/** Memfds open now. */
export function openBodyFds(): number {
  return openFds
}

/** A sealed memfd holding `raw`, or -1 (no addon, too small, too many open, or the kernel refused). */
export function bodyFd(raw: Buffer): number {
  if (addon === null || raw.length < SENDFILE_MIN_BODY || openFds >= SENDFILE_MAX_FDS) return -1
  const fd = addon.memfdFrom(raw)
  if (fd < 0) return -1
  openFds++
  return fd
}

/** Closes a memfd made by bodyFd (sockets still sending from it keep their page references). */
export function closeBodyFd(fd: number): void {
  if (fd < 0) return
  openFds--
  fs.closeSync(fd)
}

interface StreamHandle { fd?: unknown; writeQueueSize?: unknown }
interface NodeSocket { _handle?: StreamHandle | null; encrypted?: boolean; writable: boolean; writableLength: number }

/**
 * Sends `block` + `tail` + `body` (whose bytes the memfd `fd` holds) on the response's socket,
 * and ends the response. Returns false, having done nothing, when the socket cannot take it
 * this way (TLS, not yet assigned, bytes queued): the caller then writes as usual. The
 * response's head must already be marked sent (prepared-response.ts does that).
 */
export function sendWithFile(res: ServerResponse, block: Buffer, tail: Buffer, body: Buffer, fd: number): boolean {
  if (addon === null) return false
  const sock = res.socket as unknown as NodeSocket | null
  if (sock === null || sock.encrypted === true || !sock.writable || sock.writableLength !== 0) return false
  const h = sock._handle
  if (h == null || typeof h.fd !== 'number' || h.fd < 0 || h.writeQueueSize !== 0) return false
  const n = addon.sendHeadFile(h.fd, block, tail, fd, body.length)
  const headLen = block.length + tail.length
  if (n === headLen + body.length) {
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
  res.end(body.subarray(Math.max(0, n - headLen)))
  return true
}
