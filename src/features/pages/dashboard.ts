import { html } from '../../web/html.js'
import type { OwnerHold } from '../abuse/service.js'
import { CATEGORIES } from '../abuse/vocabulary.js'
import type { PageCtx } from '../../web/page.js'
import type { PageRouter } from './page.js'
import type { MsgKey } from './i18n.js'
import type { Registry } from './registry.js'

/** /dashboard: a card per feature page that declares one (registry order), and the API hint. */
export function dashboardPage(pages: PageRouter, registry: Registry): void {
  const cards = registry.nav.filter((e) => e.card)
  pages.page<MsgKey>('/dashboard', 'required', async (ctx) => {
    const { t } = ctx
    const user = ctx.user!.username
    const pagesUrl = `${ctx.contentOrigin}/${user}/`
    return {
      title: t('dash.title'),
      nav: 'dashboard',
      body: html`
        <p>${t('dash.welcome', { user })} · ${t('dash.pages_at')} <code>${pagesUrl}</code></p>
        ${await holdsNotice(ctx)}
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

/** A report's category in the page's words; one the table does not know, as it is. */
const categoryLabel = (t: PageCtx<MsgKey>['t'], c: string): string =>
  (CATEGORIES as readonly string[]).includes(c) ? t(`abuse.category.${c as (typeof CATEGORIES)[number]}`) : c

/** The abuse feature's state, as far as the dashboard asks it (features/abuse/service.ts). */
interface AbuseState {
  ownerHolds(userId: string): Promise<OwnerHold[]>
  abuseContact(): Promise<string>
}

/**
 * The owner's content an admin acted on after an abuse report: what, since when, why (the
 * report's category) and whom to ask. Empty when there is none (or no abuse feature).
 */
async function holdsNotice(ctx: PageCtx<MsgKey>) {
  const abuse = ctx.req.server.featureState('abuse') as AbuseState | undefined
  const holds = abuse ? await abuse.ownerHolds(ctx.user!.id) : []
  if (holds.length === 0) return ''
  const { t } = ctx
  const urlOf = (h: OwnerHold) =>
    h.kind === 'site'
      ? `${ctx.contentOrigin}/${h.username}/${encodeURIComponent(h.name)}`
      : `${ctx.origin}/${h.kind === 'image' ? 'svc-img' : 'svc-data'}/pub/${h.token}`
  const contact = await abuse!.abuseContact()
  return html`<section class="alert" id="abuse-notices">
          <h2>${t('dash.holds.title')}</h2>
          <ul>${holds.map(
            (h) =>
              html`<li data-state="${h.state}">${t(h.state === 'removed' ? 'dash.holds.removed' : 'dash.holds.quarantined', {
                date: new Date(h.created_at).toISOString().slice(0, 10),
                category: categoryLabel(t, h.category),
              })} <code>${urlOf(h)}</code></li>`,
          )}</ul>
          <p>${contact ? html`${t('dash.holds.contact')} <a href="${contact}">${contact.replace(/^mailto:/, '')}</a>` : t('dash.holds.no_contact')}</p>
        </section>`
}
