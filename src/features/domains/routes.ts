import type { FastifyInstance, FastifyRequest } from 'fastify'
import { say } from '../../web/short-page.js'
import { caller } from '../../http/guard.js'
import { AppError } from '../../errors/app-error.js'
import { AccessEnvelope, AccessList, AddDomainBody, DomainEnvelope, DomainList, DomainParams, NameParams, Ok, SetAccessBody } from './schemas.js'
import { domainView, type DomainService } from './service.js'

/** Documentation-only request schemas: the service checks input with its own codes. */
const passThrough = () => () => true

const objectBody = (req: FastifyRequest): Record<string, unknown> => {
  const b = req.body ?? {}
  if (typeof b !== 'object' || Array.isArray(b))
    throw new AppError('INVALID_PARAMETER', { params: { detail: { zh: '请求体须为 JSON 对象', en: 'the body must be a JSON object' } } })
  return b as Record<string, unknown>
}

/** /api/domains (custom domains) and /api/access (visitor passwords and expiry). */
export function domainsApi(app: FastifyInstance, svc: DomainService): void {
  const cfg = { auth: 'any' as const }
  const dtags = ['custom domains']
  const atags = ['visitor access']

  app.get(
    '/api/domains',
    { config: cfg, schema: { tags: dtags, summary: "The caller's custom domains, with the DNS record each needs", response: { 200: DomainList } } },
    async (req) => ({ success: true, data: { domains: (await svc.list(caller(req).user)).map(domainView), limit: svc.limit } }),
  )

  app.post(
    '/api/domains',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: {
        tags: dtags,
        summary: 'Attach a domain to a folder project (unverified until its TXT record is found)',
        body: AddDomainBody,
        response: { 200: DomainEnvelope },
      },
    },
    async (req) => {
      const { row, heldByOther } = await svc.add(caller(req).user, objectBody(req))
      const message = heldByOther
        ? say(
            req,
            '域名已添加。它目前由其他账户验证使用：创建你的 TXT 记录并验证后，它将转到你的账户',
            'Domain added. Another account holds it verified: create your TXT record and verify to move it to your account',
          )
        : say(req, '域名已添加，请创建 TXT 记录后验证', 'Domain added; create the TXT record, then verify')
      return { success: true, message, data: domainView(row) }
    },
  )

  app.post(
    '/api/domains/:domain/verify',
    {
      config: cfg,
      schema: {
        tags: dtags,
        summary: 'Look up the TXT record now; the domain serves its project once verified',
        params: DomainParams,
        response: { 200: DomainEnvelope },
      },
    },
    async (req) => {
      const d = await svc.verify(caller(req).user, (req.params as { domain: string }).domain)
      return { success: true, message: say(req, '域名已验证', 'Domain verified'), data: domainView(d) }
    },
  )

  for (const [method, primary] of [
    ['PUT', true],
    ['DELETE', false],
  ] as const) {
    app.route({
      method,
      url: '/api/domains/:domain/primary',
      config: cfg,
      schema: {
        tags: dtags,
        summary: primary
          ? "Make a verified domain its project's primary one: browsers opening the project's other URLs are sent there"
          : "Stop a domain being its project's primary one: its other URLs serve it again",
        params: DomainParams,
        response: { 200: DomainEnvelope },
      },
      handler: async (req) => {
        const d = await svc.setPrimary(caller(req).user, (req.params as { domain: string }).domain, primary)
        const message = primary ? say(req, '已设为主域名', 'Domain is now primary') : say(req, '已取消主域名', 'Domain is no longer primary')
        return { success: true, message, data: domainView(d) }
      },
    })
  }

  app.delete(
    '/api/domains/:domain',
    {
      config: cfg,
      schema: { tags: dtags, summary: 'Remove a domain: it stops serving at once, on every instance', params: DomainParams, response: { 200: Ok } },
    },
    async (req) => {
      await svc.remove(caller(req).user, (req.params as { domain: string }).domain)
      return { success: true, message: say(req, '域名已删除', 'Domain removed') }
    },
  )

  app.get(
    '/api/access',
    { config: cfg, schema: { tags: atags, summary: "The caller's projects and pages with a visitor password or an expiry", response: { 200: AccessList } } },
    async (req) => ({ success: true, data: { access: (await svc.listAccess(caller(req).user)).map((a) => svc.accessView(a)) } }),
  )

  app.put(
    '/api/access/:name',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: {
        tags: atags,
        summary: 'Set a visitor password and/or an expiry on a project or single page',
        params: NameParams,
        body: SetAccessBody,
        response: { 200: AccessEnvelope },
      },
    },
    async (req) => {
      const a = await svc.setAccess(caller(req).user, (req.params as { name: string }).name, objectBody(req))
      return { success: true, message: say(req, '访问设置已保存', 'Access setting saved'), data: svc.accessView(a) }
    },
  )

  app.delete(
    '/api/access/:name',
    { config: cfg, schema: { tags: atags, summary: 'Remove the password and expiry of a project or page', params: NameParams, response: { 200: Ok } } },
    async (req) => {
      await svc.removeAccess(caller(req).user, (req.params as { name: string }).name)
      return { success: true, message: say(req, '访问设置已删除', 'Access setting removed') }
    },
  )
}
