import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { errorMessage, langOf } from '../../errors/render.js'
import { publicCorsHeaders, publicPreflight, setPublicCors, setUserContentHeaders, userContentHeaderList } from '../../http/content-headers.js'
import { LinkConditionHeaders, linkResponses } from '../../http/conditional-schemas.js'
import { decide, httpDate, replyRange, type Representation } from '../../http/representation.js'
import { linkHit, publicFiles, publicLinkFastPath, type LinkHit } from '../../http/public-link.js'
import { originalEtag, TOKEN_RE, versionOf, type ImageHost, type ServedImage } from './service.js'
import { parseVariantParams, variantEtag, type Variant, type Variants, type VariantParams } from './variants.js'
import { PublicQuery } from './schemas.js'
import { windowRefusal } from '../../http/guard.js'
import { ipLimitKey } from '../../http/ip-key.js'
import { clientIp } from '../../http/origin.js'
import type { WindowRule } from '../../limits/tiers.js'
import { heldLink, linkHeldNow, removedNotice, sendNotice } from '../abuse/public.js'

/**
 * New variants (transformations not cached nor running) per client address: a gallery's first
 * view fits, an address cycling through sizes to keep the cores busy does not (decision 229).
 */
export const VARIANT_RULES: WindowRule[] = [
  { name: 'minute', kind: 'sliding', ms: 60_000, limit: 120 },
  { name: 'hour', kind: 'sliding', ms: 3_600_000, limit: 1200 },
]

/** The link's CORS grant: a page elsewhere also reads when to ask again after a 429 of new variants. */
const IMAGE_CORS_HEADERS = publicCorsHeaders('Retry-After')

/** Stable URL: caches keep it but revalidate every use (ETag -> 304), so a replace shows at once. */
export const CACHE_STABLE = 'public, no-cache'
/** Versioned URL (?v= the current content version): the bytes behind it never change. */
export const CACHE_IMMUTABLE = 'public, max-age=31536000, immutable'
/**
 * Vary of a versioned URL's answers: a cache keeps them a year without asking, so it must not
 * hand one to a worker's fetch, which the link refuses (403). A stable URL's answer is
 * revalidated on every use, where the worker's request gets its own answer (decision 290).
 */
const VARY_WORKER = 'Service-Worker'

function plainError(req: FastifyRequest, reply: FastifyReply, status: number, err: AppError) {
  reply.header('Cache-Control', 'no-store')
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ success: false, message: errorMessage(err.key, langOf(req), err.options.params) })
}

/**
 * GET and HEAD /svc-img/pub/{token} and /image-host/pub/{token}: no auth, no rate limit, no
 * cookies read or set. The answer is inert (CSP sandbox, default-src 'none', nosniff), so an
 * SVG's scripts never run, and carries the content digest as ETag and the image's last
 * change as Last-Modified. ?w=&h=&format= ask for a
 * resized or converted variant (an SVG is answered as is: the browser scales it).
 */
export function imagePublic(app: FastifyInstance, deps: Deps, host: ImageHost, variants: Variants): void {
  const { blobs } = deps

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const { token } = req.params as { token: string }
    const query = req.query as Record<string, unknown>
    // every answer of a public link is inert and readable from any page, errors included
    setUserContentHeaders(reply, 'inert')
    setPublicCors(reply, IMAGE_CORS_HEADERS)
    // a hosted file never becomes a service worker over the service's origin; the refusal
    // exists only because of the header, so it says so (decision 290)
    if (req.headers['service-worker'] !== undefined)
      return reply.code(403).header('Cache-Control', 'no-store').header('Vary', VARY_WORKER).type('text/plain; charset=utf-8').send('Forbidden')
    let params: VariantParams | null
    try {
      params = parseVariantParams(query)
    } catch (e) {
      if (e instanceof AppError) return plainError(req, reply, 400, e)
      throw e
    }
    const held = TOKEN_RE.test(token) ? await heldLink(deps, req, 'image', token) : null
    if (held) return sendNotice(reply, held, req.method === 'HEAD')
    const img = TOKEN_RE.test(token) ? await host.lookup(token) : undefined
    if (!img) return plainError(req, reply, 404, new AppError('RESOURCE_NOT_FOUND'))
    // bytes taken down anywhere (another image, another user's) answer as removed content, variants too
    if (img.blocked) return sendNotice(reply, removedNotice(deps, req), req.method === 'HEAD')
    // an SVG is drawn at any size by the page itself: valid variant parameters get the SVG as is
    if (img.content_type === 'image/svg+xml') params = null

    const etag = params ? variantEtag(img.digest, params) : originalEtag(img.digest)
    const lastModifiedSec = lastModifiedOf(img)
    const rep = (size: number): Representation => ({ status: 200, size, etag, lastModified: httpDate(lastModifiedSec), lastModifiedSec })
    const v = Array.isArray(query.v) ? query.v[query.v.length - 1] : query.v
    const cc = v === versionOf(img.digest) ? CACHE_IMMUTABLE : CACHE_STABLE
    reply.header('Cache-Control', cc)
    if (cc === CACHE_IMMUTABLE) reply.header('Vary', VARY_WORKER)
    // ETag, 304, Range (206, 416, If-Range) and HEAD: one implementation for every public body
    if (params) {
      // a variant's validators are known before any work: a 304 or 412 never makes the variant
      const early = decide(req.headers, rep(0)).kind
      if (early === 'not-modified' || early === 'precondition-failed') return reply.send(replyRange(req, reply, rep(0)) ?? undefined)
      const client = ipLimitKey(clientIp(req, deps.config))
      const admit = async () => {
        const r = await deps.limits.hit(`variant:ip:${client}`, VARIANT_RULES, deps.clock.now(), true)
        if (!r.allowed) throw windowRefusal(r, 'new image variants per client address').error
      }
      const variant = await variants.get(img.digest, img.content_type, params, () => blobs.read(img.digest), { key: client, admit })
      reply.type(variant.contentType)
      const part = replyRange(req, reply, rep(variant.bytes.length))
      return reply.send(part === null ? undefined : variant.bytes.subarray(part.start, part.end + 1))
    }
    reply.type(img.content_type)
    const part = replyRange(req, reply, rep(img.size))
    return reply.send(part === null ? undefined : await blobs.get(img.digest, part))
  }

  // cached answers skip the router: the same headers, prepared once per cached image or variant
  const files = deps.services.get(publicFiles)
  app.addHook('onClose', async () => files.closeAll())
  const originals = new WeakMap<ServedImage, Partial<Record<string, LinkHit>>>()
  const resized = new WeakMap<Variant, Partial<Record<string, LinkHit>>>()
  const headers = (cacheControl: string, type: string) => [
    ...userContentHeaderList('inert').flat(),
    ...IMAGE_CORS_HEADERS,
    'Cache-Control',
    cacheControl,
    ...(cacheControl === CACHE_IMMUTABLE ? ['Vary', VARY_WORKER] : []),
    'Content-Type',
    type,
  ]
  app.addFastPath(
    publicLinkFastPath(deps, files, {
      prefixes: ['/svc-img/pub/', '/image-host/pub/'],
      peek(token, query) {
        if (!TOKEN_RE.test(token) || linkHeldNow(deps, 'image', token) !== false) return null
        const img = host.peek(token)
        // taken-down bytes (and their variants) are answered by the route (451)
        if (img === undefined || img.blocked) return null
        const q = plainQuery(query)
        if (q === null) return null
        let params: VariantParams | null
        try {
          params = parseVariantParams(q)
        } catch {
          return null
        }
        const cc = q.v === versionOf(img.digest) ? CACHE_IMMUTABLE : CACHE_STABLE
        if (params === null || img.content_type === 'image/svg+xml') {
          let hits = originals.get(img)
          if (hits === undefined) originals.set(img, (hits = {}))
          return (hits[cc] ??= linkHit(
            headers(cc, img.content_type),
            { etag: originalEtag(img.digest), lastModifiedSec: lastModifiedOf(img) },
            img.size,
            img.digest,
          ))
        }
        const v = variants.peek(img.digest, params)
        if (v === undefined) return null
        let hits = resized.get(v)
        if (hits === undefined) resized.set(v, (hits = {}))
        // a variant's 304 is the route's: it answers before the variant is made
        return (hits[cc] ??= linkHit(
          headers(cc, v.contentType),
          { etag: variantEtag(img.digest, params), lastModifiedSec: lastModifiedOf(img) },
          v.bytes.length,
          v.bytes,
          false,
        ))
      },
    }),
  )

  for (const url of ['/svc-img/pub/:token', '/image-host/pub/:token']) {
    app.route({
      method: ['GET', 'HEAD'],
      url,
      config: { errorFormat: 'plain' },
      schema: {
        tags: ['image-host'],
        summary: 'Public image link (no authentication)',
        headers: LinkConditionHeaders,
        querystring: PublicQuery,
        response: linkResponses({
          media: 'image/*',
          bytes: 'The image (or the variant asked for), with its content type; Range: one bytes range answers 206',
          etag: "The content digest's strong validator (a variant's names its parameters too)",
        }),
      },
      handler,
    })
    app.options(url, { schema: { hide: true } }, publicPreflight(IMAGE_CORS_HEADERS))
  }
}

/** Last-Modified of an image and its variants (seconds): its last change (a replace moves it forward). */
const lastModifiedOf = (img: ServedImage) => Math.floor(img.updated_at / 1000)

const QUERY_NAMES = new Set(['v', 'w', 'h', 'format'])

/**
 * A public link's query string when it needs no decoding: the names the route reads, once
 * each, with letters and digits as values; null otherwise (the route parses it).
 */
function plainQuery(query: string): Record<string, string> | null {
  const q: Record<string, string> = {}
  if (query === '') return q
  for (const part of query.split('&')) {
    const eq = part.indexOf('=')
    const name = eq < 0 ? part : part.slice(0, eq)
    const value = eq < 0 ? '' : part.slice(eq + 1)
    if (!QUERY_NAMES.has(name) || name in q || !/^[A-Za-z0-9]*$/.test(value)) return null
    q[name] = value
  }
  return q
}
