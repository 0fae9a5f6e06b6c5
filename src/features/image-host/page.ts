import { html } from '../../web/html.js'
import { sourceFile } from '../../web/assets.js'
import type { FeatureUi } from '../../web/page.js'
import { pager, progress, redeemForm, status } from '../../web/parts.js'
import { IMAGE_HOST_MESSAGES, type ImageHostKey } from './messages.js'

/** /dashboard/images: activation, upload and the gallery (static/images.js). */
export const imageHostUi: FeatureUi<ImageHostKey> = {
  messages: IMAGE_HOST_MESSAGES,
  scripts: [sourceFile('features/image-host/static/images.js')],
  pages: [
    {
      path: '/dashboard/images',
      nav: { id: 'images', order: 50, label: 'nav.images', card: 'dash.images.text' },
      render(ctx) {
        const { t } = ctx
        return {
          title: t('images.title'),
          script: 'images',
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
        <ul id="img-list" class="gallery"></ul>
        ${pager('img-pager')}`,
        }
      },
    },
  ],
}
