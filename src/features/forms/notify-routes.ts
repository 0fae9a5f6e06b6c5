import { Type, type TSchema } from '@sinclair/typebox'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { errorMessage, langOf } from '../../errors/render.js'
import { caller } from '../../http/guard.js'
import { ERROR_OR_PAGE, mediaAnswer, Nullable, TEXT_BODY } from '../../http/answer-schemas.js'
import { linkOrigin } from '../../http/origin.js'
import type { NotifyService } from './notify-service.js'
import { Ok } from './schemas.js'
import { shortPage, say, wantsHtml } from '../../web/short-page.js'

const passThrough = () => () => true
const envelope = <T extends TSchema>(data: T) => Type.Object({ success: Type.Boolean(), message: Type.Optional(Type.String()), data })

const FormIdParams = Type.Object({ form_id: Type.String() })
const IdParams = Type.Object({ id: Type.String() })
const Webhook = Type.Object({
  url: Type.String(),
  enabled: Type.Boolean(),
  secret_hint: Type.String(),
  secret: Type.Optional(Type.String({ description: 'only when the webhook is created or its secret rotated: store it, it is not shown again' })),
  created_at: Type.String(),
  updated_at: Type.String(),
})
const WebhookBody = Type.Object({
  url: Type.String({
    description: 'http(s) URL that receives a POST per submission (private and loopback addresses are refused unless the operator allows them)',
  }),
  enabled: Type.Optional(Type.Boolean({ default: true })),
})
const Email = Type.Object({
  enabled: Type.Boolean(),
  mode: Type.String({ description: 'each | digest' }),
  recipients: Type.Array(Type.String(), { description: "the owner's verified addresses" }),
  smtp_configured: Type.Boolean(),
})
const EmailBody = Type.Object({
  enabled: Type.Boolean(),
  mode: Type.Optional(Type.Union([Type.Literal('each'), Type.Literal('digest')], { default: 'each' })),
})
const Delivery = Type.Object({
  id: Type.String(),
  kind: Type.String({ description: 'webhook | email | digest' }),
  target: Type.String(),
  submission_id: Type.String(),
  status: Type.String({ description: 'pending | delivered | failed' }),
  tries: Type.Integer(),
  last_status: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  next_try_at: Nullable(Type.String()),
  created_at: Type.String(),
  delivered_at: Nullable(Type.String()),
})
const Address = Type.Object({ id: Type.String(), address: Type.String(), verified: Type.Boolean(), created_at: Type.Optional(Type.String()) })
/** What a verification link confirms: JSON for a script, a short page for a browser (Accept: text/html). */
const verifyAnswer = (description: string, verified: boolean) =>
  mediaAnswer(description, {
    'application/json': Type.Object({
      success: Type.Boolean(),
      message: Type.String(),
      data: Type.Object({
        address: Type.String(),
        verified: Type.Literal(verified, { description: verified ? 'notifications can now be sent to it' : 'not until the token is POSTed' }),
      }),
    }),
    'text/html': TEXT_BODY,
  })

/**
 * Form notifications (beyond the spec): the signed webhook and the e-mail setting of a form,
 * its delivery log and redelivery, and the owner's verified notification addresses.
 */
export function notifyApi(app: FastifyInstance, deps: Deps, notify: NotifyService): void {
  const cfg = { auth: 'any' as const }
  const tags = ['form notifications']
  const formId = (req: FastifyRequest) => (req.params as { form_id: string }).form_id

  app.get(
    '/svc_api/forms/webhook/:form_id',
    {
      config: cfg,
      schema: { tags, summary: "A form's webhook (the secret is never shown again)", params: FormIdParams, response: { 200: envelope(Webhook) } },
    },
    async (req) => ({ success: true, data: await notify.getWebhook(caller(req).user, formId(req)) }),
  )
  app.put(
    '/svc_api/forms/webhook/:form_id',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: {
        tags,
        summary: "Set a form's webhook; creating it answers the signing secret once",
        description:
          'Each submission not flagged as spam is POSTed as JSON {event, form, submission} with headers X-Svc-Event, X-Svc-Delivery (unique per delivery), X-Svc-Timestamp and X-Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the secret>. A non-2xx answer is retried with exponential backoff for up to 24 h.',
        params: FormIdParams,
        body: WebhookBody,
        response: { 200: envelope(Webhook) },
      },
    },
    async (req) => ({
      success: true,
      message: say(req, 'Webhook 已保存', 'Webhook saved'),
      data: await notify.setWebhook(caller(req).user, formId(req), req.body),
    }),
  )
  app.post(
    '/svc_api/forms/webhook/:form_id/rotate',
    { config: cfg, schema: { tags, summary: 'Make a new signing secret (answered once)', params: FormIdParams, response: { 200: envelope(Webhook) } } },
    async (req) => ({ success: true, message: say(req, '密钥已更换', 'Secret rotated'), data: await notify.rotateSecret(caller(req).user, formId(req)) }),
  )
  app.delete(
    '/svc_api/forms/webhook/:form_id',
    { config: cfg, schema: { tags, summary: "Remove a form's webhook", params: FormIdParams, response: { 200: Ok } } },
    async (req) => {
      await notify.removeWebhook(caller(req).user, formId(req))
      return { success: true, message: say(req, 'Webhook 已删除', 'Webhook removed') }
    },
  )

  app.get(
    '/svc_api/forms/email/:form_id',
    { config: cfg, schema: { tags, summary: "A form's e-mail notification setting", params: FormIdParams, response: { 200: envelope(Email) } } },
    async (req) => ({ success: true, data: await notify.getEmail(caller(req).user, formId(req)) }),
  )
  app.put(
    '/svc_api/forms/email/:form_id',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: {
        tags,
        summary: 'E-mail each submission, or a digest per period, to the verified addresses',
        params: FormIdParams,
        body: EmailBody,
        response: { 200: envelope(Email) },
      },
    },
    async (req) => ({ success: true, message: say(req, '已保存', 'Saved'), data: await notify.setEmail(caller(req).user, formId(req), req.body) }),
  )

  app.get(
    '/svc_api/forms/deliveries/:form_id',
    {
      config: cfg,
      schema: {
        tags,
        summary: "The form's latest 100 deliveries (webhook and e-mail), newest first",
        params: FormIdParams,
        response: { 200: envelope(Type.Array(Delivery)) },
      },
    },
    async (req) => ({ success: true, data: await notify.deliveries(caller(req).user, formId(req)) }),
  )
  app.post(
    '/svc_api/forms/redeliver/:id',
    {
      config: cfg,
      schema: { tags, summary: 'Queue a failed delivery again (at once, with a new 24 h window)', params: IdParams, response: { 200: envelope(Delivery) } },
    },
    async (req) => ({
      success: true,
      message: say(req, '已重新排队', 'Queued again'),
      data: await notify.redeliver(caller(req).user, (req.params as { id: string }).id),
    }),
  )

  app.get(
    '/svc_api/notify/addresses',
    { config: cfg, schema: { tags, summary: "The caller's notification addresses", response: { 200: envelope(Type.Array(Address)) } } },
    async (req) => ({ success: true, data: await notify.addresses(caller(req).user) }),
  )
  app.post(
    '/svc_api/notify/addresses',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: {
        tags,
        summary: 'Add a notification address; a one-time verification link is mailed to it',
        body: Type.Object({ address: Type.String() }),
        response: { 200: envelope(Address) },
      },
    },
    async (req) => ({
      success: true,
      message: say(req, '验证邮件已发送', 'Verification mail sent'),
      data: await notify.addAddress(caller(req).user, req.body, linkOrigin(req, deps.config)),
    }),
  )
  app.delete(
    '/svc_api/notify/addresses/:id',
    { config: cfg, schema: { tags, summary: 'Remove a notification address', params: IdParams, response: { 200: Ok } } },
    async (req) => {
      await notify.removeAddress(caller(req).user, (req.params as { id: string }).id)
      return { success: true, message: say(req, '已删除', 'Removed') }
    },
  )
  // the mail's link is opened in a browser: it gets a short page in its language; scripts the JSON
  const verifyFailed = (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (!wantsHtml(req) || !(err instanceof AppError) || err.status >= 500) throw err
    for (const [k, v] of Object.entries(err.options.headers ?? {})) reply.header(k, v)
    void shortPage(req, reply, err.status, say(req, '未能验证', 'Not verified'), errorMessage(err.key, langOf(req), err.options.params))
  }
  // GET only shows what the link is for: mail scanners (Safe Links and the like) open every
  // link of a mail, so a GET that confirmed would verify an address nobody read (decision 238)
  app.get(
    '/svc_api/notify/verify',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Show what a verification link confirms (the link of the verification mail); changes nothing',
        querystring: Type.Object({ token: Type.String() }),
        response: {
          200: verifyAnswer('The address the token would verify, or for a browser a page with a button that confirms it (POST)', false),
          '4XX': ERROR_OR_PAGE,
        },
      },
      validatorCompiler: passThrough,
      errorHandler: verifyFailed,
    },
    async (req, reply) => {
      const token = (req.query as { token?: unknown }).token
      const data = await notify.pendingAddress(token)
      if (wantsHtml(req)) {
        const text = say(
          req,
          `确认后，表单的通知邮件将发送到 ${data.address}。如果这不是你要求的，关闭此页即可：确认之前不会发送任何邮件。`,
          `Confirm to have notifications of forms sent to ${data.address}. If you did not ask for this, close this page: nothing is sent until it is confirmed.`,
        )
        const confirm = { action: '/svc_api/notify/verify', fields: { token: String(token) }, label: say(req, '确认', 'Confirm') }
        return shortPage(req, reply, 200, say(req, '确认邮箱', 'Confirm this address'), text, { confirm })
      }
      return { success: true, message: say(req, '以 POST 发送此 token 以确认', 'POST this token to confirm the address'), data }
    },
  )
  app.post(
    '/svc_api/notify/verify',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Verify an address with the token of its verification mail',
        body: Type.Object({ token: Type.String() }),
        response: { 200: verifyAnswer('The address verified, or for a browser a page saying so', true), '4XX': ERROR_OR_PAGE },
      },
      validatorCompiler: passThrough,
      errorHandler: verifyFailed,
    },
    async (req, reply) => {
      const data = await notify.verifyAddress((req.body as { token?: unknown } | undefined)?.token)
      if (wantsHtml(req)) {
        const text = say(req, `表单的通知邮件将发送到 ${data.address}。`, `Notifications of your forms can now be sent to ${data.address}.`)
        return shortPage(req, reply, 200, say(req, '邮箱已验证', 'Address verified'), text)
      }
      return { success: true, message: say(req, '邮箱已验证', 'Address verified'), data }
    },
  )
}
