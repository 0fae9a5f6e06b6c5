import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { caller } from '../../http/guard.js'
import { strictValidator } from '../../http/strict-schema.js'
import { createAbuse } from '../abuse/service.js'
import { siteHoldKey } from '../abuse/store.js'
import { csvCell } from '../../util/csv.js'
import { actorOf, SETTINGS, type Admin } from './service.js'
import { healthReport } from './health.js'
import {
  AuditAnswer,
  AuditQuery,
  ContentQuery,
  ContentReply,
  HealthReply,
  InviteReply,
  KeyParams,
  KeyRevokedReply,
  SettingsBody,
  SettingsReply,
  SettingsSetReply,
  TAGS,
  UserDeletedReply,
  UserKeysReply,
  UsernameParams,
  UserPatch,
  UserReply,
  UsersQuery,
  UsersReply,
} from './schemas.js'

/** Every admin route: a session of an account with the admin flag (403 / 1700 otherwise). */
export const ADMIN_ROUTE = { auth: 'session' as const }
export async function requireAdmin(req: FastifyRequest): Promise<void> {
  if (!caller(req).user.is_admin) throw new AppError('ADMIN_REQUIRED')
}

const EXPORT_MAX = 100_000

/** The admin console's API (beyond the spec): accounts, content search, settings, audit log, health. */
export function adminApi(app: FastifyInstance, deps: Deps, admin: Admin): void {
  const opts = (summary: string, extra: Record<string, unknown> = {}) => ({
    config: ADMIN_ROUTE,
    preHandler: requireAdmin,
    schema: { tags: TAGS, summary, ...extra },
  })
  // writes are validated as sent (no coercion: a null limit must stay null, "default")
  const write = (summary: string, extra: Record<string, unknown>) => ({ ...opts(summary, extra), validatorCompiler: strictValidator })

  app.get('/svc_api/admin/users', opts('Accounts with usage and quotas (admin)', { querystring: UsersQuery, response: { 200: UsersReply } }), async (req) => {
    const q = req.query as { search?: string; page?: number; per_page?: number }
    const per = q.per_page ?? 50
    const page = q.page ?? 1
    const r = await admin.listUsers(q.search?.trim() || undefined, per, (page - 1) * per)
    return { success: true, data: { ...r, page, per_page: per } }
  })

  app.post(
    '/svc_api/admin/users/:username',
    write('Change an account: VIP tier, disabled, API access, limits (admin)', { params: UsernameParams, body: UserPatch, response: { 200: UserReply } }),
    async (req) => {
      const { username } = req.params as { username: string }
      const { user: u, over } = await admin.updateUser(actorOf(req, deps), username, req.body as Parameters<Admin['updateUser']>[2])
      return { success: true, data: { username: u.username, tier: u.tier, disabled: u.disabled, api_access: u.api_access, limits: u.limits, over } }
    },
  )

  app.delete(
    '/svc_api/admin/users/:username',
    opts('Delete an account and everything it holds; its name stays held from new accounts (admin)', {
      params: UsernameParams,
      response: { 200: UserDeletedReply },
    }),
    async (req) => {
      const { username } = req.params as { username: string }
      return { success: true, data: await admin.deleteUser(actorOf(req, deps), username) }
    },
  )

  app.get(
    '/svc_api/admin/users/:username/keys',
    opts("An account's API keys: the fields its owner's list shows, never a key or its hash (admin)", {
      params: UsernameParams,
      response: { 200: UserKeysReply },
    }),
    async (req) => {
      return { success: true, data: await admin.listKeys((req.params as { username: string }).username) }
    },
  )

  app.delete(
    '/svc_api/admin/users/:username/keys/:id',
    opts("Revoke one of an account's API keys: it is deleted and refused from its next request on (admin)", {
      params: KeyParams,
      response: { 200: KeyRevokedReply },
    }),
    async (req) => {
      const { username, id } = req.params as { username: string; id: string }
      return { success: true, data: await admin.revokeKey(actorOf(req, deps), username, id) }
    },
  )

  app.post('/svc_api/admin/invites', opts('Create an invitation code, shown once (admin)', { response: { 200: InviteReply } }), async (req) => {
    return { success: true, data: { code: await admin.createInvite(actorOf(req, deps)) } }
  })

  app.get(
    '/svc_api/admin/content',
    opts('Search content by owner, URL, name or SHA-256 (admin)', { querystring: ContentQuery, response: { 200: ContentReply } }),
    async (req) => {
      const q = req.query as { user?: string; url?: string; name?: string; hash?: string; limit?: number }
      // names are stored in NFC (uploads normalise them): a name spelled in NFD finds them too
      const name = q.name?.trim().normalize('NFC') || undefined
      const f: Parameters<Admin['store']['content']>[0] = { user: q.user?.trim() || undefined, name, digest: q.hash?.toLowerCase() }
      if (q.url) {
        const { target } = await deps.services.get(createAbuse).targetOfUrl(q.url)
        if (target.kind === 'site') {
          f.user = target.username
          f.exactName = target.name
        } else f.token = target.token
      }
      if (!f.user && !f.name && !f.digest && !f.exactName && !f.token)
        throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: '请给出 user、url、name 或 hash 之一', en: 'give user, url, name or hash' } } })
      const items = await admin.store.content(f, q.limit ?? 100)
      // what an admin acting on a result must know: whether it is held (its page name or link),
      // and whether its bytes are blocked (a copy that was live when they were taken down elsewhere
      // is not touched by the takedown)
      const abuse = deps.services.get(createAbuse)
      const holds = await abuse.holds()
      const blocked = await abuse.store.blockedAmong(items.map((i) => i.digest))
      const holdOf = (i: (typeof items)[number]) =>
        holds.get(i.kind === 'file' || i.kind === 'folder' ? siteHoldKey(i.username, i.name) : `${i.kind}:${i.name}`) ?? null
      return { success: true, data: { items: items.map((i) => ({ ...i, hold: holdOf(i), blocked: blocked.has(i.digest) })) } }
    },
  )

  app.get('/svc_api/admin/settings', opts('Run-time settings with their descriptions (admin)', { response: { 200: SettingsReply } }), async () => {
    const values = await admin.settings()
    return { success: true, data: { settings: Object.entries(SETTINGS).map(([name, d]) => ({ name, value: values[name], description: d.describe })) } }
  })

  app.post(
    '/svc_api/admin/settings',
    write('Change run-time settings; every instance applies them at once (admin)', { body: SettingsBody, response: { 200: SettingsSetReply } }),
    async (req) => {
      return { success: true, data: { settings: await admin.setSettings(actorOf(req, deps), req.body as Record<string, unknown>) } }
    },
  )

  app.get(
    '/svc_api/admin/audit',
    opts('The audit log, newest first; ?format=json|csv downloads it (admin)', { querystring: AuditQuery, response: { 200: AuditAnswer } }),
    async (req, reply) => {
      const q = req.query as { format?: 'json' | 'csv'; before?: string; limit?: number; action?: string; actor?: string }
      const rows = await admin.store.audit({ limit: q.format ? EXPORT_MAX : (q.limit ?? 100), before: q.before, action: q.action, actor: q.actor })
      const entries = rows.map((r) => ({ ...r, at: new Date(Number(r.at)).toISOString(), details: JSON.parse(r.details) as Record<string, unknown> }))
      if (!q.format) return { success: true, data: { entries, next: rows.length === (q.limit ?? 100) ? rows[rows.length - 1].id : null } }
      const stamp = new Date(deps.clock.now()).toISOString().slice(0, 10)
      reply.header('Content-Disposition', `attachment; filename="svc-audit-${stamp}.${q.format}"`).header('Cache-Control', 'no-store')
      if (q.format === 'json') return reply.type('application/json; charset=utf-8').send(JSON.stringify(entries, null, 1))
      const cols = ['id', 'at', 'actor', 'via', 'action', 'target', 'details', 'ip', 'user_agent'] as const
      const lines = [cols.join(',')]
      for (const e of entries) lines.push(cols.map((c) => csvCell(c === 'details' ? JSON.stringify(e.details) : e[c])).join(','))
      return reply.type('text/csv; charset=utf-8').send(`\ufeff${lines.join('\r\n')}\r\n`)
    },
  )

  // the readiness checks of /readyz (one run, the same code) with their full messages, and what
  // this instance knows of itself: admin/health.ts. Never cached: each look asks again. Not
  // rate limited, as /readyz is not: the limits count in Redis, and this page must answer while
  // Redis is down, the failure it reports (an admin session is still asked for)
  app.get(
    '/svc_api/admin/health',
    {
      ...opts("This instance's health: readiness checks with their messages, version, uptime, memory, disk, backups (admin)", {
        response: { 200: HealthReply },
      }),
      config: { ...ADMIN_ROUTE, rateLimit: false as const },
    },
    async (_req, reply) => {
      reply.header('Cache-Control', 'no-store')
      return { success: true, data: await healthReport(deps) }
    },
  )
}
