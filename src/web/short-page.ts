import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppError } from '../errors/app-error.js'
import { isApiPath } from '../http/api-path.js'
import { errorMessage, HTML_LANG, langOf } from '../errors/render.js'
import { html, raw } from './html.js'

/** The text of a message in the request's language (Accept-Language; Chinese by default). */
export const say = (req: FastifyRequest, zh: string, en: string) => (langOf(req) === 'en' ? en : zh)

/**
 * A browser navigation (a form post, a link opened from a mail): Accept names text/html and
 * not JSON, and the request is not marked as a script's (Sec-Fetch-Mode other than navigate,
 * or X-Requested-With), so a script always gets JSON whatever Accept it sends.
 */
export const wantsHtml = (req: FastifyRequest) => {
  const accept = req.headers.accept ?? ''
  const mode = req.headers['sec-fetch-mode']
  if ((mode !== undefined && mode !== 'navigate') || req.headers['x-requested-with'] !== undefined) return false
  return accept.includes('text/html') && !accept.includes('application/json')
}

/**
 * The Back link's one script: back in the tab's history to the page the visitor came from (a
 * cross-origin post's Referer names only that page's origin, which on a user's origin is no
 * site); without history (a new tab), the link's href, the Referer, is followed. Allowed by its
 * hash alone.
 */
const BACK_SCRIPT = "document.getElementById('back').addEventListener('click',function(e){if(history.length>1){e.preventDefault();history.back()}})"
const BACK_HASH = `'sha256-${createHash('sha256').update(BACK_SCRIPT).digest('base64')}'`

/** A button that posts hidden fields to one of the service's own paths (a step a person confirms). */
export interface ConfirmForm {
  action: string
  fields: Record<string, string>
  label: string
}

/** What a short page adds to its title and text. */
export interface ShortPageExtras {
  /** a link to one of the service's pages */
  home?: { href: string; label: string }
  /** a button a person confirms with; such a page is never framed */
  confirm?: ConfirmForm
  /**
   * Any page may frame it: where a form in an iframe lands, so the visitor reads the answer
   * there. Only for pages with nothing to click but Back (no confirm button).
   */
  framed?: boolean
}

/**
 * The service's own short page for a browser (nothing loaded, one pinned script): where a form
 * post lands without a redirect_url or when refused, what a mail's verification link opens, and
 * what a navigation gets when the service cannot answer (errorPage). A link back to the page
 * the visitor came from when the browser said which site that was, and one to `home` if given.
 */
export function shortPage(
  req: FastifyRequest,
  reply: FastifyReply,
  status: number,
  title: string,
  text: string,
  { home, confirm, framed = false }: ShortPageExtras = {},
) {
  const ref = typeof req.headers.referer === 'string' && /^https?:\/\//i.test(req.headers.referer) ? req.headers.referer : null
  const form = confirm
    ? html`<form method="post" action="${confirm.action}">${Object.entries(confirm.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}<button type="submit">${confirm.label}</button></form>`
    : ''
  const page = html`<!doctype html><html lang="${HTML_LANG[langOf(req)]}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${title}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1d2330}button{font:inherit;padding:.4rem 1.2rem}</style></head>
<body><h1>${title}</h1><p>${text}</p>${form}${home ? html`<p><a href="${home.href}">${home.label}</a></p>` : ''}${ref ? html`<p><a id="back" href="${ref}">${say(req, '返回', 'Back')}</a></p><script>${raw(BACK_SCRIPT)}</script>` : ''}</body></html>`
  return reply
    .code(status)
    .header('Content-Type', 'text/html; charset=utf-8')
    .header(
      'Content-Security-Policy',
      `default-src 'none'; style-src 'unsafe-inline'; script-src ${BACK_HASH}; ${framed && !confirm ? '' : "frame-ancestors 'none'; "}base-uri 'none'; form-action ${confirm ? "'self'" : "'none'"}`,
    )
    .header('Cache-Control', 'no-store')
    .send(page.toString())
}

/**
 * A browser navigation to one of the service's pages that failed on the server's side (5xx:
 * the database or Redis unreachable, an unexpected error) gets the short page in its language
 * instead of the API's JSON; API paths and scripts keep the JSON. undefined: not such a request.
 */
export function errorPage(req: FastifyRequest, reply: FastifyReply, err: AppError): FastifyReply | undefined {
  if (err.status < 500 || isApiPath(req.url) || !wantsHtml(req)) return undefined
  for (const [k, v] of Object.entries(err.options.headers ?? {})) reply.header(k, v)
  const lang = langOf(req)
  const title = err.status === 500 ? say(req, '出错了', 'Something went wrong') : say(req, '服务暂时不可用', 'Briefly unavailable')
  const again = say(req, '请稍后重新加载此页。', 'Please reload this page in a moment.')
  return shortPage(req, reply, err.status, title, `${errorMessage(err.key, lang, err.options.params)} ${again}`)
}

/**
 * A browser navigation to a path of the service's own host that nothing answers (a mistyped
 * `/dashbord`) gets the short page in its language with a link to the service's home; a script
 * keeps the plain-text 404. undefined: not such a request.
 */
export function notFoundPage(req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
  if (isApiPath(req.url) || !wantsHtml(req)) return undefined
  return shortPage(
    req,
    reply,
    404,
    say(req, '404 - 页面不存在', '404 - page not found'),
    say(req, '这个地址没有页面：它可能已经移走，或者地址有误。', 'There is no page at this address. It may have moved, or the address may be mistyped.'),
    { home: { href: '/', label: say(req, '前往首页', 'Go to the home page') } },
  )
}
