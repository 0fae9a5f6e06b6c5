import { html } from '../../web/html.js'
import type { FeatureUi } from '../../web/page.js'
import { EXPORT_MESSAGES, type ExportKey } from './messages.js'

/** /dashboard/export: plain download links to GET /svc_api/me/export, the zip first (no script needed). */
export const exportUi: FeatureUi<ExportKey> = {
  messages: EXPORT_MESSAGES,
  scripts: [],
  pages: [
    {
      path: '/dashboard/export',
      nav: { id: 'export', order: 80, label: 'nav.export', card: 'dash.export.text' },
      render(ctx) {
        const { t } = ctx
        return {
          title: t('export.title'),
          body: html`
        <section class="card">
          <p>${t('export.text')}</p>
          <p><a class="button primary" id="export-download" href="/svc_api/me/export?format=zip" download>${t('export.download')}</a></p>
          <p><a id="export-download-tar" href="/svc_api/me/export?format=tar.gz" download>${t('export.download_tar')}</a></p>
        </section>`,
        }
      },
    },
  ],
}
