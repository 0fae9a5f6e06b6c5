import { html, raw, type SafeHtml } from '../../web/html.js'
import { sourceFile } from '../../web/assets.js'
import type { FeaturePage, FeatureUi, PageCtx, PageOut } from '../../web/page.js'
import { pager, status, table } from '../../web/parts.js'
import { QUOTA_MAX, QUOTA_NAMES } from '../../limits/quotas.js'
import { CATEGORIES, REPORT_STATUSES } from '../abuse/vocabulary.js'
import { ADMIN_MESSAGES, type AdminKey } from './messages.js'

type Ctx = PageCtx<AdminKey>

const SECTIONS: Array<[string, AdminKey, string]> = [
  ['users', 'admin.nav.users', '/admin'],
  ['reports', 'admin.nav.reports', '/admin/reports'],
  ['content', 'admin.nav.content', '/admin/content'],
  ['settings', 'admin.nav.settings', '/admin/settings'],
  ['audit', 'admin.nav.audit', '/admin/audit'],
  ['health', 'admin.nav.health', '/admin/health'],
]

function subnav(ctx: Ctx, current: string): SafeHtml {
  return html`<nav class="subnav" aria-label="${ctx.t('admin.nav')}"><ul>${SECTIONS.map(
    ([id, label, href]) => html`<li><a href="${href}"${id === current ? raw(' aria-current="page"') : ''}>${ctx.t(label)}</a></li>`,
  )}</ul></nav>`
}

/**
 * An admin page: 403 for any other signed-in account (the API answers 403 / 1011 as well);
 * the frame is filled by static/admin.js from the admin API, with the session's CSRF token.
 */
function adminPage(path: string, section: string, title: AdminKey, body: (ctx: Ctx) => SafeHtml, nav?: FeaturePage<AdminKey>['nav']): FeaturePage<AdminKey> {
  return {
    path,
    nav,
    render(ctx): PageOut {
      if (!ctx.user?.is_admin) {
        return { status: 403, title: ctx.t('admin.forbidden.title'), body: html`<p class="card narrow" id="forbidden">${ctx.t('admin.forbidden.text')}</p>` }
      }
      return {
        title: ctx.t(title),
        script: 'admin',
        data: { adminPage: section, quotaNames: QUOTA_NAMES, quotaMax: QUOTA_MAX },
        body: html`${subnav(ctx, section)}${body(ctx)}`,
      }
    },
  }
}

/** /admin...: accounts, abuse reports, content search, settings, the audit log and health (admin flag only). */
export const adminUi: FeatureUi<AdminKey> = {
  messages: ADMIN_MESSAGES,
  scripts: [sourceFile('features/admin/static/admin.js')],
  pages: [
    adminPage(
      '/admin',
      'users',
      'admin.users.title',
      (ctx) => html`
        <form id="users-search" class="toolbar" role="search">
          <label for="users-q">${ctx.t('admin.users.search')}</label>
          <input id="users-q" type="search" maxlength="64" autocapitalize="none" spellcheck="false">
        </form>
        ${status('users-status')}
        ${table(ctx, 'users-table', ['admin.users.col.user', 'admin.users.col.tier', 'admin.users.col.state', 'admin.users.col.usage', 'admin.users.col.limits'])}
        ${pager('users-pager')}
        <section class="card" id="keys-panel" aria-labelledby="keys-title" hidden>
          <h2 id="keys-title" tabindex="-1"></h2>
          <p>${ctx.t('admin.keys.text')}</p>
          ${status('keys-status')}
          ${table(ctx, 'keys-table', [
            'admin.keys.col.name',
            'admin.keys.col.key',
            'admin.keys.col.access',
            'admin.keys.col.created',
            'admin.keys.col.last_used',
            'admin.keys.col.expires',
            'admin.keys.col.enabled',
          ])}
        </section>
        <section class="card">
          <h2>${ctx.t('admin.invite.title')}</h2>
          <p>${ctx.t('admin.invite.text')}</p>
          <button type="button" id="invite-create">${ctx.t('admin.invite.create')}</button>
          <div class="copy-row" id="invite-box" hidden><label for="invite-code" class="sr">${ctx.t('admin.invite.title')}</label><input id="invite-code" readonly spellcheck="false"></div>
          <p class="hint" id="invite-hint" hidden>${ctx.t('admin.invite.shown')}</p>
        </section>`,
      { id: 'admin', order: 90, label: 'admin.title', card: 'admin.card', adminOnly: true },
    ),
    adminPage(
      '/admin/reports',
      'reports',
      'admin.reports.title',
      (ctx) => html`
        <div class="toolbar">
          <label for="reports-filter">${ctx.t('admin.reports.filter')}</label>
          <select id="reports-filter"><option value="">${ctx.t('admin.reports.all')}</option>${REPORT_STATUSES.map(
            (s) => html`<option value="${s}"${s === 'open' ? raw(' selected') : ''}>${ctx.t(`admin.reports.status.${s}`)}</option>`,
          )}</select>
        </div>
        ${status('reports-status')}
        ${table(ctx, 'reports-table', [
          'admin.reports.col.when',
          'admin.reports.col.url',
          'admin.reports.col.owner',
          'admin.reports.col.category',
          'admin.reports.col.details',
          'admin.reports.col.status',
        ])}
        ${pager('reports-pager')}
        <form id="case-form" class="card">
          <h2>${ctx.t('admin.reports.open')}</h2>
          <p>${ctx.t('admin.reports.open_text')}</p>
          <label for="case-url">${ctx.t('admin.reports.url')}</label>
          <input id="case-url" type="url" required maxlength="2000" spellcheck="false">
          <label for="case-category">${ctx.t('admin.reports.category')}</label>
          <select id="case-category">${CATEGORIES.map((c) => html`<option value="${c}">${ctx.t(`abuse.category.${c}`)}</option>`)}</select>
          <button type="submit" class="primary">${ctx.t('admin.reports.submit')}</button>
        </form>`,
    ),
    adminPage(
      '/admin/content',
      'content',
      'admin.content.title',
      (ctx) => html`
        <form id="content-form" class="card" role="search">
          <label for="content-user">${ctx.t('admin.content.user')}</label>
          <input id="content-user" maxlength="64" autocapitalize="none" spellcheck="false">
          <label for="content-url">${ctx.t('admin.content.url')}</label>
          <input id="content-url" type="url" maxlength="2000" spellcheck="false">
          <label for="content-name">${ctx.t('admin.content.name')}</label>
          <input id="content-name" maxlength="200">
          <label for="content-hash">${ctx.t('admin.content.hash')}</label>
          <input id="content-hash" maxlength="64" pattern="[0-9a-fA-F]{64}" spellcheck="false">
          <button type="submit" class="primary">${ctx.t('admin.content.search')}</button>
        </form>
        ${status('content-status')}
        ${table(ctx, 'content-table', [
          'admin.content.col.kind',
          'admin.content.col.owner',
          'admin.content.col.name',
          'admin.content.col.state',
          'admin.content.col.size',
          'admin.content.col.hash',
          'admin.content.col.updated',
        ])}`,
    ),
    adminPage(
      '/admin/settings',
      'settings',
      'admin.settings.title',
      (ctx) => html`
        <p>${ctx.t('admin.settings.text')}</p>
        <form id="settings-form" class="card"><div id="settings-fields"></div>
          <button type="submit" class="primary">${ctx.t('admin.settings.save')}</button>
        </form>
        ${status('settings-status')}`,
    ),
    adminPage(
      '/admin/audit',
      'audit',
      'admin.audit.title',
      (ctx) => html`
        <p>${ctx.t('admin.audit.text')}</p>
        <div class="buttons">
          <a class="button" id="audit-csv" href="/svc_api/admin/audit?format=csv" download>${ctx.t('admin.audit.export_csv')}</a>
          <a class="button" id="audit-json" href="/svc_api/admin/audit?format=json" download>${ctx.t('admin.audit.export_json')}</a>
        </div>
        ${status('audit-status')}
        ${table(ctx, 'audit-table', ['admin.audit.col.when', 'admin.audit.col.actor', 'admin.audit.col.action', 'admin.audit.col.target', 'admin.audit.col.from'])}
        <button type="button" id="audit-more" hidden>${ctx.t('admin.audit.more')}</button>`,
    ),
    adminPage(
      '/admin/health',
      'health',
      'admin.health.title',
      (ctx) => html`
        <p>${ctx.t('admin.health.text')}</p>
        <div class="buttons"><button type="button" id="health-refresh">${ctx.t('admin.health.refresh')}</button></div>
        ${status('health-status')}
        <section class="card">
          <h2>${ctx.t('admin.health.checks')}</h2>
          <p>${ctx.t('admin.health.overall')} <span id="health-overall" class="badge"></span> <span id="health-checked" class="hint"></span></p>
          ${table(ctx, 'health-checks', ['admin.health.col.check', 'admin.health.col.state', 'admin.health.col.detail'])}
        </section>
        <section class="card">
          <h2>${ctx.t('admin.health.instance')}</h2>
          ${table(ctx, 'health-facts', ['admin.health.col.item', 'admin.health.col.value'])}
        </section>`,
    ),
  ],
}
