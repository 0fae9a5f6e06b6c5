import type { Deps } from '../../deps.js'
import type { FastPath } from '../../http/types.js'
import { admitNow, anonymousIdentity, rateHeaderList, type Admission } from '../../http/guard.js'
import { isHttps } from '../../http/origin.js'
import { prepare, sendPrepared, type Prepared } from '../../http/prepared-response.js'
import type { Cached } from './public-cache.js'
import type { KvService } from './service.js'
import { PUBLIC_FAILED_HEADERS, PUBLIC_JSON, PUBLIC_READ_HEADERS, readCondition } from './routes.js'

const PREFIX = '/svc_api/data/public/'
/** Segments that need no decoding (every valid username and key is one). */
const PLAIN = /^[A-Za-z0-9_.~-]{1,200}$/

const etagOf = (c: Cached): string[] => (c.etag === null ? [] : ['ETag', c.etag])

function headOf(c: Cached & { body: Buffer }): Prepared {
  if (c.head === undefined) {
    c.head = prepare(200, [
      'Content-Type',
      PUBLIC_JSON,
      ...PUBLIC_READ_HEADERS,
      ...etagOf(c),
      'X-Content-Type-Options',
      'nosniff',
      'Content-Length',
      String(c.body.length),
    ])
  }
  return c.head
}

/** The 304 of a line with an ETag: the route's headers without a body. */
function notModifiedHeadOf(c: Cached): Prepared {
  if (c.notModifiedHead === undefined) {
    c.notModifiedHead = prepare(304, ['Content-Type', PUBLIC_JSON, ...PUBLIC_READ_HEADERS, ...etagOf(c), 'X-Content-Type-Options', 'nosniff'])
  }
  return c.notModifiedHead
}

/** The 412 of a line: the route's, no body, a Cache-Control no shared cache keeps it by. */
function failedHeadOf(c: Cached): Prepared {
  if (c.failedHead === undefined) {
    c.failedHead = prepare(412, [
      'Content-Type',
      PUBLIC_JSON,
      ...PUBLIC_FAILED_HEADERS,
      ...etagOf(c),
      'X-Content-Type-Options',
      'nosniff',
      'Content-Length',
      '0',
    ])
  }
  return c.failedHead
}

/**
 * The hot path of GET /svc_api/data/public/{username}/{key} (and the legacy /{key}): an
 * anonymous read whose answer this instance has cached is counted against the caller's IP
 * limits exactly as the API guard counts it (`admitNow`: the guard's `admit` for an answer
 * written at once; same store, same X-RateLimit-* headers) and answered with a prepared head, without Fastify's routing and hooks:
 * 200, 412 when If-Match names no ETag of the line, or 304 when If-None-Match names it
 * (routes.ts readCondition, as the route decides). Anything
 * else is left to the route: a miss, a 1604, a request with credentials (counted per key or
 * account), plain HTTP (1116), HEAD, names that need decoding. A refused admission (429, or
 * 1504 when the limit store is down) is handed to the route with the admission attached, so
 * the guard renders it in the API's format without counting the request twice.
 */
export function kvPublicFastPath(deps: Deps, kv: KvService): FastPath {
  const { config, limits, tiers, clock } = deps
  return (req, res, route) => {
    if (req.method !== 'GET') return false
    const url = req.url ?? ''
    if (!url.startsWith(PREFIX)) return false
    const h = req.headers
    if (h.authorization !== undefined || h.cookie !== undefined) return false
    const q = url.indexOf('?', PREFIX.length)
    const rest = q < 0 ? url.slice(PREFIX.length) : url.slice(PREFIX.length, q)
    const slash = rest.indexOf('/')
    const username = slash < 0 ? undefined : rest.slice(0, slash)
    const key = slash < 0 ? rest : rest.slice(slash + 1)
    if (!PLAIN.test(key) || (username !== undefined && !PLAIN.test(username))) return false
    const hit = kv.peekPublic(username, key)
    if (hit === undefined || hit.body === null || !isHttps(req, config)) return false
    const c = readCondition(h, hit.etag)
    const body = c === 'whole' ? hit.body : undefined
    const head = c === 'whole' ? headOf(hit as Cached & { body: Buffer }) : c === 'failed' ? failedHeadOf(hit) : notModifiedHeadOf(hit)
    const answer = (a: Admission) => {
      if (a.ok) {
        sendPrepared(req, res, head, body, rateHeaderList(a.window), clock)
        return
      }
      route(req, res, { admission: a })
    }
    const failed = (err: unknown) => route(req, res, { admission: { failed: err } })
    // the memory store answers at once (the whole read is then synchronous, and holds its
    // concurrency slot only while it runs); Redis later, holding the slot until the answer closes
    let a: Admission | Promise<Admission>
    try {
      a = admitNow(limits, anonymousIdentity(req, config), tiers.default, clock.now(), res)
    } catch (err) {
      failed(err)
      return true
    }
    if (a instanceof Promise) a.then(answer, failed)
    else answer(a)
    return true
  }
}
