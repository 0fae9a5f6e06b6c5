import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import type { Lang } from '../../errors/render.js'
import type { User } from '../../auth/users.js'
import type { Principal } from '../../auth/principal.js'
import { contentOrigin, isHttps, serviceOrigin } from '../../http/origin.js'
import { html, jsonForScript, raw, type SafeHtml } from './html.js'
import { LANG_COOKIE, MESSAGES, pageLang, translator, type MsgKey, type T } from './i18n.js'
import { newNonce, setPageHeaders } from './security.js'
import type { Asset } from './assets.js'

/** What a page handler sees. */
export interface PageCtx {
  req: FastifyRequest
  reply: FastifyReply
  lang: Lang
  t: T
  nonce: string
  /** The logged-in account (pages with auth 'required' always have one). */
  user: User | null
  csrf: string | null
  /** Origin of the service and of user content, for absolute links. */
  origin: string
  contentOrigin: string
}

/** What a page handler returns: a title, the main content, and its script (static/{script}.js). */
export interface PageOut {
  title: string
  body: SafeHtml
  script?: string
  /** Extra data for the page's script (JSON in the page; escaped). */
  data?: Record<string, unknown>
  status?: number
  /** Navigation entry to mark as current. */
  nav?: string
}

export type PageAuth = 'required' | 'optional' | 'guest'

const NAV: Array<[string, MsgKey, string]> = [
  ['dashboard', 'nav.dashboard', '/dashboard'],
  ['files', 'nav.files', '/dashboard/files'],
  ['folders', 'nav.folders', '/dashboard/folders'],
  ['kv', 'nav.kv', '/dashboard/kv'],
  ['forms', 'nav.forms', '/dashboard/forms'],
  ['images', 'nav.images', '/dashboard/images'],
  ['data', 'nav.data', '/dashboard/data'],
  ['keys', 'nav.keys', '/api-keys'],
]

/** The current path with ?lang=... set (for the language switch links). */
function langHref(req: FastifyRequest, lang: Lang): string {
  const u = new URL(req.url, 'https://x')
  u.searchParams.set('lang', lang)
  return u.pathname + u.search
}

/** The whole document around a page's content. */
export function layout(ctx: PageCtx, out: PageOut, css: string, assets: Map<string, Asset>): string {
  const { t, nonce, user, lang } = ctx
  const scripts = ['common', ...(out.script ? [out.script] : [])].map((name) => {
    const a = assets.get(`${name}.js`)
    if (!a) throw new Error(`pages: missing script ${name}.js`)
    return html`<script nonce="${nonce}" src="/static/${a.name}?v=${a.hash}" defer></script>`
  })
  const data = {
    lang, page: out.script ?? null, user: user?.username ?? null,
    origin: ctx.origin, contentOrigin: ctx.contentOrigin, messages: MESSAGES[lang], ...(out.data ?? {}),
  }
  const nav = user
    ? html`<nav class="nav" aria-label="${t('nav.main')}"><ul>${NAV.map(([id, key, href]) =>
      html`<li><a href="${href}"${out.nav === id ? raw(' aria-current="page"') : ''}>${t(key)}</a></li>`)}</ul></nav>`
    : ''
  const account = user
    ? html`<form class="logout" method="post" action="/logout">
        <span class="who">${t('signed_in_as', { user: user.username })}</span>
        <input type="hidden" name="_csrf" value="${ctx.csrf}">
        <button type="submit" class="link">${t('nav.logout')}</button>
      </form>`
    : ''
  const other: Lang = lang === 'en' ? 'zh' : 'en'
  const doc = html`<!doctype html>
<html lang="${lang === 'zh' ? 'zh-CN' : 'en'}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${ctx.csrf ? html`<meta name="csrf-token" content="${ctx.csrf}">` : ''}
<title>${out.title} · ${t('app.name')}</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">${raw(css)}</style>
</head>
<body>
<a class="skip" href="#main">${t('skip')}</a>
<header class="top">
  <a class="brand" href="${user ? '/dashboard' : '/login'}">${t('app.name')}</a>
  ${account}
  <a class="lang" href="${langHref(ctx.req, other)}" hreflang="${other}" lang="${other === 'zh' ? 'zh-CN' : 'en'}">${other === 'zh' ? '中文' : 'English'}</a>
</header>
${nav}
<main id="main">
<h1>${out.title}</h1>
${out.body}
</main>
<div id="toast" class="toast" role="status" aria-live="polite"></div>
<script type="application/json" id="svc-data">${jsonForScript(data)}</script>
${scripts}
</body>
</html>`
  return doc.value
}

/** Registers GET pages with session handling, language, nonce, security headers and layout. */
export function createPageRouter(app: FastifyInstance, deps: Deps, css: string, assets: Map<string, Asset>) {
  const { config } = deps

  /** The page context of a request (the caller's session, if any, resolved by the caller). */
  const context = (req: FastifyRequest, reply: FastifyReply, principal: Principal | null): PageCtx => {
    const lang = pageLang(req)
    return {
      req, reply, lang, t: translator(lang), nonce: newNonce(),
      user: principal?.user ?? null, csrf: principal?.csrfToken ?? null,
      origin: serviceOrigin(req, config), contentOrigin: contentOrigin(req, config),
    }
  }

  /** Sends a page with the security headers. */
  const send = (ctx: PageCtx, out: PageOut) => {
    setPageHeaders(ctx.reply, ctx.nonce, config.contentOrigin ? [ctx.contentOrigin] : [])
    return ctx.reply.code(out.status ?? 200).type('text/html; charset=utf-8').send(layout(ctx, out, css, assets))
  }

  /** The session of a page request (never an API key: pages are for browsers). */
  const sessionOf = async (req: FastifyRequest): Promise<Principal | null> => {
    const res = await deps.resolvePrincipal(undefined, typeof req.headers.cookie === 'string' ? req.headers.cookie : undefined)
    return res.kind === 'ok' ? res.principal : null
  }

  function page(path: string, auth: PageAuth, handler: (ctx: PageCtx) => Promise<PageOut | void> | PageOut | void) {
    app.get(path, { schema: { hide: true } }, async (req, reply) => {
      if (!isHttps(req, config)) return reply.redirect(`${serviceOrigin(req, config)}${req.url}`, 301)
      reply.header('Cache-Control', 'no-store')
      // the language switch: ?lang=en|zh stores the choice and reloads the page without it
      const q = req.query as Record<string, unknown>
      if (q.lang === 'en' || q.lang === 'zh') {
        const u = new URL(req.url, 'https://x')
        u.searchParams.delete('lang')
        reply.header('Set-Cookie', `${LANG_COOKIE}=${q.lang}; Path=/; Secure; SameSite=Lax; Max-Age=31536000`)
        return reply.redirect(u.pathname + u.search, 303)
      }
      const principal = await sessionOf(req)
      if (auth === 'required' && !principal) return reply.redirect('/login', 303)
      if (auth === 'guest' && principal) return reply.redirect('/dashboard', 303)
      const ctx = context(req, reply, principal)
      const out = await handler(ctx)
      if (!out) return reply
      return send(ctx, out)
    })
  }
  return { page, send, context, sessionOf }
}
export type PageRouter = ReturnType<typeof createPageRouter>
