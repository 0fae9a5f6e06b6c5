import { html } from '../../web/html.js'
import { sourceFile } from '../../web/assets.js'
import type { FeatureUi } from '../../web/page.js'
import { pager, status, table } from '../../web/parts.js'
import { FORMS_MESSAGES, type FormsKey } from './messages.js'

/** /dashboard/forms: form builder, submissions and each form's notifications (webhook, e-mail, delivery log), filled by static/forms.js. */
export const formsUi: FeatureUi<FormsKey> = {
  messages: FORMS_MESSAGES,
  scripts: [sourceFile('features/forms/static/forms.js')],
  pages: [
    {
      path: '/dashboard/forms',
      nav: { id: 'forms', order: 40, label: 'nav.forms', card: 'dash.forms.text' },
      render(ctx) {
        const { t } = ctx
        const types = ['text', 'email', 'number', 'textarea', 'select', 'checkbox', 'url', 'tel', 'date', 'file']
        return {
          title: t('forms.title'),
          script: 'forms',
          data: { fieldTypes: types },
          body: html`
        <form id="form-create" class="card">
          <h2>${t('forms.create')}</h2>
          <label for="form-name">${t('forms.name')}</label>
          <input id="form-name" required maxlength="100">
          <label for="form-slug">${t('forms.slug')}</label>
          <input id="form-slug" maxlength="64" pattern="[A-Za-z0-9_\\-]{3,64}" autocapitalize="none" spellcheck="false" aria-describedby="form-slug-hint">
          <p class="hint" id="form-slug-hint">${t('forms.slug_hint')}</p>
          <fieldset id="field-builder">
            <legend>${t('forms.fields')}</legend>
            <p class="hint" id="field-name-hint">${t('forms.field.name_hint')}</p>
            <ol id="field-rows" class="field-rows"></ol>
            <button type="button" id="field-add">${t('forms.field.add')}</button>
          </fieldset>
          <label for="form-origins">${t('forms.origins')}</label>
          <textarea id="form-origins" rows="2" spellcheck="false"></textarea>
          <label for="form-redirect">${t('forms.redirect')}</label>
          <input id="form-redirect" type="url" maxlength="2000">
          <button type="submit" class="primary">${t('forms.submit')}</button>
        </form>
        <p id="forms-quota" class="hint"></p>
        ${status('forms-status')}
        <h2>${t('forms.list')}</h2>
        ${table(ctx, 'forms-table', ['forms.col.name', 'forms.col.slug', 'forms.col.active', 'forms.col.count', 'forms.col.unread', 'forms.col.spam'])}
        <section id="subs" class="card" hidden>
          <h2 id="subs-title"></h2>
          <p>${t('forms.submit_url')}: <code id="subs-url"></code></p>
          <details><summary>${t('forms.embed')}</summary><pre><code id="subs-embed"></code></pre>
            <button type="button" id="subs-embed-copy">${t('common.copy')}</button></details>
          <div class="toolbar">
            <label for="subs-filter">${t('forms.filter')}</label>
            <select id="subs-filter">
              <option value="">${t('forms.filter.all')}</option>
              <option value="false">${t('forms.filter.unread')}</option>
              <option value="true">${t('forms.filter.read')}</option>
              <option value="spam">${t('forms.filter.spam')}</option>
            </select>
            <button type="button" id="subs-export-json">${t('forms.export_json')}</button>
            <button type="button" id="subs-export-csv">${t('forms.export_csv')}</button>
          </div>
          <div class="table-wrap"><table id="subs-table"><thead></thead><tbody></tbody></table></div>
          ${pager('subs-pager')}
        </section>
        <section id="notify" class="card" hidden>
          <h2 id="notify-title"></h2>
          ${status('notify-status')}
          <h3>${t('notify.webhook')}</h3>
          <p class="hint">${t('notify.webhook_hint')}</p>
          <form id="hook-form">
            <label for="hook-url">${t('notify.webhook_url')}</label>
            <input id="hook-url" type="url" required maxlength="2000" spellcheck="false" autocapitalize="none" placeholder="https://example.com/hook">
            <label class="check"><input id="hook-enabled" type="checkbox" checked> ${t('notify.webhook_enabled')}</label>
            <div class="buttons">
              <button type="submit" class="primary" id="hook-save">${t('notify.webhook_save')}</button>
              <button type="button" id="hook-rotate" hidden>${t('notify.rotate')}</button>
              <button type="button" id="hook-remove" class="danger" hidden>${t('notify.webhook_remove')}</button>
            </div>
          </form>
          <p id="hook-info" class="hint"></p>
          <div id="hook-secret" class="card highlight" hidden>
            <p>${t('notify.secret_new')}</p>
            <label for="hook-secret-value" class="sr">${t('notify.secret')}</label>
            <div class="copy-row"><input id="hook-secret-value" readonly spellcheck="false"><button type="button" id="hook-secret-copy">${t('common.copy')}</button></div>
          </div>
          <h3>${t('notify.email')}</h3>
          <label for="email-mode">${t('notify.email_mode')}</label>
          <select id="email-mode">
            <option value="off">${t('notify.email_off')}</option>
            <option value="each">${t('notify.email_each')}</option>
            <option value="digest">${t('notify.email_digest')}</option>
          </select>
          <p id="email-info" class="hint"></p>
          <div id="addr-box" hidden>
            <ul id="addr-list"></ul>
            <form id="addr-form" class="toolbar">
              <label for="addr-input">${t('notify.address_add')}</label>
              <input id="addr-input" type="email" required maxlength="254" autocomplete="email">
              <button type="submit">${t('notify.address_submit')}</button>
            </form>
          </div>
          <h3>${t('notify.log')}</h3>
          <div class="toolbar"><button type="button" id="deliv-refresh">${t('notify.refresh')}</button></div>
          ${table(ctx, 'deliv-table', ['notify.col.time', 'notify.col.kind', 'notify.col.target', 'notify.col.status', 'notify.col.tries', 'notify.col.error'])}
        </section>`,
        }
      },
    },
  ],
}
