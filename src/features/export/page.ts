import { html } from '../../web/html.js'
import type { FeatureUi } from '../../web/page.js'
import { EXPORT_MESSAGES, type ExportKey } from './messages.js'

/** /dashboard/export: a plain download link to GET /svc_api/me/export (no script needed). */
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
          <p><a class="button primary" id="export-download" href="/svc_api/me/export" download>${t('export.download')}</a></p>
        </section>`,
        }
      },
    },
  ],
}
