import { html } from '../../web/html.js'
import { sourceFile } from '../../web/assets.js'
import type { FeatureUi } from '../../web/page.js'
import { progress, redeemForm, status, table } from '../../web/parts.js'
import { HOSTED_DATA_MESSAGES, type HostedDataKey } from './messages.js'
import { MAX_DISPLAY_NAME } from './content.js'

/** /dashboard/data: activation, data files and their versions (static/data.js). */
export const hostedDataUi: FeatureUi<HostedDataKey> = {
  messages: HOSTED_DATA_MESSAGES,
  scripts: [sourceFile('features/hosted-data/static/data.js')],
  pages: [
    {
      path: '/dashboard/data',
      nav: { id: 'data', order: 60, label: 'nav.data', card: 'dash.data.text' },
      render(ctx) {
        const { t } = ctx
        const types = ['application/json', 'text/plain', 'text/csv', 'text/markdown', 'application/xml', 'text/yaml']
        return {
          title: t('data.title'),
          script: 'data',
          body: html`
        <p id="data-state" class="card"></p>
        ${redeemForm(ctx)}
        <form id="data-form" class="card" hidden>
          <h2>${t('data.create')}</h2>
          <label for="data-name">${t('data.display_name')}</label>
          <input id="data-name" required maxlength="${MAX_DISPLAY_NAME}">
          <label for="data-type">${t('data.content_type')}</label>
          <select id="data-type">${types.map((x) => html`<option>${x}</option>`)}</select>
          <label for="data-content">${t('data.content')}</label>
          <textarea id="data-content" rows="8" spellcheck="false"></textarea>
          <label for="data-file">${t('data.file')}</label>
          <input id="data-file" type="file" accept=".json,.txt,.csv,.md,.xml,.yaml,.yml,text/*,application/json">
          <div class="buttons"><button type="submit" class="primary">${t('data.submit')}</button></div>
          ${progress(ctx, 'data-progress')}
        </form>
        ${status('data-status')}
        <h2>${t('data.files')}</h2>
        ${table(ctx, 'data-table', ['data.col.name', 'data.col.type', 'data.col.default', 'data.col.versions', 'data.col.updated'])}
        <section id="data-detail" class="card" hidden>
          <h2 id="data-detail-title"></h2>
          <div class="table-wrap"><table id="versions-table">
            <thead><tr><th scope="col">${t('data.col.version')}</th><th scope="col">${t('data.col.size')}</th><th scope="col">${t('data.col.created')}</th><th scope="col"><span class="sr">${t('common.actions')}</span></th></tr></thead>
            <tbody></tbody></table></div>
          <form id="version-form">
            <h3>${t('data.new_version')}</h3>
            <label for="version-content">${t('data.content')}</label>
            <textarea id="version-content" rows="6" spellcheck="false"></textarea>
            <label for="version-file">${t('data.file')}</label>
            <input id="version-file" type="file">
            <label class="check"><input id="version-default" type="checkbox" checked> ${t('data.make_default')}</label>
            <button type="submit" class="primary">${t('data.add_version')}</button>
          </form>
        </section>`,
        }
      },
    },
  ],
}
