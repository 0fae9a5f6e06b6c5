import { html } from '../../web/html.js'
import { sourceFile } from '../../web/assets.js'
import type { FeatureUi } from '../../web/page.js'
import { pager, progress, status, table } from '../../web/parts.js'
import { SITES_MESSAGES, type SitesKey } from './messages.js'

/** /dashboard/files and /dashboard/folders: single files and folder projects (static/files.js, static/folders.js). */
export const sitesUi: FeatureUi<SitesKey> = {
  messages: SITES_MESSAGES,
  scripts: [sourceFile('features/sites/static/files.js'), sourceFile('features/sites/static/folders.js')],
  pages: [
    {
      path: '/dashboard/files',
      nav: { id: 'files', order: 10, label: 'nav.files', card: 'dash.files.text' },
      render(ctx) {
        const { t } = ctx
        return {
          title: t('files.title'),
          script: 'files',
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
      },
    },
    {
      path: '/dashboard/folders',
      nav: { id: 'folders', order: 20, label: 'nav.folders', card: 'dash.folders.text' },
      render(ctx) {
        const { t } = ctx
        return {
          title: t('folders.title'),
          script: 'folders',
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
        <form id="zip-form" class="card">
          <h2>${t('zip.title')}</h2>
          <p class="hint">${t('zip.hint')}</p>
          <div class="drop" id="zip-drop">
            <p>${t('zip.drop')}</p>
            <label for="zip-input">${t('zip.choose')}</label>
            <input id="zip-input" type="file" accept=".zip,application/zip,application/x-zip-compressed">
          </div>
          <label for="zip-name">${t('zip.project')}</label>
          <input id="zip-name" required maxlength="100" autocapitalize="none" spellcheck="false">
          <label class="check"><input id="zip-preview" type="checkbox"> ${t('zip.preview')}</label>
          <button type="submit" class="primary">${t('zip.submit')}</button>
          ${progress(ctx, 'zip-progress')}
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
          <p><span id="project-state"></span> <a id="project-site" target="_blank" rel="noopener noreferrer" hidden>${t('folders.open_site')}</a>
            <small id="project-sandboxed" class="hint" hidden>${t('common.sandboxed')}</small>
            <a id="project-root" target="_blank" rel="noopener noreferrer" hidden>${t('folders.open_root')}</a></p>
          <p id="project-root-hint" class="hint" hidden>${t('folders.root_hint')}</p>
          <p id="project-user-site-line"><span id="project-user-site-state"></span>
            <a id="project-user-site-link" target="_blank" rel="noopener noreferrer" hidden></a>
            <button type="button" id="project-user-site">${t('folders.make_user_site')}</button></p>
          <p class="hint">${t('folders.user_site_hint')}</p>
          <p class="hint">${t('folders.need_index')}</p>
          <div class="buttons">
            <button type="button" id="project-publish" class="primary">${t('folders.publish')}</button>
            <button type="button" id="project-unpublish">${t('folders.unpublish')}</button>
            <button type="button" id="project-delete" class="danger">${t('folders.delete')}</button>
          </div>
          <h3>${t('deploys.title')}</h3>
          <p class="hint">${t('deploys.hint')}</p>
          ${table(ctx, 'deploys-table', ['deploys.col.id', 'deploys.col.created', 'deploys.col.files', 'deploys.col.source', 'deploys.col.message'])}
          <h3>${t('folders.tree')}</h3>
          <div id="project-tree" class="tree"></div>
        </section>`,
        }
      },
    },
  ],
}
