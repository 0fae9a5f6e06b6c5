import { Type } from '@sinclair/typebox'
import { ERROR_SCHEMA, mediaAnswer } from '../../http/answer-schemas.js'

/*
 * Answers of POST /mcp, for /openapi.json only: the MCP SDK's transport writes them itself (the
 * reply is hijacked), so these schemas never serialize anything. The envelope is JSON-RPC 2.0's;
 * a result is what the MCP specification defines for its method.
 */

const envelope = {
  jsonrpc: Type.Literal('2.0'),
  id: Type.Union([Type.String(), Type.Integer(), Type.Null()], { description: "the request's id" }),
}

const JSON_RPC_ERROR = Type.Object({ code: Type.Integer(), message: Type.String(), data: Type.Optional(Type.Unknown()) }, { description: 'a JSON-RPC error' })

export const McpAnswers = {
  200: mediaAnswer('The JSON-RPC 2.0 response to the request (never an event stream: the server answers in JSON)', {
    'application/json': Type.Union([
      Type.Object({
        ...envelope,
        result: Type.Object(
          {},
          { additionalProperties: true, description: "The method's result as the MCP specification defines it (initialize, tools/list, tools/call, ...)" },
        ),
      }),
      Type.Object({
        ...envelope,
        error: JSON_RPC_ERROR,
      }),
    ]),
  }),
  202: Type.Null({ description: 'Accepted: the message was a notification (no id); no body' }),
  // uppercase: Fastify serializes by `4xx`, so this key documents and never serializes
  '4XX': mediaAnswer(
    "The service's error format (a missing or refused key, a rate limit, a body too large, a foreign Host) or, from the MCP transport, a JSON-RPC error with id null (a batch, a malformed message, an Accept or Content-Type it does not take)",
    { 'application/json': Type.Union([Type.Unsafe(ERROR_SCHEMA), Type.Object({ ...envelope, error: JSON_RPC_ERROR })]) },
  ),
}
