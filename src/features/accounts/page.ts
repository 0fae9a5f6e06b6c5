import { MAX_KEY_DAYS, MAX_PASSWORD_BYTES, MIN_PASSWORD_LENGTH } from '../../auth/account-rules.js'
import { html } from '../../web/html.js'
import { sourceFile } from '../../web/assets.js'
import type { FeatureUi } from '../../web/page.js'
import { status, table } from '../../web/parts.js'
import { ACCOUNTS_MESSAGES, type AccountsKey } from './messages.js'

/** /api-keys: create, list, enable/disable and delete API keys (static/keys.js); /account: change the password, delete the account (static/account.js). */
export const accountsUi: FeatureUi<AccountsKey> = {
  messages: ACCOUNTS_MESSAGES,
  scripts: [sourceFile('features/accounts/static/keys.js'), sourceFile('features/accounts/static/account.js')],
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
    {
      path: '/account',
      nav: { id: 'account', order: 90, label: 'nav.account', card: 'dash.account.text' },
      render(ctx) {
        const { t } = ctx
        return {
          title: t('account.title'),
          script: 'account',
          data: { username: ctx.user?.username ?? '' },
          body: html`
        <form id="pw-form" class="card">
          <h2>${t('account.pw.title')}</h2>
          <p class="hint">${t('account.pw.intro')}</p>
          <input type="text" name="username" autocomplete="username" value="${ctx.user?.username ?? ''}" hidden>
          <label for="pw-current">${t('account.pw.current')}</label>
          <input id="pw-current" name="current-password" type="password" required autocomplete="current-password" maxlength="${MAX_PASSWORD_BYTES}">
          <label for="pw-new">${t('account.pw.new')}</label>
          <input id="pw-new" name="new-password" type="password" required minlength="${MIN_PASSWORD_LENGTH}" maxlength="${MAX_PASSWORD_BYTES}" autocomplete="new-password" aria-describedby="pw-new-hint">
          <p id="pw-new-hint" class="hint">${t('account.pw.rule', { min: String(MIN_PASSWORD_LENGTH), max: String(MAX_PASSWORD_BYTES) })}</p>
          <label for="pw-again">${t('account.pw.again')}</label>
          <input id="pw-again" name="new-password-again" type="password" required maxlength="${MAX_PASSWORD_BYTES}" autocomplete="new-password">
          <button type="submit" class="primary" id="pw-submit">${t('account.pw.submit')}</button>
        </form>
        ${status('pw-status')}
        <form id="del-form" class="card">
          <h2>${t('account.del.title')}</h2>
          <p class="hint">${t('account.del.intro')}</p>
          <label for="del-username">${t('account.del.username', { name: ctx.user?.username ?? '' })}</label>
          <input id="del-username" name="confirm-username" required maxlength="64" autocomplete="off" spellcheck="false">
          <label for="del-password">${t('account.del.password')}</label>
          <input id="del-password" name="password" type="password" required autocomplete="current-password" maxlength="${MAX_PASSWORD_BYTES}">
          <button type="submit" class="danger" id="del-submit">${t('account.del.submit')}</button>
        </form>
        ${status('del-status')}`,
        }
      },
    },
  ],
}
