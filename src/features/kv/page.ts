import { html } from '../../web/html.js'
import { sourceFile } from '../../web/assets.js'
import type { FeatureUi } from '../../web/page.js'
import { pager, status, table } from '../../web/parts.js'
import { KV_MESSAGES, type KvKey } from './messages.js'
import { KV_LIMITS } from './schemas.js'
import { KEY_RE } from './validate.js'

/**
 * The key field's `pattern`: the store's KEY_RE without its anchors (the attribute matches the
 * whole value), its class's trailing `-` escaped, as browsers compile the attribute with the
 * `v` flag, where an unescaped one is a syntax error and the pattern would be ignored.
 */
const KEY_PATTERN = KEY_RE.source.replace(/^\^|\$$/g, '').replace(/-\]/g, '\\-]')

/** /dashboard/kv ("my database"): the frame that static/kv.js fills from the KV API. */
export const kvUi: FeatureUi<KvKey> = {
  messages: KV_MESSAGES,
  scripts: [sourceFile('features/kv/static/kv.js')],
  pages: [
    {
      path: '/dashboard/kv',
      nav: { id: 'kv', order: 30, label: 'nav.kv', card: 'dash.kv.text' },
      render(ctx) {
        const { t } = ctx
        return {
          title: t('kv.title'),
          script: 'kv',
          body: html`
        <form id="kv-form" class="card">
          <h2>${t('kv.editor')}</h2>
          <label for="kv-key">${t('kv.key')}</label>
          <input id="kv-key" required maxlength="${KV_LIMITS.keyMaxChars}" pattern="${KEY_PATTERN}" autocapitalize="none" spellcheck="false" aria-describedby="kv-key-hint">
          <p class="hint" id="kv-key-hint">${t('kv.key_hint', { n: KV_LIMITS.keyMaxChars })}</p>
          <label for="kv-type">${t('kv.type')}</label>
          <select id="kv-type"><option value="json">json</option><option value="text">text</option><option value="number">number</option></select>
          <label for="kv-value">${t('kv.value')}</label>
          <textarea id="kv-value" rows="8" spellcheck="false" required></textarea>
          <label for="kv-tags">${t('kv.tags')}</label>
          <input id="kv-tags" maxlength="1000">
          <label class="check"><input id="kv-public" type="checkbox"> ${t('kv.public')}</label>
          <label class="check"><input id="kv-public-incr" type="checkbox" aria-describedby="kv-public-incr-hint"> ${t('kv.public_incr')}</label>
          <p class="hint" id="kv-public-incr-hint">${t('kv.public_incr_hint')}</p>
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
      },
    },
  ],
}
