/**
 * What the OpenAPI document says beyond the route schemas: security requirements, operationIds,
 * the shared error response and the servers. Everything here changes the document only: the
 * `transform` result is never used for validation or serialization, so no answer changes.
 */
import type { RouteOptions } from 'fastify'
import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger'
import type { Config } from '../../config.js'
import { MULTIPART_FORM_KEY } from '../../http/multipart.js'
import { ERROR_SCHEMA, RAW_BODY_KEY } from '../../http/answer-schemas.js'

type Json = Record<string, any>

/** The security schemes of the document (names used by every operation's `security`). */
export const SECURITY_SCHEMES = {
  apiKey: { type: 'http', scheme: 'bearer', description: 'An API key (dashboard > API keys), sent as `Authorization: Bearer <key>`.' },
  session: { type: 'apiKey', in: 'cookie', name: 'session', description: 'The session cookie set by POST /login. Browser writes also send `X-CSRF-Token`.' },
} as const

/** Security requirement of a route, from the auth mode the API guard enforces (config.auth). */
function securityOf(route: Pick<RouteOptions, 'config'>): Json[] {
  switch (route.config?.auth) {
    case 'any':
      return [{ apiKey: [] }, { session: [] }]
    case 'session':
      return [{ session: [] }]
    default:
      return []
  }
}

/**
 * Per route (before the route becomes an operation): declares its security requirement, names
 * the `*` tail of wildcard routes (`{*}` is not a valid path template), and documents the empty
 * answer of CORS preflights.
 */
/** An operation's mark, from transformRoute to transformDocument: its body may be left out (route config optionalBody). */
const OPTIONAL_BODY = 'x-svc-optional-body'

export const transformRoute: SwaggerTransform = ({ schema: s, url, route }) => {
  const schema = s as Json
  const out: Json = { ...schema, security: schema?.security ?? securityOf(route) }
  // carried to transformDocument, which marks the request body not required (Fastify's swagger always requires one)
  if (route.config?.optionalBody) out[OPTIONAL_BODY] = true
  if (url.endsWith('/*')) {
    url = `${url.slice(0, -2)}/:file_path`
    out.params = {
      type: 'object',
      required: ['file_path'],
      properties: {
        ...(schema?.params?.properties ?? {}),
        ...Object.fromEntries([...url.matchAll(/:(\w+)/g)].map(([, n]) => [n, { type: 'string' }])),
        file_path: { type: 'string', description: "The file's path inside the project: each segment percent-encoded, the slashes kept or sent as %2F" },
      },
    }
  }
  // a multipart body, declared for the document only (http/multipart.ts multipartForm)
  const form = schema?.[MULTIPART_FORM_KEY]
  if (form !== undefined) {
    delete out[MULTIPART_FORM_KEY]
    const json = schema.body?.content ?? {}
    out.body = { content: { ...json, 'multipart/form-data': { schema: form } } }
  }
  // a raw body (an archive), declared for the document only (http/answer-schemas.ts rawBody)
  const raw = schema?.[RAW_BODY_KEY]
  if (raw !== undefined) {
    delete out[RAW_BODY_KEY]
    out.body = { content: raw }
  }
  const methods = Array.isArray(route.method) ? route.method : [route.method]
  if (methods.includes('OPTIONS') && !schema?.response) out.response = { 204: { description: 'No Content (CORS preflight)', type: 'null' } }
  return { schema: out, url }
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

/** `post /svc_api/data/public/{username}/{key}` -> `postSvcApiDataPublicByUsernameByKey`. */
export function operationIdOf(method: string, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .flatMap((seg) => {
      const param = /^\{(.+)\}$/.exec(seg)
      return (param ? ['by', ...param[1].split(/[^A-Za-z0-9]+/)] : seg.split(/[^A-Za-z0-9]+/)).filter(Boolean)
    })
  return method + words.map((w) => w[0].toUpperCase() + w.slice(1)).join('')
}

/**
 * A HEAD operation's answer: its GET's status code and headers with no `content` (a HEAD
 * answer has no body, RFC 9110 9.3.2). A reference to a shared answer with a body is written
 * out without it.
 */
function bodiless(r: Json, responses: Json): Json {
  const name = typeof r.$ref === 'string' ? r.$ref.split('/').pop() : undefined
  const declared: Json = name === undefined ? r : responses[name]
  if (declared?.content === undefined) return r
  const out: Json = { ...declared, description: `${declared.description} (HEAD: the same headers, no body)` }
  delete out.content
  return out
}

/**
 * On the whole document: `servers`, an operationId for every operation (derived from method
 * and path, so unique; a route may set its own), and the shared error answers (`4XX`, `5XX`) on
 * every operation, beside any 4xx a route declares itself (API paths: Error; public links:
 * PublicError). Operations shared by several methods (GET and HEAD of one route are one
 * object) are copied first so each gets its own operationId, and so a HEAD operation's answers
 * can drop their bodies (bodiless) here, the one place every HEAD operation passes.
 */
export function transformDocument(config: Readonly<Config>): SwaggerTransformObject {
  return (input) => {
    if (!('openapiObject' in input)) return input.swaggerObject
    const doc = input.openapiObject as Json
    doc.servers = [{ url: config.publicUrl ?? '/', description: 'This instance' }]
    doc.components ??= {}
    doc.components.schemas = { ...(doc.components.schemas ?? {}), Error: ERROR_SCHEMA }
    doc.components.responses = {
      ...(doc.components.responses ?? {}),
      Error: {
        description: 'Error (the code and its meaning: /docs/errors)',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
      PublicError: {
        description: 'Error of a public link: JSON (success and message); plain text for a Service-Worker fetch (403)',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } }, 'text/plain': { schema: { type: 'string' } } },
      },
    }
    for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
      for (const m of METHODS) {
        if (!item[m]) continue
        const op: Json = { ...item[m], responses: { ...(item[m].responses ?? {}) } }
        op.operationId ??= operationIdOf(m, path)
        if (op[OPTIONAL_BODY]) {
          delete op[OPTIONAL_BODY]
          if (op.requestBody) op.requestBody = { ...op.requestBody, required: false }
        }
        const api = /^\/(svc_api|api)\//.test(path)
        // a route's own 4xx (a bodiless 412) documents that answer only: the errors stay 4XX
        op.responses['4XX'] ??= { $ref: `#/components/responses/${api ? 'Error' : 'PublicError'}` }
        // the service's own failures (503 with the database or storage down, 502 from a mail
        // relay) answer in the same format
        op.responses['5XX'] ??= { $ref: `#/components/responses/${api ? 'Error' : 'PublicError'}` }
        if (m === 'head')
          op.responses = Object.fromEntries(Object.entries<Json>(op.responses).map(([code, r]) => [code, bodiless(r, doc.components.responses)]))
        item[m] = op
      }
    }
    return doc
  }
}
