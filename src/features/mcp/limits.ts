// What one MCP tool call may carry: the route needs these before the tools load (routes.ts)
/** Largest inline payload of one tool call (decoded bytes); bigger sites go through `svc deploy`. */
export const MAX_INLINE_BYTES = 4 * 1024 * 1024
/** Files per deploy_files call (the folder batch upload's own limit). */
export const MAX_INLINE_FILES = 200
/** The body limit of POST /mcp: the inline limit in base64, plus the JSON-RPC envelope. */
export const MCP_BODY_LIMIT = Math.ceil((MAX_INLINE_BYTES * 4) / 3) + 1024 * 1024
/** How much of a body over MCP_BODY_LIMIT is read and discarded so its sender gets the 413 (routes.ts). */
export const MCP_DRAIN_LIMIT = 64 * 1024 * 1024
/**
 * The JSON-RPC error code of a request other than tools/call that the key's rate limits refuse
 * (routes.ts; JSON-RPC's range for implementation-defined server errors): its data holds
 * retry_after, which `svc mcp` waits out as it waits out a 429.
 */
export const RATE_LIMITED = -32000
