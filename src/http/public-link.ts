import type { IncomingMessage } from 'node:http'
import type { Deps } from '../deps.js'
import { createOpenFiles } from '../storage/open-files.js'
import type { FastPath } from './types.js'
import { isHttps } from './origin.js'
import { decide, httpDate } from './representation.js'
import { prepare, sendPrepared, sendPreparedFile, type Prepared } from './prepared-response.js'

/**
 * The open-file cache of every public body sent from a blob file (hosted pages, image
 * originals, hosted-data files): one per Deps, so the descriptors the server keeps open have
 * one bound. Its owner (the app) closes it on close.
 */
export const publicFiles = (_deps: Deps) => createOpenFiles()

/** A public link's 200 known from memory: its prepared heads and where its body is. */
export interface LinkHit {
  /** The 200, with ETag, Accept-Ranges and Content-Length. */
  readonly ok: Prepared
  /** The 304: the same headers without Content-Length; null: the route answers revalidations. */
  readonly notModified: Prepared | null
  readonly etag: string
  /** Every tag a revalidation matches (this answer's and its other encodings'); default [etag]. */
  readonly etags?: readonly string[]
  /** Last-Modified, seconds since the epoch (the route's: the same date on both paths). */
  readonly lastModifiedSec: number
  readonly size: number
  /** The digest of the blob whose bytes are the body (sent from its file), or the body itself. */
  readonly body: string | Buffer
}

/** A link's validators: its ETag, the tags a revalidation matches (default [etag]), its Last-Modified. */
export interface LinkValidators {
  etag: string
  etags?: readonly string[]
  lastModifiedSec: number
}

/**
 * Prepares a link's answers once; `headers` are every header of the route's 200 (name, value,
 * ...) but ETag, Last-Modified, Accept-Ranges and Content-Length. `revalidate`: the fast path
 * answers 304s too (its route's 304 carries the same headers). The caller keeps the result
 * with the cached entry it came from, so a changed entry (a new cache entry) never reuses old
 * heads.
 */
export function linkHit(headers: readonly string[], v: LinkValidators, size: number, body: string | Buffer, revalidate = true): LinkHit {
  const validators = [...headers, 'ETag', v.etag, 'Last-Modified', httpDate(v.lastModifiedSec), 'Accept-Ranges', 'bytes']
  return {
    ok: prepare(200, [...validators, 'Content-Length', String(size)]),
    notModified: revalidate ? prepare(304, validators) : null,
    etag: v.etag,
    etags: v.etags,
    lastModifiedSec: v.lastModifiedSec,
    size,
    body,
  }
}

export interface PublicLinkOptions {
  /** URL prefixes, each ending in '/', followed by the link's token. */
  prefixes: readonly string[]
  /**
   * The answer from memory for this token and raw query string (without '?'), or null: the
   * route answers (not cached yet, held for review, a query it does not take, an error).
   * `req`: for an answer that depends on a request header (Accept-Encoding).
   */
  peek(token: string, query: string, req: IncomingMessage): LinkHit | null
}

/**
 * The hot path of a public link (image originals and variants, hosted-data files): a GET whose
 * answer the feature knows from memory is answered before routing with prepared heads: 200
 * from the blob's open file (sendfile where it can) or from the bytes in memory, 304 when
 * If-None-Match / If-Modified-Since say so (the one decision of representation.ts). Anything
 * else (a 412 too) goes to the route, which answers the same way through Fastify: HEAD,
 * Range, a service worker's fetch, plain HTTP behind a proxy, a store without local files (S3
 * without a disk cache), a blob file gone. test/http/fast-path-parity.test.ts checks both give the same answer.
 */
export function publicLinkFastPath(deps: Deps, files: ReturnType<typeof publicFiles>, o: PublicLinkOptions): FastPath {
  const { config, blobs, clock } = deps
  const localPath = blobs.localPathNow?.bind(blobs)
  const taken = (req: IncomingMessage): { token: string; query: string } | null => {
    const url = req.url ?? ''
    for (const prefix of o.prefixes) {
      if (!url.startsWith(prefix)) continue
      const q = url.indexOf('?', prefix.length)
      return { token: q < 0 ? url.slice(prefix.length) : url.slice(prefix.length, q), query: q < 0 ? '' : url.slice(q + 1) }
    }
    return null
  }
  return (req, res) => {
    if (req.method !== 'GET') return false
    const at = taken(req)
    if (at === null) return false
    const h = req.headers
    if (h.range !== undefined || h['service-worker'] !== undefined || (config.trustProxy && !isHttps(req, config))) return false
    const hit = o.peek(at.token, at.query, req)
    if (hit === null) return false
    const d = decide(h, { status: 200, size: hit.size, etag: hit.etag, etags: hit.etags, lastModifiedSec: hit.lastModifiedSec })
    // a failed precondition (If-Match, If-Unmodified-Since): the route's 412
    if (d.kind === 'precondition-failed') return false
    if (d.kind === 'not-modified') {
      if (hit.notModified === null) return false
      sendPrepared(req, res, hit.notModified, undefined, undefined, clock)
      return true
    }
    if (typeof hit.body !== 'string') {
      sendPrepared(req, res, hit.ok, hit.body, undefined, clock)
      return true
    }
    if (localPath === undefined) return false
    try {
      const f = files.get(hit.body) ?? files.openSync(hit.body, localPath(hit.body), hit.size)
      if (f === null) return false
      // a short file throws before anything is written (sendfile closes the connection instead)
      sendPreparedFile(req, res, hit.ok, f.fd, hit.size, config.sendfile, clock)
    } catch {
      if (!res.headersSent) return false
      res.destroy()
    }
    return true
  }
}
