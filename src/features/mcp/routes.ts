import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Deps } from '../../deps.js'
import { AppError } from '../../errors/app-error.js'
import { isForeignKeyViolation } from '../../db/kysely.js'
import { admitInHandler, caller, type Admission } from '../../http/guard.js'
import { contentOrigin, isLoopbackHost, requestHost, serviceOrigin } from '../../http/origin.js'
import { hostName, siteOriginFor } from '../../http/site-origin.js'
import { API_VERSION } from '../sites/files-service.js'
import type { McpServices } from './services.js'
import type { ToolContext } from './tools.js'
import { MAX_INLINE_BYTES, MCP_BODY_LIMIT, MCP_DRAIN_LIMIT, RATE_LIMITED } from './limits.js'
import { lazy } from '../../util/lazy.js'
import { McpAnswers } from './schemas.js'
import { mcpInstructions } from './instructions.js'

/** The MCP SDK's server side and the tools (with zod, their schemas' library), loaded on the first MCP request. */
const loadSdk = lazy(async () => {
  const [{ McpServer }, { StreamableHTTPServerTransport }, { serveTools, errorResult }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/mcp.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('./tools.js'),
  ])
  return { McpServer, StreamableHTTPServerTransport, serveTools, errorResult }
})

export const MCP_PATH = '/mcp'

/** Requests that set a session up or check it is alive: answered from memory, never counted (327). */
const UNCOUNTED_REQUESTS = new Set(['initialize', 'ping'])

type Message = { jsonrpc?: unknown; id?: unknown; method?: unknown }
const isMessage = (m: unknown): m is Message => m !== null && typeof m === 'object' && !Array.isArray(m)

/** The one message of a body: the message itself, or a batch of one's (as the SDK's transport reads it). */
const oneMessage = (body: unknown): unknown => (Array.isArray(body) && body.length === 1 ? (body[0] as unknown) : body)

/**
 * Whether a POST counts against the key's rate limits: everything but one notification (a
 * method without id: notifications/initialized, cancelled), one response and one initialize or
 * ping, which run no tool. A batch, a malformed body, tools/list and tools/call count.
 */
function counted(body: unknown): boolean {
  const m = oneMessage(body)
  if (!isMessage(m) || m.jsonrpc !== '2.0') return true
  if (typeof m.method !== 'string') return !('result' in m || 'error' in m)
  return m.id !== undefined && !UNCOUNTED_REQUESTS.has(m.method)
}

const BATCH_REFUSED = 'Invalid Request: JSON-RPC batches are not supported; send one message per POST (each request counts against the rate limits)'

const IP_LITERAL = /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:.]+\])$/i

/**
 * DNS-rebinding protection: the Host must name this service (PUBLIC_URL's host, a loopback
 * name, an IP address, or one of MCP_ALLOWED_HOSTS), and a browser's Origin, when sent, must
 * be such a host too. A page on another domain that rebinds its name to this server's address
 * sends its own name as Host and is refused before anything runs.
 */
export function hostAllowed(host: string | undefined, deps: Pick<Deps, 'config'>): boolean {
  const h = hostName(host)
  if (h === '') return false
  if (deps.config.mcpAllowedHosts.includes(h)) return true
  if (deps.config.publicUrl) return h === new URL(deps.config.publicUrl).hostname.toLowerCase()
  return isLoopbackHost(h) || h.endsWith('.localhost') || IP_LITERAL.test(h)
}

function checkRebinding(req: FastifyRequest, deps: Deps): void {
  // the host the client named (X-Forwarded-Host behind a trusted proxy), which the answers' URLs are built on
  if (!hostAllowed(requestHost(req, deps.config), deps)) throw new AppError('MCP_HOST_REFUSED')
  const origin = req.headers.origin
  if (origin !== undefined) {
    let host: string
    try {
      host = new URL(origin).host
    } catch {
      throw new AppError('MCP_HOST_REFUSED')
    }
    if (!hostAllowed(host, deps)) throw new AppError('MCP_HOST_REFUSED')
  }
}

/**
 * Reads and discards what is left of a refused body, up to MCP_DRAIN_LIMIT, before the 413 is
 * sent: a client still writing (node's http client, so `svc mcp`) would otherwise see the
 * connection reset instead of the answer. A body declared or found larger is not waited for.
 */
function drain(req: FastifyRequest): Promise<void> {
  const raw = req.raw
  if (raw.complete || Number(req.headers['content-length']) > MCP_DRAIN_LIMIT) return Promise.resolve()
  return new Promise((resolve) => {
    let read = 0
    const done = () => {
      raw.off('data', onData)
      resolve()
    }
    const onData = (c: Buffer) => {
      read += c.length
      if (read > MCP_DRAIN_LIMIT) {
        raw.pause()
        done()
      }
    }
    raw.on('data', onData)
    raw.once('end', done)
    raw.once('close', done)
    raw.once('error', done)
    raw.resume()
  })
}

/** The requests of POST /mcp counted against their key already (countOnce). */
const countedRequests = new WeakSet<object>()

/**
 * Counts a keyed request of POST /mcp against its key's limits, once: by the handler for a
 * message that reaches the tools, or by the error handler for one refused before or outside
 * it (a body too large or not JSON, a foreign Host), as the guard counted them before. Null:
 * counted already, or not a keyed request (the guard counted it).
 */
async function countOnce(req: FastifyRequest, reply: FastifyReply, deps: Deps): Promise<Admission | null> {
  if (countedRequests.has(req.raw) || req.principal?.via !== 'key') return null
  countedRequests.add(req.raw)
  return admitInHandler(req, reply, deps)
}

/**
 * The route's errors: each counted (countOnce), a refusal of the limits answered instead. A
 * body over MCP_BODY_LIMIT is 413 / 1443 naming the limit and the archive deploy, instead of
 * the generic 1109. It is refused before it is parsed, so no request id is known to answer a
 * JSON-RPC error to: the service's error envelope is what an MCP client shows for the 413.
 */
const errorsOf =
  (deps: Deps) =>
  (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    // sent as an error, each goes on to the service's error handler, which renders it
    countOnce(req, reply, deps)
      .then(async (a) => {
        const refused = a !== null && !a.ok ? a.error : null
        if (err.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.send(refused ?? err)
        await drain(req)
        return reply.send(refused ?? new AppError('MCP_BODY_TOO_LARGE', { params: { limit: MCP_BODY_LIMIT, inline: MAX_INLINE_BYTES } }))
      })
      .catch((e: unknown) => {
        req.log.error({ err: e }, 'mcp: answering an error failed')
        if (!reply.sent) reply.send(e)
      })
  }

/**
 * A request the key's rate limits refuse, answered inside the protocol when it has an id to
 * answer (HTTP 200, Retry-After): a tools/call as its tool result (isError, 1204 and
 * retry_after), any other request (tools/list, ...) as a JSON-RPC error -32000 whose message
 * is the same text and whose data the same fields. The SDK's client hands either to the agent
 * as it is; an HTTP 429 it turns into a transport failure. A batch of one is answered with a
 * single message, as the SDK answers it; a body without a request id keeps the REST API's 429.
 */
async function refuseInProtocol(req: FastifyRequest, reply: FastifyReply, error: AppError): Promise<FastifyReply> {
  const m = oneMessage(req.body)
  if (!isMessage(m) || m.jsonrpc !== '2.0' || typeof m.method !== 'string' || (typeof m.id !== 'string' && typeof m.id !== 'number')) throw error
  const { errorResult } = await loadSdk()
  const result = errorResult(error)
  const retryAfter = error.options.headers?.['Retry-After']
  if (retryAfter !== undefined) reply.header('Retry-After', retryAfter)
  // the result's summary: "Error 1204 (QUOTA_ERROR): Rate limit exceeded (...). Retry after N seconds."
  const text = (result.content[0] as { text: string }).text
  const answer =
    m.method === 'tools/call'
      ? { jsonrpc: '2.0', id: m.id, result }
      : { jsonrpc: '2.0', id: m.id, error: { code: RATE_LIMITED, message: text, data: result.structuredContent } }
  return reply.code(200).type('application/json').send(JSON.stringify(answer))
}

/**
 * POST /mcp: the MCP server over stateless streamable HTTP (JSON answers, no session id). The
 * API guard has authenticated the key; the handler counts the request against its rate limits
 * unless it only sets a session up (counted); each request gets a server with the tools its key may use, and nothing outlives the request.
 * GET (server-initiated streams) and DELETE (session end) have no meaning without sessions, and
 * PUT and PATCH none at all: 405 with Allow: POST.
 */
export function mcpApi(app: FastifyInstance, deps: Deps, services: McpServices): void {
  const methodNotAllowed = async (_req: FastifyRequest, reply: FastifyReply) => {
    reply.header('Allow', 'POST')
    throw new AppError('MCP_METHOD')
  }
  for (const method of ['GET', 'DELETE', 'PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: MCP_PATH,
      config: { auth: 'none', rateLimit: false, lang: 'en', refusesMethod: true },
      schema: { hide: true },
      handler: methodNotAllowed,
    })
  }

  app.post(
    MCP_PATH,
    {
      // a read-only key may call it: the server then lists and runs the read-only tools only
      // MCP clients send no Accept-Language, and the tools answer in English: so do its errors
      // counted by the handler (admitInHandler) for a valid key: initialize and notifications are not
      config: { auth: 'any', readOnlySafe: true, lang: 'en', rateLimit: 'handler' },
      bodyLimit: MCP_BODY_LIMIT,
      errorHandler: errorsOf(deps),
      schema: {
        tags: ['mcp'],
        summary: 'MCP server (stateless streamable HTTP, JSON-RPC 2.0); Authorization: Bearer <API key>',
        description:
          'Model Context Protocol endpoint for AI agents: initialize, tools/list, tools/call. A read-only key sees only the read-only tools. GET and DELETE answer 405. See docs/mcp.md.',
        response: McpAnswers,
      },
    },
    async (req, reply) => {
      checkRebinding(req, deps)
      const p = caller(req)
      // agents authenticate with an API key; a browser session is not an MCP client
      if (p.via !== 'key') throw new AppError('AUTH_MISSING')
      // counted here, where the body says what it is: a tools/call the limits refuse is a tool
      // result the agent reads (isError, 1204 and retry_after), never an HTTP error the SDK throws
      if (counted(req.body)) {
        const a = await countOnce(req, reply, deps)
        if (a !== null && !a.ok) return refuseInProtocol(req, reply, a.error)
      }
      // one JSON-RPC message per request (MCP 2025-06-18 dropped batches): a batch would run up
      // to the SDK's 100 tool calls at once for one count against the key's rate and concurrency limits
      if (Array.isArray(req.body) && req.body.length > 1) {
        // a JSON-RPC error, as the SDK's own transport errors are: not the service's error format,
        // and (like them) not among the answers the route's schema declares
        return (reply as FastifyReply).code(400).send({ jsonrpc: '2.0', error: { code: -32600, message: BATCH_REFUSED }, id: null })
      }
      const readOnly = p.readOnly === true
      const ctx: ToolContext = {
        user: p.user,
        readOnly,
        serviceOrigin: serviceOrigin(req, deps.config),
        contentOrigin: contentOrigin(req, deps.config),
        siteOrigin: siteOriginFor(req, deps.config, p.user.username),
        entitled: async (feature) =>
          !!(await deps.db.k.selectFrom('entitlements').select('feature').where('user_id', '=', p.user.id).where('feature', '=', feature).executeTakeFirst()),
        unexpected: (err) => {
          // as the REST error handler: a row that refers to one deleted meanwhile is 409 / 1410
          if (isForeignKeyViolation(err)) return new AppError('DELETED_MEANWHILE')
          req.log.error({ err }, 'mcp: unexpected error in a tool')
          return new AppError('INTERNAL', { params: { request_id: String(req.id) } })
        },
      }
      const { McpServer, StreamableHTTPServerTransport, serveTools } = await loadSdk()
      const server = new McpServer(
        { name: 'svc', version: API_VERSION },
        {
          capabilities: { tools: {} },
          instructions: mcpInstructions(p.user.username, readOnly),
        },
      )
      serveTools(server, readOnly, services, ctx)
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      await server.connect(transport)
      // the guard's headers (X-RateLimit-*, X-Request-Id) go out with the transport's answer
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value)
      reply.hijack()
      reply.raw.once('close', () => {
        void transport.close().catch(() => {})
        void server.close().catch(() => {})
      })
      try {
        await transport.handleRequest(req.raw, reply.raw, req.body)
      } catch (err) {
        req.log.error({ err }, 'mcp request failed')
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json' })
          reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }))
        }
      }
      return reply
    },
  )
}
