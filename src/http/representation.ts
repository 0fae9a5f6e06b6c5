import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyReply } from 'fastify'
import { notModified, preconditionFails } from './conditional.js'

/**
 * The one implementation of conditional and partial GET/HEAD for public content (RFC 9110
 * sections 13 and 14): hosted pages on every URL form, image originals and variants, and
 * hosted-data links all decide here what to answer, and build the same headers for it.
 *
 * - If-Match (strong comparison, lists, `*`) decides alone when present; otherwise
 *   If-Unmodified-Since against Last-Modified. Either one failing: 412, before anything else
 *   (RFC 9110 13.2.2), with no body and a Cache-Control no shared cache keeps it by.
 * - If-None-Match (strong, weak `W/`, lists, `*`) decides alone when present; otherwise
 *   If-Modified-Since against Last-Modified (./conditional.ts). Either one: 304.
 * - Range: one `bytes=` range (first-last, first-, -suffix), clamped to the size: 206 with
 *   Content-Range; a range starting past the end (or a zero suffix): 416 with
 *   `Content-Range: bytes *` and the size; several ranges, a malformed or reversed one, or another
 *   unit: the whole body (200), which RFC 9110 allows.
 * - If-Range: the range applies only when it names the current strong ETag or the exact
 *   Last-Modified date; else the whole body.
 * - Only a 200 representation is validated or cut (a custom 404 page is sent whole, every
 *   precondition ignored: RFC 9110 13.2.1).
 */
export interface Representation {
  /** 200, or the status a site rule gives (custom 404 page): no 304, no range then. */
  status: number
  size: number
  /** The identity representation's strong ETag, quoted. */
  etag: string
  /** Every tag If-None-Match matches (this one and its other encodings'); default [etag]. */
  etags?: readonly string[]
  /** The Last-Modified date as sent, and as seconds since the epoch; absent: none. */
  lastModified?: string
  lastModifiedSec?: number
}

export type Decision =
  { kind: 'whole' } | { kind: 'precondition-failed' } | { kind: 'not-modified' } | { kind: 'unsatisfiable' } | { kind: 'range'; start: number; end: number }

/** The whole body, 200: no conditional or range header applies. */
export const WHOLE: Decision = { kind: 'whole' }
const PRECONDITION_FAILED: Decision = { kind: 'precondition-failed' }
const NOT_MODIFIED: Decision = { kind: 'not-modified' }
const UNSATISFIABLE: Decision = { kind: 'unsatisfiable' }

/** What to answer to a GET or HEAD of `r` with these request headers. */
export function decide(h: IncomingHttpHeaders, r: Representation): Decision {
  if (r.status !== 200) return WHOLE
  const im = h['if-match']
  const ius = h['if-unmodified-since']
  if ((im !== undefined || ius !== undefined) && preconditionFails(im, ius, r.etags ?? r.etag, r.lastModifiedSec)) return PRECONDITION_FAILED
  const inm = h['if-none-match']
  const ims = h['if-modified-since']
  if ((inm !== undefined || ims !== undefined) && notModified(inm, ims, r.etags ?? r.etag, r.lastModifiedSec)) return NOT_MODIFIED
  const range = h.range
  if (range === undefined) return WHOLE
  const ifRange = h['if-range']
  if (ifRange !== undefined && ifRange !== r.etag && (r.lastModified === undefined || ifRange !== r.lastModified)) return WHOLE
  const p = parseRange(range, r.size)
  if (p === null) return WHOLE
  if (p === 'unsatisfiable') return UNSATISFIABLE
  return { kind: 'range', start: p.start, end: p.end }
}

/**
 * Parses a single `bytes=` range against a size; null: ignore (serve 200); 'unsatisfiable': 416.
 * The unit is case-insensitive (RFC 9110 14.1) and blanks around the range are taken, as nginx
 * takes them.
 */
export function parseRange(h: string, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const m = /^bytes=[ \t]*(\d*)-(\d*)$/i.exec(h.trim())
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

/** Headers of a 206 (after the representation's own, ETag included), name/value pairs. */
export function partialHeaders(r: Pick<Representation, 'size'>, d: { start: number; end: number }): string[] {
  return ['Content-Range', `bytes ${d.start}-${d.end}/${r.size}`, 'Content-Length', String(d.end - d.start + 1)]
}

/**
 * The Cache-Control of a 412: it answers one request's precondition, so no shared cache may
 * keep it for the URL (the 200's `public` or `immutable` would let one).
 */
export const PRECONDITION_FAILED_CACHE = 'private, no-cache'

/** Headers of a 416. */
export function unsatisfiableHeaders(r: Pick<Representation, 'size'>): string[] {
  return ['Content-Range', `bytes */${r.size}`, 'Content-Length', '0']
}

export type Encoding = 'br' | 'gzip' | null

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

let dateSec = NaN
let dateText = ''
/** An HTTP date (Last-Modified) of seconds since the epoch (the last one kept: a deploy's files share theirs). */
export function httpDate(sec: number): string {
  if (sec !== dateSec) {
    dateText = new Date(sec * 1000).toUTCString()
    dateSec = sec
  }
  return dateText
}

/** The request fields a decision reads (a Fastify request or a Node one). */
interface RequestLike {
  method?: string
  headers: IncomingHttpHeaders
}

/**
 * Answers a GET/HEAD of `r` through a Fastify reply (image and hosted-data links): sets ETag,
 * Accept-Ranges, Last-Modified, the status (200, 206, 304, 412, 416), Content-Range and
 * Content-Length (and a 412's Cache-Control), and returns the byte range (inclusive) the
 * caller must send, or null when the answer has no body (304, 412, 416, HEAD): then
 * `reply.send()` alone. The caller sets the
 * Content-Type and the feature's own headers.
 */
export function replyRange(req: RequestLike, reply: FastifyReply, r: Representation): { start: number; end: number } | null {
  reply.header('ETag', r.etag)
  reply.header('Accept-Ranges', 'bytes')
  if (r.lastModified !== undefined) reply.header('Last-Modified', r.lastModified)
  const d = decide(req.headers, r)
  if (d.kind === 'precondition-failed') {
    reply.code(412).header('Cache-Control', PRECONDITION_FAILED_CACHE).header('Content-Length', '0')
    return null
  }
  if (d.kind === 'not-modified') {
    reply.code(304)
    return null
  }
  if (d.kind === 'unsatisfiable') {
    reply.code(416)
    const h = unsatisfiableHeaders(r)
    for (let i = 0; i < h.length; i += 2) reply.header(h[i], h[i + 1])
    return null
  }
  const range = d.kind === 'range' ? d : { start: 0, end: r.size - 1 }
  if (d.kind === 'range') reply.code(206).header('Content-Range', `bytes ${d.start}-${d.end}/${r.size}`)
  reply.header('Content-Length', String(range.end - range.start + 1))
  return req.method === 'HEAD' || range.end < range.start ? null : range
}
