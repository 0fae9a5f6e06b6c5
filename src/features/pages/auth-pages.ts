import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { UserInputError } from '../../auth/users.js'
import { passwordProblem } from '../../auth/account-rules.js'
import { sessionCookies } from '../../auth/principal.js'
import { clientIp, isCrossSite, isHttps, serviceOrigin, upgradeStatus } from '../../http/origin.js'
import { ipLimitKey } from '../../http/ip-key.js'
import { formToken, formTokenOk } from '../../http/csrf.js'
import type { WindowRule } from '../../limits/tiers.js'
import { createOutcomeLimits } from '../../limits/in-flight.js'
import { sessionCookie } from '../accounts/routes.js'
import { createAdmin, type RegistrationMode } from '../admin/service.js'
import { sha256hex } from '../../auth/tokens.js'
import { html, raw, type SafeHtml } from '../../web/html.js'
import type { PageCtx as AnyPageCtx, PageOut } from '../../web/page.js'
import { safeNext } from '../../web/security.js'
import type { MsgKey } from './i18n.js'
import type { PageRouter } from './page.js'

type PageCtx = AnyPageCtx<MsgKey>

/** Successful sign-ups per client address. */
const REGISTER_RULES: WindowRule[] = [{ name: 'register', kind: 'sliding', ms: 3600_000, limit: 20 }]

/** ?error= of /login -> its message; a Map, so a name like "constructor" finds nothing. */
const LOGIN_ERRORS = new Map<string, MsgKey>([
  ['1', 'login.error.1'],
  ['throttled', 'login.error.throttled'],
  ['disabled', 'login.error.disabled'],
  ['pending', 'login.error.pending'],
  ['expired', 'login.error.expired'],
  ['unavailable', 'login.error.unavailable'],
])

/**
 * Reasons a refused sign-up can show (`/register?error=a,b`), by the field they are about
 * (null: the whole form). A Map, so a name like "constructor" finds nothing.
 */
type RegisterError = 'taken' | 'reserved' | 'format' | 'label' | 'password' | 'mismatch' | 'invite' | 'throttled' | 'expired' | 'unavailable'
const REGISTER_ERRORS = new Map<string, { key: MsgKey; field: 'username' | 'password' | 'password2' | 'invite' | null }>([
  ['taken', { key: 'register.error.taken', field: 'username' }],
  ['reserved', { key: 'register.error.reserved', field: 'username' }],
  ['format', { key: 'register.error.format', field: 'username' }],
  ['label', { key: 'register.error.label', field: 'username' }],
  ['password', { key: 'register.error.password', field: 'password' }],
  ['mismatch', { key: 'register.error.mismatch', field: 'password2' }],
  ['invite', { key: 'register.error.invite', field: 'invite' }],
  ['throttled', { key: 'register.error.throttled', field: null }],
  ['expired', { key: 'register.error.expired', field: null }],
  ['unavailable', { key: 'register.error.unavailable', field: null }],
])

function errorList(ctx: PageCtx, errors: MsgKey[]): SafeHtml | string {
  if (errors.length === 0) return ''
  return html`<div class="alert error" role="alert"><ul>${errors.map((e) => html`<li>${ctx.t(e)}</li>`)}</ul></div>`
}

/**
 * The login form (its post goes to the core's POST /login). `contact`: the abuse contact
 * setting, named under a refusal of a disabled account, whose owner has no other way to ask why.
 */
function loginPage(ctx: PageCtx, token: string, registration: boolean, contact = ''): PageOut {
  const { t } = ctx
  const q = ctx.req.query as Record<string, unknown>
  const err = typeof q.error === 'string' ? LOGIN_ERRORS.get(q.error) : undefined
  // the page to go back to once signed in, and the name typed before a refusal
  const next = safeNext(q.next)
  const username = typeof q.username === 'string' ? q.username.slice(0, 32) : ''
  return {
    title: t('login.title'),
    body: html`
      ${err ? errorList(ctx, [err]) : ''}
      ${
        err === 'login.error.disabled' && contact
          ? html`<p class="narrow" id="disabled-contact">${t('login.disabled.contact')} <a href="${contact}">${contact.replace(/^mailto:/, '')}</a></p>`
          : ''
      }
      <form class="card narrow" method="post" action="/login">
        <input type="hidden" name="_csrf" value="${token}">
        ${next ? html`<input type="hidden" name="next" value="${next}">` : ''}
        <label for="username">${t('login.username')}</label>
        <input id="username" name="username" value="${username}" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="32" autofocus>
        <label for="password">${t('login.password')}</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024">
        <button type="submit" class="primary">${t('login.submit')}</button>
      </form>
      ${registration ? html`<p class="narrow">${t('login.no_account')} <a href="/register">${t('nav.register')}</a></p>` : ''}`,
  }
}

/**
 * The sign-up form; `errors` (from ?error=) are shown next to their field, which is marked
 * invalid and described by them, the first such field focused; form-wide ones above the form.
 */
function registerForm(ctx: PageCtx, token: string, username: string, errors: RegisterError[], mode: RegistrationMode = 'open'): PageOut {
  const { t } = ctx
  const found = errors.map((e) => REGISTER_ERRORS.get(e)!)
  const firstField = found.find((e) => e.field !== null)?.field ?? null
  /** A field's attributes and its error line (empty when it has none). */
  const field = (name: 'username' | 'password' | 'password2' | 'invite', hint: boolean) => {
    const mine = found.filter((e) => e.field === name)
    const describedBy = [mine.length ? `${name}-error` : '', hint ? `${name}-hint` : ''].filter(Boolean).join(' ')
    return {
      attrs: html`${describedBy ? html` aria-describedby="${describedBy}"` : ''}${mine.length ? raw(' aria-invalid="true"') : ''}${firstField === name ? raw(' autofocus') : ''}`,
      error: mine.length ? html`<p class="error field-error" id="${name}-error">${mine.map((e) => t(e.key)).join(' ')}</p>` : '',
    }
  }
  const [u, p1, p2, inv] = [field('username', true), field('password', true), field('password2', false), field('invite', true)]
  const invite =
    mode === 'invite'
      ? html`<label for="invite">${t('register.invite')}</label>
        <input id="invite" name="invite" required maxlength="64" autocomplete="off" spellcheck="false"${inv.attrs}>
        ${inv.error}
        <p class="hint" id="invite-hint">${t('register.invite_hint')}</p>`
      : ''
  return {
    title: t('register.title'),
    body: html`
      ${errorList(
        ctx,
        found.filter((e) => e.field === null).map((e) => e.key),
      )}
      <form class="card narrow" method="post" action="/register">
        <input type="hidden" name="_csrf" value="${token}">
        <label for="username">${t('login.username')}</label>
        <input id="username" name="username" value="${username}" autocomplete="username" autocapitalize="none" spellcheck="false"
          required minlength="2" maxlength="32" pattern="[a-z0-9][a-z0-9_\\-]{1,31}"${u.attrs}>
        ${u.error}
        <p class="hint" id="username-hint">${t('register.username_hint')}</p>
        <label for="password">${t('login.password')}</label>
        <input id="password" name="password" type="password" autocomplete="new-password" required minlength="8" maxlength="1024"${p1.attrs}>
        ${p1.error}
        <p class="hint" id="password-hint">${t('register.password_hint')}</p>
        <label for="password2">${t('register.password2')}</label>
        <input id="password2" name="password2" type="password" autocomplete="new-password" required minlength="8" maxlength="1024"${p2.attrs}>
        ${p2.error}
        ${invite}
        <button type="submit" class="primary">${t('register.submit')}</button>
      </form>
      <p class="narrow">${t('register.have_account')} <a href="/login">${t('nav.login')}</a></p>`,
  }
}

function closedPage(ctx: PageCtx): PageOut {
  return {
    title: ctx.t('register.closed.title'),
    status: 403,
    body: html`<p class="card narrow">${ctx.t('register.closed.text')}</p><p class="narrow"><a href="/login">${ctx.t('nav.login')}</a></p>`,
  }
}

/** Where a sign-up held for approval lands (`/register?pending`, a redirect from the post). */
function pendingPage(ctx: PageCtx): PageOut {
  return {
    title: ctx.t('register.pending.title'),
    body: html`<p class="card narrow" id="pending">${ctx.t('register.pending.text')}</p><p class="narrow"><a href="/login">${ctx.t('nav.login')}</a></p>`,
  }
}

/**
 * /, /login, /register (sign-up), /logout (a confirmation form; the post is in accounts).
 * Sign-up follows the `registration` setting (admin console): open, pending (created
 * disabled until an admin approves it), invite (a one-time invitation code) or closed.
 */
export function authPages(app: FastifyInstance, deps: Deps, pages: PageRouter): void {
  const { config, users, sessions, limits, clock } = deps
  const { page } = pages
  const admin = deps.services.get(createAdmin)
  // a sign-up is counted once its account exists; one being made counts meanwhile
  const signUps = createOutcomeLimits(limits, clock)

  page('/', 'optional', (ctx) => {
    ctx.reply.redirect(ctx.user ? '/dashboard' : '/login', 303)
  })

  page('/login', 'guest', async (ctx) => {
    const ft = formToken(ctx.req)
    if (ft.setCookie) ctx.reply.header('Set-Cookie', ft.setCookie)
    const q = ctx.req.query as Record<string, unknown>
    const contact = q.error === 'disabled' ? (await admin.settings()).abuse_contact : ''
    return loginPage(ctx, ft.token, (await admin.registrationMode()) !== 'closed', contact)
  })

  page('/register', 'guest', async (ctx) => {
    const q = ctx.req.query as Record<string, unknown>
    // where a sign-up held for approval lands (post/redirect/get), whatever the mode is now
    if (q.pending !== undefined) return pendingPage(ctx)
    const mode = await admin.registrationMode()
    if (mode === 'closed') return closedPage(ctx)
    const ft = formToken(ctx.req)
    if (ft.setCookie) ctx.reply.header('Set-Cookie', ft.setCookie)
    // a refused sign-up comes back here (?error=, ?username=) rather than as the post's answer
    const errors = (typeof q.error === 'string' ? q.error.split(',') : []).filter((e): e is RegisterError => REGISTER_ERRORS.has(e))
    const username = typeof q.username === 'string' ? q.username.slice(0, 64) : ''
    return registerForm(ctx, ft.token, username, [...new Set(errors)], mode)
  })

  page('/logout', 'optional', (ctx) => {
    if (!ctx.user) {
      ctx.reply.redirect('/login', 303)
      return
    }
    return {
      title: ctx.t('logout.title'),
      body: html`<form class="card narrow" method="post" action="/logout">
        <p>${ctx.t('logout.text')}</p>
        <input type="hidden" name="_csrf" value="${ctx.csrf}">
        <button type="submit" class="primary">${ctx.t('nav.logout')}</button>
      </form>`,
    }
  })

  app.post('/register', { schema: { hide: true } }, async (req, reply) => {
    // 308: the form's post is repeated on HTTPS with its body (decision 182)
    if (!isHttps(req, config)) return reply.redirect(`${serviceOrigin(req, config)}/register`, upgradeStatus(req.method))
    reply.header('Cache-Control', 'no-store')
    const mode = await admin.registrationMode()
    // every outcome is a redirect to a page (post/redirect/get): reload and back never post again
    if (mode === 'closed') return reply.redirect('/register', 303)
    const body = (req.body ?? {}) as Record<string, unknown>
    const str = (k: string) => (typeof body[k] === 'string' ? body[k] : '')
    const username = str('username').trim().toLowerCase().slice(0, 64)
    const password = str('password')
    const ft = formToken(req)
    if (ft.setCookie) reply.header('Set-Cookie', ft.setCookie)
    // a refusal is a redirect to the form with the reasons: reloading it, or coming back to it
    // with the back button, never asks to send the form again
    const again = (errors: RegisterError[]) => {
      const q = new URLSearchParams({ error: errors.join(',') })
      if (username) q.set('username', username)
      return reply.redirect(`/register?${q}`, 303)
    }

    if (isCrossSite(req, config) || !formTokenOk(req)) return again(['expired'])
    const errors: RegisterError[] = []
    const issue = users.nameIssue(username)
    if (issue !== null) errors.push(issue)
    if (passwordProblem(password)) errors.push('password')
    else if (password !== str('password2')) errors.push('mismatch')
    if (errors.length) return again(errors)

    const ip = clientIp(req, config)
    let entered: Awaited<ReturnType<typeof signUps.enter>>
    try {
      entered = await signUps.enter([[`register:ip:${ipLimitKey(ip)}`, REGISTER_RULES]])
    } catch (e) {
      // the limit store (Redis) did not answer: back to the form, saying so
      if (e instanceof AppError && e.key === 'DEPENDENCY_UNAVAILABLE') return again(['unavailable'])
      throw e
    }
    const { attempt } = entered
    if (!attempt) return again(['throttled'])
    let userId: string
    try {
      // invite: the code is taken first (one use, atomically) and given back if the name is taken
      const inviteHash = mode === 'invite' ? sha256hex(str('invite').trim()) : null
      if (inviteHash !== null && !(await admin.store.useInvite(inviteHash, `registering:${username}`, clock.now()))) return again(['invite'])
      try {
        userId = (await users.create(username, password)).id
      } catch (e) {
        if (inviteHash !== null) await admin.store.releaseInvite(inviteHash)
        if (e instanceof UserInputError) return again(['taken'])
        throw e
      }
      if (inviteHash !== null) await admin.store.useInvite(inviteHash, userId, clock.now(), `registering:${username}`)
      await attempt.count()
    } finally {
      attempt.leave()
    }
    if (mode === 'pending') {
      // created disabled: an admin approves it by enabling it (admin console)
      await users.update(username, { disabled: true })
      await admin.store.addPending(userId, clock.now())
      return reply.redirect('/register?pending', 303)
    }
    // signed in at once, with a new session id (a previous session of this browser ends)
    for (const old of sessionCookies(req.headers.cookie)) await sessions.destroy(old).catch(() => {})
    const s = await sessions.create(userId)
    reply.header('Set-Cookie', sessionCookie(s.id, config.sessionTtlSeconds))
    return reply.redirect('/dashboard', 303)
  })
}
