import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { formToken, formTokenOk } from '../../http/csrf.js'
import { clientIp, isCrossSite, isHttps, serviceOrigin, upgradeStatus } from '../../http/origin.js'
import { html, raw } from '../../web/html.js'
import type { FeatureUi } from '../../web/page.js'
import { ABUSE_MESSAGES, type AbuseKey } from './messages.js'
import { admitReport } from './routes.js'
import { createAbuse, type Abuse } from './service.js'
import { CATEGORIES } from './vocabulary.js'

/** ?error= of /report -> its message; a Map, so a name like "hasOwnProperty" finds nothing. */
const ERRORS = new Map<string, AbuseKey>([
  ['invalid', 'report.error.invalid'],
  ['throttled', 'report.error.throttled'],
  ['expired', 'report.error.expired'],
])

/**
 * /report: the public report form (no login, no script: a plain form post with the
 * browser's form token, answered by a redirect back here). Reached from the report link of
 * every hosted answer (/.well-known/svc-report), from 451 notices and from security.txt.
 */
export const abuseUi: FeatureUi<AbuseKey> = {
  messages: ABUSE_MESSAGES,
  scripts: [],
  pages: [
    {
      path: '/report',
      auth: 'optional',
      async render(ctx) {
        const { t } = ctx
        const q = ctx.req.query as Record<string, unknown>
        const url = typeof q.url === 'string' ? q.url.slice(0, 2000) : ''
        const category = typeof q.category === 'string' ? q.category : ''
        const ft = formToken(ctx.req)
        if (ft.setCookie) ctx.reply.header('Set-Cookie', ft.setCookie)
        // the app's abuse service (its state): the contact setting
        const contact = await (ctx.req.server.featureState('abuse') as Abuse).abuseContact()
        const err = typeof q.error === 'string' ? ERRORS.get(q.error) : undefined
        return {
          title: t('report.title'),
          status: err ? 400 : 200,
          body: html`
              ${q.sent === '1' ? html`<div class="alert ok" role="status" id="report-sent">${t('report.sent')}</div>` : ''}
              ${err ? html`<div class="alert error" role="alert" id="report-error">${t(err)}</div>` : ''}
              <p class="narrow">${t('report.intro')}</p>
              <form class="card narrow" method="post" action="/report" id="report-form">
                <input type="hidden" name="_csrf" value="${ft.token}">
                <label for="report-url">${t('report.url')}</label>
                <input id="report-url" name="url" type="url" required maxlength="2000" spellcheck="false" value="${url}">
                <fieldset><legend>${t('report.category')}</legend>
                ${CATEGORIES.map(
                  (c) =>
                    html`<label class="check"><input type="radio" name="category" value="${c}" required${c === category ? raw(' checked') : ''}> ${t(`report.category.${c}`)}</label>`,
                )}
                </fieldset>
                <label for="report-details">${t('report.details')}</label>
                <textarea id="report-details" name="details" rows="5" maxlength="5000"></textarea>
                <label for="report-contact">${t('report.contact')}</label>
                <input id="report-contact" name="contact" type="email" maxlength="300" autocomplete="email">
                <button type="submit" class="primary">${t('report.submit')}</button>
              </form>
              ${contact ? html`<p class="narrow hint">${t('report.contact_text', { contact: contact.replace(/^mailto:/, '') })}</p>` : ''}`,
        }
      },
    },
  ],
}

/** POST /report: the form's post; answers with a redirect to /report (sent, or the error). */
export function abusePages(app: FastifyInstance, deps: Deps): void {
  const abuse = deps.services.get(createAbuse)
  app.post('/report', { schema: { hide: true } }, async (req, reply) => {
    // 308: the form's post is repeated on HTTPS with its body (decision 182)
    if (!isHttps(req, deps.config)) return reply.redirect(`${serviceOrigin(req, deps.config)}/report`, upgradeStatus(req.method))
    reply.header('Cache-Control', 'no-store')
    const body = (req.body ?? {}) as Record<string, unknown>
    const str = (k: string) => (typeof body[k] === 'string' ? body[k] : '')
    const back = (error: string) =>
      reply.redirect(
        `/report?error=${error}&url=${encodeURIComponent(str('url').slice(0, 2000))}&category=${encodeURIComponent(str('category').slice(0, 20))}`,
        303,
      )
    if (isCrossSite(req, deps.config) || !formTokenOk(req)) return back('expired')
    const ip = clientIp(req, deps.config)
    try {
      await admitReport(deps, ip)
      await abuse.report({ url: str('url'), category: str('category'), details: str('details'), contact: str('contact') }, ip)
    } catch (e) {
      if (e instanceof AppError && e.key === 'REPORT_THROTTLED') return back('throttled')
      if (e instanceof AppError && e.key === 'REPORT_INVALID') return back('invalid')
      throw e
    }
    return reply.redirect('/report?sent=1', 303)
  })
}
