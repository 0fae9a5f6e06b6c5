/**
 * GET /docs: the interactive API reference (Swagger UI) over GET /openapi.json, served from
 * the swagger-ui-dist package (no CDN). Scripts and the stylesheet run only with the response's
 * nonce, never 'self' (user content lives on this origin), and the page can only fetch from
 * this origin; Trusted Types are left out because Swagger UI renders descriptions with innerHTML.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { createRequire } from 'node:module'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { newNonce } from '../../web/security.js'

const distDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
const VERSION: string = JSON.parse(fs.readFileSync(path.join(distDir, 'package.json'), 'utf8')).version
/**
 * Boots Swagger UI on the document (a file, so the page needs no inline script). Two repairs
 * for people on a keyboard or a screen reader: an operation's path is no link (with deep
 * linking on it is an <a href> inside the operation's toggle button, a control inside a
 * control; the address still follows the operation opened), and the server list is named.
 */
const INIT_JS = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  plugins: [function () {
    return { wrapComponents: { DeepLink: function (Original, system) {
      return function (props) {
        return system.React.createElement(Original, Object.assign({}, props, { enabled: props.enabled && String(props.path).indexOf('/') < 0 }))
      }
    } } }
  }],
  onComplete: function () {
    var servers = document.getElementById('servers')
    if (servers) servers.setAttribute('aria-label', 'Servers')
  },
  layout: 'BaseLayout',
})
`

/**
 * Swagger UI's colours that fail WCAG 2.1 AA contrast (4.5:1) for its small text: the method
 * badges (white on light green, blue, orange), links, version badges, the schemas'
 * expand button, a parameter's place, and the example's numbers and comments (its highlighter
 * colours each token with an inline style, hence !important). Same hues, darker.
 */
const CONTRAST_CSS = `
.swagger-ui .opblock.opblock-get .opblock-summary-method{background:#1b6ac0}
.swagger-ui .opblock.opblock-post .opblock-summary-method{background:#17804f}
.swagger-ui .opblock.opblock-put .opblock-summary-method{background:#9a5500}
.swagger-ui .opblock.opblock-delete .opblock-summary-method{background:#c4161c}
.swagger-ui .opblock.opblock-patch .opblock-summary-method{background:#0b7261}
.swagger-ui .opblock.opblock-head .opblock-summary-method{background:#8a2ba0}
.swagger-ui .opblock.opblock-options .opblock-summary-method{background:#0b5ea8}
.swagger-ui .btn.authorize{color:#17804f;border-color:#17804f}
.swagger-ui .btn.authorize svg{fill:#17804f}
.swagger-ui .info .title small pre{background:#5f6673}
.swagger-ui .info .title small.version-stamp{background:#4d7a00}
.swagger-ui .info .title small.version-stamp pre{background:#4d7a00}
.swagger-ui .json-schema-2020-12-expand-deep-button,.swagger-ui .parameter__in{color:#595959}
.swagger-ui .microlight span[style*="rgb(211, 99, 99)"]{color:#f08080!important}
.swagger-ui .microlight span[style*="rgb(136, 136, 136)"]{color:#b0b0b0!important}
.swagger-ui .info a,.swagger-ui .info .base-url,.swagger-ui a.nostyle,.swagger-ui .link{color:#1f69c0}
`

/** Asset URLs carry the swagger-ui-dist version and a digest of INIT_JS, so they can be cached for good. */
export const ASSET_BASE = `/docs/assets/${VERSION}-${crypto.createHash('sha256').update(INIT_JS).digest('hex').slice(0, 8)}`

export function referenceCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
  ].join('; ')
}

const page = (nonce: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSET_BASE}/swagger-ui.css" nonce="${nonce}">
<style nonce="${nonce}">${CONTRAST_CSS}</style>
</head><body>
<p><a href="/dashboard">Dashboard</a> · <a href="/openapi.json">openapi.json</a> · <a href="/docs/errors">Error codes</a></p>
<div id="swagger-ui"></div>
<script src="${ASSET_BASE}/swagger-ui-bundle.js" nonce="${nonce}"></script>
<script src="${ASSET_BASE}/init.js" nonce="${nonce}"></script>
</body></html>`

interface Asset {
  type: string
  body: Buffer
  gzip: Buffer
}
const ASSETS: Record<string, { type: string; read: () => Buffer }> = {
  'swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', read: () => fs.readFileSync(path.join(distDir, 'swagger-ui-bundle.js')) },
  'swagger-ui.css': { type: 'text/css; charset=utf-8', read: () => fs.readFileSync(path.join(distDir, 'swagger-ui.css')) },
  'init.js': { type: 'text/javascript; charset=utf-8', read: () => Buffer.from(INIT_JS) },
}
// read and compressed on first use: an instance nobody reads the reference on keeps nothing
const loaded = new Map<string, Asset>()

function asset(name: string): Asset | undefined {
  let a = loaded.get(name)
  if (!a && Object.hasOwn(ASSETS, name)) {
    const body = ASSETS[name].read()
    a = { type: ASSETS[name].type, body, gzip: zlib.gzipSync(body) }
    loaded.set(name, a)
  }
  return a
}

export function referenceRoutes(app: FastifyInstance): void {
  app.get('/docs', { schema: { hide: true } }, async (_req, reply) => {
    const nonce = newNonce()
    reply.header('Content-Security-Policy', referenceCsp(nonce))
    reply.header('X-Frame-Options', 'DENY')
    reply.header('Referrer-Policy', 'same-origin')
    reply.header('Cross-Origin-Opener-Policy', 'same-origin')
    // a nonce is good for one response only
    reply.header('Cache-Control', 'no-store')
    return reply.type('text/html; charset=utf-8').send(page(nonce))
  })

  app.get(`${ASSET_BASE}/:name`, { schema: { hide: true } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const a = asset((req.params as { name: string }).name)
    if (!a) return reply.code(404).type('text/plain; charset=utf-8').send('Not Found')
    reply.header('Cache-Control', 'public, max-age=31536000, immutable')
    reply.header('Cross-Origin-Resource-Policy', 'same-origin')
    reply.header('Vary', 'Accept-Encoding')
    reply.type(a.type)
    if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) return reply.header('Content-Encoding', 'gzip').send(a.gzip)
    return reply.send(a.body)
  })
}
