import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { HTML_LANG, type Lang } from '../../errors/render.js'
import type { Principal } from '../../auth/principal.js'
import { contentOrigin, isHttps, serviceOrigin, upgradeStatus } from '../../http/origin.js'
import { html, jsonForScript, raw } from '../../web/html.js'
import { newNonce, safeNext, setPageHeaders } from '../../web/security.js'
import type { PageAuth, PageCtx, PageOut } from '../../web/page.js'
import { LANG_COOKIE, pageLang, translator, type MsgKey } from './i18n.js'
import type { Asset } from './assets.js'
import type { Registry } from './registry.js'
import { upperEscapes } from '../../util/percent-escapes.js'

/** The current path with ?lang=... set (for the language switch links). */
function langHref(req: FastifyRequest, lang: Lang): string {
  const u = new URL(req.url, 'https://x')
  u.searchParams.set('lang', lang)
  return u.pathname + u.search
}

/** The whole document around a page's content: header, navigation, the page, its scripts. */
export function layout(ctx: PageCtx, out: PageOut, css: string, assets: Map<string, Asset>, registry: Registry): string {
  const { t, nonce, user, lang } = ctx
  const scripts = ['common', ...(out.script ? [out.script] : [])].map((name) => {
    const a = assets.get(`${name}.js`)
    if (!a) throw new Error(`pages: missing script ${name}.js`)
    return html`<script nonce="${nonce}" src="/static/${a.name}?v=${a.hash}" defer></script>`
  })
  const data = {
    lang,
    page: out.script ?? null,
    user: user?.username ?? null,
    origin: ctx.origin,
    contentOrigin: ctx.contentOrigin,
    messages: registry.messages[lang],
    ...(out.data ?? {}),
  }
  const nav = user
    ? html`<nav class="nav" aria-label="${t('nav.main')}"><ul>${registry.nav
        .filter((e) => !e.adminOnly || user.is_admin)
        .map(({ id, label, href }) => html`<li><a href="${href}"${out.nav === id ? raw(' aria-current="page"') : ''}>${t(label)}</a></li>`)}</ul></nav>`
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
<html lang="${HTML_LANG[lang]}">
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
  <a class="lang" href="${langHref(ctx.req, other)}" hreflang="${other}" lang="${HTML_LANG[other]}">${other === 'zh' ? '中文' : 'English'}</a>
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
export function createPageRouter(app: FastifyInstance, deps: Deps, css: string, assets: Map<string, Asset>, registry: Registry) {
  const { config } = deps

  /** The page context of a request (the caller's session, if any, resolved by the caller). */
  const context = (req: FastifyRequest, reply: FastifyReply, principal: Principal | null): PageCtx => {
    const lang = pageLang(req)
    return {
      req,
      reply,
      lang,
      t: translator(registry.messages[lang]),
      nonce: newNonce(),
      user: principal?.user ?? null,
      csrf: principal?.csrfToken ?? null,
      origin: serviceOrigin(req, config),
      contentOrigin: contentOrigin(req, config),
    }
  }

  /** Sends a page with the security headers. */
  const send = (ctx: PageCtx, out: PageOut) => {
    setPageHeaders(ctx.reply, ctx.nonce, config.contentOrigin ? [ctx.contentOrigin] : [])
    return ctx.reply
      .code(out.status ?? 200)
      .type('text/html; charset=utf-8')
      .send(layout(ctx, out, css, assets, registry))
  }

  /** The session of a page request (never an API key: pages are for browsers). */
  const sessionOf = async (req: FastifyRequest): Promise<Principal | null> => {
    const res = await deps.resolvePrincipal(
      undefined,
      typeof req.headers.cookie === 'string' ? req.headers.cookie : undefined,
      req.headers['sec-fetch-site'] !== undefined,
    )
    return res.kind === 'ok' ? res.principal : null
  }

  /** A GET page; K: the message keys its handler uses (the shell's own by default). */
  function page<K extends string = MsgKey>(path: string, auth: PageAuth, handler: (ctx: PageCtx<K>) => Promise<PageOut | void> | PageOut | void) {
    app.get(path, { schema: { hide: true } }, async (req, reply) => {
      if (!isHttps(req, config)) return reply.redirect(`${serviceOrigin(req, config)}${upperEscapes(req.url)}`, upgradeStatus(req.method))
      reply.header('Cache-Control', 'no-store')
      // the language switch: ?lang=en|zh stores the choice and reloads the page without it
      const q = req.query as Record<string, unknown>
      if (q.lang === 'en' || q.lang === 'zh') {
        const u = new URL(req.url, 'https://x')
        u.searchParams.delete('lang')
        reply.header('Set-Cookie', `${LANG_COOKIE}=${q.lang}; Path=/; Secure; SameSite=Lax; Max-Age=31536000`)
        return reply.redirect(upperEscapes(u.pathname) + u.search, 303)
      }
      const principal = await sessionOf(req)
      // signed out: the login page, which comes back here once signed in
      if (auth === 'required' && !principal) {
        const next = safeNext(req.url)
        return reply.redirect(next ? `/login?next=${encodeURIComponent(next)}` : '/login', 303)
      }
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
