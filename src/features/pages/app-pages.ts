import { html } from './html.js'
import type { PageCtx, PageRouter } from './page.js'
import type { MsgKey } from './i18n.js'

/**
 * The signed-in pages. The server renders each page's frame (headings, labelled forms, empty
 * tables); the page's script fills it from the JSON API with the session cookie, always
 * building the DOM from text (never HTML), and sends the CSRF token on every write.
 */

const status = (id: string) => html`<p id="${id}" class="status" role="status" aria-live="polite"></p>`
const progress = (ctx: PageCtx, id: string) =>
  html`<div class="progress" id="${id}" hidden><progress max="100" value="0" aria-label="${ctx.t('common.progress')}"></progress> <span></span></div>`
const pager = (id: string) => html`<nav class="pager" id="${id}" hidden></nav>`
const table = (ctx: PageCtx, id: string, cols: MsgKey[]) => html`
  <div class="table-wrap"><table id="${id}">
    <thead><tr>${cols.map((c) => html`<th scope="col">${ctx.t(c)}</th>`)}<th scope="col"><span class="sr">${ctx.t('common.actions')}</span></th></tr></thead>
    <tbody></tbody>
  </table></div>`

function redeemForm(ctx: PageCtx) {
  return html`<form id="redeem-form" class="card" hidden>
    <h2>${ctx.t('redeem.title')}</h2>
    <label for="redeem-code">${ctx.t('redeem.code')}</label>
    <input id="redeem-code" name="code" required maxlength="128" autocomplete="off" spellcheck="false">
    <button type="submit" class="primary">${ctx.t('redeem.submit')}</button>
  </form>`
}

export function appPages(pages: PageRouter): void {
  const { page } = pages

  page('/dashboard', 'required', (ctx) => {
    const { t } = ctx
    const user = ctx.user!.username
    const cards: Array<[string, MsgKey, MsgKey, string]> = [
      ['files', 'nav.files', 'dash.files.text', '/dashboard/files'],
      ['folders', 'nav.folders', 'dash.folders.text', '/dashboard/folders'],
      ['kv', 'nav.kv', 'dash.kv.text', '/dashboard/kv'],
      ['forms', 'nav.forms', 'dash.forms.text', '/dashboard/forms'],
      ['images', 'nav.images', 'dash.images.text', '/dashboard/images'],
      ['data', 'nav.data', 'dash.data.text', '/dashboard/data'],
      ['keys', 'nav.keys', 'dash.keys.text', '/api-keys'],
    ]
    const pagesUrl = `${ctx.contentOrigin}/${user}/`
    return {
      title: t('dash.title'), nav: 'dashboard',
      body: html`
        <p>${t('dash.welcome', { user })} · ${t('dash.pages_at')} <code>${pagesUrl}</code></p>
        <ul class="cards">${cards.map(([id, title, text, href]) => html`
          <li class="card" id="card-${id}"><h2><a href="${href}">${t(title)}</a></h2><p>${t(text)}</p></li>`)}
        </ul>
        <section class="card">
          <h2>${t('dash.api.title')}</h2>
          <p>${t('dash.api.text')}</p>
          <pre><code>curl ${ctx.origin}/svc_api/files -H "Authorization: Bearer $API_KEY"</code></pre>
        </section>`,
    }
  })

  page('/api-keys', 'required', (ctx) => {
    const { t } = ctx
    return {
      title: t('keys.title'), script: 'keys', nav: 'keys',
      body: html`
        <p>${t('keys.intro')}</p>
        <form id="key-form" class="card">
          <h2>${t('keys.create')}</h2>
          <label for="key-name">${t('keys.name')}</label>
          <input id="key-name" name="name" required maxlength="64" value="default">
          <label for="key-days">${t('keys.expires')}</label>
          <input id="key-days" name="expires_days" type="number" min="1" max="365" step="1" inputmode="numeric">
          <button type="submit" class="primary" id="key-submit">${t('keys.submit')}</button>
          <p id="key-limit" class="hint"></p>
        </form>
        <section id="new-key" class="card highlight" hidden>
          <p>${t('keys.new')}</p>
          <label for="new-key-value" class="sr">${t('keys.col.key')}</label>
          <div class="copy-row"><input id="new-key-value" readonly spellcheck="false"><button type="button" id="new-key-copy">${t('common.copy')}</button></div>
        </section>
        ${status('keys-status')}
        ${table(ctx, 'keys-table', ['keys.col.name', 'keys.col.key', 'keys.col.created', 'keys.col.last_used', 'keys.col.expires', 'keys.col.enabled'])}`,
    }
  })

  page('/dashboard/files', 'required', (ctx) => {
    const { t } = ctx
    return {
      title: t('files.title'), script: 'files', nav: 'files',
      body: html`
        <form id="upload-form" class="card">
          <div class="drop" id="drop">
            <p>${t('files.drop')}</p>
            <label for="file-input">${t('files.choose')}</label>
            <input id="file-input" type="file" accept=".html,.htm,text/html" multiple>
          </div>
          <label for="file-project">${t('files.project')}</label>
          <input id="file-project" maxlength="200">
          <label for="file-description">${t('files.description')}</label>
          <input id="file-description" maxlength="1000">
          <button type="submit" class="primary">${t('files.upload')}</button>
          ${progress(ctx, 'file-progress')}
        </form>
        <p id="files-quota" class="hint"></p>
        ${status('files-status')}
        <div class="toolbar">
          <label for="file-search">${t('files.search')}</label>
          <input id="file-search" type="search" maxlength="200">
        </div>
        ${table(ctx, 'files-table', ['files.col.name', 'files.col.project', 'files.col.size', 'files.col.updated'])}
        ${pager('files-pager')}`,
    }
  })

  page('/dashboard/folders', 'required', (ctx) => {
    const { t } = ctx
    return {
      title: t('folders.title'), script: 'folders', nav: 'folders',
      body: html`
        <form id="folder-form" class="card">
          <h2>${t('folders.upload')}</h2>
          <label for="folder-input">${t('folders.choose')}</label>
          <input id="folder-input" type="file" webkitdirectory multiple>
          <label for="folder-name">${t('folders.project')}</label>
          <input id="folder-name" required maxlength="100" autocapitalize="none" spellcheck="false">
          <label class="check"><input id="folder-overwrite" type="checkbox" checked> ${t('folders.overwrite')}</label>
          <button type="submit" class="primary">${t('folders.submit')}</button>
          ${progress(ctx, 'folder-progress')}
        </form>
        ${status('folders-status')}
        <h2>${t('folders.projects')}</h2>
        ${table(ctx, 'projects-table', ['folders.col.name', 'folders.col.status', 'folders.col.files'])}
        <form id="open-form" class="toolbar">
          <label for="open-name">${t('folders.open_name')}</label>
          <input id="open-name" required maxlength="100" autocapitalize="none" spellcheck="false">
          <button type="submit">${t('folders.open')}</button>
        </form>
        <section id="project" class="card" hidden>
          <h2 id="project-name"></h2>
          <p><span id="project-state"></span> <a id="project-site" target="_blank" rel="noopener noreferrer" hidden>${t('folders.open_site')}</a></p>
          <p class="hint">${t('folders.need_index')}</p>
          <div class="buttons">
            <button type="button" id="project-publish" class="primary">${t('folders.publish')}</button>
            <button type="button" id="project-unpublish">${t('folders.unpublish')}</button>
          </div>
          <h3>${t('folders.tree')}</h3>
          <div id="project-tree" class="tree"></div>
        </section>`,
    }
  })

  page('/dashboard/kv', 'required', (ctx) => {
    const { t } = ctx
    return {
      title: t('kv.title'), script: 'kv', nav: 'kv',
      body: html`
        <form id="kv-form" class="card">
          <h2>${t('kv.editor')}</h2>
          <label for="kv-key">${t('kv.key')}</label>
          <input id="kv-key" required maxlength="100" pattern="[A-Za-z][A-Za-z0-9_\\-]*" autocapitalize="none" spellcheck="false" aria-describedby="kv-key-hint">
          <p class="hint" id="kv-key-hint">${t('kv.key_hint')}</p>
          <label for="kv-type">${t('kv.type')}</label>
          <select id="kv-type"><option value="json">json</option><option value="text">text</option><option value="number">number</option></select>
          <label for="kv-value">${t('kv.value')}</label>
          <textarea id="kv-value" rows="8" spellcheck="false" required></textarea>
          <label for="kv-tags">${t('kv.tags')}</label>
          <input id="kv-tags" maxlength="1000">
          <label class="check"><input id="kv-public" type="checkbox"> ${t('kv.public')}</label>
          <div class="buttons">
            <button type="submit" class="primary">${t('kv.save')}</button>
            <button type="button" id="kv-new">${t('kv.new')}</button>
          </div>
        </form>
        <p id="kv-usage" class="hint"></p>
        ${status('kv-status')}
        ${table(ctx, 'kv-table', ['kv.col.key', 'kv.col.type', 'kv.col.value', 'kv.col.public', 'kv.col.updated'])}
        ${pager('kv-pager')}`,
    }
  })

  page('/dashboard/forms', 'required', (ctx) => {
    const { t } = ctx
    const types = ['text', 'email', 'number', 'textarea', 'select', 'checkbox', 'url', 'tel', 'date']
    return {
      title: t('forms.title'), script: 'forms', nav: 'forms', data: { fieldTypes: types },
      body: html`
        <form id="form-create" class="card">
          <h2>${t('forms.create')}</h2>
          <label for="form-name">${t('forms.name')}</label>
          <input id="form-name" required maxlength="200">
          <label for="form-slug">${t('forms.slug')}</label>
          <input id="form-slug" maxlength="64" pattern="[A-Za-z0-9_\\-]+" autocapitalize="none" spellcheck="false">
          <fieldset id="field-builder">
            <legend>${t('forms.fields')}</legend>
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
        ${table(ctx, 'forms-table', ['forms.col.name', 'forms.col.slug', 'forms.col.active', 'forms.col.count', 'forms.col.unread'])}
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
            </select>
            <button type="button" id="subs-export-json">${t('forms.export_json')}</button>
            <button type="button" id="subs-export-csv">${t('forms.export_csv')}</button>
          </div>
          <div class="table-wrap"><table id="subs-table"><thead></thead><tbody></tbody></table></div>
          ${pager('subs-pager')}
        </section>`,
    }
  })

  page('/dashboard/images', 'required', (ctx) => {
    const { t } = ctx
    return {
      title: t('images.title'), script: 'images', nav: 'images',
      body: html`
        <p id="img-state" class="card"></p>
        ${redeemForm(ctx)}
        <form id="img-form" class="card" hidden>
          <h2>${t('images.upload')}</h2>
          <div class="drop" id="img-drop">
            <label for="img-input">${t('images.choose')}</label>
            <input id="img-input" type="file" accept="image/*" multiple>
          </div>
          <button type="submit" class="primary">${t('images.submit')}</button>
          ${progress(ctx, 'img-progress')}
        </form>
        ${status('img-status')}
        <ul id="img-list" class="gallery"></ul>`,
    }
  })

  page('/dashboard/data', 'required', (ctx) => {
    const { t } = ctx
    const types = ['application/json', 'text/plain', 'text/csv', 'text/markdown', 'application/xml', 'text/yaml']
    return {
      title: t('data.title'), script: 'data', nav: 'data',
      body: html`
        <p id="data-state" class="card"></p>
        ${redeemForm(ctx)}
        <form id="data-form" class="card" hidden>
          <h2>${t('data.create')}</h2>
          <label for="data-name">${t('data.display_name')}</label>
          <input id="data-name" required maxlength="200">
          <label for="data-type">${t('data.content_type')}</label>
          <select id="data-type">${types.map((x) => html`<option>${x}</option>`)}</select>
          <label for="data-content">${t('data.content')}</label>
          <textarea id="data-content" rows="8" spellcheck="false"></textarea>
          <label for="data-file">${t('data.file')}</label>
          <input id="data-file" type="file" accept=".json,.txt,.csv,.md,.xml,.yaml,.yml,text/*,application/json">
          <button type="submit" class="primary">${t('data.submit')}</button>
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
  })
}
