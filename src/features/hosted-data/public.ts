import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { PUBLIC_PREFLIGHT_HEADERS, publicCorsHeaders, setPublicCors, setUserContentHeaders, userContentHeaderList } from '../../http/content-headers.js'
import { createHostedData, PUBLIC_TOKEN_RE } from './service.js'
import { servedContentType } from './content.js'
import type { ServedEntry } from './cache.js'
import { replyRange } from '../../http/representation.js'
import { linkHit, publicFiles, publicLinkFastPath, type LinkHit } from '../../http/public-link.js'
import { heldLink, linkHeldNow, removedNotice, sendNotice } from '../abuse/public.js'

const CACHE_DEFAULT = 'public, no-cache'
const CACHE_PINNED = 'public, max-age=31536000, immutable'
/** A page on another origin may read which version it got (X-Data-Version), to pin it with ?v=N. */
const DATA_CORS_HEADERS = publicCorsHeaders('X-Data-Version')

const text = (reply: FastifyReply, code: number, body: string) => {
  setUserContentHeaders(reply, 'inert')
  return reply.code(code).header('Cache-Control', 'no-store').type('text/plain; charset=utf-8').send(body)
}

/**
 * Public raw links: GET/HEAD /svc-data/pub/{token} and /hosted-data/pub/{token} return the
 * default version's exact bytes with its content type (`?v=N`: one pinned version). No auth,
 * no cookies read or set, CORS `*` without credentials, inert sandbox CSP and nosniff so no
 * HTML, SVG or XML here ever runs with the service origin's authority. ETag / 304; the
 * default link is revalidated on every use (a switched default shows at once), pinned
 * versions are immutable and cached for a year. One `bytes=` range: 206 (If-Range), 416.
 */
export function hostedDataPublic(app: FastifyInstance, deps: Deps): void {
  const svc = deps.services.get(createHostedData)

  const serve = async (req: FastifyRequest, reply: FastifyReply) => {
    const { token } = req.params as { token: string }
    setPublicCors(reply, DATA_CORS_HEADERS)
    if (req.headers['service-worker'] !== undefined) return text(reply, 403, 'Forbidden')
    if (!PUBLIC_TOKEN_RE.test(token)) return text(reply, 404, 'Not Found')
    const q = (req.query as Record<string, unknown>).v
    let version: number | null = null
    if (q !== undefined) {
      if (typeof q !== 'string' || !/^[1-9]\d{0,9}$/.test(q)) return text(reply, 400, 'Bad Request: v must be a version number')
      version = Number(q)
    }
    const held = await heldLink(deps, req, 'data', token)
    if (held) return sendNotice(reply, held, req.method === 'HEAD')
    let entry = await svc.resolve(token, version)
    if (!entry) return text(reply, 404, 'Not Found')
    // bytes taken down anywhere (another file's, another user's) answer as removed content
    if (entry.blocked) return sendNotice(reply, removedNotice(deps, req), req.method === 'HEAD')

    const headers = (e: ServedEntry) => {
      setUserContentHeaders(reply, 'inert')
      reply.header('Cache-Control', version === null ? CACHE_DEFAULT : CACHE_PINNED)
      reply.header('X-Data-Version', String(e.version))
      reply.type(servedContentType(e.content_type))
      // ETag, 304, Range (206, 416, If-Range) and HEAD: one implementation for every public body
      return replyRange(req, reply, { status: 200, size: Number(e.size), etag: e.etag })
    }
    let part = headers(entry)
    if (part === null) return reply.send()
    let stream
    try {
      stream = await deps.blobs.get(entry.digest, part)
    } catch {
      // the version changed under us (deleted, blob swept): drop the cached entry and look again once
      svc.cache.drop(token)
      entry = await svc.resolve(token, version)
      if (!entry) return text(reply, 404, 'Not Found')
      if (entry.blocked) {
        for (const h of ['Content-Range', 'Content-Length', 'ETag', 'Accept-Ranges', 'X-Data-Version']) reply.removeHeader(h)
        return sendNotice(reply, removedNotice(deps, req), req.method === 'HEAD')
      }
      reply.code(200).removeHeader('Content-Range')
      part = headers(entry)
      if (part === null) return reply.send()
      stream = await deps.blobs.get(entry.digest, part)
    }
    return reply.send(stream)
  }

  const preflight = async (_req: FastifyRequest, reply: FastifyReply) => {
    setPublicCors(reply, DATA_CORS_HEADERS)
    for (let i = 0; i < PUBLIC_PREFLIGHT_HEADERS.length; i += 2) reply.header(PUBLIC_PREFLIGHT_HEADERS[i], PUBLIC_PREFLIGHT_HEADERS[i + 1])
    return reply.code(204).send()
  }

  // cached answers skip the router: the same headers, prepared once per cached version
  const files = deps.services.get(publicFiles)
  app.addHook('onClose', async () => files.closeAll())
  const hits = new WeakMap<ServedEntry, LinkHit>()
  app.addFastPath(
    publicLinkFastPath(deps, files, {
      prefixes: ['/svc-data/pub/', '/hosted-data/pub/'],
      peek(token, query) {
        if (!PUBLIC_TOKEN_RE.test(token) || linkHeldNow(deps, 'data', token) !== false) return null
        let version: number | null = null
        if (query !== '') {
          const m = /^v=([1-9]\d{0,9})$/.exec(query)
          if (m === null) return null
          version = Number(m[1])
        }
        const e = svc.cache.get(token, version)
        // taken-down bytes are answered by the route (451)
        if (e === undefined || e.blocked) return null
        let hit = hits.get(e)
        if (hit === undefined) {
          const headers = [
            ...DATA_CORS_HEADERS,
            ...userContentHeaderList('inert').flat(),
            'Cache-Control',
            version === null ? CACHE_DEFAULT : CACHE_PINNED,
            'X-Data-Version',
            String(e.version),
            'Content-Type',
            servedContentType(e.content_type),
          ]
          hit = linkHit(headers, e.etag, Number(e.size), e.digest)
          hits.set(e, hit)
        }
        return hit
      },
    }),
  )

  for (const prefix of ['/svc-data/pub', '/hosted-data/pub']) {
    app.route({
      method: ['GET', 'HEAD'],
      url: `${prefix}/:token`,
      schema: { tags: ['hosted-data'], summary: "Public raw link: the default version's bytes (?v=N: one version)" },
      handler: serve,
    })
    app.options(`${prefix}/:token`, { schema: { hide: true } }, preflight)
  }
}
