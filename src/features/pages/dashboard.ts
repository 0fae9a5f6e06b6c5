import { html } from '../../web/html.js'
import type { PageRouter } from './page.js'
import type { MsgKey } from './i18n.js'
import type { Registry } from './registry.js'

/** /dashboard: a card per feature page that declares one (registry order), and the API hint. */
export function dashboardPage(pages: PageRouter, registry: Registry): void {
  const cards = registry.nav.filter((e) => e.card)
  pages.page<MsgKey>('/dashboard', 'required', (ctx) => {
    const { t } = ctx
    const user = ctx.user!.username
    const pagesUrl = `${ctx.contentOrigin}/${user}/`
    return {
      title: t('dash.title'),
      nav: 'dashboard',
      body: html`
        <p>${t('dash.welcome', { user })} · ${t('dash.pages_at')} <code>${pagesUrl}</code></p>
        <ul class="cards">${cards
          .filter((e) => !e.adminOnly || ctx.user!.is_admin)
          .map(
            ({ id, label, card, href }) => html`
          <li class="card" id="card-${id}"><h2><a href="${href}">${ctx.t(label as MsgKey)}</a></h2><p>${ctx.t(card as MsgKey)}</p></li>`,
          )}
        </ul>
        <section class="card">
          <h2>${t('dash.api.title')}</h2>
          <p>${t('dash.api.text')}</p>
          <pre><code>curl ${ctx.origin}/svc_api/files -H "Authorization: Bearer $API_KEY"</code></pre>
          <p><a href="/docs" id="api-reference">${t('dash.api.docs')}</a></p>
        </section>`,
    }
  })
}
