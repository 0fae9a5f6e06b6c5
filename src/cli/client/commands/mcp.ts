import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { ErrorCode, LATEST_PROTOCOL_VERSION, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { AnyArgumentsCallSchema, callArguments } from '../../../features/mcp/call-request.js'
import { mcpInstructions } from '../../../features/mcp/instructions.js'
import { RATE_LIMITED } from '../../../features/mcp/limits.js'
import type { ApiClient } from '../api.js'
import { parse } from '../args.js'
import { CLIENT_HELP } from '../help.js'
import { ApiError, CliError } from '../errors.js'
import { CLIENT_VERSION } from '../api.js'
import { flagsOf, noMore, type Ctx } from './context.js'

const MCP_ACCEPT = 'application/json, text/event-stream'

/**
 * A JSON-RPC error as the SDK's server sends it (its code, its message as is). McpError would
 * put "MCP error CODE: " in the message, and the client's McpError puts it there again.
 */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message)
  }
}

/** A failure of the service as an MCP error the client shows its user. */
function asMcpError(e: unknown, url: string): RpcError {
  if (e instanceof ApiError) {
    const text = e.describe()
    // the hint is a sentence of its own: after a solution without a full stop, one is added
    const hint = e.status === 401 ? `${/[.!?)]$/.test(text) ? '' : '.'} Check SVC_API_KEY (or run \`svc login --url URL --key KEY\`).` : ''
    return new RpcError(ErrorCode.InvalidRequest, `svc at ${url}: ${text}${hint}`)
  }
  if (e instanceof RpcError) return e
  return new RpcError(ErrorCode.InternalError, `svc at ${url}: ${(e as Error).message}`)
}

let nextId = 1

/** The seconds to wait before repeating a request the key's rate limits refused in a JSON-RPC error (tools/list), else null. */
function rateLimitWait(error: { code: number; data?: unknown } | undefined): { wait: number; code: unknown } | null {
  if (error?.code !== RATE_LIMITED) return null
  const data = error.data as { retry_after?: unknown; error_code?: unknown } | undefined
  return typeof data?.retry_after === 'number' && data.retry_after > 0 ? { wait: data.retry_after, code: data.error_code } : null
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * One JSON-RPC request to the service's POST /mcp (stateless: no initialize needed there).
 * HTTP errors (401, 429 after the client's waits, 5xx) throw ApiError; a JSON-RPC error
 * answer throws RpcError with the service's code and message, but for a refusal of the rate
 * limits (RATE_LIMITED, with retry_after), which is waited out as the client waits out a 429.
 * A tools/call the limits refuse is its tool result (isError, 1204), passed on as it is.
 */
async function forward(api: ApiClient, method: string, params: unknown): Promise<Record<string, unknown>> {
  for (let waits = 0; ; waits++) {
    const r = await api.post('/mcp', {
      json: { jsonrpc: '2.0', id: nextId++, method, params: params ?? {} },
      headers: { accept: MCP_ACCEPT },
      // listing is safe to repeat; a tool call may write (an increment, a new page)
      idempotent: method !== 'tools/call',
    })
    const body = r.json as { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } } | undefined
    const limited = rateLimitWait(body?.error)
    if (limited !== null && waits < api.maxRateRetries && limited.wait <= api.maxWaitSeconds) {
      api.rateLimitWaits++
      api.notify(`rate limited (error ${String(limited.code)}): waiting ${Math.ceil(limited.wait)} s before retry ${waits + 1}/${api.maxRateRetries}`)
      await sleep(limited.wait * 1000 * api.waitScale)
      continue
    }
    if (body?.error) throw new RpcError(body.error.code, body.error.message, body.error.data)
    if (!body?.result) throw new CliError(`the server's /mcp answered without a result (HTTP ${r.status})`)
    return body.result
  }
}

/**
 * svc mcp: an MCP server on stdin/stdout for clients that launch a command (Claude Desktop,
 * editors). It answers initialize itself and forwards tools/list and tools/call to the
 * service's POST /mcp with the CLI's URL and API key, so the tools are the service's own:
 * one definition set, and a read-only key sees the read-only tools here too. Nothing but
 * protocol messages goes to stdout; notices go to stderr.
 */
export async function mcpCommand(ctx: Ctx, args: string[]): Promise<number> {
  const { values: v, positionals } = parse(args, CLIENT_HELP.mcp.flags)
  noMore(positionals, 0)
  const api = ctx.api(flagsOf(v))
  api.notify = (m) => process.stderr.write(`svc mcp: ${m}\n`)
  const url = api.conn.url
  if (!api.conn.key) throw new CliError('svc mcp needs an API key: set SVC_API_KEY (and SVC_URL), or run `svc login --url URL --key KEY`')

  // the key is checked once at start: a wrong one is reported on stderr at once, and every
  // request then fails with the same clear error instead of the server going away. The check is
  // the service's own initialize (never counted against the key's limits), whose instructions
  // this server passes on, so both transports tell an agent the same text
  let startError: RpcError | null = null
  let instructions = mcpInstructions(null, false)
  try {
    const init = await forward(api, 'initialize', {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'svc-mcp', version: CLIENT_VERSION },
    })
    if (typeof init.instructions === 'string') instructions = init.instructions
  } catch (e) {
    startError = asMcpError(e, url)
    process.stderr.write(`${startError.message}\n`)
  }

  const server = new Server({ name: 'svc', version: CLIENT_VERSION }, { capabilities: { tools: {} }, instructions })
  const run = async (method: string, params: unknown) => {
    if (startError) throw startError
    try {
      return await forward(api, method, params)
    } catch (e) {
      throw asMcpError(e, url)
    }
  }
  server.setRequestHandler(ListToolsRequestSchema, async (req) => (await run('tools/list', req.params)) as never)
  // arguments that are no JSON object go to the service as sent, which answers them (1106)
  server.setRequestHandler(AnyArgumentsCallSchema, async (req) => (await run('tools/call', { ...req.params, arguments: callArguments(req.params) })) as never)

  const transport = new StdioServerTransport()
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve()
    process.stdin.once('end', () => resolve())
  })
  await server.connect(transport)
  // requests read and not yet answered, by id: when stdin ends (a client that pipes its
  // requests and closes it), every one is answered before the server closes
  const open = new Set<string | number>()
  let idle: (() => void) | null = null
  const received = transport.onmessage
  transport.onmessage = (m: JSONRPCMessage) => {
    if ('method' in m && 'id' in m) open.add(m.id)
    received?.(m)
  }
  const send = transport.send.bind(transport)
  transport.send = async (m: JSONRPCMessage) => {
    await send(m)
    if (!('method' in m) && 'id' in m && m.id !== undefined && open.delete(m.id) && open.size === 0) idle?.()
  }
  await closed
  if (open.size > 0)
    await new Promise<void>((resolve) => {
      idle = resolve
      setTimeout(resolve, 120_000).unref()
    })
  await server.close().catch(() => {})
  return 0
}
