import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import { notModified } from '../../http/conditional.js'

/**
 * The pages' scripts and stylesheet: plain files (no build step), the shell's in ./static and
 * each feature's in its own static/ folder, read once at start-up and served from the reserved
 * path /static/. Pages name them with a nonce, so a script anywhere else on the origin (user
 * content) can never run on a page.
 */
export interface Asset {
  name: string
  body: Buffer
  type: string
  hash: string
}

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' }

/** Reads the given files once; each is served at /static/{its file name}, which must be unique. */
export function loadAssets(files: readonly string[]): Map<string, Asset> {
  const out = new Map<string, Asset>()
  for (const file of files) {
    const name = path.basename(file)
    const type = TYPES[path.extname(name)]
    if (!type) throw new Error(`pages: ${name} is not a script or a stylesheet`)
    if (out.has(name)) throw new Error(`pages: two assets are named ${name}`)
    const body = fs.readFileSync(file)
    out.set(name, { name, body, type, hash: crypto.createHash('sha256').update(body).digest('hex').slice(0, 16) })
  }
  return out
}

/** GET /static/{name}: immutable when asked for the current version (?v=hash). */
export function assetRoutes(app: FastifyInstance, assets: Map<string, Asset>): void {
  app.get('/static/:name', { schema: { hide: true } }, async (req, reply) => {
    const { name } = req.params as { name: string }
    const a = assets.get(name)
    if (!a) return reply.code(404).type('text/plain; charset=utf-8').send('Not Found')
    const v = (req.query as { v?: string }).v
    const etag = `"${a.hash}"`
    reply.header('ETag', etag)
    reply.header('Cache-Control', v === a.hash ? 'public, max-age=31536000, immutable' : 'no-cache')
    reply.header('Cross-Origin-Resource-Policy', 'same-origin')
    if (notModified(req.headers['if-none-match'], req.headers['if-modified-since'], etag)) return reply.code(304).send()
    return reply.type(a.type).send(a.body)
  })
}
