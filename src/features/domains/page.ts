import { html } from '../../web/html.js'
import { sourceFile } from '../../web/assets.js'
import type { FeatureUi } from '../../web/page.js'
import { status, table } from '../../web/parts.js'
import { DOMAIN_MESSAGES, type DomainKey } from './messages.js'

/** /dashboard/domains: custom domains with the DNS record each needs, and visitor access; static/domains.js fills it. */
export const domainsUi: FeatureUi<DomainKey> = {
  messages: DOMAIN_MESSAGES,
  scripts: [sourceFile('features/domains/static/domains.js')],
  pages: [
    {
      path: '/dashboard/domains',
      nav: { id: 'domains', order: 25, label: 'nav.domains', card: 'dash.domains.text' },
      render(ctx) {
        const { t } = ctx
        return {
          title: t('dom.title'),
          script: 'domains',
          body: html`
        <form id="dom-form" class="card">
          <h2>${t('dom.add')}</h2>
          <label for="dom-domain">${t('dom.domain')}</label>
          <input id="dom-domain" required maxlength="253" autocapitalize="none" spellcheck="false" placeholder="www.example.com" aria-describedby="dom-domain-hint">
          <p class="hint" id="dom-domain-hint">${t('dom.domain_hint')}</p>
          <label for="dom-project">${t('dom.project')}</label>
          <select id="dom-project" required></select>
          <div class="buttons"><button type="submit" class="primary">${t('dom.add_button')}</button></div>
        </form>
        <p id="dom-usage" class="hint"></p>
        ${status('dom-status')}
        ${table(ctx, 'dom-table', ['dom.col.domain', 'dom.col.project', 'dom.col.status', 'dom.col.record'])}
        <form id="acc-form" class="card">
          <h2>${t('acc.title')}</h2>
          <p class="hint">${t('acc.hint')}</p>
          <label for="acc-name">${t('acc.name')}</label>
          <input id="acc-name" required maxlength="255" list="acc-names" autocapitalize="none" spellcheck="false">
          <datalist id="acc-names"></datalist>
          <label for="acc-password">${t('acc.password')}</label>
          <input id="acc-password" type="password" minlength="4" maxlength="1024" autocomplete="new-password">
          <label class="check"><input id="acc-no-password" type="checkbox"> ${t('acc.no_password')}</label>
          <label for="acc-expires">${t('acc.expires')}</label>
          <input id="acc-expires" type="datetime-local">
          <div class="buttons"><button type="submit" class="primary">${t('acc.save')}</button></div>
        </form>
        ${status('acc-status')}
        ${table(ctx, 'acc-table', ['acc.col.name', 'acc.col.password', 'acc.col.expires'])}`,
        }
      },
    },
  ],
}
