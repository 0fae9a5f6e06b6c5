import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { publicCorsHeaders, publicPreflight, setPublicCors, setUserContentHeaders, userContentHeaderList } from '../../http/content-headers.js'
import { createHostedData, MAX_VERSION, PUBLIC_TOKEN_RE } from './service.js'
import { servedContentType } from './content.js'
import type { ServedEntry } from './cache.js'
import type { VersionPick } from './store.js'
import { LinkConditionHeaders, linkResponses } from '../../http/conditional-schemas.js'
import { PublicQuery } from './schemas.js'
import { decide, httpDate, pickEncoding, replyRange, type Representation } from '../../http/representation.js'
import { linkHit, publicFiles, publicLinkFastPath, type LinkHit, type LinkValidators } from '../../http/public-link.js'
import { heldLink, linkHeldNow, removedNotice, sendNotice } from '../abuse/public.js'
import { createEncodings, type Encoded } from '../sites/encodings.js'

const CACHE_DEFAULT = 'public, no-cache'
const CACHE_PINNED = 'public, max-age=31536000, immutable'
/** `?v=`: a version number, or `latest` (the newest version the file has). */
const V_RE = /^(?:[1-9]\d{0,9}|latest)$/
/** Only a numbered version never changes; the default and the latest are revalidated on every use. */
const cacheOf = (version: VersionPick) => (typeof version === 'number' ? CACHE_PINNED : CACHE_DEFAULT)
/** A page on another origin may read which version it got (X-Data-Version), to pin it with ?v=N. */
const DATA_CORS_HEADERS = publicCorsHeaders('X-Data-Version')
/** Every type a data file may have is text: bodies from this size on are offered compressed (as hosted pages are). */
const COMPRESS_MIN_BYTES = 256

type Enc = 'br' | 'gzip'
const compressible = (e: ServedEntry) => e.size >= COMPRESS_MIN_BYTES
const VARY_WORKER = 'Service-Worker'
/**
 * Vary of an answer: Accept-Encoding when a compressed form may be chosen; Service-Worker for
 * a pinned version, which a cache keeps a year without asking and so must not hand to a
 * worker's fetch, which the link refuses (403). The default and the latest are revalidated on
 * every use, where the worker's request gets its own answer (decision 290). Null: none.
 */
const varyOf = (e: ServedEntry, version: VersionPick): string | null => {
  const names = [...(compressible(e) ? ['Accept-Encoding'] : []), ...(typeof version === 'number' ? [VARY_WORKER] : [])]
  return names.length === 0 ? null : names.join(', ')
}
/** A compressed form's validator: the identity tag with the encoding's suffix. */
const encodedTag = (etag: string, enc: Enc) => `${etag.slice(0, -1)}-${enc === 'br' ? 'br' : 'gz'}"`
/** What revalidations match: the identity bytes and their compressed forms are the same content. */
const representationOf = (e: ServedEntry): Representation => ({
  status: 200,
  size: e.size,
  etag: e.etag,
  etags: compressible(e) ? [e.etag, encodedTag(e.etag, 'br'), encodedTag(e.etag, 'gzip')] : undefined,
  lastModified: httpDate(e.lastModifiedSec),
  lastModifiedSec: e.lastModifiedSec,
})

/** A prepared answer's validators: `etag` its own (identity or compressed), the rest the entry's. */
const validatorsOf = (e: ServedEntry, etag: string): LinkValidators => ({ etag, etags: representationOf(e).etags, lastModifiedSec: e.lastModifiedSec })

const text = (reply: FastifyReply, code: number, body: string) => {
  setUserContentHeaders(reply, 'inert')
  return reply.code(code).header('Cache-Control', 'no-store').type('text/plain; charset=utf-8').send(body)
}

/** What a representation chosen before a miss set: an error answer or a removal notice names none of it. */
const REPRESENTATION_HEADERS = ['Content-Length', 'ETag', 'Last-Modified', 'Accept-Ranges', 'X-Data-Version', 'Vary', 'Content-Range', 'Content-Encoding']

/**
 * A refusal of the link (a missing token or version, a malformed `v`): thrown to the one error
 * handler, which answers it in the route's error format, the feature's `{success:false, message}`
 * (as the image link's), in the request's language. Inert and never stored, as the link's bytes.
 */
const refuse = (reply: FastifyReply, err: AppError): never => {
  for (const h of REPRESENTATION_HEADERS) reply.removeHeader(h)
  setUserContentHeaders(reply, 'inert')
  reply.header('Cache-Control', 'no-store')
  throw err
}
const notFound = (reply: FastifyReply) => refuse(reply, new AppError('RESOURCE_NOT_FOUND'))

/**
 * Public raw links: GET/HEAD /svc-data/pub/{token} and /hosted-data/pub/{token} return the
 * default version's exact bytes with its content type (`?v=N`: one pinned version;
 * `?v=latest`: the newest version, revalidated like the default). No auth,
 * no cookies read or set, CORS `*` without credentials, inert sandbox CSP and nosniff so no
 * HTML, SVG or XML here ever runs with the service origin's authority. ETag and Last-Modified
 * (ServedEntry.lastModifiedSec) / 304, If-Match / If-Unmodified-Since / 412; the
 * default link is revalidated on every use (a switched default shows at once), pinned
 * versions are immutable and cached for a year. One `bytes=` range: 206 (If-Range), 416.
 * A whole body of 256 bytes or more goes out br or gzip to a client that accepts it, once
 * that form is made (in the background, as for hosted pages: ../sites/encodings.ts); ranges
 * are always of the identity bytes.
 */
export function hostedDataPublic(app: FastifyInstance, deps: Deps): void {
  const svc = deps.services.get(createHostedData)
  const encodings = createEncodings(deps.blobs, app.log)
  app.addHook('onClose', async () => encodings.close())

  /** The compressed form of `e` this request takes, if it is made; asks for it otherwise. */
  const formFor = (req: IncomingMessage, e: ServedEntry): { enc: Enc; v: Encoded } | null => {
    if (!compressible(e)) return null
    const enc = pickEncoding(req.headers['accept-encoding'])
    if (enc === null) return null
    const v = encodings.get(e.digest, enc)
    if (v === undefined) encodings.request(e.digest, enc)
    return v ? { enc, v } : null
  }

  const serve = async (req: FastifyRequest, reply: FastifyReply) => {
    const { token } = req.params as { token: string }
    setPublicCors(reply, DATA_CORS_HEADERS)
    // a hosted file never becomes a service worker over the service's origin; the refusal
    // exists only because of the header, so it says so (decision 290)
    if (req.headers['service-worker'] !== undefined) return text(reply.header('Vary', VARY_WORKER), 403, 'Forbidden')
    if (!PUBLIC_TOKEN_RE.test(token)) return notFound(reply)
    const q = (req.query as Record<string, unknown>).v
    let version: VersionPick = null
    if (q !== undefined) {
      if (typeof q !== 'string' || !V_RE.test(q))
        return refuse(
          reply,
          new AppError('INVALID_PARAMETER', {
            params: { detail: { zh: 'v 须为版本号（1、2……）或 latest', en: 'v must be a version number (1, 2, ...) or latest' } },
          }),
        )
      version = q === 'latest' ? q : Number(q)
      if (typeof version === 'number' && version > MAX_VERSION) return notFound(reply)
    }
    const held = await heldLink(deps, req, 'data', token)
    if (held) return sendNotice(reply, held, req.method === 'HEAD')
    let entry = await svc.resolve(token, version)
    if (!entry) return notFound(reply)
    // bytes taken down anywhere (another file's, another user's) answer as removed content
    if (entry.blocked) return sendNotice(reply, removedNotice(deps, req), req.method === 'HEAD')

    /** Sets the answer's headers and status; the blob (and range of it) to send, or null: no body. */
    const answer = (e: ServedEntry): { digest: string; part?: { start: number; end: number }; enc?: Enc } | null => {
      setUserContentHeaders(reply, 'inert')
      reply.header('Cache-Control', cacheOf(version))
      reply.header('X-Data-Version', String(e.version))
      reply.type(servedContentType(e.content_type))
      const vary = varyOf(e, version)
      if (vary !== null) reply.header('Vary', vary)
      const r = representationOf(e)
      const form = formFor(req.raw, e)
      if (form !== null) {
        const d = decide(req.headers, r)
        if (d.kind === 'whole' || d.kind === 'not-modified') {
          reply.header('ETag', encodedTag(e.etag, form.enc)).header('Last-Modified', r.lastModified).header('Accept-Ranges', 'bytes')
          if (d.kind === 'not-modified') {
            reply.code(304)
            return null
          }
          reply.header('Content-Encoding', form.enc).header('Content-Length', String(form.v.size))
          return req.method === 'HEAD' ? null : { digest: form.v.digest, enc: form.enc }
        }
      }
      // ETag, 304, Range (206, 416, If-Range) and HEAD: one implementation for every public body
      const part = replyRange(req, reply, r)
      return part === null ? null : { digest: e.digest, part }
    }
    let a = answer(entry)
    if (a === null) return reply.send()
    let stream
    try {
      stream = await deps.blobs.get(a.digest, a.part)
    } catch {
      // a compressed form swept: forget it (made again later); the version changed under us
      // (deleted, blob swept): drop the cached entry. Then look again once
      if (a.enc !== undefined) encodings.forget(entry.digest, a.enc)
      svc.cache.drop(token)
      entry = await svc.resolve(token, version)
      if (!entry) return notFound(reply)
      for (const h of ['Content-Range', 'Content-Encoding']) reply.removeHeader(h)
      if (entry.blocked) {
        for (const h of REPRESENTATION_HEADERS) reply.removeHeader(h)
        return sendNotice(reply, removedNotice(deps, req), req.method === 'HEAD')
      }
      reply.code(200)
      a = answer(entry)
      if (a === null) return reply.send()
      stream = await deps.blobs.get(a.digest, a.part)
    }
    return reply.send(stream)
  }

  // cached answers skip the router: the same headers, prepared once per cached version and form
  const files = deps.services.get(publicFiles)
  app.addHook('onClose', async () => files.closeAll())
  const hits = new WeakMap<ServedEntry, { identity: LinkHit; br?: LinkHit; gzip?: LinkHit }>()
  app.addFastPath(
    publicLinkFastPath(deps, files, {
      prefixes: ['/svc-data/pub/', '/hosted-data/pub/'],
      peek(token, query, req) {
        if (!PUBLIC_TOKEN_RE.test(token) || linkHeldNow(deps, 'data', token) !== false) return null
        let version: VersionPick = null
        if (query !== '') {
          const m = /^v=(.*)$/.exec(query)
          if (m === null || !V_RE.test(m[1])) return null
          version = m[1] === 'latest' ? 'latest' : Number(m[1])
        }
        const e = svc.cache.get(token, version)
        // taken-down bytes are answered by the route (451)
        if (e === undefined || e.blocked) return null
        // made once per cached version and form (hits below), never on a hit
        const headers = () => [
          ...DATA_CORS_HEADERS,
          ...userContentHeaderList('inert').flat(),
          'Cache-Control',
          cacheOf(version),
          'X-Data-Version',
          String(e.version),
          'Content-Type',
          servedContentType(e.content_type),
          ...[varyOf(e, version)].flatMap((vary) => (vary === null ? [] : ['Vary', vary])),
        ]
        let mine = hits.get(e)
        if (mine === undefined) {
          mine = { identity: linkHit(headers(), validatorsOf(e, e.etag), e.size, e.digest) }
          hits.set(e, mine)
        }
        const form = formFor(req, e)
        if (form === null) return mine.identity
        let hit = mine[form.enc]
        if (hit === undefined || hit.body !== form.v.digest) {
          const h = [...headers(), 'Content-Encoding', form.enc]
          hit = mine[form.enc] = linkHit(h, validatorsOf(e, encodedTag(e.etag, form.enc)), form.v.size, form.v.digest)
        }
        return hit
      },
    }),
  )

  for (const prefix of ['/svc-data/pub', '/hosted-data/pub']) {
    app.route({
      method: ['GET', 'HEAD'],
      url: `${prefix}/:token`,
      config: { errorFormat: 'plain' },
      schema: {
        tags: ['hosted-data'],
        summary: "Public raw link: the default version's bytes (?v=N: one version; ?v=latest: the newest)",
        querystring: PublicQuery,
        headers: LinkConditionHeaders,
        response: linkResponses({
          media: '*/*',
          bytes: "The version's exact bytes, with its text content type (br or gzip when accepted); Range: one bytes range answers 206",
          etag: "The version's strong validator; a compressed form's adds -br or -gz",
          headers: { 'X-Data-Version': { type: 'integer', description: 'the version served (pin it with ?v=N)' } },
        }),
      },
      handler: serve,
    })
    app.options(`${prefix}/:token`, { schema: { hide: true } }, publicPreflight(DATA_CORS_HEADERS))
  }
}
