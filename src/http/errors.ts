import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../errors/app-error.js'
import { ERRORS, type ErrorKey } from '../errors/codes.js'
import { mapText, langOf, renderError, type ErrorFormat, type Lang, type Text } from '../errors/render.js'
import type { Config } from '../config.js'
import { isForeignKeyViolation } from '../db/kysely.js'
import { CUT_SHORT, multipartClientError } from './multipart.js'
import { SEGMENT_TOO_LONG } from './allowed-methods.js'
import { serviceOrigin } from './origin.js'
import { serviceOriginFromContent, siteOf } from './site-origin.js'

/** The error format of the route that answers this request. */
export function routeErrorFormat(req: FastifyRequest): ErrorFormat {
  return req.routeOptions?.config?.errorFormat ?? 'A'
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  417: 'Expectation Failed',
  431: 'Request Header Fields Too Large',
}

/**
 * Error 1106 in format A, naming what was wrong with the request, in `lang`: the request's
 * Accept-Language where its headers were read, Chinese (the default) where the parser refused them.
 */
const refusalBody = (detail: Text, docBase: string, lang: Lang): string =>
  JSON.stringify(renderError('INVALID_PARAMETER', 'A', lang, { params: { detail } }, docBase))

/** A whole HTTP/1.1 answer carrying refusalBody, closing the connection. */
function rawErrorAnswer(status: number, detail: Text, docBase: string, headers = '', lang: Lang = 'zh'): string {
  const body = refusalBody(detail, docBase, lang)
  return `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}Connection: close\r\n\r\n${body}`
}

/** Answers refusalBody through the request's own response (after any earlier pipelined answer), then closes. */
function refuse(req: IncomingMessage, res: ServerResponse, status: number, detail: Text, docBase: string): void {
  const body = refusalBody(detail, docBase, langOf(req))
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' })
  res.end(body)
}

/** The code of a body that stalled after its headers were read (watchBody): a 408 of its own words. */
const BODY_TIMEOUT = 'SVC_BODY_TIMEOUT'

/**
 * The raw answer to a request Node's HTTP parser refused before any route saw it (a malformed
 * or cut-short request, a client that half-closed mid-body, headers over the limit, a client
 * too slow), or whose body stalled: error 1106 in format A, with the status the HTTP layer
 * chose (400, 408, 431), in `lang`. The connection closes after it.
 */
export function clientErrorAnswer(code: string | undefined, docBase: string, lang: Lang = 'zh'): string {
  return code === BODY_TIMEOUT
    ? rawErrorAnswer(408, { zh: '请求体未能在限定时间内收到', en: 'the request body was not received in time' }, docBase, '', lang)
    : code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? rawErrorAnswer(408, { zh: '未能在限定时间内收到请求', en: 'the request was not received in time' }, docBase, '', lang)
      : code === 'HPE_HEADER_OVERFLOW'
        ? rawErrorAnswer(431, { zh: '请求头过大', en: 'the request headers are too large' }, docBase, '', lang)
        : rawErrorAnswer(400, { zh: 'HTTP 请求格式错误', en: 'malformed HTTP request' }, docBase, '', lang)
}

/**
 * The requests Node's HTTP server would answer itself, without a body in the spec's format,
 * answered as clientErrorAnswer does (1106, format A, connection closed): CONNECT (405: the
 * service is no proxy), an Expect other than 100-continue (417), and an HTTP/1.1 request
 * without Host (400, RFC 9112 3.2; `refuseHostless` answers it: the server only stops checking).
 */
export function guardHttpServer(server: Server, docBase: string): void {
  ;(server as Server & { requireHostHeader: boolean }).requireHostHeader = false
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => {})
    const allow = 'Allow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\n'
    socket.end(rawErrorAnswer(405, { zh: '不支持 CONNECT 请求', en: 'CONNECT is not supported' }, docBase, allow, langOf(req)))
  })
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const expect = String(req.headers.expect).slice(0, 64)
    refuse(req, res, 417, { zh: `不支持的 Expect 请求头：${expect}`, en: `unsupported expectation: ${expect}` }, docBase)
  })
}

/** True (and the request answered) when an HTTP/1.1 request carries no Host (guardHttpServer). */
export function refuseHostless(req: IncomingMessage, res: ServerResponse, docBase: string): boolean {
  if (req.headers.host !== undefined || req.httpVersionMajor !== 1 || req.httpVersionMinor !== 1) return false
  refuse(req, res, 400, { zh: '缺少 Host 请求头', en: 'the Host header is missing' }, docBase)
  return true
}

/**
 * Watches a request's body as it arrives: `idleMs` without a byte and the request is refused
 * as Node refuses one not received in time (408 / 1106 through answerClientError, connection
 * closed), in the language of its Accept-Language, its headers having been read. Only while
 * the body is unfinished: the handler's own work, and the answer, have no such limit. A
 * bodiless request costs one look at two headers.
 */
export function watchBody(req: IncomingMessage, res: ServerResponse, idleMs: number, docBase: string): void {
  if ((req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) || req.complete) return
  const socket = req.socket
  // Node emits 'timeout' on the request while it is unfinished, and then leaves the socket alone
  const onIdle = () => answerClientError(Object.assign(new Error('request body idle'), { code: BODY_TIMEOUT }), socket, docBase, langOf(req))
  req.setTimeout(idleMs, onIdle)
  const done = () => {
    req.off('timeout', onIdle)
    // an answer already finished has set the keep-alive timer: left as it is
    if (!res.writableFinished && !socket.destroyed) socket.setTimeout(0)
  }
  req.once('end', done)
  req.once('close', done)
}

/** Sockets whose refused request is being answered: the parser reports again on more bytes. */
const refusing = new WeakSet<Duplex>()

type HttpSocket = Duplex & { _httpMessage?: ServerResponse | null; parser?: { incoming?: IncomingMessage | null } | null }

/**
 * Answers a refused request on its socket (clientErrorAnswer) and closes it; a reset connection
 * has no one to answer. The answers of whole requests before it on the connection go out first
 * and whole: the 400 never lands inside another answer, nor is taken for the answer of a request
 * still being handled. Bytes refused inside a request's body are that request's: its 400, unless
 * its own answer has begun (then that answer ends the connection). After an answer that closes
 * the connection (Connection: close, HTTP/1.0) nothing more is sent (RFC 9112 9.6). `lang`:
 * the refused request's language where its headers were read, else Chinese (the default).
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, docBase: string, lang: Lang = 'zh'): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || refusing.has(socket)) return
  refusing.add(socket)
  const s = socket as HttpSocket
  // the request being read when the parser gave up: unfinished, the refused bytes are its body's
  const incoming = s.parser?.incoming
  const inBody = incoming != null && !incoming.complete
  const answer = () => {
    if (socket.destroyed) return
    // Node's answer in progress on this socket: the earliest request not answered yet
    const pending = s._httpMessage
    const own = inBody && pending?.req === incoming
    if (pending && !pending.writableFinished && (!own || pending.headersSent)) {
      let once = false
      const next = () => {
        if (once) return
        once = true
        // Node hands the socket to the next pipelined answer, or ends it, in its own listener
        setImmediate(own ? () => socket.destroy(err) : answer)
      }
      pending.once('finish', next)
      pending.once('close', next)
      return
    }
    const answered = own && pending.writableFinished
    if (socket.writable && !answered && err.code !== 'HPE_CLOSED_CONNECTION') socket.write(clientErrorAnswer(err.code, docBase, lang))
    socket.destroy(err)
  }
  answer()
}

/**
 * Where a doc_link points: the service's error page, also for an answer given on a user's or
 * project's origin (a form posted to a page of the site), whose host serves no such page.
 */
const docBase = (req: FastifyRequest, config: Config): string =>
  (siteOf(req.headers.host, config) !== null ? serviceOriginFromContent(req.headers.host, config, req.server.ports) : null) ?? serviceOrigin(req, config)

/** Sends an AppError in the route's format. */
export function sendAppError(req: FastifyRequest, reply: FastifyReply, err: AppError, config: Config, format?: ErrorFormat): FastifyReply {
  const lang = langOf(req, req.routeOptions?.config?.lang)
  const body = renderError(err.key, format ?? routeErrorFormat(req), lang, err.options, docBase(req, config))
  for (const [k, v] of Object.entries(err.options.headers ?? {})) reply.header(k, v)
  return reply.code(err.status).type('application/json; charset=utf-8').send(body)
}

type SchemaError = NonNullable<FastifyError['validation']>[number]

/** A JSON pointer as a field name: `/tags/3` is `tags[3]`, `/a/b` is `a.b`; the root is `root`. */
function fieldName(pointer: string, root: string): string {
  let out = ''
  for (const seg of pointer.split('/').slice(1)) {
    const s = seg.replace(/~1/g, '/').replace(/~0/g, '~')
    out += /^\d+$/.test(s) ? `[${s}]` : out === '' ? s : `.${s}`
  }
  return out === '' ? root : out
}

/** An allowed value as a message shows it: a string as it is, anything else as JSON. */
const shown = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v))

/**
 * A value outside a fixed set (an enum, or a union of constants such as data_type's): the
 * field and its allowed values, instead of the validator's wording (one "must be equal to
 * constant" per branch). Null when the errors say anything else: a union with a branch that
 * is no constant is described by the validator as before.
 */
function oneOfDetail(errors: SchemaError[]): Text | null {
  const at = errors[0].instancePath
  const values: unknown[] = []
  const branches = new Map<string, boolean>()
  for (const x of errors) {
    if (x.instancePath !== at) return null
    const branch = /^(.*\/anyOf\/\d+)\//.exec(x.schemaPath)?.[1]
    if (x.keyword === 'const') values.push(x.params.allowedValue)
    else if (x.keyword === 'enum') values.push(...(x.params.allowedValues as unknown[]))
    else if (x.keyword !== 'type' && x.keyword !== 'anyOf') return null
    if (branch !== undefined) branches.set(branch, (branches.get(branch) ?? false) || x.keyword === 'const' || x.keyword === 'enum')
  }
  if (values.length === 0 || [...branches.values()].includes(false) || at === '') return null
  const field = fieldName(at, '')
  return { zh: `${field} 须为以下值之一：${values.map(shown).join('、')}`, en: `${field} must be one of: ${values.map(shown).join(', ')}` }
}

/** A bound as words: `>=` 5 is "at least 5" / 不能小于 5, and so on. */
const BOUNDS: Record<string, (n: string | number) => Text> = {
  '>=': (n) => ({ zh: `不能小于 ${n}`, en: `must be at least ${n}` }),
  '<=': (n) => ({ zh: `不能大于 ${n}`, en: `must be at most ${n}` }),
  '>': (n) => ({ zh: `须大于 ${n}`, en: `must be greater than ${n}` }),
  '<': (n) => ({ zh: `须小于 ${n}`, en: `must be less than ${n}` }),
}
const bound = (field: string, p: Record<string, string | number>): Text | null => {
  const t = BOUNDS[p.comparison]?.(p.limit)
  return t ? { zh: `${field} ${t.zh}`, en: `${field} ${t.en}` } : null
}
const chars = (n: string | number): Text => ({ zh: `${n} 个字符`, en: n === 1 ? '1 character' : `${n} characters` })
const items = (n: string | number): Text => ({ zh: `${n} 项`, en: n === 1 ? '1 item' : `${n} items` })
const properties = (n: string | number): Text => ({ zh: `${n} 个字段`, en: n === 1 ? '1 property' : `${n} properties` })
const atMostItems = (f: string, p: Record<string, string | number>): Text => ({
  zh: `${f} 最多 ${items(p.limit).zh}`,
  en: `${f} must have at most ${items(p.limit).en}`,
})
/** A property the object does not take (`additionalProperties`, `unevaluatedProperties`), named in full. */
const unexpected = (name: string): Text => ({ zh: `不接受字段 ${name}`, en: `${name} is not an accepted field` })
/** Items that match `contains`, between `minContains` and `maxContains` when the schema sets them. */
const matching = (n: string | number): Text => ({ zh: `${n} 个符合要求的项`, en: n === 1 ? '1 matching item' : `${n} matching items` })
const contains = (f: string, p: Record<string, string | number>): Text => {
  const min = p.minContains
  const max = p.maxContains
  if (max === undefined) return { zh: `${f} 至少须含 ${matching(min).zh}`, en: `${f} must contain at least ${matching(min).en}` }
  if (Number(min) === 0) return { zh: `${f} 最多含 ${matching(max).zh}`, en: `${f} must contain at most ${matching(max).en}` }
  if (min === max) return { zh: `${f} 须恰好含 ${matching(min).zh}`, en: `${f} must contain exactly ${matching(min).en}` }
  return { zh: `${f} 须含 ${min} 到 ${matching(max).zh}`, en: `${f} must contain between ${min} and ${matching(max).en}` }
}
/** The branch of an `if` a value fails: `then` (the condition holds) or `else`. */
const conditional = (f: string, p: Record<string, string | number>): Text =>
  p.failingKeyword === 'else'
    ? { zh: `${f} 须满足条件不成立时适用的规则`, en: `${f} must satisfy the rule that applies when its condition does not hold` }
    : { zh: `${f} 须满足条件成立时适用的规则`, en: `${f} must satisfy the rule that applies when its condition holds` }
/** A property another one present asks for (`dependencies` of draft-07, `dependentRequired` after it). */
const dependency = (_f: string, p: Record<string, string | number>, at: (name: string) => string): Text => ({
  zh: `缺少字段 ${at(String(p.missingProperty))}（有 ${at(String(p.property))} 时必填）`,
  en: `${at(String(p.missingProperty))} is required when ${at(String(p.property))} is present`,
})

/**
 * The validator's common keywords in both languages: the field (`field`, or `at`, the object
 * a missing or unexpected property belongs in, joined to it) and the limit the schema sets.
 * Every keyword of the validator that reports a failure of its own is listed (those that only
 * hold other schemas, such as allOf or dependentSchemas, report their inner failure); one added
 * later is worded by `unworded` until it is.
 */
const KEYWORDS: Record<string, (field: string, p: Record<string, string | number>, at: (name: string) => string) => Text | null> = {
  required: (_f, p, at) => ({ zh: `缺少必填字段 ${at(String(p.missingProperty))}`, en: `${at(String(p.missingProperty))} is required` }),
  additionalProperties: (_f, p, at) => unexpected(at(String(p.additionalProperty))),
  unevaluatedProperties: (_f, p, at) => unexpected(at(String(p.unevaluatedProperty))),
  type: (f, p) => {
    const types = String(p.type).split(',')
    return { zh: `${f} 须为 ${types.join(' 或 ')} 类型`, en: `${f} must be of type ${types.join(' or ')}` }
  },
  maxItems: atMostItems,
  // items past those a tuple (items as a list, prefixItems) or the other keywords describe
  additionalItems: atMostItems,
  items: atMostItems,
  unevaluatedItems: atMostItems,
  contains,
  minItems: (f, p) => ({ zh: `${f} 至少 ${items(p.limit).zh}`, en: `${f} must have at least ${items(p.limit).en}` }),
  maxLength: (f, p) => ({ zh: `${f} 最多 ${chars(p.limit).zh}`, en: `${f} must be at most ${chars(p.limit).en} long` }),
  minLength: (f, p) =>
    p.limit === 1
      ? { zh: `${f} 不能为空`, en: `${f} must not be empty` }
      : { zh: `${f} 至少 ${chars(p.limit).zh}`, en: `${f} must be at least ${chars(p.limit).en} long` },
  pattern: (f, p) => ({ zh: `${f} 格式不符，须匹配 ${p.pattern}`, en: `${f} must match the pattern ${p.pattern}` }),
  minimum: bound,
  maximum: bound,
  exclusiveMinimum: bound,
  exclusiveMaximum: bound,
  const: (f, p) => ({ zh: `${f} 须为 ${shown(p.allowedValue)}`, en: `${f} must be ${shown(p.allowedValue)}` }),
  format: (f, p) => ({ zh: `${f} 须为有效的 ${p.format}`, en: `${f} must be a valid ${p.format}` }),
  multipleOf: (f, p) => ({ zh: `${f} 须为 ${p.multipleOf} 的倍数`, en: `${f} must be a multiple of ${p.multipleOf}` }),
  uniqueItems: (f, p) => ({
    zh: `${f} 不能有重复项：${f}[${p.j}] 与 ${f}[${p.i}] 相同`,
    en: `${f} must not have duplicate items: ${f}[${p.j}] and ${f}[${p.i}] are the same`,
  }),
  // a value that passes several branches of a oneOf (one that fails them all is unionDetail's)
  oneOf: (f) => ({ zh: `${f} 须恰好符合一种允许的形式，却符合了多种`, en: `${f} must match exactly one of its allowed forms, not several` }),
  not: (f) => ({ zh: `${f} 不能是被排除的形式`, en: `${f} must not be of the excluded form` }),
  minProperties: (f, p) => ({ zh: `${f} 至少 ${properties(p.limit).zh}`, en: `${f} must have at least ${properties(p.limit).en}` }),
  maxProperties: (f, p) => ({ zh: `${f} 最多 ${properties(p.limit).zh}`, en: `${f} must have at most ${properties(p.limit).en}` }),
  dependencies: dependency,
  dependentRequired: dependency,
  enum: (f, p) => {
    const values = p.allowedValues as unknown as unknown[]
    return { zh: `${f} 须为以下值之一：${values.map(shown).join('、')}`, en: `${f} must be one of: ${values.map(shown).join(', ')}` }
  },
  if: conditional,
  // a value where the schema allows none (`false`: a property that must be absent, ...)
  'false schema': (f) => ({ zh: `不允许出现 ${f}`, en: `${f} is not allowed` }),
  // the tag property of a discriminated oneOf (an option of the validator): not a string, or no form for it
  discriminator: (_f, p, at) =>
    p.error === 'tag'
      ? { zh: `${at(String(p.tag))} 须为 string 类型`, en: `${at(String(p.tag))} must be of type string` }
      : {
          zh: `${at(String(p.tag))} 的值 ${shown(p.tagValue)} 不对应任何允许的形式`,
          en: `${at(String(p.tag))} value ${shown(p.tagValue)} matches none of the allowed forms`,
        },
}

/** One failure of a keyword of KEYWORDS, in both languages; null for a keyword not listed. */
function describeError(x: SchemaError, root: string): Text | null {
  const describe = KEYWORDS[x.keyword]
  if (describe === undefined) return null
  const at = (name: string) => fieldName(`${x.instancePath}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`, root)
  return describe(fieldName(x.instancePath, root), x.params as Record<string, string | number>, at)
}

/**
 * An object with a property name its `propertyNames` schema refuses: the object, the name and,
 * when its keyword is one of KEYWORDS, the rule the name breaks (the validator reports that
 * rule first, then propertyNames). Null when no propertyNames failure is among the errors.
 */
function propertyNameDetail(errors: SchemaError[], root: string): Text | null {
  const names = errors.find((x) => x.keyword === 'propertyNames')
  if (names === undefined) return null
  const field = fieldName(names.instancePath, root)
  const head: Text = {
    zh: `${field} 中的字段名 ${String(names.params.propertyName)} 无效`,
    en: `${field} has an invalid property name ${String(names.params.propertyName)}`,
  }
  const rule = errors[0] === names ? null : describeError(errors[0], root)
  if (rule === null) return head
  const words = mapText(rule, (w) => (w.startsWith(`${field} `) ? w.slice(field.length + 1) : w))
  return { zh: `${head.zh}：${words.zh}`, en: `${head.en}: ${words.en}` }
}

/**
 * A value that fails the branch an `if` chose (reported so by a validator that collects every
 * error): the branch and, when its keyword is one of KEYWORDS, the rule inside it that failed
 * (reported first, with its own field). Null when no `if` failure is among the errors.
 */
function conditionDetail(errors: SchemaError[], root: string): Text | null {
  const cond = errors.find((x) => x.keyword === 'if')
  if (cond === undefined) return null
  const head = describeError(cond, root) as Text
  const rule = errors[0] === cond ? null : describeError(errors[0], root)
  return rule === null ? head : { zh: `${head.zh}：${rule.zh}`, en: `${head.en}: ${rule.en}` }
}

/**
 * A value that matches no branch of a union (anyOf, oneOf) whose branches are not all
 * constants: the field and, per branch, its first failure (without the field's name when it
 * leads), e.g. "limits.x must satisfy one of: must be at least 0; must be of type null". Null
 * when a branch fails on a keyword outside KEYWORDS.
 */
function unionDetail(errors: SchemaError[], root: string): Text | null {
  const union = errors.find((x) => x.keyword === 'anyOf' || x.keyword === 'oneOf')
  if (union === undefined) return null
  const field = fieldName(union.instancePath, root)
  const branches = new Map<string, SchemaError>()
  for (const x of errors) {
    if (x === union) continue
    const branch = x.schemaPath.startsWith(`${union.schemaPath}/`) ? /^\d+/.exec(x.schemaPath.slice(union.schemaPath.length + 1))?.[0] : undefined
    if (branch === undefined) return null
    if (!branches.has(branch)) branches.set(branch, x)
  }
  if (branches.size === 0) return null
  const parts: Text[] = []
  for (const x of branches.values()) {
    const t = describeError(x, root)
    if (t === null) return null
    parts.push(mapText(t, (words) => (words.startsWith(`${field} `) ? words.slice(field.length + 1) : words)))
  }
  return {
    zh: `${field} 须满足以下之一：${parts.map((t) => t.zh).join('；')}`,
    en: `${field} must satisfy one of: ${parts.map((t) => t.en).join('; ')}`,
  }
}

/**
 * A validation failure in both languages, naming the field and what it must be: a value
 * outside a fixed set (oneOfDetail), one matching no branch of a union (unionDetail), a refused
 * property name (propertyNameDetail), a failed condition (conditionDetail), or one failure of a
 * keyword of KEYWORDS. Null when the errors are anything else. `context`: where the value
 * was (body, querystring, params, headers), the name of a whole input that fails.
 */
function validationDetail(errors: SchemaError[] | undefined, context: string | undefined): Text | null {
  if (!errors?.length) return null
  const root = context ?? 'body'
  if (errors.length > 1) return propertyNameDetail(errors, root) ?? conditionDetail(errors, root) ?? oneOfDetail(errors) ?? unionDetail(errors, root)
  return describeError(errors[0], root) ?? oneOfDetail(errors)
}

/** A validation failure validationDetail cannot word: a whole Chinese sentence, the validator's own English. */
const unworded = (message: string): Text => ({ zh: '请求参数不符合接口的要求', en: message })

/**
 * Fastify's refusals of a request that have no row of their own (1106 or, for the URL, 1110
 * names them), by code. A request that ended before its body (the client went) is CUT_SHORT.
 */
const FRAMEWORK_DETAILS: Record<string, Text> = {
  FST_ERR_ROUTE_MISSING_CONTENT_TYPE: { zh: '缺少 Content-Type 请求头', en: 'the Content-Type header is missing' },
  FST_ERR_ROUTE_MISSING_CONTENT: { zh: '缺少请求体', en: 'the request body is missing' },
  FST_ERR_BAD_URL: { zh: 'URL 中的百分号编码格式错误', en: 'malformed percent-encoding in the URL' },
  FST_ERR_MAX_PARAM_LENGTH: SEGMENT_TOO_LONG,
  // a body whose bytes are not as many as its Content-Length said: no JSON was read, so not 1113
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    zh: '请求体的长度与 Content-Length 请求头不符',
    en: "the request body's length does not match its Content-Length header",
  },
}
const CUT_SHORT_CODES = new Set(['ECONNRESET', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE'])
/** A refusal of a code no one has worded: the same generic sentence in each language. */
const UNKNOWN_REFUSAL: Text = { zh: '请求无法按原样处理', en: 'the request cannot be processed as sent' }

/** What a framework refusal (a Fastify error below 500, or one its router hands to frameworkErrors) says, in both languages. */
export function frameworkDetail(e: { code?: string; message?: string }): Text {
  if (e.code !== undefined && Object.hasOwn(FRAMEWORK_DETAILS, e.code)) return FRAMEWORK_DETAILS[e.code]
  if ((e.code !== undefined && CUT_SHORT_CODES.has(e.code)) || e.message === 'aborted') return CUT_SHORT
  return UNKNOWN_REFUSAL
}

/** What each limit of the multipart parser counts, in Chinese (the English is the parser's message). */
const PART_LIMITS: Record<string, string> = {
  FST_PARTS_LIMIT: '部分的总数超过上限',
  FST_FILES_LIMIT: '文件数超过上限',
  FST_FIELDS_LIMIT: '字段数超过上限',
}

/**
 * Maps Fastify's own errors (parsing, limits, validation) to rows of the table. `bodyLimit`:
 * the route's body limit, `fileLimit`: a multipart file's (the numbers a 413 names).
 */
export function fromFastifyError(e: FastifyError, bodyLimit: number, fileLimit: number): AppError | null {
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('BODY_TOO_LARGE', { params: { limit: bodyLimit } })
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError('BODY_TOO_LARGE', { params: { limit: fileLimit } })
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', { params: { expected: 'application/json' } })
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('INVALID_JSON')
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new AppError('TOO_MANY_PARTS', { params: { detail: { zh: PART_LIMITS[e.code], en: e.message } } })
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', { params: { expected: 'multipart/form-data' } })
    case 'FST_ERR_VALIDATION':
      return new AppError('INVALID_PARAMETER', { params: { detail: validationDetail(e.validation, e.validationContext) ?? unworded(e.message) } })
  }
  // PostgreSQL: text the database cannot hold (NUL, invalid encoding) is the client's input
  const pgCode = (e as { code?: string }).code
  if (pgCode === '22021' || pgCode === '22P05' || pgCode === '22P02') return unstorable()
  // SQLite: the fsync that covered this write failed, so the write may not survive a crash
  if (pgCode === 'SVC_NOT_DURABLE') {
    const reason = { zh: '写入未能持久保存到磁盘，可能没有保存成功', en: 'the write could not be made durable and may not have been saved' }
    return new AppError('STORAGE_UNAVAILABLE', { extra: { details: { reason } } })
  }
  // the database pool could not hand out a connection in time, the server went away, or a
  // query went unanswered past DATABASE_QUERY_TIMEOUT
  if (/timeout exceeded when trying to connect|Connection terminated|ECONNREFUSED|Query read timeout/.test(e.message ?? '')) {
    return new AppError('DEPENDENCY_UNAVAILABLE')
  }
  // PostgreSQL refusing work while it stops, starts or recovers (57P01-57P03: "terminating
  // connection due to administrator command", "the database system is shutting down"), a
  // connection exception (class 08) or no connection left (53300): a restart, not a bug
  if (pgCode !== undefined && /^(08...|57P0[123]|53300)$/.test(pgCode)) return new AppError('DEPENDENCY_UNAVAILABLE')
  if (e instanceof SyntaxError || (/JSON/.test(e.message ?? '') && e.statusCode === 400)) return new AppError('INVALID_JSON')
  if (e.statusCode === 413) return new AppError('BODY_TOO_LARGE', { params: { limit: bodyLimit } })
  if (e.statusCode === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', { params: { expected: 'application/json' } })
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    // the multipart parser's refusals outside a route that reads its parts through http/multipart
    const multipart = e.code?.startsWith('FST_') ? multipartClientError(e) : null
    return multipart ?? new AppError('INVALID_PARAMETER', { params: { detail: frameworkDetail(e) }, status: e.statusCode })
  }
  return null
}

/**
 * A thrown error can come after a route chose the headers of the answer it meant to send (a
 * public link's ETag, range and year-long caching, then a blob that cannot be read): the error
 * answer names no representation and is never stored, so no cache keeps it in place of the
 * content or revalidates it into a 304 later.
 */
function dropRepresentationHeaders(reply: FastifyReply): void {
  for (const h of ['ETag', 'Last-Modified', 'Content-Range', 'Accept-Ranges']) reply.removeHeader(h)
  if (reply.hasHeader('Cache-Control')) reply.header('Cache-Control', 'no-store')
}

/** What a browser navigation gets instead of the JSON error, when given (web/short-page.ts errorPage). */
export type ErrorPage = (req: FastifyRequest, reply: FastifyReply, err: AppError) => FastifyReply | undefined

/** Installs the single error handler and the not-found handler of the service. */
export function installErrorHandling(app: FastifyInstance, config: Config, page?: ErrorPage): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const mediaTypeError = err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? req.routeOptions.config?.mediaTypeError : undefined
    const bodyLimit = req.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024
    const bodyTooLarge = err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? req.routeOptions.config?.bodyTooLarge : undefined
    let appErr =
      err instanceof AppError
        ? err
        : mediaTypeError
          ? new AppError(mediaTypeError)
          : bodyTooLarge
            ? bodyTooLarge(bodyLimit)
            : fromFastifyError(err, bodyLimit, config.maxUploadBytes)
    // a row written refers to one another request deleted meanwhile (the account, a project):
    // nothing was written (the statement failed in its transaction); the caller's retry gets
    // the answer for what is there now (401 for a deleted account)
    if (!appErr && isForeignKeyViolation(err)) appErr = new AppError('DELETED_MEANWHILE')
    if (!appErr) {
      req.log.error({ err }, 'unexpected error')
      appErr = new AppError('INTERNAL', { params: { request_id: String(req.id) } })
    } else if (appErr.status >= 500) {
      req.log.warn({ err, code: ERRORS[appErr.key].code }, 'service unavailable')
    }
    dropRepresentationHeaders(reply)
    return page?.(req, reply, appErr) ?? sendAppError(req, reply, appErr, config)
  })
}

/** Throws the error behind a table key (helper for handlers). */
export const fail = (key: ErrorKey, options?: ConstructorParameters<typeof AppError>[1]): never => {
  throw new AppError(key, options)
}

/**
 * The refusal of text the database cannot hold (U+0000, invalid encoding): what PostgreSQL's
 * encoding errors become, and what a route answers for such text before the database so that
 * SQLite, which would store or look it up, answers alike (decision 10).
 */
export const unstorable = (): AppError =>
  new AppError('INVALID_PARAMETER', { params: { detail: { zh: '某个值包含无法存储的字符', en: 'a value contains characters that cannot be stored' } } })
