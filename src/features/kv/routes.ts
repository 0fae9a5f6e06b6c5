import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { langOf } from '../../errors/render.js'
import { caller } from '../../http/guard.js'
import { strictValidator } from '../../http/strict-schema.js'
import { quotaOf } from '../../limits/quotas.js'
import { notModified, preconditionFails } from '../../http/conditional.js'
import { PRECONDITION_FAILED_CACHE } from '../../http/representation.js'
import { entityTag, type KvService, type PublicAnswer } from './service.js'
import { versionCondition } from './validate.js'
import {
  DeleteEnvelope,
  EntryEnvelope,
  GetEnvelope,
  IncrBody,
  KV_LIMITS,
  KeyQuery,
  LegacyParams,
  ListEnvelope,
  ListQuery,
  ConditionHeaders,
  LegacyConditionHeaders,
  LegacyPreconditionFailed,
  NotModified,
  PreconditionFailed,
  ListConditionHeaders,
  ListNotModified,
  ListPreconditionFailed,
  PublicEnvelope,
  PublicIncrBody,
  PublicListEnvelope,
  PublicListParams,
  PublicListQuery,
  PublicParams,
  ReadConditionHeaders,
  StoreBody,
} from './schemas.js'

const MESSAGES = {
  created: { zh: '数据已保存', en: 'Entry created' },
  updated: { zh: '数据已更新', en: 'Entry updated' },
  deleted: { zh: '数据已删除', en: 'Entry deleted' },
} as const
const msg = (req: FastifyRequest, m: keyof typeof MESSAGES) => MESSAGES[m][langOf(req)]

/**
 * A write body over the route's body limit: 1602 with the caller's entry limit (an entry
 * that large cannot fit), or 1109 when the operator set an entry limit above the body limit.
 * Answered before the body is read, so nothing reaches the database.
 */
function tooLargeHandler(err: FastifyError, req: FastifyRequest): never {
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' && req.principal) {
    const limit = quotaOf(req.principal.user.limits, 'kv_entry_bytes')
    if (limit < KV_LIMITS.bodyLimit) throw new AppError('KV_ENTRY_TOO_LARGE', { params: { limit } })
    throw new AppError('BODY_TOO_LARGE', { params: { limit: KV_LIMITS.bodyLimit } })
  }
  throw err
}

const REQUEST_HEADERS_RE = /^[A-Za-z0-9-]+(\s*,\s*[A-Za-z0-9-]+)*$/

const EXPOSED = 'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Window, Retry-After'

/**
 * A write's preconditions from If-Match / If-None-Match (validate.ts); the entry's ETag is
 * its version, quoted, sent by get, store, incr and the owner's public read, so a client can
 * send it back.
 */
const conditionOf = (req: FastifyRequest) => versionCondition(req.headers['if-match'], req.headers['if-none-match'])
const withEtag = (reply: FastifyReply, entry: { version: number }) => reply.header('ETag', entityTag(entry.version))

const NO_TAGS: readonly string[] = []

/**
 * What a read of an entry whose ETag is `etag` answers (RFC 9110 13.2.2, the service's one
 * matcher), for the routes and the fast path alike: If-Match first, 'failed' (412) unless `*`
 * or a tag strongly matches (null: the legacy read has no tag, so only `*` passes); then
 * If-None-Match, 'unchanged' (304) when it weakly matches (never without a tag). Entries have
 * no Last-Modified, so the date fields are not read (RFC 9110 13.1.3-4).
 */
export function readCondition(h: IncomingHttpHeaders, etag: string | null): 'failed' | 'unchanged' | 'whole' {
  const im = h['if-match']
  if (im !== undefined && preconditionFails(im, undefined, etag ?? NO_TAGS)) return 'failed'
  const inm = h['if-none-match']
  if (etag !== null && inm !== undefined && notModified(inm, undefined, etag)) return 'unchanged'
  return 'whole'
}

/**
 * Sends a read's 412 or 304 (no body; the ETag and the route's headers already set), or
 * returns false when the body is to be sent. A 412 is no API error (decision 160).
 */
function sendCondition(req: FastifyRequest, reply: FastifyReply, etag: string | null): FastifyReply | false {
  const c = readCondition(req.headers, etag)
  if (c === 'failed') return reply.code(412).header('Content-Length', '0').send()
  if (c === 'unchanged') return reply.code(304).send()
  return false
}

/** The caller's own entry: never stored by a cache, shared or the browser's. */
const PRIVATE_READ = 'private, no-store'

/** A public read's answer: 412 or 304 as readCondition says, else the JSON. */
function sendPublic(req: FastifyRequest, reply: FastifyReply, a: PublicAnswer) {
  reply.type(PUBLIC_JSON)
  if (a.etag !== null) reply.header('ETag', a.etag)
  return sendCondition(req, reply, a.etag) || reply.send(a.body)
}

/**
 * Public reads are for pages on any origin, sandboxed ones (Origin: null) included: any
 * origin, never credentials; live data, so caches must revalidate every time. Set in onSend
 * so error answers (1604, 429, 1116) carry them too and a page can read the error; the fast
 * path (public-fast.ts) sends the same list.
 */
export const PUBLIC_READ_HEADERS = [
  'Access-Control-Allow-Origin',
  '*',
  'Access-Control-Expose-Headers',
  `${EXPOSED}, ETag`,
  'Cache-Control',
  'no-cache',
] as const

/**
 * A 412 answers one request's precondition: no shared cache may keep it for the URL, so the
 * public read's `no-cache` turns private (as every public body's 412, decision 143); the
 * get's `private, no-store` stays.
 */
export const PUBLIC_FAILED_HEADERS = PUBLIC_READ_HEADERS.map((v, i) =>
  i > 0 && PUBLIC_READ_HEADERS[i - 1] === 'Cache-Control' ? PRECONDITION_FAILED_CACHE : v,
)

/**
 * CORS of a group of KV routes, as an onSend hook (error answers included, so a page reads
 * 4xx and 429 bodies): any origin, never credentials. `methods` is what the preflight allows;
 * it echoes the asked headers when they are plain names, else allows `fallback`.
 */
function corsHook(base: readonly string[], methods: string, fallback: string, failed: readonly string[] = base) {
  // synchronous: an async hook would cost every answer a promise and a microtask turn
  return (req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void): void => {
    const list = reply.statusCode === 412 ? failed : base
    for (let i = 0; i < list.length; i += 2) reply.header(list[i], list[i + 1])
    reply.removeHeader('Access-Control-Allow-Credentials')
    if (req.method === 'OPTIONS') {
      reply.header('Access-Control-Allow-Methods', methods)
      const asked = req.headers['access-control-request-headers']
      reply.header('Access-Control-Allow-Headers', typeof asked === 'string' && REQUEST_HEADERS_RE.test(asked) && asked.length <= 512 ? asked : fallback)
      reply.header('Access-Control-Max-Age', '86400')
    }
    done(null, payload)
  }
}

const publicHeaders = corsHook(
  PUBLIC_READ_HEADERS,
  'GET, HEAD, OPTIONS',
  'Accept, Accept-Language, Content-Type, If-Match, If-None-Match',
  PUBLIC_FAILED_HEADERS,
)

/**
 * The key-authenticated routes answer pages on any origin too (decision 127): the API key
 * travels in `Authorization`, which a page can only send when it holds the key, and no
 * answer allows credentials, so a page never reads anything with the visitor's session
 * (cross-site cookie writes are refused anyway, 1008).
 */
const keyHeaders = corsHook(
  ['Access-Control-Allow-Origin', '*', 'Access-Control-Expose-Headers', `${EXPOSED}, ETag`],
  'GET, POST, DELETE, OPTIONS',
  'Authorization, Content-Type, Accept, Accept-Language, If-Match, If-None-Match',
)

/**
 * A visitor's increment of a public counter (decision 303): as the public read, any
 * origin and never credentials (no key, no session: nothing a page could not already send);
 * a write's answer, so no cache keeps it.
 */
const publicIncrHeaders = corsHook(
  ['Access-Control-Allow-Origin', '*', 'Access-Control-Expose-Headers', `${EXPOSED}, ETag`, 'Cache-Control', 'no-store'],
  'POST, OPTIONS',
  'Accept, Accept-Language, Content-Type',
)

/** A visitor's increment body is `{"delta": -1}` at most: a few bytes. */
const PUBLIC_INCR_BODY_LIMIT = 1024

/** Every input of the visitor's increment is checked by the service (validate.ts), an empty body included. */
const passThrough = () => () => true

export const PUBLIC_JSON = 'application/json; charset=utf-8'

/** The key-value store's routes (API context: guard, rate limits, HTTPS rule). */
export function kvApi(app: FastifyInstance, _deps: Deps, kv: KvService): void {
  const any = { auth: 'any' as const }
  const none = { auth: 'none' as const }
  const tags = ['key-value store']

  // store and incr read a text/plain body as JSON, as form submissions do: fetch() with a
  // string body and no Content-Type sends text/plain. A browser's write still needs the key's
  // Authorization header, or a session with its X-CSRF-Token header (the guard): both make the
  // request preflighted, so no write a page could not already make gets through.
  // Any other type is 415 / 1112 (decision 219): a form or multipart body would otherwise be
  // parsed into fields and stored as strings.
  void app.register(async (writes) => {
    const parseJson = writes.getDefaultJsonParser('error', 'error')
    writes.removeContentTypeParser(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'])
    writes.addContentTypeParser('text/plain', { parseAs: 'string' }, (req, body, done) =>
      body === '' ? done(null, undefined) : parseJson(req, String(body), done),
    )

    /** A write route: its body validated without coercion (what is stored is what was sent). */
    const write = (url: string, summary: string, description: string, body: typeof StoreBody | typeof IncrBody, op: 'put' | 'incr') =>
      writes.post(
        url,
        {
          config: any,
          onSend: keyHeaders,
          bodyLimit: KV_LIMITS.bodyLimit,
          errorHandler: tooLargeHandler,
          validatorCompiler: strictValidator,
          schema: { tags, summary, description, headers: ConditionHeaders, body, response: { 200: EntryEnvelope } },
        },
        async (req, reply) => {
          const { created, entry } = await kv[op](caller(req).user, req.body, conditionOf(req))
          withEtag(reply, entry)
          return { success: true, message: msg(req, created ? 'created' : 'updated'), data: entry }
        },
      )
    write(
      '/svc_api/data/store',
      'Create or update an entry (a repeated key updates it)',
      'Beyond the spec: `version` / `if_updated_at`, or the headers `If-Match: "{version}"` / `If-None-Match: *`, make the write a compare-and-swap (409, code 1409, nothing changed); the answer\'s `ETag` is the new version, quoted. `ttl` sets an expiry. On update, omitted data_type, tags, is_public and ttl keep their current values.',
      StoreBody,
      'put',
    )
    write(
      '/svc_api/data/incr',
      'Atomic increment (beyond the spec)',
      'Adds `by` (default 1) to a number entry in one transaction; a missing entry is created at 0 with data_type number. A non-number entry answers 400 (1106). If-Match / If-None-Match as for store.',
      IncrBody,
      'incr',
    )

    // anyone's +1 / -1 to a public counter: no key, counted against the visitor's address by
    // the guard (the anonymous tier), the body read as the owner's incr reads it
    writes.post(
      '/svc_api/data/public/:username/:key/incr',
      {
        config: { ...none, optionalBody: true },
        onSend: publicIncrHeaders,
        bodyLimit: PUBLIC_INCR_BODY_LIMIT,
        validatorCompiler: passThrough,
        schema: {
          tags,
          summary: 'Add 1 or -1 to a public counter (beyond the spec; no authentication)',
          description:
            'Only a live number entry its owner stored with `public_incr: true`, of an enabled account; anything else (missing, private, not a number, expired, disabled account) answers the same 404 / 1604 as the public read, and nothing is created. The body is optional: `{"delta": 1}` (default) or `{"delta": -1}`, as JSON or text/plain. The answer is the public read\'s, with the new value and `ETag: "{version}"`. CORS: Access-Control-Allow-Origin *, never credentials. Counted against the client address (anonymous tier).',
          params: PublicParams,
          body: PublicIncrBody,
          response: { 200: PublicEnvelope },
        },
      },
      async (req, reply) => {
        const { username, key } = req.params as { username: string; key: string }
        const a = await kv.publicIncr(username, key, req.body)
        if (a.etag !== null) reply.header('ETag', a.etag)
        return reply.type(PUBLIC_JSON).send(a.body)
      },
    )
  })

  app.get(
    '/svc_api/data/get',
    {
      config: any,
      onSend: keyHeaders,
      schema: {
        tags,
        summary: "Read one of the caller's entries",
        description: 'Beyond the spec: answers `ETag: "{version}"`, 304 with no body when If-None-Match names it, and 412 with no body when If-Match does not.',
        headers: ReadConditionHeaders,
        querystring: KeyQuery,
        response: { 200: GetEnvelope, 304: NotModified, 412: PreconditionFailed },
      },
    },
    async (req, reply) => {
      const entry = await kv.get(caller(req).user, (req.query as { key?: string }).key)
      // the tag is unique per (user, key), not per URL: a browser cache, keyed by URL, must not
      // keep one account's answer to revalidate it with another's credentials (decision 151)
      withEtag(reply, entry).header('Cache-Control', PRIVATE_READ)
      return sendCondition(req, reply, entityTag(entry.version)) || { success: true, data: entry }
    },
  )

  app.get(
    '/svc_api/data/list',
    {
      config: any,
      onSend: keyHeaders,
      schema: { tags, summary: "List the caller's entries by key, with quota and usage", querystring: ListQuery, response: { 200: ListEnvelope } },
    },
    async (req) => ({ success: true, data: await kv.list(caller(req).user, req.query as Record<string, unknown>) }),
  )

  app.delete(
    '/svc_api/data/delete',
    {
      config: any,
      onSend: keyHeaders,
      schema: {
        tags,
        summary: 'Delete an entry',
        description:
          'Beyond the spec: with `If-Match: "{version}"` (or If-None-Match) only an entry that meets it is deleted, else 409 / 1409; a missing entry is 1604 either way.',
        headers: ConditionHeaders,
        querystring: KeyQuery,
        response: { 200: DeleteEnvelope },
      },
    },
    async (req) => {
      await kv.remove(caller(req).user, (req.query as { key?: string }).key, conditionOf(req))
      return { success: true, message: msg(req, 'deleted') }
    },
  )

  app.get(
    '/svc_api/data/public/:username/:key',
    {
      config: none,
      onSend: publicHeaders,
      schema: {
        tags,
        summary: 'Public read of an entry with is_public true (no authentication)',
        description:
          'CORS: Access-Control-Allow-Origin *, never credentials; Cache-Control no-cache. A private, expired or missing entry answers the same 1604. Beyond the spec: `ETag: "{version}"` (the one get and store answer), 304 with no body when If-None-Match names it, and 412 with no body when If-Match does not.',
        headers: ReadConditionHeaders,
        params: PublicParams,
        response: { 200: PublicEnvelope, 304: NotModified, 412: PreconditionFailed },
      },
    },
    async (req, reply) => {
      const { username, key } = req.params as { username: string; key: string }
      return sendPublic(req, reply, await kv.publicRead(username, key))
    },
  )

  // not under /public/: /public/{username} is the legacy read of the key {username} (decision 317)
  app.get(
    '/svc_api/data/public-list/:username',
    {
      config: none,
      onSend: publicHeaders,
      schema: {
        tags,
        summary: "List a user's public entries (beyond the spec; no authentication)",
        description:
          "The owner's live entries with is_public true, by key in byte order, each with the public read's fields; private and expired entries are never listed. `prefix` and `per_page` as for the authenticated list; paged by the cursor `after` (the answer's `next_after`), never by `page` (400 / 1106). A missing or disabled account answers the public read's 404 / 1604; an account without public entries an empty list. Read at every request, so a write shows at once. CORS: Access-Control-Allow-Origin *, never credentials; Cache-Control no-cache. `ETag` is a digest of the answer: 304 with no body when If-None-Match names it, 412 with no body when If-Match does not. Counted against the client address (anonymous tier).",
        headers: ListConditionHeaders,
        params: PublicListParams,
        querystring: PublicListQuery,
        response: { 200: PublicListEnvelope, 304: ListNotModified, 412: ListPreconditionFailed },
      },
    },
    async (req, reply) => {
      const { username } = req.params as { username: string }
      return sendPublic(req, reply, await kv.publicList(username, req.query as Record<string, unknown>))
    },
  )

  app.get(
    '/svc_api/data/public/:key',
    {
      config: none,
      onSend: publicHeaders,
      schema: {
        tags,
        summary: 'Legacy public read by key across users (discouraged)',
        description:
          'When several users have a live public entry under the key, the one created first wins; on equal created_at, the owner whose username sorts first. `owner` names the winner. No ETag (the entry may change owner): If-Match other than `*` answers 412 with no body.',
        headers: LegacyConditionHeaders,
        params: LegacyParams,
        response: { 200: PublicEnvelope, 412: LegacyPreconditionFailed },
      },
    },
    async (req, reply) => {
      const { key } = req.params as { key: string }
      return sendPublic(req, reply, await kv.legacyPublicRead(key))
    },
  )

  for (const path of ['/svc_api/data/store', '/svc_api/data/incr', '/svc_api/data/get', '/svc_api/data/list', '/svc_api/data/delete']) {
    app.options(path, { config: none, onSend: keyHeaders, schema: { tags, summary: 'CORS preflight of a key-authenticated call' } }, async (_req, reply) =>
      reply.code(204).send(),
    )
  }
  app.options(
    '/svc_api/data/public/:username/:key/incr',
    { config: none, onSend: publicIncrHeaders, schema: { tags, summary: "CORS preflight of a public counter's increment" } },
    async (_req, reply) => reply.code(204).send(),
  )
  for (const path of ['/svc_api/data/public/:username/:key', '/svc_api/data/public/:key', '/svc_api/data/public-list/:username']) {
    app.options(path, { config: none, onSend: publicHeaders, schema: { tags, summary: 'CORS preflight of the public read' } }, async (_req, reply) =>
      reply.code(204).send(),
    )
  }
}
