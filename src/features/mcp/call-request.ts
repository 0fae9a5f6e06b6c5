import * as z from 'zod/v4'
import { CallToolRequestParamsSchema, CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js'

/** Where a tools/call request keeps `arguments` that are not a JSON object (a string, an array, null). */
export const RAW_ARGUMENTS = Symbol('svc.rawArguments')

const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * tools/call with any `arguments`. The SDK's own schema refuses a non-object (arguments sent
 * as their JSON text, as some agents do) with a JSON-RPC internal error holding the raw zod
 * issues; here such arguments are set aside under RAW_ARGUMENTS, so the request passes the
 * SDK's checks and the tool answers them as any bad argument: isError, 1106.
 */
export const AnyArgumentsCallSchema = CallToolRequestSchema.extend({
  params: CallToolRequestParamsSchema.extend({ arguments: z.unknown().optional() }).transform((p) =>
    p.arguments === undefined || isObject(p.arguments) ? p : { ...p, arguments: undefined, [RAW_ARGUMENTS]: p.arguments },
  ),
})

/** The arguments a request of AnyArgumentsCallSchema carried, whatever their type. */
export const callArguments = (params: { arguments?: unknown; [RAW_ARGUMENTS]?: unknown }): unknown =>
  RAW_ARGUMENTS in params ? params[RAW_ARGUMENTS] : params.arguments
