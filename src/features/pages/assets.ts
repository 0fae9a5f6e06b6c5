import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'

/**
 * The pages' scripts and stylesheet: plain files in ./static (no build step), read once at
 * start-up and served from the reserved path /static/. Pages name them with a nonce, so a
 * script anywhere else on the origin (user content) can never run on a page.
 */
export interface Asset {
  name: string
  body: Buffer
  type: string
  hash: string
}

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' }

/** Finds the static folder, from src/ (tsx) or from dist/src/ (compiled). */
function staticDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  const direct = path.join(dir, 'static')
  if (fs.existsSync(direct)) return direct
  for (let i = 0; i < 6; i++) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'src', 'features', 'pages', 'static')
    dir = path.dirname(dir)
  }
  throw new Error('pages: static folder not found')
}

export function loadAssets(): Map<string, Asset> {
  const dir = staticDir()
  const out = new Map<string, Asset>()
  for (const name of fs.readdirSync(dir)) {
    const type = TYPES[path.extname(name)]
    if (!type) continue
    const body = fs.readFileSync(path.join(dir, name))
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
    if (req.headers['if-none-match'] === etag) return reply.code(304).send()
    return reply.type(a.type).send(a.body)
  })
}
