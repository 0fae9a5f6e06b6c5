import { PassThrough } from 'node:stream'
import { Type } from '@sinclair/typebox'
import type { Feature } from '../feature.js'
import { BYTES_BODY, mediaAnswer } from '../../http/answer-schemas.js'
import { caller } from '../../http/guard.js'
import { writeExport, type ArchiveFormat } from './archive.js'
import { exportUi } from './page.js'

const ExportQuery = Type.Object({
  format: Type.Optional(
    Type.Union([Type.Literal('tar.gz'), Type.Literal('zip')], {
      description: 'The container: tar.gz (the default, as before zip existed) or zip (what the dashboard links to). Same entries in both.',
    }),
  ),
})

/** Content type and file-name suffix of each container. */
const CONTAINER: Record<ArchiveFormat, { type: string; suffix: string }> = {
  'tar.gz': { type: 'application/gzip', suffix: 'tar.gz' },
  zip: { type: 'application/zip', suffix: 'zip' },
}

const ExportAnswer = mediaAnswer(
  'The archive, streamed as a download (Content-Disposition: attachment): a .tar.gz, or with ?format=zip a .zip',
  Object.fromEntries(Object.values(CONTAINER).map((c) => [c.type, BYTES_BODY])),
)

/**
 * Per-user export: GET /svc_api/me/export streams the caller's data as the archive that
 * `svc import` loads (archive.ts; `svc export` is the operator's side). Without ?format the
 * answer stays a .tar.gz, so clients written before zip keep getting what they unpack.
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
          summary: "All of the caller's data as a .tar.gz or (?format=zip) a .zip that svc import loads (beyond the spec)",
          querystring: ExportQuery,
          response: { 200: ExportAnswer },
        },
      },
      async (req, reply) => {
        const user = caller(req).user
        const format = (req.query as { format?: ArchiveFormat }).format ?? 'tar.gz'
        const body = new PassThrough()
        writeExport(deps.db, deps.blobs, user.username, body, format, new Date(deps.clock.now())).catch((err: unknown) => {
          req.log.warn({ err }, 'export failed')
          body.destroy(err as Error)
        })
        const day = new Date(deps.clock.now()).toISOString().slice(0, 10)
        return reply
          .header('Content-Type', CONTAINER[format].type)
          .header('Content-Disposition', `attachment; filename="svc-export-${user.username}-${day}.${CONTAINER[format].suffix}"`)
          .header('Cache-Control', 'no-store')
          .send(body)
      },
    )
  },
}
