/**
 * The API context's paths: /svc_api, /api and /mcp (the MCP endpoint, which takes the same API
 * keys), alone or followed by '/' or a query string.
 * The one definition shared by the plain-HTTP redirector (server.ts) and the app (app.ts:
 * TRUST_PROXY redirect, malformed-URL and 404 formats), so a URL is an API path for all of
 * them or for none: `/api?x=1` or `POST /mcp` answers 1116 over plain HTTP, never a redirect
 * (a client would follow it, its key already sent in the clear).
 */
export const API_PREFIXES = ['/svc_api', '/api', '/mcp'] as const

export const API_PATH = new RegExp(`^(?:${API_PREFIXES.join('|')})(?:[/?]|$)`)

/** Whether a request URL (path and query, as on the request line) is in the API context. */
export function isApiPath(url: string): boolean {
  return API_PATH.test(url)
}
