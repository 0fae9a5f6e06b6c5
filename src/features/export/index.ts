import { PassThrough } from 'node:stream'
import type { Feature } from '../feature.js'
import { caller } from '../../http/guard.js'
import { writeExport } from './archive.js'
import { exportUi } from './page.js'

/**
 * Per-user export: GET /svc_api/me/export streams the caller's data as the archive that
 * `svc import` loads (archive.ts; `svc export` is the operator's side).
 */
export const exportFeature: Feature = {
  name: 'export',
  ui: exportUi,
  api(app, deps) {
    app.get(
      '/svc_api/me/export',
      {
        config: { auth: 'any' },
        schema: {
          tags: ['account'],
          summary: "All of the caller's data as a .tar.gz that svc import loads (beyond the spec)",
        },
      },
      async (req, reply) => {
        const user = caller(req).user
        const body = new PassThrough()
        writeExport(deps.db, deps.blobs, user.username, body, 'tar.gz', new Date(deps.clock.now())).catch((err: unknown) => {
          req.log.warn({ err }, 'export failed')
          body.destroy(err as Error)
        })
        const day = new Date(deps.clock.now()).toISOString().slice(0, 10)
        return reply
          .header('Content-Type', 'application/gzip')
          .header('Content-Disposition', `attachment; filename="svc-export-${user.username}-${day}.tar.gz"`)
          .header('Cache-Control', 'no-store')
          .send(body)
      },
    )
  },
}
