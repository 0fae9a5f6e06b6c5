import { Readable } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { errorMessage, langOf, renderError } from '../../errors/render.js'
import { caller } from '../../http/guard.js'
import { fromFastifyError } from '../../http/errors.js'
import { multipartParts, readUpload } from '../../http/multipart.js'
import { clientIp, isHttps, linkOrigin, serviceOrigin } from '../../http/origin.js'
import { SITE_FORM_ROUTE } from '../../http/types.js'
import { notAllowed } from '../../http/content-headers.js'
import { bad, NETLIFY_FORM_NAME, type FieldDef } from './fields.js'
import { cleanFileName, filesTooLarge, storeFilePart, type FormFileLimits, type SentFile } from './files.js'
import type { BlobStore } from '../../storage/blob-store.js'
import { ANONYMOUS_LEASE_TIMING, withBlobLease, type BlobLease } from '../../storage/leases.js'
import { csvExport, jsonExport } from './export.js'
import { decideOrigin, NEXT_FIELD, nextTarget, originOf, type OriginDecision } from './origins.js'
import { decodeFields, parseUrlEncoded } from './urlencoded.js'
import { siteUserOf } from '../../http/site-origin.js'
import {
  CreateBody,
  DataQuery,
  DataResponse,
  DeleteSubmissionResponse,
  ExportAnswer,
  ExportQuery,
  FileIdParams,
  FormIdParams,
  ListResponse,
  MarkReadBody,
  MarkReadResponse,
  Ok,
  SlugParams,
  SubmissionIdParams,
  SubmitResponse,
  UpdateBody,
  responses,
} from './schemas.js'
import { createFormService, fileUrl, formView, PageHeld, SUBMIT_BODY_LIMIT, type FormService } from './service.js'
import { noticeOf } from '../abuse/public.js'
import type { FormRow } from './store.js'
import type { NotifyService } from './notify-service.js'
import { beijingTime } from '../../util/time.js'
import { shortPage, say, wantsHtml } from '../../web/short-page.js'
import { BYTES_BODY, ERROR_OR_PAGE, mediaAnswer, TEXT_BODY } from '../../http/answer-schemas.js'

/** Documentation-only request schemas: the service checks input with its own codes. */
const passThrough = () => () => true

const EXPOSE = 'Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Window'
/** Text fields of a multipart submission; its parts are these and its files. */
const MULTIPART_FIELDS = 200
/** Room for the headers and boundaries of a multipart body's parts, past its fields' and files' limits. */
const MULTIPART_OVERHEAD = 64 * 1024
const bodyTooLarge = () => new AppError('BODY_TOO_LARGE', { params: { limit: SUBMIT_BODY_LIMIT } })
/** The body types a submission is read from, as a 415 names them (the app's own says JSON only). */
const SUBMIT_TYPES = {
  zh: 'application/x-www-form-urlencoded、multipart/form-data、application/json 或内容为 JSON 的 text/plain',
  en: 'application/x-www-form-urlencoded, multipart/form-data, application/json or text/plain holding JSON',
}
const unsupportedType = () => new AppError('UNSUPPORTED_MEDIA_TYPE', { params: { expected: SUBMIT_TYPES } })

/**
 * The public submit endpoint (CORS) and its preflight. The form is looked up once per request
 * and remembered, so the CORS headers of every answer (errors from the guard, the body
 * parser or the handler included) follow the form's allowed_origins.
 */
function submitRoutes(app: FastifyInstance, deps: Deps, forms: FormService) {
  const formOf = new WeakMap<FastifyRequest, Promise<FormRow | null>>()
  const lookup = (req: FastifyRequest): Promise<FormRow | null> => {
    let p = formOf.get(req)
    if (!p) {
      const { form_slug } = req.params as { form_slug: string }
      p = forms.bySlug(form_slug).catch(() => null)
      formOf.set(req, p)
    }
    return p
  }
  /** The origin a post to a site page was made to (the site's host, as the visitor sees it). */
  const siteOrigin = (req: FastifyRequest) => `${isHttps(req, deps.config) ? 'https' : 'http'}://${req.headers.host ?? ''}`
  const decision = async (req: FastifyRequest): Promise<OriginDecision> => {
    const form = await lookup(req)
    const origins = form ? (JSON.parse(form.allowed_origins) as string[]) : []
    const referer = typeof req.headers.referer === 'string' ? req.headers.referer : undefined
    // the owner's own origin ({username}.{CONTENT_DOMAIN}) is always allowed: pages hosted
    // there need no allowed_origins entry to post to their owner's forms
    if (form && origins.length > 0) {
      for (const from of [originOf(req.headers.origin ?? ''), originOf(referer ?? '')]) {
        if (from === null || origins.includes(from)) continue
        const owner = siteUserOf(new URL(from).host, deps.config)
        if (owner !== null && owner === (await deps.users.byId(form.user_id))?.username) origins.push(from)
      }
    }
    // a post to a page of the owner's site (any of its hosts, a custom domain included) from
    // that same origin comes from the owner's own page (decision 161); not on the path form,
    // whose origin is the service's, shared by every user's pages (decision 180)
    if (form && origins.length > 0 && req.raw.handedOver?.siteForm?.root === '/') origins.push(siteOrigin(req))
    return decideOrigin(origins, req.headers.origin, referer)
  }
  const cors = async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const d = await decision(req)
    if (d.acao) reply.header('Access-Control-Allow-Origin', d.acao)
    if (!reply.hasHeader('vary')) reply.header('Vary', 'Origin')
    reply.header('Access-Control-Expose-Headers', EXPOSE)
    reply.header('Cache-Control', 'no-store')
    return payload
  }
  const route = '/api/forms/submit/:form_slug'
  // the lease spares the files stored as a body arrives until its submission commits; anyone
  // may post, so it is a visitor's lease, honoured an hour at most (decisions 313, 332)
  const visitorLease = <T>(fn: (lease: BlobLease) => Promise<T>) => withBlobLease(deps.db, fn, ANONYMOUS_LEASE_TIMING)
  // refuse an announced oversize body before reading it (multipart is not covered by bodyLimit)
  const submitLimit = async (req: FastifyRequest, _reply: FastifyReply, payload: Readable) => {
    const len = Number(req.headers['content-length'] ?? 0)
    // a multipart body may carry files besides its text fields (and each part's headers)
    // (the content type parser, which marks a multipart request, runs after this hook)
    if (!/^multipart\/form-data\b/i.test(req.headers['content-type'] ?? '')) {
      if (len > SUBMIT_BODY_LIMIT) throw bodyTooLarge()
    } else if (len > SUBMIT_BODY_LIMIT + deps.config.formSubmissionFileBytes + MULTIPART_OVERHEAD) throw filesTooLarge(deps.config.formSubmissionFileBytes)
    return payload
  }
  // a script's refusal also lists itself as Formspree's answers do (`errors[].message`, with the
  // `field` a 1614 names), so an AJAX snippet written for Formspree shows the reason (decision 266)
  const listedAsFormspree = (e: AppError, lang: ReturnType<typeof langOf>) => {
    const field = e.options.extra?.field
    const listed = { message: errorMessage(e.key, lang, e.options.params), ...(typeof field === 'string' ? { field } : {}) }
    return new AppError(e.key, { ...e.options, extra: { ...e.options.extra, errors: [listed] } })
  }
  // a refused browser form post gets the service's page with the reason, whichever step
  // refused it: the API's rate limit, a body over the limit, the parser or the handler;
  // scripts, and errors of the service itself (5xx), get the service's JSON error
  const refusedPage = (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    let e = err instanceof AppError ? err : fromFastifyError(err, SUBMIT_BODY_LIMIT, SUBMIT_BODY_LIMIT)
    // a body type no parser reads: the answer names the ones a submission takes
    if (e?.key === 'UNSUPPORTED_MEDIA_TYPE') e = unsupportedType()
    if (!wantsHtml(req) || !e || e.status >= 500) throw e && e.status < 500 ? listedAsFormspree(e, langOf(req)) : (e ?? err)
    for (const [k, v] of Object.entries(e.options.headers ?? {})) reply.header(k, v)
    const lang = langOf(req)
    let text = errorMessage(e.key, lang, e.options.params)
    // a rate limit's page says when the visitor may send again (its solution: "Retry after N seconds")
    if (e.status === 429) text += `${say(req, '。', '. ')}${String(renderError(e.key, 'A', lang, e.options, '').solution)}`
    void shortPage(req, reply, e.status, say(req, '未能提交', 'Not sent'), text, { framed: true })
  }

  app.options(
    route,
    {
      config: { auth: 'none' },
      onSend: cors,
      schema: { tags: ['forms'], summary: 'CORS preflight of a submission', params: SlugParams },
    },
    async (_req, reply) => {
      reply.header('Access-Control-Allow-Methods', 'POST, OPTIONS')
      reply.header('Access-Control-Allow-Headers', 'Content-Type, Accept, Accept-Language, X-Requested-With')
      reply.header('Access-Control-Max-Age', '600')
      reply.header('Vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers')
      return reply.code(204).send()
    },
  )

  // a <form> without method="post" sends its fields as a GET query, which is never stored (as
  // Formspree's "Form should POST"): a browser's navigation gets the service's page saying so,
  // in its language, with the 405; a script gets the API's 405. Not a method of the path: the
  // 405s of its other methods still allow POST and OPTIONS only.
  app.get(route, { config: { auth: 'none', refusesMethod: true }, onSend: cors, schema: { hide: true } }, async (req, reply) => {
    const allow = 'POST, OPTIONS'
    const refused = new AppError('METHOD_NOT_ALLOWED', { params: { method: req.method, allow }, headers: { Allow: allow } })
    if (!wantsHtml(req)) throw refused
    reply.header('Allow', allow)
    return shortPage(
      req,
      reply,
      405,
      say(req, '未能提交', 'Not sent'),
      say(req, '表单须以 POST 方式发送：请在 <form> 标签上加上 method="post"。', 'The form must be sent with POST: add method="post" to its <form> tag.'),
      { framed: true },
    )
  })

  // what the submit endpoint and a site page's hand-over share: no auth, the body limit, CORS,
  // the refused-post page, and fields read by the handler
  const submitOptions = {
    config: { auth: 'none' as const },
    bodyLimit: SUBMIT_BODY_LIMIT,
    onSend: cors,
    preParsing: submitLimit,
    errorHandler: refusedPage,
    validatorCompiler: passThrough,
  }

  app.post(
    route,
    {
      ...submitOptions,
      schema: {
        tags: ['forms'],
        summary: 'Submit to a form (public, no authentication, CORS); JSON, form-encoded or multipart (text fields and files)',
        params: SlugParams,
        response: {
          200: mediaAnswer(
            "Stored: JSON for a script; for a browser's form post (Accept: text/html), a short thank-you page, unless a redirect (303) takes it on",
            {
              'application/json': SubmitResponse,
              'text/html': TEXT_BODY,
            },
          ),
          '4XX': ERROR_OR_PAGE,
        },
      },
    },
    async (req, reply) => {
      const form = await lookup(req)
      if (!form) throw new AppError('FORM_NOT_FOUND')
      return visitorLease((lease) => take(req, reply, form, () => readFields(req, deps.blobs, deps.config, lease), null, lease))
    },
  )

  /**
   * The checks after the form is known, in the documented order (origin, active, per-address
   * limit, fields, quota), the submission, and the answer: a browser form post gets pages
   * (`_next`; else, posted to a site page, `site.landing`, a path on the posting site; else
   * redirect_url or the service's short page); a script gets JSON, errors included (refusals:
   * errorHandler above). A relative `_next` is resolved against `site.page` when posted to a
   * site page, else against the Referer (decision 166). A site page held by the time the post
   * is stored (`site.hold`) answers its 451 notice, as its GET (decisions 182, 185).
   */
  const take = async (
    req: FastifyRequest,
    reply: FastifyReply,
    form: FormRow,
    fields: () => Promise<Sent>,
    site: { landing: string | null; page: string; path: string; hold: string | null } | null,
    lease: BlobLease,
  ) => {
    const browser = wantsHtml(req)
    if (!(await decision(req)).allowed) throw new AppError('FORM_ORIGIN_REFUSED')
    if (!form.is_active) throw new AppError('FORM_DISABLED')
    const ip = clientIp(req, deps.config)
    await forms.throttle(form, ip)
    const { body, files } = await fields()
    const ua = typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : undefined
    let r: Awaited<ReturnType<FormService['submit']>>
    try {
      // files' download links in notifications name the service's origin only when it is known
      // (PUBLIC_URL, or a loopback host): a visitor's forged Host never reaches the owner's mail
      const links = linkOrigin(req, deps.config) ?? ''
      r = await forms.submit(form, body, { ip, userAgent: ua, hold: site?.hold ?? null, files, lease, links })
    } catch (e) {
      if (!(e instanceof PageHeld) || site === null) throw e
      // the public host's answer to the page (serve.ts answerHeld): its notice names the URL posted to
      const n = noticeOf(e.state, `${siteOrigin(req)}${site.path}`, langOf(req))
      reply.hijack()
      reply.raw.writeHead(451, n.headers)
      reply.raw.end(n.body)
      return
    }
    if (browser) {
      // Formspree's `_next` first (when it points where the post came from), else the site
      // page's landing, else redirect_url
      const referer = typeof req.headers.referer === 'string' ? req.headers.referer : undefined
      const origins = JSON.parse(form.allowed_origins) as string[]
      const next = nextTarget(body.get(NEXT_FIELD), origins, form.redirect_url, req.headers.origin, site?.page ?? referer)
      if (next === null && site?.landing) return reply.redirect(site.landing, 303)
      const to = next ?? form.redirect_url
      if (to) return reply.redirect(new URL(to).href, 303)
    }
    // a form in an iframe (a widget on someone's blog) lands in that frame: the page may be framed
    if (browser)
      return shortPage(req, reply, 200, say(req, '已提交', 'Thank you'), say(req, '你的提交已收到。', 'Your submission was received.'), { framed: true })
    return { success: true, message: say(req, '提交成功', 'Submitted'), data: { submission_id: r.id } }
  }

  // a Netlify form's post to a page of a user's site (decision 161), handed over by the public
  // host (SITE_FORM_ROUTE): the form is the site owner's form whose slug is the `form-name`
  // field; a post without one is what it was before, a method the page does not take (405)
  app.post(
    SITE_FORM_ROUTE,
    {
      ...submitOptions,
      schema: { hide: true },
    },
    async (req, reply) => {
      const site = req.raw.handedOver?.siteForm
      if (site === undefined) throw new AppError('NOT_FOUND')
      return visitorLease(async (lease) => {
        const sent = await readFields(req, deps.blobs, deps.config, lease)
        const name = sent.body.get(NETLIFY_FORM_NAME)
        if (typeof name !== 'string' || name === '') {
          reply.hijack()
          return notAllowed(reply.raw)
        }
        const form = await forms.bySlug(name).catch(() => null)
        const owner = form === null ? null : await deps.users.byId(form.user_id)
        if (form === null || owner?.username !== site.username) throw new AppError('FORM_NOT_FOUND')
        formOf.set(req, Promise.resolve(form))
        const referer = req.headers.referer
        const page = formPage(siteOrigin(req), site.path, referer)
        return take(req, reply, form, async () => sent, { landing: landingOf(site.path, site.root, referer), page, path: site.path, hold: site.hold }, lease)
      })
    },
  )
}

/**
 * The URL of the page a form posted to `path` of the site at `origin` was on, for a relative
 * `_next`: the Referer when it names a page of that origin (a path besides `/`, or a query),
 * else the page posted to, which is the form's own page when the form has no action (a
 * Referer cut to the origin, or none, names no page).
 */
function formPage(origin: string, path: string, referer: string | undefined): string {
  if (referer !== undefined && URL.canParse(referer)) {
    const r = new URL(referer)
    if (r.origin === origin && (r.pathname !== '/' || r.search !== '')) return r.href
  }
  return `${origin}/${path.replace(/^\/+/, '')}`
}

/**
 * Where a browser's post to a site page lands: that page when it is the form's `action` (a
 * success page, as Netlify's), null (the usual answer) when the form posted to its own page
 * (no action: the Referer names the same path) or to the site's `root` (`/`, Netlify's script
 * examples' target; `/{username}/` on the path form). Always a path on the posting host
 * (leading slashes collapsed: never a protocol-relative URL).
 */
function landingOf(path: string, root: string, referer: string | undefined): string | null {
  if (path === '/' || path === root) return null
  if (referer !== undefined && URL.canParse(referer) && new URL(referer).pathname === path) return null
  return `/${path.replace(/^\/+/, '')}`
}

/** What a submission sent: its fields and the files stored while its body was read. */
interface Sent {
  body: Map<string, unknown>
  files: SentFile[]
}

/**
 * The submitted fields of a JSON (or text/plain JSON), form-encoded or multipart body, and a
 * multipart body's files. Form-encoded and multipart fields arrive as bytes and are decoded in
 * the encoding the sender names (decodeFields); JSON arrives as text, parsed here with
 * JSON.parse for both media types, so a `__proto__` name reaches the field checks as on every
 * other body. A part with a file name is streamed into the blob store as it arrives, within
 * the files' limits (413 past one, reading no further); its row is written only with the
 * submission, so the blob of a refused one has none and goes to the sweeper.
 * The files are stored under `lease` (taken before the first), which the submission checks.
 */
async function readFields(req: FastifyRequest, blobs: BlobStore, limits: FormFileLimits, lease: BlobLease): Promise<Sent> {
  if (req.isMultipart()) {
    // every part is read as a file: busboy would decode a text field as UTF-8 (U+FFFD for
    // other bytes) before the `_charset_` field, which may come last, is seen
    const pairs: Array<[string, Buffer]> = []
    const files: SentFile[] = []
    let bytes = 0
    let fileBytes = 0
    const { formFileMaxBytes: fileMax, formSubmissionFileBytes: totalMax, formSubmissionFiles: filesMax } = limits
    // the fields and the files (empty file inputs, no file chosen, among them)
    const partsMax = MULTIPART_FIELDS + filesMax
    const parts = multipartParts(req, {
      isPartAFile: () => true,
      limits: { fileSize: fileMax + 1, files: partsMax, parts: partsMax, fieldNameSize: 200 },
    })
    for await (const part of parts) {
      if (part.type !== 'file') continue
      // a part with a file name is an <input type=file>; an empty one (no file chosen) is skipped
      if ((part.filename as string | undefined) !== undefined) {
        if (part.filename === '') {
          part.file.resume()
          continue
        }
        if (files.length >= filesMax) {
          part.file.resume()
          throw new AppError('TOO_MANY_PARTS', {
            params: { detail: { zh: `一次提交最多 ${filesMax} 个文件`, en: `a submission takes at most ${filesMax} files` } },
          })
        }
        // the part's limit, or what the submission's total leaves, whichever is less
        const left = totalMax - fileBytes
        const max = Math.min(fileMax, left)
        const limit = max === left ? totalMax : fileMax
        await lease.take()
        const stored = await storeFilePart(blobs, part.file, max, () => filesTooLarge(limit))
        fileBytes += stored.size
        files.push({
          field: part.fieldname,
          filename: cleanFileName(part.filename),
          content_type: stored.content_type,
          size: stored.size,
          digest: stored.digest,
        })
        continue
      }
      const value = await readUpload(part.file, SUBMIT_BODY_LIMIT, bodyTooLarge)
      bytes += Buffer.byteLength(part.fieldname) + value.length
      if (bytes > SUBMIT_BODY_LIMIT) throw bodyTooLarge()
      if (pairs.length >= MULTIPART_FIELDS) {
        throw new AppError('TOO_MANY_PARTS', {
          params: { detail: { zh: `一次提交最多 ${MULTIPART_FIELDS} 个字段`, en: `a submission takes at most ${MULTIPART_FIELDS} fields` } },
        })
      }
      pairs.push([part.fieldname, value])
    }
    return { body: decodeFields(pairs), files }
  }
  return { body: readBody(req), files: [] }
}

/** The fields of a body that is not multipart. */
function readBody(req: FastifyRequest): Map<string, unknown> {
  let b = req.body
  // form-encoded bodies arrive as bytes (formApi's parser)
  if (Buffer.isBuffer(b)) return parseUrlEncoded(b, req.headers['content-type'])
  if (b === undefined || b === null || b === '') return new Map()
  // JSON, and text/plain (navigator.sendBeacon, fetch without a preflight) read as JSON
  if (typeof b === 'string') {
    const text = b
    try {
      // a leading byte order mark is not JSON, but the app's JSON parser skipped it
      b = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
    } catch {
      // a <form enctype="text/plain"> post: `name=value` lines, which no reader can split
      // reliably (a value may hold "=" or a line break), so the fix is named instead
      if (/^text\/plain\b/i.test(req.headers['content-type'] ?? '') && /^[^\s{["=][^\r\n=]*=/.test(text)) {
        throw bad({
          zh: '表单以 text/plain 发送（enctype="text/plain"），无法可靠读取：去掉 enctype 属性，或改用 multipart/form-data',
          en: 'the form was sent as text/plain (enctype="text/plain"), which cannot be read reliably: remove the enctype attribute, or use multipart/form-data',
        })
      }
      throw new AppError('INVALID_JSON')
    }
  }
  if (typeof b !== 'object' || b === null || Array.isArray(b)) {
    throw bad({ zh: '请求体须为由字段组成的对象，如 {"email": "a@example.com"}', en: 'the body must be an object of fields, e.g. {"email": "a@example.com"}' })
  }
  return new Map(Object.entries(b as Record<string, unknown>))
}

/**
 * A download's Content-Disposition: always an attachment; the name as an ASCII fallback
 * (other characters and quotes as "_") and in full as RFC 5987's filename*.
 */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_')
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`
}

/** The authenticated management endpoints. */
function manageRoutes(app: FastifyInstance, deps: Deps, forms: FormService) {
  const cfg = { auth: 'any' as const }
  const base = (req: FastifyRequest) => serviceOrigin(req, deps.config)
  const tags = ['forms']

  app.post(
    '/svc_api/forms/create',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: { tags, summary: 'Create a form', body: CreateBody, response: { 200: responses.FormEnvelope } },
    },
    async (req) => {
      const f = await forms.create(caller(req).user, req.body ?? {})
      return { success: true, message: say(req, '表单创建成功', 'Form created'), data: formView(f, base(req)) }
    },
  )

  app.put(
    '/svc_api/forms/update/:form_id',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: {
        tags,
        summary: 'Update a form (any creation field; the others stay)',
        params: FormIdParams,
        body: UpdateBody,
        response: { 200: responses.FormEnvelope },
      },
    },
    async (req) => {
      const { form_id } = req.params as { form_id: string }
      const body = req.body ?? {}
      if (typeof body !== 'object' || Array.isArray(body)) throw bad({ zh: '请求体须为 JSON 对象', en: 'the body must be a JSON object' })
      const f = await forms.update(caller(req).user, form_id, body)
      return { success: true, message: say(req, '表单已更新', 'Form updated'), data: formView(f, base(req)) }
    },
  )

  app.get(
    '/svc_api/forms/list',
    {
      config: cfg,
      schema: { tags, summary: "The caller's forms with counters and quota", response: { 200: ListResponse } },
    },
    async (req) => {
      const r = await forms.list(caller(req).user)
      return {
        success: true,
        data: {
          forms: r.forms.map(({ row, stats }) => ({
            ...formView(row, base(req)),
            ...stats,
            last_submission_at: stats.last_submission_at === null ? null : beijingTime(stats.last_submission_at),
          })),
          quota: r.quota,
        },
      }
    },
  )

  app.get(
    '/svc_api/forms/data/:form_id',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: { tags, summary: 'Submissions of a form, newest first', params: FormIdParams, querystring: DataQuery, response: { 200: DataResponse } },
    },
    async (req) => {
      const { form_id } = req.params as { form_id: string }
      return { success: true, data: await forms.data(caller(req).user, form_id, req.query as Record<string, unknown>, base(req)) }
    },
  )

  app.get(
    '/svc_api/forms/export/:form_id',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: {
        tags,
        summary: 'Export submissions as JSON (or CSV with ?format=csv), newest first, capped at the form_export_rows quota',
        params: FormIdParams,
        querystring: ExportQuery,
        response: { 200: ExportAnswer },
      },
    },
    async (req, reply) => {
      const { form_id } = req.params as { form_id: string }
      const ex = await forms.export(caller(req).user, form_id, req.query as Record<string, unknown>)
      const exported = Math.min(ex.total, ex.cap)
      reply.header('X-Total-Count', String(ex.total))
      reply.header('X-Exported-Count', String(exported))
      reply.header('Cache-Control', 'no-store')
      if (ex.format === 'csv') {
        const day = beijingTime(deps.clock.now()).slice(0, 10).replace(/-/g, '')
        // the slug is [A-Za-z0-9_-] only, so the file name needs no escaping
        reply.header('Content-Disposition', `attachment; filename="form-${ex.form.form_slug}-${day}.csv"`)
        reply.header('Content-Security-Policy', "default-src 'none'; sandbox")
        reply.type('text/csv; charset=utf-8')
        return reply.send(Readable.from(csvExport(JSON.parse(ex.form.fields_config) as FieldDef[], ex.rows, (f) => fileUrl(base(req), f.id))))
      }
      reply.type('application/json; charset=utf-8')
      return reply.send(Readable.from(jsonExport(formView(ex.form, base(req)), ex.rows(), ex.total, ex.cap, base(req))))
    },
  )

  // a file a visitor sent is the owner's only, and never a page: always a download, on no
  // origin a script could run from (a sandbox without scripts, the type not guessed)
  app.get(
    '/svc_api/forms/files/:file_id',
    {
      config: cfg,
      schema: {
        tags,
        summary: 'Download a file sent with a submission (the form owner only; always as an attachment)',
        params: FileIdParams,
        response: { 200: mediaAnswer('The file, as an attachment, with the type read from its bytes', { '*/*': BYTES_BODY }) },
      },
    },
    async (req, reply) => {
      const { file_id } = req.params as { file_id: string }
      const f = await forms.file(caller(req).user, file_id)
      const body = await deps.blobs.get(f.digest)
      reply.header('Content-Disposition', contentDisposition(f.filename))
      reply.header('X-Content-Type-Options', 'nosniff')
      reply.header('Content-Security-Policy', "default-src 'none'; sandbox")
      reply.header('Cache-Control', 'private, no-store')
      reply.header('Content-Length', String(f.size))
      reply.type(f.content_type)
      return reply.send(body)
    },
  )

  app.delete(
    '/svc_api/forms/delete/:form_id',
    {
      config: cfg,
      schema: { tags, summary: 'Delete a form and all its submissions', params: FormIdParams, response: { 200: Ok } },
    },
    async (req) => {
      const { form_id } = req.params as { form_id: string }
      await forms.remove(caller(req).user, form_id)
      return { success: true, message: say(req, '表单及其全部提交已删除', 'Form and all its submissions deleted') }
    },
  )

  app.put(
    '/svc_api/forms/mark_read/:submission_id',
    {
      config: cfg,
      validatorCompiler: passThrough,
      schema: { tags, summary: 'Mark a submission read or unread', params: SubmissionIdParams, body: MarkReadBody, response: { 200: MarkReadResponse } },
    },
    async (req) => {
      const { submission_id } = req.params as { submission_id: string }
      const data = await forms.markRead(caller(req).user, submission_id, req.body)
      return { success: true, message: say(req, data.is_read ? '已标记为已读' : '已标记为未读', data.is_read ? 'Marked as read' : 'Marked as unread'), data }
    },
  )

  // beyond the spec, as Formspree and Netlify Forms delete one submission (decision 295)
  app.delete(
    '/svc_api/forms/delete_submission/:submission_id',
    {
      config: cfg,
      schema: {
        tags,
        summary: 'Delete one submission and its files (the owner only); its file bytes leave the form_file_bytes quota',
        params: SubmissionIdParams,
        response: { 200: DeleteSubmissionResponse },
      },
    },
    async (req) => {
      const { submission_id } = req.params as { submission_id: string }
      const data = await forms.removeSubmission(caller(req).user, submission_id)
      return { success: true, message: say(req, '提交已删除', 'Submission deleted'), data }
    },
  )
}

/** Registers the forms part's API routes. */
export function formApi(app: FastifyInstance, deps: Deps, notify?: NotifyService): void {
  const forms = createFormService({ ...deps, notify })
  // the submit route reads form-encoded bodies as bytes (parseUrlEncoded: the sender's
  // encoding); the app's parser decodes them as UTF-8 before the `_charset_` field is seen
  void app.register(async (submit) => {
    submit.removeContentTypeParser('application/x-www-form-urlencoded')
    submit.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer', bodyLimit: SUBMIT_BODY_LIMIT }, (_req, body, done) =>
      done(null, body),
    )
    // JSON as text, parsed in readFields: the app's parser refuses a `__proto__` name as
    // invalid JSON, where every other body type reaches the field checks with it
    submit.removeContentTypeParser('application/json')
    submit.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: SUBMIT_BODY_LIMIT }, (_req, body, done) => done(null, body))
    submitRoutes(submit, deps, forms)
  })
  manageRoutes(app, deps, forms)
}
