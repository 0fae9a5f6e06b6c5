import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { sendAppError } from '../../http/errors.js'
import { caller } from '../../http/guard.js'
import { clientIp, isCrossSite, isHttps } from '../../http/origin.js'
import { dummyHash, verifyPassword } from '../../auth/passwords.js'
import { MAX_KEY_DAYS, MAX_PASSWORD_BYTES, MIN_PASSWORD_LENGTH, passwordProblem } from '../../auth/account-rules.js'
import { sessionCookies } from '../../auth/principal.js'
import { SESSION_BIND_COOKIE, sessionBind, sha256hex } from '../../auth/tokens.js'
import { createLoginThrottle } from './throttle.js'
import { unknownField } from '../../http/unknown-fields.js'
import { Done, KeyCreatedReply, KeyListReply, MeReply, RedeemReply } from './schemas.js'
import { formTokenOk, sessionCsrfOk } from '../../http/csrf.js'
import { safeNext } from '../../web/security.js'
import { say } from '../../web/short-page.js'
import { writeAudit } from '../admin/store.js'
import { deleteAccount, dropDeletedAccount } from './delete.js'
import { createAdmin } from '../admin/service.js'
import type { Text } from '../../errors/text.js'

const wantsHtml = (req: FastifyRequest) => {
  const accept = req.headers.accept ?? ''
  return accept.includes('text/html') && !accept.includes('application/json')
}

/**
 * Set-Cookie values for a session: `session` (HttpOnly, Secure, SameSite=Lax, Path=/, no
 * Domain) and its `__Host-` binding cookie with the same attributes (SESSION_BIND_COOKIE).
 */
export function sessionCookie(id: string, maxAgeSeconds: number): string[] {
  const attrs = `Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=${maxAgeSeconds}`
  return [`session=${id}; ${attrs}`, `${SESSION_BIND_COOKIE}=${sessionBind(id)}; ${attrs}`]
}
/** Reasons the login page can show (`/login?error=...`) for refusals of its form. */
const HTML_LOGIN_ERRORS: Partial<Record<string, string>> = {
  LOGIN_THROTTLED: 'throttled',
  ACCOUNT_DISABLED: 'disabled',
  CSRF_TOKEN: 'expired',
  CROSS_ORIGIN: 'expired',
  // the throttle's store (Redis) did not answer: a browser gets its form back with a message
  DEPENDENCY_UNAVAILABLE: 'unavailable',
}
const CLEAR_COOKIE = [
  'session=; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=0',
  `${SESSION_BIND_COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=0`,
]

/** POST /login and POST /logout (pages context). */
export function accountPages(app: FastifyInstance, deps: Deps): void {
  const { config, users, sessions } = deps
  const throttle = createLoginThrottle(deps.limits, deps.clock)
  const admin = deps.services.get(createAdmin)

  /** The login page again with a reason, keeping the name typed and the page to go back to. */
  const again = (req: FastifyRequest, reply: FastifyReply, reason: string) => {
    const body = (req.body ?? {}) as Record<string, unknown>
    const q = new URLSearchParams({ error: reason })
    if (typeof body.username === 'string' && body.username.trim() !== '') q.set('username', body.username.trim().slice(0, 32))
    const next = safeNext(body.next)
    if (next) q.set('next', next)
    return reply.redirect(`/login?${q}`, 303)
  }
  const refuse = (req: FastifyRequest, reply: FastifyReply, err: AppError) => {
    if (wantsHtml(req) && err.key === 'LOGIN_FAILED') return again(req, reply, '1')
    // other refusals of the login page's own form go back to it with a reason to show
    const reason = HTML_LOGIN_ERRORS[err.key]
    if (wantsHtml(req) && reason !== undefined) return again(req, reply, reason)
    return sendAppError(req, reply, err, config, 'A')
  }

  app.post(
    '/login',
    {
      schema: { hide: true },
    },
    async (req, reply) => {
      if (!isHttps(req, config)) return refuse(req, reply, new AppError('HTTPS_REQUIRED'))
      if (isCrossSite(req, config)) return refuse(req, reply, new AppError('CROSS_ORIGIN'))
      // login CSRF: a browser's post must carry the form token of the login page (double submit)
      if (!formTokenOk(req)) return refuse(req, reply, new AppError('CSRF_TOKEN'))
      const body = (req.body ?? {}) as Record<string, unknown>
      const username = typeof body.username === 'string' ? body.username.trim().toLowerCase() : ''
      const password = typeof body.password === 'string' ? body.password : ''
      const ip = clientIp(req, config)
      let entered: Awaited<ReturnType<typeof throttle.enter>>
      try {
        entered = await throttle.enter(username, ip)
      } catch (e) {
        if (e instanceof AppError) return refuse(req, reply, e)
        throw e
      }
      const { wait, attempt } = entered
      if (!attempt) {
        return refuse(
          req,
          reply,
          new AppError('LOGIN_THROTTLED', { params: { retry_after: wait }, extra: { retry_after: wait }, headers: { 'Retry-After': String(wait) } }),
        )
      }
      // the attempt counts as a failure until it is known not to be one
      let row: Awaited<ReturnType<typeof users.byName>>
      try {
        // U+0000 is in no username (PostgreSQL cannot even look it up): unknown on both engines
        row = username && !username.includes('\u0000') ? await users.byName(username) : undefined
        // an unknown user costs the same hash verification as a wrong password
        const ok = await verifyPassword(row?.password_hash ?? (await dummyHash()), password)
        if (!row || !ok) {
          await attempt.count()
          return refuse(req, reply, new AppError('LOGIN_FAILED'))
        }
      } finally {
        attempt.leave()
      }
      if (row.disabled) {
        // an account still awaiting approval is told so, as its sign-up page said, not that it
        // was disabled (and where to appeal); the API keeps the one error of a disabled account
        if (wantsHtml(req) && (await admin.isPending(row.id))) return again(req, reply, 'pending')
        return refuse(req, reply, new AppError('ACCOUNT_DISABLED'))
      }
      // a new id at every login (no fixation); a previous session of this browser ends
      for (const old of sessionCookies(req.headers.cookie)) await sessions.destroy(old).catch(() => {})
      const s = await sessions.create(row.id)
      reply.header('Set-Cookie', sessionCookie(s.id, config.sessionTtlSeconds))
      reply.header('Cache-Control', 'no-store')
      if (wantsHtml(req)) return reply.redirect(safeNext(body.next) ?? '/dashboard', 303)
      return { success: true, message: say(req, '登录成功', 'Logged in'), data: { username: row.username } }
    },
  )

  app.post('/logout', { schema: { hide: true } }, async (req, reply) => {
    if (isCrossSite(req, config)) return refuse(req, reply, new AppError('CROSS_ORIGIN'))
    // a browser ending a live session must send its CSRF token (hidden field of the logout form)
    const res = await deps.resolvePrincipal(undefined, req.headers.cookie, req.headers['sec-fetch-site'] !== undefined)
    if (res.kind === 'ok' && !sessionCsrfOk(req, res.principal.csrfToken)) {
      // the page at GET /logout offers a fresh form
      if (wantsHtml(req)) return reply.redirect('/logout', 303)
      return refuse(req, reply, new AppError('CSRF_TOKEN'))
    }
    for (const sid of sessionCookies(req.headers.cookie)) await sessions.destroy(sid).catch(() => {})
    reply.header('Set-Cookie', CLEAR_COOKIE)
    if (wantsHtml(req)) return reply.redirect('/login', 303)
    return { success: true, message: say(req, '已退出登录', 'Logged out') }
  })
}

const KeyCreateBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  // omitted = never expires (a null would be coerced by AJV, so it is not part of the schema)
  expires_days: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_KEY_DAYS, description: 'days until the key stops working; omitted: never' })),
  read_only: Type.Optional(Type.Boolean({ description: 'the key may only read: GET routes and the read-only MCP tools (1440 on writes)' })),
})

// Lengths in characters bound the body; the rule itself (characters and UTF-8 bytes) is passwordProblem's
const PasswordBody = Type.Object({
  current_password: Type.String({ maxLength: MAX_PASSWORD_BYTES, description: 'the password the account has now' }),
  new_password: Type.String({
    maxLength: MAX_PASSWORD_BYTES,
    description: `the new password: at least ${MIN_PASSWORD_LENGTH} characters, at most ${MAX_PASSWORD_BYTES} bytes`,
  }),
})

const DeleteBody = Type.Object({
  username: Type.String({ maxLength: 64, description: "the account's username, typed again" }),
  password: Type.String({ maxLength: MAX_PASSWORD_BYTES, description: 'the password the account has now' }),
})

/** What a redeemed code turned on, by feature (the names the web interface gives them). */
const ENABLED: Partial<Record<string, Text>> = {
  'image-host': { zh: '已开通图片托管', en: 'Image hosting enabled' },
  'hosted-data': { zh: '已开通数据托管', en: 'Hosted data enabled' },
}

/** API key management (session only, beyond the spec), redeem codes, and whoami. */
export function accountApi(app: FastifyInstance, deps: Deps): void {
  const { apiKeys, db, clock, users, config } = deps
  const session = { auth: 'session' as const }
  const throttle = createLoginThrottle(deps.limits, clock)
  // `field` names the refused field, so a page can mark it
  const badInput = (field: string, zh: string, en: string) => new AppError('INVALID_PARAMETER', { params: { detail: { zh, en } }, extra: { field } })
  /**
   * The account's password typed again (in `field`), checked through the login's own throttle:
   * a guess here spends the same budget per name and address as one at the login.
   */
  const passwordAgain = async (req: FastifyRequest, username: string, given: string, field: string): Promise<void> => {
    const { wait, attempt } = await throttle.enter(username, clientIp(req, config))
    if (!attempt)
      throw new AppError('LOGIN_THROTTLED', { params: { retry_after: wait }, extra: { retry_after: wait }, headers: { 'Retry-After': String(wait) } })
    try {
      const row = await users.byName(username)
      if (!row || !(await verifyPassword(row.password_hash, given))) {
        await attempt.count()
        throw badInput(field, `${field} 不是该账户的当前密码`, `${field} is not the account’s current password`)
      }
    } finally {
      attempt.leave()
    }
  }

  app.post(
    '/svc_api/account/password',
    {
      config: session,
      schema: {
        tags: ['account'],
        summary: "Change the account's password (session only); its other sessions end, API keys stay",
        body: PasswordBody,
        response: { 200: Done },
      },
    },
    async (req) => {
      const p = caller(req)
      const body = req.body as { current_password: string; new_password: string }
      if (passwordProblem(body.new_password))
        throw badInput(
          'new_password',
          `new_password 至少 ${MIN_PASSWORD_LENGTH} 个字符（最多 ${MAX_PASSWORD_BYTES} 字节）`,
          `new_password must have at least ${MIN_PASSWORD_LENGTH} characters (at most ${MAX_PASSWORD_BYTES} bytes)`,
        )
      await passwordAgain(req, p.user.username, body.current_password, 'current_password')
      await users.changePassword(p.user.id, body.new_password, sha256hex(p.sessionId ?? ''))
      await writeAudit(db, clock.now(), {
        actor: p.user.username,
        via: 'web',
        action: 'user.password',
        target: p.user.username,
        ip: clientIp(req, config),
        user_agent: req.headers['user-agent'] ?? '',
      })
      return { success: true, message: say(req, '密码已更改；其他设备上的登录已结束', 'Password changed; sign-ins on other devices have ended') }
    },
  )

  // the account's own delete: a session of a browser that types the name and the password
  // again, as GitHub and Netlify ask; never an API key, which a leaked copy would make enough
  // to destroy everything the account holds (docs/api/accounts.md)
  app.post(
    '/svc_api/account/delete',
    {
      config: session,
      schema: {
        tags: ['account'],
        summary: 'Delete the account and everything it holds (session only; the username and password typed again); its name stays held',
        body: DeleteBody,
        response: { 200: Done },
      },
    },
    async (req, reply) => {
      const p = caller(req)
      const body = req.body as { username: string; password: string }
      if (body.username.trim().toLowerCase() !== p.user.username)
        throw badInput('username', 'username 与当前登录的账户名不一致', 'username is not the name of the account signed in')
      if (p.user.is_admin)
        throw badInput(
          'username',
          '管理员账户不能自行删除：请由另一位管理员或 svc user delete 删除',
          'an admin account cannot delete itself: another admin or `svc user delete` deletes it',
        )
      await passwordAgain(req, p.user.username, body.password, 'password')
      const done = await deleteAccount(db, clock.now(), p.user.id, p.user.username)
      if (!done) throw new AppError('USER_NOT_FOUND')
      await dropDeletedAccount(deps.bus, done.username)
      await writeAudit(db, clock.now(), {
        actor: done.username,
        via: 'web',
        action: 'user.delete',
        target: done.username,
        details: { usage: done.usage, self: true },
        ip: clientIp(req, config),
        user_agent: req.headers['user-agent'] ?? '',
      })
      reply.header('Set-Cookie', CLEAR_COOKIE)
      return { success: true, message: say(req, '账户已删除', 'Account deleted') }
    },
  )

  app.get(
    '/svc_api/me',
    { config: { auth: 'any' }, schema: { tags: ['account'], summary: "The caller's account (beyond the spec)", response: { 200: MeReply } } },
    async (req) => {
      const p = caller(req)
      return { success: true, data: { username: p.user.username, tier: p.user.tier, via: p.via, is_admin: p.user.is_admin, read_only: p.readOnly === true } }
    },
  )

  app.get(
    '/svc_api/api-keys',
    { config: session, schema: { tags: ['api-keys'], summary: 'List API keys (session only)', response: { 200: KeyListReply } } },
    async (req) => {
      const keys = await apiKeys.list(caller(req).user.id)
      return { success: true, data: { keys, limit: 10 } }
    },
  )

  app.post(
    '/svc_api/api-keys',
    {
      config: session,
      schema: { tags: ['api-keys'], summary: 'Create an API key; the key is shown once', body: KeyCreateBody, response: { 200: KeyCreatedReply } },
    },
    async (req) => {
      const p = caller(req)
      const body = (req.body ?? {}) as { name?: string; expires_days?: number | null; read_only?: boolean }
      // a misspelt expires_days would otherwise make a key that never expires
      const unknown = unknownField(body, ['name', 'expires_days', 'read_only'])
      if (unknown) throw badInput(unknown.field, unknown.detail.zh, unknown.detail.en)
      // key creation also needs the session's CSRF token when a browser sends it from a page
      const token = req.headers['x-csrf-token']
      if (req.headers['sec-fetch-site'] !== undefined && token !== p.csrfToken) throw new AppError('CSRF_TOKEN')
      const { key, info } = await apiKeys.create(p.user.id, { name: body.name, expiresDays: body.expires_days ?? null, readOnly: body.read_only === true })
      return { success: true, message: say(req, 'API 密钥已创建，密钥只显示这一次', 'API key created; the key is shown only once'), data: { key, ...info } }
    },
  )

  for (const [action, enabled, done] of [
    ['enable', true, { zh: 'API 密钥已启用', en: 'API key enabled' }],
    ['disable', false, { zh: 'API 密钥已停用', en: 'API key disabled' }],
  ] as const) {
    app.post(
      `/svc_api/api-keys/:id/${action}`,
      { config: session, schema: { tags: ['api-keys'], summary: `${action} an API key`, response: { 200: Done } } },
      async (req) => {
        const { id } = req.params as { id: string }
        if (!(await apiKeys.setEnabled(caller(req).user.id, id, enabled))) throw new AppError('RESOURCE_NOT_FOUND')
        return { success: true, message: say(req, done.zh, done.en) }
      },
    )
  }

  app.delete(
    '/svc_api/api-keys/:id',
    { config: session, schema: { tags: ['api-keys'], summary: 'Delete an API key', response: { 200: Done } } },
    async (req) => {
      const { id } = req.params as { id: string }
      if (!(await apiKeys.remove(caller(req).user.id, id))) throw new AppError('RESOURCE_NOT_FOUND')
      return { success: true, message: say(req, 'API 密钥已删除', 'API key deleted') }
    },
  )

  app.post(
    '/api/redeem',
    {
      config: { auth: 'session', errorFormat: 'plain' },
      schema: {
        tags: ['entitlements'],
        summary: 'Redeem a one-time code for image hosting or hosted data',
        body: Type.Object({ code: Type.String({ minLength: 1, maxLength: 128 }) }),
        response: { 200: RedeemReply },
      },
    },
    async (req) => {
      const p = caller(req)
      const { code } = req.body as { code: string }
      const feature = await db.k.transaction().execute(async (trx) => {
        const row = await trx.selectFrom('redeem_codes').select(['feature', 'redeemed_by']).where('code_hash', '=', sha256hex(code.trim())).executeTakeFirst()
        if (!row || row.redeemed_by) return null
        const r = await trx
          .updateTable('redeem_codes')
          .set({ redeemed_by: p.user.id, redeemed_at: clock.now() })
          .where('code_hash', '=', sha256hex(code.trim()))
          .where('redeemed_by', 'is', null)
          .executeTakeFirst()
        if (Number(r.numUpdatedRows) !== 1) return null
        await trx
          .insertInto('entitlements')
          .values({ user_id: p.user.id, feature: row.feature, source: 'redeem', created_at: clock.now() })
          .onConflict((oc) => oc.columns(['user_id', 'feature']).doNothing())
          .execute()
        return row.feature
      })
      if (!feature) throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: '兑换码不存在或已被使用', en: 'unknown or already used code' } } })
      const done = ENABLED[feature] ?? { zh: `已开通 ${feature}`, en: `${feature} enabled` }
      return { success: true, message: say(req, done.zh, done.en), feature }
    },
  )
}
