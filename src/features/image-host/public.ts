import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { errorMessage, pickLang } from '../../errors/render.js'
import { setUserContentHeaders } from '../../http/content-headers.js'
import { etagMatches, originalEtag, TOKEN_RE, versionOf, type ImageHost } from './service.js'
import { parseVariantParams, variantEtag, type Variants, type VariantParams } from './variants.js'
import { PublicQuery } from './schemas.js'

/** Stable URL: caches keep it but revalidate every use (ETag -> 304), so a replace shows at once. */
export const CACHE_STABLE = 'public, no-cache'
/** Versioned URL (?v= the current content version): the bytes behind it never change. */
export const CACHE_IMMUTABLE = 'public, max-age=31536000, immutable'

/** Originals up to this size are kept in memory (by digest, so never stale); larger ones stream from the store. */
const SMALL_BLOB_BYTES = 256 * 1024
const SMALL_CACHE_BYTES = 32 * 1024 * 1024

/** LRU of whole small blobs keyed by their digest (content-addressed: a replace has a new key). */
function createSmallBlobCache(maxEntry: number, maxTotal: number) {
  const map = new Map<string, Buffer>()
  let total = 0
  return {
    async get(digest: string, load: () => Promise<Buffer>): Promise<Buffer> {
      const hit = map.get(digest)
      if (hit) {
        map.delete(digest)
        map.set(digest, hit)
        return hit
      }
      const b = await load()
      if (b.length <= maxEntry && !map.has(digest)) {
        map.set(digest, b)
        total += b.length
        for (const [k, v] of map) {
          if (total <= maxTotal) break
          map.delete(k)
          total -= v.length
        }
      }
      return b
    },
  }
}

function plainError(req: FastifyRequest, reply: FastifyReply, status: number, err: AppError) {
  reply.header('Cache-Control', 'no-store')
  return reply.code(status).type('application/json; charset=utf-8')
    .send({ success: false, message: errorMessage(err.key, pickLang(req.headers['accept-language']), err.options.params) })
}

/**
 * GET and HEAD /svc-img/pub/{token} and /image-host/pub/{token}: no auth, no rate limit, no
 * cookies read or set. The answer is inert (CSP sandbox, default-src 'none', nosniff), so an
 * SVG's scripts never run, and carries the content digest as ETag. ?w=&h=&format= ask for a
 * resized or converted variant (not for SVG).
 */
export function imagePublic(app: FastifyInstance, deps: Deps, host: ImageHost, variants: Variants): void {
  const { blobs } = deps
  const small = createSmallBlobCache(SMALL_BLOB_BYTES, SMALL_CACHE_BYTES)

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const { token } = req.params as { token: string }
    const query = req.query as Record<string, unknown>
    if (req.headers['service-worker'] !== undefined) return reply.code(403).type('text/plain; charset=utf-8').send('Forbidden')
    let params: VariantParams | null
    try {
      params = parseVariantParams(query)
    } catch (e) {
      if (e instanceof AppError) return plainError(req, reply, 400, e)
      throw e
    }
    const img = TOKEN_RE.test(token) ? await host.lookup(token) : undefined
    if (!img) return plainError(req, reply, 404, new AppError('RESOURCE_NOT_FOUND'))
    if (params && img.content_type === 'image/svg+xml') {
      return plainError(req, reply, 400, new AppError('INVALID_PARAMETER', { params: { detail: 'resizing and conversion are not available for SVG images' } }))
    }

    const etag = params ? variantEtag(img.digest, params) : originalEtag(img.digest)
    const v = Array.isArray(query.v) ? query.v[query.v.length - 1] : query.v
    setUserContentHeaders(reply, 'inert')
    reply.header('Access-Control-Allow-Origin', '*')
    reply.header('Access-Control-Expose-Headers', 'ETag, Content-Length, Content-Type')
    reply.header('Cache-Control', v === versionOf(img.digest) ? CACHE_IMMUTABLE : CACHE_STABLE)
    reply.header('ETag', etag)
    if (etagMatches(req.headers['if-none-match'], etag)) return reply.code(304).send()

    if (params) {
      const variant = await variants.get(img.digest, img.content_type, params, () => blobs.read(img.digest))
      reply.type(variant.contentType).header('Content-Length', String(variant.bytes.length))
      return req.method === 'HEAD' ? reply.send() : reply.send(variant.bytes)
    }
    reply.type(img.content_type).header('Content-Length', String(img.size))
    if (req.method === 'HEAD') return reply.send()
    if (img.size <= SMALL_BLOB_BYTES) return reply.send(await small.get(img.digest, () => blobs.read(img.digest)))
    return reply.send(await blobs.get(img.digest))
  }

  for (const url of ['/svc-img/pub/:token', '/image-host/pub/:token']) {
    app.route({
      method: ['GET', 'HEAD'],
      url,
      schema: { tags: ['image-host'], summary: 'Public image link (no authentication)', querystring: PublicQuery },
      handler,
    })
  }
}
