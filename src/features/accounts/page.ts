import { MAX_KEY_DAYS } from '../../auth/account-rules.js'
import { html } from '../../web/html.js'
import { sourceFile } from '../../web/assets.js'
import type { FeatureUi } from '../../web/page.js'
import { status, table } from '../../web/parts.js'
import { ACCOUNTS_MESSAGES, type AccountsKey } from './messages.js'

/** /api-keys: create, list, enable/disable and delete API keys (static/keys.js). */
export const accountsUi: FeatureUi<AccountsKey> = {
  messages: ACCOUNTS_MESSAGES,
  scripts: [sourceFile('features/accounts/static/keys.js')],
  pages: [
    {
      path: '/api-keys',
      nav: { id: 'keys', order: 70, label: 'nav.keys', card: 'dash.keys.text' },
      render(ctx) {
        const { t } = ctx
        return {
          title: t('keys.title'),
          script: 'keys',
          body: html`
        <p>${t('keys.intro')}</p>
        <form id="key-form" class="card">
          <h2>${t('keys.create')}</h2>
          <label for="key-name">${t('keys.name')}</label>
          <input id="key-name" name="name" required maxlength="64" value="default">
          <label for="key-days">${t('keys.expires', { max: String(MAX_KEY_DAYS) })}</label>
          <input id="key-days" name="expires_days" type="number" min="1" max="${MAX_KEY_DAYS}" step="1" inputmode="numeric">
          <label class="check"><input id="key-readonly" name="read_only" type="checkbox" aria-describedby="key-readonly-hint"> ${t('keys.read_only')}</label>
          <p id="key-readonly-hint" class="hint">${t('keys.read_only_hint')}</p>
          <button type="submit" class="primary" id="key-submit">${t('keys.submit')}</button>
          <p id="key-limit" class="hint"></p>
        </form>
        <section id="new-key" class="card highlight" hidden>
          <p>${t('keys.new')}</p>
          <label for="new-key-value" class="sr">${t('keys.col.key')}</label>
          <div class="copy-row"><input id="new-key-value" readonly spellcheck="false"><button type="button" id="new-key-copy">${t('common.copy')}</button></div>
        </section>
        ${status('keys-status')}
        ${table(ctx, 'keys-table', ['keys.col.name', 'keys.col.key', 'keys.col.created', 'keys.col.last_used', 'keys.col.expires', 'keys.col.access', 'keys.col.enabled'])}`,
        }
      },
    },
  ],
}
