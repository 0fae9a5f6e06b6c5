import type { IncomingMessage, ServerResponse } from 'node:http'
import zlib from 'node:zlib'
import { promisify } from 'node:util'
import type { BlobStore } from '../../storage/blob-store.js'
import { hotCount, metrics } from '../../http/metrics.js'
import { prepare, sendPrepared, type Prepared } from '../../http/prepared-response.js'
import type { BodyEntry, FileEntry, HostCache, HostEntry } from './cache.js'
import { plainHeaders, type Resolver } from './resolver.js'

const gzip = promisify(zlib.gzip)
const brotli = promisify(zlib.brotliCompress)

type Encoding = 'br' | 'gzip' | null
type Log = { warn(obj: unknown, msg: string): void }

const NOT_FOUND = Buffer.from('Not Found')
const FORBIDDEN = Buffer.from('Forbidden')
const BAD_REQUEST = Buffer.from('Bad Request')
const UNAVAILABLE = Buffer.from('Service Unavailable')
const P404 = prepare(404, plainHeaders(NOT_FOUND.length))
const H403 = plainHeaders(FORBIDDEN.length)
const H400 = plainHeaders(BAD_REQUEST.length)
const H503 = plainHeaders(UNAVAILABLE.length)

/** Accept-Encoding -> the best encoding we offer (br, then gzip), honouring q=0; memoised. */
const encodingMemo = new Map<string, Encoding>()
export function pickEncoding(ae: string | undefined): Encoding {
  if (!ae) return null
  const hit = encodingMemo.get(ae)
  if (hit !== undefined) return hit
  let br = -1
  let gz = -1
  let star = -1
  for (const part of ae.toLowerCase().split(',')) {
    const [token, ...params] = part.trim().split(';')
    let q = 1
    for (const p of params) {
      const m = /^\s*q=([0-9.]+)\s*$/.exec(p)
      if (m) q = Number(m[1])
    }
    if (!Number.isFinite(q)) q = 0
    if (token === 'br') br = q
    else if (token === 'gzip' || token === 'x-gzip') gz = q
    else if (token === '*') star = q
  }
  if (br < 0) br = star
  if (gz < 0) gz = star
  const enc: Encoding = br > 0 && br >= gz ? 'br' : gz > 0 ? 'gzip' : null
  if (encodingMemo.size > 256) encodingMemo.clear()
  encodingMemo.set(ae, enc)
  return enc
}

/** Parses a single `bytes=` range against a size; null: ignore (serve 200); 'unsatisfiable': 416. */
export function parseRange(h: string, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(h.trim())
  if (!m || (m[1] === '' && m[2] === '')) return null
  let start: number
  let end: number
  if (m[1] === '') {
    const n = Number(m[2])
    if (n === 0) return 'unsatisfiable'
    start = Math.max(0, size - n)
    end = size - 1
  } else {
    start = Number(m[1])
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
    if (m[2] !== '' && Number(m[2]) < start) return null
  }
  if (start >= size || size === 0) return 'unsatisfiable'
  return { start, end }
}

/**
 * The public host's request handling, on the raw Node request and response: cached answers
 * cost a Map lookup and one write of precomputed headers; misses go through the resolver.
 */
export function createHostHandler(cache: HostCache, resolve: Resolver, blobs: BlobStore, log: Log) {
  // body bytes sent, for /metrics (svc_blob_bytes_served_total{source="hosting"}); HEAD sends none
  const servedBytes = hotCount(metrics.blobBytesServed, { source: 'hosting' })
  const sent = (head: boolean, n: number) => {
    if (!head) servedBytes.n += n
  }
  const loading = new Map<string, Promise<BodyEntry>>()
  const compressing = new Map<string, Promise<void>>()

  async function loadBody(e: FileEntry): Promise<BodyEntry> {
    const cached = cache.body(e.digest)
    if (cached && !cached.evicted) return cached
    let p = loading.get(e.digest)
    if (!p) {
      p = blobs.read(e.digest).then((raw) => cache.putBody(e.digest, raw)).finally(() => loading.delete(e.digest))
      loading.set(e.digest, p)
    }
    return p
  }

  /** Makes (once) the compressed form; kept only when it saves at least 5%. */
  async function variant(e: FileEntry, b: BodyEntry, enc: 'br' | 'gzip'): Promise<Buffer | null> {
    if (b[enc] !== undefined) return b[enc] ?? null
    const key = `${b.digest}:${enc}`
    let p = compressing.get(key)
    if (!p) {
      p = (async () => {
        const out = enc === 'br'
          ? await brotli(b.raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 6, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.raw.length } })
          : await gzip(b.raw, { level: 6 })
        const keep = out.length <= b.raw.length * 0.95 ? out : null
        if (!b.evicted) {
          b[enc] = keep
          if (keep) cache.grow(b, keep.length)
        }
      })().finally(() => compressing.delete(key))
      compressing.set(key, p)
    }
    await p
    return b[enc] ?? null
  }

  function preparedFor(e: FileEntry, enc: 'br' | 'gzip', body: Buffer): Prepared {
    const field = enc === 'br' ? 'okBr' : 'okGzip'
    let p = e[field]
    if (!p) {
      p = prepare(200, [...e.common, 'ETag', `"${e.digest}-${enc === 'br' ? 'br' : 'gz'}"`, 'Content-Encoding', enc, 'Content-Length', String(body.length)])
      e[field] = p
    }
    return p
  }

  function notModified(req: IncomingMessage, e: FileEntry): boolean {
    const inm = req.headers['if-none-match']
    if (inm !== undefined) return inm.trim() === '*' || inm.includes(e.digest)
    const ims = req.headers['if-modified-since']
    if (ims === undefined) return false
    const t = Date.parse(ims)
    return Number.isFinite(t) && e.lastModifiedSec * 1000 <= t
  }

  async function serveFile(req: IncomingMessage, res: ServerResponse, e: FileEntry, head: boolean): Promise<void> {
    const rangeHeader = req.headers.range
    const enc = rangeHeader === undefined && e.compressible && e.inMemory ? pickEncoding(req.headers['accept-encoding']) : null
    if (notModified(req, e)) {
      const tag = enc ? `"${e.digest}-${enc === 'br' ? 'br' : 'gz'}"` : e.etag
      res.writeHead(304, [...e.common, 'ETag', tag])
      res.end()
      return
    }
    let range: ReturnType<typeof parseRange> = null
    if (rangeHeader !== undefined) {
      const ifRange = req.headers['if-range']
      if (ifRange === undefined || ifRange === e.etag || ifRange === e.lastModified) range = parseRange(rangeHeader, e.size)
    }
    if (range === 'unsatisfiable') {
      res.writeHead(416, [...e.common, 'ETag', e.etag, 'Content-Range', `bytes */${e.size}`, 'Content-Length', '0'])
      res.end()
      return
    }
    if (e.inMemory) {
      const b = e.body && !e.body.evicted ? e.body : (e.body = await loadBody(e))
      if (range) {
        res.writeHead(206, [...e.common, 'ETag', e.etag, 'Content-Range', `bytes ${range.start}-${range.end}/${e.size}`, 'Content-Length', String(range.end - range.start + 1)])
        res.end(head ? undefined : b.raw.subarray(range.start, range.end + 1))
        sent(head, range.end - range.start + 1)
        return
      }
      if (enc) {
        const v = await variant(e, b, enc)
        if (v) {
          sendPrepared(req, res, preparedFor(e, enc, v), v)
          sent(head, v.length)
          return
        }
      }
      sendPrepared(req, res, e.ok, b.raw)
      sent(head, b.raw.length)
      return
    }
    // large file: streamed from the blob store, never buffered whole
    const h = range
      ? [...e.common, 'ETag', e.etag, 'Content-Range', `bytes ${range.start}-${range.end}/${e.size}`, 'Content-Length', String(range.end - range.start + 1)]
      : e.ok.headers as string[]
    if (head) {
      res.writeHead(range ? 206 : 200, h)
      res.end()
      return
    }
    const stream = await blobs.get(e.digest, range ?? undefined)
    res.writeHead(range ? 206 : 200, h)
    res.once('close', () => stream.destroy())
    stream.once('error', (err) => {
      log.warn({ err, digest: e.digest }, 'hosted file stream failed')
      res.destroy()
    })
    res.once('finish', () => sent(false, range ? range.end - range.start + 1 : e.size))
    stream.pipe(res)
  }

  /**
   * Answers at once when nothing needs waiting for (bytes in memory, compressed form ready,
   * 304, redirect, 404); false when the answer needs I/O or compression first.
   */
  function answerNow(req: IncomingMessage, res: ServerResponse, e: HostEntry, query: string, head: boolean): boolean {
    if (e.kind === 'file') {
      const b = e.body
      if (b === null || b.evicted) return false
      const h = req.headers
      if (h.range !== undefined) return false
      let enc: Encoding = null
      if (e.compressible && h['accept-encoding'] !== undefined) {
        enc = pickEncoding(h['accept-encoding'])
        if (enc !== null && b[enc] === undefined) return false
      }
      if ((h['if-none-match'] !== undefined || h['if-modified-since'] !== undefined) && notModified(req, e)) {
        res.writeHead(304, [...e.common, 'ETag', enc && b[enc] ? `"${e.digest}-${enc === 'br' ? 'br' : 'gz'}"` : e.etag])
        res.end()
        return true
      }
      b.hot = true
      const v = enc === null ? null : b[enc]
      if (v) {
        sendPrepared(req, res, preparedFor(e, enc!, v), v)
        sent(head, v.length)
      } else {
        // fdFor may evict this body (it counts the memfd in the budget): keep its bytes first
        const raw = b.raw
        sendPrepared(req, res, e.ok, raw, undefined, b.fd ?? cache.fdFor(b))
        sent(head, raw.length)
      }
      return true
    }
    if (e.kind === 'redirect') {
      res.writeHead(301, ['Location', e.location + query, ...plainHeaders(0)])
      res.end()
      return true
    }
    sendPrepared(req, res, P404, NOT_FOUND)
    return true
  }

  function serve(req: IncomingMessage, res: ServerResponse, e: HostEntry, query: string, head: boolean): void | Promise<void> {
    if (answerNow(req, res, e, query, head)) return
    return serveFile(req, res, e as FileEntry, head)
  }

  const fail = (res: ServerResponse, err: unknown) => {
    log.warn({ err }, 'public host lookup failed')
    if (res.headersSent) {
      res.destroy()
      return
    }
    res.writeHead(503, H503)
    res.end(UNAVAILABLE)
  }

  /** Splits a request URL; the path is the cache key. */
  const split = (url: string) => {
    const q = url.indexOf('?')
    return q < 0 ? { path: url, query: '' } : { path: url.slice(0, q), query: url.slice(q) }
  }

  return {
    /**
     * Before routing: answers a cached path that needs no I/O (the hot path, at the cost of a
     * Map lookup and one write), or returns false to let the router handle the request.
     */
    fast(req: IncomingMessage, res: ServerResponse): boolean {
      const m = req.method
      if ((m !== 'GET' && m !== 'HEAD') || req.headers['service-worker'] !== undefined) return false
      const { path, query } = split(req.url ?? '/')
      const e = cache.get(path)
      return e !== undefined && answerNow(req, res, e, query, m === 'HEAD')
    },

    /** Handles GET and HEAD of /{username}/... on the raw request and response. */
    handle(req: IncomingMessage, res: ServerResponse): void {
      const { path, query } = split(req.url ?? '/')
      const head = req.method === 'HEAD'
      if (req.headers['service-worker'] !== undefined) {
        // a hosted script may never become a service worker over the user's (or anyone's) pages
        res.writeHead(403, H403)
        res.end(head ? undefined : FORBIDDEN)
        return
      }
      const e = cache.get(path)
      if (e !== undefined) {
        const r = serve(req, res, e, query, head)
        if (r) r.catch((err) => fail(res, err))
        return
      }
      resolve(path).then((r) => {
        if ('status' in r) {
          res.writeHead(400, H400)
          res.end(head ? undefined : BAD_REQUEST)
          return
        }
        return serve(req, res, r.entry, query, head)
      }).catch((err) => fail(res, err))
    },
  }
}
