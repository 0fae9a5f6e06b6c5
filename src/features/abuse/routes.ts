import type { FastifyInstance } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { clientIp } from '../../http/origin.js'
import { ipLimitKey } from '../../http/ip-key.js'
import { INERT_CONTENT_CSP } from '../../http/content-headers.js'
import { strictValidator } from '../../http/strict-schema.js'
import { say } from '../../web/short-page.js'
import type { WindowRule } from '../../limits/tiers.js'
import { ADMIN_ROUTE, requireAdmin } from '../admin/routes.js'
import { actorOf } from '../admin/service.js'
import type { Abuse, ReportInput } from './service.js'
import {
  BlocklistReply,
  EvidenceAnswer,
  EvidenceParams,
  ReportBody,
  ReportedReply,
  ReportParams,
  ReportReply,
  ReportsQuery,
  ReportsReply,
  TakedownBody,
} from './schemas.js'

/** Reports per client address, on top of the API's own rate limits. */
export const REPORT_RULES: WindowRule[] = [
  { name: 'report-hour', kind: 'sliding', ms: 3600_000, limit: 20 },
  { name: 'report-day', kind: 'sliding', ms: 86400_000, limit: 100 },
]

/** Counts a report from `ip` (an IPv6 client by its /64); throws 429 / 1703 past the limits. */
export async function admitReport(deps: Deps, ip: string): Promise<void> {
  const r = await deps.limits.hit(`report:ip:${ipLimitKey(ip)}`, REPORT_RULES, deps.clock.now(), true)
  if (!r.allowed) {
    const w = r.windows.find((x) => x.count > x.rule.limit) ?? r.windows[0]
    const retry = Math.max(1, Math.ceil((w.resetAt - r.now) / 1000))
    throw new AppError('REPORT_THROTTLED', { params: { retry_after: retry }, extra: { retry_after: retry }, headers: { 'Retry-After': String(retry) } })
  }
}

/** The public report endpoint and the admin queue (beyond the spec). */
export function abuseApi(app: FastifyInstance, deps: Deps, abuse: Abuse): void {
  app.post(
    '/svc_api/abuse/reports',
    {
      schema: {
        tags: ['abuse'],
        summary: 'Report abusive content (no login; rate-limited per address)',
        description: 'Anyone may report a page, image or data link. Answers the report id; an admin reviews it.',
        body: ReportBody,
        response: { 201: ReportedReply },
      },
      validatorCompiler: strictValidator,
    },
    async (req, reply) => {
      const ip = clientIp(req, deps.config)
      await admitReport(deps, ip)
      const r = await abuse.report(req.body as ReportInput, ip)
      return reply.code(201).send({ success: true, message: say(req, '举报已收到', 'Report received'), data: { id: r.id } })
    },
  )

  const admin = (summary: string, extra: Record<string, unknown> = {}) => ({
    config: ADMIN_ROUTE,
    preHandler: requireAdmin,
    schema: { tags: ['admin'], summary, ...extra },
  })

  app.get(
    '/svc_api/admin/reports',
    admin('The abuse queue, newest first (admin)', { querystring: ReportsQuery, response: { 200: ReportsReply } }),
    async (req) => {
      const q = req.query as { status?: string; page?: number; per_page?: number }
      const per = q.per_page ?? 50
      const page = q.page ?? 1
      return { success: true, data: { ...(await abuse.reports(q.status, per, (page - 1) * per)), page, per_page: per } }
    },
  )

  app.post(
    '/svc_api/admin/reports',
    admin('Open a case on content found by an admin (admin)', { body: ReportBody, response: { 201: ReportReply } }),
    async (req, reply) => {
      return reply.code(201).send({ success: true, data: await abuse.openCase(actorOf(req, deps), req.body as ReportInput) })
    },
  )

  app.get(
    '/svc_api/admin/reports/:id',
    admin('One report with its evidence (admin)', { params: ReportParams, response: { 200: ReportReply } }),
    async (req) => {
      return { success: true, data: await abuse.detail((req.params as { id: string }).id) }
    },
  )

  app.get(
    '/svc_api/admin/reports/:id/evidence/:digest',
    admin('The bytes kept as evidence, as an inert download (admin)', { params: EvidenceParams, response: { 200: EvidenceAnswer } }),
    async (req, reply) => {
      const { id, digest } = req.params as { id: string; digest: string }
      const e = await abuse.evidenceBytes(id, digest)
      reply.header('Content-Security-Policy', INERT_CONTENT_CSP).header('Content-Disposition', `attachment; filename="evidence-${digest.slice(0, 12)}.bin"`)
      return reply.type('application/octet-stream').header('Cache-Control', 'no-store').send(e.bytes)
    },
  )

  for (const action of ['quarantine', 'restore', 'lift', 'dismiss'] as const) {
    app.post(
      `/svc_api/admin/reports/:id/${action}`,
      admin(`${action[0].toUpperCase()}${action.slice(1)} (admin)`, { params: ReportParams, response: { 200: ReportReply } }),
      async (req) => {
        return { success: true, data: await abuse[action](actorOf(req, deps), (req.params as { id: string }).id) }
      },
    )
  }
  app.post(
    '/svc_api/admin/reports/:id/takedown',
    admin('Take down: remove the content, block its SHA-256 at upload, optionally disable the account (admin)', {
      params: ReportParams,
      body: TakedownBody,
      response: { 200: ReportReply },
    }),
    async (req) => {
      const body = (req.body ?? {}) as { disable_account?: boolean }
      return { success: true, data: await abuse.takedown(actorOf(req, deps), (req.params as { id: string }).id, { disableAccount: body.disable_account }) }
    },
  )

  app.get('/svc_api/admin/blocklist', admin('Blocked SHA-256 digests, newest first (admin)', { response: { 200: BlocklistReply } }), async () => {
    const rows = await abuse.store.blocked(1000)
    return { success: true, data: { digests: rows.map((r) => ({ ...r, created_at: Number(r.created_at) })) } }
  })
}
