import crypto from 'node:crypto'
import type { Feature } from '../feature.js'
import { ERRORS, type ErrorDef } from '../../errors/codes.js'
import { escapeHtml } from '../../util/html.js'
import { referenceRoutes } from './reference.js'

/** A message template as the table page shows it: `{limit:size}` (a size, util/sizes.ts) as `{limit}`. */
const shown = (template: string): string => template.replace(/\{(\w+):size\}/g, '{$1}')

/**
 * GET /docs: the interactive API reference (reference.ts); GET /docs/errors: the error table
 * as a page (every doc_link points here).
 */
export const docsFeature: Feature = {
  name: 'docs',
  pages(app) {
    // one <tbody id="code"> per code, holding a row per error of that code (1404 is both "no
    // such endpoint" and the 405): each doc_link's #code lands on all of them, and ids stay unique
    const byCode = new Map<number, ErrorDef[]>()
    for (const d of Object.values(ERRORS)) byCode.set(d.code, [...(byCode.get(d.code) ?? []), d])
    const row = (d: ErrorDef) =>
      `<tr><td>${d.code}</td><td>${escapeHtml(d.type)}</td><td>${d.http}</td><td>${escapeHtml(shown(d.en))}<br><span lang="zh-CN">${escapeHtml(shown(d.zh))}</span></td><td>${escapeHtml(shown(d.solutionEn))}</td><td>${d.stringCode ?? ''}</td></tr>`
    const rows = [...byCode].map(([code, defs]) => `<tbody id="${code}">${defs.map(row).join('\n')}</tbody>`).join('\n')
    // the table is wider than a phone: it scrolls in its own box and the page keeps the
    // screen's width; the one style element is allowed by its digest (no inline anything else)
    const style = 'body{margin:8px}.wrap{overflow-x:auto}td,th{vertical-align:top}'
    const styleHash = crypto.createHash('sha256').update(style).digest('base64')
    const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>svc error codes</title><style>${style}</style></head>
<body><h1>Error codes</h1><div class="wrap"><table border="1" cellpadding="4"><thead><tr><th>code</th><th>type</th><th>HTTP</th><th>message</th><th>solution</th><th>string code</th></tr></thead>
${rows}
</table></div></body></html>`
    app.get('/docs/errors', { schema: { hide: true } }, async (_req, reply) => {
      reply.header('Content-Security-Policy', `default-src 'none'; style-src 'sha256-${styleHash}'; frame-ancestors 'none'`)
      reply.header('Cache-Control', 'public, max-age=3600')
      return reply.type('text/html; charset=utf-8').send(page)
    })
    referenceRoutes(app)
  },
}
